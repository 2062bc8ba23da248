# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Labels and annotations of member clusters on the hub, and what a member object says about the fleet's organisation.

Kubernetes' rules (apimachinery ``IsQualifiedName``, ``IsValidLabelValue``, ``ValidateAnnotations``): a label or
annotation key is an optional prefix - a DNS-1123 subdomain of at most 253 characters - and ``/``, then a name of 1 to
63 characters: letters, digits, ``-``, ``_`` and ``.``, starting and ending with a letter or digit. A label value is
empty or such a name; the annotations of an object hold at most 256 KiB.

Which keys this collection manages, and for whom: every writer - a ``cluster_label`` task - names its owner
(``owner``; ``site.yml``'s is ``inventory``), and the keys an owner set are recorded per key on the object itself, in
the annotations :data:`MANAGED_LABELS` and :data:`MANAGED_ANNOTATIONS`: ``key=owner[+owner...]`` items, sorted and
comma-separated. Several owners share a key when they set the same value. ``purge`` removes only what its own owner
set: its share of a key, and the key itself when no other owner is left. Setting a key that another owner, or someone
outside this collection, set to another value takes it over, and the plan says so (:func:`plan_changes`).

A key that already had the wanted value and is not recorded was set by someone else and stays theirs; keys of the
engines' own label domains (``Engine.label_domains``: the cluster set label of OCM, say) are never recorded.

Objects written by earlier versions record bare keys, without an owner: such a key is taken by the first owner that
lists it (whatever its value, without a takeover note), and no purge removes it while no owner has taken it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

MANAGED_LABELS = "multicluster.fleet/managed-labels"
MANAGED_ANNOTATIONS = "multicluster.fleet/managed-annotations"
RECORDS = (("labels", MANAGED_LABELS), ("annotations", MANAGED_ANNOTATIONS))
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# Annotations that are bookkeeping, not the fleet's: left out of summaries (and the inventory).
HIDDEN_ANNOTATIONS = (MANAGED_LABELS, MANAGED_ANNOTATIONS, LAST_APPLIED)
ANNOTATIONS_MAX_BYTES = 256 * 1024
NAME_MAX = 63
PREFIX_MAX = 253
# Anchored with \A and \Z: "$" would also match before a final newline, so "env\n" would pass.
NAME_RE = re.compile(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
SUBDOMAIN_RE = re.compile(r"\A[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
NAME_RULE = "at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
# The owner of cluster_label tasks that name none, and of site.yml's inventory labels.
DEFAULT_OWNER = "cluster_label"
INVENTORY_OWNER = "inventory"


# --- input ------------------------------------------------------------------------------------------

def key_problem(key):
    """Why ``key`` is no qualified name (a label or annotation key), or None."""
    if not isinstance(key, str) or not key:
        return "a key must be a non-empty string"
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > PREFIX_MAX or not SUBDOMAIN_RE.match(prefix)):
        return "its prefix (before '/') must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', at most 253 characters"
    if len(name) > NAME_MAX or not NAME_RE.match(name):
        return "its name%s must be %s" % (" (after '/')" if slash else "", NAME_RULE)
    return None


def _text(value):
    """A label or annotation value as the text Kubernetes stores; YAML's numbers and booleans as they were written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise FleetError("must be a string, got %s" % type(value).__name__)


def _value_text(at, key, value, value_problem, problems):
    """``value`` of ``at[key]`` as text, or None when it is no text; what is wrong with it is added to ``problems``."""
    try:
        text = _text(value)
    except FleetError as exc:
        problems.append("%s[%r] = %r: %s" % (at, key, value, exc.msg))
        return None
    problem = value_problem(text)
    if problem:
        problems.append("%s[%r] = %r: %s" % (at, key, text, problem))
    return text


def _checked(option, given, value_problem):
    """``given`` (a dict; None: not given) as ``{key: text or None}``, or FleetError naming every bad key and value."""
    if given is None:
        return None
    problems, result = [], {}
    for key, value in given.items():
        problem = key_problem(key)
        if problem is None and key in (MANAGED_LABELS, MANAGED_ANNOTATIONS):
            problem = "this collection records the keys it manages there"
        if problem is not None:
            problems.append("%s key %r: %s" % (option, key, problem))
            continue
        if value is None:  # remove it, whoever set it
            result[key] = None
            continue
        text = _value_text(option, key, value, value_problem, problems)
        if text is not None:
            result[key] = text
    if problems:
        raise FleetError("invalid %s: %s" % (option, "; ".join(problems)))
    return result


def _label_value_problem(text):
    if text and (len(text) > NAME_MAX or not NAME_RE.match(text)):
        return "a label value must be empty or " + NAME_RULE
    return None


def validate(labels=None, annotations=None):
    """``(labels, annotations)`` checked by Kubernetes' rules, values as text; None stays None (not given)."""
    labels = _checked("labels", labels, _label_value_problem)
    annotations = _checked("annotations", annotations, lambda text: None)
    size = sum(len(k) + len(v) for k, v in (annotations or {}).items() if v is not None)
    if size > ANNOTATIONS_MAX_BYTES:
        raise FleetError("invalid annotations: %d bytes together, Kubernetes allows at most %d" % (size, ANNOTATIONS_MAX_BYTES))
    return labels, annotations


def owner_problem(owner):
    """Why ``owner`` (of a cluster_label task) cannot be recorded, or None: as a label value, 1 to 63 characters."""
    if not isinstance(owner, str) or not owner or len(owner) > NAME_MAX or not NAME_RE.match(owner):
        return "owner %r must be %s" % (owner, NAME_RULE)
    return None


def selector(where, match_labels=None, expressions=None):
    """``(matchLabels, matchExpressions)`` of a Kubernetes label selector (a Placement's label or claim selector, a
    cluster set's label selector), checked as ``metav1.LabelSelectorAsSelector`` parses them: keys are qualified names,
    values label values (numbers and booleans as text). ``expressions`` are ``{key, operator, values}`` (values None
    for Exists and DoesNotExist). FleetError naming every bad key and value, under ``where``; nothing is written then."""
    problems, labels_out = [], None
    for key, value in (match_labels or {}).items():
        labels_out = labels_out or {}
        at = "%s.match_labels" % where
        problem = key_problem(key)
        if problem is not None:
            problems.append("%s key %r: %s" % (at, key, problem))
            continue
        text = _value_text(at, key, value, _label_value_problem, problems)  # None refused too: a selector has no "remove"
        if text is not None:
            labels_out[key] = text
    expressions_out = []
    for index, item in enumerate(expressions or []):
        at = "%s.match_expressions[%d]" % (where, index)
        problem = key_problem(item.get("key"))
        if problem is not None:
            problems.append("%s key %r: %s" % (at, item.get("key"), problem))
        values = []
        for position, value in enumerate(item.get("values") or []):
            try:
                text = _text(value)
            except FleetError as exc:
                problems.append("%s (key %s) values[%d] = %r: %s" % (at, item.get("key"), position, value, exc.msg))
                continue
            problem = _label_value_problem(text)
            if problem:
                problems.append("%s (key %s) values[%d] = %r: %s" % (at, item.get("key"), position, text, problem))
            values.append(text)
        expressions_out.append(dict(item, values=values or None))
    if problems:
        raise FleetError("invalid selector, Kubernetes cannot parse it: %s" % "; ".join(problems))
    return labels_out, expressions_out


# --- the plan for one member object -----------------------------------------------------------------

def _engine_owns(engine, key):
    domain = key.rpartition("/")[0]
    return any(domain == d or domain.endswith("." + d) for d in engine.label_domains)


def owners(obj, record):
    """What annotation ``record`` of ``obj`` says: ``{key: set of owners}``, the owners None for a key an earlier version
    recorded without owner."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(record) or ""
    result = {}
    for item in text.split(","):
        key, equals, names = item.strip().partition("=")
        if not key:
            continue
        names = set(n for n in names.split("+") if n) if equals else set()
        if names:
            result[key] = (result.get(key) or set()) | names
        else:
            result.setdefault(key, None)
    return result


def record_text(recorded):
    """The annotation text of ``{key: set of owners or None}`` (:func:`owners`); None when empty."""
    items = [key if names is None else "%s=%s" % (key, "+".join(sorted(names))) for key, names in sorted(recorded.items())]
    return ",".join(items) or None


def managed_keys(obj, record, owner=None):
    """The keys annotation ``record`` of ``obj`` says ``owner`` set (None: any owner, or an earlier version)."""
    return set(key for key, names in owners(obj, record).items() if owner is None or owner in (names or ()))


def _plan(engine, current, recorded, wanted, purge, owner):
    """For one of labels and annotations: ``(changes, recorded after, taken over, unowned kept)`` - the merge-patch
    entries; ``{key: owners}`` after; ``[(key, previous owners (empty: set outside the collection), value before)]``;
    the keys an earlier version recorded that ``purge`` leaves."""
    changes, after, taken = {}, dict((k, set(v) if v is not None else None) for k, v in recorded.items()), []
    for key, value in (wanted or {}).items():
        if value is None:  # removed, whoever set it
            if key in current:
                changes[key] = None
            after.pop(key, None)
            continue
        if _engine_owns(engine, key):
            if current.get(key) != value:
                changes[key] = value
            continue
        before = after.get(key)
        if key in current and current[key] == value:
            if key in after:  # a writer of this collection set it: shared (taken, if an earlier version recorded it)
                after[key] = (before or set()) | {owner}
            continue  # set outside the collection: stays theirs
        changes[key] = value
        if key in current and (key not in after or (before is not None and before - {owner})):
            taken.append((key, sorted((before or set()) - {owner}), current[key]))
        after[key] = {owner}
    kept = []
    if purge and wanted is not None:
        for key, names in sorted(after.items()):
            if key in wanted:
                continue
            if names is None:
                if key in current:
                    kept.append(key)
            elif owner in names:
                if names - {owner}:
                    after[key] = names - {owner}
                else:
                    if key in current:
                        changes[key] = None
                    del after[key]
    present = (set(current) | set(k for k, v in changes.items() if v is not None)) - set(k for k, v in changes.items() if v is None)
    return changes, dict((k, v) for k, v in after.items() if k in present), sorted(taken), kept


def plan_changes(engine, obj, labels=None, annotations=None, purge=False, owner=DEFAULT_OWNER):
    """What giving member object ``obj`` the labels and annotations (from :func:`validate`) as ``owner`` takes:
    ``patch``, the ``metadata`` merge patch (empty when it has them); ``taken_over``, ``[(part, key, previous owners,
    value before)]`` for each key it sets that another owner (or, previous owners empty, someone outside this
    collection) had set to another value; ``unowned``, ``[(part, key)]``, the keys an earlier version recorded without
    owner that ``purge`` leaves. ``purge`` removes what ``owner`` set that the task no longer lists (of labels and
    annotations each only when given): its share of a key shared with other owners, else the key."""
    engine = engines.get(engine)
    metadata = obj.get("metadata") or {}
    patch, records, taken_over, unowned = {}, {}, [], []
    for (part, record), wanted in zip(RECORDS, (labels, annotations)):
        changes, after, taken, kept = _plan(engine, metadata.get(part) or {}, owners(obj, record), wanted, purge, owner)
        if changes:
            patch[part] = changes
        records[record] = record_text(after)
        taken_over.extend((part, key, names, value) for key, names, value in taken)
        unowned.extend((part, key) for key in kept)
    for record, text in records.items():
        if text != (metadata.get("annotations") or {}).get(record):
            patch.setdefault("annotations", {})[record] = text
    return {"patch": patch, "taken_over": taken_over, "unowned": unowned}


def plan(engine, obj, labels=None, annotations=None, purge=False, owner=DEFAULT_OWNER):
    """The ``metadata`` merge patch of :func:`plan_changes`."""
    return plan_changes(engine, obj, labels, annotations, purge, owner)["patch"]


# --- what a member object says ----------------------------------------------------------------------

def cordoned(engine, obj):
    """The member object carries the engine's cordon taint (:meth:`engine.Engine.is_cordoned`) in ``spec.taints``."""
    return engines.get(engine).is_cordoned(((obj or {}).get("spec") or {}).get("taints"))


def shown_annotations(obj, hidden=HIDDEN_ANNOTATIONS):
    """The annotations of ``obj`` without the ``hidden`` ones."""
    annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    return dict((k, v) for k, v in annotations.items() if k not in hidden)


def observed(engine, obj):
    """The summary keys of a member object beside :func:`hub_members.summarize`'s: its annotations (without bookkeeping),
    taints, whether it is cordoned and its cluster set (OCM's exclusive cluster set label; None for Karmada)."""
    engine = engines.get(engine)
    metadata = obj.get("metadata") or {}
    return {
        "annotations": shown_annotations(obj),
        "taints": list((obj.get("spec") or {}).get("taints") or []),
        "cordoned": cordoned(engine, obj),
        "cluster_set": (metadata.get("labels") or {}).get(engine.cluster_set_label) if engine.cluster_set_label else None,
    }
