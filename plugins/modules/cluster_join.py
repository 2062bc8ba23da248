#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cluster_join
short_description: Join a member cluster to a Karmada hub in Push mode, or unjoin it
version_added: 1.0.0
description:
  - Does what C(karmadactl join) and C(karmadactl unjoin) do, as one idempotent module that can run in check mode.
  - With O(state=present), creates or reconciles on the member the namespace O(cluster_namespace), the ServiceAccounts
    C(karmada-<cluster>) and C(karmada-impersonator) with their token Secrets, and the ClusterRole and ClusterRoleBinding
    C(karmada-controller-manager:karmada-<cluster>); on the hub the namespace O(cluster_namespace), the C(Cluster)
    (C(clusters.cluster.karmada.io/v1alpha1), C(syncMode=Push)) and the Secrets C(<cluster>) (keys C(caBundle), C(token))
    and C(<cluster>-impersonator), owned by the Cluster.
  - The member's cluster id is the UID of its C(kube-system) namespace. The module refuses to join a member that is
    already registered under another name, or under a name that another cluster uses, before it writes anything.
    A run that creates the Cluster holds Lease C(kube-system/multicluster-fleet-registration) on the member until the
    Cluster is written and compares with the hub again under it, so two runs (or two inventory hosts) that reach one
    cluster under two names do not both join it - the second one waits and is refused.
  - Every step is a reconcile, so a run that failed half way is finished by running it again, and a changed option
    (region, zones, endpoint) or a rotated member token updates only the objects it affects.
  - With O(state=absent), deletes the Cluster and waits until Karmada's controller has released it, then deletes the
    hub Secrets and, when O(member) is given, the member objects.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  cluster_name:
    description:
      - Name of the member cluster on the hub.
      - A DNS-1123 label of 1 to 48 characters (Karmada derives the namespace C(karmada-es-<cluster_name>) from it).
    type: str
    required: true
  state:
    description:
      - V(present) joins (or reconciles) the cluster; it requires O(member).
      - V(absent) unjoins it; the member objects are removed when O(member) is given and left in place, with a
        warning, otherwise.
    type: str
    choices: [present, absent]
    default: present
  cluster_namespace:
    description:
      - Namespace of the credentials, on the hub (the Secrets) and on the member (ServiceAccounts and token Secrets).
      - Unjoin deletes this namespace on the member, so Kubernetes' own namespaces are refused.
    type: str
    default: karmada-cluster
  api_endpoint:
    description:
      - The URL Karmada reaches the member API server at (C(spec.apiEndpoint)).
      - Defaults to the server of the O(member) connection.
    type: str
  proxy_url:
    description:
      - Proxy Karmada reaches the member through (C(spec.proxyURL)); scheme V(http), V(https) or V(socks5).
      - Defaults to the proxy of the O(member) connection, if any; otherwise the Cluster's proxy is left as it is.
      - An empty string removes the proxy from the Cluster.
    type: str
  insecure_skip_tls_verification:
    description:
      - Whether Karmada skips verifying the member's serving certificate (C(spec.insecureSkipTLSVerification)).
      - Defaults to true only when the O(member) connection itself does not verify TLS.
    type: bool
  provider:
    description:
      - Cloud provider of the member (C(spec.provider)). Unset leaves the Cluster's value as it is; an empty string removes it.
    type: str
  region:
    description:
      - Region of the member (C(spec.region)). Unset leaves the Cluster's value as it is; an empty string removes it.
    type: str
  zones:
    description:
      - Failure zones of the member (C(spec.zones)); each a distinct name without spaces or commas.
      - Unset leaves the Cluster's zones as they are; an empty list removes them.
    type: list
    elements: str
  wait:
    description:
      - With O(state=present), wait until Karmada reports the O(wait_condition) on the Cluster (by default C(Ready=True)).
      - A condition from before this run's changes counts until Karmada's controller has looked at the member again.
      - A wait that times out fails with C(last_seen), and with C(changed) and RV(changes) saying what the run
        wrote before it waited.
      - O(state=absent) always waits for the Cluster to be gone before it removes credentials the controller still needs;
        a deletion that is not over within O(wait_timeout) fails, with C(changed) and RV(changes) saying what the run
        deleted before it.
      - In check mode nothing is written, so nothing is waited for.
  wait_condition:
    description:
      - The condition of the Cluster O(wait) waits for. Default C(Ready=True).
  wait_timeout:
    description:
      - Seconds to wait for each of the member tokens, for the O(wait_condition) (with O(wait)), and for deletions;
        at least V(1).
  wait_sleep:
    description:
      - Seconds between two reads of the Cluster while O(wait) waits (at least V(1)).
  force:
    description:
      - With O(state=absent), when the Cluster is still there after O(wait_timeout), remove the finalizers that hold it,
        in Karmada's order - C(karmada.io/execution-controller) on the Works in C(karmada-es-<cluster_name>), the
        finalizers of that namespace (which is then deleted), C(karmada.io/cluster-controller) on the Cluster.
      - Workloads Karmada propagated to the member may then stay on the member.
    type: bool
    default: false
notes:
  - The top-level authentication options address the Karmada API server (the hub).
  - The member ServiceAccount token and the CA are stored on the hub and never returned.
seealso:
  - module: multicluster.fleet.cluster_info
