# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Applying and removing sets of manifests, such as an operator bundle: the logic of ``k8s_objects``.

Every manifest must be of a known kind (:data:`KINDS`): its path comes from the Kind, never from API
discovery. Objects are applied in the order given and removed in reverse order, so a bundle lists
namespaces and CRDs before what lives in them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# Every kind k8s_objects can handle, by (apiVersion, kind).
KINDS = dict(resources.KINDS)
KINDS.update(resources.kinds_by_type(karmada.CLUSTER, karmada.WORK, ocm.MANAGED_CLUSTER, ocm.MANIFEST_WORK,
                                     ocm.CLUSTER_MANAGER, ocm.KLUSTERLET))
EXISTING = ("update", "keep", "keep_crds")
# What an API server answers for an object it refuses as invalid (BadRequest, Invalid).
INVALID_STATUSES = (400, 422)
# The namespace every cluster has, where objects bound for a namespace not created yet are validated.
PROBE_NAMESPACE = "default"


def kind_of(manifest):
    """The :class:`resources.Kind` of a manifest; unknown kinds fail with the list of known ones."""
    key = (manifest.get("apiVersion"), manifest.get("kind"))
    kind = KINDS.get(key)
    if kind is None:
        known = ", ".join(sorted("%s %s" % k for k in KINDS))
        raise FleetError("%s (apiVersion %s) is not a kind this collection knows; known kinds: %s"
                         % (key[1], key[0], known))
    return kind


def prepare(manifests, namespace=None):
    """``[(Kind, manifest)]`` for the manifests, checked and with their namespace settled.

    ``kind: List`` documents are expanded. Namespaced objects without ``metadata.namespace`` get
    ``namespace``; cluster-scoped objects lose a namespace they should not have.
    """
    items, seen = [], {}
    for position, manifest in enumerate(expand(manifests), 1):
        if not isinstance(manifest, dict):
            raise FleetError("object %d is not a mapping but %s" % (position, type(manifest).__name__))
        missing = [k for k in ("apiVersion", "kind") if not manifest.get(k)]
        metadata = manifest.get("metadata") or {}
        if not metadata.get("name"):
            missing.append("metadata.name")
        if missing:
            raise FleetError("object %d (%s) has no %s" % (position, manifest.get("kind") or "?", ", ".join(missing)))
        kind = kind_of(manifest)
        manifest = dict(manifest, metadata=dict(metadata))
        if kind.namespaced:
            manifest["metadata"].setdefault("namespace", namespace)
            if not manifest["metadata"]["namespace"]:
                raise FleetError("%s %s needs a namespace: set metadata.namespace or the namespace option"
                                 % (kind.kind, metadata["name"]))
        else:
            manifest["metadata"].pop("namespace", None)
        ref = kind.ref(manifest["metadata"]["name"], manifest["metadata"].get("namespace"))
        if ref in seen:
            raise FleetError("objects %d and %d are the same object, %s (%s): give each object once"
                             % (seen[ref], position, ref, kind.api_version))
        seen[ref] = position
        items.append((kind, manifest))
    return items


def expand(manifests):
    """The manifests with the items of ``kind: List`` documents in their place."""
    for manifest in manifests:
        if isinstance(manifest, dict) and manifest.get("kind") == "List" and "items" in manifest:
            yield from manifest["items"] or []
        else:
            yield manifest


def apply(cluster, items, check_mode=False, existing="update", wait=False, timeout=120, conditions=None,
          interval=resources.WAIT_SLEEP):
    """Ensure every object, in order; return the :class:`resources.Outcome` list.

    Every object is first sent as a server-side dry run (:func:`validate`), so that an object the API
    server refuses stops the run before anything is written; in check mode that dry run is the run.
    An object the dry run found unchanged (just read) is not read again.
    ``existing="keep"`` creates missing objects and leaves existing ones as they are (the way Helm
    treats the CRDs of a chart); ``existing="keep_crds"`` does so for CRDs only and updates the others.
    A CRD that was created or changed is waited for until it is Established before the next object,
    since objects of its kind may follow. With ``wait``, Deployments must then report ``Available`` for
    their current generation, CRDs ``Established`` and objects of other kinds every condition of
    ``conditions`` (:func:`resources.wanted_condition` dicts), checked every ``interval`` seconds. A
    failure once writes have begun raises a :class:`FleetError` with ``changed`` and the ``objects``
    handled so far, which its message names.
    """
    planned = validate(cluster, items, existing)
    if check_mode:
        return planned
    outcomes = []
    try:
        for (kind, manifest), plan in zip(items, planned):
            outcome = plan if plan.action == "unchanged" else _ensure(cluster, kind, manifest, existing)
            outcomes.append(outcome)
            if kind is resources.CRD and outcome.changed:
                established = resources.Wait(timeout=timeout, condition=resources.wanted_condition("Established"))
                resources.wait_for_condition(cluster, kind, manifest["metadata"]["name"], wait=established)
        if wait:
            for outcome, (kind, manifest) in zip(outcomes, items):
                outcome.current = wait_ready(cluster, kind, manifest, timeout, conditions or [], interval)
    except FleetError as exc:
        raise _partial(exc, outcomes, "applied")
    return outcomes


