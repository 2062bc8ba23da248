import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import SECRET, NAMESPACE


def secret(name="s", ns="ns", **data):
    return {"metadata": {"name": name, "namespace": ns}, "data": data or {"token": "dA=="}}


class TestKindPath:
    def test_core_namespaced(self):
        assert SECRET.path("kube-system", "a") == "/api/v1/namespaces/kube-system/secrets/a"
        assert SECRET.path("kube-system") == "/api/v1/namespaces/kube-system/secrets"
        assert SECRET.path() == "/api/v1/secrets"

    def test_cluster_scoped_group(self):
        assert CLUSTER.path(name="m1", subresource="status") == "/apis/cluster.karmada.io/v1alpha1/clusters/m1/status"
        assert NAMESPACE.path(name="x") == "/api/v1/namespaces/x"

    def test_quotes_names(self):
        assert "/a%2Fb" in SECRET.path("ns", "a/b")

    def test_namespaced_object_needs_namespace(self):
        with pytest.raises(FleetError, match="needs a namespace"):
            SECRET.path(None, "a")

    def test_ref(self):
        assert SECRET.ref("a", "ns") == "Secret/ns/a"
        assert CLUSTER.ref("m1", "ignored") == "Cluster/m1"


class TestContains:
    @pytest.mark.parametrize("actual,desired,expected", [
        ({"a": 1, "b": 2}, {"a": 1}, True),
        ({"a": 1}, {"a": 2}, False),
        ({"a": 1}, {"b": 1}, False),
        ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1}}, True),
        ({"l": [1, 2]}, {"l": [1, 2]}, True),
        ({"l": [1, 2, 3]}, {"l": [1, 2]}, False),
        ({"l": [{"a": 1, "extra": 0}]}, {"l": [{"a": 1}]}, True),
        ({"l": [2, 1]}, {"l": [1, 2]}, False),
        ({"a": None}, {"a": 0}, False),
        ({"a": "1"}, {"a": 1}, False),
        ({"b": 1}, {"a": None}, True),
        ({"a": None}, {"a": None}, True),
        ({"a": {}}, {"a": None}, False),
        ({"r": {"limits": {"cpu": "1"}}}, {"r": {"limits": None}}, False),
    ])
    def test_contains(self, actual, desired, expected):
        assert resources.contains(actual, desired) is expected


