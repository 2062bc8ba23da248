# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Watching a hub's members for the event source ``multicluster.fleet.fleet_health``.

:class:`Collection` lists one collection of the hub (the member objects, or their Leases) and watches it from the
resourceVersion of the last event it read; when the server no longer has that version (410 Gone) it lists again, and
while the hub does not answer it tries again with a growing delay, saying so once. :class:`Monitor` feeds what they read
to a :class:`health.Tracker` and emits an event (:func:`health.event`) for each transition due, with cluster_diagnose's
verdict (``diagnose.read_hub``, ``diagnose.read_member``, ``diagnose.decide``: the same diagnosis), and runs the
periodic check of certificates and versions where it has the members' connections.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import queue
import threading

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import diagnose, health
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import hub_record
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.lease_lock import LEASE

BACKOFF_SECONDS = (1, 2, 4, 8, 15, 30)  # the waits before watching again while the hub does not answer


def backoff(failures):
    """The wait after the ``failures``-th failure in a row (1, 2, ...)."""
    return BACKOFF_SECONDS[min(failures, len(BACKOFF_SECONDS)) - 1]


class Collection:
    """One collection of the hub (``kind``, with ``namespace`` and list ``query``), listed, then watched.

    :meth:`run` puts what it reads into ``put``: ``("listed", name, items)`` after each listing, ``("changed", name,
    type, object)`` for each change, ``("away", name, message)`` once when the hub stops answering and ``("back", name,
    None)`` as soon as it answers again; the watch then resumes where it was.
    """

    def __init__(self, hub, name, kind, namespace=None, query=None, watch_seconds=client.WATCH_SECONDS):
        self.hub = hub
        self.name = name
        self.path = kind.path(namespace)
        self.query = dict((k, v) for k, v in (query or {}).items() if v)
        self.watch_seconds = watch_seconds
        self.resource_version = None

    def step(self, put):
        """List (when there is no resourceVersion to resume from), then watch until the server ends the watch."""
        if self.resource_version is None:
            answer = self.hub.request("GET", self.path, query=self.query)
            self.resource_version = answer["metadata"]["resourceVersion"]
            put(("listed", self.name, answer.get("items") or []))
        for kind, obj in self.hub.watch(self.path, self.resource_version, self.query, self.watch_seconds):
            self.resource_version = (obj.get("metadata") or {}).get("resourceVersion") or self.resource_version
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                put(("changed", self.name, kind, obj))

    def run(self, put, stop, wait=None):
        """:meth:`step` until ``stop`` (a threading.Event) is set; ``wait(seconds)`` waits between failed attempts
        (default: ``stop.wait``).

        A hub that answers 429 Too Many Requests is there, only not ready to serve the watch yet - an API server that has
        just started answers so while its watch cache fills ("storage is (re)initializing"), after its lists already
        work - or throttling: the watch is tried again after a wait, and the hub counts as neither away nor back."""
        wait = wait or stop.wait
        failures = busy = 0
        while not stop.is_set():
            try:
                if failures:  # answers again? (a watch resumed may bring no event for minutes)
                    self.hub.request("GET", self.path, query=dict(self.query, limit=1))
                    put(("back", self.name, None))
                    failures = 0
                self.step(put)
                busy = 0
            except client.Gone:
                self.resource_version = None
                continue
            except FleetError as exc:
                if getattr(exc, "status", 0) == 429 and not failures:
                    busy += 1
                    wait(backoff(busy))
                    continue
                busy = 0
                failures += 1
                if failures == 1:
                    put(("away", self.name, exc.msg))
                wait(backoff(failures))


