#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: hub_registration
short_description: Prepare a Karmada or Open Cluster Management hub for members that register with join credentials
version_added: 1.0.0
description:
  - Sets up what pull registration with a bootstrap token or OCM's bootstrap ServiceAccount needs on the hub,
    the parts C(karmadactl init) and C(clusteradm init) create for it.
  - Discovery. Creates C(kube-public/cluster-info) when it is missing - one cluster with O(hub_apiserver) and the
    hub CA, as kubeadm writes it; Kubernetes' bootstrapsigner signs it for every signing token - and a Role and
    RoleBinding in C(kube-public) that let C(system:anonymous) read it. When cluster-info exists but publishes
    another server or CA, the module warns and reports it in RV(cluster_info), and replaces it only with
    O(update_cluster_info=true).
  - Karmada. ClusterRoleBinding C(system:karmada:agent-bootstrap) lets group
    C(system:bootstrappers:karmada:default-cluster-token) create CSRs (ClusterRole C(system:node-bootstrapper)).
    With O(csr_auto_approval), ClusterRoles C(system:karmada:certificatesigningrequest:autoapprover) and
    C(system:karmada:certificatesigningrequest:selfautoapprover) bound to that group and to C(system:karmada:agents),
    which let Karmada's agent CSR approver approve registration and renewal CSRs; without it they are removed.
  - OCM. Namespace C(open-cluster-management), ServiceAccount C(agent-registration-bootstrap), ClusterRole
    C(open-cluster-management:bootstrap) (create CSRs, create and read ManagedClusters, join cluster sets, read
    ConfigMaps) bound to that ServiceAccount (ClusterRoleBinding C(agent-registration-bootstrap)) and to group
    C(system:bootstrappers:managedcluster) (ClusterRoleBinding C(open-cluster-management:bootstrap:agent-registration)).
  - O(state=absent) removes these objects (registration with join credentials stops working), but keeps
    C(kube-public/cluster-info) and the namespace C(open-cluster-management), which other components use.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  state:
    description:
      - Whether the registration prerequisites should exist.
    type: str
    choices: [present, absent]
    default: present
  hub_apiserver:
    description:
      - The hub API server URL members reach, published in C(kube-public/cluster-info). It may differ from the
        URL the controller uses (a load balancer, a public name).
      - An V(https) (or V(http)) URL with a host and no path parameters, as M(multicluster.fleet.cluster_join) takes
        its O(multicluster.fleet.cluster_join#module:api_endpoint); anything else is refused.
      - Default the server of the hub connection.
    type: str
  hub_ca_cert:
    description:
      - Path to the CA bundle (PEM) members use to verify O(hub_apiserver), published in C(kube-public/cluster-info).
      - It must verify the certificate the hub's API server presents. The module reads that certificate over TLS
        (through the hub connection's address) and refuses a bundle that does not verify it, naming the pins of the
        bundle and of the CA that did issue the certificate; nothing is changed then. When the hub connection goes
        through a proxy the check is skipped with a warning.
      - Default the CA that verifies the hub connection (O(ca_cert), or the kubeconfig's certificate authority).
    type: path
  csr_auto_approval:
    description:
      - Only for O(engine=karmada). Whether Karmada's agent CSR approver may approve the CSRs of bootstrap tokens and
        the renewals of registered agents. Without it, CSRs wait for M(multicluster.fleet.csr_accept).
      - Default V(true) for Karmada. OCM configures automatic approval in its ClusterManager instead, so
        setting this for O(engine=ocm) is an error.
    type: bool
  update_cluster_info:
    description:
      - Replace the kubeconfig of an existing C(kube-public/cluster-info) that publishes another server or CA.
        Members that pinned the old CA then fail discovery, so this is off by default.
    type: bool
    default: false
extends_documentation_fragment:
  - multicluster.fleet.engine
  - multicluster.fleet.auth
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Writes are server-side dry runs.
  diff_mode:
    support: full
  idempotent:
    support: full
seealso:
  - module: multicluster.fleet.bootstrap_token
"""

EXAMPLES = r"""
- name: Prepare a Karmada hub whose members reach it through a load balancer
  multicluster.fleet.hub_registration:
    engine: karmada
    kubeconfig: /etc/fleet/hub.kubeconfig
    hub_apiserver: https://hub.example.com:6443

- name: Prepare an OCM hub; CSRs are approved by hand (clusteradm accept / csr_accept)
  multicluster.fleet.hub_registration:
    engine: ocm
    context: hub-admin
  register: prepared

- name: Publish a new hub address in cluster-info
  multicluster.fleet.hub_registration:
    engine: karmada
    hub_apiserver: https://hub-new.example.com:6443
    hub_ca_cert: /etc/fleet/hub-ca.crt
    update_cluster_info: true

- name: Stop registration with join credentials
  multicluster.fleet.hub_registration:
    engine: karmada
    state: absent
"""

RETURN = r"""
objects:
  description: Every object the module manages, as C(Kind/namespace/name) followed by the action (created, updated, unchanged, deleted, absent).
  returned: always
  type: list
  elements: str
  sample:
    - "ConfigMap/kube-public/cluster-info: unchanged"
    - "ClusterRoleBinding/system:karmada:agent-bootstrap: created"
cluster_info:
  description: What C(kube-public/cluster-info) publishes after the run.
  returned: state is present
  type: dict
  contains:
    action:
      description: V(created), V(updated), V(unchanged), or V(different) when it publishes something else and was kept.
      type: str
      sample: unchanged
    server:
      description: The published server URL.
      type: str
      sample: https://hub.example.com:6443
    ca_cert_hashes:
      description: Public key pins (C(sha256:<hex>)) of the published CA.
      type: list
      elements: str
    matches:
      description: Whether it publishes O(hub_apiserver) and the hub CA.
      type: bool
      sample: true
hub_apiserver:
  description: The hub URL members are meant to reach (O(hub_apiserver) or the hub connection's server).
  returned: state is present
  type: str
  sample: https://hub.example.com:6443
ca_cert_hashes:
  description: Public key pins of the hub CA (O(hub_ca_cert) or the connection's), for C(--discovery-token-ca-cert-hash).
  returned: state is present
  type: list
  elements: str
grpc:
  description:
    - OCM - the gRPC registration endpoint members use with the C(grpc) registration driver, when the ClusterManager
      has that driver; null otherwise. For M(multicluster.fleet.cluster_register)'s
      O(multicluster.fleet.cluster_register#module:ocm.grpc_server) and
      O(multicluster.fleet.cluster_register#module:ocm.grpc_ca_pem).
  returned: state is present
  type: dict
  contains:
    server:
      description: The host of the ClusterManager's C(hostname) endpoint for gRPC.
      type: str
      sample: grpc.hub.example.com
    ca_pem:
      description:
        - PEM of the CA that verifies the gRPC server - the endpoint's C(caBundle), else ConfigMap
          C(open-cluster-management-hub/ca-bundle-configmap) (null, with a warning, until the operator created it).
      type: str
"""

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import hub
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.engines import NAMES
from ansible_collections.multicluster.fleet.plugins.module_utils.module import FleetModule


def read_ca(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError as exc:
        raise FleetError("cannot read hub_ca_cert %s: %s" % (path, exc))


def run(module):
    params = module.params
    if not engines.get(params["engine"]).csr_auto_approval_setting and params["csr_auto_approval"] is not None:
        raise FleetError("csr_auto_approval applies to Karmada only; OCM sets automatic approval in its ClusterManager"
                         " (registrationConfiguration.autoApproveUsers)")
    cluster = module.cluster()
    if params["state"] == "absent":
        return hub.remove_registration(cluster, params["engine"], module.check_mode)
    ca_pem = read_ca(params["hub_ca_cert"]) if params["hub_ca_cert"] else None
    return hub.ensure_registration(cluster, params["engine"], params["hub_apiserver"], ca_pem,
                                   params["csr_auto_approval"] is not False, params["update_cluster_info"], module.check_mode)


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(argument_spec=dict(
        engine=dict(type="str", required=True, choices=list(NAMES)),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        hub_apiserver=dict(type="str"),
        hub_ca_cert=dict(type="path"),
        csr_auto_approval=dict(type="bool"),
        update_cluster_info=dict(type="bool", default=False),
    ))


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
