"""Simulated work agents: they play OCM's klusterlet work agent or Karmada's execution and work status controllers.

The lab runs no engine component, so this test double does their part of workload delivery against real
API servers:

- It watches the works of its clusters on the hub (polling, about once a second): OCM ``ManifestWork``
  in namespace ``<cluster>``, Karmada ``Work`` in ``karmada-es-<cluster>``.
- It applies their manifests to the member API with the member's admin credentials, resolving kinds
  through the member's discovery API as the real agents' REST mappers do.
- It writes status back through the status subresource, in the shapes the real agents write: OCM
  conditions ``Applied`` (AppliedManifestWorkComplete / AppliedManifestWorkFailed) and ``Available``
  (ResourcesAvailable / ResourcesNotAvailable / ResourcesStatusUnknown) with ``observedGeneration``, and
  per manifest ``resourceMeta``, conditions ``Applied`` / ``Available`` / ``StatusFeedbackSynced`` and
  ``statusFeedback`` (WellKnownStatus: Deployment ReadyReplicas, Replicas, AvailableReplicas; Job; Pod;
  and JSONPaths rules of the simple ``.status.a.b`` form); Karmada conditions ``Dispatching`` and
  ``Applied`` (AppliedSuccessful / AppliedFailed) and ``manifestStatuses`` with identifier, reflected
  status and health (Deployment and Pod rules of Karmada's default interpreter; other kinds healthy).
- OCM update strategies: Update (create, or replace the content and merge labels/annotations when it
  differs), CreateOnly (never update), ServerSideApply (apply patch with the configured field manager and
  force), ReadOnly (only read; never created or deleted). Karmada creates, or updates what differs
  (keeping a Pod's node, service account and volumes, as Karmada's retention rules do).
- Finalizers: OCM's agent adds ``cluster.open-cluster-management.io/manifest-work-cleanup`` to every work
  and removes it once the applied objects are handled; Karmada's creators put
  ``karmada.io/execution-controller`` on a Work and the execution controller removes it after deleting.
- Deletion: OCM Foreground deletes every applied object and keeps the finalizer until they are gone;
  Orphan leaves them; SelectivelyOrphan leaves those matching the orphaning rules. An object dropped from
  a work's manifests is deleted the same way (the AppliedManifestWork bookkeeping is kept in memory).
  Karmada deletes the objects of an applied Work unless ``spec.preserveResourcesOnDeletion``.
- Karmada's controllers act only on clusters whose ``Cluster`` is Ready; the OCM agent needs nothing on
  the hub but its namespace. For a Pull cluster Karmada's execution controller runs inside its karmada-agent
  (karmada ``cmd/agent``): given ``karmada_agent_runs`` (cluster name -> whether its agent runs, as
  ``simulate.py`` passes it), a Pull cluster's Works are handled only while its agent runs, so a Work deleted
  after its agent is gone keeps ``karmada.io/execution-controller`` for good, as with the real agent.

One agent serves any number of clusters, each mapped to a lab member API (several may share one), and
handles their works concurrently, as one agent per cluster would.

Python::

    agent = WorkAgent(lab.clusters["hub"], "ocm", {"cluster1": lab.clusters["member1"]}).start()
    ...
    agent.stop()

Command line (runs until interrupted, printing what it does)::

    python tests/lab/sim_work_agent.py --lab-dir DIR --cluster member1 --engine ocm [--serve c1 --serve c2]
"""

import copy
import hashlib
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote, urlencode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lab import ApiClient, ApiError, LabError  # noqa: E402  (tests/lab is not a package)
from sim_base import Simulation, condition_true, get_or_none, now, run_cli  # noqa: E402

# Group-version path and plural of each engine's work resource.
WORKS = {"ocm": ("/apis/work.open-cluster-management.io/v1", "manifestworks"),
         "karmada": ("/apis/work.karmada.io/v1alpha1", "works")}