class TestEnsure:
    def test_creates_when_missing(self, fake_cluster):
        out = resources.ensure(fake_cluster, SECRET, secret())
        assert out.action == "created" and out.changed
        assert out.summary() == "Secret/ns/s: created"
        stored = fake_cluster.objects[SECRET.path("ns", "s")]
        assert stored["kind"] == "Secret" and stored["apiVersion"] == "v1"

    def test_unchanged_when_fields_match(self, fake_cluster):
        fake_cluster.add(SECRET, dict(secret(), type="Opaque"))
        out = resources.ensure(fake_cluster, SECRET, secret())
        assert out.action == "unchanged" and not out.changed
        assert [c[0] for c in fake_cluster.calls] == ["GET"]

    def test_patches_only_when_different_with_resource_version(self, fake_cluster):
        fake_cluster.add(SECRET, secret(token="b2xk"))
        out = resources.ensure(fake_cluster, SECRET, secret(token="bmV3"))
        assert out.action == "updated"
        assert out.before["data"]["token"] == "b2xk" and out.after["data"]["token"] == "bmV3"
        method, path, query = fake_cluster.calls[-1]
        assert method == "PATCH" and query == {}
        assert fake_cluster.objects[path]["data"]["token"] == "bmV3"

    def test_retries_on_conflict(self, fake_cluster):
        fake_cluster.add(SECRET, secret(token="b2xk"))
        fake_cluster.conflicts = 2
        out = resources.ensure(fake_cluster, SECRET, secret(token="bmV3"))
        assert out.action == "updated"
        assert [c[0] for c in fake_cluster.calls].count("PATCH") == 3

    def test_the_object_just_read_takes_the_place_of_the_first_read(self, fake_cluster):
        fake_cluster.add(SECRET, secret(token="b2xk"))
        current = fake_cluster.request("GET", SECRET.path("ns", "s"))
        fake_cluster.calls.clear()
        assert resources.ensure(fake_cluster, SECRET, secret(token="b2xk"), current=current).action == "unchanged"
        assert fake_cluster.calls == []
        out = resources.ensure(fake_cluster, SECRET, secret(token="bmV3"), current=current)
        assert out.action == "updated" and [c[0] for c in fake_cluster.calls] == ["PATCH"]
        # stale by now (the patch changed its resourceVersion): the conflict is retried with a fresh read
        fake_cluster.calls.clear()
        out = resources.ensure(fake_cluster, SECRET, secret(token="dGhyZWU="), current=current)
        assert out.action == "updated" and [c[0] for c in fake_cluster.calls] == ["PATCH", "GET", "PATCH"]

    def test_gives_up_after_persistent_conflicts(self, fake_cluster):
        fake_cluster.add(SECRET, secret(token="b2xk"))
        fake_cluster.conflicts = 100
        with pytest.raises(FleetError, match="kept changing"):
            resources.ensure(fake_cluster, SECRET, secret(token="bmV3"))

    def test_check_mode_uses_server_dry_run_and_writes_nothing(self, fake_cluster):
        fake_cluster.add(SECRET, secret(token="b2xk"))
        out = resources.ensure(fake_cluster, SECRET, secret(token="bmV3"), check_mode=True)
        assert out.action == "updated" and out.after["data"]["token"] == "bmV3"
        assert fake_cluster.calls[-1][2] == {"dryRun": "All"}
        assert fake_cluster.objects[SECRET.path("ns", "s")]["data"]["token"] == "b2xk"
        created = resources.ensure(fake_cluster, SECRET, secret(name="new"), check_mode=True)
        assert created.action == "created" and SECRET.path("ns", "new") not in fake_cluster.objects

    def test_check_mode_in_a_namespace_that_is_only_planned(self, fake_cluster):
        def missing_namespace(method, path, **kwargs):
            if method == "POST":
                raise resources.NotFound('namespaces "ns" not found', 404)
            return original(method, path, **kwargs)
        original, fake_cluster.request = fake_cluster.request, missing_namespace
        out = resources.ensure(fake_cluster, SECRET, secret(), check_mode=True)
        assert out.action == "created" and out.after["metadata"]["name"] == "s"

    def test_requires_a_name(self, fake_cluster):
        with pytest.raises(FleetError, match="metadata.name"):
            resources.ensure(fake_cluster, SECRET, {"metadata": {"namespace": "x"}})


class TestDelete:
    def test_absent(self, fake_cluster):
        out = resources.delete(fake_cluster, SECRET, "s", "ns")
        assert out.action == "absent" and not out.changed

    def test_deletes(self, fake_cluster):
        fake_cluster.add(SECRET, secret())
        out = resources.delete(fake_cluster, SECRET, "s", "ns", wait=resources.Wait(timeout=1))
        assert out.action == "deleted" and out.before["metadata"]["name"] == "s"
        assert SECRET.path("ns", "s") not in fake_cluster.objects

    def test_waits_only_when_the_wait_is_enabled(self, fake_cluster, monkeypatch):
        waited = []
        monkeypatch.setattr(resources, "wait_until_gone", lambda *args: waited.append(args[3:]))
        fake_cluster.add(SECRET, secret())
        resources.delete(fake_cluster, SECRET, "s", "ns", wait=resources.Wait(False, 30, 2))
        fake_cluster.add(SECRET, secret())
        resources.delete(fake_cluster, SECRET, "s", "ns", wait=resources.Wait.from_params(
            {"wait": True, "wait_timeout": 30, "wait_sleep": 2}))
        assert waited == [("ns", 30, 2)]

    def test_check_mode_keeps_object(self, fake_cluster):
        fake_cluster.add(SECRET, secret())
        out = resources.delete(fake_cluster, SECRET, "s", "ns", check_mode=True)
        assert out.action == "deleted" and SECRET.path("ns", "s") in fake_cluster.objects


