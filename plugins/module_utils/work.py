# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workload delivery: one OCM ``ManifestWork`` or Karmada ``Work`` per member cluster, written on the hub.

What a work is on each engine - its kind and namespace, how the task's options become its spec, which status says it
is applied and available - is the engine's :meth:`engine.Engine.works` (``works.py`` of its package); what they share
is here.

One task addresses many clusters: validation, writes and the status wait fan out. Writes run on a
small thread pool (the client's connection pool is thread safe); the wait reads every targeted work
with one list request per poll (a field selector on the work name across namespaces).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json
import os
import re

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import cluster_names, parallel
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import Conflict
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout

try:
    import yaml
except ImportError:  # pragma: no cover - the client reports the missing library first
    yaml = None

APPLIED = "Applied"
AVAILABLE = "Available"
CONDITIONS = (APPLIED, AVAILABLE)
# The hash of the spec this collection last wrote: fields removed from the task's input are removed
# from the work, although the comparison with the stored work tolerates defaults the server adds.
SPEC_HASH_ANNOTATION = "multicluster.fleet/spec-hash"
SOURCE_SUFFIXES = (".yaml", ".yml", ".json")
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


# --- manifests --------------------------------------------------------------------------------

def load_sources(paths):
    """``(manifest, origin)`` for every YAML/JSON document in ``paths`` (files or directories).

    A directory contributes its ``*.yaml``, ``*.yml`` and ``*.json`` files in name order (not
    recursively); a file may hold several documents; empty documents are skipped.
    """
    items = []
    for path in paths or []:
        if os.path.isdir(path):
            files = [os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(SOURCE_SUFFIXES)]
        elif os.path.isfile(path):
            files = [path]
        else:
            raise FleetError("src %s does not exist" % path)
        for filename in files:
            try:
                with open(filename) as handle:
                    documents = list(yaml.safe_load_all(handle))
            except (OSError, yaml.YAMLError) as exc:
                raise FleetError("cannot read manifests from %s: %s" % (filename, exc))
            except UnicodeDecodeError:
                raise FleetError("src %s is not text (a binary file?): expected YAML manifests" % filename)
            items.extend((doc, "%s, document %d" % (filename, index + 1))
                         for index, doc in enumerate(documents) if doc is not None)
    return items


def identity(manifest):
    """``Kind namespace/name`` (or ``Kind name``) of a manifest, for messages."""
    metadata = manifest.get("metadata") or {}
    where = "%s/%s" % (metadata["namespace"], metadata.get("name")) if metadata.get("namespace") else metadata.get("name")
    return "%s %s" % (manifest.get("kind"), where)


def _field_problems(manifest):
    """What is wrong with the identifying fields of a manifest (a mapping): missing ones, and values of another type."""
    metadata = manifest.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        fields = [("apiVersion", manifest.get("apiVersion")), ("kind", manifest.get("kind"))]
        wrong = ["metadata must be a mapping, not %s" % _type_name(metadata)]
    else:
        fields = [("apiVersion", manifest.get("apiVersion")), ("kind", manifest.get("kind")),
                  ("metadata.name", (metadata or {}).get("name"))]
        wrong = []
    missing = [field for field, value in fields if value is None or value == ""]
    wrong += ["%s must be a string, not %s %s" % (field, _type_name(value), json.dumps(value, default=str))
              for field, value in fields if value not in (None, "") and not isinstance(value, str)]
    return (["missing %s" % ", ".join(missing)] if missing else []) + wrong


def _type_name(value):
    """The YAML name of a value's type, for messages: mapping, list, integer, number, boolean, string."""
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (dict, "mapping"), (list, "list"),
                       (str, "string")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def validate_manifests(items):
    """Return the manifests of ``items`` (``(manifest, origin)``) or fail naming every bad one by index.

    Each manifest needs a string apiVersion, kind and metadata.name (messages tell a missing field from
    one of another type); the same object twice is refused.
    """
    problems, seen = [], {}
    for index, (manifest, origin) in enumerate(items):
        where = "manifests[%d]%s" % (index, " (%s)" % origin if origin else "")
        if not isinstance(manifest, dict):
            problems.append("%s is not a mapping but %s" % (where, _type_name(manifest)))
            continue
        wrong = _field_problems(manifest)
        if wrong:
            problems.append("%s: %s" % (where, "; ".join(wrong)))
            continue
        metadata = manifest["metadata"]
        key = (manifest["apiVersion"].split("/")[0] if "/" in manifest["apiVersion"] else "", manifest["kind"],
               metadata.get("namespace") or "", metadata["name"])
        if key in seen:
            problems.append("%s: %s is already manifests[%d]" % (where, identity(manifest), seen[key]))
        seen.setdefault(key, index)
    if problems:
        raise FleetError("invalid manifests: %s" % "; ".join(problems))
    if not items:
        raise FleetError("no manifests given: set manifests or src")
    return [copy.deepcopy(manifest) for manifest, _origin in items]


def secret_values(manifests):
    """The values of Secret manifests (``data`` and ``stringData``), for the module to mask in all output."""
    values = set()
    for manifest in manifests:
        if isinstance(manifest, dict) and manifest.get("kind") == "Secret":
            for key in ("data", "stringData"):
                if isinstance(manifest.get(key), dict):
                    values.update(str(v) for v in manifest[key].values() if v not in (None, ""))
    return values


def _masked_manifests(work):
    """``work`` with the values of Secret manifests masked, as results and diffs must show it."""
    work = resources.presentable(work)
    for manifest in ((work or {}).get("spec") or {}).get("workload", {}).get("manifests") or []:
        if isinstance(manifest, dict) and manifest.get("kind") == "Secret":
            for key in ("data", "stringData"):
                if manifest.get(key):
                    manifest[key] = dict((k, resources.MASKED) for k in manifest[key])
    return work


# --- options ----------------------------------------------------------------------------------


def condition_status(conditions, condition_type):
    """True/False for a condition of a list of conditions, None when it is missing or Unknown."""
    item = resources.condition({"status": {"conditions": conditions}}, condition_type) or {}
    return {"True": True, "False": False}.get(item.get("status"))


def feedback_value(value):
    kind = value.get("type")
    if kind == "JsonRaw":
        try:
            return json.loads(value.get("jsonRaw"))
        except (TypeError, ValueError):
            return value.get("jsonRaw")
    return value.get({"Integer": "integer", "String": "string", "Boolean": "boolean"}.get(kind, ""))


def manifest_name(work, ordinal):
    manifests = work["spec"]["workload"].get("manifests") or []
    return identity(manifests[ordinal]) if ordinal < len(manifests) else "(no longer in the spec)"


def condition_progress(work, wanted):
    """``(done, detail)`` for one wanted condition, ignoring a status written for an older generation."""
    if work is None:
        return False, "the work does not exist"
    condition_type = wanted["type"]
    item = resources.condition(work, condition_type)
    if item is None:
        return False, "no %s condition yet" % condition_type
    generation = work["metadata"].get("generation")
    observed = item.get("observedGeneration")
    if observed is not None and generation is not None and observed < generation:
        return False, "%s=%s is for generation %s, the work is at generation %s" % (
            condition_type, item.get("status"), observed, generation)
    if item.get("status") == wanted["status"] and (not wanted.get("reason") or item.get("reason") == wanted["reason"]):
        return True, None
    return False, "%s=%s %s: %s" % (condition_type, item.get("status"), item.get("reason"), item.get("message"))


def parse_wait_condition(value):
    """The condition ``manifest_work`` waits for (:func:`resources.wanted_condition`) from its ``wait_condition``.

    As kubernetes.core's, a dict with ``type`` (here Applied or Available), ``status`` (default True) and
    optionally ``reason``; a string is a condition type (the form of earlier releases). None is Applied=True.
    """
    if value is None:
        return resources.wanted_condition(APPLIED)
    if isinstance(value, str):
        value = {"type": value}
    if not isinstance(value, dict):
        raise FleetError("wait_condition must be a dict with type, status and reason, or a condition type, not %s"
                         % _type_name(value))
    unknown = sorted(set(value) - {"type", "status", "reason"})
    status = value.get("status") or "True"
    problems = ["unknown key%s %s (known: type, status, reason)" % ("s" if len(unknown) > 1 else "", ", ".join(unknown))
                if unknown else None,
                "type must be one of %s, got %r" % (", ".join(CONDITIONS), value.get("type"))
                if value.get("type") not in CONDITIONS else None,
                "status must be one of %s, got %r" % (", ".join(resources.CONDITION_STATUSES), status)
                if status not in resources.CONDITION_STATUSES else None,
                "reason must be a string, got %s" % _type_name(value["reason"])
                if value.get("reason") is not None and not isinstance(value["reason"], str) else None]
    problems = [p for p in problems if p]
    if problems:
        raise FleetError("invalid wait_condition: %s" % "; ".join(problems))
    return resources.wanted_condition(value["type"], status, value.get("reason"))


# --- writing ----------------------------------------------------------------------------------

def spec_hash(spec):
    """SHA-256 of the canonical JSON of ``spec``."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def desired_work(works, name, cluster, manifests, options):
    """The work this task wants for ``cluster``: works spec, labels, annotations and the spec hash."""
    work = works.build(name, works.namespace(cluster), manifests, options)
    metadata = work["metadata"]
    if options.get("labels"):
        metadata["labels"] = dict(options["labels"])
    metadata["annotations"] = dict(options.get("annotations") or {}, **{SPEC_HASH_ANNOTATION: spec_hash(work["spec"])})
    return work


def ensure_work(hub, kind, desired, check_mode=False):
    """Create the work, or replace its spec when this task's spec differs; return an ``Outcome``.

    The stored work is current when it carries the same spec hash and every desired field (so defaults
    the server adds do not count as changes, while fields left out of the task are removed). An update
    replaces the spec and merges labels, annotations and finalizers, guarded by ``resourceVersion``.
    """
    metadata = desired["metadata"]
    name, namespace = metadata["name"], metadata["namespace"]
    body = dict(desired, apiVersion=kind.api_version, kind=kind.kind)
    dry_run = {"dryRun": "All"} if check_mode else None
    for _attempt in range(resources.CONFLICT_RETRIES):
        existing = resources.get(hub, kind, name, namespace)
        if existing is None:
            try:
                created = hub.request("POST", kind.path(namespace), body=body, query=dry_run)
            except Conflict:
                continue
            return resources.Outcome(kind, name, namespace, "created", None, created)
        if existing["metadata"].get("deletionTimestamp"):
            raise FleetError("%s: %s is being deleted (finalizers: %s); wait until it is gone "
                             "(state=absent with wait=true) and run again"
                             % (hub.label, kind.ref(name, namespace), ", ".join(existing["metadata"].get("finalizers") or [])))
        if _current(existing, body):
            return resources.Outcome(kind, name, namespace, "unchanged", existing, existing)
        replacement = copy.deepcopy(existing)
        replacement["spec"] = copy.deepcopy(body["spec"])
        current = replacement["metadata"]
        for key in ("labels", "annotations"):
            if metadata.get(key):
                current[key] = dict(current.get(key) or {}, **metadata[key])
        finalizers = current.get("finalizers") or []
        current["finalizers"] = finalizers + [f for f in metadata.get("finalizers") or [] if f not in finalizers]
        try:
            updated = hub.request("PUT", kind.path(namespace, name), body=replacement, query=dry_run)
        except Conflict:
            continue
        return resources.Outcome(kind, name, namespace, "updated", existing, updated)
    raise FleetError("%s: %s kept changing while it was being updated (%d conflicts); try again"
                     % (hub.label, kind.ref(name, namespace), resources.CONFLICT_RETRIES))


def _current(existing, body):
    """True when ``existing`` holds every field of ``body``; finalizers may be more than ours."""
    wanted = copy.deepcopy(body)
    finalizers = wanted["metadata"].pop("finalizers", [])
    return resources.contains(existing, wanted) and set(finalizers) <= set(existing["metadata"].get("finalizers") or [])


def check_clusters(hub, engine, clusters):
    """Fail unless every cluster is registered (and accepted, for OCM) and has its namespace on the hub."""
    member_kind, works = engine.member_kind, engine.works

    def problem(cluster):
        obj = resources.get(hub, member_kind, cluster)
        if obj is None:
            return "is not registered on the hub (no %s named %s)" % (member_kind.kind, cluster)
        issue = works.cluster_problem(obj)
        if issue:
            return issue
        namespace = works.namespace(cluster)
        found = resources.get(hub, resources.NAMESPACE, namespace)
        if found is None:
            return ("has no namespace %s on the hub yet (the hub controllers create it for a registered%s cluster)"
                    % (namespace, " and accepted" if engine.accepts_clients else ""))
        if found["metadata"].get("deletionTimestamp"):
            return "has its namespace %s on the hub being deleted (is the cluster being removed?)" % namespace
        return None

    found, errors = parallel.fan_out(problem, clusters)
    problems = ["cluster '%s' %s" % (c, found[c]) for c in clusters if found.get(c)]
    problems += ["cluster '%s': %s" % (c, errors[c]) for c in clusters if c in errors]
    if problems:
        raise FleetError("%s: cannot deliver %s to every cluster: %s" % (hub.label, works.kind.kind, "; ".join(problems)),
                         clusters_failed=sorted(c for c in clusters if found.get(c) or c in errors))


def _failure(works, action, outcomes, errors, check_mode):
    """The error for writes that failed on some clusters, with what was done on the others."""
    return FleetError("%s failed on %d of %d clusters: %s" % (
        action, len(errors), len(errors) + len(outcomes), "; ".join("cluster '%s': %s" % item for item in sorted(errors.items()))),
        changed=any(o.changed for o in outcomes.values()) and not check_mode,
        clusters=dict((c, summarize(works, o.after or o.before, o.action)) for c, o in outcomes.items()),
        clusters_failed=sorted(errors))


# --- waiting ----------------------------------------------------------------------------------

def wait_for_works(hub, works, name, clusters, condition=None, timeout=120, interval=resources.WAIT_SLEEP, latest=None):
    """Wait until the work ``name`` has ``condition`` (default Applied=True) on every cluster; return ``{cluster: work}``.

    Each poll is one list request over all namespaces (field selector on the name). On timeout the
    message names the clusters still pending with the latest condition each reported; ``latest``
    (a dict, if given) holds the works last read, also after a timeout.
    """
    latest = {} if latest is None else latest
    wanted = condition or resources.wanted_condition(APPLIED)

    def check():
        items = resources.list_objects(hub, works.kind, field_selector="metadata.name=%s" % name)
        by_namespace = dict((item["metadata"]["namespace"], item) for item in items)
        pending = []
        for cluster in clusters:
            work = latest[cluster] = by_namespace.get(works.namespace(cluster))
            done, detail = works.progress(work, wanted)
            if not done:
                pending.append("%s (%s)" % (cluster, detail))
        if not pending:
            return True, None
        return False, "%d of %d clusters pending: %s" % (len(pending), len(clusters), resources.shown_pending(pending))

    resources.wait_until(check, timeout, "%s %s to have %s on %d cluster(s)"
                         % (works.kind.kind, name, resources.describe_condition(wanted), len(clusters)), interval=interval)
    return latest


def wait_until_deleted(hub, works, name, clusters, timeout=120, interval=resources.WAIT_SLEEP):
    """Wait until the work ``name`` is gone from every cluster namespace (one list request per poll)."""
    namespaces = dict((works.namespace(c), c) for c in clusters)

    def check():
        items = resources.list_objects(hub, works.kind, field_selector="metadata.name=%s" % name)
        left = ["%s (finalizers: %s)" % (namespaces[i["metadata"]["namespace"]], ", ".join(i["metadata"].get("finalizers") or []) or "none")
                for i in items if i["metadata"]["namespace"] in namespaces]
        return not left, "%d still present: %s" % (len(left), "; ".join(sorted(left)[:resources.PENDING_SHOWN]))

    resources.wait_until(check, timeout, "%s %s to be deleted from %d cluster(s)" % (works.kind.kind, name, len(clusters)),
                         interval=interval)


# --- results ----------------------------------------------------------------------------------

def summarize(works, work, action=None):
    """What the module returns for one cluster: action, Applied/Available, conditions, manifests, object."""
    if work is None:
        return {"action": action, "applied": False, "available": False, "conditions": [], "manifests": [], "object": {}}
    statuses = works.manifest_statuses(work)
    manifests = []
    for ordinal, manifest in enumerate(((work.get("spec") or {}).get("workload") or {}).get("manifests") or []):
        metadata = manifest.get("metadata") or {}
        entry = {"ordinal": ordinal, "api_version": manifest.get("apiVersion"), "kind": manifest.get("kind"),
                 "namespace": metadata.get("namespace"), "name": metadata.get("name"),
                 "conditions": [], "applied": None, "available": None, "feedback": {}, "status": None, "health": None,
                 "resource": None}
        entry.update(statuses.get(ordinal) or {})
        manifests.append(entry)
    return {
        "action": action,
        "namespace": work["metadata"].get("namespace"),
        "applied": works.progress(work, resources.wanted_condition(APPLIED))[0],
        "available": works.progress(work, resources.wanted_condition(AVAILABLE))[0],
        "conditions": resources.conditions_of(work),
        "manifests": manifests,
        "object": _masked_manifests(work),
    }


def _diffs(outcomes):
    diffs = []
    for cluster in sorted(outcomes):
        outcome = outcomes[cluster]
        if outcome.changed:
            header = "%s (cluster %s)" % (outcome.ref, cluster)
            diffs.append({"before": _masked_manifests(outcome.before) or {}, "after": _masked_manifests(outcome.after) or {},
                          "before_header": header, "after_header": header})
    return diffs


# --- the module's two states -------------------------------------------------------------------

def _check_name(name):
    if len(name) > 253 or not NAME_RE.match(name):
        raise FleetError("name %r is not a valid Kubernetes object name (DNS-1123 subdomain: lowercase letters, "
                         "digits, '-' and '.', at most 253 characters)" % name)


def deliver(hub, engine, name, clusters, manifests, options, check_mode=False, wait=resources.NO_WAIT):
    """state=present: validate, write one work per cluster, optionally wait; return the module result.

    ``manifests`` are ``(manifest, origin)`` pairs; ``options`` holds ``labels``, ``annotations``,
    ``delete_option`` and ``manifest_configs``. ``wait`` (:class:`resources.Wait`) holds the wait options; its
    ``condition`` is the module's ``wait_condition`` (see :func:`parse_wait_condition`), checked whether or not
    the run waits. In check mode the writes are server dry runs and the wait is skipped.
    """
    engine = engines.get(engine)
    works = engine.works
    _check_name(name)
    clusters = cluster_names.cluster_names(engine, clusters)
    wanted = parse_wait_condition(wait.condition)
    works.check_condition(wanted)
    manifests = validate_manifests(manifests)
    desired = dict((c, desired_work(works, name, c, manifests, options)) for c in clusters)
    check_clusters(hub, engine, clusters)
    outcomes, errors = parallel.fan_out(lambda c: ensure_work(hub, works.kind, desired[c], check_mode), clusters)
    if errors:
        raise _failure(works, "writing %s %s" % (works.kind.kind, name), outcomes, errors, check_mode)
    written = dict((c, o.after) for c, o in outcomes.items())
    changed = any(o.changed for o in outcomes.values())
    if wait.enabled and not check_mode:
        try:
            wait_for_works(hub, works, name, clusters, wanted, wait.timeout, wait.interval, latest=written)
        except WaitTimeout as exc:
            raise FleetError(exc.msg, changed=changed,
                             clusters=dict((c, summarize(works, written[c], outcomes[c].action)) for c in clusters))
    return {"changed": changed,
            "clusters": dict((c, summarize(works, written[c], outcomes[c].action)) for c in clusters),
            "diff": _diffs(outcomes)}


def remove(hub, engine, name, clusters, check_mode=False, wait=resources.NO_WAIT):
    """state=absent: delete the work on every cluster (a work already being deleted is left alone); with ``wait``
    (:class:`resources.Wait`) wait until they are gone."""
    engine = engines.get(engine)
    works = engine.works
    _check_name(name)
    clusters = cluster_names.cluster_names(engine, clusters)
    kind = works.kind

    def delete(cluster):
        namespace = works.namespace(cluster)
        existing = resources.get(hub, kind, name, namespace)
        if existing is not None and existing["metadata"].get("deletionTimestamp"):
            return resources.Outcome(kind, name, namespace, "unchanged", existing, existing)
        return resources.delete(hub, kind, name, namespace, check_mode=check_mode)

    outcomes, errors = parallel.fan_out(delete, clusters)
    if errors:
        raise _failure(works, "deleting %s %s" % (kind.kind, name), outcomes, errors, check_mode)
    changed = any(o.changed for o in outcomes.values())
    if wait.enabled and not check_mode:
        try:
            wait_until_deleted(hub, works, name, clusters, wait.timeout, wait.interval)
        except WaitTimeout as exc:
            raise FleetError(exc.msg + " (the engine's agent removes its finalizer once the applied objects are handled)",
                             changed=changed)
    return {"changed": changed,
            "clusters": dict((c, summarize(works, None if o.action in ("deleted", "absent") else o.after, o.action))
                             for c, o in outcomes.items()),
            "diff": _diffs(outcomes)}