class Monitor:
    """The members of ``engine`` on ``hub`` (a :class:`client.Cluster`), as events.

    ``emit(event)`` receives each event, ``log(message)`` what the source says (the hub away and back, the first listing).
    ``settings``: ``label_selector`` (the members watched), ``settle_seconds``, ``unready_seconds`` (see
    :class:`health.Tracker`), ``members`` (member name to its connection, a :class:`client.Cluster`: read for the
    diagnosis and the periodic check), ``check_seconds`` (the periodic check's interval, 0: none), ``certificate_days``
    (the threshold of ``certificate_expiring``). ``clock`` gives the time.
    """

    def __init__(self, hub, engine, emit, log, settings=None, clock=health.utc_now):
        settings = settings or {}
        self.hub = hub
        self.engine = engines.get(engine)
        self.emit = emit
        self.log = log
        self.members = settings.get("members") or {}
        self.check_seconds = settings.get("check_seconds") or 0
        self.certificate_days = settings.get("certificate_days") or health.DEFAULT_CERTIFICATE_DAYS
        self.tracker = health.Tracker(self.engine, settings.get("settle_seconds", health.DEFAULT_SETTLE_SECONDS), clock,
                                      settings.get("unready_seconds") or 0)
        self.clock = clock
        lease_namespace, lease_field = health.lease_watch(self.engine)
        self.collections = [
            Collection(hub, "members", self.engine.member_kind, query={"labelSelector": settings.get("label_selector")}),
            Collection(hub, "leases", LEASE, lease_namespace, {"fieldSelector": lease_field})]
        self.inbox = queue.Queue()
        self.listed = set()  # the collections listed at least once
        self.away = set()  # the collections whose hub does not answer
        self.last_check = None

    def start(self, stop):
        """Start a thread per collection (daemon threads: they end with ``stop`` or the process)."""
        for collection in self.collections:
            threading.Thread(target=collection.run, args=(self.inbox.put, stop), daemon=True,
                             name="fleet_health-%s" % collection.name).start()

    def handle(self, message):
        """Feed one message of a :class:`Collection` to the tracker."""
        what, name = message[0], message[1]
        if what == "away":
            if not self.away:
                self.log("the hub does not answer (%s); trying again with backoff" % message[2])
            self.away.add(name)
        elif what == "back":
            self.away.discard(name)
            if not self.away:
                self.log("the hub answers again")
                self.tracker.hub_back()
        elif what == "listed" and name == "members":
            if "members" in self.listed:
                self.tracker.members_listed(message[2])
            else:
                self.tracker.start(message[2])
                self.log("watching %d member(s) of %s on %s" % (len(message[2]), self.engine.name, self.hub.label))
            self.listed.add(name)
        elif what == "listed":
            self.tracker.leases_listed(message[2])
            self.listed.add(name)
        elif name == "members":
            self.tracker.member(message[3]["metadata"]["name"], None if message[2] == "DELETED" else message[3])
        else:
            lease = message[3]
            self.tracker.lease(self.tracker.lease_name(lease), None if message[2] == "DELETED" else lease)

    def diagnosis(self, name):
        """cluster_diagnose's decision on member ``name`` now (None when the hub could not be read)."""
        now = self.clock()
        try:
            hub_facts = diagnose.read_hub(self.hub, self.engine, name)
        except FleetError as exc:
            self.log("cannot diagnose member %s: %s" % (name, exc.msg))
            return None
        member = self.members.get(name)
        member_facts = None
        if member is not None:
            try:
                member_facts = diagnose.read_member(member, self.engine, diagnose.hub_identity(self.hub)[1])
            except FleetError as exc:
                member_facts = {"reachable": False, "error": exc.msg}
        return diagnose.decide(hub_facts, member_facts, now)

    def registered(self, name):
        """Whether the hub record says that the collection registered member ``name`` (False when it cannot be read)."""
        try:
            return hub_record.read(self.hub, self.engine.name, name) is not None
        except FleetError as exc:
            self.log("cannot read the hub record of member %s: %s" % (name, exc.msg))
            return False

    def hub_release(self):
        """The hub's engine release, read once per periodic check (None when it cannot be read: no member is checked)."""
        try:
            return self.engine.hub_release(self.hub)
        except FleetError as exc:
            self.log("cannot check the members: %s" % exc.msg)
            return None

    def check(self, name, hub_release):
        """The periodic check's findings on member ``name`` against ``hub_release`` (nothing without its connection, or
        without the hub's release)."""
        member = self.members.get(name)
        if member is None or hub_release is None:
            return {}
        try:
            agent = self.engine.read_agent(member)
        except FleetError as exc:
            self.log("cannot check member %s: %s" % (name, exc.msg))
            return {}
        return {"certificate_expiring": health.certificate_finding(agent["certificate_expiration"], self.clock(),
                                                                   self.certificate_days),
                "version_skew": health.skew_finding(agent["version"], hub_release)}

    def turn(self, wait_seconds=1.0):
        """Handle what the collections read within ``wait_seconds``, then emit the transitions due (and, when its time
        has come, the periodic check's)."""
        try:
            message = self.inbox.get(timeout=wait_seconds)
            while True:
                self.handle(message)
                message = self.inbox.get_nowait()
        except queue.Empty:
            pass
        if len(self.listed) < len(self.collections) or self.away:
            return  # no transition before both the members and their Leases are known, nor while the hub is away
        for name, transition, since in self.tracker.due():
            self.emit(health.event(self.engine, name, transition, self.diagnosis(name), since=since, now=self.clock(),
                                   registered=self.registered(name)))
        now = self.clock()
        if self.check_seconds and (self.last_check is None or (now - self.last_check).total_seconds() >= self.check_seconds):
            self.last_check = now
            names = self.tracker.names()
            hub_release = self.hub_release() if any(name in self.members for name in names) else None
            for name in names:
                for transition, finding in self.tracker.check(name, self.check(name, hub_release)):
                    self.emit(health.event(self.engine, name, transition, self.diagnosis(name), finding=finding, now=now,
                                           registered=self.registered(name)))

    def run(self, stop, wait_seconds=1.0):
        """Watch and emit until ``stop`` is set."""
        self.start(stop)
        while not stop.is_set():
            self.turn(wait_seconds)
