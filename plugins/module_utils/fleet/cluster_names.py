# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names of member clusters: one name checked, and the ``clusters`` option of a module acting on many."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


def validate_cluster_name(engine, name):
    """FleetError unless ``name`` can name a member cluster: a DNS-1123 label of 1 to 48 (Karmada) or 63 (OCM) characters."""
    engines.get(engine).validate_cluster_name(name)


def per_cluster_names(items):
    """The cluster names of a module's ``per_cluster`` items (dicts with the cluster's ``name``), in their order;
    FleetError naming every name given more than once."""
    names = [item["name"] for item in items]
    twice = sorted(set(name for name in names if names.count(name) > 1))
    if twice:
        raise FleetError("per_cluster names cluster(s) %s more than once" % ", ".join(twice))
    return names


def cluster_names(engine, names):
    """The ``clusters`` option of a module acting on many member clusters: the names without repeats, each checked to be
    a valid member cluster name, at least one."""
    clusters = []
    for cluster in names or []:
        validate_cluster_name(engine, cluster)
        if cluster not in clusters:
            clusters.append(cluster)
    if not clusters:
        raise FleetError("clusters is empty: name at least one member cluster")
    return clusters
