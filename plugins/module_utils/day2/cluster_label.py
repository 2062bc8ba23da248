# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module cluster_label: labels and annotations on the hub objects of many member clusters in one task.

The clusters are read and written as :class:`member_changes.MemberChanges` does it: every cluster read first, an
unregistered one (unless skipped) or one being deleted failing the task before anything is written; then one JSON merge
patch of ``metadata`` per cluster (:func:`labels.plan_changes`), guarded by the ``resourceVersion`` it was planned from
and planned again on a conflict; in check mode the hub's dry run answers. The task writes as its ``owner``; a key it takes over from another owner, or from
someone outside this collection, is a warning naming the cluster, the key and whom it was taken from.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import labels as fleet_labels
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.day2.member_changes import MemberChanges


def _owners(obj, record):
    return dict((key, sorted(names) if names is not None else []) for key, names in fleet_labels.owners(obj, record).items())


def summarize(outcome, owner=fleet_labels.DEFAULT_OWNER, planned=None):
    """What the module returns for one cluster (``outcome`` None: not registered, skipped)."""
    if outcome is None:
        return {"action": "unregistered", "labels": {}, "annotations": {}, "managed_labels": [], "managed_annotations": [],
                "owners": {"labels": {}, "annotations": {}}, "taken_over": []}
    obj = outcome.after
    return {"action": outcome.action, "labels": obj["metadata"].get("labels") or {},
            "annotations": fleet_labels.shown_annotations(obj),
            "managed_labels": sorted(fleet_labels.managed_keys(obj, fleet_labels.MANAGED_LABELS, owner)),
            "managed_annotations": sorted(fleet_labels.managed_keys(obj, fleet_labels.MANAGED_ANNOTATIONS, owner)),
            "owners": {"labels": _owners(obj, fleet_labels.MANAGED_LABELS),
                       "annotations": _owners(obj, fleet_labels.MANAGED_ANNOTATIONS)},
            "taken_over": [{"key": key, "kind": part[:-1], "from": names}
                           for part, key, names, _value in (planned or {}).get("taken_over", [])]}


def _notes(cluster, owner, planned, check_mode):
    """The warnings of one cluster's plan: each key taken over, each unowned key a purge leaves."""
    notes = []
    for part, key, names, value in planned["taken_over"]:
        whom = "owner %s" % " and ".join(names) if names else "someone outside this collection"
        shown = " to %r" % value if part == "labels" else ""
        notes.append("cluster '%s': %s %s was set%s by %s; owner %s %s it over (its purge may remove it)" % (
            cluster, part[:-1], key, shown, whom, owner, "would take" if check_mode else "took"))
    unowned = planned["unowned"]
    if unowned:
        notes.append("cluster '%s': %s recorded by an earlier version of this collection without an owner; purge keeps "
                     "them until a task lists them (then they are its owner's) or removes them (value null)" % (
                         cluster, ", ".join("%s %s" % (part[:-1], key) for part, key in unowned)))
    return notes


def _diff(outcome):
    """The labels and annotations before and after; the bookkeeping annotations are written too, so they show."""
    before, after = [{"labels": o["metadata"].get("labels") or {},
                      "annotations": fleet_labels.shown_annotations(o, (fleet_labels.LAST_APPLIED,))}
                     for o in (outcome.before, outcome.after)]
    return {"before": before, "after": after, "before_header": outcome.ref, "after_header": outcome.ref}


def apply(hub, engine, clusters, wanted, unregistered="fail", check_mode=False):
    """Label and annotate every cluster of ``clusters`` as ``wanted`` says; the module's result.

    ``clusters``: names, each given ``wanted``'s ``labels`` / ``annotations``; or, the module's ``per_cluster``, dicts of
    ``name``, ``labels`` and ``annotations``, each cluster its own. ``labels`` / ``annotations``: ``{key: value}``, a
    None value removes the key whoever set it; None (not given) leaves them as they are. ``purge`` also removes what
    ``owner`` (default :data:`labels.DEFAULT_OWNER`) set that they no longer list (a key other owners share stays
    theirs). ``unregistered``: V(fail) fails the task before any write when a cluster is not registered; V(skip) leaves
    it out (reported as such). Keys taken over from another owner, or from outside this collection, are warnings.
    Given per cluster, the values of each cluster are checked on their own, and a cluster whose values are refused, that
    is not registered (with V(fail)) or being deleted fails alone: the others are written.
    """
    purge, owner = wanted.get("purge", False), wanted.get("owner", fleet_labels.DEFAULT_OWNER)
    engine = engines.get(engine)
    problem = fleet_labels.owner_problem(owner)
    if problem:
        raise FleetError("invalid %s" % problem)
    per_cluster = bool(clusters) and isinstance(clusters[0], dict)
    if per_cluster:
        changes, values = MemberChanges.per_cluster(
            hub, engine, clusters, lambda item: fleet_labels.validate(item.get("labels"), item.get("annotations")), check_mode)
    else:
        changes = MemberChanges(hub, engine, clusters, check_mode)
        values = dict.fromkeys(changes.clusters, fleet_labels.validate(wanted.get("labels"), wanted.get("annotations")))
    changes.read(unregistered, "label", isolated=per_cluster)

    def plan(cluster, obj):
        planned = fleet_labels.plan_changes(engine, obj, values[cluster][0], values[cluster][1], purge, owner)
        return {"metadata": planned["patch"]} if planned["patch"] else None, planned
    changes.write(plan)
    warnings = [note for c, planned in changes.info.items() for note in _notes(c, owner, planned, check_mode)]
    return changes.result(lambda outcome, planned: summarize(outcome, owner, planned), _diff,
                          "%s: labelling failed" % hub.label, **({"warnings": warnings} if warnings else {}))
