# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pruning the hub: removing the member clusters the inventory no longer lists, or that have not answered for a long
time, hub side only (docs/maintenance.md, module cluster_prune).

:func:`facts` reads what the decision needs from a member object and its agent's Lease; :func:`decide` is a pure
function of those facts, the task's options and the time; :func:`prune` reads the hub, decides for every member
object and removes those decided so with the hub-side steps of the engines' own removal: ``join.unjoin`` without
member credentials for a Karmada Push member, :func:`register_karmada.remove_from_hub` for a Pull member,
:func:`register_ocm.remove_from_hub` for an OCM cluster (:data:`REMOVALS`, one per engine).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.multicluster.fleet.plugins.module_utils import diagnose, engines, join, karmada, register_karmada, \
    register_ocm, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.diagnose import parse_time
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.lease_lock import LEASE
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import CLUSTER_ID_ANNOTATION
from ansible_collections.multicluster.fleet.plugins.module_utils.register_report import Report

NOT_LISTED = "not_listed"
UNREACHABLE = "unreachable"


def facts(engine, obj, lease):
    """What :func:`decide` needs of member object ``obj`` and its agent's Lease (None: none, or a Push member)."""
    engine = engines.get(engine)
    metadata = obj["metadata"]
    condition = resources.condition(obj, engine.ready_condition["type"]) or {}
    push = engine.is_push(obj)
    found = {"name": metadata["name"], "marked": bool((metadata.get("annotations") or {}).get(CLUSTER_ID_ANNOTATION)),
             "push": push, "ready": condition.get("status") == "True",
             "ready_since": condition.get("lastTransitionTime") or metadata.get("creationTimestamp"),
             "lease_renewed": None, "lease_grace_seconds": None}
    if lease is not None and not push:
        found.update(lease_renewed=(lease.get("spec") or {}).get("renewTime"),
                     lease_grace_seconds=engine.lease_grace_seconds(obj, lease))
    return found


def silence(cluster, now):
    """``(seconds, evidence)``: how long the hub has not heard from ``cluster`` (its :func:`facts`) at ``now``, None
    while the hub counts it as answering, and what says so.

    A cluster whose agent renews a Lease answers while the Lease is renewed within the engine's grace; silent since the
    last renewal. Without a Lease (a Karmada Push member, an agent that never wrote one) the hub's readiness condition
    tells: ready, it answers; otherwise silent since the condition last changed.
    """
    if cluster["lease_renewed"]:
        renewed = parse_time(cluster["lease_renewed"])
        seconds = int((now - renewed).total_seconds())
        if seconds <= cluster["lease_grace_seconds"]:
            return None, "its agent renewed its Lease %ss ago" % max(seconds, 0)
        return seconds, "its agent last renewed its Lease at %s" % cluster["lease_renewed"]
    if cluster["ready"]:
        return None, "the hub reports it ready"
    since = parse_time(cluster["ready_since"])
    if since is None:
        return None, "the hub reports it not ready, since an unknown time"
    return int((now - since).total_seconds()), "the hub has reported it not ready since %s" % cluster["ready_since"]


def decide(cluster, listed, unreachable_after, force, unmarked, now, confirmed=None):
    """The decision on ``cluster`` (its :func:`facts`) at ``now``: ``dict(name, action, reasons, why, silent_seconds)``,
    ``action`` ``remove`` or ``keep``.

    A candidate is a cluster not in ``listed`` (None: no such rule) or silent (:func:`silence`) for longer than
    ``unreachable_after`` seconds (None: no such rule). A candidate is kept when this collection did not register it
    (no :data:`ocm.CLUSTER_ID_ANNOTATION`) unless ``unmarked``, and when the hub still counts it as answering unless
    ``force``: its agent would go on running, and register it again. It is kept, too, when ``confirmed`` (None: no such
    rule) does not name it: the clusters a listing named for removal, so that one that became a candidate since is not
    removed without having been listed.
    """
    name = cluster["name"]
    silent, heard = silence(cluster, now)
    reasons = []
    if listed is not None and name not in listed:
        reasons.append(NOT_LISTED)
    if unreachable_after is not None and silent is not None and silent > unreachable_after:
        reasons.append(UNREACHABLE)
    decision = {"name": name, "reasons": reasons, "silent_seconds": silent, "action": "keep"}
    said = []
    if NOT_LISTED in reasons:
        said.append("not listed in the inventory")
    if UNREACHABLE in reasons:
        said.append("silent for %ss, longer than %ss" % (silent, unreachable_after))
    if not reasons:
        decision["why"] = "%s; %s" % ("listed" if listed is not None and name in listed else "not a candidate", heard)
    elif not cluster["marked"] and not unmarked:
        decision["why"] = ("%s, but not registered by this collection (no %s annotation): set unmarked=true to prune it "
                           "too" % (", ".join(said), CLUSTER_ID_ANNOTATION))
    elif silent is None and not force:
        decision["why"] = ("%s, but %s, so it still answers (an agent would register it again): detach it with its "
                           "credentials (detach.yml), or set force=true to remove it from the hub anyway"
                           % (", ".join(said), heard))
    elif confirmed is not None and name not in confirmed:
        decision["why"] = ("%s; %s, but it is not among the clusters confirmed for removal (a candidate since they were "
                           "listed): list again" % (", ".join(said), heard))
    else:
        decision.update(action="remove", why="%s; %s" % (", ".join(said), heard))
    return decision


