# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Karmada facts: kinds, names and the normalized view of a member Cluster."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils.resources import Kind, condition_is, conditions_of

CLUSTER = Kind("cluster.karmada.io/v1alpha1", "Cluster", "clusters", False)
WORK = Kind("work.karmada.io/v1alpha1", "Work", "works", True)


def summarize_cluster(obj):
    """The engine-neutral summary :func:`fleet.summarize` returns for a Karmada ``Cluster``."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    zones = spec.get("zones") or ([spec["zone"]] if spec.get("zone") else [])
    return {
        "name": obj["metadata"]["name"],
        "engine": "karmada",
        "mode": spec.get("syncMode"),
        "id": spec.get("id"),
        "api_endpoint": spec.get("apiEndpoint"),
        "kubernetes_version": status.get("kubernetesVersion"),
        "ready": condition_is(obj, "Ready"),
        "joined": None,
        "accepted": None,
        "provider": spec.get("provider"),
        "region": spec.get("region"),
        "zones": zones,
        "labels": obj["metadata"].get("labels") or {},
        "conditions": conditions_of(obj),
    }
