# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Open Cluster Management facts: kinds, names and the normalized view of a ManagedCluster."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils.resources import Kind, condition_is, conditions_of
from ansible_collections.multicluster.fleet.plugins.module_utils import pki

MANAGED_CLUSTER = Kind("cluster.open-cluster-management.io/v1", "ManagedCluster", "managedclusters", False)
MANIFEST_WORK = Kind("work.open-cluster-management.io/v1", "ManifestWork", "manifestworks", True)
CLUSTER_MANAGER = Kind("operator.open-cluster-management.io/v1", "ClusterManager", "clustermanagers", False)
KLUSTERLET = Kind("operator.open-cluster-management.io/v1", "Klusterlet", "klusterlets", False)

# Conditions the hub's registration controller sets on a ManagedCluster.
ACCEPTED = "HubAcceptedManagedCluster"
JOINED = "ManagedClusterJoined"
AVAILABLE = "ManagedClusterConditionAvailable"

# Registration: the label the klusterlet puts on its CSRs (add-on agents' CSRs also carry the add-on
# label and are not the cluster's), the identity it asks for, and the hub's bootstrap ServiceAccount.
CLUSTER_NAME_LABEL = "open-cluster-management.io/cluster-name"
ADDON_NAME_LABEL = "open-cluster-management.io/addon-name"
SUBJECT_PREFIX = "system:open-cluster-management:"
MANAGED_CLUSTERS_GROUP = "system:open-cluster-management:managed-clusters"
OPERATOR_NAMESPACE = "open-cluster-management"
BOOTSTRAP_SERVICE_ACCOUNT = "agent-registration-bootstrap"
BOOTSTRAP_SERVICE_ACCOUNT_USER = "system:serviceaccount:%s:%s" % (OPERATOR_NAMESPACE, BOOTSTRAP_SERVICE_ACCOUNT)


def summarize_managed_cluster(obj):
    """The engine-neutral summary for an OCM ``ManagedCluster``.

    OCM registers only by pull (the klusterlet on the member dials the hub), so ``mode`` is ``Pull``;
    ``ready`` is the Available condition; ``accepted`` is the hub admin's ``spec.hubAcceptsClient``.
    """
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    claims = dict((c.get("name"), c.get("value")) for c in status.get("clusterClaims") or [])
    endpoints = [c.get("url") for c in spec.get("managedClusterClientConfigs") or [] if c.get("url")]
    return {
        "name": obj["metadata"]["name"],
        "engine": "ocm",
        "mode": "Pull",
        "id": claims.get("id.k8s.io"),
        "api_endpoint": endpoints[0] if endpoints else None,
        "kubernetes_version": (status.get("version") or {}).get("kubernetes"),
        "ready": condition_is(obj, AVAILABLE),
        "joined": condition_is(obj, JOINED),
        "accepted": bool(spec.get("hubAcceptsClient")),
        "provider": claims.get("platform.open-cluster-management.io"),
        "region": claims.get("region.open-cluster-management.io"),
        "zones": [],
        "labels": obj["metadata"].get("labels") or {},
        "conditions": conditions_of(obj),
    }


# --- Member side of registration (clusteradm join / unjoin), DESIGN.md 4.6 ----------------------------

CLUSTER_NAME_MAX_LENGTH = 63
AGENT_NAMESPACE = "open-cluster-management-agent"
BOOTSTRAP_SECRET = "bootstrap-hub-kubeconfig"  # what join writes: the hub URL, its CA and the token
HUB_KUBECONFIG_SECRET = "hub-kubeconfig-secret"  # what the registration agent writes once accepted
KUBECONFIG_KEY = "kubeconfig"  # hub-kubeconfig-secret also holds tls.crt, tls.key, cluster-name and agent-name
KLUSTERLET_NAME = "klusterlet"
REGISTRATION_AUTH_TYPE = "csr"


def agent_organization(cluster_name):
    """The group every agent certificate of the cluster carries (its subject O)."""
    return SUBJECT_PREFIX + cluster_name


def agent_common_name(cluster_name, agent_name):
    """The registration agent's user name: ``system:open-cluster-management:<cluster>:<agent-name>``."""
    return "%s%s:%s" % (SUBJECT_PREFIX, cluster_name, agent_name)


def bootstrap_secret(kubeconfig_text):
    """Secret ``open-cluster-management-agent/bootstrap-hub-kubeconfig`` (key ``kubeconfig``)."""
    return {"metadata": {"name": BOOTSTRAP_SECRET, "namespace": AGENT_NAMESPACE}, "type": "Opaque",
            "data": {KUBECONFIG_KEY: pki.b64(kubeconfig_text)}}


def klusterlet(cluster_name, api_endpoint):
    """The Klusterlet fields registration needs; the rest (images, deploy mode) belongs to the agent installer."""
    return {"metadata": {"name": KLUSTERLET_NAME}, "spec": {
        "clusterName": cluster_name,
        "namespace": AGENT_NAMESPACE,
        "externalServerURLs": [{"url": api_endpoint}],
        "registrationConfiguration": {"registrationDriver": {"authType": REGISTRATION_AUTH_TYPE}},
    }}