class TestFailedAfter:
    def test_names_what_was_written_and_keeps_the_class_and_details(self):
        error = resources.failed_after(WaitTimeout("timed out", last_seen="still present"), ["hub Cluster/a: deleted"],
                                       "deleted", changes=["hub Cluster/a: deleted", "hub Secret/ns/a: absent"])
        assert isinstance(error, WaitTimeout) and error.msg == "timed out; deleted before the failure: hub Cluster/a: deleted"
        assert error.details == {"last_seen": "still present", "changed": True,
                                 "changes": ["hub Cluster/a: deleted", "hub Secret/ns/a: absent"]}

    def test_nothing_written(self):
        error = resources.failed_after(FleetError("forbidden", status=403), [], "applied")
        assert not isinstance(error, WaitTimeout) and error.msg == "forbidden" and error.details == {"status": 403, "changed": False}


class TestPresentable:
    def test_masks_secret_values_and_drops_server_metadata(self):
        obj = {"kind": "Secret", "metadata": {"name": "s", "resourceVersion": "9", "managedFields": []},
               "data": {"token": "c2VjcmV0"}}
        shown = resources.presentable(obj)
        assert shown["data"] == {"token": resources.MASKED}
        assert "resourceVersion" not in shown["metadata"] and "managedFields" not in shown["metadata"]
        assert obj["data"]["token"] == "c2VjcmV0"  # the input is untouched

    def test_diff_of_created_object(self, fake_cluster):
        out = resources.ensure(fake_cluster, CLUSTER, {"metadata": {"name": "m"}, "spec": {"syncMode": "Push"}})
        assert out.diff()["before"] == {} and out.diff()["after"]["spec"] == {"syncMode": "Push"}


