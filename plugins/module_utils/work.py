# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workload delivery: one OCM ``ManifestWork`` or Karmada ``Work`` per member cluster, written on the hub.

OCM keeps a ManifestWork in the hub namespace named after the cluster; the work agent on the member
applies its manifests and writes status back (conditions Applied/Available, per-manifest conditions and
status feedback). Karmada keeps a Work in ``karmada-es-<cluster>``; its execution controller applies the
manifests, its work status controller reflects each object's status and health into
``status.manifestStatuses``.

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

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, fleet, karmada, ocm, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.client import Conflict
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout

try:
    import yaml
except ImportError:  # pragma: no cover - the client reports the missing library first
    yaml = None

# How many pending clusters a wait message names before it summarizes the rest.
PENDING_SHOWN = 10
APPLIED = "Applied"
AVAILABLE = "Available"
CONDITIONS = (APPLIED, AVAILABLE)
# The hash of the spec this collection last wrote: fields removed from the task's input are removed
# from the work, although the comparison with the stored work tolerates defaults the server adds.
SPEC_HASH_ANNOTATION = "multicluster.fleet/spec-hash"
SOURCE_SUFFIXES = (".yaml", ".yml", ".json")
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")

# OCM facts (work.open-cluster-management.io/v1).
OCM_PROPAGATION_POLICIES = ("Foreground", "Orphan", "SelectivelyOrphan")
OCM_UPDATE_STRATEGIES = ("Update", "CreateOnly", "ServerSideApply", "ReadOnly")
OCM_FEEDBACK_TYPES = ("WellKnownStatus", "JSONPaths")
OCM_FIELD_MANAGER = "work-agent"
# Karmada facts (work.karmada.io/v1alpha1): what Karmada's own Work creators set, so that its execution
# controller deletes the applied objects with the Work and its status controller reflects their status.
KARMADA_MANAGED_LABEL = "karmada.io/managed"
KARMADA_WORK_NAME_ANNOTATION = "work.karmada.io/name"
KARMADA_WORK_NAMESPACE_ANNOTATION = "work.karmada.io/namespace"
KARMADA_HEALTHY = "Healthy"


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

def _identifier(value):
    """An OCM resource identifier; the core group and cluster scope are written as absent keys (empty means that)."""
    return dict((k, value.get(k)) for k in ("group", "resource", "name", "namespace") if value.get(k))


def ocm_delete_option(option):
    """``spec.deleteOption`` from the module's ``delete_option`` (None: OCM's default, Foreground)."""
    if not option:
        return None
    policy = option.get("propagation_policy") or "Foreground"
    rules = option.get("orphaning_rules") or []
    if rules and policy != "SelectivelyOrphan":
        raise FleetError("delete_option.orphaning_rules only apply with propagation_policy SelectivelyOrphan, not %s" % policy)
    result = {"propagationPolicy": policy}
    if policy == "SelectivelyOrphan":
        result["selectivelyOrphans"] = {"orphaningRules": [_identifier(rule) for rule in rules]}
    return result


def ocm_manifest_configs(configs):
    """``spec.manifestConfigs`` from the module's ``manifest_configs``."""
    result = []
    for index, config in enumerate(configs or []):
        where = "manifest_configs[%d]" % index
        item = {"resourceIdentifier": _identifier(config["resource_identifier"])}
        rules = []
        for rule in config.get("feedback_rules") or []:
            paths = rule.get("json_paths") or []
            if (rule["type"] == "JSONPaths") != bool(paths):
                raise FleetError("%s: feedback rule type %s %s json_paths" % (
                    where, rule["type"], "needs" if rule["type"] == "JSONPaths" else "takes no"))
            converted = {"type": rule["type"]}
            if paths:
                converted["jsonPaths"] = [dict((k, v) for k, v in (("name", p["name"]), ("path", p["path"]),
                                                                   ("version", p.get("version"))) if v)
                                          for p in paths]
            rules.append(converted)
        if rules:
            item["feedbackRules"] = rules
        strategy = config.get("update_strategy")
        if strategy:
            item["updateStrategy"] = {"type": strategy["type"]}
            ssa = strategy.get("server_side_apply")
            if ssa:
                if strategy["type"] != "ServerSideApply":
                    raise FleetError("%s: server_side_apply only applies to update strategy ServerSideApply" % where)
                manager = ssa.get("field_manager") or OCM_FIELD_MANAGER
                if not manager.startswith(OCM_FIELD_MANAGER):
                    raise FleetError("%s: field_manager must start with %s, got %s" % (where, OCM_FIELD_MANAGER, manager))
                item["updateStrategy"]["serverSideApply"] = {"force": bool(ssa.get("force")), "fieldManager": manager}
        result.append(item)
    return result


