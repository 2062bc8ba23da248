#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cluster_info
short_description: List the member clusters registered on a Karmada or Open Cluster Management hub
version_added: 1.0.0
description:
  - Reads Karmada C(Cluster) objects (C(clusters.cluster.karmada.io/v1alpha1)) or OCM C(ManagedCluster)
    objects (C(managedclusters.cluster.open-cluster-management.io/v1)) from the hub.
  - Returns the same summary for both engines (name, mode, Kubernetes version, readiness, OCM acceptance,
    conditions) next to the object itself, the way C(kubectl get clusters) and C(clusteradm get clusters) show them.
  - With O(member), the connection to the member cluster of O(name) (required with it), it also reads that member's
    agent - RV(clusters[].agent) - its image and version, and the expiry of its client certificate. Karmada - the
    Deployment C(karmada-system/karmada-agent) and the certificate in Secret C(karmada-system/karmada-kubeconfig). OCM
    (C(Default) and C(Singleton) klusterlets) - the registration agent's Deployment
    C(open-cluster-management-agent/klusterlet-registration-agent) (C(klusterlet-agent)) and the certificate in Secret
    C(hub-kubeconfig-secret) there. A Push member (Karmada) has no agent.
  - With O(members), it reads the agents of many members in one task, each with its own connection - the summary of
    C(site.yml) reads every pull member of the run this way, with the fleet.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  name:
    description:
      - Read only the member cluster of this name. The result is an empty list when it does not exist (with O(wait),
        the module waits until it does).
      - A DNS-1123 label of 1 to 48 (Karmada) or 63 (OCM) characters; other names are refused.
    type: str
  label_selectors:
    description:
      - Kubernetes label selectors (for example V(region=eu-west-1) or V(env in (prod,stage))); all must match.
    type: list
    elements: str
    default: []
  members:
    description:
      - Members whose agents to read, each with the connection to its cluster - its name and the same options as
        O(member) - for the clusters of the list (by O(name) and O(label_selectors)) they name; in parallel.
      - A member whose agent cannot be read (it cannot be reached, say) has no RV(clusters[].agent), as a member not
        named here; the task does not fail for it.
      - Not with O(member) or O(wait).
    type: list
    elements: dict
    version_added: 1.1.0
    suboptions:
      name:
        description: The member cluster.
        type: str
        required: true
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
  wait:
    description:
      - Wait until every cluster the module would list (by O(name) and O(label_selectors)) has the O(wait_condition),
        and with O(name) until that cluster exists, so that a play can wait for members to become ready without an
        C(until) loop. The clusters are read again every O(wait_sleep) seconds.
      - With O(member), also until the member's agent has rolled out its image (RV(clusters[].agent.rolled_out)) - after
        an upgrade, until the agent runs the new version (a Karmada Push member has no agent to wait for).
      - On timeout the task fails naming the clusters that are not there yet and what was last seen of each, and
        returns RV(clusters) as last read.
  wait_condition:
    description:
      - The condition O(wait) waits for on every listed cluster.
      - Default C(Ready=True) for Karmada and C(ManagedClusterConditionAvailable=True) for OCM, what RV(clusters[].ready) reports.
seealso:
  - module: multicluster.fleet.cluster_join
  - module: multicluster.fleet.cluster_register
  - module: multicluster.fleet.csr_accept
  - name: Karmada - Cluster Registration
    description: The Cluster objects of Push and Pull members, as Karmada documents them.
    link: https://karmada.io/docs/userguide/clustermanager/cluster-registration
  - name: OCM - ManagedCluster
    description: The ManagedCluster objects and their conditions, as OCM documents them.
    link: https://open-cluster-management.io/docs/concepts/cluster-inventory/managedcluster/
extends_documentation_fragment:
  - multicluster.fleet.engine
  - multicluster.fleet.auth
  - multicluster.fleet.auth.member
  - multicluster.fleet.wait
  - multicluster.fleet.wait.condition
  - multicluster.fleet.attributes
  - multicluster.fleet.attributes.info_module
