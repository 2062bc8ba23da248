"""The decision of cluster_prune (a pure function of facts, options and the time) and its run on an in-memory hub."""

import datetime

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm, prune
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.lease_lock import LEASE
from ansible_collections.multicluster.fleet.plugins.module_utils.resources import CSR

NOW = datetime.datetime(2026, 12, 4, 12, 0, 0, tzinfo=datetime.timezone.utc)
HOUR_AGO = "2026-12-04T11:00:00Z"
SECONDS_AGO = "2026-12-04T11:59:50.123456Z"


def cluster(**changes):
    """The facts of a Pull member whose agent renewed its Lease ten seconds ago, marked by the collection."""
    found = {"name": "member2", "marked": True, "push": False, "ready": True, "ready_since": HOUR_AGO,
             "lease_renewed": SECONDS_AGO, "lease_grace_seconds": 40}
    found.update(changes)
    return found


def decide(found, listed=("member1", "member2"), unreachable_after=600, force=False, unmarked=False):
    return prune.decide(found, None if listed is None else set(listed), unreachable_after, force, unmarked, NOW)


def test_a_listed_member_that_answers_is_kept():
    decision = decide(cluster())
    assert (decision["action"], decision["reasons"], decision["silent_seconds"]) == ("keep", [], None)
    assert decision["why"] == "listed; its agent renewed its Lease 9s ago"


def test_a_member_the_inventory_no_longer_lists_is_removed_once_silent():
    decision = decide(cluster(lease_renewed=HOUR_AGO), listed=["member1"], unreachable_after=None)
    assert (decision["action"], decision["reasons"], decision["silent_seconds"]) == ("remove", ["not_listed"], 3600)
    assert decision["why"] == "not listed in the inventory; its agent last renewed its Lease at %s" % HOUR_AGO


def test_an_unlisted_member_that_still_answers_needs_force():
    kept = decide(cluster(), listed=["member1"])
    assert (kept["action"], kept["reasons"]) == ("keep", ["not_listed"])
    assert "but its agent renewed its Lease 9s ago, so it still answers (an agent would register it again)" in kept["why"]
    assert "force=true" in kept["why"]
    assert decide(cluster(), listed=["member1"], force=True)["action"] == "remove"


def test_silence_longer_than_unreachable_after_makes_a_listed_member_a_candidate():
    decision = decide(cluster(lease_renewed=HOUR_AGO))
    assert (decision["action"], decision["reasons"]) == ("remove", ["unreachable"])
    assert decision["why"].startswith("silent for 3600s, longer than 600s; ")
    assert decide(cluster(lease_renewed=HOUR_AGO), unreachable_after=7200)["action"] == "keep"
    # the Lease is what tells, not a ready condition the hub has not updated yet
    assert decide(cluster(lease_renewed=HOUR_AGO, ready=True))["action"] == "remove"


def test_within_the_lease_grace_a_member_answers_even_past_unreachable_after():
    decision = decide(cluster(lease_renewed="2026-12-04T11:59:30Z", lease_grace_seconds=40), unreachable_after=10)
    assert (decision["action"], decision["reasons"], decision["silent_seconds"]) == ("keep", [], None)


def test_a_push_member_is_silent_since_its_ready_condition_changed():
    push = dict(cluster(push=True, lease_renewed=None, lease_grace_seconds=None), name="member1")
    assert decide(push)["action"] == "keep"
    down = dict(push, ready=False, ready_since=HOUR_AGO)
    decision = decide(down)
    assert (decision["action"], decision["reasons"], decision["silent_seconds"]) == ("remove", ["unreachable"], 3600)
    assert "the hub has reported it not ready since %s" % HOUR_AGO in decision["why"]


def test_a_candidate_the_listing_did_not_name_is_kept_when_removals_are_confirmed():
    silent = cluster(lease_renewed=HOUR_AGO)
    kept = prune.decide(silent, {"member1"}, None, False, False, NOW, confirmed={"member3"})
    assert (kept["action"], kept["reasons"]) == ("keep", ["not_listed"])
    assert kept["why"].endswith("but it is not among the clusters confirmed for removal (a candidate since they were "
                                "listed): list again")
    assert prune.decide(silent, {"member1"}, None, False, False, NOW, confirmed={"member2"})["action"] == "remove"


def test_a_cluster_this_collection_did_not_register_is_kept_unless_unmarked():
    foreign = cluster(name="foreign", marked=False, lease_renewed=HOUR_AGO)
    kept = decide(foreign)
    assert (kept["action"], kept["reasons"]) == ("keep", ["not_listed", "unreachable"])
    assert "not registered by this collection (no multicluster.fleet/cluster-id annotation)" in kept["why"]
    assert decide(foreign, unmarked=True)["action"] == "remove"


def test_without_listed_no_cluster_is_a_candidate_for_not_being_listed():
    decision = decide(cluster(name="anything"), listed=None)
    assert (decision["action"], decision["reasons"]) == ("keep", [])
    assert decision["why"].startswith("not a candidate; ")


def test_facts_of_member_objects():
    pull = {"metadata": {"name": "m2", "annotations": {ocm.CLUSTER_ID_ANNOTATION: "id"}},
            "spec": {"syncMode": "Pull"}, "status": {"conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": HOUR_AGO}]}}
    lease = {"spec": {"renewTime": SECONDS_AGO, "leaseDurationSeconds": 40}}
    assert prune.facts("karmada", pull, lease) == {
        "name": "m2", "marked": True, "push": False, "ready": False, "ready_since": HOUR_AGO,
        "lease_renewed": SECONDS_AGO, "lease_grace_seconds": 40}
    managed = {"metadata": {"name": "m3", "creationTimestamp": HOUR_AGO}, "spec": {}}
    found = prune.facts("ocm", managed, None)
    assert (found["marked"], found["ready"], found["ready_since"], found["lease_renewed"]) == (False, False, HOUR_AGO, None)


