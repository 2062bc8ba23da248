# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health of a fleet's members as transitions: what the event source ``multicluster.fleet.fleet_health`` emits.

:class:`Tracker` is fed the member objects (Karmada ``Cluster``, OCM ``ManagedCluster``) and their Leases as the hub's
watches deliver them, and asked with :meth:`Tracker.due` which transitions are due. A member's state is ``ready``,
``not_ready`` or ``lease_expired`` (:func:`member_state`), ``removed`` when its object is gone; a transition to a new state
is due once that state has held for the settle time, so a member that flaps within it emits nothing; a member not ready
(``not_ready`` or ``lease_expired``) for longer than ``unready_seconds`` emits ``still_not_ready`` once. The periodic check
(:meth:`Tracker.check`) adds ``certificate_expiring`` and ``version_skew``, once each time they start to hold.
Plain Python: no I/O, and the time comes from the clock given (``clock()`` returns an aware datetime).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import diagnose, versions
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

TRANSITIONS = ("joined", "ready", "not_ready", "lease_expired", "removed", "still_not_ready", "certificate_expiring",
               "version_skew")
# The states of a member object on the hub: ready, and the two of a member not ready. A member that joined and has not
# been ready yet is registering, not failing: it emits ``ready`` (or ``lease_expired``, ``removed``) next, not
# ``not_ready``.
STATES = ("ready", "not_ready", "lease_expired")
# The verdicts of cluster_diagnose that running the member's registration again (site.yml --limit <member>) repairs:
# the agent gone or not running, its certificate expired or unapproved, its kubeconfigs naming an old hub address or CA,
# its hub RBAC missing; lease_expired is what the hub alone shows of an agent that stopped.
REPAIRABLE = ("lease_expired", "agent_not_running", "certificate_expired", "hub_ca_mismatch", "hub_unreachable_from_agent",
              "rbac_missing", "csr_pending")
DEFAULT_SETTLE_SECONDS = 30
DEFAULT_CERTIFICATE_DAYS = 30


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def timestamp(moment):
    """RFC 3339 (UTC, seconds) of an aware datetime."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def member_state(engine, obj, lease, now, renewable_since=None):
    """``lease_expired``, ``ready`` or ``not_ready`` of member object ``obj`` and its Lease (None when there is none yet,
    or for a Karmada Push member, which has none) at ``now``: the Lease rule of cluster_diagnose first, then the engine's
    ready condition.

    ``renewable_since``: when the hub answered again after it was away. No agent could renew its Lease before, so the
    grace counts from then for a Lease renewed earlier; until it has passed, such a member's state is undecided (None):
    the hub's controllers may call it not ready for the Lease the agent had no chance to renew."""
    engine = engines.get(engine)
    if lease is not None and not engine.is_push(obj):
        renewed, grace = ((lease.get("spec") or {}).get("renewTime")), engine.lease_grace_seconds(obj, lease)
        if diagnose.lease_expired(renewed, grace, now):
            if not renewable_since or diagnose.lease_expired(timestamp(renewable_since), grace, now):
                return "lease_expired"
            return None
    condition = resources.condition(obj, engine.ready_condition["type"]) or {}
    return "ready" if condition.get("status") == "True" else "not_ready"


def lease_watch(engine):
    """``(namespace, field_selector)`` to list and watch the Leases of the members of ``engine``: Karmada keeps them in one
    namespace, named after their cluster; OCM in each cluster's namespace, under one name."""
    namespace, name = engines.get(engine).agent_lease("-")
    return (None, "metadata.name=%s" % name) if namespace == "-" else (namespace, None)


