# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Labels and annotations of member clusters on the hub, and what a member object says about the fleet's organisation.

Kubernetes' rules (apimachinery ``IsQualifiedName``, ``IsValidLabelValue``, ``ValidateAnnotations``): a label or
annotation key is an optional prefix - a DNS-1123 subdomain of at most 253 characters - and ``/``, then a name of 1 to
63 characters: letters, digits, ``-``, ``_`` and ``.``, starting and ending with a letter or digit. A label value is
empty or such a name; the annotations of an object hold at most 256 KiB.

Which keys this collection manages: the keys it set, recorded on the object itself in the annotations
:data:`MANAGED_LABELS` and :data:`MANAGED_ANNOTATIONS` (sorted, comma-separated). Only those are removed when a task
no longer lists them (``purge``). A key that already had the wanted value was set by someone else and stays theirs;
keys of the engines' own label domains (``Engine.label_domains``: the cluster set label of OCM, say) are never recorded.
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
        try:
            text = _text(value)
        except FleetError as exc:
            problems.append("%s[%r] = %r: %s" % (option, key, value, exc.msg))
            continue
        problem = value_problem(text)
        if problem:
            problems.append("%s[%r] = %r: %s" % (option, key, text, problem))
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
        try:
            text = _text(value)
        except FleetError as exc:  # None too: a selector has no "remove"
            problems.append("%s[%r] = %r: %s" % (at, key, value, exc.msg))
            continue
        problem = _label_value_problem(text)
        if problem:
            problems.append("%s[%r] = %r: %s" % (at, key, text, problem))
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


def managed_keys(obj, record):
    """The keys annotation ``record`` of ``obj`` says this collection set."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(record) or ""
    return set(key for key in text.split(",") if key)


def _plan(engine, current, recorded, wanted, purge):
    """``(changes, managed)`` for one of labels and annotations: the merge-patch entries and the keys managed after."""
    changes, managed = {}, set(recorded)
    for key, value in (wanted or {}).items():
        if value is None:
            if key in current:
                changes[key] = None
            managed.discard(key)
        elif current.get(key) != value:
            changes[key] = value
            if not _engine_owns(engine, key):
                managed.add(key)
    if purge and wanted is not None:
        for key in recorded - set(wanted):
            if key in current:
                changes[key] = None
            managed.discard(key)
    present = (set(current) | set(k for k, v in changes.items() if v is not None)) - set(k for k, v in changes.items() if v is None)
    return changes, managed & present


def plan(engine, obj, labels=None, annotations=None, purge=False):
    """The ``metadata`` merge patch that gives member object ``obj`` the labels and annotations (from :func:`validate`);
    empty when it has them. ``purge`` removes the keys this collection set that the task no longer lists (of labels and
    annotations each only when given)."""
    engine = engines.get(engine)
    metadata = obj.get("metadata") or {}
    patch, records = {}, {}
    for (part, record), wanted in zip(RECORDS, (labels, annotations)):
        changes, managed = _plan(engine, metadata.get(part) or {}, managed_keys(obj, record), wanted, purge)
        if changes:
            patch[part] = changes
        records[record] = ",".join(sorted(managed)) or None
    for record, text in records.items():
        if text != (metadata.get("annotations") or {}).get(record):
            patch.setdefault("annotations", {})[record] = text
    return patch


# --- what a member object says ----------------------------------------------------------------------

def cordoned(engine, obj):
    """The member object carries the engine's cordon taint (``Engine.cordon_taint``) in ``spec.taints``."""
    taint = engines.get(engine).cordon_taint
    return any(t.get("key") == taint["key"] and t.get("effect") == taint["effect"]
               for t in ((obj or {}).get("spec") or {}).get("taints") or [])


def shown_annotations(obj, hidden=HIDDEN_ANNOTATIONS):
    """The annotations of ``obj`` without the ``hidden`` ones."""
    annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    return dict((k, v) for k, v in annotations.items() if k not in hidden)


def observed(engine, obj):
    """The summary keys of a member object beside :func:`fleet.summarize`'s: its annotations (without bookkeeping),
    taints, whether it is cordoned and its cluster set (OCM's exclusive cluster set label; None for Karmada)."""
    engine = engines.get(engine)
    metadata = obj.get("metadata") or {}
    return {
        "annotations": shown_annotations(obj),
        "taints": list((obj.get("spec") or {}).get("taints") or []),
        "cordoned": cordoned(engine, obj),
        "cluster_set": (metadata.get("labels") or {}).get(engine.cluster_set_label) if engine.cluster_set_label else None,
    }
