"""The decision of cluster_prune (a pure function of facts, options and the time) and its run on an in-memory hub."""

import datetime

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import prune
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import hub_record
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.lease_lock import LEASE
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CONFIG_MAP, CSR, SECRET

NOW = datetime.datetime(2026, 12, 4, 12, 0, 0, tzinfo=datetime.timezone.utc)
HOUR_AGO = "2026-12-04T11:00:00Z"
SECONDS_AGO = "2026-12-04T11:59:50.123456Z"


def cluster(**changes):
    """The facts of a Pull member whose agent renewed its Lease ten seconds ago, registered by the collection."""
    found = {"name": "member2", "unregistered": None, "push": False, "ready": True, "ready_since": HOUR_AGO,
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
    foreign = cluster(name="foreign", unregistered="not registered by this collection (no hub record X)",
                      lease_renewed=HOUR_AGO)
    kept = decide(foreign)
    assert (kept["action"], kept["reasons"]) == ("keep", ["not_listed", "unreachable"])
    assert "but not registered by this collection (no hub record X): set unmarked=true" in kept["why"]
    assert decide(foreign, unmarked=True)["action"] == "remove"


def test_without_listed_no_cluster_is_a_candidate_for_not_being_listed():
    decision = decide(cluster(name="anything"), listed=None)
    assert (decision["action"], decision["reasons"]) == ("keep", [])
    assert decision["why"].startswith("not a candidate; ")


def test_facts_of_member_objects():
    pull = {"metadata": {"name": "m2", "annotations": {hub_record.CLUSTER_ID_ANNOTATION: "id"}},
            "spec": {"syncMode": "Pull", "id": "id"}, "status": {"conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": HOUR_AGO}]}}
    lease = {"spec": {"renewTime": SECONDS_AGO, "leaseDurationSeconds": 40}}
    assert prune.facts("karmada", pull, lease, {"cluster-name": "m2", "cluster-id": "id"}) == {
        "name": "m2", "unregistered": None, "push": False, "ready": False, "ready_since": HOUR_AGO,
        "lease_renewed": SECONDS_AGO, "lease_grace_seconds": 40}
    managed = {"metadata": {"name": "m3", "creationTimestamp": HOUR_AGO}, "spec": {}}
    found = prune.facts("ocm", managed, None)
    assert (found["unregistered"], found["ready"], found["ready_since"], found["lease_renewed"]) == (
        "not registered by this collection (no hub record ConfigMap/kube-system/multicluster-fleet.ocm.m3)", False,
        HOUR_AGO, None)


def test_the_annotation_anyone_can_set_does_not_make_a_cluster_registered():
    forged = {"metadata": {"name": "karmada-cert", "annotations": {hub_record.CLUSTER_ID_ANNOTATION: "anything"}},
              "spec": {"syncMode": "Push", "id": "anything"}}
    problem = prune.facts("karmada", forged, None)["unregistered"]
    assert problem.startswith("not registered by this collection: there is no hub record "
                              "ConfigMap/kube-system/multicluster-fleet.karmada.karmada-cert (its multicluster.fleet/cluster-id "
                              "annotation does not count")


def test_a_record_of_another_cluster_id_does_not_count():
    obj = {"metadata": {"name": "m2"}, "spec": {"syncMode": "Pull", "id": "new-id"}}
    problem = prune.facts("karmada", obj, None, {"cluster-name": "m2", "cluster-id": "old-id"})["unregistered"]
    assert problem == ("its hub record ConfigMap/kube-system/multicluster-fleet.karmada.m2 is of cluster id old-id, but "
                       "the Cluster says new-id: not the cluster this collection registered")


# --- the run, on the in-memory hub -----------------------------------------------------------------------------------

PARAMS = dict(listed=["member1"], unreachable_after=None, force=False, unmarked=False, wait_timeout=5, wait_sleep=1)


