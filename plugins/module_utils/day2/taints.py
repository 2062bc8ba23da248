# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Taints of member clusters: ``spec.taints`` of the hub's Karmada ``Cluster`` or OCM ``ManagedCluster``.

A taint is ``{key, value, effect, timeAdded}``; as in Kubernetes and ``karmadactl taint``, a cluster has at most one
taint per key and effect, so key and effect name a taint and its value is what may change. Cordoning adds the engine's
cordon taint (:attr:`engine.Engine.cordon_taint`, with one of its :attr:`engine.Engine.cordon_effects`), uncordoning
removes it. Only the taints a task names are added, changed or removed: every other taint - set by people, other tools
or the engine's own controllers - is kept as it is, and a taint that is already there keeps its ``timeAdded``.

:func:`plan` checks the whole input before anything is read; :func:`apply` then reads every cluster (failing, before
any write, when one is not registered, unless told to skip it) and writes the ones whose taints change, in parallel.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.day2.member_changes import MemberChanges

# Kubernetes' qualified names and label values (apimachinery validation.IsQualifiedName, IsValidLabelValue).
NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
NAME_MAX_LENGTH = 63
PREFIX_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
PREFIX_MAX_LENGTH = 253
VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
VALUE_MAX_LENGTH = 63


def _qualified_name_problem(key):
    prefix, slash, name = key.rpartition("/")
    if slash and not (prefix and len(prefix) <= PREFIX_MAX_LENGTH and PREFIX_RE.match(prefix)):
        return "its prefix %r must be a DNS subdomain (lowercase letters, digits, '-' and '.') of at most %d characters" % (
            prefix, PREFIX_MAX_LENGTH)
    if not (len(name) <= NAME_MAX_LENGTH and NAME_RE.match(name)):
        return ("its name %r must be 1 to %d letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
                % (name, NAME_MAX_LENGTH))
    return None


def check_taint(engine, item, where, effect_required=True):
    """``{key, value, effect}`` of one taint option, checked as the engine's API checks it; FleetError naming the value."""
    key, value, effect = item.get("key"), item.get("value") or "", item.get("effect")
    if not isinstance(key, str) or not key:
        raise FleetError("%s: a taint needs a key" % where)
    problem = _qualified_name_problem(key)
    if problem:
        raise FleetError("%s: taint key %r is not a qualified name ([prefix/]name): %s" % (where, key, problem))
    if not isinstance(value, str) or len(value) > VALUE_MAX_LENGTH or not VALUE_RE.match(value):
        raise FleetError("%s (key %s): taint value %r is not a valid label value: at most %d letters, digits, '-', '_' "
                         "or '.', starting and ending with a letter or digit" % (where, key, value, VALUE_MAX_LENGTH))
    if effect is None and effect_required:
        raise FleetError("%s (key %s): a taint to add needs an effect, one of %s"
                         % (where, key, ", ".join(engine.taint_effects)))
    if effect is not None and effect not in engine.taint_effects:
        raise FleetError("%s (key %s): effect %r is not a %s taint effect; the effects are %s"
                         % (where, key, effect, engine.name, ", ".join(engine.taint_effects)))
    if key in engine.hub_taint_keys:
        raise FleetError("%s: taint key %s is the engine's own: its controllers add and remove it with the cluster's health; "
                         "tolerate it in placements instead" % (where, key))
    return {"key": key, "value": value, "effect": effect}


def notation(taint):
    """``key=value:effect`` (``key:effect`` without value, ``key`` without effect), as ``karmadactl taint`` writes it."""
    text = taint["key"] + ("=" + taint["value"] if taint.get("value") else "")
    return text + (":" + taint["effect"] if taint.get("effect") else "")


def _same(taint, other):
    """Both name the same taint: equal keys, and equal effects unless ``other`` names no effect (every effect)."""
    return taint.get("key") == other["key"] and other.get("effect") in (None, taint.get("effect"))