"""

EXAMPLES = r"""
- name: List every member cluster of a Karmada hub
  multicluster.fleet.cluster_info:
    engine: karmada
    kubeconfig: /etc/fleet/hub.kubeconfig
  register: fleet

- name: Show which clusters are not ready
  ansible.builtin.debug:
    msg: "{{ fleet.clusters | rejectattr('ready') | map(attribute='name') | list }}"

- name: Read one OCM managed cluster with credentials from the environment (K8S_AUTH_*)
  multicluster.fleet.cluster_info:
    engine: ocm
    name: cluster1
  register: cluster1

- name: List the Karmada members with the agents of two Pull members, each read with its own kubeconfig
  multicluster.fleet.cluster_info:
    engine: karmada
    kubeconfig: /etc/fleet/karmada-apiserver.kubeconfig
    members:
      - name: member2
        kubeconfig: /etc/fleet/member2.kubeconfig
      - name: member4
        kubeconfig: /etc/fleet/member4.kubeconfig
  register: fleet

- name: Wait until member1 and member2 are registered and ready, checking every 10 seconds for up to 10 minutes
  multicluster.fleet.cluster_info:
    engine: karmada
    name: "{{ item }}"
    wait: true
    wait_sleep: 10
    wait_timeout: 600
  loop: [member1, member2]

- name: Wait until every OCM cluster labelled env=prod has joined
  multicluster.fleet.cluster_info:
    engine: ocm
    label_selectors: [env=prod]
    wait: true
    wait_condition:
      type: ManagedClusterJoined

- name: Read the agent version and certificate expiry of member2, a Pull member
  multicluster.fleet.cluster_info:
    engine: karmada
    name: member2
    member:
      kubeconfig: /etc/fleet/member2.kubeconfig
  register: member2

- name: Warn when its agent certificate expires within 30 days
  ansible.builtin.debug:
    msg: "{{ member2.clusters[0].agent.certificate_expiration }}"
  when: (member2.clusters[0].agent.certificate_expiration | ansible.builtin.to_datetime('%Y-%m-%dT%H:%M:%SZ')
         - now(utc=true)).days < 30

- name: Production clusters in Europe
  multicluster.fleet.cluster_info:
    engine: ocm
    context: hub-admin
    label_selectors:
      - env=prod
      - region in (eu-west-1,eu-central-1)
