# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Open Cluster Management facts: kinds, names and the normalized view of a ManagedCluster."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import Kind, condition_is, conditions_of
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.hub_record import CLUSTER_ID_ANNOTATION

MANAGED_CLUSTER = Kind("cluster.open-cluster-management.io/v1", "ManagedCluster", "managedclusters", False)
MANIFEST_WORK = Kind("work.open-cluster-management.io/v1", "ManifestWork", "manifestworks", True)
CLUSTER_MANAGER = Kind("operator.open-cluster-management.io/v1", "ClusterManager", "clustermanagers", False)
CLUSTER_MANAGER_NAME = "cluster-manager"  # the one ClusterManager of a hub (clusteradm init)
KLUSTERLET = Kind("operator.open-cluster-management.io/v1", "Klusterlet", "klusterlets", False)
# Placement (cluster sets, their bindings, placements and the placement controller's decisions) and add-ons.
MANAGED_CLUSTER_SET = Kind("cluster.open-cluster-management.io/v1beta2", "ManagedClusterSet", "managedclustersets", False)
MANAGED_CLUSTER_SET_BINDING = Kind("cluster.open-cluster-management.io/v1beta2", "ManagedClusterSetBinding",
                                   "managedclustersetbindings", True)
PLACEMENT = Kind("cluster.open-cluster-management.io/v1beta1", "Placement", "placements", True)
PLACEMENT_DECISION = Kind("cluster.open-cluster-management.io/v1beta1", "PlacementDecision", "placementdecisions", True)
CLUSTER_MANAGEMENT_ADDON = Kind("addon.open-cluster-management.io/v1alpha1", "ClusterManagementAddOn",
                                "clustermanagementaddons", False)
MANAGED_CLUSTER_ADDON = Kind("addon.open-cluster-management.io/v1alpha1", "ManagedClusterAddOn", "managedclusteraddons", True)
ADDON_DEPLOYMENT_CONFIG = Kind("addon.open-cluster-management.io/v1alpha1", "AddOnDeploymentConfig",
                               "addondeploymentconfigs", True)

# Cluster sets: a ManagedCluster is in the exclusive set its label names (at most one). Only module cluster_set writes
# this label; the hub puts clusters without it in set ``default``, and set ``global`` selects every cluster.
CLUSTER_SET_LABEL = "cluster.open-cluster-management.io/clusterset"
DEFAULT_CLUSTER_SET = "default"
GLOBAL_CLUSTER_SET = "global"

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


# OCM has no cordon of its own: this collection's cordon is a NoSelect taint of its own key in spec.taints, which
# Placements that do not tolerate it no longer select.
CORDON_TAINT = {"key": "multicluster.fleet/cordoned", "effect": "NoSelect"}


def recorded_cluster_id(obj):
    """The cluster id recorded on a ManagedCluster (:data:`CLUSTER_ID_ANNOTATION`), or None."""
    return (obj["metadata"].get("annotations") or {}).get(CLUSTER_ID_ANNOTATION)


def endpoints_of(obj):
    """The API server URLs a ManagedCluster records."""
    return [c.get("url") for c in (obj.get("spec") or {}).get("managedClusterClientConfigs") or [] if c.get("url")]


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


# --- Member side of registration (clusteradm join / unjoin), docs/architecture.md 4.6 -----------------

CLUSTER_NAME_MAX_LENGTH = 63
AGENT_NAMESPACE = "open-cluster-management-agent"
BOOTSTRAP_SECRET = "bootstrap-hub-kubeconfig"  # what join writes: the hub URL, its CA and the token
# The Klusterlet status condition with which the klusterlet operator's bootstrap controller drives a rebootstrap: while
# True it stops the registration agent, deletes hub-kubeconfig-secret, then sets it False (RebootstrapCompleted).
REBOOTSTRAP_CONDITION = "RebootstrapProgressing"
HUB_KUBECONFIG_SECRET = "hub-kubeconfig-secret"  # what the registration agent writes once accepted
CLUSTER_LEASE = "managed-cluster-lease"  # in the cluster namespace on the hub, renewed by the registration agent
LEASE_DURATION_SECONDS = 60  # ManagedCluster spec.leaseDurationSeconds by default
LEASE_GRACE_TIMES = 5  # the hub marks a cluster Unknown after this many lease durations without a renewal
KLUSTERLET_REGISTRATION_FIELDS = ("clusterName", "namespace", "externalServerURLs")  # the registration's, never the installer's
EXTERNAL_MANAGED_KUBECONFIG_SECRET = "external-managed-kubeconfig"  # Hosted: how the agents reach the managed cluster
KUBECONFIG_KEY = "kubeconfig"  # hub-kubeconfig-secret also holds tls.crt, tls.key, cluster-name and agent-name
GRPC_CONFIG_KEY = "config.yaml"  # the grpc driver's bootstrap config in the bootstrap Secret
KLUSTERLET_NAME = "klusterlet"
KLUSTERLET_MODES = ("Default", "Singleton", "Hosted", "SingletonHosted")
HOSTED_MODES = ("Hosted", "SingletonHosted")
HOSTED_PREFIX = "klusterlet-"
REGISTRATION_DRIVERS = ("csr", "grpc")
# A Hosted Klusterlet is named klusterlet-<cluster> and so is its agent namespace on the hosting cluster.
HOSTED_CLUSTER_NAME_MAX_LENGTH = CLUSTER_NAME_MAX_LENGTH - len(HOSTED_PREFIX)


