"""join/unjoin orchestration against in-memory API servers (hub and member)."""

import base64
import functools
import itertools

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import join
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER, WORK
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.lease_lock import LEASE
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import (
    CLUSTER_ROLE, CLUSTER_ROLE_BINDING, NAMESPACE, SECRET, SERVICE_ACCOUNT,
)

MEMBER_ID = "0b1d-member-kube-system-uid"
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
NS = "karmada-cluster"


def b64(text):
    return base64.b64encode(text.encode()).decode()


class Server:
    """The unit tests' FakeCluster, plus uids on create and finalizers that hold a deleted object."""

    _uids = itertools.count(1)

    def __init__(self, fake, name="hub"):
        self.fake = fake
        self.name = fake.name = name
        self.role = fake.role = name if name in ("hub", "member") else "member"
        self.server = fake.server
        self.label = fake.label
        self.objects = fake.objects
        self.calls = fake.calls

    def add(self, kind, obj):
        return self.fake.add(kind, obj)

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        dry = (query or {}).get("dryRun") == "All"
        if method == "POST":
            body = dict(body, metadata=dict(body["metadata"], uid="uid-%d" % next(self._uids)))
        if method == "DELETE" and path in self.objects and self.objects[path]["metadata"].get("finalizers") and not dry:
            self.calls.append((method, path, dict(query or {})))
            self.objects[path]["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
            return {"kind": "Status", "status": "Success"}
        answer = self.fake.request(method, path, body, query, content_type, timeout)
        stored_obj = self.objects.get(path)
        if method == "PATCH" and stored_obj and stored_obj["metadata"].get("deletionTimestamp") \
                and not stored_obj["metadata"].get("finalizers"):
            del self.objects[path]
        return answer

    def writes(self):
        return [(m, p) for m, p, q in self.calls if m != "GET" and q.get("dryRun") != "All"]


class Member(Server):
    """A member with a kube-system namespace, a CA, and Kubernetes' token controller."""

    def __init__(self, fake, verifies_tls=True, proxy=None, ca_pem=CA_PEM):
        super(Member, self).__init__(fake, "member1")
        self.server = "https://10.0.0.7:6443"
        self.ca_pem = ca_pem
        self.verifies_tls = verifies_tls
        self.proxy = proxy
        self.token_count = itertools.count(1)
        self.add(NAMESPACE, {"metadata": {"name": "kube-system", "uid": MEMBER_ID}})

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        answer = super(Member, self).request(method, path, body, query, content_type, timeout)
        if method == "POST" and (query or {}).get("dryRun") != "All" and body.get("type") == karmada.SERVICE_ACCOUNT_TOKEN_TYPE:
            self.mint(body["metadata"]["namespace"], body["metadata"]["name"])
        return answer

    def mint(self, namespace, name):
        """What the token controller does to a new service-account-token Secret."""
        secret = self.objects[SECRET.path(namespace, name)]
        account = self.objects[SERVICE_ACCOUNT.path(namespace, name)]
        secret["metadata"]["annotations"][karmada.SERVICE_ACCOUNT_UID_ANNOTATION] = account["metadata"]["uid"]
        secret["data"] = {"token": b64("jwt-%s-%d" % (name, next(self.token_count))), "ca.crt": b64("root-ca"),
                          "namespace": b64(namespace)}


def params(**overrides):
    base = dict(cluster_name="east", cluster_namespace=NS, api_endpoint=None, proxy_url=None,
                insecure_skip_tls_verification=None, provider=None, region=None, zones=None, wait=False,
                wait_timeout=5, force=False)
    base.update(overrides)
    return base


def stored(cluster, kind, name, namespace=None):
    return cluster.objects.get(kind.path(namespace, name))


@pytest.fixture
def hub(fake_cluster):
    return Server(fake_cluster)


@pytest.fixture
def make_member(fake_cluster):
    """Members on fresh in-memory servers of the FakeCluster class."""
    return lambda **kwargs: Member(type(fake_cluster)(), **kwargs)


@pytest.fixture
def member(make_member):
    return make_member()


@pytest.fixture
def fast_waits(monkeypatch):
    """Waits without real sleeping: a fake clock that the sleep advances."""
    now = [0.0]

    def sleep(seconds):
        now[0] += max(seconds, 0.01)
    monkeypatch.setattr(resources, "wait_until",
                        functools.partial(resources.wait_until, clock=lambda: now[0], sleep=sleep))


class TestJoin:
    def test_creates_member_objects_then_hub_objects(self, hub, member):
        result = join.join(hub, member, params(region="eu-west-1", zones=["a", "b"]))
        assert result["changed"] and result["cluster_id"] == MEMBER_ID
        assert result["changes"] == [
            "member Namespace/karmada-cluster: created",
            "member ServiceAccount/karmada-cluster/karmada-east: created",
            "member ServiceAccount/karmada-cluster/karmada-impersonator: created",
            "member ClusterRole/karmada-controller-manager:karmada-east: created",
            "member ClusterRoleBinding/karmada-controller-manager:karmada-east: created",
            "member Secret/karmada-cluster/karmada-east: created",
            "member Secret/karmada-cluster/karmada-impersonator: created",
            "hub Namespace/karmada-cluster: created",
            "hub Cluster/east: created",
            "hub Secret/karmada-cluster/east: created",
            "hub Secret/karmada-cluster/east-impersonator: created",
            "hub ConfigMap/kube-system/multicluster-fleet.karmada.east: created",
        ]
        cluster = stored(hub, CLUSTER, "east")
        assert cluster["spec"] == {
            "syncMode": "Push", "apiEndpoint": "https://10.0.0.7:6443", "id": MEMBER_ID,
            "secretRef": {"namespace": NS, "name": "east"},
            "impersonatorSecretRef": {"namespace": NS, "name": "east-impersonator"},
            "region": "eu-west-1", "zones": ["a", "b"]}
        assert result["diff"]["before"] == {} and result["diff"]["after"]["spec"]["region"] == "eu-west-1"
        assert result["diff"]["before_header"] == result["diff"]["after_header"] == "hub Cluster/east"

    def test_hub_secrets_carry_member_tokens_ca_and_owner(self, hub, member):
        join.join(hub, member, params())
        cluster = stored(hub, CLUSTER, "east")
        secret = stored(hub, SECRET, "east", NS)
        impersonator = stored(hub, SECRET, "east-impersonator", NS)
        assert secret["data"] == {"caBundle": b64(CA_PEM), "token": stored(member, SECRET, "karmada-east", NS)["data"]["token"]}
        assert impersonator["data"] == {"token": stored(member, SECRET, "karmada-impersonator", NS)["data"]["token"]}
        for obj in (secret, impersonator):
            assert obj["metadata"]["ownerReferences"] == [{
                "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "name": "east",
                "uid": cluster["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]

    def test_hub_writes_come_after_member_writes_and_cluster_before_its_secrets(self, hub, member):
        join.join(hub, member, params())
        assert all(p.startswith("/api") for _m, p in member.writes())
        assert [p for _m, p in hub.writes()] == [
            NAMESPACE.path(), CLUSTER.path(), SECRET.path(NS), SECRET.path(NS), "/api/v1/namespaces/kube-system/configmaps"]

    def test_ca_falls_back_to_the_token_controller_root_ca(self, hub, make_member):
        join.join(hub, make_member(ca_pem=None), params())
        assert stored(hub, SECRET, "east", NS)["data"]["caBundle"] == b64("root-ca")

    def test_rerun_writes_nothing(self, hub, member):
        join.join(hub, member, params(region="r"))
        hub.calls[:], member.calls[:] = [], []
        result = join.join(hub, member, params(region="r"))
        assert not result["changed"] and all(c.endswith(": unchanged") for c in result["changes"])
        assert hub.writes() == [] and member.writes() == []

    def test_changed_region_updates_only_the_cluster(self, hub, member):
        join.join(hub, member, params(region="r1"))
        hub.calls[:], member.calls[:] = [], []
        result = join.join(hub, member, params(region="r2"))
        assert [c for c in result["changes"] if not c.endswith("unchanged")] == ["hub Cluster/east: updated"]
        assert result["diff"]["before"]["spec"]["region"] == "r1" and result["diff"]["after"]["spec"]["region"] == "r2"
        assert [m for m, _p in hub.writes()] == ["PATCH"] and member.writes() == []

    def test_rotated_member_token_updates_the_hub_secret(self, hub, member):
        join.join(hub, member, params())
        del member.objects[SECRET.path(NS, "karmada-east")]
        result = join.join(hub, member, params())
        changed = [c for c in result["changes"] if not c.endswith("unchanged")]
        assert changed == ["member Secret/karmada-cluster/karmada-east: created", "hub Secret/karmada-cluster/east: updated"]
        assert stored(hub, SECRET, "east", NS)["data"]["token"] == stored(member, SECRET, "karmada-east", NS)["data"]["token"]

    def test_recreated_service_account_gets_a_new_token(self, hub, member, fast_waits):
        """The token controller voids a Secret of an earlier ServiceAccount; join waits, creates it again."""
        join.join(hub, member, params())
        account_path = SERVICE_ACCOUNT.path(NS, "karmada-east")
        member.objects[account_path]["metadata"]["uid"] = "uid-recreated"
        old_token = stored(hub, SECRET, "east", NS)["data"]["token"]
        secret_path = SECRET.path(NS, "karmada-east")
        request = member.request

        def token_controller(method, path, *args, **kwargs):
            stale = member.objects.get(secret_path)
            if stale and stale["metadata"]["annotations"].get(karmada.SERVICE_ACCOUNT_UID_ANNOTATION) != "uid-recreated":
                if method == "GET" and path == secret_path and len(member.calls) % 3 == 0:
                    del member.objects[secret_path]  # deleted a moment after join looked at it
            return request(method, path, *args, **kwargs)
        member.request = token_controller
        result = join.join(hub, member, params())
        changed = [c for c in result["changes"] if not c.endswith("unchanged")]
        assert changed == ["member Secret/karmada-cluster/karmada-east: created", "hub Secret/karmada-cluster/east: updated"]
        assert stored(hub, SECRET, "east", NS)["data"]["token"] != old_token

    def test_interrupted_join_is_finished(self, hub, member):
        join.join(hub, member, params())
        for name in ("east", "east-impersonator"):  # as if the run had stopped right after the Cluster
            del hub.objects[SECRET.path(NS, name)]
        result = join.join(hub, member, params())
        changed = [c for c in result["changes"] if not c.endswith("unchanged")]
        assert changed == ["hub Secret/karmada-cluster/east: created", "hub Secret/karmada-cluster/east-impersonator: created"]

    def test_owner_reference_follows_a_recreated_cluster(self, hub, member):
        join.join(hub, member, params())
        cluster = hub.objects.pop(CLUSTER.path(name="east"))
        hub.add(CLUSTER, dict(cluster, metadata={"name": "east", "uid": "uid-new"}))
        join.join(hub, member, params())
        assert stored(hub, SECRET, "east", NS)["metadata"]["ownerReferences"][0]["uid"] == "uid-new"

    def test_check_mode_writes_nothing_and_plans_everything(self, hub, member):
        result = join.join(hub, member, params(), check_mode=True)
        assert result["changed"] and all(c.endswith(": created") for c in result["changes"])
        assert hub.writes() == [] and member.writes() == []
        assert stored(hub, CLUSTER, "east") is None and result["cluster"]["spec"]["id"] == MEMBER_ID

    def test_check_mode_after_join_reports_the_pending_update(self, hub, member):
        join.join(hub, member, params())
        result = join.join(hub, member, params(zones=["z1"]), check_mode=True)
        assert [c for c in result["changes"] if not c.endswith("unchanged")] == ["hub Cluster/east: updated"]
        assert "zones" not in stored(hub, CLUSTER, "east")["spec"]

    def test_tokens_are_handed_to_hide(self, hub, member):
        hidden = set()
        join.join(hub, member, params(), hide=hidden.add)
        token = stored(member, SECRET, "karmada-east", NS)["data"]["token"]
        assert token in hidden and base64.b64decode(token).decode() in hidden

    def test_missing_token_controller_times_out_clearly(self, hub, make_member, fast_waits):
        member = make_member()
        member.mint = lambda namespace, name: None
        with pytest.raises(FleetError, match="token of ServiceAccount karmada-cluster/karmada-east on cluster 'member1'.*"
                                             "serviceaccount-token controller"):
            join.join(hub, member, params())
        assert stored(hub, CLUSTER, "east") is None

    def test_a_failure_after_writes_reports_them(self, hub, make_member, fast_waits):
        member = make_member()
        member.mint = lambda namespace, name: None
        with pytest.raises(FleetError) as raised:
            join.join(hub, member, params())
        written = raised.value.details["changes"]
        assert raised.value.details["changed"] is True and written[0] == "member Namespace/karmada-cluster: created"
        assert raised.value.msg.endswith("; written before the failure: " + ", ".join(written))
        with pytest.raises(FleetError) as again:  # a retry wrote nothing more, and says so
            join.join(hub, member, params())
        assert again.value.details["changed"] is False and "written before" not in again.value.msg

    def test_wait_for_ready_times_out_with_the_last_condition(self, hub, member, fast_waits):
        with pytest.raises(FleetError, match=r"Ready=True.*no Ready condition yet.*reaches https://10.0.0.7:6443") as raised:
            join.join(hub, member, params(wait=True))
        # the failure says what the join wrote before it waited; a second attempt wrote nothing more
        assert raised.value.details["changed"] is True and "hub Cluster/east: created" in raised.value.details["changes"]
        with pytest.raises(FleetError) as again:
            join.join(hub, member, params(wait=True))
        assert again.value.details["changed"] is False and "hub Cluster/east: unchanged" in again.value.details["changes"]

    def test_wait_condition_and_wait_sleep(self, hub, member, monkeypatch):
        """wait_condition as kubernetes.core's (type, status, reason); wait_sleep is the time between two reads."""
        slept = []

        def sleep(seconds):  # Karmada's controller reports the member while join sleeps
            slept.append(seconds)
            stored(hub, CLUSTER, "east")["status"] = {"conditions": [
                {"type": "Ready", "status": "False", "reason": "ClusterNotReachable", "message": "no route"}]}
        monkeypatch.setattr(resources, "wait_until", functools.partial(resources.wait_until, sleep=sleep))
        wanted = resources.wanted_condition("Ready", "False", "ClusterNotReachable")
        result = join.join(hub, member, params(wait=True, wait_condition=wanted, wait_sleep=7, wait_timeout=60))
        assert slept == [7] and result["cluster"]["status"]["conditions"][0]["reason"] == "ClusterNotReachable"


class TestDesiredCluster:
    def test_unset_fields_follow_the_member_connection(self, make_member):
        member = make_member(verifies_tls=False, proxy="http://proxy:3128")
        spec = join.desired_cluster(params(), MEMBER_ID, member, None)["spec"]
        assert spec["insecureSkipTLSVerification"] is True and spec["proxyURL"] == "http://proxy:3128"
        assert spec["apiEndpoint"] == member.server

    def test_explicit_options_win(self, make_member):
        member = make_member(verifies_tls=False, proxy="http://proxy:3128")
        spec = join.desired_cluster(params(insecure_skip_tls_verification=False, proxy_url="",
                                           api_endpoint="https://lb:443"), MEMBER_ID, member, None)["spec"]
        assert "insecureSkipTLSVerification" not in spec and "proxyURL" not in spec
        assert spec["apiEndpoint"] == "https://lb:443"

    def test_removals_only_for_fields_that_are_set(self, member):
        existing = {"spec": {"region": "r1", "insecureSkipTLSVerification": True}}
        spec = join.desired_cluster(params(region="", provider="", zones=[], insecure_skip_tls_verification=False),
                                    MEMBER_ID, member, existing)["spec"]
        assert spec["region"] is None and spec["insecureSkipTLSVerification"] is None
        assert "provider" not in spec and "zones" not in spec

    def test_unmanaged_fields_are_left_alone(self, member):
        spec = join.desired_cluster(params(), MEMBER_ID, member, {"spec": {"region": "r1", "provider": "p"}})["spec"]
        assert "region" not in spec and "provider" not in spec


class TestRefusals:
    def test_member_registered_under_another_name(self, hub, member):
        join.join(hub, member, params())
        hub.calls[:], member.calls[:] = [], []
        with pytest.raises(FleetError, match="already registered on the hub as Cluster 'east'"):
            join.join(hub, member, params(cluster_name="west"))
        assert hub.writes() == [] and member.writes() == []

    def test_another_run_that_registers_the_member_meanwhile_is_seen_under_the_lease(self, hub, member):
        """Two hosts reaching one cluster under two new names: the second reads the hub again once it holds the
        member's registration Lease, and finds the first one's Cluster."""
        take_lease = member.request

        def request(method, path, body=None, query=None, content_type="application/json", timeout=None):
            if method == "POST" and path == LEASE.path("kube-system"):  # the other run's join finished just before
                hub.add(CLUSTER, {"metadata": {"name": "east"}, "spec": {"syncMode": "Push", "id": MEMBER_ID}})
            return take_lease(method, path, body, query, content_type, timeout)
        member.request = request
        with pytest.raises(FleetError, match="already registered on the hub as Cluster 'east': refusing to register it "
                                             "again as 'west'"):
            join.join(hub, member, params(cluster_name="west"))
        assert member.writes() == [("POST", LEASE.path("kube-system")),
                                   ("DELETE", LEASE.path("kube-system", "multicluster-fleet-registration"))]
        assert hub.writes() == []

    def test_a_new_cluster_is_written_under_the_lease_and_a_rerun_takes_none(self, hub, member):
        join.join(hub, member, params())
        writes = member.writes()
        assert writes[0] == ("POST", LEASE.path("kube-system"))
        assert writes[-1] == ("DELETE", LEASE.path("kube-system", "multicluster-fleet-registration"))
        member.calls[:] = []
        assert not join.join(hub, member, params())["changed"] and member.writes() == []

    def test_name_taken_by_another_cluster(self, hub, member):
        hub.add(CLUSTER, {"metadata": {"name": "east"}, "spec": {"syncMode": "Push", "id": "other-id"}})
        with pytest.raises(FleetError, match="Cluster 'east' on the hub belongs to another cluster \\(endpoint unknown, cluster "
                                             "id other-id\\), not to this member \\(https://.*, cluster id %s\\)" % MEMBER_ID):
            join.join(hub, member, params())
        assert member.writes() == []

    def test_pull_cluster_is_not_joined(self, hub, member):
        hub.add(CLUSTER, {"metadata": {"name": "east"}, "spec": {"syncMode": "Pull", "id": MEMBER_ID}})
        with pytest.raises(FleetError, match="Pull mode; remove it with multicluster.fleet.cluster_register"):
            join.join(hub, member, params())

    @pytest.mark.parametrize("overrides,match", [
        ({"cluster_name": "East"}, "invalid cluster name"),
        ({"cluster_namespace": "kube-system"}, "reserved"),
        ({"zones": ["a", "a"]}, "more than once"),
        ({"api_endpoint": "10.0.0.7:6443"}, "invalid api_endpoint"),
        ({"proxy_url": "squid:3128"}, "invalid proxy_url"),
        ({"wait_timeout": 0}, "^wait_timeout must be at least 1 second, got 0$"),
        ({"wait_timeout": -1}, "^wait_timeout must be at least 1 second, got -1$"),
        ({"wait_sleep": -5}, "^wait_sleep must be at least 1 second, got -5$"),
    ])
    def test_validation_happens_before_any_request(self, hub, member, overrides, match):
        with pytest.raises(FleetError, match=match):
            join.join(hub, member, params(**overrides))
        assert hub.calls == [] and member.calls == []


class TestUnjoin:
    def test_removes_cluster_hub_secrets_and_member_objects(self, hub, member):
        join.join(hub, member, params())
        result = join.unjoin(hub, member, params())
        assert result["changed"] and result["cluster_id"] == MEMBER_ID
        assert result["changes"] == [
            "hub Cluster/east: deleted",
            "hub Secret/karmada-cluster/east: deleted",
            "hub Secret/karmada-cluster/east-impersonator: deleted",
            "hub ConfigMap/kube-system/multicluster-fleet.karmada.east: deleted",
            "member ClusterRoleBinding/karmada-controller-manager:karmada-east: deleted",
            "member ClusterRole/karmada-controller-manager:karmada-east: deleted",
            "member ServiceAccount/karmada-cluster/karmada-east: deleted",
            "member Namespace/karmada-cluster: deleted",
        ]
        assert stored(hub, CLUSTER, "east") is None and stored(hub, SECRET, "east", NS) is None
        assert stored(member, CLUSTER_ROLE, karmada.cluster_role_name("east")) is None
        assert stored(member, CLUSTER_ROLE_BINDING, karmada.cluster_role_name("east")) is None
        assert result["diff"]["after"] == {} and result["diff"]["before"]["spec"]["id"] == MEMBER_ID
        assert result["diff"]["before_header"] == result["diff"]["after_header"] == "hub Cluster/east"

    def test_absent_is_unchanged(self, hub, member):
        result = join.unjoin(hub, member, params())
        assert not result["changed"] and all(c.endswith(": absent") for c in result["changes"])

    def test_check_mode_deletes_nothing(self, hub, member):
        join.join(hub, member, params())
        hub.calls[:], member.calls[:] = [], []
        result = join.unjoin(hub, member, params(), check_mode=True)
        assert result["changed"] and "hub Cluster/east: deleted" in result["changes"]
        assert hub.writes() == [] and member.writes() == []

    def test_without_member_warns_and_keeps_member_objects(self, hub, member):
        join.join(hub, member, params())
        warnings = []
        result = join.unjoin(hub, None, params(), warn=warnings.append)
        assert result["cluster_id"] == MEMBER_ID and not [c for c in result["changes"] if c.startswith("member")]
        assert "stay on the member cluster" in warnings[0]
        assert stored(member, SERVICE_ACCOUNT, "karmada-east", NS) is not None

    def test_refuses_pull_cluster(self, hub):
        hub.add(CLUSTER, {"metadata": {"name": "east"}, "spec": {"syncMode": "Pull"}})
        with pytest.raises(FleetError, match="cluster_register state=absent"):
            join.unjoin(hub, None, params())
        assert hub.writes() == []

    def test_refuses_member_of_another_cluster(self, hub, member):
        hub.add(CLUSTER, {"metadata": {"name": "east"}, "spec": {"syncMode": "Push", "id": "other-id"}})
        with pytest.raises(FleetError, match="refusing to clean up a different cluster"):
            join.unjoin(hub, member, params())
        assert hub.writes() == [] and member.writes() == []

    def test_stuck_cluster_fails_without_force(self, hub, member, fast_waits):
        join.join(hub, member, params())
        hub.objects[CLUSTER.path(name="east")]["metadata"]["finalizers"] = [karmada.CLUSTER_FINALIZER]
        with pytest.raises(FleetError, match="finalizers: karmada.io/cluster-controller.*force=true") as caught:
            join.unjoin(hub, member, params())
        assert stored(member, SERVICE_ACCOUNT, "karmada-east", NS) is not None  # member left for the controller
        # the Cluster is being deleted all the same: the failure says so
        assert caught.value.details["changed"] is True and caught.value.details["changes"] == ["hub Cluster/east: deleted"]
        assert caught.value.details["last_seen"] == "finalizers: " + karmada.CLUSTER_FINALIZER
        assert caught.value.msg.endswith("; deleted before the failure: hub Cluster/east: deleted")

    def test_force_releases_finalizers_in_order(self, hub, member, fast_waits):
        join.join(hub, member, params())
        hub.objects[CLUSTER.path(name="east")]["metadata"]["finalizers"] = [karmada.CLUSTER_FINALIZER, "other/keep"]
        hub.add(NAMESPACE, {"metadata": {"name": "karmada-es-east", "finalizers": ["example.com/hold"]}})
        hub.add(WORK, {"metadata": {"name": "w1", "namespace": "karmada-es-east",
                                    "finalizers": [karmada.EXECUTION_FINALIZER, "other/keep"]}})
        hub.calls[:] = []
        with pytest.raises(FleetError, match="finalizers: other/keep"):  # only Karmada's own finalizer goes
            join.unjoin(hub, member, params(force=True))
        patches = [p for m, p in hub.writes() if m == "PATCH"]
        assert patches == [WORK.path("karmada-es-east", "w1"), NAMESPACE.path(name="karmada-es-east"), CLUSTER.path(name="east")]
        assert stored(hub, WORK, "w1", "karmada-es-east")["metadata"]["finalizers"] == ["other/keep"]

    def test_force_unjoin_completes(self, hub, member, fast_waits):
        join.join(hub, member, params())
        hub.objects[CLUSTER.path(name="east")]["metadata"]["finalizers"] = [karmada.CLUSTER_FINALIZER]
        result = join.unjoin(hub, member, params(force=True))
        assert result["changes"][:2] == ["hub Cluster/east: deleted", "hub Cluster/east: updated"]
        assert stored(hub, CLUSTER, "east") is None and stored(member, NAMESPACE, NS) is None


def test_a_namespace_still_being_deleted_is_waited_out(hub, member, fast_waits):
    """Re-joining right after an unjoin: the terminating namespace goes first, then it is created anew."""
    member.add(NAMESPACE, {"metadata": {"name": NS, "deletionTimestamp": "2026-11-22T00:00:00Z"}})
    gets = []

    def namespace_controller(method, path, *args, **kwargs):
        if method == "GET" and path == NAMESPACE.path(name=NS):
            gets.append(path)
            if len(gets) == 3:  # the namespace controller finishes while join waits
                member.objects.pop(path, None)
        return Member.request(member, method, path, *args, **kwargs)
    member.request = namespace_controller
    result = join.join(hub, member, params())
    assert result["changes"][0] == "member Namespace/karmada-cluster: created"
    assert "deletionTimestamp" not in stored(member, NAMESPACE, NS)["metadata"]


class ReportingHub(Server):
    """A hub whose Karmada controller reports Ready the Clusters named in ``ready`` (on a list of every Cluster)."""

    ready = ()

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        answer = super(ReportingHub, self).request(method, path, body, query, content_type, timeout)
        if method == "GET" and path == CLUSTER.path():
            for item in answer["items"]:
                if item["metadata"]["name"] in self.ready:
                    item["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady"}]}
        return answer


def by_name(members):
    """The ``connect`` of join_each for ``members`` ({name: connection})."""
    return lambda item: members[item["name"]]


class TestJoinEach:
    @pytest.fixture
    def members(self, make_member):
        """Two members, each its own cluster (kube-system UID)."""
        found = {}
        for name in ("east", "west"):
            found[name] = make_member()
            found[name].objects[NAMESPACE.path(None, "kube-system")]["metadata"]["uid"] = "id-" + name
        return found

    @staticmethod
    def items(members, **settings):
        """per_cluster for ``members``, with ``settings`` by name."""
        return [dict({"name": name, "member": name}, **settings.get(name, {})) for name in members]

    def test_joins_each_member_with_its_own_settings_and_waits_with_one_list_per_look(self, fake_cluster, members, fast_waits):
        hub = ReportingHub(fake_cluster)
        hub.ready = ("east", "west")
        result = join.join_each(hub, self.items(members, east={"region": "r1"}), params(wait=True), by_name(members))
        assert result["changed"] and sorted(result["clusters"]) == ["east", "west"]
        assert result["clusters"]["west"]["cluster_id"] == "id-west"
        assert "hub Cluster/east: created" in result["clusters"]["east"]["changes"]
        assert [d["after_header"] for d in result["diff"]] == ["hub Cluster/east", "hub Cluster/west"]
        assert stored(hub, CLUSTER, "east")["spec"]["region"] == "r1" and "region" not in stored(hub, CLUSTER, "west")["spec"]
        for name in members:
            assert stored(hub, SECRET, name, NS)["data"]["token"] == stored(members[name], SECRET, "karmada-" + name, NS)["data"]["token"]
        # the hub's Clusters listed once for both identity checks, again by each join under its Lease (it creates its
        # Cluster), and once by the wait: both ready at the first look
        lists = [c for c in hub.calls if c[:2] == ("GET", CLUSTER.path())]
        assert len(lists) == 1 + 2 + 1, lists

    def test_a_rerun_writes_nothing_and_lists_the_hub_once(self, hub, members):
        join.join_each(hub, self.items(members), params(), by_name(members))
        hub.calls[:] = []
        result = join.join_each(hub, self.items(members), params(), by_name(members))
        assert not result["changed"] and result["diff"] == [] and hub.writes() == []
        assert len([c for c in hub.calls if c[:2] == ("GET", CLUSTER.path())]) == 1
        assert all(c.endswith(": unchanged") for one in result["clusters"].values() for c in one["changes"])

    def test_check_mode_writes_nothing_and_says_what_it_would_do(self, hub, members):
        result = join.join_each(hub, self.items(members), params(wait=True), by_name(members), check_mode=True)
        assert result["changed"] and "hub Cluster/west: created" in result["clusters"]["west"]["changes"]
        assert hub.writes() == [] and all(m.writes() == [] for m in members.values())

    def test_a_member_that_cannot_be_reached_fails_alone(self, hub, members):
        def connect(item):
            if item["name"] == "west":
                raise FleetError("cluster 'west': kubeconfig file /x does not exist")
            return members[item["name"]]
        with pytest.raises(FleetError) as failed:
            join.join_each(hub, self.items(members), params(), connect)
        details = failed.value.details
        assert failed.value.msg == ("cluster 'hub' (https://fake): join failed on 1 of 2 clusters: "
                                    "west: cluster 'west': kubeconfig file /x does not exist")
        assert details["clusters_failed"] == ["west"] and details["changed"] is True and "last_seen" not in details
        assert details["cluster_errors"] == {"west": "cluster 'west': kubeconfig file /x does not exist"}
        assert details["clusters"]["west"] == {"changed": False, "changes": [], "cluster_id": None}
        assert stored(hub, CLUSTER, "east") is not None and stored(hub, CLUSTER, "west") is None

    def test_a_member_the_hub_never_reports_ready_fails_alone_saying_what_was_written(self, fake_cluster, members, fast_waits):
        hub = ReportingHub(fake_cluster)
        hub.ready = ("east",)
        with pytest.raises(FleetError) as failed:
            join.join_each(hub, self.items(members), params(wait=True, wait_timeout=3), by_name(members))
        details = failed.value.details
        assert details["clusters_failed"] == ["west"] and details["last_seen"] == {"west": "no Ready condition yet"}
        message = details["cluster_errors"]["west"]
        assert message.startswith("timed out after 3s waiting for Cluster/west on cluster 'hub' (https://fake) to have "
                                  "Ready=True; last seen: no Ready condition yet. Karmada's controller sets"), message
        assert "written before the failure: member Namespace/karmada-cluster: created" in message
        assert details["clusters"]["west"]["changed"] and details["clusters"]["east"]["changed"]

    def test_a_wait_below_a_second_is_refused_once_before_any_request(self, hub, members):
        with pytest.raises(FleetError) as refused:
            join.join_each(hub, self.items(members), params(wait_timeout=0), by_name(members))
        assert refused.value.msg == "wait_timeout must be at least 1 second, got 0"
        assert hub.calls == [] and all(m.calls == [] for m in members.values())

    def test_a_name_given_twice_is_refused_before_any_request(self, hub, members):
        with pytest.raises(FleetError, match="per_cluster names cluster.s. east more than once"):
            join.join_each(hub, self.items(members) + self.items({"east": None}), params(), by_name(members))
        assert hub.calls == []
