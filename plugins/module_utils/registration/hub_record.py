# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hub-side record of a member cluster this collection registered (docs/architecture.md, "What the hub's member
objects are trusted for").

A member's agent can create member objects on the hub (a Karmada agent any ``Cluster``, an OCM bootstrap identity any
``ManagedCluster``) and write its own, annotations included: nothing on a member object tells who made it. So the
registering modules (``cluster_join``, ``cluster_register`` when it accepts or marks the cluster) also write a ConfigMap
``kube-system/multicluster-fleet.<engine>.<cluster>`` on the hub, holding the cluster's name, id and, for a Karmada
Push member, the namespace of its credential Secrets. No agent identity may write ConfigMaps in ``kube-system`` (their
RBAC: :func:`karmada.agent_cluster_rules`, :func:`karmada.agent_secret_rules`, OCM's bootstrap and per-cluster roles),
so only hub administrators - this collection - can. ``cluster_prune`` removes only clusters with such a record, and
deletes only the objects the collection's own naming rules give for the recorded cluster.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CONFIG_MAP

# The collection's mark on a member object (ManagedCluster or Karmada Cluster): the member's cluster id (its
# kube-system UID), recorded when it registers or accepts the cluster - OCM keeps no cluster id of its own, and one
# name must stay one cluster. The hub record, not this mark, tells a cluster this collection registered (prune.py).
CLUSTER_ID_ANNOTATION = "multicluster.fleet/cluster-id"

NAMESPACE = "kube-system"
PREFIX = "multicluster-fleet."
ENGINE_LABEL = "multicluster.fleet/registered-cluster-engine"
MANAGED_BY = {"app.kubernetes.io/managed-by": "multicluster.fleet"}
CLUSTER_NAME_KEY = "cluster-name"
CLUSTER_ID_KEY = "cluster-id"
CLUSTER_NAMESPACE_KEY = "cluster-namespace"


def name(engine, cluster_name):
    """``multicluster-fleet.<engine>.<cluster>``: cluster names are DNS labels (no dots), so the name is unambiguous."""
    return "%s%s.%s" % (PREFIX, engine, cluster_name)


def ref(engine, cluster_name):
    """``ConfigMap/kube-system/<name>``, as listings print it."""
    return CONFIG_MAP.ref(name(engine, cluster_name), NAMESPACE)


def desired(engine, cluster_name, cluster_id, cluster_namespace=None):
    """The record of ``cluster_name`` (engine name ``engine``), cluster id ``cluster_id``; ``cluster_namespace``: where
    a Karmada Push member's credential Secrets are."""
    data = {"engine": engine, CLUSTER_NAME_KEY: cluster_name, CLUSTER_ID_KEY: cluster_id or ""}
    if cluster_namespace:
        data[CLUSTER_NAMESPACE_KEY] = cluster_namespace
    labels = dict(MANAGED_BY)
    labels[ENGINE_LABEL] = engine
    return {"metadata": {"name": name(engine, cluster_name), "namespace": NAMESPACE, "labels": labels}, "data": data}


def ensure(hub, engine, cluster_name, cluster_id, check_mode=False, cluster_namespace=None):
    """Write the record (an :class:`resources.Outcome`)."""
    return resources.ensure(hub, CONFIG_MAP, desired(engine, cluster_name, cluster_id, cluster_namespace), check_mode)


def _data(obj, engine):
    """The data of record ``obj`` of ``engine``, or None when its data does not match its name (it records nothing this
    collection wrote)."""
    data = (obj or {}).get("data") or {}
    cluster_name = data.get(CLUSTER_NAME_KEY)
    if cluster_name and data.get("engine") == engine and obj["metadata"]["name"] == name(engine, cluster_name):
        return data
    return None


def read(hub, engine, cluster_name):
    """The record data of ``cluster_name`` (engine name ``engine``) on ``hub``, or None when the collection did not
    register it."""
    return _data(resources.get(hub, CONFIG_MAP, name(engine, cluster_name), NAMESPACE), engine)


def read_all(hub, engine):
    """``{cluster name: record data}`` of every record of ``engine`` on ``hub``; a record whose data does not match its
    name is left out (it records nothing this collection wrote)."""
    found = {}
    for obj in resources.list_objects(hub, CONFIG_MAP, NAMESPACE, label_selector="%s=%s" % (ENGINE_LABEL, engine)):
        data = _data(obj, engine)
        if data:
            found[data[CLUSTER_NAME_KEY]] = data
    return found


def delete(hub, engine, cluster_name, check_mode=False, record=None):
    """Remove the record (an :class:`resources.Outcome`, ``absent`` when there was none)."""
    return resources.delete(hub, CONFIG_MAP, name(engine, cluster_name), NAMESPACE, check_mode=check_mode, record=record)


def cluster_id_annotation(name, cluster_id):
    """The merge patch that records ``cluster_id`` on member object ``name`` (ManagedCluster or Karmada Cluster)."""
    return {"metadata": {"name": name, "annotations": {CLUSTER_ID_ANNOTATION: cluster_id}}}
