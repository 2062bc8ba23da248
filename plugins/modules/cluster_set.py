#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cluster_set
short_description: Manage OCM cluster sets, the clusters in them and their bindings to namespaces
version_added: 1.0.0
description:
  - Creates, updates or deletes an Open Cluster Management C(ManagedClusterSet)
    (C(managedclustersets.cluster.open-cluster-management.io/v1beta2), cluster-scoped) on the hub, as C(clusteradm create
    clusterset), C(clusterset set), C(clusterset bind), C(clusterset unbind) and C(delete clusterset) do.
  - A set of selector type V(ExclusiveClusterSetLabel) holds the managed clusters labelled
    C(cluster.open-cluster-management.io/clusterset=<set>); a cluster is in at most one such set. O(clusters) puts
    clusters in the set by writing that label on their C(ManagedCluster), O(remove_clusters) takes them out. This
    module is the only part of the collection that writes the label.
  - A set of selector type V(LabelSelector) holds the clusters its O(label_selector) matches.
  - A namespace uses a set through a C(ManagedClusterSetBinding) named after the set; the Placements of the namespace
    (M(multicluster.fleet.placement)) select from the sets bound to it. O(bind_namespaces) and O(unbind_namespaces)
    create and delete those bindings.
  - Every option is checked - the set name, that the clusters are registered (see O(unregistered)), that the namespaces
    exist, that no cluster would leave another exclusive set without O(move) - before anything is written.
  - Cluster sets are an OCM concept; with O(engine=karmada) the module fails (Karmada selects clusters by their labels
    in a PropagationPolicy).
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  name:
    description:
      - Name of the C(ManagedClusterSet), a DNS-1123 label of at most 63 characters.
      - The hub's own sets V(default) (clusters in no other exclusive set) and V(global) (every cluster) may be named
        to add clusters or bindings; they are never deleted.
    type: str
    required: true
  state:
    description:
      - V(present) creates or updates the set, its exclusive members and its bindings.
      - V(absent) deletes the set. It is refused while a namespace is bound to the set or a Placement uses it, unless
        O(force). Its clusters keep their label, as with C(clusteradm delete clusterset); another set may take them
        without O(move).
    type: str
    choices: [present, absent]
    default: present
  selector_type:
    description:
      - How the set selects its clusters (C(spec.clusterSelector.selectorType)).
      - Unset, an existing set keeps its type and a new one is V(ExclusiveClusterSetLabel).
    type: str
    choices: [ExclusiveClusterSetLabel, LabelSelector]
  label_selector:
    description:
      - The label selector of a V(LabelSelector) set (C(spec.clusterSelector.labelSelector)); required to create one or to
        change a set to that type. An empty selector (V({})) selects every cluster, as set V(global) does.
      - Unset, the stored selector is kept. Refused for an V(ExclusiveClusterSetLabel) set.
      - Keys must be qualified names and values label values (as for M(multicluster.fleet.cluster_label)); the task is
        refused otherwise, naming the key or value, before anything is written.
    type: dict
    suboptions:
      match_labels:
        description: Labels the C(ManagedCluster) must all carry with these values.
        type: dict
      match_expressions:
        description: Requirements that must all hold.
        type: list
        elements: dict
        suboptions:
          key:
            description: Label name.
            type: str
            required: true
          operator:
            description: V(In) and V(NotIn) need values; V(Exists) and V(DoesNotExist) take none.
            type: str
            required: true
            choices: [In, NotIn, Exists, DoesNotExist]
          values:
            description: The values for V(In) and V(NotIn).
            type: list
            elements: str
  clusters:
    description:
      - Managed clusters to put in the set (V(ExclusiveClusterSetLabel) sets only); each must be registered on the hub.
        Clusters already in it, and clusters not named, stay.
    type: list
    elements: str
  remove_clusters:
    description:
      - Managed clusters to take out of the set (their label is removed; the hub then puts them in set V(default)). A
        cluster not in the set is left as it is.
    type: list
    elements: str
  move:
    description:
      - Move clusters of O(clusters) that are in another exclusive set. Without it such a cluster fails the task. A
        cluster in set V(default), or labelled with a set that does not exist, is in no set of its own and joins without
        it.
    type: bool
    default: false
  bind_namespaces:
    description:
      - Namespaces to bind the set to (a C(ManagedClusterSetBinding) named after the set in each); they must exist.
    type: list
    elements: str
  unbind_namespaces:
    description:
      - Namespaces whose binding to the set is deleted. Placements there that select from the set no longer find its
        clusters.
    type: list
    elements: str
  unregistered:
    description:
      - What to do when a cluster of O(clusters) or O(remove_clusters) is not registered on the hub.
      - V(fail) fails the task before anything is written, naming the clusters.
      - V(skip) leaves them out and lists them in RV(clusters_unregistered) (for example in a check-mode run that only
        plans their registration).
    type: str
    choices: [fail, skip]
    default: fail
  force:
    description:
      - With O(state=absent), delete the set although namespaces are bound to it or Placements use it; its bindings are
        deleted with it.
    type: bool
    default: false