def push_cluster(hub, name, ready_since, record=True):
    """A Push member as cluster_join leaves it: the Cluster, its Secrets owned by it and (``record``) the hub record."""
    options = dict(cluster_name=name, cluster_namespace=karmada.DEFAULT_CLUSTER_NAMESPACE, api_endpoint="https://" + name)
    obj = hub.add(karmada.CLUSTER, dict(karmada.push_cluster(options, "id-" + name),
                                        status={"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": ready_since}]}))
    for secret in (name, karmada.impersonator_secret_name(name)):
        hub.add(SECRET, karmada.hub_secret(secret, karmada.DEFAULT_CLUSTER_NAMESPACE, {}, obj))
    if record:
        hub.add(CONFIG_MAP, hub_record.desired("karmada", name, "id-" + name, karmada.DEFAULT_CLUSTER_NAMESPACE))
    return obj


def test_prune_removes_a_silent_unlisted_push_member_and_keeps_the_rest(fake_cluster):
    hub = fake_cluster
    push_cluster(hub, "member1", HOUR_AGO)
    push_cluster(hub, "member3", HOUR_AGO)
    hub.add(karmada.CLUSTER, {"metadata": {"name": "foreign"}, "spec": {"syncMode": "Push"}})
    planned = prune.prune(hub, "karmada", PARAMS, check_mode=True, now=NOW)
    assert (planned["removed"], planned["kept"], planned["changed"]) == (["member3"], ["foreign", "member1"], True)
    assert "hub Cluster/member3: deleted" in planned["changes"]
    assert planned["clusters"][-1]["deletes"] == [
        "Cluster/member3", "Secret/karmada-cluster/member3", "Secret/karmada-cluster/member3-impersonator",
        "ConfigMap/kube-system/multicluster-fleet.karmada.member3"]
    assert hub.request("GET", karmada.CLUSTER.path(None, "member3"))  # check mode wrote nothing
    done = prune.prune(hub, "karmada", PARAMS, now=NOW)
    assert done["removed"] == ["member3"] and done["changed"] is True
    for ref in planned["clusters"][-1]["deletes"]:
        assert "hub %s: deleted" % ref in done["changes"]
    again = prune.prune(hub, "karmada", PARAMS, now=NOW)
    assert (again["removed"], again["changed"]) == ([], False)


def test_what_to_delete_is_never_taken_from_the_object(fake_cluster):
    """Clusters a member agent can create: one whose secretRef names a hub Secret elsewhere, one named like another
    member's impersonator Secret. Even with unmarked and force they are kept, saying why, and the listing goes on."""
    hub = fake_cluster
    member1 = push_cluster(hub, "member1", HOUR_AGO)
    push_cluster(hub, "member3", HOUR_AGO)
    hub.add(SECRET, {"metadata": {"name": "karmada-cert", "namespace": "kube-system"}, "data": {}})
    hub.add(karmada.CLUSTER, {"metadata": {"name": "karmada-cert", "annotations": {hub_record.CLUSTER_ID_ANNOTATION: "x"}},
                              "spec": {"syncMode": "Push", "id": "x",
                                       "secretRef": {"namespace": "kube-system", "name": "karmada-cert"}}})
    hub.add(karmada.CLUSTER, {"metadata": {"name": "member1-impersonator"},
                              "spec": {"syncMode": "Push", "secretRef": {"namespace": "karmada-cluster",
                                                                         "name": "member1-impersonator"}}})
    params = dict(PARAMS, unmarked=True, force=True)
    for check_mode, confirmed in ((True, None), (False, ["member3"])):  # the listing, then the removal of what it named
        done = prune.prune(hub, "karmada", dict(params, confirmed=confirmed), check_mode=check_mode, now=NOW)
        assert (done["removed"], done["kept"]) == (["member3"], ["karmada-cert", "member1", "member1-impersonator"])
        why = dict((c["name"], c["why"]) for c in done["clusters"])
        assert why["karmada-cert"].endswith(
            "not removed: its spec.secretRef names Secret kube-system/karmada-cert, not karmada-cluster/karmada-cert, the "
            "one this collection writes for it: prune deletes no Secret a member object names; check the Cluster and "
            "remove it by hand")
        assert why["member1-impersonator"].endswith(
            "not removed: Secret karmada-cluster/member1-impersonator is not owned by this Cluster (no ownerReference to "
            "its uid): it belongs to another cluster or was written by someone else; check it and remove the Cluster by "
            "hand")
    assert hub.request("GET", SECRET.path("kube-system", "karmada-cert"))
    assert hub.request("GET", SECRET.path("karmada-cluster", "member1-impersonator"))["metadata"]["ownerReferences"][0][
        "uid"] == member1["metadata"]["uid"]
    assert not any("karmada-cert" in line or "member1" in line for line in done["changes"])


