import functools

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import cluster_names, hub_members
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER
from .cluster_objects import KARMADA_CLUSTER, OCM_CLUSTER


def test_karmada_summary():
    summary = hub_members.summarize("karmada", KARMADA_CLUSTER)
    assert {k: summary[k] for k in ("name", "engine", "mode", "id", "kubernetes_version", "ready", "joined",
                                    "accepted", "provider", "region", "zones", "api_endpoint", "labels")} == {
        "name": "kmember1", "engine": "karmada", "mode": "Push", "id": "004830c5-3081-41f2-afc4-e68d86e4f96b",
        "kubernetes_version": "v1.20.2", "ready": True, "joined": None, "accepted": None, "provider": "aws",
        "region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"], "api_endpoint": "https://127.0.0.1:18443",
        "labels": {"env": "prod"}}
    assert [c["type"] for c in summary["conditions"]] == ["CompleteAPIEnablements", "Ready"]
    assert summary["object"]["spec"] == KARMADA_CLUSTER["spec"]
    assert "managedFields" not in summary["object"]["metadata"]


def test_karmada_summary_without_status_and_with_single_zone():
    summary = hub_members.summarize("karmada", {"metadata": {"name": "new"}, "spec": {"syncMode": "Pull", "zone": "z1"}})
    assert summary["ready"] is False and summary["kubernetes_version"] is None
    assert summary["mode"] == "Pull" and summary["zones"] == ["z1"] and summary["conditions"] == []


def test_ocm_summary():
    summary = hub_members.summarize("ocm", OCM_CLUSTER)
    assert summary["engine"] == "ocm" and summary["mode"] == "Pull"
    assert summary["accepted"] is True and summary["joined"] is True
    assert summary["ready"] is False  # Available is Unknown: the lease stopped
    assert summary["id"] == "8e0a9f7c" and summary["provider"] == "AWS"
    assert summary["api_endpoint"] == "https://127.0.0.1:19443"
    assert summary["kubernetes_version"] == "v1.20.2"


def test_ocm_summary_of_a_fresh_registration():
    summary = hub_members.summarize("ocm", {"metadata": {"name": "c9"}, "spec": {"hubAcceptsClient": False}})
    assert (summary["accepted"], summary["joined"], summary["ready"]) == (False, False, False)


def test_member_clusters_sorted_and_filtered(fake_cluster):
    for name in ("b", "a"):
        fake_cluster.add(CLUSTER, {"metadata": {"name": name}, "spec": {"syncMode": "Push"}})
    assert [c["name"] for c in hub_members.member_clusters(fake_cluster, "karmada")] == ["a", "b"]
    hub_members.member_clusters(fake_cluster, "karmada", name="a", label_selectors=["env=prod", "tier!=db"])
    method, path, query = fake_cluster.calls[-1]
    assert path == CLUSTER.path()
    assert query == {"labelSelector": "env=prod,tier!=db", "fieldSelector": "metadata.name=a"}


def test_member_kinds():
    assert hub_members.member_kind("karmada") is CLUSTER
    assert hub_members.member_kind("ocm") is MANAGED_CLUSTER


@pytest.mark.parametrize("engine, name, fragment", [
    ("karmada", "Member1", "Karmada cluster names are DNS-1123 labels"), ("karmada", "a" * 49, "of 1 to 48 characters"),
    ("karmada", "", "invalid cluster name ''"), ("ocm", "a" * 64, "of 1 to 63 characters"),
    ("ocm", "Member1", "OCM cluster names are DNS-1123 labels"), ("ocm", "", "invalid cluster name ''"),
])
def test_cluster_names_are_checked_before_any_request(fake_cluster, engine, name, fragment):
    with pytest.raises(FleetError) as caught:
        hub_members.member_clusters(fake_cluster, engine, name=name)
    assert fragment in caught.value.msg and fake_cluster.calls == []
    cluster_names.validate_cluster_name(engine, "a" * (48 if engine == "karmada" else 63))