def _deleter(params, check_mode, report):
    """The ``delete`` of the engines' hub-side removal steps: each deletion recorded in ``report`` before its wait; a
    wait that times out removes the object's finalizers with ``force`` (an agent that never answers never removes
    them), and otherwise fails saying so."""
    def delete(cluster, kind, name, namespace=None, wait=False):
        outcome = resources.delete(cluster, kind, name, namespace, check_mode, record=lambda o: report.add(cluster, o))
        if not (wait and outcome.changed and not check_mode):
            return outcome
        try:
            resources.wait_until_gone(cluster, kind, name, namespace, timeout=params["wait_timeout"], interval=params["wait_sleep"])
        except WaitTimeout as exc:
            if not params["force"]:
                raise WaitTimeout("%s. Its finalizers are removed by the cluster's agent or the engine's controllers; "
                                  "for a cluster that will never answer, run again with force=true to remove them"
                                  % exc.msg, **exc.details)
            obj = resources.get(cluster, kind, name, namespace)
            released = obj and join.remove_finalizers(cluster, kind, obj)
            if released:
                report.add(cluster, released)
            resources.wait_until_gone(cluster, kind, name, namespace, timeout=params["wait_timeout"], interval=params["wait_sleep"])
        return outcome
    return delete


def _remove_karmada(hub, engine, obj, params, check_mode, warn):
    name = obj["metadata"]["name"]
    if engine.is_push(obj):
        secret_ref = (obj.get("spec") or {}).get("secretRef") or {}
        return join.unjoin(hub, None, dict(cluster_name=name, wait_timeout=params["wait_timeout"],
                                           wait_sleep=params["wait_sleep"], force=params["force"],
                                           cluster_namespace=secret_ref.get("namespace") or karmada.DEFAULT_CLUSTER_NAMESPACE),
                           check_mode, warn=warn)
    report = Report()
    with report.failures_name_writes("deleted"):
        namespace = register_karmada.remove_from_hub(hub, name, _deleter(params, check_mode, report))
        if not check_mode:
            resources.wait_until_gone(hub, resources.NAMESPACE, namespace, timeout=params["wait_timeout"],
                                      interval=params["wait_sleep"])
    return report.result()


def _remove_ocm(hub, engine, obj, params, check_mode, warn):
    report = Report()
    with report.failures_name_writes("deleted"):
        register_ocm.remove_from_hub(hub, obj["metadata"]["name"], _deleter(params, check_mode, report))
    return report.result()


REMOVALS = {"karmada": _remove_karmada, "ocm": _remove_ocm}


def _remove_csrs(hub, engine, name, check_mode):
    """Delete the certificate requests of ``name``'s agent (:func:`diagnose.agent_csrs`): a pending one would otherwise
    wait to be approved for a cluster that is gone. The ``changes`` lines."""
    return ["hub %s" % resources.delete(hub, resources.CSR, csr["name"], check_mode=check_mode).summary()
            for csr in diagnose.agent_csrs(hub, engine, name)]


def validate(engine, params):
    """FleetError for a bad option, before any request."""
    for name in (params.get("listed") or []) + (params.get("confirmed") or []):
        engines.get(engine).validate_cluster_name(name)
    resources.check_duration("unreachable_after", params.get("unreachable_after"))
    resources.check_duration("wait_timeout", params.get("wait_timeout"), least=1)
    resources.check_duration("wait_sleep", params.get("wait_sleep"), least=1)


def read(hub, engine):
    """The :func:`facts` of every member object on ``hub``, by name, with the objects."""
    engine = engines.get(engine)
    found = []
    for obj in sorted(resources.list_objects(hub, engine.member_kind), key=lambda o: o["metadata"]["name"]):
        lease = None
        if not engine.is_push(obj):
            namespace, lease_name = engine.agent_lease(obj["metadata"]["name"])
            lease = resources.get(hub, LEASE, lease_name, namespace)
        found.append((facts(engine, obj, lease), obj))
    return found


def prune(hub, engine, params, check_mode=False, now=None):
    """Decide for every member cluster on ``hub`` and remove, hub side, those decided so; the module result.

    One cluster's failure does not stop the others; the run then fails naming each, with what was removed."""
    engine = engines.get(engine)
    validate(engine, params)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    listed, confirmed = params.get("listed"), params.get("confirmed")
    clusters, changes, diff, warnings, failed = [], [], [], [], []
    changed = False
    for found, obj in read(hub, engine):
        decision = decide(found, None if listed is None else set(listed), params.get("unreachable_after"),
                          params["force"], params["unmarked"], now, None if confirmed is None else set(confirmed))
        clusters.append(decision)
        if decision["action"] != "remove":
            decision["action"] = "kept"
            continue
        try:
            done = REMOVALS[engine.name](hub, engine, obj, params, check_mode, warnings.append)
            done["changes"] += _remove_csrs(hub, engine, decision["name"], check_mode)
        except FleetError as exc:
            decision.update(action="failed", error=exc.msg)
            failed.append(decision["name"])
            changed = changed or bool(exc.details.get("changed"))
            changes += exc.details.get("changes") or []
            continue
        decision["action"] = "removed"
        changed = changed or done["changed"]
        changes += done["changes"]
        diff += done.get("diff") or []
        warnings += done.get("warnings") or []
    result = dict(clusters=clusters, removed=[c["name"] for c in clusters if c["action"] == "removed"],
                  kept=[c["name"] for c in clusters if c["action"] == "kept"], changes=changes, diff=diff,
                  warnings=warnings, changed=changed)
    if failed:
        raise FleetError("could not remove %s from the hub: %s" % (", ".join(failed), "; ".join(
            "%s: %s" % (c["name"], c["error"]) for c in clusters if c["action"] == "failed")),
            clusters_failed=failed, **result)
    return result
