# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OCM cluster sets: a ManagedClusterSet, the clusters in it and its bindings to namespaces (module cluster_set).

A ManagedClusterSet (``cluster.open-cluster-management.io/v1beta2``, cluster-scoped) selects its clusters by the
label ``cluster.open-cluster-management.io/clusterset=<set>`` on their ManagedClusters (selector type
ExclusiveClusterSetLabel: a cluster is in at most one such set), or by a label selector (LabelSelector). A namespace
uses a set through a ManagedClusterSetBinding named after it (:func:`placement.binding`), and the Placements of the
namespace select from its bound sets. With its DefaultClusterSet feature the hub keeps set ``default`` (the clusters
that carry no set label get ``default``) and set ``global`` (an empty label selector: every cluster).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import placement
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.day2.member_changes import MemberChanges

EXCLUSIVE = "ExclusiveClusterSetLabel"
LABEL_SELECTOR = "LabelSelector"
SELECTOR_TYPES = (EXCLUSIVE, LABEL_SELECTOR)
NAME_MAX_LENGTH = 63  # the set's name is the value of the cluster set label
HUB_SETS = (ocm.DEFAULT_CLUSTER_SET, ocm.GLOBAL_CLUSTER_SET)
# A label selector with every field null: stored as {}, which selects every cluster (set global).
EVERY_CLUSTER = {"matchLabels": None, "matchExpressions": None}


# --- checks and the set -------------------------------------------------------------------------------

def validate_name(name):
    """FleetError unless ``name`` can name a ManagedClusterSet (a DNS-1123 label: it is a label value too)."""
    if not isinstance(name, str) or not name or len(name) > NAME_MAX_LENGTH or not resources.DNS1123_LABEL_RE.match(name):
        raise FleetError("invalid cluster set name %r: a ManagedClusterSet name is a DNS-1123 label (lowercase letters, "
                         "digits and '-', starting and ending with a letter or digit) of 1 to %d characters"
                         % (name, NAME_MAX_LENGTH))


def selector_type_of(obj):
    """The selector type of a stored ManagedClusterSet (the API's default when unset), None for no set."""
    if obj is None:
        return None
    return (((obj.get("spec") or {}).get("clusterSelector") or {}).get("selectorType")) or EXCLUSIVE


def build(name, selector_type=None, label_selector=None, existing=None):
    """The ManagedClusterSet to ensure, as the task's options and the stored set ``existing`` settle it.

    ``selector_type`` unset keeps the stored set's type (a new set is exclusive). ``label_selector`` (the module's
    ``{match_labels, match_expressions}``; an empty one selects every cluster) is written for a LabelSelector set,
    kept as stored when unset, and refused for an exclusive set, whose label selector is removed.
    """
    if selector_type is not None and selector_type not in SELECTOR_TYPES:
        raise FleetError("cluster set %s: selector_type must be %s, got %r" % (name, " or ".join(SELECTOR_TYPES), selector_type))
    kind = selector_type or selector_type_of(existing) or EXCLUSIVE
    cluster_selector = {"selectorType": kind}
    if kind == EXCLUSIVE:
        if label_selector is not None:
            raise FleetError("cluster set %s: label_selector is for selector_type %s; an %s set holds the clusters "
                             "labelled %s=%s (option clusters)" % (name, LABEL_SELECTOR, EXCLUSIVE, ocm.CLUSTER_SET_LABEL, name))
        cluster_selector["labelSelector"] = None
    elif label_selector is not None:
        cluster_selector["labelSelector"] = placement.label_selector(label_selector, "label_selector") or EVERY_CLUSTER
    elif selector_type_of(existing) != LABEL_SELECTOR:
        raise FleetError("cluster set %s: selector_type %s needs label_selector (an empty one, {}, selects every "
                         "cluster, as set %s does)" % (name, LABEL_SELECTOR, ocm.GLOBAL_CLUSTER_SET))
    return {"metadata": {"name": name}, "spec": {"clusterSelector": cluster_selector}}


def selects(selector, labels):
    """Whether the Kubernetes label selector ``selector`` matches ``labels`` ({} matches everything, None nothing)."""
    if selector is None:
        return False
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if not {"In": key in labels and labels[key] in values, "NotIn": labels.get(key) not in values,
                "Exists": key in labels, "DoesNotExist": key not in labels}[operator]:
            return False
    return True


def members(cluster_set, managed_clusters):
    """The names of the ManagedClusters in ``cluster_set`` (a stored or planned set), sorted."""
    if cluster_set is None:
        return []
    name = cluster_set["metadata"]["name"]
    if selector_type_of(cluster_set) == EXCLUSIVE:
        chosen = [c for c in managed_clusters if _set_of(c) == name]
    else:
        selector = cluster_set["spec"]["clusterSelector"].get("labelSelector")
        chosen = [c for c in managed_clusters if selects(selector, c["metadata"].get("labels") or {})]
    return sorted(c["metadata"]["name"] for c in chosen)