class TestReadMembers:
    @pytest.fixture
    def hub(self, fake_cluster):
        fake_cluster.add(CLUSTER, {"metadata": {"name": "m1"}})
        fake_cluster.add(CLUSTER, {"metadata": {"name": "m2", "deletionTimestamp": "2026-12-04T10:00:00Z"}})
        return fake_cluster

    def test_registered_clusters_by_name(self, hub):
        found = hub_members.read_members(hub, "karmada", ["m1"])
        assert list(found) == ["m1"] and found["m1"]["metadata"]["name"] == "m1"

    def test_every_problem_named_in_one_error(self, hub):
        with pytest.raises(FleetError) as caught:
            hub_members.read_members(hub, "karmada", ["m9", "m1", "m2"], purpose="taint")
        assert caught.value.msg == ("cluster 'hub' (https://fake): cannot taint every cluster, nothing was written: "
                                    "cluster 'm9' is not registered on the hub (no Cluster named m9); "
                                    "cluster 'm2' is being deleted from the hub")
        assert caught.value.details == {"changed": False, "clusters_failed": ["m2", "m9"]}

    def test_skip_leaves_out_the_unregistered_but_not_one_being_deleted(self, hub):
        assert list(hub_members.read_members(hub, "karmada", ["m9", "m1"], unregistered="skip")) == ["m1"]
        with pytest.raises(FleetError, match="cluster 'm2' is being deleted from the hub$"):
            hub_members.read_members(hub, "karmada", ["m9", "m2"], unregistered="skip")


def ready(name, status="True", condition="Ready"):
    return {"metadata": {"name": name, "labels": {"env": "prod"}}, "spec": {"syncMode": "Pull"},
            "status": {"conditions": [{"type": condition, "status": status, "reason": "R", "message": "m"}]}}


