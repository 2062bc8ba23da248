# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Open Cluster Management facts: kinds, names and the normalized view of a ManagedCluster."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils.resources import Kind, condition_is, conditions_of

MANAGED_CLUSTER = Kind("cluster.open-cluster-management.io/v1", "ManagedCluster", "managedclusters", False)
MANIFEST_WORK = Kind("work.open-cluster-management.io/v1", "ManifestWork", "manifestworks", True)
CLUSTER_MANAGER = Kind("operator.open-cluster-management.io/v1", "ClusterManager", "clustermanagers", False)
KLUSTERLET = Kind("operator.open-cluster-management.io/v1", "Klusterlet", "klusterlets", False)

# Conditions the hub's registration controller sets on a ManagedCluster.
ACCEPTED = "HubAcceptedManagedCluster"
JOINED = "ManagedClusterJoined"
AVAILABLE = "ManagedClusterConditionAvailable"


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
