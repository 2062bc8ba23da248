"""Unit tests for lease_lock.py: the Lease that lets one registration of a member run at a time (taken, waited for,
taken over when expired, renewed, lost, released). Time is a fake clock advanced by the fake ``sleep``."""

import datetime

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.registration import lease_lock
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from register_fakes import CLUSTER
from .lease_fakes import LEASE_PATH, START, Member, hold, lock_of, writes


# --- the Lease ---------------------------------------------------------------------------------------


def test_a_free_lease_is_taken_and_given_back(time_):
    member = Member()
    lock = lock_of(member, time_)
    assert lock.acquire(timeout=30) is None and time_.naps == []
    lease = member.objects[LEASE_PATH]
    assert lease["kind"] == "Lease" and lease["apiVersion"] == "coordination.k8s.io/v1"
    assert lease["spec"] == {"holderIdentity": "runner-b", "leaseDurationSeconds": 60, "leaseTransitions": 0,
                             "acquireTime": "2030-01-02T03:04:05.000000Z", "renewTime": "2030-01-02T03:04:05.000000Z"}
    assert lock.release() is None and LEASE_PATH not in member.objects
    assert lock.release() is None  # given back once


def test_the_default_holder_names_this_run():
    first, second = lease_lock.RegistrationLock(Member(), CLUSTER), lease_lock.RegistrationLock(Member(), CLUSTER)
    host, pid, random_part = first.holder.split("/")
    assert host and int(pid) > 0 and len(random_part) == 8 and first.holder != second.holder


def test_a_held_lease_is_waited_for_until_released(time_):
    member = Member()
    hold(member, "runner-a", START)
    time_.actions = [lambda: None, lambda: member.objects.pop(LEASE_PATH)]  # runner-a finishes during the second nap
    waited = lock_of(member, time_).acquire(timeout=30)
    assert waited == {"holder": "runner-a", "since": "2030-01-02T03:04:00.000000Z",
                      "lease": "Lease/kube-system/multicluster-fleet-registration"}
    assert time_.naps == [2, 2]
    assert member.objects[LEASE_PATH]["spec"]["holderIdentity"] == "runner-b"


def test_a_lease_held_past_the_timeout_fails_naming_the_other_run(time_):
    member = Member()
    hold(member, "runner-a", START + datetime.timedelta(seconds=1000))  # renewed "in the future": alive throughout
    with pytest.raises(FleetError) as exc_info:
        lock_of(member, time_).acquire(timeout=7)
    assert exc_info.value.msg == (
        "cluster 'member' (https://fake): another run (runner-a) has been registering cluster member1 since "
        "2030-01-02T03:20:40.000000Z and still held Lease/kube-system/multicluster-fleet-registration after 7s: run "
        "again once it has finished (the Lease of a run that was stopped expires 60s after its last renewal)")
    assert exc_info.value.details["waited_for"]["holder"] == "runner-a"
    assert sum(time_.naps) >= 7 and writes(member) == []


def test_an_expired_lease_is_taken_over_guarded_by_its_resource_version(time_):
    member = Member()
    stale = hold(member, "runner-killed", START - datetime.timedelta(seconds=61))
    assert lock_of(member, time_).acquire(timeout=30) is None and time_.naps == []
    (method, path, dummy), = [c for c in member.calls if c[0] != "GET"]
    assert (method, path) == ("PATCH", LEASE_PATH)
    lease = member.objects[LEASE_PATH]
    assert lease["spec"]["holderIdentity"] == "runner-b" and lease["spec"]["leaseTransitions"] == 1
    assert lease["metadata"]["resourceVersion"] != stale["metadata"]["resourceVersion"]


@pytest.mark.parametrize("spec", [{"holderIdentity": ""}, {"holderIdentity": "x", "renewTime": "garbage"}])
def test_a_lease_without_holder_or_time_is_free(time_, spec):
    member = Member()
    member.add(lease_lock.LEASE, {"metadata": {"name": "multicluster-fleet-registration", "namespace": "kube-system"},
                                  "spec": spec})
    assert lock_of(member, time_).acquire(timeout=0) is None
    assert member.objects[LEASE_PATH]["spec"]["holderIdentity"] == "runner-b"


def test_losing_the_takeover_race_means_waiting(time_):
    member = Member()
    hold(member, "runner-killed", START - datetime.timedelta(seconds=120))
    original, raced = member.request, []

    def request(method, path, body=None, query=None, content_type="application/json", timeout=None):
        if method == "PATCH" and not raced:  # runner-c took it over between our read and our update ...
            raced.append(path)
            lease = member.objects[LEASE_PATH]
            lease["spec"].update(holderIdentity="runner-c", renewTime=lease_lock.micro_time(time_.wall))
            lease["metadata"]["resourceVersion"] = "999"
        return original(method, path, body, query, content_type, timeout)
    member.request = request
    time_.actions = [lambda: member.objects.pop(LEASE_PATH)]  # ... and finished during our first nap
    waited = lock_of(member, time_).acquire(timeout=30)
    assert raced and waited["holder"] == "runner-c" and member.objects[LEASE_PATH]["spec"]["holderIdentity"] == "runner-b"


def test_the_lease_is_renewed_every_third_of_its_duration_and_can_be_lost(time_):
    member = Member()
    lock = lock_of(member, time_)
    lock.acquire(timeout=0)
    time_.advance(19)
    lock.renew()
    assert member.objects[LEASE_PATH]["spec"]["renewTime"] == "2030-01-02T03:04:05.000000Z"
    time_.advance(1)
    lock.renew()
    assert member.objects[LEASE_PATH]["spec"]["renewTime"] == "2030-01-02T03:04:25.000000Z"
    lock.renew(force=True)
    # not renewed for longer than its duration: runner-c took it over
    member.objects[LEASE_PATH]["spec"]["holderIdentity"] = "runner-c"
    member.objects[LEASE_PATH]["metadata"]["resourceVersion"] = "999"
    with pytest.raises(FleetError, match=r"this run lost Lease/kube-system/multicluster-fleet-registration to "
                                         r"runner-c \(it was not renewed for 60s\)"):
        lock.renew(force=True)
    assert lock.release() is None and member.objects[LEASE_PATH]["spec"]["holderIdentity"] == "runner-c"


def test_release_leaves_a_lease_taken_over_meanwhile(time_):
    member = Member()
    lock = lock_of(member, time_)
    lock.acquire(timeout=0)
    member.objects[LEASE_PATH]["metadata"]["resourceVersion"] = "999"  # runner-c's now
    assert lock.release() is None and LEASE_PATH in member.objects


def test_release_on_an_unreachable_member_warns(time_):
    member = Member()
    lock = lock_of(member, time_)
    lock.acquire(timeout=0)
    member.down = True
    warning = lock.release()
    assert "is unreachable" in warning and "stays until it expires, 60s after its last renewal" in warning


def test_held_by_another_only_reads(time_):
    member = Member()
    lock = lock_of(member, time_)
    assert lock.held_by_another() is None
    hold(member, "runner-a", START - datetime.timedelta(seconds=61))
    assert lock.held_by_another() is None  # expired
    hold(member, "runner-a", START)
    assert lock.held_by_another()["holder"] == "runner-a"
    assert writes(member) == []