# --- engines ----------------------------------------------------------------------------------

class OcmWorks:
    """OCM ``ManifestWork`` in namespace ``<cluster>``, applied by the klusterlet's work agent."""

    name = "ocm"
    kind = ocm.MANIFEST_WORK

    @staticmethod
    def namespace(cluster):
        return cluster

    @staticmethod
    def check_condition(wanted):
        """Every wanted condition is one the work agent writes."""

    @staticmethod
    def cluster_problem(obj):
        if not (obj.get("spec") or {}).get("hubAcceptsClient"):
            return ("is not accepted: ManagedCluster %s has spec.hubAcceptsClient false; accept it first "
                    "(clusteradm accept, or approve its CSR and set hubAcceptsClient)" % obj["metadata"]["name"])
        return None

    @staticmethod
    def build(name, namespace, manifests, options):
        spec = {"workload": {"manifests": manifests}}
        delete_option = ocm_delete_option(options.get("delete_option"))
        if delete_option:
            spec["deleteOption"] = delete_option
        configs = ocm_manifest_configs(options.get("manifest_configs"))
        if configs:
            spec["manifestConfigs"] = configs
        return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}

    @staticmethod
    def manifest_statuses(work):
        """``{ordinal: summary}`` from ``status.resourceStatus.manifests``."""
        found = {}
        for item in (((work.get("status") or {}).get("resourceStatus") or {}).get("manifests")) or []:
            meta = item.get("resourceMeta") or {}
            conditions = item.get("conditions") or []
            found[meta.get("ordinal", 0)] = {
                "conditions": resources.conditions_of({"status": {"conditions": conditions}}),
                "applied": _condition_status(conditions, APPLIED),
                "available": _condition_status(conditions, AVAILABLE),
                "feedback": dict((v.get("name"), _feedback_value(v.get("fieldValue") or {}))
                                 for v in (item.get("statusFeedback") or {}).get("values") or []),
                "resource": meta.get("resource"),
            }
        return found

    @classmethod
    def progress(cls, work, wanted):
        """``(done, detail)``: whether the work has the ``wanted`` condition for its current generation."""
        done, detail = _condition_progress(work, wanted)
        if not done and work is not None:
            failed = [(ordinal, s) for ordinal, s in sorted(cls.manifest_statuses(work).items()) if s["applied"] is False]
            if failed:
                ordinal, summary = failed[0]
                message = [c["message"] for c in summary["conditions"] if c["type"] == APPLIED]
                detail += "; manifests[%d] %s: %s" % (ordinal, _manifest_name(work, ordinal), message[0] if message else "")
        return done, detail


