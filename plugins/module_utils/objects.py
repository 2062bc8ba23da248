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

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# Every kind k8s_objects can handle, by (apiVersion, kind).
KINDS = dict(resources.KINDS)
KINDS.update(resources.kinds_by_type(karmada.CLUSTER, karmada.WORK, ocm.MANAGED_CLUSTER, ocm.MANIFEST_WORK,
                                     ocm.CLUSTER_MANAGER, ocm.KLUSTERLET))
EXISTING = ("update", "keep")


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
    items = []
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
        items.append((kind, manifest))
    return items


def expand(manifests):
    """The manifests with the items of ``kind: List`` documents in their place."""
    for manifest in manifests:
        if isinstance(manifest, dict) and manifest.get("kind") == "List" and "items" in manifest:
            yield from manifest["items"] or []
        else:
            yield manifest


def apply(cluster, items, check_mode=False, existing="update", wait=False, timeout=120, conditions=None):
    """Ensure every object, in order; return the :class:`resources.Outcome` list.

    ``existing="keep"`` creates missing objects and leaves existing ones as they are (the way Helm
    treats the CRDs of a chart). A CRD that was created or changed is waited for until it is
    Established before the next object, since objects of its kind may follow. With ``wait``,
    Deployments must then report ``Available`` for their current generation, CRDs ``Established``
    and objects of other kinds every ``(type, status)`` of ``conditions``.
    """
    outcomes = []
    for kind, manifest in items:
        metadata = manifest["metadata"]
        current = resources.get(cluster, kind, metadata["name"], metadata.get("namespace")) if existing == "keep" else None
        if current is not None:
            outcome = resources.Outcome(kind, metadata["name"], metadata.get("namespace"), "unchanged", current, current)
        else:
            outcome = resources.ensure(cluster, kind, manifest, check_mode)
            if outcome.action == "updated" and resources.presentable(outcome.before) == resources.presentable(outcome.after):
                # The manifest differs only in form (a quantity "1000m" is stored as "1"): nothing changed.
                outcome.action = "unchanged"
        outcomes.append(outcome)
        if kind is resources.CRD and outcome.changed and not check_mode:
            resources.wait_for_condition(cluster, kind, metadata["name"], condition_type="Established", timeout=timeout)
    if wait and not check_mode:
        for kind, manifest in items:
            wait_ready(cluster, kind, manifest, timeout, conditions or [])
    return outcomes


def wait_ready(cluster, kind, manifest, timeout, conditions=()):
    """Wait until the object is ready for its current generation.

    A Deployment is ready when ``Available`` (with its replicas counted), a CRD when ``Established``,
    any other object when it has each ``(type, status)`` of ``conditions`` (none: no wait). A
    ``status.observedGeneration`` older than the object's generation means its controller has not
    seen the current spec yet, so the conditions are not trusted.
    """
    name, namespace = manifest["metadata"]["name"], manifest["metadata"].get("namespace")
    if kind is resources.CRD:
        wanted, what = [("Established", "True")], "to be Established"
    elif kind is resources.DEPLOYMENT:
        wanted, what = [("Available", "True")], "to be Available"
    elif conditions:
        wanted = list(conditions)
        what = "to have %s" % ", ".join("%s=%s" % c for c in wanted)
    else:
        return

    def ready():
        obj = resources.get(cluster, kind, name, namespace)
        if obj is None:
            return False, "the object does not exist"
        status = obj.get("status") or {}
        generation = obj["metadata"].get("generation")
        if "observedGeneration" in status and generation and status["observedGeneration"] < generation:
            return False, "its controller has not yet seen generation %s" % generation
        if kind is resources.DEPLOYMENT and "observedGeneration" not in status:
            return False, "the deployment controller has not yet seen generation %s" % generation
        for condition_type, condition_status in wanted:
            item = resources.condition(obj, condition_type)
            if item is None or item.get("status") != condition_status:
                detail = "%s=%s" % (condition_type, item.get("status") if item else "<none>")
                if item:
                    detail += " (%s: %s)" % (item.get("reason"), item.get("message"))
                if kind is resources.DEPLOYMENT:
                    detail = "%s/%s replicas available; %s" % (status.get("availableReplicas") or 0,
                                                               obj["spec"].get("replicas", 1), detail)
                return False, detail
        return True, None
    resources.wait_until(ready, timeout, "%s on %s %s" % (kind.ref(name, namespace), cluster.label, what))


def remove(cluster, items, check_mode=False, keep_unlabeled=False, wait=False, timeout=120):
    """Delete the objects in reverse order; return the :class:`resources.Outcome` list (in that order).

    ``keep_unlabeled`` leaves alone objects that lack a label their manifest sets (someone else
    created them); they are reported ``unchanged``. With ``wait`` each deletion completes (finalizers
    done) before the next object is deleted, so dependents go before what they depend on.
    """
    outcomes = []
    for kind, manifest in reversed(items):
        metadata = manifest["metadata"]
        name, namespace = metadata["name"], metadata.get("namespace")
        labels = metadata.get("labels") or {}
        if keep_unlabeled and labels:
            current = resources.get(cluster, kind, name, namespace)
            if current is not None and not resources.contains(current["metadata"].get("labels") or {}, labels):
                outcomes.append(resources.Outcome(kind, name, namespace, "unchanged", current, current))
                continue
        outcomes.append(resources.delete(cluster, kind, name, namespace, check_mode=check_mode, wait=wait, timeout=timeout))
    return outcomes


def result(outcomes):
    """The module result for the outcomes: ``changed``, ``objects`` (one line each) and the Ansible diff."""
    changed = [o for o in outcomes if o.changed]
    diff = []
    for outcome in changed:
        item = outcome.diff()
        item.update(before_header=outcome.ref, after_header=outcome.ref)
        diff.append(item)
    return dict(changed=bool(changed), objects=[o.summary() for o in outcomes], diff=diff)