class TestWaitForClusters:
    def test_waits_until_every_listed_cluster_is_ready(self, fake_cluster, monkeypatch):
        fake_cluster.add(CLUSTER, ready("a"))
        pending = fake_cluster.add(CLUSTER, ready("b", "False"))
        slept = []

        def sleep(seconds):  # the Karmada controller sets b Ready while the module sleeps
            slept.append(seconds)
            pending["status"]["conditions"][0]["status"] = "True"
        monkeypatch.setattr(resources, "wait_until", functools.partial(resources.wait_until, sleep=sleep))
        clusters = hub_members.wait_for_clusters(fake_cluster, "karmada", label_selectors=["env=prod"], timeout=60, interval=3)
        assert [(c["name"], c["ready"]) for c in clusters] == [("a", True), ("b", True)]
        assert slept == [3] and len([c for c in fake_cluster.calls if c[0] == "GET"]) == 2
        assert fake_cluster.calls[-1][2]["labelSelector"] == "env=prod"

    def test_timeout_names_the_clusters_not_there_yet_and_what_was_seen(self, fake_cluster):
        fake_cluster.add(CLUSTER, ready("a"))
        fake_cluster.add(CLUSTER, ready("b", "False"))
        with pytest.raises(WaitTimeout) as caught:
            hub_members.wait_for_clusters(fake_cluster, "karmada", timeout=0)
        assert caught.value.msg == ("timed out after 0s waiting for the member clusters on cluster 'hub' (https://fake) "
                                    "to have Ready=True; last seen: b: Ready=False (R: m)")
        assert [c["name"] for c in caught.value.details["clusters"]] == ["a", "b"]

    def test_a_named_cluster_must_exist(self, fake_cluster):
        with pytest.raises(WaitTimeout) as caught:
            hub_members.wait_for_clusters(fake_cluster, "ocm", name="c1", timeout=0)
        assert caught.value.msg == ("timed out after 0s waiting for member cluster c1 on cluster 'hub' (https://fake) to "
                                    "have ManagedClusterConditionAvailable=True; last seen: c1 is not registered (no "
                                    "ManagedCluster of that name)")
        fake_cluster.add(MANAGED_CLUSTER, ready("c1", condition="ManagedClusterConditionAvailable"))
        assert [c["name"] for c in hub_members.wait_for_clusters(fake_cluster, "ocm", name="c1", timeout=0)] == ["c1"]

    def test_with_the_member_its_agent_must_run_its_image(self, fake_cluster):
        from conftest import FakeCluster
        member = FakeCluster("member2")
        fake_cluster.add(CLUSTER, ready("member2"))
        agent = {"metadata": {"name": "karmada-agent", "namespace": "karmada-system", "generation": 2},
                 "spec": {"replicas": 1, "template": {"spec": {"containers": [
                     {"name": "karmada-agent", "image": "unreachable.invalid/karmada/karmada-agent:v1.19.0"}]}}},
                 "status": {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 0}}
        member.add(resources.DEPLOYMENT, agent)
        with pytest.raises(WaitTimeout) as caught:
            hub_members.wait_for_clusters(fake_cluster, "karmada", name="member2", timeout=0, member=member)
        assert caught.value.msg.startswith(
            "timed out after 0s waiting for member cluster member2 on cluster 'hub' (https://fake) to have Ready=True and "
            "its agent to run its image; last seen: member2: its agent has not rolled out image "
            "unreachable.invalid/karmada/karmada-agent:v1.19.0 (no agent certificate: ")
        agent["status"]["availableReplicas"] = 1
        member.add(resources.DEPLOYMENT, agent)
        clusters = hub_members.wait_for_clusters(fake_cluster, "karmada", name="member2", timeout=0, member=member)
        assert clusters[0]["agent"]["rolled_out"] is True

    def test_a_push_member_has_no_agent_to_wait_for(self, fake_cluster):
        from conftest import FakeCluster
        push = ready("member1")
        push["spec"]["syncMode"] = "Push"
        fake_cluster.add(CLUSTER, push)
        clusters = hub_members.wait_for_clusters(fake_cluster, "karmada", name="member1", timeout=0, member=FakeCluster("member1"))
        assert clusters[0]["agent"] is None

    def test_another_condition(self, fake_cluster):
        fake_cluster.add(MANAGED_CLUSTER, ready("c1", condition="ManagedClusterJoined"))
        joined = resources.wanted_condition("ManagedClusterJoined")
        assert hub_members.wait_for_clusters(fake_cluster, "ocm", condition=joined, timeout=0)[0]["name"] == "c1"
        with pytest.raises(WaitTimeout, match="c1: no ManagedClusterConditionAvailable condition yet"):
            hub_members.wait_for_clusters(fake_cluster, "ocm", timeout=0)

    def test_no_cluster_listed_is_nothing_to_wait_for(self, fake_cluster):
        assert hub_members.wait_for_clusters(fake_cluster, "karmada", timeout=0) == []


def test_agents_of_many_members_each_with_its_own_connection(monkeypatch):
    """cluster_info's members: each named Pull member's agent read with its connection; a Push member runs none; one
    that cannot be read, or is not named, has no agent."""
    from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.engine import KarmadaEngine

    monkeypatch.setattr(KarmadaEngine, "read_agent", lambda self, member: {"version": member})
    clusters = [hub_members.summarize("karmada", {"metadata": {"name": name}, "spec": {"syncMode": mode}})
                for name, mode in (("m1", "Pull"), ("m2", "Push"), ("m3", "Pull"), ("m4", "Pull"))]

    def connect(name):
        if name == "m3":
            raise FleetError("cluster 'm3': connection refused")
        return "conn-" + name
    hub_members.add_agents_each(clusters, "karmada", connect, ["m1", "m2", "m3", "gone"])
    assert [c.get("agent", "-") for c in clusters] == [{"version": "conn-m1"}, None, "-", "-"]