class KarmadaWorks:
    """Karmada ``Work`` in namespace ``karmada-es-<cluster>``, applied by the execution controller."""

    name = "karmada"
    kind = karmada.WORK

    namespace = staticmethod(karmada.execution_namespace)

    @staticmethod
    def cluster_problem(obj):
        return None

    @staticmethod
    def build(name, namespace, manifests, options):
        policy = (options.get("delete_option") or {}).get("propagation_policy") or "Foreground"
        if policy == "SelectivelyOrphan":
            raise FleetError("Karmada Works are deleted with all their objects or orphan all of them: "
                             "delete_option.propagation_policy SelectivelyOrphan is OCM only")
        if options.get("manifest_configs"):
            raise FleetError("manifest_configs (feedback rules, update strategies) are OCM only; "
                             "Karmada reflects status and health of every manifest without them")
        marked = []
        for manifest in manifests:
            manifest = copy.deepcopy(manifest)
            metadata = manifest.setdefault("metadata", {})
            metadata.setdefault("labels", {})[KARMADA_MANAGED_LABEL] = "true"
            metadata.setdefault("annotations", {}).update({KARMADA_WORK_NAME_ANNOTATION: name,
                                                           KARMADA_WORK_NAMESPACE_ANNOTATION: namespace})
            marked.append(manifest)
        spec = {"workload": {"manifests": marked}}
        if policy == "Orphan":
            spec["preserveResourcesOnDeletion"] = True
        return {"metadata": {"name": name, "namespace": namespace, "finalizers": [karmada.EXECUTION_FINALIZER]}, "spec": spec}

    @staticmethod
    def manifest_statuses(work):
        """``{ordinal: summary}`` from ``status.manifestStatuses`` (reflected status and health)."""
        found = {}
        for item in (work.get("status") or {}).get("manifestStatuses") or []:
            health = item.get("health")
            found[(item.get("identifier") or {}).get("ordinal", 0)] = {
                "status": item.get("status"),
                "health": health,
                "available": health == KARMADA_HEALTHY if health else None,
            }
        return found

    @staticmethod
    def check_condition(wanted):
        """FleetError for a wanted condition Karmada cannot report: Available is derived, so only Available=True."""
        if wanted["type"] == AVAILABLE and (wanted["status"] != "True" or wanted.get("reason")):
            raise FleetError("Karmada writes no Available condition on a Work (it is derived from the health of every "
                             "manifest): wait_condition Available takes neither a status other than True nor a reason")

    @classmethod
    def progress(cls, work, wanted):
        """``(done, detail)``: Applied is the Work's condition; Available means Applied and every manifest Healthy.

        Karmada's controllers write no Available condition on a Work; the health of each applied object
        (``status.manifestStatuses[].health``) is what says the workload is up.
        """
        if wanted["type"] == APPLIED:
            return _condition_progress(work, wanted)
        done, detail = _condition_progress(work, resources.wanted_condition(APPLIED))
        if not done:
            return done, detail
        statuses = cls.manifest_statuses(work)
        for ordinal in range(len(work["spec"]["workload"].get("manifests") or [])):
            health = (statuses.get(ordinal) or {}).get("health")
            if health != KARMADA_HEALTHY:
                return False, "manifests[%d] %s health %s" % (ordinal, _manifest_name(work, ordinal), health or "not reported yet")
        return True, None


WORKS = dict((works.name, works) for works in (OcmWorks, KarmadaWorks))  # the works of each engine, by its name


def _condition_status(conditions, condition_type):
    """True/False for a condition of a list of conditions, None when it is missing or Unknown."""
    item = resources.condition({"status": {"conditions": conditions}}, condition_type) or {}
    return {"True": True, "False": False}.get(item.get("status"))


def _feedback_value(value):
    kind = value.get("type")
    if kind == "JsonRaw":
        try:
            return json.loads(value.get("jsonRaw"))
        except (TypeError, ValueError):
            return value.get("jsonRaw")
    return value.get({"Integer": "integer", "String": "string", "Boolean": "boolean"}.get(kind, ""))


def _manifest_name(work, ordinal):
    manifests = work["spec"]["workload"].get("manifests") or []
    return identity(manifests[ordinal]) if ordinal < len(manifests) else "(no longer in the spec)"


def _condition_progress(work, wanted):
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


