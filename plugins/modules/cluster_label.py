#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cluster_label
short_description: Label and annotate member clusters on a Karmada or Open Cluster Management hub
version_added: 1.0.0
description:
  - Sets labels and annotations on the hub objects of member clusters - Karmada C(Cluster)
    (C(clusters.cluster.karmada.io/v1alpha1)), OCM C(ManagedCluster) (C(managedclusters.cluster.open-cluster-management.io/v1))
    - for one or many clusters in one task, as C(kubectl label) and C(kubectl annotate) would. Both engines select
    clusters by these labels - a Karmada C(PropagationPolicy)'s C(clusterAffinity.labelSelector), an OCM C(Placement)'s
    predicates (M(multicluster.fleet.placement)).
  - Push and pull members alike; the object must exist, so for a member that registers by pull (whose agent creates
    it) label it after the registration - C(site.yml) does so with the inventory's C(labels) and C(annotations).
  - Every task writes as an O(owner). The module records, per key, which owners set it on the object itself, in the
    annotations C(multicluster.fleet/managed-labels) and C(multicluster.fleet/managed-annotations) (C(key=owner) items,
    C(key=owner1+owner2) for a key several owners set to the same value). With O(purge), a task removes only what its own
    owner set and no longer lists - its share of a key other owners share, and the key when no other owner is left -
    so a labelling job and C(site.yml) (owner C(inventory)) each keep their own labels. Labels and annotations set by
    others - people, the engines, other modules such as the cluster set membership label
    C(cluster.open-cluster-management.io/clusterset) - are never removed that way.
  - A key that already has the wanted value and no recorded owner was set by someone else and stays theirs. A key the
    task sets to another value than another owner, or someone outside this collection, gave it is taken over by the
    task's owner, with a warning naming the cluster, the key and whom it was taken from. Keys of the engines' own
    domains (C(karmada.io), C(open-cluster-management.io) and their subdomains) are written when they differ but never
    recorded.
  - Objects labelled by earlier versions of the collection record keys without an owner. Such a key becomes the owner's
    of the first task that lists it; until then no purge removes it, and a purging task warns about it.
  - Before writing anything the module checks every key and value by Kubernetes' rules and that every cluster is
    registered; errors name the key, the value and the clusters. The writes to many clusters run in parallel.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  clusters:
    description:
      - The member clusters (Karmada Cluster or OCM ManagedCluster names), each given O(labels) and O(annotations).
      - One of O(clusters) and O(per_cluster) is required.
    type: list
    elements: str
  per_cluster:
    description:
      - Member clusters that each get labels and annotations of their own, in one task - C(site.yml) gives every member
        of the run its inventory's this way.
      - Each cluster stands alone - its values are checked on their own, and a cluster whose values are refused, that is
        not registered (with O(unregistered=fail)) or being deleted fails alone, named in RV(clusters_failed) with its
        message in RV(cluster_errors), while the others are written.
      - O(purge), O(owner) and O(unregistered) apply to each.
    type: list
    elements: dict
    version_added: 1.1.0
    suboptions:
      name:
        description: The member cluster.
        type: str
        required: true
      labels:
        description: Its labels, as O(labels).
        type: dict
      annotations:
        description: Its annotations, as O(annotations).
        type: dict
  labels:
    description:
      - Labels to set. A key is an optional DNS-1123 subdomain prefix and C(/), then a name of at most 63 letters,
        digits, C(-), C(_) or C(.), starting and ending with a letter or digit; a value is empty or such a name.
        Numbers and booleans are written as text (V(true), V(false)).
      - A key whose value is null is removed, whoever set it.
      - Left out, the labels are not touched (not even by O(purge)).
    type: dict
  annotations:
    description:
      - Annotations to set; keys as for O(labels), values any text (at most 256 KiB together).
      - A key whose value is null is removed, whoever set it.
      - Left out, the annotations are not touched (not even by O(purge)).
    type: dict
  purge:
    description:
      - Also remove the labels (annotations) this task's O(owner) set earlier on each cluster that O(labels)
        (O(annotations)) no longer lists; a key another owner set too stays, as that owner's. Labels and annotations
        others set stay.
      - C(site.yml) purges as owner C(inventory), so that the inventory's C(labels) and C(annotations) are the whole of
        what it manages on a member, whatever other tasks label.
    type: bool
    default: false
  owner:
    description:
      - Who this task writes for, recorded with each key it sets; O(purge) removes only keys of this owner.
      - Give each job that labels clusters its own owner (for example V(gpu-inventory) for a job that labels GPU
        clusters), so that their purges leave each other's labels alone. C(site.yml) uses V(inventory).
      - At most 63 letters, digits, C(-), C(_) or C(.), starting and ending with a letter or digit.
    type: str
    default: cluster_label
  unregistered:
    description:
      - What to do when a cluster of O(clusters) is not registered on the hub.
      - V(fail) fails the task before anything is written, naming the clusters.
      - V(skip) labels the others and reports the missing ones in RV(clusters) with action V(unregistered) (for example
        in a check-mode run that only plans the registration).
    type: str
    choices: [fail, skip]
    default: fail
extends_documentation_fragment:
  - multicluster.fleet.engine
  - multicluster.fleet.auth
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports what would change, using the hub's dry run; writes nothing.
  diff_mode:
    support: full
    details:
      - Per changed cluster, the labels and annotations before and after.
  idempotent:
    support: full