extends_documentation_fragment:
  - multicluster.fleet.auth
  - multicluster.fleet.engine
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports what would be created, changed or deleted, using the hub's dry run; writes nothing.
  diff_mode:
    support: full
    details:
      - A C(ManagedCluster)'s diff shows its labels only.
  idempotent:
    support: full
notes:
  - The hub credentials need C(create) on C(managedclustersets/join) for the old and new set to change a cluster's set
    label, and on C(managedclustersets/bind) to bind a set, when the hub's registration webhook checks them.
seealso:
  - module: multicluster.fleet.placement
  - name: OCM - ManagedClusterSet
    description: Cluster sets, their selectors and bindings.
    link: https://open-cluster-management.io/docs/concepts/cluster-inventory/managedclusterset/
"""

EXAMPLES = r"""
- name: Put two clusters in the exclusive set prod and bind it to namespace apps
  multicluster.fleet.cluster_set:
    kubeconfig: /etc/fleet/hub.kubeconfig
    engine: ocm
    name: prod
    clusters: [cluster1, cluster2]
    bind_namespaces: [apps]

- name: Move cluster3 from its set into prod
  multicluster.fleet.cluster_set:
    engine: ocm
    name: prod
    clusters: [cluster3]
    move: true

- name: A set of the clusters labelled environment=dev, outside region eu
  multicluster.fleet.cluster_set:
    engine: ocm
    name: dev
    selector_type: LabelSelector
    label_selector:
      match_labels:
        environment: dev
      match_expressions:
        - key: region
          operator: NotIn
          values: [eu]
  register: dev

- name: Show the clusters in it
  ansible.builtin.debug:
    msg: "{{ dev.clusters }}"

- name: Unbind prod from apps
  multicluster.fleet.cluster_set:
    engine: ocm
    name: prod
    unbind_namespaces: [apps]

- name: Delete set dev with its bindings
  multicluster.fleet.cluster_set:
    engine: ocm
    name: dev
    state: absent
    force: true
"""

RETURN = r"""
action:
  description: What happened to the ManagedClusterSet, V(created), V(updated), V(unchanged), V(deleted) or V(absent).
  returned: always
  type: str
  sample: created
selector_type:
  description: The set's selector type; null once deleted.
  returned: always
  type: str
  sample: ExclusiveClusterSetLabel
clusters:
  description:
    - The managed clusters in the set, sorted - those carrying its label, or those its label selector matches - as the
      task leaves them (would leave them, in check mode); empty once deleted.
  returned: always
  type: list
  elements: str
  sample: [cluster1, cluster2]
clusters_unregistered:
  description: The clusters of O(clusters) and O(remove_clusters) left out because the hub does not have them, sorted
    (with O(unregistered=skip)).
  returned: state=present
  type: list
  elements: str
  sample: []
bound_namespaces:
  description: The namespaces with a ManagedClusterSetBinding to the set, sorted, as the task leaves them.
  returned: always
  type: list
  elements: str
  sample: [apps]
object:
  description: The ManagedClusterSet as the hub stores it, without server-owned metadata; empty once deleted.
  returned: always
  type: dict
objects:
  description: Every object the task wrote or deleted, as C(Kind/namespace/name) followed by the action; the set first.
  returned: always
  type: list
  elements: str
  sample: ["ManagedClusterSet/prod: created", "ManagedCluster/cluster1: updated", "ManagedClusterSetBinding/apps/prod: created"]
"""

from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import cluster_set
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import hub_members
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import placement
from ansible_collections.multicluster.fleet.plugins.module_utils.engines import NAMES
from ansible_collections.multicluster.fleet.plugins.module_utils.module import FleetModule


def run(module):
    params = module.params
    hub = module.cluster()
    if params["state"] == "absent":
        return cluster_set.absent(hub, params["engine"], params["name"], params["force"], module.check_mode)
    return cluster_set.present(hub, params["engine"], params, module.check_mode)


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(
        argument_spec=dict(
            engine=dict(type="str", required=True, choices=list(NAMES)),
            name=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            selector_type=dict(type="str", choices=list(cluster_set.SELECTOR_TYPES)),
            label_selector=placement.label_selector_argument_spec(),
            clusters=dict(type="list", elements="str"),
            remove_clusters=dict(type="list", elements="str"),
            move=dict(type="bool", default=False),
            bind_namespaces=dict(type="list", elements="str"),
            unbind_namespaces=dict(type="list", elements="str"),
            unregistered=dict(type="str", choices=list(hub_members.UNREGISTERED), default="fail"),
            force=dict(type="bool", default=False),
        ),
    )


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