def desired_work(engine, name, cluster, manifests, options):
    """The work this task wants for ``cluster``: engine spec, labels, annotations and the spec hash."""
    work = engine.build(name, engine.namespace(cluster), manifests, options)
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
    member_kind = fleet.member_kind(engine.name)

    def problem(cluster):
        obj = resources.get(hub, member_kind, cluster)
        if obj is None:
            return "is not registered on the hub (no %s named %s)" % (member_kind.kind, cluster)
        issue = engine.cluster_problem(obj)
        if issue:
            return issue
        namespace = engine.namespace(cluster)
        found = resources.get(hub, resources.NAMESPACE, namespace)
        if found is None:
            return ("has no namespace %s on the hub yet (the hub controllers create it for a registered%s cluster)"
                    % (namespace, " and accepted" if engines.get(engine.name).accepts_clients else ""))
        if found["metadata"].get("deletionTimestamp"):
            return "has its namespace %s on the hub being deleted (is the cluster being removed?)" % namespace
        return None

    found, errors = fleet.fan_out(problem, clusters)
    problems = ["cluster '%s' %s" % (c, found[c]) for c in clusters if found.get(c)]
    problems += ["cluster '%s': %s" % (c, errors[c]) for c in clusters if c in errors]
    if problems:
        raise FleetError("%s: cannot deliver %s to every cluster: %s" % (hub.label, engine.kind.kind, "; ".join(problems)),
                         clusters_failed=sorted(c for c in clusters if found.get(c) or c in errors))


def _failure(engine, action, outcomes, errors, check_mode):
    """The error for writes that failed on some clusters, with what was done on the others."""
    return FleetError("%s failed on %d of %d clusters: %s" % (
        action, len(errors), len(errors) + len(outcomes), "; ".join("cluster '%s': %s" % item for item in sorted(errors.items()))),
        changed=any(o.changed for o in outcomes.values()) and not check_mode,
        clusters=dict((c, summarize(engine, o.after or o.before, o.action)) for c, o in outcomes.items()),
        clusters_failed=sorted(errors))


# --- waiting ----------------------------------------------------------------------------------

def wait_for_works(hub, engine, name, clusters, condition=None, timeout=120, interval=resources.WAIT_SLEEP, latest=None):
    """Wait until the work ``name`` has ``condition`` (default Applied=True) on every cluster; return ``{cluster: work}``.

    Each poll is one list request over all namespaces (field selector on the name). On timeout the
    message names the clusters still pending with the latest condition each reported; ``latest``
    (a dict, if given) holds the works last read, also after a timeout.
    """
    latest = {} if latest is None else latest
    wanted = condition or resources.wanted_condition(APPLIED)

    def check():
        items = resources.list_objects(hub, engine.kind, field_selector="metadata.name=%s" % name)
        by_namespace = dict((item["metadata"]["namespace"], item) for item in items)
        pending = []
        for cluster in clusters:
            work = latest[cluster] = by_namespace.get(engine.namespace(cluster))
            done, detail = engine.progress(work, wanted)
            if not done:
                pending.append("%s (%s)" % (cluster, detail))
        if not pending:
            return True, None
        shown = "; ".join(pending[:PENDING_SHOWN])
        if len(pending) > PENDING_SHOWN:
            shown += "; and %d more" % (len(pending) - PENDING_SHOWN)
        return False, "%d of %d clusters pending: %s" % (len(pending), len(clusters), shown)

    resources.wait_until(check, timeout, "%s %s to have %s on %d cluster(s)"
                         % (engine.kind.kind, name, resources.describe_condition(wanted), len(clusters)), interval=interval)
    return latest


def wait_until_deleted(hub, engine, name, clusters, timeout=120, interval=resources.WAIT_SLEEP):
    """Wait until the work ``name`` is gone from every cluster namespace (one list request per poll)."""
    namespaces = dict((engine.namespace(c), c) for c in clusters)

    def check():
        items = resources.list_objects(hub, engine.kind, field_selector="metadata.name=%s" % name)
        left = ["%s (finalizers: %s)" % (namespaces[i["metadata"]["namespace"]], ", ".join(i["metadata"].get("finalizers") or []) or "none")
                for i in items if i["metadata"]["namespace"] in namespaces]
        return not left, "%d still present: %s" % (len(left), "; ".join(sorted(left)[:PENDING_SHOWN]))

    resources.wait_until(check, timeout, "%s %s to be deleted from %d cluster(s)" % (engine.kind.kind, name, len(clusters)),
                         interval=interval)


