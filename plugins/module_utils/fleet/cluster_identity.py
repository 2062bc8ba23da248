# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The identity rule of member clusters: one name, one cluster id (the UID of the member's ``kube-system``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


def cluster_id(member):
    """A member cluster's id: the UID of its ``kube-system`` namespace (Karmada's ``spec.id``; recorded on OCM's
    ManagedCluster as :data:`ocm.CLUSTER_ID_ANNOTATION`)."""
    namespace = resources.get(member, resources.NAMESPACE, "kube-system")
    if namespace is None:
        raise FleetError("%s has no kube-system namespace to take its cluster id from" % member.label)
    return namespace["metadata"]["uid"]


def registered_member(engine, members, name, cluster_id, member):
    """The hub's member object ``name`` among ``members`` (or None), after refusing every breach of the identity rule.

    One name, one cluster id: ``name`` must not be recorded as another cluster's, and this cluster (id ``cluster_id``,
    reached at ``member``, a URL) must not be recorded under another name. The messages name both clusters and their
    ids. An object without a recorded id (an OCM cluster accepted outside the collection) is not compared.
    """
    engine = engines.get(engine)
    kind = engine.member_kind.kind
    existing = next((obj for obj in members if obj["metadata"]["name"] == name), None)
    recorded = engine.recorded_cluster_id(existing) if existing is not None else None
    if recorded and recorded != cluster_id:
        raise FleetError("%s '%s' on the hub belongs to another cluster (%s, cluster id %s), not to this member (%s, "
                         "cluster id %s): refusing to give this member its name; choose another cluster_name, or remove "
                         "'%s' from the hub first" % (kind, name, ", ".join(engine.endpoints_of(existing)) or "endpoint unknown",
                                                      recorded, member, cluster_id, name))
    for obj in members:
        other = obj["metadata"]["name"]
        if other != name and engine.recorded_cluster_id(obj) == cluster_id:
            raise FleetError("this member (%s, cluster id %s) is already registered on the hub as %s '%s': refusing to "
                             "register it again as '%s'; use cluster_name=%s, or remove '%s' first"
                             % (member, cluster_id, kind, other, name, other, other))
    return existing