def _set_of(managed_cluster):
    return (managed_cluster["metadata"].get("labels") or {}).get(ocm.CLUSTER_SET_LABEL)


# --- membership of exclusive sets ---------------------------------------------------------------------

def plan_membership(name, kind, clusters, remove, move, managed_clusters, existing_sets):
    """``{cluster: set label value or None}``: the label changes that put ``clusters`` in exclusive set ``name`` and
    take ``remove`` out of it; FleetError, before anything is written, for a cluster that is not registered or that
    is in another exclusive set while ``move`` is false. A cluster in set ``default`` (where the hub puts clusters of
    no other set) or labelled with a set that does not exist is in no set of its own, and joins without ``move``."""
    clusters, remove = _unique(clusters), _unique(remove)
    if not clusters and not remove:
        return {}
    if kind != EXCLUSIVE:
        raise FleetError("cluster set %s selects its clusters with a label selector; clusters and remove_clusters are for "
                         "%s sets: label the clusters so that its selector matches them" % (name, EXCLUSIVE))
    both = sorted(set(clusters) & set(remove))
    if both:
        raise FleetError("cluster set %s: %s both in clusters and in remove_clusters" % (name, ", ".join(both)))
    by_name = dict((c["metadata"]["name"], c) for c in managed_clusters)
    unknown = [c for c in clusters + remove if c not in by_name]
    if unknown:
        raise FleetError("cluster set %s: cluster(s) %s not registered on the hub (no ManagedCluster of that name); "
                         "register them first" % (name, ", ".join(unknown)))
    changes, taken = {}, []
    for cluster in clusters:
        current = _set_of(by_name[cluster])
        if current == name:
            continue
        if current and current != ocm.DEFAULT_CLUSTER_SET and current in existing_sets and not move:
            taken.append("%s (in set %s)" % (cluster, current))
        changes[cluster] = name
    if taken:
        raise FleetError("cluster set %s: a cluster is in at most one exclusive cluster set, and these are in another: "
                         "%s; set move=true to move them" % (name, ", ".join(taken)))
    changes.update((cluster, None) for cluster in remove if _set_of(by_name[cluster]) == name)
    return changes


def _set_label_patch(managed_cluster, value):
    """The merge patch that gives ``managed_cluster`` set label ``value`` (None: none), or None when it has it."""
    if _set_of(managed_cluster) == value:
        return None
    return {"metadata": {"labels": {ocm.CLUSTER_SET_LABEL: value}}}


def _unique(names):
    return sorted(set(names or []))


def relabelled(managed_clusters, changes):
    """The ManagedClusters as the label ``changes`` (:func:`plan_membership`) leave them."""
    result = []
    for cluster in managed_clusters:
        name = cluster["metadata"]["name"]
        if name in changes:
            labels = dict(cluster["metadata"].get("labels") or {}, **{ocm.CLUSTER_SET_LABEL: changes[name]})
            if changes[name] is None:
                del labels[ocm.CLUSTER_SET_LABEL]
            cluster = dict(cluster, metadata=dict(cluster["metadata"], labels=labels))
        result.append(cluster)
    return result


# --- usage, deletion ----------------------------------------------------------------------------------

def bindings_of(hub, name):
    """The ManagedClusterSetBindings of set ``name`` (named after it) in every namespace."""
    return [b for b in resources.list_objects(hub, ocm.MANAGED_CLUSTER_SET_BINDING, field_selector="metadata.name=%s" % name)
            if (b.get("spec") or {}).get("clusterSet") == name]


def placements_using(hub, name, bound_namespaces):
    """``namespace/name`` of the Placements that name set ``name``, or name no set in a namespace bound to it."""
    used = []
    for item in resources.list_objects(hub, ocm.PLACEMENT):
        sets = (item.get("spec") or {}).get("clusterSets") or []
        if name in sets or not sets and item["metadata"]["namespace"] in bound_namespaces:
            used.append("%s/%s" % (item["metadata"]["namespace"], item["metadata"]["name"]))
    return sorted(used)


def _result(action, outcomes, cluster_set, clusters, namespaces):
    changed = [o for o in outcomes if o.changed]
    return {
        "changed": bool(changed),
        "action": action,
        "selector_type": selector_type_of(cluster_set),
        "clusters": clusters,
        "bound_namespaces": namespaces,
        "object": resources.presentable(cluster_set) or {},
        "objects": [o.summary() for o in outcomes],
        "diff": [dict(_diff(o), before_header=o.ref, after_header=o.ref) for o in changed],
    }


def _diff(outcome):
    """A ManagedCluster's diff shows its labels only: the rest of it (status) is not the module's."""
    diff = outcome.diff()
    if outcome.kind is ocm.MANAGED_CLUSTER:
        return dict((side, {"metadata": {"labels": (obj.get("metadata") or {}).get("labels") or {}}})
                    for side, obj in diff.items())
    return diff