# --- results ----------------------------------------------------------------------------------

def summarize(engine, work, action=None):
    """What the module returns for one cluster: action, Applied/Available, conditions, manifests, object."""
    if work is None:
        return {"action": action, "applied": False, "available": False, "conditions": [], "manifests": [], "object": {}}
    statuses = engine.manifest_statuses(work)
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
        "applied": engine.progress(work, resources.wanted_condition(APPLIED))[0],
        "available": engine.progress(work, resources.wanted_condition(AVAILABLE))[0],
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


def deliver(hub, engine_name, name, clusters, manifests, options, check_mode=False, wait=False,
            wait_condition=None, wait_timeout=120, interval=resources.WAIT_SLEEP):
    """state=present: validate, write one work per cluster, optionally wait; return the module result.

    ``manifests`` are ``(manifest, origin)`` pairs; ``options`` holds ``labels``, ``annotations``,
    ``delete_option`` and ``manifest_configs``. ``wait_condition`` is the module option (see
    :func:`parse_wait_condition`), checked every ``interval`` seconds. In check mode the writes are server
    dry runs and the wait is skipped.
    """
    engine = WORKS[engines.get(engine_name).name]
    _check_name(name)
    clusters = fleet.cluster_names(engine_name, clusters)
    wanted = parse_wait_condition(wait_condition)
    engine.check_condition(wanted)
    manifests = validate_manifests(manifests)
    desired = dict((c, desired_work(engine, name, c, manifests, options)) for c in clusters)
    check_clusters(hub, engine, clusters)
    outcomes, errors = fleet.fan_out(lambda c: ensure_work(hub, engine.kind, desired[c], check_mode), clusters)
    if errors:
        raise _failure(engine, "writing %s %s" % (engine.kind.kind, name), outcomes, errors, check_mode)
    works = dict((c, o.after) for c, o in outcomes.items())
    changed = any(o.changed for o in outcomes.values())
    if wait and not check_mode:
        try:
            wait_for_works(hub, engine, name, clusters, wanted, wait_timeout, interval, latest=works)
        except WaitTimeout as exc:
            raise FleetError(exc.msg, changed=changed,
                             clusters=dict((c, summarize(engine, works[c], outcomes[c].action)) for c in clusters))
    return {"changed": changed,
            "clusters": dict((c, summarize(engine, works[c], outcomes[c].action)) for c in clusters),
            "diff": _diffs(outcomes)}


def remove(hub, engine_name, name, clusters, check_mode=False, wait=False, wait_timeout=120, interval=resources.WAIT_SLEEP):
    """state=absent: delete the work on every cluster (a work already being deleted is left alone)."""
    engine = WORKS[engines.get(engine_name).name]
    _check_name(name)
    clusters = fleet.cluster_names(engine_name, clusters)
    kind = engine.kind

    def delete(cluster):
        namespace = engine.namespace(cluster)
        existing = resources.get(hub, kind, name, namespace)
        if existing is not None and existing["metadata"].get("deletionTimestamp"):
            return resources.Outcome(kind, name, namespace, "unchanged", existing, existing)
        return resources.delete(hub, kind, name, namespace, check_mode=check_mode)

    outcomes, errors = fleet.fan_out(delete, clusters)
    if errors:
        raise _failure(engine, "deleting %s %s" % (kind.kind, name), outcomes, errors, check_mode)
    changed = any(o.changed for o in outcomes.values())
    if wait and not check_mode:
        try:
            wait_until_deleted(hub, engine, name, clusters, wait_timeout, interval)
        except WaitTimeout as exc:
            raise FleetError(exc.msg + " (the engine's agent removes its finalizer once the applied objects are handled)",
                             changed=changed)
    return {"changed": changed,
            "clusters": dict((c, summarize(engine, None if o.action in ("deleted", "absent") else o.after, o.action))
                             for c, o in outcomes.items()),
            "diff": _diffs(outcomes)}