notes:
  - The hub credentials need C(get) and C(patch) on C(clusters.cluster.karmada.io) or
    C(managedclusters.cluster.open-cluster-management.io). On an OCM hub, setting the label
    C(cluster.open-cluster-management.io/clusterset) also needs C(create) on C(managedclustersets/join) for the set.
seealso:
  - module: multicluster.fleet.cluster_info
  - module: multicluster.fleet.placement
  - name: Karmada - Cluster affinity
    description: PropagationPolicy's clusterAffinity selects member clusters by their labels.
    link: https://karmada.io/docs/userguide/scheduling/resource-propagating/
  - name: OCM - Placement
    description: Placement predicates select managed clusters by their labels.
    link: https://open-cluster-management.io/docs/concepts/content-placement/placement/
"""

EXAMPLES = r"""
- name: Label the production clusters of a Karmada hub
  multicluster.fleet.cluster_label:
    engine: karmada
    kubeconfig: /etc/fleet/karmada-apiserver.kubeconfig
    clusters: [member1, member2]
    labels:
      env: prod
      fleet.example.com/tier: gold
    annotations:
      fleet.example.com/owner: platform-team

- name: Make the labels this owner (cluster_label, the default) set on an OCM cluster exactly these
  multicluster.fleet.cluster_label:
    engine: ocm
    clusters: [cluster1]
    labels:
      env: stage
    purge: true

- name: A nightly job's labels, kept apart from those of site.yml and other jobs
  multicluster.fleet.cluster_label:
    engine: karmada
    clusters: "{{ gpu_clusters }}"
    labels:
      fleet.example.com/gpu: "true"
    owner: gpu-inventory
    purge: true

- name: Each cluster its own labels, in one task
  multicluster.fleet.cluster_label:
    engine: karmada
    per_cluster:
      - name: member1
        labels: {region: eu, env: prod}
      - name: member2
        labels: {region: us, env: stage}
        annotations: {fleet.example.com/owner: web-team}
    owner: inventory
    purge: true

- name: Remove a label, whoever set it
  multicluster.fleet.cluster_label:
    engine: ocm
    clusters: [cluster1, cluster2]
    labels:
      canary: null
"""

RETURN = r"""
clusters:
  description: Per cluster, what the task did and the labels and annotations the object has afterwards.
  returned: always
  type: dict
  contains:
    action:
      description: V(updated), V(unchanged), or V(unregistered) (with O(unregistered=skip)).
      type: str
      sample: updated
    labels:
      description: The object's labels afterwards (what the hub would store, in check mode).
      type: dict
      sample: {env: prod}
    annotations:
      description: The object's annotations afterwards, without this collection's bookkeeping annotations.
      type: dict
      sample: {fleet.example.com/owner: platform-team}
    managed_labels:
      description: The label keys this task's O(owner) set on the object (alone or with other owners), which O(purge) may remove.
      type: list
      elements: str
      sample: [env]
    managed_annotations:
      description: The annotation keys this task's O(owner) set on the object.
      type: list
      elements: str
      sample: [fleet.example.com/owner]
    owners:
      description:
        - Every recorded key and its owners, of labels and of annotations; an empty list for a key an earlier version
          of the collection recorded without an owner.
      type: dict
      sample: {labels: {env: [inventory], tier: [cluster_label, inventory]}, annotations: {}}
    taken_over:
      description:
        - The keys this task set to another value than another owner (C(from), its owners), or someone outside this
          collection (C(from) empty), had given them; each is also a warning.
      type: list
      elements: dict
      sample: [{kind: label, key: env, from: [cluster_label]}]
  sample:
    member1:
      action: updated
      labels: {env: prod}
      annotations: {}
      managed_labels: [env]
      managed_annotations: []
      owners: {labels: {env: [cluster_label]}, annotations: {}}
      taken_over: []
clusters_failed:
  description: The clusters that failed (the others are in RV(clusters)).
  returned: failure
  type: list
  elements: str
cluster_errors:
  description: Per cluster of RV(clusters_failed), why it failed, as a task for that cluster alone would say.
  returned: failure
  type: dict
  version_added: 1.1.0
  sample: {member2: "cluster 'hub' (https://10.0.0.5:6443): labelling failed on cluster 'member2': forbidden"}
"""

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import cluster_label, labels
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import hub_members
from ansible_collections.multicluster.fleet.plugins.module_utils.module import FleetModule


def run(module):
    params = module.params
    wanted = dict((key, params[key]) for key in ("labels", "annotations", "purge", "owner"))
    return cluster_label.apply(module.cluster(), params["engine"], params["clusters"] or params["per_cluster"], wanted,
                               params["unregistered"], module.check_mode)


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(argument_spec=dict(
        engine=dict(type="str", required=True, choices=list(engines.NAMES)),
        clusters=dict(type="list", elements="str"),
        per_cluster=dict(type="list", elements="dict", options=dict(
            name=dict(type="str", required=True),
            labels=dict(type="dict"),
            annotations=dict(type="dict"),
        )),
        labels=dict(type="dict"),
        annotations=dict(type="dict"),
        purge=dict(type="bool", default=False),
        owner=dict(type="str", default=labels.DEFAULT_OWNER),
        unregistered=dict(type="str", choices=list(hub_members.UNREGISTERED), default="fail"),
    ), required_one_of=[("clusters", "per_cluster")],
        mutually_exclusive=[("clusters", "per_cluster"), ("labels", "per_cluster"), ("annotations", "per_cluster")])


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
