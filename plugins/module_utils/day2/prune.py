# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pruning the hub: removing the member clusters the inventory no longer lists, or that have not answered for a long
time, hub side only (docs/maintenance.md, module cluster_prune).

:func:`facts` reads what the decision needs from a member object, its agent's Lease and this collection's hub record of
it (hub_record.py); :func:`decide` is a pure function of those facts, the task's options and the time; :func:`plan`
names what the removal of a cluster decided so would delete, or why it cannot be removed; :func:`prune` reads the hub,
decides and plans for every member object and removes those decided so, hub side, by the engines' own steps:
each engine's in the ``removal.py`` of its package (:attr:`engine.Engine.removal`).

A member object is untrusted input (docs/architecture.md, "What the hub's member objects are trusted for"): its agent
may have created it, and may write it. So "registered by this collection" is the hub record, which no agent can write,
not the object's annotation; and what a removal deletes is named by the collection's own rules from the cluster's
name (and the recorded namespace of a Push member's Secrets), never taken from the object: a Push Cluster whose
``secretRef`` names any other Secret, or whose Secrets belong to another Cluster, is kept, saying why.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import diagnose
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import hub_record
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import join
from ansible_collections.multicluster.fleet.plugins.module_utils.day2.diagnose import parse_time
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.lease_lock import LEASE
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.hub_record import CLUSTER_ID_ANNOTATION
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.report import Report

NOT_LISTED = "not_listed"
UNREACHABLE = "unreachable"


def facts(engine, obj, lease, record=None):
    """What :func:`decide` needs of member object ``obj``, its agent's Lease (None: none, or a Push member) and this
    collection's hub record of it (``record``, the data of :func:`hub_record.read_all`; None: none).

    ``unregistered`` is None for a cluster this collection registered - it has a record, of the cluster id the object
    shows - and otherwise says why it does not count as one."""
    engine = engines.get(engine)
    metadata = obj["metadata"]
    condition = resources.condition(obj, engine.ready_condition["type"]) or {}
    push = engine.is_push(obj)
    found = {"name": metadata["name"], "unregistered": registration_problem(engine, obj, record),
             "push": push, "ready": condition.get("status") == "True",
             "ready_since": condition.get("lastTransitionTime") or metadata.get("creationTimestamp"),
             "lease_renewed": None, "lease_grace_seconds": None}
    if lease is not None and not push:
        found.update(lease_renewed=(lease.get("spec") or {}).get("renewTime"),
                     lease_grace_seconds=engine.lease_grace_seconds(obj, lease))
    return found


def registration_problem(engine, obj, record):
    """None when ``record`` (this collection's hub record of ``obj``, or None) shows that this collection registered
    the cluster ``obj`` stands for; otherwise why not, in words."""
    name = obj["metadata"]["name"]
    where = hub_record.ref(engine.name, name)
    if record is None:
        if (obj["metadata"].get("annotations") or {}).get(CLUSTER_ID_ANNOTATION):
            return ("not registered by this collection: there is no hub record %s (its %s annotation does not count: "
                    "whoever may write the object can set it; a member registered by an earlier version gets its record "
                    "when site.yml next runs with it in the inventory)" % (where, CLUSTER_ID_ANNOTATION))
        return "not registered by this collection (no hub record %s)" % where
    recorded, shown = record.get(hub_record.CLUSTER_ID_KEY), engine.recorded_cluster_id(obj)
    if recorded and recorded != shown:
        return ("its hub record %s is of cluster id %s, but the %s says %s: not the cluster this collection registered"
                % (where, recorded, engine.member_kind.kind, shown or "no cluster id"))
    return None


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
    (``unregistered``: no hub record) unless ``unmarked``, and when the hub still counts it as answering unless
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
    elif cluster["unregistered"] and not unmarked:
        decision["why"] = "%s, but %s: set unmarked=true to prune it too" % (", ".join(said), cluster["unregistered"])
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


def _deleter(params, check_mode, report, gone):
    """The ``delete`` of the engines' hub-side removal steps: each deletion recorded in ``report`` before its wait.

    For a cluster the hub already judges gone (``gone``: its Lease not renewed within the engine's grace, or not
    ready), a deleted Work's ``karmada.io/execution-controller`` finalizer is removed at once, as ``karmadactl unjoin
    --force`` does: only the cluster's agent (a Pull member's execution controller runs in karmada-agent) would remove
    it, and that agent is gone. Otherwise a wait that times out removes the object's finalizers with ``force`` (an agent
    that never answers never removes them), and without it fails saying so."""
    def delete(cluster, kind, name, namespace=None, wait=False):
        outcome = resources.delete(cluster, kind, name, namespace, check_mode, record=lambda o: report.add(cluster, o))
        if not (wait and outcome.changed and not check_mode):
            return outcome
        if gone and kind is karmada.WORK:
            obj = resources.get(cluster, kind, name, namespace)
            released = obj and join.remove_finalizers(cluster, kind, obj, [karmada.EXECUTION_FINALIZER])
            if released:
                report.add(cluster, released)
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


class Removal:
    """The removal of one member cluster from the hub: the task's options (``params``), check mode, whether the hub
    already judges the cluster gone (``gone``), the :class:`report.Report` of what was deleted, and
    ``delete(cluster, kind, name, namespace=None, wait=False)``, which records each deletion there (:func:`_deleter`)."""

    def __init__(self, params, check_mode, gone):
        self.params, self.check_mode, self.gone = params, check_mode, gone
        self.report = Report()
        self.delete = _deleter(params, check_mode, self.report, gone)


def owned_by(obj, kind, uid):
    """Whether ``obj`` names the ``kind`` of uid ``uid`` among its ownerReferences."""
    return any(ref.get("uid") == uid and ref.get("kind") == kind.kind for ref in obj["metadata"].get("ownerReferences") or [])


def plan(hub, engine, obj, record):
    """``(deletes, problem)``: the ``(kind, namespace, name)`` of what removing member object ``obj`` deletes on the hub
    (``record``: its hub record, or None), and None, or why it cannot be removed (then nothing is deleted): the engine's
    own (``plan`` of :attr:`engine.Engine.removal`) and the cluster's agent CSRs."""
    engine = engines.get(engine)
    deletes, problem = engine.removal.plan(hub, obj, record)
    deletes += [(resources.CSR, None, csr["name"]) for csr in diagnose.agent_csrs(hub, engine, obj["metadata"]["name"])]
    return deletes, problem


def validate(engine, params):
    """FleetError for a bad option, before any request."""
    for name in (params.get("listed") or []) + (params.get("confirmed") or []):
        engines.get(engine).validate_cluster_name(name)
    resources.check_duration("unreachable_after", params.get("unreachable_after"))
    resources.check_duration("wait_timeout", params.get("wait_timeout"), least=1)
    resources.check_duration("wait_sleep", params.get("wait_sleep"), least=1)


def read(hub, engine):
    """``(facts, object, record)`` of every member object on ``hub``, by name (:func:`facts`; ``record``: this
    collection's hub record of it, or None)."""
    engine = engines.get(engine)
    records = hub_record.read_all(hub, engine.name)
    found = []
    for obj in sorted(resources.list_objects(hub, engine.member_kind), key=lambda o: o["metadata"]["name"]):
        lease = None
        if not engine.is_push(obj):
            namespace, lease_name = engine.agent_lease(obj["metadata"]["name"])
            lease = resources.get(hub, LEASE, lease_name, namespace)
        record = records.get(obj["metadata"]["name"])
        found.append((facts(engine, obj, lease, record), obj, record))
    return found


def _refs(deletes):
    """The deletions of a plan as listings print them: ``Cluster/member3``, ``Secret/karmada-cluster/member3``."""
    return [kind.ref(name, namespace) for kind, namespace, name in deletes]


def prune(hub, engine, params, check_mode=False, now=None):
    """Decide for every member cluster on ``hub`` and remove, hub side, those decided so; the module result.

    Every cluster decided for removal carries ``deletes``, what its removal deletes (:func:`plan`); one that cannot be
    removed is kept, saying why. One cluster's failure does not stop the others; the run then fails naming each, with
    what was removed."""
    engine = engines.get(engine)
    validate(engine, params)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    listed, confirmed = params.get("listed"), params.get("confirmed")
    clusters, changes, diff, warnings, failed = [], [], [], [], []
    changed = False
    for found, obj, record in read(hub, engine):
        args = (found, None if listed is None else set(listed), params.get("unreachable_after"), params["force"],
                params["unmarked"], now)
        decision = decide(*args)
        deletes, problem = plan(hub, engine, obj, record) if decision["action"] == "remove" else ([], None)
        if problem:  # what it would delete is not this collection's: kept, listed or not
            decision.update(action="keep", why="%s; not removed: %s" % (decision["why"], problem))
        elif confirmed is not None:
            decision = decide(*args, confirmed=set(confirmed))
        clusters.append(decision)
        if decision["action"] != "remove":
            decision["action"] = "kept"
            continue
        decision["deletes"] = _refs(deletes)
        try:
            done = engine.removal.remove(hub, obj, deletes, Removal(params, check_mode, decision["silent_seconds"] is not None))
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
