#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cluster_diagnose
short_description: Say why a member cluster of a Karmada or Open Cluster Management hub is not ready
version_added: 1.1.0
description:
  - Reads, for each member cluster, the hub side - the C(Cluster) or C(ManagedCluster) and the age of its readiness
    condition, the Lease its agent renews (Karmada C(karmada-cluster/<cluster>), OCM C(<cluster>/managed-cluster-lease))
    against its duration, the agent's certificate requests, whether the hub's RBAC lets the agent update its member
    object's status and its Lease (a C(SubjectAccessReview)), the execution or cluster namespace and the works stuck
    terminating there.
  - With the member's credentials (O(member), for one cluster) it also reads the member side - whether the member answers,
    the agent's Deployment (Karmada C(karmada-system/karmada-agent), OCM C(klusterlet-registration-agent)) and the
    Klusterlet's C(Available) condition, the agent kubeconfig Secrets (Karmada C(karmada-system/karmada-kubeconfig),
    OCM C(bootstrap-hub-kubeconfig) and C(hub-kubeconfig-secret)), whether their CA is the hub's (as the hub publishes
    it in C(kube-public/cluster-info)) and their hub address answers, and the agent certificate's expiry and issuer.
  - "Returns one verdict per cluster, the first that holds in this order: V(member_unreachable), V(member_mismatch) (the
    member connection reaches another cluster than the one the hub object stands for: the UID of its C(kube-system)
    namespace is not the cluster id the hub records, as M(multicluster.fleet.cluster_join) and
    M(multicluster.fleet.cluster_register) compare them; not compared where the hub records none), V(csr_denied),
    V(csr_pending) (these two only while the agent holds no valid certificate), V(hub_ca_mismatch),
    V(hub_unreachable_from_agent), V(certificate_expired), V(agent_not_running) (also when the hub has a Pull member
    object and the member holds none of the agent's kubeconfig Secrets), V(not_registered), V(rbac_missing),
    V(lease_expired), V(not_ready) (the hub's readiness condition is not C(True) for none of these reasons), else
    V(healthy); with the evidence for it and the next step."
  - Only reads; the hub address in an agent kubeconfig is tried from where the task runs, which may not be where the
    agent runs.
  - A Karmada member in Push mode runs no agent; only its C(Ready) condition is judged. An OCM Klusterlet in Hosted mode
    runs its agent on another cluster, whose side is not read.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  clusters:
    description:
      - The names of the member clusters to diagnose.
    type: list
    elements: str
    required: true
seealso:
  - module: multicluster.fleet.cluster_info
  - module: multicluster.fleet.csr_accept
  - name: OCM - registration troubleshooting
    description: What to read by hand when a managed cluster is not available.
    link: https://open-cluster-management.io/docs/concepts/cluster-inventory/managedcluster/
extends_documentation_fragment:
  - multicluster.fleet.engine
  - multicluster.fleet.auth
  - multicluster.fleet.auth.member
  - multicluster.fleet.attributes
  - multicluster.fleet.attributes.info_module
"""

EXAMPLES = r"""
- name: Say why member2 is not ready, reading the hub and the member
  multicluster.fleet.cluster_diagnose:
    engine: karmada
    kubeconfig: /etc/fleet/hub.kubeconfig
    clusters: [member2]
    member:
      kubeconfig: /etc/fleet/member2.kubeconfig
  register: diagnosis

- name: Print the verdict and the next step
  ansible.builtin.debug:
    msg: "{{ diagnosis.clusters[0].verdict }}: {{ diagnosis.clusters[0].next_step }}"

- name: Diagnose three OCM clusters from the hub side only
  multicluster.fleet.cluster_diagnose:
    engine: ocm
    context: hub-admin
    clusters: [cluster1, cluster2, cluster3]
"""

RETURN = r"""
clusters:
  description: The diagnosis of each cluster, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The cluster's name.
      type: str
      sample: member2
    verdict:
      description: The verdict (see the description for the order in which they are tried).
      type: str
      sample: lease_expired
    evidence:
      description: What the verdict rests on, each with C(object) (C(Kind/namespace/name)), C(field), C(value) and, for
        a time, C(age) (as C(kubectl) shortens it, V(null) otherwise).
      type: list
      elements: dict
      sample:
        - object: Lease/karmada-cluster/member2
          field: spec.renewTime
          value: "2026-11-29T05:00:00.000000Z (counts as gone 40s after)"
          age: 47m
    next_step:
      description: What to do about it, in a sentence.
      type: str
      sample: "The agent's certificate has expired: run site.yml for this member to renew it."
    member_read:
      description: The member side was read (O(member) was given and the member answered).
      type: bool
      sample: true
    context:
      description: Evidence worth knowing whatever the verdict, as in RV(clusters[].evidence) - a missing execution or
        cluster namespace, works stuck terminating (C(deletionTimestamp) set).
      type: list
      elements: dict
      sample: []
verdicts:
  description: The verdict of each cluster, by name.
  returned: always
  type: dict
  sample: {member1: healthy, member2: agent_not_running}
hub_server:
  description: The hub's address as it publishes it in C(kube-public/cluster-info) (else that of the connection).
  returned: always
  type: str
  sample: https://10.0.0.1:6443
"""

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import diagnose
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.module import FleetModule, cluster_argument_spec


def run(module):
    clusters, member = module.params["clusters"], module.params["member"]
    if member and len(clusters) != 1:
        raise FleetError("member: the member's credentials are for one cluster; clusters lists %d" % len(clusters))
    return diagnose.diagnose(module.cluster(), module.params["engine"], clusters,
                             lambda name: module.cluster(member, name=name) if member else None)


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(argument_spec=dict(
        engine=dict(type="str", required=True, choices=list(engines.NAMES)),
        clusters=dict(type="list", elements="str", required=True),
        member=cluster_argument_spec(),
    ))


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