class Placement:
    """Where a cluster's klusterlet lives: the Klusterlet's name, the agent namespace and ``spec.namespace``.

    Default and Singleton: Klusterlet ``klusterlet``, agents in ``open-cluster-management-agent`` on the
    managed cluster. Hosted and SingletonHosted: Klusterlet ``klusterlet-<cluster>`` on the hosting
    cluster, its agents and Secrets in namespace ``klusterlet-<cluster>`` there, and ``spec.namespace``
    ``open-cluster-management-klusterlet-<cluster>`` on the managed cluster (as the operator names it).
    """

    def __init__(self, cluster_name, mode=None):
        self.mode = mode
        self.hosted = mode in HOSTED_MODES
        if self.hosted:
            self.klusterlet = HOSTED_PREFIX + cluster_name
            self.agent_namespace = self.klusterlet
            self.spec_namespace = "open-cluster-management-" + self.klusterlet
        else:
            self.klusterlet = KLUSTERLET_NAME
            self.agent_namespace = self.spec_namespace = AGENT_NAMESPACE


def agent_organization(cluster_name):
    """The group every agent certificate of the cluster carries (its subject O)."""
    return SUBJECT_PREFIX + cluster_name


def agent_common_name(cluster_name, agent_name):
    """The registration agent's user name: ``system:open-cluster-management:<cluster>:<agent-name>``."""
    return "%s%s:%s" % (SUBJECT_PREFIX, cluster_name, agent_name)


def grpc_bootstrap_config(server, ca_pem, token):
    """The grpc driver's bootstrap ``config.yaml``: the server, its CA (base64 PEM) and the token."""
    return pki.yaml_text({"url": server, "caData": pki.b64(ca_pem), "token": token})


def bootstrap_secret(kubeconfig_text, namespace=AGENT_NAMESPACE, grpc_config=None):
    """Secret ``<agent namespace>/bootstrap-hub-kubeconfig`` (key ``kubeconfig``; ``config.yaml`` for grpc)."""
    data = {KUBECONFIG_KEY: pki.b64(kubeconfig_text)}
    if grpc_config:
        data[GRPC_CONFIG_KEY] = pki.b64(grpc_config)
    return {"metadata": {"name": BOOTSTRAP_SECRET, "namespace": namespace}, "type": "Opaque", "data": data}


def external_managed_kubeconfig_secret(kubeconfig_text, namespace):
    """Secret ``<agent namespace>/external-managed-kubeconfig`` of a Hosted klusterlet (key ``kubeconfig``)."""
    return {"metadata": {"name": EXTERNAL_MANAGED_KUBECONFIG_SECRET, "namespace": namespace}, "type": "Opaque",
            "data": {KUBECONFIG_KEY: pki.b64(kubeconfig_text)}}


# The Klusterlet's image pull specs (klusterlet_spec): each an image reference the operator runs.
KLUSTERLET_IMAGE_FIELDS = ("registrationImagePullSpec", "workImagePullSpec", "imagePullSpec")


def validate_klusterlet_spec(fields):
    """FleetError unless ``fields`` (option klusterlet_spec) leaves the registration fields to the registration."""
    if not isinstance(fields, dict):
        raise FleetError("ocm.klusterlet_spec must be a dict of Klusterlet spec fields, got %s" % type(fields).__name__)
    taken = sorted(set(fields) & set(KLUSTERLET_REGISTRATION_FIELDS))
    taken += ["%s.%s" % (parent, child) for parent, child in (("deployOption", "mode"),
                                                              ("registrationConfiguration", "registrationDriver"))
              if child in (fields.get(parent) or {})]
    if taken:
        raise FleetError("ocm.klusterlet_spec must not set %s: the registration writes them from cluster_name, api_endpoint, "
                         "ocm.klusterlet_mode and ocm.registration_driver" % ", ".join(taken))


def klusterlet(cluster_name, api_endpoint, placement, driver="csr", fields=None, client_cert_expiration_seconds=None):
    """The Klusterlet: the fields registration needs, over ``fields`` (the agent installer's: images, resources).

    ``client_cert_expiration_seconds`` is the lifetime of the registration agent's certificate
    (``registrationConfiguration.clientCertExpirationSeconds``), written when given.

    ``deployOption.mode`` is written when ``placement`` names a mode: a Hosted Klusterlet is only right
    with it. The registration writes the Klusterlet whole, so that its cluster name is only ever written
    after the identity checks.
    """
    spec = dict(fields or {})
    spec.update({
        "clusterName": cluster_name,
        "namespace": placement.spec_namespace,
        "externalServerURLs": [{"url": api_endpoint}],
        "registrationConfiguration": dict(spec.get("registrationConfiguration") or {},
                                          registrationDriver={"authType": driver}),
    })
    if client_cert_expiration_seconds is not None:
        spec["registrationConfiguration"]["clientCertExpirationSeconds"] = client_cert_expiration_seconds
    if placement.mode:
        spec["deployOption"] = dict(spec.get("deployOption") or {}, mode=placement.mode)
    return {"metadata": {"name": placement.klusterlet}, "spec": spec}