KARMADA_CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
OCM_FINALIZER = "cluster.open-cluster-management.io/manifest-work-cleanup"
KARMADA_FINALIZER = "karmada.io/execution-controller"
KARMADA_WORK_ANNOTATIONS = ("work.karmada.io/name", "work.karmada.io/namespace")
# OCM's annotation on applied objects: the hash of the manifest last applied (workapiv1.ObjectSpecHash).
OCM_OBJECT_HASH = "open-cluster-management.io/object-hash"
APPLY_PATCH = "application/apply-patch+yaml"
# OCM's WellKnownStatus rules (pkg/work/spoke/statusfeedback/rules).
WELL_KNOWN_STATUS = {
    ("apps", "Deployment"): [("ReadyReplicas", ".status.readyReplicas"), ("Replicas", ".status.replicas"),
                             ("AvailableReplicas", ".status.availableReplicas")],
    ("batch", "Job"): [("JobComplete", '.status.conditions[?(@.type=="Complete")].status'),
                       ("JobSucceeded", ".status.succeeded")],
    ("", "Pod"): [("PodReady", '.status.conditions[?(@.type=="Ready")].status'), ("PodPhase", ".status.phase")],
}
WORKERS = 8


def set_condition(conditions, new):
    """meta.SetStatusCondition for a full condition (with observedGeneration): replace the one of that type in
    place, keeping its lastTransitionTime while the status stays the same."""
    for index, old in enumerate(conditions):
        if old["type"] == new["type"]:
            new = dict(new, lastTransitionTime=old["lastTransitionTime"] if old["status"] == new["status"] else now())
            conditions[index] = new
            return
    conditions.append(dict(new, lastTransitionTime=now()))


def split_api_version(api_version):
    group, _sep, version = api_version.rpartition("/")
    return group, version


class ApplyError(LabError):
    """Applying one manifest failed; the message goes into the status."""


class Member:
    """One member API: discovery-based kind resolution and object requests."""

    def __init__(self, info):
        self.api = ApiClient.for_cluster(info)
        self.name = info["name"]
        self._resources = {}
        self._lock = threading.Lock()

    def resource(self, api_version, kind):
        """``(plural, namespaced)`` of a kind, from the member's discovery API (cached per group version)."""
        with self._lock:
            if api_version not in self._resources:
                path = "/api/v1" if api_version == "v1" else "/apis/" + api_version
                try:
                    found = self.api.get(path)["resources"]
                except ApiError as exc:
                    if exc.status != 404:
                        raise
                    found = []
                self._resources[api_version] = dict((r["kind"], (r["name"], r["namespaced"]))
                                                    for r in found if "/" not in r["name"])
            known = self._resources[api_version]
        if kind not in known:
            # A CRD may have been added since; forget the group version so the next attempt rereads it.
            with self._lock:
                self._resources.pop(api_version, None)
            raise ApplyError('no matches for kind "%s" in version "%s"' % (kind, api_version))
        return known[kind]

    def path(self, api_version, kind, namespace, name=None):
        plural, namespaced = self.resource(api_version, kind)
        base = "/api/v1" if api_version == "v1" else "/apis/" + api_version
        if namespaced:
            base += "/namespaces/" + quote(namespace or "default", safe="")
        return base + "/" + plural + ("/" + quote(name, safe="") if name else "")

    def get(self, path):
        return get_or_none(self.api, path)

    def delete(self, path):
        try:
            self.api.request("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"})
        except ApiError as exc:
            if exc.status != 404:
                raise


def _jsonpath(obj, path):
    """Value at a simple JSON path (``.status.a.b`` or ``.status.conditions[?(@.type=="X")].status``)."""
    value = obj
    for part in path.lstrip(".").split("."):
        if "[?(@." in part:
            field, _sep, rest = part.partition("[?(@.")
            key, _eq, wanted = rest.rstrip(")]").partition("==")
            items = (value or {}).get(field) or []
            value = next((i for i in items if str(i.get(key)) == wanted.strip('"')), None)
        elif isinstance(value, dict):
            value = value.get(part)
        else:
            return None
    return value


