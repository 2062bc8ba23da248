"""Accepting clusters: what gets approved, denied and accepted, and what is written (or only dry-run)."""

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import accept
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER
from accept_fakes import Hub, csr_request, managed_cluster, ocm_csr

CSR = resources.CSR


def karmada_csr(name, cluster="east", cn=None, user="system:bootstrap:e214n7", labels=None):
    return {"metadata": {"name": name, "labels": labels or {"karmada.io/system": "true"}},
            "spec": {"request": csr_request(cn or "system:karmada:agent:%s" % cluster, ["system:karmada:agents"]),
                     "signerName": "kubernetes.io/kube-apiserver-client",
                     "usages": ["digital signature", "key encipherment", "client auth"],
                     "username": user, "groups": ["system:bootstrappers"]}}


@pytest.fixture
def hub(fake_cluster):
    return Hub(fake_cluster)


def conditions(hub, name):
    return [(c["type"], c["reason"]) for c in (hub.get(CSR, name).get("status") or {}).get("conditions") or []]


def failure(call):
    with pytest.raises(FleetError) as info:
        call()
    return info.value


class TestOcm:
    def test_approves_and_accepts(self, hub):
        managed_cluster(hub)
        hub.add(CSR, ocm_csr("east-abcde"))
        result = accept.accept(hub, "ocm", ["east"])
        assert result["changed"] is True
        assert result["clusters"] == [{"name": "east", "approved": ["east-abcde"], "rejected": [], "denied": [], "accepted": True}]
        assert conditions(hub, "east-abcde") == [("Approved", "MulticlusterFleetApproved")]
        message = hub.get(CSR, "east-abcde")["status"]["conditions"][0]["message"]
        assert "multicluster.fleet csr_accept" in message and "cluster east" in message
        assert hub.get(MANAGED_CLUSTER, "east")["spec"]["hubAcceptsClient"] is True
        csr_diff, mc_diff = result["diff"]
        assert csr_diff["before"]["status"]["conditions"] == [] and csr_diff["after"]["status"]["conditions"][0]["type"] == "Approved"
        assert (mc_diff["before"]["spec"]["hubAcceptsClient"], mc_diff["after"]["spec"]["hubAcceptsClient"]) == (False, True)
        assert mc_diff["before_header"] == "ManagedCluster/east"

    def test_second_run_changes_nothing(self, hub):
        managed_cluster(hub)
        hub.add(CSR, ocm_csr("east-abcde"))
        accept.accept(hub, "ocm", ["east"])
        hub.fake.calls.clear()
        result = accept.accept(hub, "ocm", ["east"])
        assert result == {"changed": False, "diff": [], "clusters": [
            {"name": "east", "approved": [], "rejected": [], "denied": [], "accepted": True}], "warnings": []}
        assert hub.writes() == []

    def test_accepted_after_the_csr_was_garbage_collected(self, hub):
        managed_cluster(hub, accepted=True, joined=True)
        assert accept.accept(hub, "ocm", ["east"])["changed"] is False
        assert hub.writes() == []

    def test_check_mode_only_dry_runs(self, hub):
        managed_cluster(hub)
        hub.add(CSR, ocm_csr("east-abcde"))
        result = accept.accept(hub, "ocm", ["east"], check_mode=True)
        assert result["changed"] is True and result["clusters"][0]["approved"] == ["east-abcde"]
        assert result["clusters"][0]["accepted"] is True
        assert hub.writes() and all(query == {"dryRun": "All"} for _m, _p, query in hub.writes())
        assert conditions(hub, "east-abcde") == []
        assert hub.get(MANAGED_CLUSTER, "east")["spec"]["hubAcceptsClient"] is False

    def test_pre_accepted_cluster_still_needs_its_csr_approved(self, hub):
        managed_cluster(hub, accepted=True)
        hub.add(CSR, ocm_csr("east-abcde"))
        result = accept.accept(hub, "ocm", ["east"])
        assert result["clusters"][0]["approved"] == ["east-abcde"] and len(result["diff"]) == 1

    def test_missing_managed_cluster(self, hub):
        hub.add(CSR, ocm_csr("east-abcde"))
        error = failure(lambda: accept.accept(hub, "ocm", ["east"]))
        assert "east (ManagedCluster east does not exist on the hub yet" in error.msg
        # the CSR itself was fine and approved; acceptance waits for the ManagedCluster
        assert error.details["clusters"][0]["approved"] == ["east-abcde"] and error.details["changed"] is True

    def test_no_csr_yet(self, hub):
        managed_cluster(hub)
        error = failure(lambda: accept.accept(hub, "ocm", ["east"]))
        assert error.msg == "cluster 'hub' (https://fake): not accepted: east (no pending CSR from its agent yet)"
        assert error.details["changed"] is False and hub.writes() == []

    def test_addon_and_other_clusters_csrs_are_left_alone(self, hub):
        managed_cluster(hub)
        hub.add(CSR, ocm_csr("east-abcde"))
        hub.add(CSR, ocm_csr("west-abcde", cluster="west"))
        hub.add(CSR, ocm_csr("addon-east-x", cn="system:open-cluster-management:cluster:east:addon:proxy:agent:a",
                             labels={"open-cluster-management.io/cluster-name": "east",
                                     "open-cluster-management.io/addon-name": "proxy"}))
        result = accept.accept(hub, "ocm", ["east"], deny_invalid=True)
        assert result["clusters"][0]["approved"] == ["east-abcde"] and result["clusters"][0]["rejected"] == []
        assert conditions(hub, "west-abcde") == [] and conditions(hub, "addon-east-x") == []
        assert hub.fake.calls[0][2] == {"labelSelector": "open-cluster-management.io/cluster-name in (east),"
                                                         "!open-cluster-management.io/addon-name", "fieldSelector": None}