# --- the module's two states --------------------------------------------------------------------------

def present(hub, engine, params, check_mode=False):
    """state=present: the set, its exclusive members and its bindings; every check before the first write."""
    engines.get(engine).check_cluster_sets()
    name = params["name"]
    validate_name(name)
    bind, unbind = _unique(params.get("bind_namespaces")), _unique(params.get("unbind_namespaces"))
    both = sorted(set(bind) & set(unbind))
    if both:
        raise FleetError("cluster set %s: namespace(s) %s both in bind_namespaces and in unbind_namespaces" % (name, ", ".join(both)))
    existing = resources.get(hub, ocm.MANAGED_CLUSTER_SET, name)
    desired = build(name, params.get("selector_type"), params.get("label_selector"), existing)
    managed_clusters = resources.list_objects(hub, ocm.MANAGED_CLUSTER)
    existing_sets = set(s["metadata"]["name"] for s in resources.list_objects(hub, ocm.MANAGED_CLUSTER_SET))
    clusters, remove = params.get("clusters") or [], params.get("remove_clusters") or []
    unregistered = []
    if params.get("unregistered") == "skip":
        registered = set(c["metadata"]["name"] for c in managed_clusters)
        unregistered = _unique(c for c in clusters + remove if c not in registered)
        clusters, remove = [c for c in clusters if c in registered], [c for c in remove if c in registered]
    labels = plan_membership(name, desired["spec"]["clusterSelector"]["selectorType"], clusters, remove,
                             params.get("move"), managed_clusters, existing_sets)
    for namespace in bind:
        placement.check_namespace(hub, namespace)
    bound = set(b["metadata"]["namespace"] for b in bindings_of(hub, name)) if existing else set()
    membership = MemberChanges(hub, engine, sorted(labels), check_mode) if labels else None
    if membership:
        membership.read(purpose="change the cluster set label of")

    outcomes = []
    try:
        set_outcome = resources.ensure(hub, ocm.MANAGED_CLUSTER_SET, desired, check_mode)
        outcomes.append(set_outcome)
        if membership:
            membership.write(lambda cluster, obj: _set_label_patch(obj, labels[cluster]))
            outcomes.extend(membership.outcomes[c] for c in membership.clusters if c in membership.outcomes)
            membership.raise_failures("%s: changing the cluster set label failed" % hub.label)
        outcomes.extend(resources.ensure(hub, ocm.MANAGED_CLUSTER_SET_BINDING, placement.binding(namespace, name), check_mode)
                        for namespace in bind)
        outcomes.extend(resources.delete(hub, ocm.MANAGED_CLUSTER_SET_BINDING, name, namespace, check_mode=check_mode)
                        for namespace in unbind)
    except FleetError as exc:
        raise resources.failed_after(exc, [o.summary() for o in outcomes if o.changed], "written")
    after = set_outcome.after
    result = _result(set_outcome.action, outcomes, after, members(after, relabelled(managed_clusters, labels)),
                     sorted((bound | set(bind)) - set(unbind)))
    result["clusters_unregistered"] = unregistered
    return result


def absent(hub, engine, name, force=False, check_mode=False):
    """state=absent: delete the set; refused while namespaces are bound to it or Placements use it, unless ``force``,
    which deletes its bindings with it. The clusters keep their labels (as clusteradm leaves them)."""
    engines.get(engine).check_cluster_sets()
    validate_name(name)
    if name in HUB_SETS:
        raise FleetError("cluster set %s is the hub's own: its registration controller creates it again (DefaultClusterSet "
                         "feature), so it is not deleted" % name)
    existing = resources.get(hub, ocm.MANAGED_CLUSTER_SET, name)
    if existing is None:
        return _result("absent", [], None, [], [])
    namespaces = sorted(b["metadata"]["namespace"] for b in bindings_of(hub, name))
    placements = placements_using(hub, name, namespaces)
    if (namespaces or placements) and not force:
        used = (["bound to namespace(s) %s" % ", ".join(namespaces)] if namespaces else []) + (
            ["used by Placement(s) %s" % ", ".join(placements)] if placements else [])
        raise FleetError("%s: cluster set %s is still %s; unbind it first (unbind_namespaces) and change those placements, "
                         "or set force=true to delete it with its bindings" % (hub.label, name, " and ".join(used)))
    outcomes = []
    try:
        for namespace in namespaces:
            resources.delete(hub, ocm.MANAGED_CLUSTER_SET_BINDING, name, namespace, check_mode=check_mode, record=outcomes.append)
        resources.delete(hub, ocm.MANAGED_CLUSTER_SET, name, check_mode=check_mode, record=outcomes.append)
    except FleetError as exc:
        raise resources.failed_after(exc, [o.summary() for o in outcomes if o.changed], "deleted")
    return _result(outcomes[-1].action, outcomes, None, [], [])
