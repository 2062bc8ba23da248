# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Removing a Karmada member cluster from the hub, hub side only (module cluster_prune, prune.py): a Push member by
:func:`join.delete_cluster` and its credential Secrets, a Pull member by :func:`karmada.registration.remove_from_hub`.
What is deleted is named by the collection's rules from the cluster's name, never taken from the Cluster object."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import prune
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import hub_record
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import join, registration


def _plan_push(hub, obj, record):
    """``(deletes, problem)`` of a Karmada Push member: the Cluster and the two credential Secrets this collection writes
    for it (``<namespace>/<cluster>`` and ``<namespace>/<cluster>-impersonator``, the namespace from the hub record,
    else ``karmada-cluster``), each only where it exists and is owned by this Cluster. A ``secretRef`` or
    ``impersonatorSecretRef`` naming any other Secret, or such a Secret owned by something else, is a problem: the
    cluster is then kept."""
    name = obj["metadata"]["name"]
    namespace = (record or {}).get(hub_record.CLUSTER_NAMESPACE_KEY) or karmada.DEFAULT_CLUSTER_NAMESPACE
    spec = obj.get("spec") or {}
    deletes = [(karmada.CLUSTER, None, name)]
    for field, secret_name in (("secretRef", name), ("impersonatorSecretRef", karmada.impersonator_secret_name(name))):
        ref = spec.get(field) or {}
        if ref and (ref.get("namespace"), ref.get("name")) != (namespace, secret_name):
            return deletes, ("its spec.%s names Secret %s/%s, not %s/%s, the one this collection writes for it: prune "
                             "deletes no Secret a member object names; check the Cluster and remove it by hand"
                             % (field, ref.get("namespace"), ref.get("name"), namespace, secret_name))
        secret = resources.get(hub, resources.SECRET, secret_name, namespace)
        if secret is None:
            continue
        if not prune.owned_by(secret, karmada.CLUSTER, obj["metadata"].get("uid")):
            return deletes, ("Secret %s/%s is not owned by this Cluster (no ownerReference to its uid): it belongs to "
                             "another cluster or was written by someone else; check it and remove the Cluster by hand"
                             % (namespace, secret_name))
        deletes.append((resources.SECRET, namespace, secret_name))
    return deletes, None


def plan(hub, obj, record):
    """``(deletes, problem)`` of Cluster ``obj``: for a Push member, what :func:`_plan_push` names and its hub record;
    for a Pull member, the Works of its execution namespace, the Cluster and what its registration created."""
    name = obj["metadata"]["name"]
    if karmada.is_push(obj):
        deletes, problem = _plan_push(hub, obj, record)
        deletes.append((resources.CONFIG_MAP, hub_record.NAMESPACE, hub_record.name("karmada", name)))
        return deletes, problem
    es_namespace = karmada.execution_namespace(name)
    deletes = [(karmada.WORK, es_namespace, work["metadata"]["name"])
               for work in resources.list_objects(hub, karmada.WORK, es_namespace)]
    return deletes + [(karmada.CLUSTER, None, name)] + registration.hub_objects(name), None


def remove(hub, obj, deletes, removal):
    """Remove Cluster ``obj`` from the hub as :func:`plan` planned it (``deletes``); the removal's report."""
    name, params, report, delete = obj["metadata"]["name"], removal.params, removal.report, removal.delete
    with report.failures_name_writes("deleted"):
        if karmada.is_push(obj):
            outcomes = []
            try:
                join.delete_cluster(hub, name, params, removal.check_mode, outcomes)
            finally:
                for outcome in outcomes:
                    report.add(hub, outcome)
            for kind, namespace, object_name in deletes:
                if kind is not karmada.CLUSTER:
                    delete(hub, kind, object_name, namespace)
        else:
            namespace = registration.remove_from_hub(hub, name, delete)
            for kind, _namespace, object_name in deletes:
                if kind is resources.CSR:
                    delete(hub, kind, object_name)
            if not removal.check_mode:
                resources.wait_until_gone(hub, resources.NAMESPACE, namespace, timeout=params["wait_timeout"],
                                          interval=params["wait_sleep"])
    return report.result()