class TestRefusals:
    def test_invalid_csr_is_reported_not_approved(self, hub):
        managed_cluster(hub)
        hub.add(CSR, ocm_csr("east-bad", usages=["client auth", "server auth"]))
        error = failure(lambda: accept.accept(hub, "ocm", ["east"]))
        assert "east (no acceptable CSR; refused: east-bad (usage server auth is not allowed" in error.msg
        rejected = error.details["clusters"][0]["rejected"]
        assert rejected == [{"name": "east-bad", "requester": "system:bootstrap:abc123",
                             "reasons": ["usage server auth is not allowed: an agent gets a client certificate"]}]
        assert hub.writes() == [] and hub.get(MANAGED_CLUSTER, "east")["spec"]["hubAcceptsClient"] is False

    def test_deny_invalid(self, hub):
        managed_cluster(hub)
        hub.add(CSR, ocm_csr("east-bad", usages=["client auth", "server auth"]))
        hub.add(CSR, ocm_csr("east-good"))
        result = accept.accept(hub, "ocm", ["east"], deny_invalid=True)
        assert result["clusters"][0]["denied"] == ["east-bad"] and result["clusters"][0]["approved"] == ["east-good"]
        assert conditions(hub, "east-bad") == [("Denied", "MulticlusterFleetDenied")]
        assert "usage server auth" in hub.get(CSR, "east-bad")["status"]["conditions"][0]["message"]
        # denied CSRs are no longer pending: the next run neither reports nor touches them
        again = accept.accept(hub, "ocm", ["east"], deny_invalid=True)
        assert again["changed"] is False and again["clusters"][0]["rejected"] == []

    def test_several_requesters_approve_none(self, hub):
        managed_cluster(hub)
        hub.add(CSR, ocm_csr("east-aaaaa", user="system:bootstrap:aaaaaa"))
        hub.add(CSR, ocm_csr("east-bbbbb", user="system:bootstrap:bbbbbb"))
        error = failure(lambda: accept.accept(hub, "ocm", ["east"], deny_invalid=True))
        assert "several requesters ask for cluster east (system:bootstrap:aaaaaa, system:bootstrap:bbbbbb)" in error.msg
        assert [r["name"] for r in error.details["clusters"][0]["rejected"]] == ["east-aaaaa", "east-bbbbb"]
        assert hub.writes() == []  # neither approved nor denied: one of them is the real agent

    def test_requesters_choose(self, hub):
        managed_cluster(hub)
        hub.add(CSR, ocm_csr("east-aaaaa", user="system:bootstrap:aaaaaa"))
        hub.add(CSR, ocm_csr("east-bbbbb", user="system:bootstrap:bbbbbb"))
        result = accept.accept(hub, "ocm", ["east"], requesters=["system:bootstrap:bbbbbb"], deny_invalid=True)
        cluster = result["clusters"][0]
        assert cluster["approved"] == ["east-bbbbb"] and cluster["denied"] == ["east-aaaaa"]
        assert cluster["rejected"][0]["reasons"] == ["requester system:bootstrap:aaaaaa is not one of requesters (system:bootstrap:bbbbbb)"]

    def test_one_csr_per_cluster_the_newest(self, hub):
        """Two acceptable CSRs for one agent identity: only the newest is approved, the other is reported with why."""
        managed_cluster(hub)
        newer = ocm_csr("east-aaaaa")
        newer["metadata"]["creationTimestamp"] = "2026-01-01T10:00:05Z"
        older = ocm_csr("east-bbbbb")  # stored later (a higher resourceVersion), but created earlier
        older["metadata"]["creationTimestamp"] = "2026-01-01T10:00:00Z"
        hub.add(CSR, newer)
        hub.add(CSR, older)
        result = accept.accept(hub, "ocm", ["east"], deny_invalid=True)
        assert result["clusters"][0]["approved"] == ["east-aaaaa"] and result["clusters"][0]["accepted"] is True
        assert result["clusters"][0]["rejected"] == [{"name": "east-bbbbb", "requester": "system:bootstrap:abc123", "reasons": [
            "not approved: cluster east gets one agent certificate, from its newest acceptable CSR east-aaaaa"]}]
        assert result["clusters"][0]["denied"] == [] and conditions(hub, "east-bbbbb") == []

    def test_one_csr_per_cluster_within_the_same_second(self, hub):
        hub.add(CSR, karmada_csr("east-first", user="system:bootstrap:e214n7"))
        hub.add(CSR, karmada_csr("east-later", user="system:bootstrap:e214n7"))
        result = accept.accept(hub, "karmada", ["east"])
        assert result["clusters"][0]["approved"] == ["east-later"]
        assert [r["name"] for r in result["clusters"][0]["rejected"]] == ["east-first"]
        assert conditions(hub, "east-first") == []

    def test_bad_csr_approved_by_someone_else_is_warned_about(self, hub):
        managed_cluster(hub, accepted=True, joined=True)
        bad = ocm_csr("east-bad", user="kubernetes-admin")
        bad["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "manual"}]}
        hub.add(CSR, bad)
        result = accept.accept(hub, "ocm", ["east"])
        warnings = result["warnings"]
        assert result["changed"] is False
        assert len(warnings) == 1 and "CSR east-bad was approved earlier, not by this module" in warnings[0]
        assert "requester kubernetes-admin" in warnings[0]

    @pytest.mark.parametrize("engine, name, fragment", [
        ("ocm", "East", "DNS-1123 labels"), ("ocm", "a" * 64, "of 1 to 63 characters"), ("ocm", "", "invalid cluster name ''"),
        ("karmada", "a" * 49, "of 1 to 48 characters"),
        ("karmada", "-east", "invalid"), ("karmada", "rbac-generator", "all-powerful helper identity"),
    ])
    def test_cluster_names(self, hub, engine, name, fragment):
        assert fragment in failure(lambda: accept.accept(hub, engine, [name])).msg
        assert hub.fake.calls == []

    def test_empty_clusters(self, hub):
        assert "clusters is empty" in failure(lambda: accept.accept(hub, "ocm", [])).msg


class TestKarmada:
    def test_found_by_common_name(self, hub):
        hub.add(CSR, karmada_csr("csr-anything"))
        result = accept.accept(hub, "karmada", ["east"])
        assert result["clusters"][0]["approved"] == ["csr-anything"] and result["clusters"][0]["accepted"] is True
        assert len(result["diff"]) == 1  # no ManagedCluster for Karmada
        assert accept.accept(hub, "karmada", ["east"])["changed"] is False

    def test_karmadactl_name_with_another_clusters_identity(self, hub):
        hub.add(CSR, karmada_csr("east-q7x2z", cn="system:karmada:agent:west"))
        error = failure(lambda: accept.accept(hub, "karmada", ["east"], deny_invalid=True))
        assert "CN system:karmada:agent:west is not system:karmada:agent:east" in error.msg
        assert conditions(hub, "east-q7x2z") == [("Denied", "MulticlusterFleetDenied")]

    def test_unrelated_names_are_not_claimed(self, hub):
        hub.add(CSR, karmada_csr("east-long-name", cn="system:karmada:agent:west"))
        hub.add(CSR, karmada_csr("east-abcde", cn="system:karmada:agent:west", labels={"app": "x"}))
        error = failure(lambda: accept.accept(hub, "karmada", ["east"], deny_invalid=True))
        assert "no pending CSR from its agent yet" in error.msg and hub.writes() == []

    def test_pull_cluster_counts_as_accepted(self, hub):
        hub.add(CLUSTER, {"metadata": {"name": "east"}, "spec": {"syncMode": "Pull", "id": "x"}})
        assert accept.accept(hub, "karmada", ["east"])["clusters"][0]["accepted"] is True

    def test_push_cluster_gets_no_agent_certificate(self, hub):
        """A cluster the hub has in Push mode runs no agent: CSRs for its agent identity are refused (and denied)."""
        hub.add(CLUSTER, {"metadata": {"name": "west"}, "spec": {"syncMode": "Push", "id": "y"}})
        hub.add(CSR, karmada_csr("west-aaaaa", cluster="west"))
        hub.add(CSR, karmada_csr("west-bbbbb", cluster="west", user="system:bootstrap:zz99zz"))
        error = failure(lambda: accept.accept(hub, "karmada", ["west"], requesters=["system:bootstrap:e214n7"],
                                              deny_invalid=True))
        reason = ("cluster west is registered on the hub in Push mode, where no agent runs: refusing agent CSRs for it"
                  " (unjoin it first to register it in Pull mode)")
        assert error.msg == "cluster 'hub' (https://fake): not accepted: west (%s)" % reason
        cluster = error.details["clusters"][0]
        assert cluster["approved"] == [] and cluster["accepted"] is False
        assert [(r["name"], r["reasons"][0]) for r in cluster["rejected"]] == [("west-aaaaa", reason), ("west-bbbbb", reason)]
        assert conditions(hub, "west-aaaaa") == [("Denied", "MulticlusterFleetDenied")]

    def test_push_cluster_without_csrs_is_not_waited_for(self, hub):
        hub.add(CLUSTER, {"metadata": {"name": "west"}, "spec": {"syncMode": "Push", "id": "y"}})
        error = failure(lambda: accept.accept(hub, "karmada", ["west"], wait=resources.Wait(timeout=0, interval=0)))
        assert "west (cluster west is registered on the hub in Push mode" in error.msg and hub.writes() == []


class TestConcurrency:
    def test_conflict_is_retried(self, hub):
        hub.add(CSR, karmada_csr("east-abcde"))
        hub.conflicts = 2
        assert accept.accept(hub, "karmada", ["east"])["clusters"][0]["approved"] == ["east-abcde"]
        assert [m for m, _p, _q in hub.writes()] == ["PUT", "PUT", "PUT"]

    def test_approved_by_someone_else_meanwhile(self, hub):
        stored = hub.add(CSR, karmada_csr("east-abcde"))
        original = hub.request

        def racing(method, path, body=None, query=None, **kwargs):
            if method == "PUT" and not hub.writes():
                stored["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "AutoApproved"}]}
                stored["metadata"]["resourceVersion"] = "999"
            return original(method, path, body, query, **kwargs)
        hub.request = racing
        result = accept.accept(hub, "karmada", ["east"])
        assert result["changed"] is False and result["clusters"][0] == {
            "name": "east", "approved": [], "rejected": [], "denied": [], "accepted": True}


class TestWait:
    def test_waits_for_the_csr(self, hub, monkeypatch):
        managed_cluster(hub)
        lists = []
        original = hub.request

        def appearing(method, path, body=None, query=None, **kwargs):
            if method == "GET" and path.endswith("/certificatesigningrequests"):
                lists.append(path)
                if len(lists) == 3:
                    hub.add(CSR, ocm_csr("east-late"))
            return original(method, path, body, query, **kwargs)
        hub.request = appearing
        result = accept.accept(hub, "ocm", ["east"], wait=resources.Wait(timeout=30, interval=0))
        assert len(lists) == 3 and result["clusters"][0]["approved"] == ["east-late"]

    def test_timeout_names_the_clusters_still_waiting(self, hub, monkeypatch):
        managed_cluster(hub, "east", accepted=True, joined=True)
        managed_cluster(hub, "west")
        hub.add(CSR, ocm_csr("west-bad", cluster="west", user="mallory"))
        with pytest.raises(WaitTimeout) as info:
            accept.accept(hub, "ocm", ["east", "west"], wait=resources.Wait(timeout=0.05, interval=0))
        assert info.value.msg.startswith("cluster 'hub' (https://fake): timed out after 0.05s waiting for the agent CSRs of west: west: "
                                         "no acceptable CSR; refused: west-bad (requester mallory")
        assert info.value.details["waiting"] == ["west"] and hub.writes() == []


def approved_earlier(item):
    """``item`` as an earlier registration left it: approved (by someone) and issued."""
    item["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "MulticlusterFleetApproved"}],
                      "certificate": "LS0tLS1CRUdJTi0tLS0t"}
    return item


def appearing_on_list(hub, number, *items):
    """Add ``items`` to the hub when CSRs are listed for the ``number``-th time; return the list of listings."""
    lists = []
    original = hub.request

    def request(method, path, body=None, query=None, **kwargs):
        if method == "GET" and path.endswith("/certificatesigningrequests"):
            lists.append(path)
            if len(lists) == number:
                for item in items:
                    hub.add(CSR, item)
        return original(method, path, body, query, **kwargs)
    hub.request = request
    return lists


class TestReregistration:
    """A member registers again (or renews) within the hour in which its earlier, approved CSR is still listed."""

    def test_new_csr_is_approved_beside_the_earlier_one(self, hub):
        hub.add(CSR, approved_earlier(karmada_csr("east-0ld11")))
        hub.add(CSR, karmada_csr("east-n3w22"))
        result = accept.accept(hub, "karmada", ["east"])
        assert result["changed"] is True
        assert result["clusters"] == [{"name": "east", "approved": ["east-n3w22"], "rejected": [], "denied": [], "accepted": True}]
        assert conditions(hub, "east-n3w22") == [("Approved", "MulticlusterFleetApproved")]
        hub.fake.calls.clear()
        again = accept.accept(hub, "karmada", ["east"])
        assert again["changed"] is False and again["clusters"][0]["accepted"] is True and hub.writes() == []

    def test_wait_for_the_new_csr_is_not_ended_by_the_earlier_one(self, hub, monkeypatch):
        hub.add(CSR, approved_earlier(karmada_csr("east-0ld11")))
        lists = appearing_on_list(hub, 3, karmada_csr("east-n3w22"))
        result = accept.accept(hub, "karmada", ["east"], wait=resources.Wait(timeout=30, interval=0), expect_new_csr=True)
        assert len(lists) == 3
        assert result["changed"] is True
        assert result["clusters"] == [{"name": "east", "approved": ["east-n3w22"], "rejected": [], "denied": [], "accepted": True}]
        assert conditions(hub, "east-n3w22") == [("Approved", "MulticlusterFleetApproved")]
        # a re-run confirms the cluster, unchanged
        hub.fake.calls.clear()
        again = accept.accept(hub, "karmada", ["east"], wait=resources.Wait(timeout=30, interval=0))
        assert again["changed"] is False and again["clusters"][0]["accepted"] is True and hub.writes() == []

    def test_renewal_of_a_joined_member(self, hub, monkeypatch):
        hub.add(CLUSTER, {"metadata": {"name": "east"}, "spec": {"syncMode": "Pull", "id": "x"}})
        hub.add(CSR, approved_earlier(karmada_csr("east-0ld11")))
        renewal = karmada_csr("east-r3n3w", user="system:karmada:agent:east")
        lists = appearing_on_list(hub, 2, renewal)
        result = accept.accept(hub, "karmada", ["east"], wait=resources.Wait(timeout=30, interval=0), expect_new_csr=True)
        assert len(lists) == 2 and result["changed"] is True and result["clusters"][0]["approved"] == ["east-r3n3w"]

    def test_new_csr_approved_by_someone_else_while_waiting(self, hub, monkeypatch):
        hub.add(CSR, approved_earlier(karmada_csr("east-0ld11")))
        lists = appearing_on_list(hub, 2, approved_earlier(karmada_csr("east-n3w22")))
        result = accept.accept(hub, "karmada", ["east"], wait=resources.Wait(timeout=30, interval=0), expect_new_csr=True)
        assert len(lists) == 2 and hub.writes() == []
        assert result == {"changed": False, "diff": [], "clusters": [
            {"name": "east", "approved": [], "rejected": [], "denied": [], "accepted": True}], "warnings": []}

    def test_only_the_earlier_csr_times_out_when_a_new_one_is_expected(self, hub, monkeypatch):
        hub.add(CLUSTER, {"metadata": {"name": "east"}, "spec": {"syncMode": "Pull", "id": "x"}})
        hub.add(CSR, approved_earlier(karmada_csr("east-0ld11")))
        with pytest.raises(WaitTimeout) as info:
            accept.accept(hub, "karmada", ["east"], wait=resources.Wait(timeout=0.05, interval=0), expect_new_csr=True)
        assert info.value.msg.endswith("east: no new CSR from its agent yet (approved before: east-0ld11)")
        assert info.value.details["waiting"] == ["east"]
        error = failure(lambda: accept.accept(hub, "karmada", ["east"], expect_new_csr=True))
        assert error.msg == "cluster 'hub' (https://fake): not accepted: east (no new CSR from its agent yet (approved before: east-0ld11))"
        assert error.details["changed"] is False and hub.writes() == []

    def test_without_expect_new_csr_the_earlier_csr_ends_the_wait(self, hub, monkeypatch):
        """What wait promises for clusters accepted earlier: no waiting, no change (a re-run stays idempotent)."""
        hub.add(CSR, approved_earlier(karmada_csr("east-0ld11")))
        lists = appearing_on_list(hub, 0)
        result = accept.accept(hub, "karmada", ["east"], wait=resources.Wait(timeout=30, interval=0))
        assert len(lists) == 1 and result["changed"] is False and result["clusters"][0]["accepted"] is True

    def test_check_mode_with_expect_new_csr(self, hub):
        hub.add(CSR, approved_earlier(karmada_csr("east-0ld11")))
        hub.add(CSR, karmada_csr("east-n3w22"))
        result = accept.accept(hub, "karmada", ["east"], check_mode=True, expect_new_csr=True)
        assert result["changed"] is True and result["clusters"][0]["approved"] == ["east-n3w22"]
        assert result["clusters"][0]["accepted"] is True and conditions(hub, "east-n3w22") == []

    def test_ocm_rejoin(self, hub, monkeypatch):
        managed_cluster(hub, accepted=True, joined=True)
        hub.add(CSR, approved_earlier(ocm_csr("east-0ld11")))
        lists = appearing_on_list(hub, 3, ocm_csr("east-n3w22"))
        result = accept.accept(hub, "ocm", ["east"], wait=resources.Wait(timeout=30, interval=0), expect_new_csr=True)
        assert len(lists) == 3 and result["changed"] is True
        assert result["clusters"] == [{"name": "east", "approved": ["east-n3w22"], "rejected": [], "denied": [], "accepted": True}]
        assert len(result["diff"]) == 1  # hubAcceptsClient was true already
        assert accept.accept(hub, "ocm", ["east"])["changed"] is False

    def test_ocm_wait_ends_when_only_hub_accepts_client_is_missing(self, hub, monkeypatch):
        """An agent certified earlier (say, its CSR approved with kubectl): acting now accepts it, so wait ends."""
        managed_cluster(hub, accepted=False, joined=True)
        hub.add(CSR, approved_earlier(ocm_csr("east-0ld11")))
        result = accept.accept(hub, "ocm", ["east"], wait=resources.Wait(timeout=0.05, interval=0))
        assert result["changed"] is True and result["clusters"][0]["accepted"] is True
        assert hub.get(MANAGED_CLUSTER, "east")["spec"]["hubAcceptsClient"] is True
