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
      - Required unless O(per_cluster) is given.
    type: str
  per_cluster:
    description:
      - Join many members in one task, each with its own settings; instead of O(cluster_name), O(member) and the
        Cluster's settings (O(api_endpoint), O(proxy_url), O(insecure_skip_tls_verification), O(provider), O(region),
        O(zones)), which each item takes as a single join does. With O(state=present) only.
      - The joins run four at a time on one hub connection. With O(wait), one wait then follows for all of them, the
        hub's Clusters read in one request per look.
      - A member whose join fails, or whose wait runs out, fails alone; the others are joined. The task then fails
        naming each, with RV(clusters_failed) and RV(cluster_errors).
    type: list
    elements: dict
    version_added: 1.1.0
    suboptions:
      name:
        description:
          - Name of the member cluster on the hub, as O(cluster_name).
        type: str
        required: true
      member:
        description:
          - The member's connection, as O(member).
        type: dict
        required: true
        suboptions:
          kubeconfig:
            description: Path to a kubeconfig file, or the kubeconfig content as a dictionary.
            type: raw
          context:
            description: The kubeconfig context to use.
            type: str
          host:
            description: URL of the API server.
            type: str
          api_key:
            description: Bearer token to authenticate with.
            type: str
          validate_certs:
            description: Whether to verify the API server's TLS certificate.
            type: bool
            aliases: [verify_ssl]
          ca_cert:
            description: Path to a CA certificate bundle that verifies the API server.
            type: path
            aliases: [ssl_ca_cert]
          client_cert:
            description: Path to a client certificate.
            type: path
            aliases: [cert_file]
          client_key:
            description: Path to the private key of the client certificate.
            type: path
            aliases: [key_file]
          proxy:
            description: URL of an HTTP proxy.
            type: str
          impersonate_user:
            description: User to impersonate.
            type: str
          impersonate_groups:
            description: Groups to impersonate.
            type: list
            elements: str
      api_endpoint:
        description:
          - As O(api_endpoint).
        type: str
      proxy_url:
        description:
          - As O(proxy_url).
        type: str
      insecure_skip_tls_verification:
        description:
          - As O(insecure_skip_tls_verification).
        type: bool
      provider:
        description:
          - As O(provider).
        type: str
      region:
        description:
          - As O(region).
        type: str
      zones:
        description:
          - As O(zones).
        type: list
        elements: str
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
      - Shows the Cluster before and after, under the header C(hub Cluster/<cluster_name>); with O(per_cluster), that of
        each cluster changed.
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

- name: Join two members in Push mode in one task, each with its region, and wait until the hub reports both ready
  multicluster.fleet.cluster_join:
    kubeconfig: /etc/fleet/karmada-apiserver.kubeconfig
    per_cluster:
      - name: edge1
        member:
          kubeconfig: /etc/fleet/edge1.kubeconfig
        region: eu-west-1
      - name: edge2
        member:
          kubeconfig: /etc/fleet/edge2.kubeconfig
        region: eu-west-2
    wait: true
  register: joined

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
    - With O(cluster_name), the Cluster as the hub stores it (server-owned metadata left out); what the hub would store in check mode.
    - With O(state=absent), the Cluster as it was before the unjoin; null when there was none.
  returned: with O(cluster_name), always
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
  returned: with O(cluster_name), always
  type: str
  sample: 004830c5-3081-41f2-afc4-e68d86e4f96b
changes:
  description:
    - With O(cluster_name), what the run did (or would do, in check mode) to each object, in order - V(member) or
      V(hub), then C(Kind/namespace/name) or C(Kind/name), a colon, and V(created), V(updated), V(unchanged), V(deleted)
      or V(absent).
    - Removing finalizers (O(force)) shows as V(updated).
  returned: with O(cluster_name), always (also when the O(wait) times out)
  type: list
  elements: str
  sample:
    - "member Namespace/karmada-cluster: unchanged"
    - "member ServiceAccount/karmada-cluster/karmada-member1: unchanged"
    - "hub Cluster/member1: updated"
    - "hub Secret/karmada-cluster/member1: unchanged"
clusters:
  description:
    - With O(per_cluster), each cluster by name - joined, or failed - with its RV(changes) (what its join did or, failed,
      what it wrote before the failure), whether it changed, and its RV(cluster_id) (null when its join failed).
  returned: with O(per_cluster), always
  type: dict
  version_added: 1.1.0
  sample:
    edge1:
      changed: false
      changes: ["member Namespace/karmada-cluster: unchanged", "hub Cluster/edge1: unchanged"]
      cluster_id: 004830c5-3081-41f2-afc4-e68d86e4f96b
clusters_failed:
  description: With O(per_cluster), the clusters whose join failed or whose wait ran out.
  returned: when a cluster of O(per_cluster) failed
  type: list
  version_added: 1.1.0
  elements: str
  sample: [edge2]
cluster_errors:
  description: With O(per_cluster), per failed cluster what a join of that cluster alone would have said.
  returned: when a cluster of O(per_cluster) failed
  type: dict
  version_added: 1.1.0
  sample:
    edge2: "cluster 'edge2': kubeconfig file /etc/fleet/edge2.kubeconfig does not exist"
"""

from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.join import join, join_each, unjoin
from ansible_collections.multicluster.fleet.plugins.module_utils.module import (
    WAIT_ARG_SPEC, WAIT_CONDITION_ARG_SPEC, FleetModule, cluster_argument_spec)


def run(module):
    params = module.params
    hub = module.cluster()
    if params["per_cluster"] is not None:
        if params["state"] != "present":
            raise FleetError("per_cluster joins clusters; unjoin each with cluster_name and state=absent")
        return join_each(hub, params["per_cluster"], params, lambda item: module.cluster(item["member"], name=item["name"]),
                         module.check_mode, hide=module.no_log_values.add, warn=module.warn)
    member = module.cluster(params["member"], name=params["cluster_name"], role="member") if params["member"] else None
    if params["state"] == "present":
        return join(hub, member, params, module.check_mode, hide=module.no_log_values.add, warn=module.warn)
    return unjoin(hub, member, params, module.check_mode, warn=module.warn)


def settings_spec():
    """The Cluster's settings of one join: top-level options, or those of each item of per_cluster."""
    return dict(
        api_endpoint=dict(type="str"),
        proxy_url=dict(type="str"),
        insecure_skip_tls_verification=dict(type="bool"),
        provider=dict(type="str"),
        region=dict(type="str"),
        zones=dict(type="list", elements="str"),
    )


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(
        argument_spec=dict(
            cluster_name=dict(type="str"),
            per_cluster=dict(type="list", elements="dict", options=dict(
                name=dict(type="str", required=True),
                member=cluster_argument_spec(required=True),
                **settings_spec())),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            cluster_namespace=dict(type="str", default="karmada-cluster"),
            force=dict(type="bool", default=False),
            member=cluster_argument_spec(),
            **dict(settings_spec(), **WAIT_ARG_SPEC, **WAIT_CONDITION_ARG_SPEC)
        ),
        required_one_of=[("cluster_name", "per_cluster")],
        mutually_exclusive=[("per_cluster", option) for option in ["cluster_name", "member"] + list(settings_spec())],
        required_if=[("state", "present", ("member", "per_cluster"), True)],
    )


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
