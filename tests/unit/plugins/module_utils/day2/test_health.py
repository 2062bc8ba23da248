"""The transitions of the event source fleet_health: member objects, Leases and an injected clock in, transitions out."""

import datetime

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import health

START = datetime.datetime(2026, 12, 7, 8, 0, 0, tzinfo=datetime.timezone.utc)


class Clock:
    """A clock the test moves."""

    def __init__(self):
        self.now = START

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += datetime.timedelta(seconds=seconds)


def stamp(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def cluster(name, ready=True, push=False):
    """A Karmada Cluster."""
    return {"metadata": {"name": name}, "spec": {"syncMode": "Push" if push else "Pull"},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def managed_cluster(name, available=True, lease_seconds=60):
    return {"metadata": {"name": name}, "spec": {"leaseDurationSeconds": lease_seconds},
            "status": {"conditions": [{"type": "ManagedClusterConditionAvailable", "status": "True" if available else "Unknown"}]}}


def karmada_lease(name, renewed, duration=40):
    return {"metadata": {"name": name, "namespace": "karmada-cluster"},
            "spec": {"renewTime": stamp(renewed), "leaseDurationSeconds": duration}}


def ocm_lease(name, renewed):
    return {"metadata": {"name": "managed-cluster-lease", "namespace": name}, "spec": {"renewTime": stamp(renewed)}}


@pytest.fixture
def clock():
    return Clock()


def tracker_of(clock, objects, leases=(), engine="karmada", settle=10):
    tracker = health.Tracker(engine, settle_seconds=settle, clock=clock)
    tracker.leases_listed(list(leases))
    tracker.start(list(objects))
    return tracker


def after(tracker, clock, seconds):
    """The transitions due now and in each of the next ``seconds`` seconds (asked each second, as the source does)."""
    found = [(name, transition) for name, transition, _since in tracker.due()]
    for _second in range(seconds):
        clock.advance(1)
        found += [(name, transition) for name, transition, _since in tracker.due()]
    return found


def test_a_healthy_fleet_emits_nothing_while_its_leases_are_renewed(clock):
    tracker = tracker_of(clock, [cluster("member1"), cluster("member2")],
                         [karmada_lease("member1", START), karmada_lease("member2", START)])
    for _period in range(10):  # ten renewals, 30 s apart, of a 40 s Lease
        assert after(tracker, clock, 30) == []
        for name in ("member1", "member2"):
            tracker.lease(name, karmada_lease(name, clock.now))


def test_a_lease_that_runs_out_emits_one_lease_expired_after_grace_and_settle(clock):
    tracker = tracker_of(clock, [cluster("member1"), cluster("member2")],
                         [karmada_lease("member1", START), karmada_lease("member2", START)])
    seen = []
    for second in range(1, 121):
        clock.advance(1)
        tracker.lease("member1", karmada_lease("member1", clock.now))  # member1 renews; member2's agent stopped
        seen += [(second, name, transition) for name, transition, _since in tracker.due()]
    # expired after 40 s (the Lease's duration), held for the settle time (10 s): due at 51 s; never again
    assert seen == [(51, "member2", "lease_expired")]


def test_a_repaired_member_emits_ready_and_the_not_ready_condition_under_an_expired_lease_is_no_transition(clock):
    tracker = tracker_of(clock, [cluster("member2")], [karmada_lease("member2", START)])
    assert after(tracker, clock, 60) == [("member2", "lease_expired")]
    tracker.member("member2", cluster("member2", ready=False))  # the hub's controller marks it not ready meanwhile
    assert after(tracker, clock, 30) == []
    tracker.lease("member2", karmada_lease("member2", clock.now))
    tracker.member("member2", cluster("member2"))
    assert after(tracker, clock, 9) == []
    assert after(tracker, clock, 1) == [("member2", "ready")]


def test_a_member_not_ready_for_longer_than_unready_seconds_emits_still_not_ready_once(clock):
    tracker = health.Tracker("karmada", settle_seconds=10, clock=clock, unready_seconds=100)
    tracker.leases_listed([karmada_lease("member2", START)])
    tracker.start([cluster("member2")])
    assert after(tracker, clock, 51) == [("member2", "lease_expired")]  # since 41 s
    tracker.lease("member2", karmada_lease("member2", clock.now, duration=3600))
    tracker.member("member2", cluster("member2", ready=False))  # renewed, but not ready: still not ready since 41 s
    assert after(tracker, clock, 30) == [("member2", "not_ready")]
    assert after(tracker, clock, 59) == []
    assert after(tracker, clock, 1) == [("member2", "still_not_ready")]
    assert after(tracker, clock, 300) == []
    tracker.member("member2", cluster("member2"))
    assert after(tracker, clock, 10) == [("member2", "ready")]
    tracker.member("member2", cluster("member2", ready=False))
    assert after(tracker, clock, 110) == [("member2", "not_ready"), ("member2", "still_not_ready")]


def test_leases_cannot_run_out_while_the_hub_is_away(clock):
    """No agent renews its Lease while the hub is away: the grace of a Lease renewed before counts from its return."""
    tracker = tracker_of(clock, [cluster("member1"), cluster("member2")],
                         [karmada_lease("member1", START), karmada_lease("member2", START)])
    clock.advance(300)  # the hub away for five minutes (the source asks nothing meanwhile)
    tracker.hub_back()
    for name in ("member1", "member2"):  # the hub's controllers: not ready, for the Leases nobody could renew
        tracker.member(name, cluster(name, ready=False))
    assert after(tracker, clock, 5) == []
    tracker.lease("member1", karmada_lease("member1", clock.now))  # member1's agent renews once, 5 s after the return
    tracker.member("member1", cluster("member1"))
    assert after(tracker, clock, 46) == [("member2", "lease_expired")]  # 41 s after the return, held for 10 s
    assert after(tracker, clock, 10) == [("member1", "lease_expired")]


def test_a_state_that_does_not_hold_for_the_settle_time_is_not_emitted(clock):
    tracker = tracker_of(clock, [cluster("member1", push=True)])
    for _flap in range(5):
        tracker.member("member1", cluster("member1", ready=False, push=True))
        assert after(tracker, clock, 9) == []
        tracker.member("member1", cluster("member1", push=True))
        assert after(tracker, clock, 9) == []
    tracker.member("member1", cluster("member1", ready=False, push=True))
    assert after(tracker, clock, 10) == [("member1", "not_ready")]
    assert after(tracker, clock, 100) == []


def test_a_member_not_ready_at_the_start_emits_not_ready(clock):
    tracker = tracker_of(clock, [cluster("member1", ready=False, push=True), cluster("member2", push=True)])
    assert after(tracker, clock, 20) == [("member1", "not_ready")]


def test_joined_then_ready_then_removed(clock):
    tracker = tracker_of(clock, [])
    tracker.member("member3", cluster("member3", ready=False))
    assert after(tracker, clock, 10) == [("member3", "joined")]
    assert after(tracker, clock, 60) == []  # registering: not ready yet, which is no transition
    tracker.lease("member3", karmada_lease("member3", clock.now))
    tracker.member("member3", cluster("member3"))
    assert after(tracker, clock, 10) == [("member3", "ready")]
    tracker.member("member3", None)
    tracker.lease("member3", None)
    assert after(tracker, clock, 10) == [("member3", "removed")]
    assert tracker.names() == []


def test_a_member_gone_and_back_within_the_settle_time_emits_nothing(clock):
    tracker = tracker_of(clock, [cluster("member1", push=True)])
    tracker.member("member1", None)
    assert after(tracker, clock, 5) == []
    tracker.member("member1", cluster("member1", push=True))
    assert after(tracker, clock, 30) == []


def test_a_relist_emits_only_what_changed(clock):
    """After 410 Gone the source lists again: a member deleted and another added meanwhile are the only transitions."""
    tracker = tracker_of(clock, [cluster("member1", push=True), cluster("member2", push=True)])
    tracker.members_listed([cluster("member2", push=True), cluster("member3", push=True)])
    assert sorted(after(tracker, clock, 10)) == [("member1", "removed"), ("member3", "joined")]
    assert after(tracker, clock, 30) == [("member3", "ready")]
    tracker.members_listed([cluster("member2", push=True), cluster("member3", push=True)])
    assert after(tracker, clock, 30) == []


def test_ocm_leases_are_those_in_the_cluster_namespaces_and_their_grace_is_five_durations(clock):
    tracker = tracker_of(clock, [managed_cluster("member2", lease_seconds=4)], [ocm_lease("member2", START)], engine="ocm",
                         settle=0)
    assert tracker.lease_name(ocm_lease("member2", START)) == "member2"
    assert tracker.lease_name({"metadata": {"name": "other", "namespace": "member2"}}) is None
    assert after(tracker, clock, 20) == []
    assert after(tracker, clock, 1) == [("member2", "lease_expired")]
    assert health.lease_watch("ocm") == (None, "metadata.name=managed-cluster-lease")
    assert health.lease_watch("karmada") == ("karmada-cluster", None)


def test_a_member_without_a_lease_yet_is_judged_by_its_condition(clock):
    assert health.member_state("karmada", cluster("member1"), None, START) == "ready"
    assert health.member_state("karmada", cluster("member1", ready=False), None, START) == "not_ready"
    old = karmada_lease("member1", START - datetime.timedelta(hours=1))
    assert health.member_state("karmada", cluster("member1", push=True), old, START) == "ready"  # Push: no agent
    assert health.member_state("karmada", cluster("member1"), old, START) == "lease_expired"
    back = START - datetime.timedelta(seconds=30)  # the hub answered again 30 s ago: the grace (40 s) runs from then
    assert health.member_state("karmada", cluster("member1", ready=False), old, START, renewable_since=back) is None
    assert health.member_state("karmada", cluster("member1"), old, START + datetime.timedelta(seconds=11), back) == "lease_expired"


def test_the_periodic_check_emits_a_finding_once_and_again_after_it_cleared(clock):
    tracker = tracker_of(clock, [cluster("member1")])
    expiring = health.certificate_finding("2026-12-17T08:00:00Z", START, 30)
    assert expiring == {"not_after": "2026-12-17T08:00:00Z", "days_left": 10}
    assert health.certificate_finding("2027-12-17T08:00:00Z", START, 30) is None
    assert health.certificate_finding(None, START, 30) is None
    assert tracker.check("member1", {"certificate_expiring": expiring}) == [("certificate_expiring", expiring)]
    assert tracker.check("member1", {"certificate_expiring": expiring}) == []
    assert tracker.check("member1", {"certificate_expiring": None}) == []
    assert tracker.check("member1", {"certificate_expiring": expiring}) == [("certificate_expiring", expiring)]
    assert tracker.check("member9", {"certificate_expiring": expiring}) == []


def test_version_skew_findings():
    assert health.skew_finding("v1.16.0", "v1.18.2")["problem"].startswith("agent version v1.16.0 is 2 minor releases behind")
    assert "newer than the hub" in health.skew_finding("v1.19.0", "v1.18.2")["problem"]
    assert health.skew_finding("v1.17.0", "v1.18.2") is None
    assert health.skew_finding(None, "v1.18.2") is None


def test_an_event_carries_the_diagnosis_and_whether_registration_repairs_it():
    diagnosis = {"verdict": "lease_expired", "evidence": [{"object": "Lease/karmada-cluster/member2"}], "next_step": "..."}
    found = health.event("karmada", "member2", "lease_expired", diagnosis, since=START, now=START + datetime.timedelta(seconds=10),
                         registered=True)
    assert found == {"member": "member2", "engine": "karmada", "transition": "lease_expired", "time": "2026-12-07T08:00:10Z",
                     "since": "2026-12-07T08:00:00Z", "verdict": "lease_expired", "evidence": diagnosis["evidence"],
                     "next_step": "...", "registered": True, "repairable": True, "finding": None, "meta": {"hosts": "member2"}}
    assert not health.event("karmada", "member2", "ready", diagnosis, registered=True)["repairable"]
    assert not health.event("karmada", "member2", "not_ready", dict(diagnosis, verdict="member_unreachable"),
                            registered=True)["repairable"]
    assert health.event("ocm", "member2", "not_ready", dict(diagnosis, verdict="agent_not_running"), registered=True)["repairable"]
    assert health.event("ocm", "member2", "removed", None)["verdict"] is None


@pytest.mark.parametrize("name", ["all", "members", "member2"])
def test_a_member_the_collection_did_not_register_is_reported_never_acted_on(name):
    """Its name is whoever created the member object's - an agent's, a bootstrap token's: reported, never repairable. The
    event still names its hosts: without them, ansible-rulebook would run an action on all of the ruleset's."""
    found = health.event("ocm", name, "lease_expired", {"verdict": "lease_expired"})
    assert found["member"] == name and found["transition"] == "lease_expired" and found["verdict"] == "lease_expired"
    assert found["registered"] is False and found["repairable"] is False and found["meta"] == {"hosts": name}