"""

RETURN = r"""
clusters:
  description: The member clusters, sorted by name. Also returned when O(wait) times out, as last read.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Cluster name.
      type: str
      sample: member1
    engine:
      description: V(karmada) or V(ocm).
      type: str
      sample: karmada
    mode:
      description: How the hub reaches the cluster, V(Push) or V(Pull) (Karmada C(spec.syncMode); always V(Pull) for OCM).
      type: str
      sample: Push
    id:
      description: The cluster id (Karmada C(spec.id), OCM claim C(id.k8s.io)), when known.
      type: str
      sample: 004830c5-3081-41f2-afc4-e68d86e4f96b
    api_endpoint:
      description: The member API server URL the hub knows, when known.
      type: str
      sample: https://10.0.0.7:6443
    kubernetes_version:
      description: The member's Kubernetes version as the engine reports it.
      type: str
      sample: v1.20.2
    created:
      description: When the member was registered on the hub (the object's C(creationTimestamp)); AGE in C(kubectl get).
      type: str
      sample: "2026-11-24T12:00:00Z"
    ready:
      description: Karmada condition C(Ready), OCM condition C(ManagedClusterConditionAvailable), is V(True).
      type: bool
      sample: true
    joined:
      description: OCM condition C(ManagedClusterJoined) is V(True); null for Karmada.
      type: bool
      sample: true
    accepted:
      description: OCM C(spec.hubAcceptsClient); null for Karmada.
      type: bool
      sample: true
    provider:
      description: Karmada C(spec.provider), or OCM claim C(platform.open-cluster-management.io).
      type: str
      sample: aws
    region:
      description: Karmada C(spec.region), or OCM claim C(region.open-cluster-management.io).
      type: str
      sample: eu-west-1
    zones:
      description: Karmada C(spec.zones) (or C(spec.zone)); empty for OCM.
      type: list
      elements: str
      sample: [eu-west-1a]
    labels:
      description: The object's labels.
      type: dict
      sample: {env: prod}
    annotations:
      description:
        - The object's annotations, without the bookkeeping of this collection (the keys M(multicluster.fleet.cluster_label)
          manages) and of C(kubectl apply).
      type: dict
      sample: {fleet.example.com/owner: platform-team}
    taints:
      description: The object's C(spec.taints), each with C(key), C(value), C(effect) and C(timeAdded).
      type: list
      elements: dict
      sample: [{key: cluster.karmada.io/unschedulable, effect: NoSchedule, timeAdded: "2026-11-24T12:00:00Z"}]
    cordoned:
      description:
        - The cluster carries the engine's cordon taint - Karmada C(cluster.karmada.io/unschedulable) with effect
          C(NoSchedule) (C(karmadactl cordon)), OCM C(multicluster.fleet/cordoned) with effect C(NoSelect) or C(NoSelectIfNew).
      type: bool
      sample: false
    cluster_set:
      description: The OCM cluster set the cluster belongs to (label C(cluster.open-cluster-management.io/clusterset)); null for Karmada.
      type: str
      sample: default
    conditions:
      description: Status conditions with C(type), C(status), C(reason), C(message), C(lastTransitionTime).
      type: list
      elements: dict
    object:
      description: The Cluster or ManagedCluster as the hub stores it (server-owned metadata left out).
      type: dict
    agent:
      description:
        - With O(member), or O(members) naming the cluster, the member's agent as the member shows it; absent without,
          or when O(members) could not read it; null for a Karmada Push member.
      type: dict
      contains:
        image:
          description: The agent's image (Karmada - the karmada-agent; OCM - the registration agent).
          type: str
          sample: docker.io/karmada/karmada-agent:v1.18.2
        version:
          description: The release the agent runs, from its image's tag (V(v<major>.<minor>.<patch>) when it names one).
          type: str
          sample: v1.18.2
        certificate_expiration:
          description: When the agent's client certificate expires (its C(notAfter)), RFC 3339 UTC.
          type: str
          sample: "2027-11-29T05:00:00Z"
        rolled_out:
          description:
            - Whether the agent runs RV(clusters[].agent.image) - its Deployment's current pod template is updated and
              available on every replica, as C(kubectl rollout status) decides - and, OCM, that image is the one the
              Klusterlet asks its operator for. False while an upgrade rolls out, or when the image cannot be pulled.
          type: bool
        problem:
          description: What could not be read (no Deployment, no certificate), else null.
          type: str
"""

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import hub_members
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.module import (
    WAIT_ARG_SPEC, WAIT_CONDITION_ARG_SPEC, FleetModule, auth_argument_spec, cluster_argument_spec)


def run(module):
    params = module.params
    resources.check_wait_options(params)
    hub = module.cluster()
    member = module.cluster(params["member"], params["name"]) if params["member"] else None
    if params["wait"]:
        clusters = hub_members.wait_for_clusters(hub, params["engine"], params["name"], params["label_selectors"],
                                                 params["wait_condition"], params["wait_timeout"], params["wait_sleep"], member)
    else:
        clusters = hub_members.member_clusters(hub, params["engine"], params["name"], params["label_selectors"])
        if member is not None:
            hub_members.add_agents(clusters, params["engine"], member)
        if params["members"]:
            connections = dict((item["name"], item) for item in params["members"])
            hub_members.add_agents_each(clusters, params["engine"], lambda name: module.cluster(connections[name], name),
                                        list(connections))
    return dict(changed=False, clusters=clusters)


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(argument_spec=dict(
        engine=dict(type="str", required=True, choices=list(engines.NAMES)),
        name=dict(type="str"),
        label_selectors=dict(type="list", elements="str", default=[]),
        member=cluster_argument_spec(),
        members=dict(type="list", elements="dict", options=dict(name=dict(type="str", required=True), **auth_argument_spec())),
        **WAIT_ARG_SPEC, **WAIT_CONDITION_ARG_SPEC
    ), required_by={"member": ("name",)}, mutually_exclusive=[("member", "members"), ("wait", "members")])


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