def certificate_finding(not_after, now, days):
    """``{"not_after", "days_left"}`` when a certificate valid until ``not_after`` (RFC 3339) has fewer than ``days`` days
    left at ``now`` (an expired one has 0), else None (also when unknown)."""
    moment = diagnose.parse_time(not_after)
    if moment is None:
        return None
    left = max(0, int((moment - now).total_seconds() // 86400))
    return {"not_after": not_after, "days_left": left} if (moment - now).total_seconds() < days * 86400 else None


def skew_finding(agent_version, hub_version):
    """``{"agent_version", "hub_version", "problem"}`` when the agent breaks the version skew rule of ``versions.skew``
    against its hub (too far behind, or newer), else None (also when either version is unknown)."""
    try:
        problem = versions.skew(agent_version, hub_version)
    except FleetError as exc:
        problem = exc.msg
    return {"agent_version": agent_version, "hub_version": hub_version, "problem": problem} if problem else None


class _Member:
    def __init__(self, emitted):
        self.obj = None
        self.emitted = emitted  # the state last emitted ("joined" for one that has not been ready yet), None: not yet
        self.pending = None  # (state, since): a state that differs from the emitted one, since it was first seen
        self.unready_since = None  # when it stopped being ready (not_ready or lease_expired, as emitted)
        self.reminded = False  # still_not_ready emitted since then
        self.findings = {}  # the periodic check's findings last emitted, by transition


class Tracker:
    """The members of one engine's hub and the transitions due.

    ``settle_seconds``: how long a new state must hold before it is emitted; ``unready_seconds``: how long a member may be
    not ready before ``still_not_ready`` (0: never). ``clock``: returns the time (aware).
    """

    def __init__(self, engine, settle_seconds=DEFAULT_SETTLE_SECONDS, clock=utc_now, unready_seconds=0):
        self.engine = engines.get(engine)
        self.settle = datetime.timedelta(seconds=settle_seconds)
        self.unready = datetime.timedelta(seconds=unready_seconds) if unready_seconds else None
        self.clock = clock
        self._members = {}
        self._leases = {}  # Leases by member name, also those seen before their member object
        self.renewable_since = None  # when the hub answered again after it was away

    def names(self):
        return sorted(self._members)

    def start(self, objects):
        """The first listing of the members: each counts as ``ready`` (nothing is emitted for it), so one that is not
        emits its state once that has held for the settle time."""
        self._members = {}
        for obj in objects:
            self._members[obj["metadata"]["name"]] = _Member("ready")
            self.member(obj["metadata"]["name"], obj)

    def members_listed(self, objects):
        """A listing of the members after their watch could not resume (410 Gone): members it lacks count as deleted,
        new ones as added; only states that differ from those emitted become due."""
        listed = dict((obj["metadata"]["name"], obj) for obj in objects)
        for name in list(self._members):
            if name not in listed:
                self.member(name, None)
        for name, obj in listed.items():
            self.member(name, obj)

    def leases_listed(self, leases):
        """A listing of the members' Leases: they replace those known."""
        self._leases = {}
        for lease in leases:
            self.lease(self.lease_name(lease), lease)

    def lease_name(self, lease):
        """The member a Lease belongs to: its name (Karmada, ``karmada-cluster/<cluster>``) or namespace (OCM,
        ``<cluster>/managed-cluster-lease``), None for a Lease of no member."""
        metadata = lease["metadata"]
        for name in (metadata.get("name"), metadata.get("namespace")):
            if name and self.engine.agent_lease(name) == (metadata.get("namespace"), metadata.get("name")):
                return name
        return None

    def member(self, name, obj):
        """The member object of ``name`` as last seen; None: deleted."""
        entry = self._members.get(name)
        if entry is None:
            if obj is None:
                return
            entry = self._members[name] = _Member(None)
        entry.obj = obj

    def lease(self, name, lease):
        """The Lease of member ``name`` as last seen; None: deleted."""
        if name is None:
            return
        if lease is None:
            self._leases.pop(name, None)
        else:
            self._leases[name] = lease

    def _target(self, entry, name, now):
        """The state ``entry`` would emit now, or None when nothing differs from what it emitted."""
        if entry.obj is None:
            return "removed" if entry.emitted is not None else None
        if entry.emitted is None:
            return "joined"
        state = member_state(self.engine, entry.obj, self._leases.get(name), now, self.renewable_since)
        if state is None or (entry.emitted == "joined" and state == "not_ready"):
            return None
        return state if state != entry.emitted else None

    def hub_back(self):
        """The hub answers again after it was away: the Leases' grace counts from now for those renewed before, and
        states seen while it was away must hold for the settle time from now."""
        self.renewable_since = self.clock()
        for entry in self._members.values():
            entry.pending = None

    def due(self):
        """The transitions due now, ``[(name, transition, since)]``, by name; each is emitted once."""
        now = self.clock()
        found = []
        for name in sorted(self._members):
            entry = self._members[name]
            target = self._target(entry, name, now)
            if target is None:
                entry.pending = None
                if entry.obj is None:  # gone before anything was emitted of it
                    del self._members[name]
                continue
            if entry.pending is None or entry.pending[0] != target:
                entry.pending = (target, now)
            if now - entry.pending[1] >= self.settle:
                found.append((name, target, entry.pending[1]))
                self._emitted(entry, target, entry.pending[1])
                if target == "removed":
                    del self._members[name]
        for name in sorted(self._members):
            entry = self._members[name]
            if self.unready and entry.unready_since and not entry.reminded and now - entry.unready_since >= self.unready:
                found.append((name, "still_not_ready", entry.unready_since))
                entry.reminded = True
        return found

    @staticmethod
    def _emitted(entry, state, since):
        entry.emitted, entry.pending = state, None
        if state not in STATES[1:]:
            entry.unready_since, entry.reminded = None, False
        elif entry.unready_since is None:
            entry.unready_since = since

    def check(self, name, findings):
        """The periodic check of member ``name``: ``findings`` maps ``certificate_expiring`` and ``version_skew`` to what
        :func:`certificate_finding` and :func:`skew_finding` found (None: fine). Returns the transitions to emit now,
        ``[(transition, finding)]``: a finding that was not there at the last check (one that clears is re-armed)."""
        entry = self._members.get(name)
        if entry is None:
            return []
        found = []
        for transition in ("certificate_expiring", "version_skew"):
            finding = findings.get(transition)
            if finding and not entry.findings.get(transition):
                found.append((transition, finding))
            entry.findings[transition] = finding
        return found


def event(engine, name, transition, diagnosis, since=None, finding=None, now=None, registered=False):
    """The event of one transition: the member, its engine, the transition, when (``time``: now; ``since``: when its
    state began), cluster_diagnose's ``verdict``, ``evidence`` and ``next_step`` (``diagnosis``, the result of
    ``diagnose.decide``; None when it could not be read: verdict None), ``registered``, ``repairable``: whether running
    the member's registration again repairs that verdict, and the periodic check's ``finding``. Nothing in it is secret:
    names, states, timestamps and the evidence cluster_diagnose shows.

    A member object is anyone's who may create one - a member's agent, a bootstrap token - and so is its name, which
    is the hosts of the event (``meta.hosts``: a rulebook's ``--limit``; without it ansible-rulebook would run on all
    of its ruleset's hosts) and could be ``all`` or an inventory group's. A member is ``repairable`` only where the hub
    record (which no agent can write) says that the collection registered it (``registered``); a rulebook acts on
    no other."""
    now = now or utc_now()
    diagnosis = diagnosis or {}
    verdict = diagnosis.get("verdict")
    return {"member": name, "engine": engines.get(engine).name, "transition": transition, "time": timestamp(now),
            "since": timestamp(since) if since else None, "verdict": verdict, "evidence": diagnosis.get("evidence") or [],
            "next_step": diagnosis.get("next_step"), "registered": registered,
            "repairable": registered and verdict in REPAIRABLE and transition in STATES[1:] + ("still_not_ready",),
            "finding": finding, "meta": {"hosts": name}}