def _feedback(obj, rules, group, kind):
    """OCM status feedback values and the StatusFeedbackSynced condition for one object."""
    if not rules:
        return [], {"type": "StatusFeedbackSynced", "status": "True", "reason": "NoStatusFeedbackSynced", "message": ""}
    values, errors = [], []
    for rule in rules:
        paths = WELL_KNOWN_STATUS.get((group, kind), []) if rule["type"] == "WellKnownStatus" else \
            [(p["name"], p["path"]) for p in rule.get("jsonPaths") or []]
        for name, path in paths:
            value = _jsonpath(obj, path if path.startswith(".status") else ".status" + path)
            if value is None:
                continue
            if isinstance(value, bool):
                values.append({"name": name, "fieldValue": {"type": "Boolean", "boolean": value}})
            elif isinstance(value, int):
                values.append({"name": name, "fieldValue": {"type": "Integer", "integer": value}})
            elif isinstance(value, str):
                values.append({"name": name, "fieldValue": {"type": "String", "string": value}})
            else:
                errors.append("the value of path %s is not a scalar" % path)
    if errors:
        return values, {"type": "StatusFeedbackSynced", "status": "False", "reason": "StatusFeedbackSyncFailed",
                        "message": "Sync status feedback failed with error %s" % "; ".join(errors)}
    return values, {"type": "StatusFeedbackSynced", "status": "True", "reason": "StatusFeedbackSynced", "message": ""}


def _karmada_health(obj):
    """Karmada's default health rules: Deployment and Pod; kinds without a rule are healthy."""
    status = obj.get("status") or {}
    if obj["kind"] == "Deployment":
        replicas = (obj.get("spec") or {}).get("replicas", 1)
        healthy = (status.get("observedGeneration") == obj["metadata"].get("generation")
                   and status.get("updatedReplicas", 0) == replicas and status.get("availableReplicas", 0) == replicas)
        return "Healthy" if healthy else "Unhealthy"
    if obj["kind"] == "Pod":
        ready = condition_true(obj, "Ready")
        return "Healthy" if status.get("phase") == "Succeeded" or (status.get("phase") == "Running" and ready) else "Unhealthy"
    return "Healthy"


def _karmada_reflect(obj):
    """Karmada's reflected status: a Deployment's replica counts, the whole status of other kinds."""
    status = obj.get("status")
    if obj["kind"] == "Deployment" and status is not None:
        keys = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas", "observedGeneration")
        return dict((k, status[k]) for k in keys if k in status)
    return status


def object_hash(manifest):
    """Hash of a manifest as applied: OCM skips an update when the object carries the same hash."""
    return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()


def _content(obj):
    """An object without metadata and status."""
    return dict((k, v) for k, v in obj.items() if k not in ("metadata", "status"))


def _merged_metadata(existing, manifest):
    """The existing metadata with the manifest's labels and annotations merged in."""
    metadata = copy.deepcopy(existing["metadata"])
    for key in ("labels", "annotations"):
        wanted = (manifest.get("metadata") or {}).get(key)
        if wanted:
            metadata[key] = dict(metadata.get(key) or {}, **wanted)
    return metadata


