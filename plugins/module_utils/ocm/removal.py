# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Removing an OCM member cluster from the hub, hub side only (module cluster_prune, prune.py), by
:func:`ocm.registration.remove_from_hub`. What is deleted is named by the collection's rules from the cluster's name,
never taken from the ManagedCluster object."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import registration


def plan(hub, obj, record):
    """``(deletes, problem)`` of ManagedCluster ``obj``: it and what its registration created."""
    return [(ocm.MANAGED_CLUSTER, None, obj["metadata"]["name"])] + registration.hub_objects(obj["metadata"]["name"]), None


def remove(hub, obj, deletes, removal):
    """Remove ManagedCluster ``obj`` from the hub as :func:`plan` planned it (``deletes``); the removal's report."""
    report, delete = removal.report, removal.delete
    with report.failures_name_writes("deleted"):
        registration.remove_from_hub(hub, obj["metadata"]["name"], delete)
        for kind, _namespace, object_name in deletes:
            if kind is resources.CSR:
                delete(hub, kind, object_name)
    return report.result()
