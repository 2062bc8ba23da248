#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: csr_accept
short_description: Accept member clusters that register by pull, after checking their agents' certificate requests
version_added: 1.0.0
description:
  - Runs on the hub with the hub admin's credentials, as C(clusteradm accept) (OCM) or the manual approval of a
    C(karmadactl register) CSR (Karmada) would, for several clusters in one task.
  - Finds the pending CertificateSigningRequests of each cluster's agent. OCM klusterlet CSRs carry the label
    C(open-cluster-management.io/cluster-name=<cluster>) (add-on CSRs are left alone); Karmada agent CSRs ask for
    the common name C(system:karmada:agent:<cluster>) or are named C(<cluster>-xxxxx) with label C(karmada.io/system).
  - "Checks each CSR before approving it: signer C(kubernetes.io/kube-apiserver-client); usages C(client auth) and at
    most C(digital signature) and C(key encipherment), never C(server auth); subject exactly the engine's CN and O for
    that cluster (Karmada: C(system:karmada:agent:<cluster>), O C(system:karmada:agents); OCM:
    C(system:open-cluster-management:<cluster>:<agent>), O C(system:open-cluster-management:<cluster>) and
    C(system:open-cluster-management:managed-clusters)); no subject alternative names; an RSA key of at least 2048 bits,
    an ECDSA P-256 or P-384 key, or an Ed25519 key; requested by a bootstrap identity (a bootstrap token user in group
    C(system:bootstrappers), for OCM also the ServiceAccount C(open-cluster-management/agent-registration-bootstrap))
    or by the cluster's agent identity itself (a renewal)."
  - A CSR that fails a check is never approved; it is reported with the reasons and, with O(deny_invalid), denied.
  - Approves through the C(approval) subresource with condition C(Approved), reason C(MulticlusterFleetApproved).
    For OCM it then sets C(spec.hubAcceptsClient=true) on the ManagedCluster.
  - A pending CSR that passes the checks is approved even when the cluster was accepted before, as happens when a
    member registers again or renews while the approved CSR of its earlier registration is still listed
    (kube-controller-manager deletes issued CSRs only after an hour).
  - One agent holds one certificate, so at most one CSR per cluster is approved in a run - the newest acceptable
    one. The other acceptable CSRs are reported under RV(clusters[].rejected) with the reason and left pending.
  - A Karmada cluster that the hub has in Push mode runs no agent - Karmada reaches it with its own credentials.
    Agent CSRs for it are refused (and denied with O(deny_invalid)), and the cluster is reported as not accepted.
  - A cluster without such a pending CSR that is accepted already (its agent holds an approved certificate or has
    joined; OCM also C(hubAcceptsClient)) is left alone and reported unchanged. For OCM, a cluster whose agent holds
    an approved certificate but whose ManagedCluster still has C(hubAcceptsClient=false) gets it set.
  - The task fails, after handling the other clusters, for each cluster that ends up not accepted, saying why.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  clusters:
    description:
      - Names of the member clusters to accept. CSRs of other clusters are not touched.
    type: list
    elements: str
    required: true
  requesters:
    description:
      - User names (the CSR's C(spec.username), for example V(system:bootstrap:abcdef)) whose CSRs may be approved.
      - When set, CSRs of other requesters are refused.
      - When unset and the acceptable CSRs of one cluster come from several requesters, none of them is approved,
        because only one of them can be the cluster's agent; name the one to trust here.
    type: list
    elements: str
  deny_invalid:
    description:
      - Deny the pending CSRs of the listed clusters that fail a check (condition C(Denied), reason
        C(MulticlusterFleetDenied), the reasons as message), so that their requesters stop waiting.
      - CSRs refused only because several requesters compete are never denied.
    type: bool
    default: false
  wait:
    description:
      - Wait until every cluster has an acceptable pending CSR (for OCM also its ManagedCluster) or is accepted already,
        then act. Agents create their CSRs a few seconds after joining.
      - Without O(expect_new_csr), an approved CSR of an earlier registration, still listed for up to an hour, counts
        as accepted already and ends the wait at once, before the CSR of a registration that is under way appears.
  expect_new_csr:
    description:
      - The clusters' agents are requesting certificates now (a first registration, a re-registration, a renewal),
        and this task is to approve those requests.
      - The approved CSRs the task finds when it starts, and a member that has joined, then do not count as accepted;
        only a CSR the task approves, or one approved by someone else since it started, does. With O(wait), the task
        waits for such a CSR; without it, or after O(wait_timeout), a cluster without one fails.
      - Leave it false for a task that is also to confirm, unchanged, clusters accepted earlier.
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds to wait with O(wait) (V(0) checks once). The task fails after that, naming the clusters still without
        an acceptable CSR.
      - The alias O(timeout) is the name of earlier releases.
    aliases: [timeout]
extends_documentation_fragment:
  - multicluster.fleet.auth
  - multicluster.fleet.engine
  - multicluster.fleet.wait
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Every approval, denial and ManagedCluster change is sent as a server-side dry run.
  diff_mode:
    support: full
    details:
      - The conditions of each approved or denied CSR, and the ManagedCluster's C(hubAcceptsClient), before and after.
  idempotent:
    support: full
notes:
  - The hub credentials need C(update) on C(certificatesigningrequests/approval), C(approve) on the signer
    C(kubernetes.io/kube-apiserver-client) (resource C(signers) in group C(certificates.k8s.io)), C(list) on
    certificatesigningrequests, and for OCM C(get) and C(patch) on managedclusters.
  - OCM's own hub controller accepts renewals of accepted clusters by itself; Karmada's approves agent CSRs by itself
    when its C(agentcsrapproving) controller and the matching RBAC exist. This module is for the clusters they leave
    pending.
seealso:
  - module: multicluster.fleet.cluster_info
"""

EXAMPLES = r"""
- name: Accept two OCM clusters that just joined, waiting for their klusterlets' CSRs
  multicluster.fleet.csr_accept:
    engine: ocm
    clusters: [cluster1, cluster2]
    wait: true
    wait_timeout: 120
    wait_sleep: 2
    kubeconfig: /etc/fleet/hub.kubeconfig
  register: accepted

- name: Approve the Karmada agent of member2, registered by pull with bootstrap token abcdef
  multicluster.fleet.csr_accept:
    engine: karmada
    clusters: [member2]
    requesters: [system:bootstrap:abcdef]
    deny_invalid: true
    wait: true

- name: Approve the CSR of a registration under way, although an earlier registration of member2 was approved
  multicluster.fleet.csr_accept:
    engine: karmada
    clusters: [member2]
    requesters: [system:bootstrap:abcdef]
    expect_new_csr: true
    wait: true
    wait_timeout: 300

- name: Accept every pull member of the inventory
  multicluster.fleet.csr_accept:
    engine: "{{ fleet_engine }}"
    clusters: "{{ groups.members | map('extract', hostvars) | selectattr('registration_mode', 'equalto', 'pull')
                  | map(attribute='cluster_name') | list }}"
    wait: true
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
clusters:
  description: One entry per cluster, in the order of O(clusters). Also returned when the task fails.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Cluster name.
      type: str
      sample: cluster1
    accepted:
      description:
        - The cluster's agent holds an approved certificate (or has joined with one) and, for OCM, the hub accepts it.
        - With O(expect_new_csr), only a certificate approved by this task or since it started counts.
      type: bool
      sample: true
    approved:
      description: Names of the CSRs this task approved (would approve, in check mode).
      type: list
      elements: str
      sample: [cluster1-7bx9k]
    rejected:
      description:
        - Pending CSRs of the cluster that were not approved, with why - those that break a rule, and acceptable ones
          older than the CSR approved.
      type: list
      elements: dict
      contains:
        name:
          description: CSR name.
          type: str
        requester:
          description: The user who created the CSR.
          type: str
        reasons:
          description: Every rule the CSR breaks.
          type: list
          elements: str
      sample:
        - name: cluster1-x2x4v
          requester: system:bootstrap:q1w2e3
          reasons: ["usage server auth is not allowed: an agent gets a client certificate"]
    denied:
      description: Names of the rejected CSRs this task denied (with O(deny_invalid)).
      type: list
      elements: str
      sample: []
"""

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.accept import accept
from ansible_collections.multicluster.fleet.plugins.module_utils.engines import NAMES
from ansible_collections.multicluster.fleet.plugins.module_utils.module import WAIT_ARG_SPEC, FleetModule


def run(module):
    params = module.params
    resources.check_wait_options(params)
    return accept(module.cluster(), params["engine"], params["clusters"], requesters=params["requesters"],
                  deny_invalid=params["deny_invalid"], wait=resources.Wait.from_params(params),
                  check_mode=module.check_mode, expect_new_csr=params["expect_new_csr"])


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    wait = dict(WAIT_ARG_SPEC, wait_timeout=dict(WAIT_ARG_SPEC["wait_timeout"], aliases=["timeout"]))
    return dict(argument_spec=dict(
        engine=dict(type="str", required=True, choices=list(NAMES)),
        clusters=dict(type="list", elements="str", required=True),
        requesters=dict(type="list", elements="str"),
        deny_invalid=dict(type="bool", default=False),
        expect_new_csr=dict(type="bool", default=False),
        **wait
    ))


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