# --- the run, on the in-memory hub -----------------------------------------------------------------------------------

PARAMS = dict(listed=["member1"], unreachable_after=None, force=False, unmarked=False, wait_timeout=5, wait_sleep=1)


def push_cluster(hub, name, ready_since):
    hub.add(karmada.CLUSTER, dict(karmada.push_cluster(name, "id-" + name, "https://" + name, karmada.DEFAULT_CLUSTER_NAMESPACE),
                                  status={"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": ready_since}]}))


def test_prune_removes_a_silent_unlisted_push_member_and_keeps_the_rest(fake_cluster):
    hub = fake_cluster
    push_cluster(hub, "member1", HOUR_AGO)
    push_cluster(hub, "member3", HOUR_AGO)
    hub.add(karmada.CLUSTER, {"metadata": {"name": "foreign"}, "spec": {"syncMode": "Push"}})
    planned = prune.prune(hub, "karmada", PARAMS, check_mode=True, now=NOW)
    assert (planned["removed"], planned["kept"], planned["changed"]) == (["member3"], ["foreign", "member1"], True)
    assert "hub Cluster/member3: deleted" in planned["changes"]
    assert hub.request("GET", karmada.CLUSTER.path(None, "member3"))  # check mode wrote nothing
    done = prune.prune(hub, "karmada", PARAMS, now=NOW)
    assert done["removed"] == ["member3"] and done["changed"] is True
    assert any("stay on the member cluster" in w for w in done["warnings"])
    again = prune.prune(hub, "karmada", PARAMS, now=NOW)
    assert (again["removed"], again["changed"]) == ([], False)


def test_prune_removes_only_what_was_confirmed(fake_cluster):
    hub = fake_cluster
    push_cluster(hub, "member3", HOUR_AGO)
    push_cluster(hub, "member4", HOUR_AGO)  # silent and unlisted too, but not in the listing the user confirmed
    done = prune.prune(hub, "karmada", dict(PARAMS, confirmed=["member3"]), now=NOW)
    assert (done["removed"], done["kept"]) == (["member3"], ["member4"])
    assert hub.request("GET", karmada.CLUSTER.path(None, "member4"))


def test_prune_removes_an_ocm_cluster_whose_lease_ran_out(fake_cluster):
    hub = fake_cluster
    hub.add(ocm.MANAGED_CLUSTER, {"metadata": {"name": "member2", "annotations": {ocm.CLUSTER_ID_ANNOTATION: "id"}},
                                  "spec": {"leaseDurationSeconds": 60}})
    hub.add(LEASE, {"metadata": {"name": ocm.CLUSTER_LEASE, "namespace": "member2"}, "spec": {"renewTime": HOUR_AGO}})
    done = prune.prune(hub, "ocm", dict(PARAMS, listed=None, unreachable_after=600), now=NOW)
    assert done["removed"] == ["member2"] and done["clusters"][0]["reasons"] == ["unreachable"]


def test_prune_removes_a_pull_member_with_its_works_rbac_and_csrs(fake_cluster):
    hub = fake_cluster
    hub.add(karmada.CLUSTER, {"metadata": {"name": "member2", "annotations": {ocm.CLUSTER_ID_ANNOTATION: "id"}},
                              "spec": {"syncMode": "Pull", "id": "id"}})
    hub.add(LEASE, {"metadata": {"name": "member2", "namespace": "karmada-cluster"},
                    "spec": {"renewTime": HOUR_AGO, "leaseDurationSeconds": 40}})
    hub.add(karmada.WORK, {"metadata": {"name": "app", "namespace": "karmada-es-member2"}})
    hub.add(CSR, {"metadata": {"name": "member2-abcde", "labels": {"karmada.io/system": "true"}}, "spec": {}})
    hub.add(CSR, {"metadata": {"name": "member1-abcde", "labels": {"karmada.io/system": "true"}}, "spec": {}})
    for kind, desired in karmada.agent_hub_objects("member2"):
        hub.add(kind, desired)
    done = prune.prune(hub, "karmada", dict(PARAMS, listed=None, unreachable_after=600), now=NOW)
    assert done["removed"] == ["member2"]
    for line in ("hub Work/karmada-es-member2/app: deleted", "hub Cluster/member2: deleted",
                 "hub ClusterRole/system:karmada:member2:agent: deleted", "hub Namespace/karmada-es-member2: deleted",
                 "hub CertificateSigningRequest/member2-abcde: deleted"):
        assert line in done["changes"], done["changes"]
    assert hub.request("GET", CSR.path(None, "member1-abcde"))
    assert not any(path.endswith("/member2") and "clusters" in path for path in hub.objects)


def test_bad_options_fail_before_any_request(fake_cluster):
    with pytest.raises(FleetError, match="invalid cluster name 'Member1'"):
        prune.prune(fake_cluster, "karmada", dict(PARAMS, listed=["Member1"]))
    with pytest.raises(FleetError, match="invalid cluster name 'Member3'"):
        prune.prune(fake_cluster, "karmada", dict(PARAMS, confirmed=["Member3"]))
    with pytest.raises(FleetError, match="unreachable_after must not be negative"):
        prune.prune(fake_cluster, "karmada", dict(PARAMS, unreachable_after=-5))
    assert fake_cluster.calls == []