class WorkAgent(Simulation):
    """Simulated agent for ``clusters`` (``{cluster name: lab member info}``) of one engine, on one hub."""

    name = "sim-work-agent"

    def __init__(self, hub, engine, clusters, interval=1.0, karmada_agent_runs=None):
        if engine not in WORKS:
            raise ValueError("engine must be ocm or karmada, got %r" % engine)
        super().__init__(interval)
        self.name = "%s-%s" % (self.name, engine)
        self.hub = ApiClient.for_cluster(hub)
        self.engine = engine
        members = {}
        self.members = {}
        for cluster, info in clusters.items():
            self.members[cluster] = members.setdefault(info["server"], Member(info))
        self.namespaces = dict((cluster if engine == "ocm" else "karmada-es-" + cluster, cluster) for cluster in clusters)
        self._applied = {}        # OCM: (namespace, work) -> {(apiVersion, kind, namespace, name): resource meta}
        self._versions = {}       # Karmada: (member server, object path) -> (manifest hash, resourceVersion written)
        self._pool = ThreadPoolExecutor(WORKERS)
        self.karmada_agent_runs = karmada_agent_runs  # None: every Pull cluster's agent counts as running

    def stop(self, timeout=10):
        super().stop(timeout)
        self._pool.shutdown()

    def sync(self):
        """One pass over every work of the served clusters, concurrently as one agent per cluster would."""
        group_version, plural = WORKS[self.engine]
        works = [w for w in self.hub.get("%s/%s" % (group_version, plural))["items"]
                 if w["metadata"]["namespace"] in self.namespaces]
        if self.engine == "karmada":
            ready = set(c["metadata"]["name"] for c in self.hub.get(KARMADA_CLUSTERS)["items"]
                        if condition_true(c, "Ready") and self._executes(c))
            works = [w for w in works if self.namespaces[w["metadata"]["namespace"]] in ready]
        for future in [self._pool.submit(self._handle, w) for w in works]:
            future.result()
        self.status = "%d works of %d clusters handled" % (len(works), len(self.namespaces))

    def _executes(self, cluster):
        """Whether Karmada's execution controller of ``cluster`` runs: karmada-controller-manager's for a Push cluster
        (always, in the lab), the cluster's own karmada-agent for a Pull cluster."""
        if (cluster.get("spec") or {}).get("syncMode") != "Pull" or self.karmada_agent_runs is None:
            return True
        return self.karmada_agent_runs(cluster["metadata"]["name"])

    def _handle(self, work):
        try:
            (self._ocm if self.engine == "ocm" else self._karmada)(work)
        except ApiError as exc:
            if exc.status not in (404, 409):  # gone or changed meanwhile: the next pass sees the new state
                raise

    def _work_path(self, work, subresource=None):
        group_version, plural = WORKS[self.engine]
        path = "%s/namespaces/%s/%s/%s" % (group_version, work["metadata"]["namespace"], plural, work["metadata"]["name"])
        return path + ("/" + subresource if subresource else "")

    def _set_finalizers(self, work, finalizers):
        return self.hub.patch(self._work_path(work), {"metadata": {
            "finalizers": finalizers, "resourceVersion": work["metadata"]["resourceVersion"]}})

    def _write_status(self, work, status):
        if status != (work.get("status") or {}):
            self.hub.patch(self._work_path(work, "status"), {"status": status})

    # -- OCM --------------------------------------------------------------------------------------

    def _ocm(self, work):
        meta = work["metadata"]
        key = (meta["namespace"], meta["name"])
        member = self.members[self.namespaces[meta["namespace"]]]
        finalizers = meta.get("finalizers") or []
        if meta.get("deletionTimestamp"):
            if OCM_FINALIZER in finalizers and self._ocm_cleanup(member, self._ocm_targets(member, work)):
                self._set_finalizers(work, [f for f in finalizers if f != OCM_FINALIZER])
                self._applied.pop(key, None)
            return
        if OCM_FINALIZER not in finalizers:
            work = self._set_finalizers(work, finalizers + [OCM_FINALIZER])
        spec = work["spec"]
        generation = work["metadata"].get("generation")
        previous = self._applied.get(key, {})
        applied, manifest_status = {}, []
        old = dict((m["resourceMeta"].get("ordinal"), m) for m in
                   ((work.get("status") or {}).get("resourceStatus") or {}).get("manifests") or [])
        for ordinal, manifest in enumerate(spec["workload"].get("manifests") or []):
            group, version = split_api_version(manifest.get("apiVersion", ""))
            metadata = manifest.get("metadata") or {}
            resource_meta = {"ordinal": ordinal, "group": group, "version": version, "kind": manifest.get("kind", ""),
                             "resource": "", "name": metadata.get("name", ""), "namespace": metadata.get("namespace", "")}
            conditions = copy.deepcopy((old.get(ordinal) or {}).get("conditions") or [])
            try:
                resource_meta["resource"] = member.resource(manifest["apiVersion"], manifest["kind"])[0]
                strategy = self._ocm_strategy(spec, resource_meta)
                obj = self._ocm_apply(member, manifest, strategy)
                if strategy["type"] != "ReadOnly":
                    applied[(manifest["apiVersion"], manifest["kind"], resource_meta["namespace"], resource_meta["name"])] = resource_meta
                set_condition(conditions, {"type": "Applied", "status": "True", "reason": "AppliedManifestComplete",
                                           "message": "Apply manifest complete", "observedGeneration": generation})
            except (ApplyError, ApiError) as exc:
                obj = None
                set_condition(conditions, {"type": "Applied", "status": "False", "reason": "AppliedManifestFailed",
                                           "message": "Failed to apply manifest: %s" % exc, "observedGeneration": generation})
            feedback = []
            if obj is None:
                set_condition(conditions, {"type": "Available", "status": "False", "reason": "ResourceNotAvailable",
                                           "message": "Resource is not available"})
            else:
                set_condition(conditions, {"type": "Available", "status": "True", "reason": "ResourceAvailable",
                                           "message": "Resource is available"})
                config = self._ocm_config(spec, resource_meta)
                feedback, synced = _feedback(obj, (config or {}).get("feedbackRules"), group, manifest["kind"])
                set_condition(conditions, synced)
            manifest_status.append({"resourceMeta": resource_meta, "conditions": conditions,
                                    "statusFeedback": {"values": feedback} if feedback else {}})
        stale = dict((k, v) for k, v in previous.items() if k not in applied)
        if stale:
            self._ocm_cleanup(member, self._owned(work, stale))
        self._applied[key] = applied
        work_conditions = copy.deepcopy((work.get("status") or {}).get("conditions") or [])
        all_applied = all(condition_true({"status": m}, "Applied") for m in manifest_status)
        set_condition(work_conditions, {
            "type": "Applied", "status": "True" if all_applied else "False", "observedGeneration": generation,
            "reason": "AppliedManifestWorkComplete" if all_applied else "AppliedManifestWorkFailed",
            "message": "Apply manifest work complete" if all_applied else "Failed to apply manifest work"})
        set_condition(work_conditions, self._ocm_available(manifest_status, generation))
        self._write_status(work, {"conditions": work_conditions, "resourceStatus": {"manifests": manifest_status}})

    @staticmethod
    def _ocm_available(manifests, generation):
        states = [next((c["status"] for c in m["conditions"] if c["type"] == "Available"), None) for m in manifests]
        total = len(manifests)
        if states.count("False"):
            return {"type": "Available", "status": "False", "reason": "ResourcesNotAvailable", "observedGeneration": generation,
                    "message": "%d of %d resources are not available" % (states.count("False"), total)}
        if states.count("Unknown") or not states.count("True"):
            return {"type": "Available", "status": "Unknown", "reason": "ResourcesStatusUnknown", "observedGeneration": generation,
                    "message": "%d of %d resources have unknown status" % (states.count("Unknown"), total)}
        return {"type": "Available", "status": "True", "reason": "ResourcesAvailable", "observedGeneration": generation,
                "message": "All resources are available"}

    @staticmethod
    def _ocm_config(spec, resource_meta):
        for config in spec.get("manifestConfigs") or []:
            ident = config["resourceIdentifier"]
            if (ident.get("group", ""), ident["resource"], ident.get("namespace", ""), ident["name"]) == (
                    resource_meta["group"], resource_meta["resource"], resource_meta["namespace"], resource_meta["name"]):
                return config
        return None

    def _ocm_strategy(self, spec, resource_meta):
        return (self._ocm_config(spec, resource_meta) or {}).get("updateStrategy") or {"type": "Update"}

    @staticmethod
    def _ocm_apply(member, manifest, strategy):
        metadata = manifest.get("metadata") or {}
        path = member.path(manifest["apiVersion"], manifest["kind"], metadata.get("namespace"), metadata["name"])
        if strategy["type"] == "ServerSideApply":
            ssa = strategy.get("serverSideApply") or {}
            query = urlencode({"fieldManager": ssa.get("fieldManager") or "work-agent", "force": "true" if ssa.get("force") else "false"})
            return member.api.request("PATCH", path + "?" + query, manifest, content_type=APPLY_PATCH)
        existing = member.get(path)
        if strategy["type"] == "ReadOnly":
            if existing is None:
                raise ApplyError('%s "%s" not found' % (manifest["kind"], metadata["name"]))
            return existing
        required = copy.deepcopy(manifest)
        required.setdefault("metadata", {}).setdefault("annotations", {})[OCM_OBJECT_HASH] = object_hash(manifest)
        if existing is None:
            return member.api.post(path.rsplit("/", 1)[0], required)
        if strategy["type"] == "CreateOnly":
            return existing
        if (existing["metadata"].get("annotations") or {}).get(OCM_OBJECT_HASH) == object_hash(manifest):
            return existing
        replacement = dict(_content(required), metadata=_merged_metadata(existing, required))
        if "status" in existing:
            replacement["status"] = existing["status"]
        return member.api.put(path, replacement)

    def _ocm_targets(self, member, work):
        """The applied objects of a work being deleted, by its manifests and the in-memory bookkeeping."""
        targets = dict(self._applied.get((work["metadata"]["namespace"], work["metadata"]["name"]), {}))
        for ordinal, manifest in enumerate(work["spec"]["workload"].get("manifests") or []):
            metadata = manifest.get("metadata") or {}
            group, version = split_api_version(manifest.get("apiVersion", ""))
            try:
                resource = member.resource(manifest["apiVersion"], manifest["kind"])[0]
            except (ApplyError, KeyError):
                continue
            meta = {"ordinal": ordinal, "group": group, "version": version, "kind": manifest["kind"], "resource": resource,
                    "name": metadata.get("name", ""), "namespace": metadata.get("namespace", "")}
            if self._ocm_strategy(work["spec"], meta)["type"] != "ReadOnly":
                targets[(manifest["apiVersion"], manifest["kind"], meta["namespace"], meta["name"])] = meta
        return self._owned(work, targets)

    @staticmethod
    def _owned(work, targets):
        """The targets the work's delete option lets the agent delete."""
        option = work["spec"].get("deleteOption") or {}
        policy = option.get("propagationPolicy") or "Foreground"
        if policy == "Orphan":
            return {}
        if policy == "SelectivelyOrphan":
            rules = set((r.get("group", ""), r["resource"], r.get("namespace", ""), r["name"])
                        for r in (option.get("selectivelyOrphans") or {}).get("orphaningRules") or [])
            return dict((k, m) for k, m in targets.items()
                        if (m["group"], m["resource"], m["namespace"], m["name"]) not in rules)
        return targets

    @staticmethod
    def _ocm_cleanup(member, targets):
        """Delete the targets; True once none of them exists any more."""
        gone = True
        for (api_version, kind, namespace, name) in targets:
            path = member.path(api_version, kind, namespace, name)
            member.delete(path)
            gone = gone and member.get(path) is None
        return gone

    # -- Karmada ----------------------------------------------------------------------------------

    def _karmada(self, work):
        meta = work["metadata"]
        member = self.members[self.namespaces[meta["namespace"]]]
        manifests = work["spec"]["workload"].get("manifests") or []
        conditions = copy.deepcopy((work.get("status") or {}).get("conditions") or [])
        if meta.get("deletionTimestamp"):
            finalizers = meta.get("finalizers") or []
            if KARMADA_FINALIZER in finalizers:
                if condition_true(work, "Applied") and not work["spec"].get("preserveResourcesOnDeletion"):
                    for manifest in manifests:
                        metadata = manifest.get("metadata") or {}
                        member.delete(member.path(manifest["apiVersion"], manifest["kind"], metadata.get("namespace"), metadata["name"]))
                self._set_finalizers(work, [f for f in finalizers if f != KARMADA_FINALIZER])
            return
        if work["spec"].get("suspendDispatching"):
            return
        set_condition(conditions, {"type": "Dispatching", "status": "True", "reason": "Dispatching",
                                   "message": "Work is being dispatched to member clusters."})
        errors, statuses = [], []
        for ordinal, manifest in enumerate(manifests):
            try:
                obj = self._karmada_apply(member, manifest)
            except (ApplyError, ApiError) as exc:
                errors.append(str(exc))
                continue
            annotations = obj["metadata"].get("annotations") or {}
            if all(annotations.get(a) for a in KARMADA_WORK_ANNOTATIONS):  # the status controller's filter
                group, version = split_api_version(obj["apiVersion"])
                identifier = {"ordinal": ordinal, "group": group, "version": version, "kind": obj["kind"],
                              "namespace": obj["metadata"].get("namespace", ""), "name": obj["metadata"]["name"]}
                statuses.append({"identifier": dict((k, v) for k, v in identifier.items() if v != ""),
                                 "status": _karmada_reflect(obj), "health": _karmada_health(obj)})
        if errors:
            set_condition(conditions, {"type": "Applied", "status": "False", "reason": "AppliedFailed",
                                       "message": "Failed to apply all manifests (%d/%d): %s" % (
                                           len(manifests) - len(errors), len(manifests), ", ".join(errors))})
        else:
            set_condition(conditions, {"type": "Applied", "status": "True", "reason": "AppliedSuccessful",
                                       "message": "Manifest has been successfully applied"})
        status = {"conditions": conditions}
        if statuses:
            status["manifestStatuses"] = statuses
        self._write_status(work, status)

    def _karmada_apply(self, member, manifest):
        """Create the object, or update it when the manifest or the object changed since the last write.

        Like Karmada's object watcher, the agent remembers the resourceVersion it wrote with the hash of
        the manifest, and leaves an object alone while both are the same.
        """
        metadata = manifest.get("metadata") or {}
        path = member.path(manifest["apiVersion"], manifest["kind"], metadata.get("namespace"), metadata["name"])
        existing = member.get(path)
        record_key = (member.api.server, path)
        if existing is None:
            written = member.api.post(path.rsplit("/", 1)[0], manifest)
        elif self._versions.get(record_key) == (object_hash(manifest), existing["metadata"]["resourceVersion"]):
            return existing
        else:
            desired = copy.deepcopy(manifest)
            desired["metadata"] = _merged_metadata(existing, manifest)
            if manifest["kind"] == "Pod":  # Karmada's retention: fields the member's controllers own
                spec, observed = desired.setdefault("spec", {}), existing.get("spec") or {}
                for key in ("nodeName", "serviceAccountName", "volumes"):
                    if key in observed:
                        spec[key] = observed[key]
                for container, current in zip(spec.get("containers") or [], observed.get("containers") or []):
                    if "volumeMounts" in current:
                        container["volumeMounts"] = current["volumeMounts"]
            if "status" in existing:
                desired["status"] = existing["status"]
            written = member.api.put(path, desired)
        self._versions[record_key] = (object_hash(manifest), written["metadata"]["resourceVersion"])
        return written


def main(argv=None):
    def add_arguments(parser):
        parser.add_argument("--engine", required=True, choices=sorted(WORKS))
        parser.add_argument("--serve", action="append", metavar="NAME",
                            help="a cluster name whose works the agent applies to --cluster (repeatable; "
                                 "default: the --cluster name itself)")
        parser.add_argument("--interval", type=float, default=1.0, help="seconds between passes")

    def build(fleet, args):
        served = dict((name, fleet.clusters[args.cluster]) for name in args.serve or [args.cluster])
        return [WorkAgent(fleet.clusters[fleet.hub], args.engine, served, args.interval)]

    return run_cli(__doc__.split("\n\n", 1)[0], add_arguments, build, argv)


if __name__ == "__main__":
    sys.exit(main())
