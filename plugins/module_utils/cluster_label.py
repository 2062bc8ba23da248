# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module cluster_label: labels and annotations on the hub objects of many member clusters in one task.

Every cluster is read first (in parallel, :func:`fleet.read_members`); an unregistered one (unless skipped), or one
being deleted, fails the task before anything is written. Each write is one JSON merge patch of ``metadata`` (:func:`labels.plan`), guarded by the
``resourceVersion`` it was planned from and planned again on a conflict; in check mode the hub's dry run answers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, fleet, labels as fleet_labels, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.client import Conflict, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


def _write(hub, engine, obj, labels, annotations, purge, check_mode):
    """Give ``obj`` (the member object as read) the labels and annotations; an :class:`resources.Outcome`."""
    kind, name = engine.member_kind, obj["metadata"]["name"]
    for _attempt in range(resources.CONFLICT_RETRIES):
        if obj is None:
            raise FleetError("is no longer registered (its %s was deleted meanwhile)" % kind.kind)
        patch = fleet_labels.plan(engine, obj, labels, annotations, purge)
        if not patch:
            return resources.Outcome(kind, name, None, "unchanged", obj, obj)
        patch["resourceVersion"] = obj["metadata"]["resourceVersion"]
        try:
            updated = hub.request("PATCH", kind.path(name=name), body={"metadata": patch},
                                  query={"dryRun": "All"} if check_mode else None, content_type=resources.MERGE_PATCH)
        except (Conflict, NotFound):
            obj = resources.get(hub, kind, name)
            continue
        return resources.Outcome(kind, name, None, "updated", obj, updated)
    raise FleetError("%s kept changing while it was being updated (%d conflicts); try again"
                     % (kind.ref(name), resources.CONFLICT_RETRIES))


def summarize(outcome):
    """What the module returns for one cluster (``outcome`` None: not registered, skipped)."""
    if outcome is None:
        return {"action": "unregistered", "labels": {}, "annotations": {}, "managed_labels": [], "managed_annotations": []}
    obj = outcome.after
    return {"action": outcome.action, "labels": obj["metadata"].get("labels") or {},
            "annotations": fleet_labels.shown_annotations(obj),
            "managed_labels": sorted(fleet_labels.managed_keys(obj, fleet_labels.MANAGED_LABELS)),
            "managed_annotations": sorted(fleet_labels.managed_keys(obj, fleet_labels.MANAGED_ANNOTATIONS))}


def _diff(outcome):
    """The labels and annotations before and after; the bookkeeping annotations are written too, so they show."""
    before, after = [{"labels": o["metadata"].get("labels") or {},
                      "annotations": fleet_labels.shown_annotations(o, (fleet_labels.LAST_APPLIED,))}
                     for o in (outcome.before, outcome.after)]
    return {"before": before, "after": after, "before_header": outcome.ref, "after_header": outcome.ref}


def apply(hub, engine_name, clusters, labels=None, annotations=None, purge=False, unregistered="fail", check_mode=False):
    """Label and annotate every cluster of ``clusters``; the module's result.

    ``labels`` / ``annotations``: ``{key: value}``, a None value removes the key whoever set it; None (not given) leaves
    them as they are. ``purge`` also removes the keys this collection set that they no longer list. ``unregistered``:
    V(fail) fails the task before any write when a cluster is not registered; V(skip) leaves it out (reported as such).
    """
    engine = engines.get(engine_name)
    names = fleet.cluster_names(engine, clusters)
    labels, annotations = fleet_labels.validate(labels, annotations)
    found = fleet.read_members(hub, engine, names, unregistered, "label")
    targets = [c for c in names if c in found]
    outcomes, errors = fleet.fan_out(lambda c: _write(hub, engine, found[c], labels, annotations, purge, check_mode), targets)
    results = dict((c, summarize(outcomes.get(c))) for c in names if c not in errors)
    if errors:
        raise FleetError("%s: labelling failed on %d of %d clusters: %s" % (
            hub.label, len(errors), len(targets), "; ".join("cluster '%s': %s" % item for item in sorted(errors.items()))),
            changed=any(o.changed for o in outcomes.values()) and not check_mode, clusters=results, clusters_failed=sorted(errors))
    return {"changed": any(o.changed for o in outcomes.values()), "clusters": results,
            "diff": [_diff(outcomes[c]) for c in targets if outcomes[c].changed]}
