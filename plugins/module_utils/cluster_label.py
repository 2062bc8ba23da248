# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module cluster_label: labels and annotations on the hub objects of many member clusters in one task.

Every cluster is read first (in parallel, :func:`fleet.read_members`); an unregistered one (unless skipped), or one
being deleted, fails the task before anything is written. Each write is one JSON merge patch of ``metadata``
(:func:`labels.plan_changes`), guarded by the ``resourceVersion`` it was planned from and planned again on a conflict; in
check mode the hub's dry run answers. The task writes as its ``owner``; a key it takes over from another owner, or from
someone outside this collection, is a warning naming the cluster, the key and whom it was taken from.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, fleet, labels as fleet_labels, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.client import Conflict, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


def _write(hub, engine, obj, labels, annotations, purge, owner, check_mode):
    """Give ``obj`` (the member object as read) the labels and annotations; ``(resources.Outcome, plan)``."""
    kind, name = engine.member_kind, obj["metadata"]["name"]
    for _attempt in range(resources.CONFLICT_RETRIES):
        if obj is None:
            raise FleetError("is no longer registered (its %s was deleted meanwhile)" % kind.kind)
        planned = fleet_labels.plan_changes(engine, obj, labels, annotations, purge, owner)
        patch = planned["patch"]
        if not patch:
            return resources.Outcome(kind, name, None, "unchanged", obj, obj), planned
        patch["resourceVersion"] = obj["metadata"]["resourceVersion"]
        try:
            updated = hub.request("PATCH", kind.path(name=name), body={"metadata": patch},
                                  query={"dryRun": "All"} if check_mode else None, content_type=resources.MERGE_PATCH)
        except (Conflict, NotFound):
            obj = resources.get(hub, kind, name)
            continue
        return resources.Outcome(kind, name, None, "updated", obj, updated), planned
    raise FleetError("%s kept changing while it was being updated (%d conflicts); try again"
                     % (kind.ref(name), resources.CONFLICT_RETRIES))


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


def apply(hub, engine_name, clusters, labels=None, annotations=None, purge=False, unregistered="fail", check_mode=False,
          owner=fleet_labels.DEFAULT_OWNER):
    """Label and annotate every cluster of ``clusters`` as ``owner``; the module's result.

    ``labels`` / ``annotations``: ``{key: value}``, a None value removes the key whoever set it; None (not given) leaves
    them as they are. ``purge`` also removes what ``owner`` set that they no longer list (a key other owners share
    stays theirs). ``unregistered``: V(fail) fails the task before any write when a cluster is not registered; V(skip)
    leaves it out (reported as such). Keys taken over from another owner, or from outside this collection, are warnings.
    """
    engine = engines.get(engine_name)
    problem = fleet_labels.owner_problem(owner)
    if problem:
        raise FleetError("invalid %s" % problem)
    names = fleet.cluster_names(engine, clusters)
    labels, annotations = fleet_labels.validate(labels, annotations)
    found = fleet.read_members(hub, engine, names, unregistered, "label")
    targets = [c for c in names if c in found]
    done, errors = fleet.fan_out(lambda c: _write(hub, engine, found[c], labels, annotations, purge, owner, check_mode), targets)
    outcomes = dict((c, outcome) for c, (outcome, _planned) in done.items())
    results = dict((c, summarize(outcomes.get(c), owner, done[c][1] if c in done else None)) for c in names if c not in errors)
    warnings = [note for c in targets if c in done for note in _notes(c, owner, done[c][1], check_mode)]
    if errors:
        raise FleetError("%s: labelling failed on %d of %d clusters: %s" % (
            hub.label, len(errors), len(targets), "; ".join("cluster '%s': %s" % item for item in sorted(errors.items()))),
            changed=any(o.changed for o in outcomes.values()) and not check_mode, clusters=results, clusters_failed=sorted(errors),
            warnings=warnings)
    result = {"changed": any(o.changed for o in outcomes.values()), "clusters": results,
              "diff": [_diff(outcomes[c]) for c in targets if outcomes[c].changed]}
    if warnings:
        result["warnings"] = warnings
    return result