class TestWait:
    def test_timeout_names_what_and_last_seen(self):
        now = [0.0]
        with pytest.raises(WaitTimeout) as info:
            resources.wait_until(lambda: (False, "Ready=False (Pending: booting)"), 5, "Cluster/m1 to be ready",
                                 clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
        assert "timed out after 5s waiting for Cluster/m1 to be ready" in info.value.msg
        assert "Ready=False (Pending: booting)" in info.value.msg

    def test_returns_when_done(self):
        seen = iter([(False, "x"), (True, None)])
        resources.wait_until(lambda: next(seen), 5, "it", sleep=lambda s: None)

    def test_wait_for_condition(self, fake_cluster):
        obj = fake_cluster.add(CLUSTER, {"metadata": {"name": "m"},
                                         "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        got = resources.wait_for_condition(fake_cluster, CLUSTER, "m", wait=resources.Wait(timeout=1))
        assert got["metadata"]["name"] == obj["metadata"]["name"]

    def test_wait_for_condition_timeout_reports_condition(self, fake_cluster):
        fake_cluster.add(CLUSTER, {"metadata": {"name": "m"}, "status": {"conditions": [
            {"type": "Ready", "status": "False", "reason": "ClusterNotReachable", "message": "no route"}]}})
        with pytest.raises(WaitTimeout, match="Ready=False \\(ClusterNotReachable: no route\\)"):
            resources.wait_for_condition(fake_cluster, CLUSTER, "m", wait=resources.Wait(timeout=0))


class TestWaitCondition:
    """wait_condition as kubernetes.core has it: type, status (default True), reason (any when unset)."""

    OBJ = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Paused", "message": "on hold"}]}}

    @pytest.mark.parametrize("wanted, expected", [
        (resources.wanted_condition("Ready", "False"), (True, None)),
        (resources.wanted_condition("Ready", "False", "Paused"), (True, None)),
        (resources.wanted_condition("Ready", "False", "Other"), (False, "Ready=False (Paused: on hold)")),
        (resources.wanted_condition("Ready"), (False, "Ready=False (Paused: on hold)")),
        (resources.wanted_condition("Joined"), (False, "no Joined condition yet")),
        ({"type": "Ready", "status": None, "reason": None}, (False, "Ready=False (Paused: on hold)")),  # status defaults to True
    ])
    def test_condition_met(self, wanted, expected):
        assert resources.condition_met(self.OBJ, wanted) == expected

    def test_missing_object(self):
        assert resources.condition_met(None, resources.wanted_condition("Ready")) == (False, "the object does not exist")

    def test_describe(self):
        assert resources.describe_condition(resources.wanted_condition("Ready")) == "Ready=True"
        assert resources.describe_condition(resources.wanted_condition("Ready", "False", "Paused")) == "Ready=False (reason Paused)"

    def test_wait_for_condition_with_reason_and_interval(self, fake_cluster):
        fake_cluster.add(CLUSTER, {"metadata": {"name": "m"}, "status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "ClusterReady"}]}})
        with pytest.raises(WaitTimeout, match="Cluster/m on cluster 'hub' \\(https://fake\\) to have Ready=True \\(reason Other\\)"):
            resources.wait_for_condition(fake_cluster, CLUSTER, "m", wait=resources.Wait(
                timeout=0, condition=resources.wanted_condition("Ready", reason="Other")))
        assert resources.wait_for_condition(fake_cluster, CLUSTER, "m", wait=resources.Wait(
            timeout=0, interval=7, condition=resources.wanted_condition("Ready", reason="ClusterReady")))

    def test_interval_is_the_sleep_between_checks(self):
        slept, seen = [], iter([(False, "x"), (False, "y"), (True, None)])
        resources.wait_until(lambda: next(seen), 60, "it", interval=7, sleep=slept.append, clock=lambda: 0.0)
        assert slept == [7, 7]


class TestDurations:
    @pytest.mark.parametrize("params, message", [
        (dict(wait_timeout=-1), "wait_timeout must not be negative, got -1"),
        (dict(wait_timeout=0, wait_sleep=0), "wait_sleep must be at least 1 second, got 0"),
        (dict(wait_timeout=10, wait_sleep=-5), "wait_sleep must be at least 1 second, got -5"),
    ])
    def test_refused(self, params, message):
        with pytest.raises(FleetError) as caught:
            resources.check_wait_options(params)
        assert caught.value.msg == message

    @pytest.mark.parametrize("params", [dict(wait_timeout=0, wait_sleep=1), dict(wait_timeout=None), {}])
    def test_accepted(self, params):
        resources.check_wait_options(params)

    def test_least_more_than_one(self):
        with pytest.raises(FleetError, match="^csr_wait_timeout must be at least 2 seconds, got 1$"):
            resources.check_duration("csr_wait_timeout", 1, least=2)


def test_shown_pending_names_the_first_ten_and_counts_the_rest():
    assert resources.shown_pending(["a", "b"]) == "a; b"
    many = ["c%02d" % n for n in range(13)]
    assert resources.shown_pending(many) == "; ".join(many[:10]) + "; and 3 more"


class ScriptedWatchCluster:
    """Answers the list (or read) of one named Cluster with ``listed`` (one per request, the last one again), and each
    watch with the next of ``watches``: a list of events, or :class:`Fails` with the exception the watch raises.
    Records every request."""

    def __init__(self, listed, watches=()):
        self.listed = list(listed)
        self.watches = list(watches)
        self.requests = []

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        self.requests.append(("list" if query else "get", path, query))
        obj = self.listed.pop(0) if len(self.listed) > 1 else self.listed[0]
        if not query:  # a read of the object by name
            return obj
        return {"metadata": {"resourceVersion": "7"}, "items": [obj] if obj else []}

    def watch(self, path, resource_version, query=None, timeout_seconds=None):
        self.requests.append(("watch", path, query, resource_version, timeout_seconds))
        script = self.watches.pop(0) if self.watches else []
        if isinstance(script, Fails):
            raise script.error
        return iter(script)


class Fails:
    """A watch that fails with ``error``."""

    def __init__(self, error):
        self.error = error


def cluster_with(ready):
    return {"metadata": {"name": "m1"}, "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def is_ready(obj):
    if obj is None:
        return False, "absent"
    return resources.condition_is(obj, "Ready"), "Ready is not True"


class TestWatchUntil:
    """resources.watch_until: one list and one watch however long the wait, with the fallbacks it documents."""

    def wait(self, cluster, timeout=30):
        now = [0.0]

        def sleep(seconds):
            now[0] += max(seconds, 0.01)
        return resources.watch_until(cluster, CLUSTER, "m1", is_ready, resources.Wait(timeout=timeout, interval=1),
                                     "m1 to be ready", timer=resources.Timer(lambda: now[0], sleep))

    def test_the_change_arrives_by_the_watch(self):
        cluster = ScriptedWatchCluster([cluster_with(False)], [[("MODIFIED", cluster_with(False)),
                                                                ("BOOKMARK", {"metadata": {"resourceVersion": "9"}}),
                                                                ("MODIFIED", cluster_with(True))]])
        assert resources.condition_is(self.wait(cluster), "Ready")
        assert [r[0] for r in cluster.requests] == ["list", "watch"]
        assert cluster.requests[0][2] == {"fieldSelector": "metadata.name=m1"}
        assert cluster.requests[1][2:] == ({"fieldSelector": "metadata.name=m1"}, "7", 30)

    def test_ready_at_the_list_needs_no_watch(self):
        cluster = ScriptedWatchCluster([cluster_with(True)])
        self.wait(cluster)
        assert [r[0] for r in cluster.requests] == ["list"]

    @pytest.mark.parametrize("ended", [[], Fails(client.Gone("gone", 410)), Fails(client.ClusterError("broke off", 0)),
                                       Fails(client.ClusterError("storage is (re)initializing", 429))])
    def test_a_watch_that_ends_without_the_change_lists_again(self, ended):
        cluster = ScriptedWatchCluster([cluster_with(False), cluster_with(True)], [ended])
        self.wait(cluster)
        assert [r[0] for r in cluster.requests] == ["list", "watch", "list"]

    def test_credentials_that_may_not_watch_read_every_interval(self):
        cluster = ScriptedWatchCluster([cluster_with(False)] * 3 + [cluster_with(True)], [Fails(client.ClusterError("forbidden", 403))])
        self.wait(cluster)
        assert [r[0] for r in cluster.requests] == ["list", "watch", "get", "get", "get"]

    def test_other_errors_of_the_watch_fail_the_wait(self):
        cluster = ScriptedWatchCluster([cluster_with(False)], [Fails(client.ClusterError("internal error", 500))])
        with pytest.raises(client.ClusterError, match="internal error"):
            self.wait(cluster)

    def test_a_deleted_object_is_seen_as_absent_and_the_timeout_says_so(self):
        cluster = ScriptedWatchCluster([cluster_with(False), None], [[("DELETED", cluster_with(False))]])
        with pytest.raises(WaitTimeout, match="timed out after 3s waiting for m1 to be ready; last seen: absent"):
            self.wait(cluster, timeout=3)

    def test_credentials_that_may_not_list_read_the_object_every_interval(self):
        class GetOnly(ScriptedWatchCluster):
            def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
                if query:
                    self.requests.append(("list", path, query))
                    raise client.ClusterError("forbidden", 403)
                return super(GetOnly, self).request(method, path, body, query, content_type, timeout)
        cluster = GetOnly([cluster_with(False), cluster_with(True)])
        self.wait(cluster)
        assert [r[0] for r in cluster.requests] == ["list", "get", "get"]
        assert cluster.requests[1][1] == CLUSTER.path(name="m1")