def plan(engine, taints=None, state="present", cordon=None, cordon_effect=None):
    """``(add, remove)``: the taints the task wants present, and those (an effect of None: every effect) it wants gone.

    ``taints`` are the module's items, added with state present and removed with state absent (where an item without
    effect removes the key's taints of every effect); ``cordon`` true adds the engine's cordon taint - with
    ``cordon_effect``, one of the engine's :attr:`engine.Engine.cordon_effects`, else its own - and removes it with its
    other cordon effects; false removes it whatever its cordon effect.
    """
    engine = engines.get(engine)
    if not taints and cordon is None:
        raise FleetError("nothing to do: give taints, or cordon true or false")
    if cordon_effect is not None and cordon is not True:
        raise FleetError("cordon_effect %s says how to cordon: it needs cordon true" % cordon_effect)
    if cordon_effect is not None and cordon_effect not in engine.cordon_effects:
        raise FleetError("cordon_effect %s is not a %s cordon effect; the cordon effects are %s"
                         % (cordon_effect, engine.name, ", ".join(engine.cordon_effects)))
    items = [check_taint(engine, item, "taints[%d]" % index, effect_required=state == "present")
             for index, item in enumerate(taints or [])]
    add, remove = (items, []) if state == "present" else ([], items)
    if cordon is not None:
        effect = (cordon_effect or engine.cordon_taint["effect"]) if cordon else None
        cordons = [dict(engine.cordon_taint, value="", effect=e) for e in engine.cordon_effects]
        add += [c for c in cordons if c["effect"] == effect]
        remove += [c for c in cordons if c["effect"] != effect]
    for index, taint in enumerate(add):
        twin = next((t for t in add[:index] if _same(t, taint) and t["value"] != taint["value"]), None)
        if twin is not None:
            raise FleetError("taints %s and %s have the same key and effect: a cluster has one taint per key and effect"
                             % (notation(twin), notation(taint)))
        contrary = next((t for t in remove if _same(taint, t)), None)
        if contrary is not None:
            raise FleetError("taint %s is to be both added and removed (%s); cordon=%s removes the cordon taint %s"
                             % (notation(taint), notation(contrary), cordon, notation(contrary)))
    return add, remove


def reconcile(current, add, remove, now):
    """The taints a cluster with ``current`` taints gets: ``remove`` removed, ``add`` added (stamped ``now``) or given
    their new value (stamped again); everything else, and the ``timeAdded`` of taints already there, as it was."""
    result = [dict(t) for t in current or [] if not any(_same(t, r) for r in remove)]
    for taint in add:
        found = next((t for t in result if _same(t, taint)), None)
        if found is not None and (found.get("value") or "") == taint["value"]:
            continue
        wanted = {"key": taint["key"], "effect": taint["effect"], "timeAdded": now}
        if taint["value"]:  # no empty value: the API leaves it out
            wanted["value"] = taint["value"]
        if found is not None:
            result[result.index(found)] = wanted
        else:
            result.append(wanted)
    return result


def _taints_of(obj):
    return list(((obj or {}).get("spec") or {}).get("taints") or [])


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def summarize(engine, outcome):
    """What the module returns for one cluster (``outcome`` None: not registered, skipped)."""
    old, new = _taints_of(outcome and outcome.before), _taints_of(outcome and outcome.after)
    return {"action": outcome.action if outcome else "unregistered", "taints": new, "cordoned": engine.is_cordoned(new),
            "added": [notation(t) for t in new if t not in old], "removed": [notation(t) for t in old if t not in new]}


def _diff(outcome):
    header = "%s (cluster %s): spec.taints" % (outcome.ref, outcome.name)
    return {"before": {"taints": _taints_of(outcome.before)}, "after": {"taints": _taints_of(outcome.after)},
            "before_header": header, "after_header": header}


def apply(hub, engine, clusters, wanted, unregistered="fail", check_mode=False):
    """The module: check the input - ``wanted``, the arguments of :func:`plan` (``taints``, ``state``, ``cordon``,
    ``cordon_effect``) - read every cluster, then write the taints that change (:class:`member_changes.MemberChanges`).
    ``clusters``: names, each given ``wanted``'s taints; or, the module's ``per_cluster``, dicts of ``name`` and
    ``taints``, each cluster its own (``wanted``'s state and cordon apply to each). Given per cluster, the taints of each
    cluster are checked on their own, and a cluster whose taints are refused, that is not registered (with
    ``unregistered`` V(fail)) or being deleted fails alone: the others are written. ``unregistered`` V(skip) leaves out
    the clusters the hub does not have, reported with action V(unregistered)."""
    engine = engines.get(engine)
    per_cluster = bool(clusters) and isinstance(clusters[0], dict)
    if per_cluster:
        changes, planned = MemberChanges.per_cluster(
            hub, engine, clusters, lambda item: plan(engine, **dict(wanted, taints=item.get("taints"))), check_mode)
    else:
        task_plan = plan(engine, **wanted)
        changes = MemberChanges(hub, engine, clusters, check_mode)
        planned = dict.fromkeys(changes.clusters, task_plan)
    changes.read(unregistered, "taint", isolated=per_cluster)

    def new_taints(cluster, obj):
        add, remove = planned[cluster]
        taints = reconcile(_taints_of(obj), add, remove, _now())
        return {"spec": {"taints": taints or None}} if taints != _taints_of(obj) else None
    changes.write(new_taints, "its taints were being written")
    return changes.result(lambda outcome, _info: summarize(engine, outcome), _diff, "writing the taints failed")
