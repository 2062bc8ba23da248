# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an OCM hub needs before members can register with join credentials (docs/architecture.md 4.5): namespace
``open-cluster-management``, ServiceAccount ``agent-registration-bootstrap``, ClusterRole
``open-cluster-management:bootstrap`` (the rules of ``clusteradm init``) bound to that ServiceAccount and to group
``system:bootstrappers:managedcluster``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, hub, tokens
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import NAMESPACE, SERVICE_ACCOUNT

BOOTSTRAP_CLUSTER_ROLE = "open-cluster-management:bootstrap"


def registration_objects(csr_auto_approval=True):
    """``(wanted, unwanted)`` object lists for an OCM hub (names and rules of ``clusteradm init``); OCM sets automatic
    CSR approval in its ClusterManager, not by RBAC (``csr_auto_approval`` is Karmada's)."""
    namespace, account = tokens.OCM_NAMESPACE, tokens.OCM_BOOTSTRAP_SA
    wanted = [
        (NAMESPACE, {"metadata": hub.meta(namespace)}),
        (SERVICE_ACCOUNT, {"metadata": hub.meta(account, namespace)}),
        hub.cluster_role(BOOTSTRAP_CLUSTER_ROLE, [
            hub.rule("", "configmaps", ["get"]),
            hub.rule("certificates.k8s.io", "certificatesigningrequests", ["create", "get", "list", "watch"]),
            hub.rule("cluster.open-cluster-management.io", "managedclusters", ["get", "create", "list", "watch"]),
            hub.rule("cluster.open-cluster-management.io", "managedclustersets/join", ["create"]),
        ]),
        hub.cluster_role_binding(BOOTSTRAP_CLUSTER_ROLE + ":agent-registration", BOOTSTRAP_CLUSTER_ROLE,
                                 [hub.subject("Group", bootstrap.OCM_DEFAULT_GROUP)]),
        hub.cluster_role_binding(account, BOOTSTRAP_CLUSTER_ROLE, [hub.subject("ServiceAccount", account, namespace)]),
    ] + hub.cluster_info_reader("ocm")
    return wanted, []
