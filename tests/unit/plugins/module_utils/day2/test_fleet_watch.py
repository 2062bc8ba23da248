"""The watching side of the event source fleet_health: resume, relist on 410 Gone, the hub away and back, the events."""

import datetime
import threading

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import diagnose
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import fleet_watch
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import hub_record

START = datetime.datetime(2026, 12, 7, 8, 0, 0, tzinfo=datetime.timezone.utc)


def obj(name, version, ready=True):
    return {"metadata": {"name": name, "resourceVersion": version}, "spec": {"syncMode": "Push"},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


class ScriptedHub:
    """A hub whose list and watch answers come from a script: each item of ``steps`` is what the next call does -
    ``("list", version, items)``, ``("watch", events)`` (after which the server ends the watch), or an exception."""

    label = "the hub (https://hub)"

    def __init__(self, steps, stop):
        self.steps = list(steps)
        self.stop = stop
        self.calls = []

    def _next(self, call):
        self.calls.append(call)
        if not self.steps:
            self.stop.set()
            return ("watch", [])
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    def request(self, method, path, query=None, **_ignored):
        step = self._next(("list", path, dict(query or {})))
        assert step[0] == "list", step
        return {"metadata": {"resourceVersion": step[1]}, "items": step[2]}

    def watch(self, path, resource_version, query=None, timeout_seconds=None):
        step = self._next(("watch", path, resource_version))
        assert step[0] == "watch", step
        yield from step[1]


def run(steps):
    stop = threading.Event()
    hub = ScriptedHub(steps, stop)
    messages, waits = [], []
    fleet_watch.Collection(hub, "members", karmada.CLUSTER, query={"labelSelector": "env=prod"}).run(
        messages.append, stop, wait=waits.append)
    return hub.calls, messages, waits


def test_watches_resume_from_the_last_version_read():
    calls, messages, _waits = run([("list", "5", [obj("m1", "4")]),
                                   ("watch", [("MODIFIED", obj("m1", "6")), ("BOOKMARK", {"metadata": {"resourceVersion": "9"}})]),
                                   ("watch", [])])
    assert calls[:3] == [("list", "/apis/cluster.karmada.io/v1alpha1/clusters", {"labelSelector": "env=prod"}),
                         ("watch", "/apis/cluster.karmada.io/v1alpha1/clusters", "5"),
                         ("watch", "/apis/cluster.karmada.io/v1alpha1/clusters", "9")]
    assert messages == [("listed", "members", [obj("m1", "4")]), ("changed", "members", "MODIFIED", obj("m1", "6"))]


def test_a_version_gone_is_listed_again():
    calls, messages, waits = run([("list", "5", []), client.Gone("too old", 410), ("list", "20", [obj("m2", "19")])])
    assert [c[0] for c in calls[:3]] == ["list", "watch", "list"] and calls[3] == ("watch", calls[3][1], "20")
    assert [m[0] for m in messages] == ["listed", "listed"] and waits == []


def test_a_hub_away_is_said_once_and_tried_with_growing_waits():
    away = client.ClusterError("the hub (https://hub) is unreachable: connection refused")
    calls, messages, waits = run([("list", "5", []), away, away, away, away, ("list", "7", []), ("watch", [])])
    assert messages == [("listed", "members", []), ("away", "members", away.msg), ("back", "members", None)]
    assert waits == [1, 2, 4, 8]
    assert calls[5] == ("list", "/apis/cluster.karmada.io/v1alpha1/clusters", {"labelSelector": "env=prod", "limit": 1})
    assert calls[6] == ("watch", "/apis/cluster.karmada.io/v1alpha1/clusters", "5")  # resumed from where it was


def test_a_hub_not_ready_to_watch_is_neither_away_nor_back():
    """An API server just started serves lists before its watch cache is filled, and answers watches meanwhile with 429;
    the watch is tried again in a moment, without saying that the hub went away, nor came back."""
    initializing = client.ClusterError("the hub (https://hub): GET /apis/cluster.karmada.io/v1alpha1/clusters failed: "
                                       "429 storage is (re)initializing", 429)
    away = client.ClusterError("the hub (https://hub) is unreachable: connection refused")
    calls, messages, waits = run([("list", "5", []), away, ("list", "7", []), initializing, initializing,
                                  ("watch", [("MODIFIED", obj("m1", "8"))])])
    assert messages == [("listed", "members", []), ("away", "members", away.msg), ("back", "members", None),
                        ("changed", "members", "MODIFIED", obj("m1", "8"))]
    assert waits == [1, 1, 2]  # away: 1; then not ready: 1, 2
    assert [c[0] for c in calls[2:6]] == ["list", "watch", "watch", "watch"]


def test_backoff_is_bounded():
    assert [fleet_watch.backoff(n) for n in (1, 2, 3, 6, 7, 100)] == [1, 2, 4, 30, 30, 30]


class Clock:
    def __init__(self):
        self.now = START

    def __call__(self):
        return self.now


def test_the_monitor_emits_each_transition_once_with_the_diagnosis(monkeypatch):
    clock = Clock()
    emitted, said = [], []
    monitor = fleet_watch.Monitor(ScriptedHub([], threading.Event()), "karmada", emitted.append, said.append,
                                  {"settle_seconds": 5}, clock=clock)
    facts = {"cluster": "m1", "engine": "karmada", "object": "Cluster/m1", "present": True, "push": True, "ready": False,
             "ready_condition": {"type": "Ready", "status": "False", "message": "cluster is not reachable"}, "lease": None,
             "csrs": [], "denied_access": [], "agent_user": None, "namespace": None, "terminating_works": [], "cluster_id": None}
    monkeypatch.setattr(diagnose, "read_hub", lambda hub, engine, name: dict(facts, cluster=name))
    records = []
    monkeypatch.setattr(hub_record, "read", lambda hub, engine, name: records.append((engine, name)) or {"cluster-name": name})
    monitor.inbox.put(("listed", "members", [obj("m1", "1")]))
    monitor.turn(0)
    assert emitted == []  # the Leases are not known yet
    monitor.inbox.put(("listed", "leases", []))
    monitor.inbox.put(("changed", "members", "MODIFIED", obj("m1", "2", ready=False)))
    monitor.inbox.put(("away", "members", "the hub (https://hub) is unreachable"))
    monitor.inbox.put(("away", "leases", "the hub (https://hub) is unreachable"))
    monitor.turn(0)
    clock.now += datetime.timedelta(seconds=60)
    monitor.turn(0)
    assert emitted == []  # nothing while the hub is away
    monitor.inbox.put(("back", "members", None))
    monitor.inbox.put(("back", "leases", None))
    monitor.turn(0)
    assert emitted == []  # a state must hold for the settle time once the hub is back
    clock.now += datetime.timedelta(seconds=5)
    monitor.turn(0)
    monitor.turn(0)
    assert [(e["member"], e["transition"], e["verdict"]) for e in emitted] == [("m1", "not_ready", "not_ready")]
    assert emitted[0]["evidence"][0]["value"] == "False: cluster is not reachable" and not emitted[0]["repairable"]
    assert emitted[0]["registered"] is True and emitted[0]["meta"] == {"hosts": "m1"} and records == [("karmada", "m1")]
    assert said == ["watching 1 member(s) of karmada on the hub (https://hub)",
                    "the hub does not answer (the hub (https://hub) is unreachable); trying again with backoff",
                    "the hub answers again"]


def test_the_periodic_check_emits_a_finding_once(monkeypatch):
    """Members given with their connection are checked every check_seconds: the agent's certificate and version."""
    clock = Clock()
    emitted = []
    engine = engines.get("karmada")
    monitor = fleet_watch.Monitor(ScriptedHub([], threading.Event()), engine, emitted.append, lambda message: None,
                                  {"settle_seconds": 5, "members": {"m1": "m1's connection"}, "check_seconds": 60,
                                   "certificate_days": 30}, clock=clock)
    monkeypatch.setattr(hub_record, "read", lambda hub, engine, name: None)
    read = []
    monkeypatch.setattr(engine, "read_agent", lambda member: read.append(member) or {
        "certificate_expiration": "2026-12-17T08:00:00Z", "version": "v1.16.0"})
    monkeypatch.setattr(engine, "hub_release", lambda hub: "v1.18.2")
    monkeypatch.setattr(fleet_watch.Monitor, "diagnosis", lambda self, name: None)
    monitor.inbox.put(("listed", "members", [obj("m1", "1"), obj("m2", "1")]))
    monitor.inbox.put(("listed", "leases", []))
    monitor.turn(0)
    assert [(e["member"], e["transition"]) for e in emitted] == [("m1", "certificate_expiring"), ("m1", "version_skew")]
    assert emitted[0]["finding"] == {"not_after": "2026-12-17T08:00:00Z", "days_left": 10}
    assert read == ["m1's connection"]  # m2 has no connection: not checked
    clock.now += datetime.timedelta(seconds=30)
    monitor.turn(0)
    clock.now += datetime.timedelta(seconds=30)
    monitor.turn(0)
    assert len(emitted) == 2 and read == ["m1's connection"] * 2  # checked again after 60 s, nothing new


def test_the_periodic_check_reads_the_hubs_release_once_for_all_members(monkeypatch):
    engine = engines.get("karmada")
    said = []
    monitor = fleet_watch.Monitor(ScriptedHub([], threading.Event()), engine, lambda event: None, said.append,
                                  {"members": {"m1": "c1", "m2": "c2", "m3": "c3"}, "check_seconds": 60}, clock=Clock())
    releases = []
    monkeypatch.setattr(engine, "hub_release", lambda hub: releases.append(hub) or "v1.18.2")
    monkeypatch.setattr(engine, "read_agent", lambda member: {"certificate_expiration": None, "version": "v1.18.2"})
    monitor.inbox.put(("listed", "members", [obj("m1", "1"), obj("m2", "1"), obj("m3", "1")]))
    monitor.inbox.put(("listed", "leases", []))
    monitor.turn(0)
    assert len(releases) == 1

    def unreadable(hub):
        raise FleetError("the hub (https://hub) is unreachable")
    monkeypatch.setattr(engine, "hub_release", unreadable)
    monkeypatch.setattr(engine, "read_agent", lambda member: pytest.fail("a member checked without the hub's release"))
    monitor.last_check = None
    monitor.turn(0)
    assert said[-1] == "cannot check the members: the hub (https://hub) is unreachable"