def _ensure(cluster, kind, manifest, existing, check_mode=False):
    """``resources.ensure`` for one object, or ``unchanged`` for an existing one that ``existing`` keeps."""
    metadata = manifest["metadata"]
    kept = existing == "keep" or existing == "keep_crds" and kind is resources.CRD
    current = resources.get(cluster, kind, metadata["name"], metadata.get("namespace")) if kept else None
    if current is not None:
        return resources.Outcome(kind, metadata["name"], metadata.get("namespace"), "unchanged", current, current)
    outcome = resources.ensure(cluster, kind, manifest, check_mode)
    if outcome.action == "updated" and resources.presentable(outcome.before) == resources.presentable(outcome.after):
        # The manifest differs only in form (a quantity "1000m" is stored as "1"): nothing changed.
        outcome.action = "unchanged"
    return outcome


def validate(cluster, items, existing="update"):
    """Send every object as a server-side dry run; return the outcomes the API server predicts.

    The API server validates each object as it would store it (names, fields, admission) but writes
    nothing. Objects it refuses as invalid, and objects in a namespace that neither exists nor is
    among the objects, are collected, and the run fails naming each of them before any write; other
    failures (credentials, RBAC, an unreachable server) fail at once. An object in a namespace the
    same run creates is validated in ``default`` (:func:`_probe`) and predicted as created; one of a
    CRD the same run creates cannot be sent before the CRD exists and is predicted as created.
    """
    outcomes, refused = [], []
    planned = set(manifest["metadata"]["name"] for kind, manifest in items if kind is resources.NAMESPACE)
    exists = {}
    for position, (kind, manifest) in enumerate(items, 1):
        metadata = manifest["metadata"]
        what = "object %d (%s)" % (position, kind.ref(metadata["name"], metadata.get("namespace")))
        namespace = metadata.get("namespace") if kind.namespaced else None
        if namespace:
            if namespace not in exists:
                exists[namespace] = resources.get(cluster, resources.NAMESPACE, namespace) is not None
            if not exists[namespace] and namespace not in planned:
                refused.append("%s: namespace %s does not exist on %s and is not among the objects"
                               % (what, namespace, cluster.label))
                continue
            if not exists[namespace]:
                problem = _probe(cluster, kind, manifest)
                if problem:
                    refused.append("%s: %s" % (what, problem))
                outcomes.append(resources.Outcome(kind, metadata["name"], namespace, "created", None, manifest))
                continue
        try:
            outcomes.append(_ensure(cluster, kind, manifest, existing, check_mode=True))
        except ClusterError as exc:
            if exc.status not in INVALID_STATUSES:
                raise FleetError("%s; nothing was written (%s)" % (exc.msg, what), **exc.details)
            refused.append("%s: %s" % (what, exc.msg))
    if refused:
        raise FleetError("nothing was written: %d of %d objects cannot be applied (checked with a server-side dry run "
                         "first): %s" % (len(refused), len(items), "; ".join(refused)), changed=False)
    return outcomes


def _probe(cluster, kind, manifest):
    """Why the API server refuses ``manifest`` as invalid, found by a dry run in namespace ``default``; or None.

    For an object whose namespace the same run creates: the API server answers a request into a
    namespace that does not exist with 404 before it validates the object, so it is validated in
    ``default``, which every cluster has. Only an invalid object counts; anything else (say, the kind
    of a CRD the same run creates) is left to the real write.
    """
    probe = dict(manifest, apiVersion=kind.api_version, kind=kind.kind,
                 metadata=dict(manifest["metadata"], namespace=PROBE_NAMESPACE))
    try:
        cluster.request("POST", kind.path(PROBE_NAMESPACE), body=probe, query={"dryRun": "All"})
    except ClusterError as exc:
        if exc.status in INVALID_STATUSES:
            return "%s (validated in namespace %s, since %s does not exist yet)" % (
                exc.msg, PROBE_NAMESPACE, manifest["metadata"]["namespace"])
    return None


def _partial(exc, outcomes, verb):
    """``exc`` as the failure of a run that may have written objects: ``changed`` and what was done, named."""
    return resources.failed_after(exc, [o.summary() for o in outcomes if o.changed], verb,
                                  objects=[o.summary() for o in outcomes])