extends_documentation_fragment:
  - multicluster.fleet.auth
  - multicluster.fleet.auth.member
  - multicluster.fleet.wait
  - multicluster.fleet.wait.condition
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports what would be created, updated or deleted, using the API servers' dry run; writes nothing and does not wait.
  diff_mode:
    support: full
    details:
      - Shows the Cluster before and after, under the header C(hub Cluster/<cluster_name>).
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Join member1 to the Karmada hub
  multicluster.fleet.cluster_join:
    kubeconfig: /etc/fleet/karmada-apiserver.kubeconfig
    cluster_name: member1
    member:
      kubeconfig: /etc/fleet/member1.kubeconfig
    region: eu-west-1
    zones: [eu-west-1a, eu-west-1b]
    wait: true

# In a play over the group members: each host is a member cluster, the hub's credentials come from the hub host.
- name: Join this member in Push mode
  multicluster.fleet.cluster_join:
    kubeconfig: "{{ hostvars[groups.hub[0]].kubeconfig }}"
    context: "{{ hostvars[groups.hub[0]].context | default(omit) }}"
    cluster_name: "{{ cluster_name | default(inventory_hostname) }}"
    member:
      kubeconfig: "{{ kubeconfig }}"
      context: "{{ context | default(omit) }}"
    provider: "{{ provider | default(omit) }}"
    region: "{{ region | default(omit) }}"
    zones: "{{ zones | default(omit) }}"
    wait: true
  register: joined

- name: Show what changed
  ansible.builtin.debug:
    var: joined.changes

- name: Unjoin member1 and remove its objects on the member
  multicluster.fleet.cluster_join:
    kubeconfig: /etc/fleet/karmada-apiserver.kubeconfig
    cluster_name: member1
    state: absent
    member:
      kubeconfig: /etc/fleet/member1.kubeconfig

- name: Unjoin a member that is gone for good
  multicluster.fleet.cluster_join:
    kubeconfig: /etc/fleet/karmada-apiserver.kubeconfig
    cluster_name: member3
    state: absent
    wait_timeout: 120
    force: true
"""

RETURN = r"""
cluster:
  description:
    - The Cluster as the hub stores it (server-owned metadata left out); what the hub would store in check mode.
    - With O(state=absent), the Cluster as it was before the unjoin; null when there was none.
  returned: always
  type: dict
  sample:
    apiVersion: cluster.karmada.io/v1alpha1
    kind: Cluster
    metadata: {name: member1}
    spec:
      syncMode: Push
      apiEndpoint: https://10.0.0.7:6443
      id: 004830c5-3081-41f2-afc4-e68d86e4f96b
      secretRef: {namespace: karmada-cluster, name: member1}
      impersonatorSecretRef: {namespace: karmada-cluster, name: member1-impersonator}
      region: eu-west-1
cluster_id:
  description:
    - The member's cluster id (UID of its C(kube-system) namespace), the Cluster's C(spec.id) and its annotation
      C(multicluster.fleet/cluster-id). The hub also records it in ConfigMap
      C(kube-system/multicluster-fleet.karmada.<cluster>), with the namespace of the Secrets, the record of a cluster this
      collection registered, which M(multicluster.fleet.cluster_prune) reads.
    - With O(state=absent) and no O(member), the id the Cluster recorded; null when there was no Cluster.
  returned: always
  type: str
  sample: 004830c5-3081-41f2-afc4-e68d86e4f96b
changes:
  description:
    - What the run did (or would do, in check mode) to each object, in order - V(member) or V(hub), then
      C(Kind/namespace/name) or C(Kind/name), a colon, and V(created), V(updated), V(unchanged), V(deleted) or V(absent).
    - Removing finalizers (O(force)) shows as V(updated).
  returned: always (also when the O(wait) times out)
  type: list
  elements: str
  sample:
    - "member Namespace/karmada-cluster: unchanged"
    - "member ServiceAccount/karmada-cluster/karmada-member1: unchanged"
    - "hub Cluster/member1: updated"
    - "hub Secret/karmada-cluster/member1: unchanged"
"""

from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.join import join, unjoin
from ansible_collections.multicluster.fleet.plugins.module_utils.module import (
    WAIT_ARG_SPEC, WAIT_CONDITION_ARG_SPEC, FleetModule, cluster_argument_spec)


def run(module):
    params = module.params
    hub = module.cluster()
    member = module.cluster(params["member"], name=params["cluster_name"], role="member") if params["member"] else None
    if params["state"] == "present":
        return join(hub, member, params, module.check_mode, hide=module.no_log_values.add, warn=module.warn)
    return unjoin(hub, member, params, module.check_mode, warn=module.warn)


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(
        argument_spec=dict(
            cluster_name=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            cluster_namespace=dict(type="str", default="karmada-cluster"),
            api_endpoint=dict(type="str"),
            proxy_url=dict(type="str"),
            insecure_skip_tls_verification=dict(type="bool"),
            provider=dict(type="str"),
            region=dict(type="str"),
            zones=dict(type="list", elements="str"),
            force=dict(type="bool", default=False),
            member=cluster_argument_spec(),
            **WAIT_ARG_SPEC, **WAIT_CONDITION_ARG_SPEC
        ),
        required_if=[("state", "present", ("member",))],
    )


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