def test_a_pull_member_judged_gone_has_its_works_released(fake_cluster):
    """Only a Pull member's agent removes the execution controller's finalizer: for an agent the hub judges gone, prune
    removes it, as karmadactl unjoin --force does, instead of waiting for it."""
    hub = fake_cluster
    hub.finalizers = True
    hub.add(karmada.CLUSTER, {"metadata": {"name": "member2"}, "spec": {"syncMode": "Pull", "id": "id"}})
    hub.add(CONFIG_MAP, hub_record.desired("karmada", "member2", "id"))
    hub.add(LEASE, {"metadata": {"name": "member2", "namespace": "karmada-cluster"},
                    "spec": {"renewTime": HOUR_AGO, "leaseDurationSeconds": 40}})
    hub.add(karmada.WORK, {"metadata": {"name": "app", "namespace": "karmada-es-member2",
                                        "finalizers": [karmada.EXECUTION_FINALIZER]}})
    done = prune.prune(hub, "karmada", dict(PARAMS, listed=None, unreachable_after=600, wait_timeout=1), now=NOW)
    assert done["removed"] == ["member2"]
    assert done["changes"][:2] == ["hub Work/karmada-es-member2/app: deleted", "hub Work/karmada-es-member2/app: updated"]
    assert not any("/works/" in path for path in hub.objects)


def test_prune_removes_only_what_was_confirmed(fake_cluster):
    hub = fake_cluster
    push_cluster(hub, "member3", HOUR_AGO)
    push_cluster(hub, "member4", HOUR_AGO)  # silent and unlisted too, but not in the listing the user confirmed
    done = prune.prune(hub, "karmada", dict(PARAMS, confirmed=["member3"]), now=NOW)
    assert (done["removed"], done["kept"]) == (["member3"], ["member4"])
    assert hub.request("GET", karmada.CLUSTER.path(None, "member4"))


def test_prune_removes_an_ocm_cluster_whose_lease_ran_out(fake_cluster):
    hub = fake_cluster
    hub.add(ocm.MANAGED_CLUSTER, {"metadata": {"name": "member2", "annotations": {hub_record.CLUSTER_ID_ANNOTATION: "id"}},
                                  "spec": {"leaseDurationSeconds": 60}})
    hub.add(CONFIG_MAP, hub_record.desired("ocm", "member2", "id"))
    hub.add(LEASE, {"metadata": {"name": ocm.CLUSTER_LEASE, "namespace": "member2"}, "spec": {"renewTime": HOUR_AGO}})
    done = prune.prune(hub, "ocm", dict(PARAMS, listed=None, unreachable_after=600), now=NOW)
    assert done["removed"] == ["member2"] and done["clusters"][0]["reasons"] == ["unreachable"]
    # the registration agent's Lease has no owner and no hub controller removes it: prune does
    assert done["clusters"][0]["deletes"] == ["ManagedCluster/member2", "Lease/member2/managed-cluster-lease",
                                              "ConfigMap/kube-system/multicluster-fleet.ocm.member2"]
    assert done["changes"] == ["hub %s: deleted" % ref for ref in done["clusters"][0]["deletes"]]


def test_prune_removes_a_pull_member_with_its_works_rbac_and_csrs(fake_cluster):
    hub = fake_cluster
    hub.add(karmada.CLUSTER, {"metadata": {"name": "member2", "annotations": {hub_record.CLUSTER_ID_ANNOTATION: "id"}},
                              "spec": {"syncMode": "Pull", "id": "id"}})
    hub.add(CONFIG_MAP, hub_record.desired("karmada", "member2", "id"))
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