def wait_ready(cluster, kind, manifest, timeout, conditions=(), interval=resources.WAIT_SLEEP):
    """Wait until the object is ready for its current generation; return it as last read (None: not waited for).

    A Deployment is ready when ``Available`` (with its replicas counted), a CRD when ``Established``,
    any other object when it has each of ``conditions`` (:func:`resources.wanted_condition` dicts;
    none: no wait). A ``status.observedGeneration`` older than the object's generation means its
    controller has not seen the current spec yet, so the conditions are not trusted.
    """
    name, namespace = manifest["metadata"]["name"], manifest["metadata"].get("namespace")
    if kind is resources.CRD:
        wanted = [resources.wanted_condition("Established")]
        what = "to be Established"
    elif kind is resources.DEPLOYMENT:
        wanted = [resources.wanted_condition("Available")]
        what = "to be Available"
    elif conditions:
        wanted = list(conditions)
        what = "to have %s" % ", ".join(resources.describe_condition(c) for c in wanted)
    else:
        return None

    def ready(obj):
        if obj is None:
            return False, "the object does not exist"
        status = obj.get("status") or {}
        generation = obj["metadata"].get("generation")
        if "observedGeneration" in status and generation and status["observedGeneration"] < generation:
            return False, "its controller has not yet seen generation %s" % generation
        if kind is resources.DEPLOYMENT and "observedGeneration" not in status:
            return False, "the deployment controller has not yet seen generation %s" % generation
        for condition in wanted:
            done, detail = resources.condition_met(obj, condition)
            if not done:
                if kind is resources.DEPLOYMENT:
                    detail = "%s/%s replicas available; %s" % (status.get("availableReplicas") or 0,
                                                               obj["spec"].get("replicas", 1), detail)
                return False, detail
        return True, None
    return resources.watch_until(cluster, kind, name, ready, resources.Wait(timeout=timeout, interval=interval),
                                 "%s on %s %s" % (kind.ref(name, namespace), cluster.label, what), namespace=namespace)


def remove(cluster, items, check_mode=False, keep_unlabeled=False, wait=False, timeout=120,
           interval=resources.WAIT_SLEEP):
    """Delete the objects in reverse order; return the :class:`resources.Outcome` list (in that order).

    ``keep_unlabeled`` leaves alone objects that lack a label their manifest sets (someone else
    created them); they are reported ``unchanged``. With ``wait`` each deletion completes (finalizers
    done, checked every ``interval`` seconds) before the next object is deleted, so dependents go
    before what they depend on. A failure after deletions began says which objects were deleted.
    """
    outcomes = []
    try:
        for kind, manifest in reversed(items):
            metadata = manifest["metadata"]
            name, namespace = metadata["name"], metadata.get("namespace")
            labels = metadata.get("labels") or {}
            if keep_unlabeled and labels:
                current = resources.get(cluster, kind, name, namespace)
                if current is not None and not resources.contains(current["metadata"].get("labels") or {}, labels):
                    outcomes.append(resources.Outcome(kind, name, namespace, "unchanged", current, current))
                    continue
            resources.delete(cluster, kind, name, namespace, check_mode, resources.Wait(wait, timeout, interval),
                             record=outcomes.append)
    except FleetError as exc:
        raise _partial(exc, outcomes, "deleted")
    return outcomes


# kubernetes.core's k8s reports how it handled each object as ``method``.
_METHODS = {"created": "create", "updated": "update", "unchanged": "update", "deleted": "delete", "absent": "delete"}


def result(outcomes, state="present"):
    """The module result: ``changed``, ``objects`` (one line each), the Ansible diff and the objects.

    The objects are returned as kubernetes.core's k8s returns them: for one object ``method`` and
    ``result`` (the object); for several ``result.results``, one ``{changed, method, result}`` each.
    An object is as the API server stored it (or would store it, in check mode; as last read when
    waited for), server-owned metadata left out and Secret values masked; ``{}`` once deleted.
    """
    changed = [o for o in outcomes if o.changed]
    diff = []
    for outcome in changed:
        item = outcome.diff()
        item.update(before_header=outcome.ref, after_header=outcome.ref)
        diff.append(item)
    results = []
    for outcome in outcomes:
        method = "delete" if state == "absent" else _METHODS[outcome.action]
        obj = {} if method == "delete" and outcome.action != "unchanged" else outcome.current or outcome.after
        results.append({"changed": outcome.changed, "method": method, "result": resources.presentable(obj) or {}})
    done = dict(changed=bool(changed), objects=[o.summary() for o in outcomes], diff=diff)
    if len(results) == 1:
        done.update(method=results[0]["method"], result=results[0]["result"])
    else:
        done["result"] = {"results": results}
    return done
