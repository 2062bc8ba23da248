import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import objects, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import CLUSTER_MANAGER
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CONFIG_MAP, CRD, DEPLOYMENT, NAMESPACE

NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "demo"}, "data": {"a": "1"}}
CM_NO_NS = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}}
CRD_MANIFEST = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "clustermanagers.operator.open-cluster-management.io",
                             "labels": {"app.kubernetes.io/managed-by": "multicluster.fleet"}},
                "spec": {"group": "operator.open-cluster-management.io", "scope": "Cluster"}}
DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "op", "namespace": "demo"},
          "spec": {"replicas": 1}}


@pytest.fixture
def cluster(fake_cluster):
    """The fake API server, whose CRDs become Established as soon as they are stored (as on a real one)."""
    plain = fake_cluster.request

    def request(method, path, body=None, query=None, content_type="application/json", timeout=None):
        answer = plain(method, path, body, query, content_type, timeout)
        target = path + "/" + body["metadata"]["name"] if method == "POST" else path
        stored = fake_cluster.objects.get(target)
        if stored is not None and stored.get("kind") == "CustomResourceDefinition":
            stored["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
        return answer
    fake_cluster.request = request
    return fake_cluster


def prepared(*manifests, **kwargs):
    return objects.prepare(list(manifests), **kwargs)


class TestKinds:
    def test_known_core_and_engine_kinds(self):
        assert objects.kind_of(NS) is NAMESPACE
        assert objects.kind_of(CRD_MANIFEST) is CRD
        assert objects.kind_of({"apiVersion": "operator.open-cluster-management.io/v1", "kind": "ClusterManager"}) is CLUSTER_MANAGER

    def test_unknown_kind_names_the_known_ones(self):
        with pytest.raises(FleetError, match=r"Service \(apiVersion v1\) is not a kind this collection knows; known kinds: .*v1 Namespace"):
            objects.kind_of({"apiVersion": "v1", "kind": "Service"})

    def test_kind_with_the_wrong_version_is_unknown(self):
        with pytest.raises(FleetError, match="Deployment .apiVersion extensions/v1beta1. is not a kind"):
            objects.kind_of({"apiVersion": "extensions/v1beta1", "kind": "Deployment"})


class TestPrepare:
    def test_default_namespace_and_list_expansion(self):
        items = prepared({"apiVersion": "v1", "kind": "List", "items": [NS, CM_NO_NS]}, namespace="demo")
        assert [(k, m["metadata"].get("namespace")) for k, m in items] == [(NAMESPACE, None), (CONFIG_MAP, "demo")]
        assert "namespace" not in CM_NO_NS["metadata"]  # the input is not modified

    def test_manifest_namespace_wins_over_default(self):
        assert prepared(CM, namespace="other")[0][1]["metadata"]["namespace"] == "demo"

    def test_namespaced_object_without_namespace_fails(self):
        with pytest.raises(FleetError, match="ConfigMap settings needs a namespace"):
            prepared(CM_NO_NS)

    def test_the_same_object_twice_is_refused(self):
        """Twice in one list - once with the default namespace - would be applied twice, the second winning."""
        with pytest.raises(FleetError, match=r"objects 1 and 3 are the same object, ConfigMap/demo/settings \(v1\)"):
            prepared(CM, NS, CM_NO_NS, namespace="demo")
        assert len(prepared(CM, CM_NO_NS, namespace="other")) == 2  # another namespace: another object

    def test_cluster_scoped_object_loses_a_namespace(self):
        items = prepared(dict(NS, metadata={"name": "demo", "namespace": "x"}))
        assert "namespace" not in items[0][1]["metadata"]

    @pytest.mark.parametrize("manifest,message", [
        ({"kind": "Namespace", "metadata": {"name": "a"}}, r"object 1 \(Namespace\) has no apiVersion"),
        ({"apiVersion": "v1", "kind": "Namespace", "metadata": {}}, r"object 1 \(Namespace\) has no metadata.name"),
        ({"apiVersion": "v1"}, r"object 1 \(\?\) has no kind, metadata.name"),
        ("just text", "object 1 is not a mapping but str"),
    ])
    def test_incomplete_manifests(self, manifest, message):
        with pytest.raises(FleetError, match=message):
            prepared(manifest)


class TestApply:
    def test_creates_then_unchanged(self, cluster):
        items = prepared(NS, CM)
        first = objects.apply(cluster, items)
        assert [o.summary() for o in first] == ["Namespace/demo: created", "ConfigMap/demo/settings: created"]
        writes = len([c for c in cluster.calls if c[0] != "GET"])
        second = objects.apply(cluster, items)
        assert [o.action for o in second] == ["unchanged", "unchanged"]
        assert len([c for c in cluster.calls if c[0] != "GET"]) == writes

    def test_an_object_the_dry_run_found_unchanged_is_read_once(self, cluster):
        items = prepared(NS, CM)
        objects.apply(cluster, items)
        del cluster.calls[:]
        objects.apply(cluster, items)
        # The namespace's existence for the ConfigMap, then each object once: the dry run's read is the run's.
        assert [(c[0], c[1]) for c in cluster.calls] == [
            ("GET", NAMESPACE.path(None, "demo")), ("GET", NAMESPACE.path(None, "demo")),
            ("GET", CONFIG_MAP.path("demo", "settings"))]

    def test_updates_what_differs(self, cluster):
        cluster.add(NAMESPACE, NS)
        objects.apply(cluster, prepared(CM))
        changed = dict(CM, data={"a": "2"})
        outcome = objects.apply(cluster, prepared(changed))[0]
        assert outcome.action == "updated"
        assert cluster.objects[CONFIG_MAP.path("demo", "settings")]["data"] == {"a": "2"}

    def test_check_mode_stores_nothing(self, cluster):
        outcomes = objects.apply(cluster, prepared(NS, CM, CRD_MANIFEST), check_mode=True)
        assert [o.action for o in outcomes] == ["created"] * 3
        assert cluster.objects == {}
        assert all(c[2].get("dryRun") == "All" for c in cluster.calls if c[0] == "POST")

    def test_keep_leaves_existing_objects_alone(self, cluster):
        cluster.add(CRD, {"metadata": {"name": CRD_MANIFEST["metadata"]["name"]}, "spec": {"group": "old"}})
        outcomes = objects.apply(cluster, prepared(CRD_MANIFEST, NS), existing="keep")
        assert [o.action for o in outcomes] == ["unchanged", "created"]
        stored = cluster.objects[CRD.path(name=CRD_MANIFEST["metadata"]["name"])]
        assert stored["spec"] == {"group": "old"} and "labels" not in stored["metadata"]

    def test_keep_crds_leaves_existing_crds_alone_and_updates_the_rest(self, cluster):
        cluster.add(CRD, {"metadata": {"name": CRD_MANIFEST["metadata"]["name"]}, "spec": {"group": "old"}})
        cluster.add(NAMESPACE, {"metadata": {"name": "demo"}})
        labelled = dict(NS, metadata={"name": "demo", "labels": {"team": "a"}})
        outcomes = objects.apply(cluster, prepared(CRD_MANIFEST, labelled), existing="keep_crds")
        assert [o.action for o in outcomes] == ["unchanged", "updated"]
        assert cluster.objects[CRD.path(name=CRD_MANIFEST["metadata"]["name"])]["spec"] == {"group": "old"}
        assert cluster.objects[NAMESPACE.path(name="demo")]["metadata"]["labels"] == {"team": "a"}

    def test_created_crd_is_waited_for_before_the_next_object(self, cluster):
        objects.apply(cluster, prepared(CRD_MANIFEST, NS))
        crd_path = CRD.path(name=CRD_MANIFEST["metadata"]["name"])
        reads = [i for i, c in enumerate(cluster.calls) if c[:2] == ("GET", crd_path)]
        namespace_post = [i for i, c in enumerate(cluster.calls) if c[:2] == ("POST", NAMESPACE.path()) and not c[2]][0]
        # read for the dry run, read before create, then the Established check, all before the namespace is written
        assert len(reads) == 3 and reads[-1] < namespace_post

    def test_crd_that_never_becomes_established_times_out(self, fake_cluster, monkeypatch):
        monkeypatch.setattr(resources.time, "sleep", lambda seconds: None)  # the plain fake: CRDs stay without status
        with pytest.raises(WaitTimeout, match="CustomResourceDefinition/clustermanagers.* to have Established=True"):
            objects.apply(fake_cluster, prepared(CRD_MANIFEST), timeout=0)

    def test_wait_for_deployment_available(self, cluster):
        cluster.add(NAMESPACE, NS)
        stored = cluster.add(DEPLOYMENT, dict(DEPLOY, metadata=dict(DEPLOY["metadata"], generation=2)))
        stored["status"] = {"observedGeneration": 2, "availableReplicas": 1, "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]}
        outcomes = objects.apply(cluster, prepared(DEPLOY), wait=True, timeout=0)
        assert outcomes[0].action == "unchanged"

    @pytest.mark.parametrize("status,detail", [
        ({}, "the deployment controller has not yet seen generation 3"),
        ({"observedGeneration": 2}, "its controller has not yet seen generation 3"),
        ({"observedGeneration": 3, "conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
                                                   "message": "Deployment does not have minimum availability."}]},
         "0/1 replicas available; Available=False (MinimumReplicasUnavailable: Deployment does not have minimum availability.)"),
    ])
    def test_wait_for_deployment_times_out_with_detail(self, cluster, monkeypatch, status, detail):
        cluster.add(NAMESPACE, NS)
        monkeypatch.setattr(resources.time, "sleep", lambda seconds: None)
        stored = cluster.add(DEPLOYMENT, dict(DEPLOY, metadata=dict(DEPLOY["metadata"], generation=3)))
        stored["status"] = status
        with pytest.raises(WaitTimeout) as caught:
            objects.apply(cluster, prepared(DEPLOY), wait=True, timeout=0)
        assert "Deployment/demo/op on cluster 'hub' (https://fake) to be Available" in caught.value.msg
        assert caught.value.msg.endswith("last seen: " + detail)

    def test_wait_for_conditions_of_custom_resources(self, cluster, monkeypatch):
        monkeypatch.setattr(resources.time, "sleep", lambda seconds: None)
        manager = {"apiVersion": "operator.open-cluster-management.io/v1", "kind": "ClusterManager",
                   "metadata": {"name": "cluster-manager"}}
        stored = cluster.add(CLUSTER_MANAGER, dict(manager, metadata={"name": "cluster-manager", "generation": 2}))
        wanted = [resources.wanted_condition("Applied"), resources.wanted_condition("HubRegistrationDegraded", "False")]
        stored["status"] = {"observedGeneration": 2, "conditions": [
            {"type": "Applied", "status": "True", "reason": "ClusterManagerApplied"},
            {"type": "HubRegistrationDegraded", "status": "True", "reason": "UnavailableRegistrationPod", "message": "1 of 1"}]}
        with pytest.raises(WaitTimeout) as caught:
            objects.apply(cluster, prepared(manager), wait=True, timeout=0, conditions=wanted)
        assert "ClusterManager/cluster-manager on cluster 'hub' (https://fake) to have Applied=True, HubRegistrationDegraded=False" in caught.value.msg
        assert caught.value.msg.endswith("last seen: HubRegistrationDegraded=True (UnavailableRegistrationPod: 1 of 1)")
        stored["status"]["conditions"][1].update(status="False", reason="RegistrationFunctional")
        assert objects.apply(cluster, prepared(manager), wait=True, timeout=0, conditions=wanted)[0].action == "unchanged"
        stored["status"]["observedGeneration"] = 1
        with pytest.raises(WaitTimeout, match="last seen: its controller has not yet seen generation 2"):
            objects.apply(cluster, prepared(manager), wait=True, timeout=0, conditions=wanted)

    def test_custom_resources_without_conditions_are_not_waited_for(self, cluster):
        manager = {"apiVersion": "operator.open-cluster-management.io/v1", "kind": "ClusterManager",
                   "metadata": {"name": "cluster-manager"}}
        assert objects.apply(cluster, prepared(manager), wait=True, timeout=0)[0].action == "created"

    def test_no_wait_in_check_mode(self, cluster):
        outcomes = objects.apply(cluster, prepared(NS, DEPLOY), check_mode=True, wait=True, timeout=0)
        assert [o.action for o in outcomes] == ["created", "created"]


def refusing(cluster, refuse):
    """``cluster`` answering ``refuse(method, body, dry_run)`` -> a ClusterError to raise (or None) before storing."""
    plain = cluster.request

    def request(method, path, body=None, query=None, content_type="application/json", timeout=None):
        error = refuse(method, body, (query or {}).get("dryRun") == "All") if method != "GET" else None
        if error is not None:
            cluster.calls.append((method, path, dict(query or {})))
            raise error
        return plain(method, path, body, query, content_type, timeout)
    cluster.request = request
    return cluster


def invalid_names(method, body, dry_run):
    name = body["metadata"]["name"]
    if name != name.lower():
        return ClusterError("cluster 'hub' (https://fake): POST failed: 422 ConfigMap \"%s\" is invalid: metadata.name: "
                            "Invalid value" % name, 422, "Invalid")
    return None


def real_writes(cluster):
    return [c for c in cluster.calls if c[0] != "GET" and c[2].get("dryRun") != "All"]


class TestDryRunFirst:
    """Every object is validated by the API server (dry run) before the first write."""

    def test_an_invalid_object_stops_the_run_before_any_write(self, cluster):
        bad = dict(CM, metadata={"name": "Bad_Name", "namespace": "demo"})
        refusing(cluster, invalid_names)
        with pytest.raises(FleetError) as caught:
            objects.apply(cluster, prepared(NS, CM, bad))
        assert caught.value.msg.startswith(
            "nothing was written: 1 of 3 objects cannot be applied (checked with a server-side dry run first): "
            "object 3 (ConfigMap/demo/Bad_Name): "
            "cluster 'hub' (https://fake): POST failed: 422 ConfigMap \"Bad_Name\" is invalid")
        assert caught.value.details["changed"] is False
        assert real_writes(cluster) == [] and cluster.objects == {}

    def test_every_invalid_object_is_named(self, cluster):
        cluster.add(NAMESPACE, NS)
        refusing(cluster, invalid_names)
        with pytest.raises(FleetError) as caught:
            objects.apply(cluster, prepared(dict(CM, metadata={"name": "A", "namespace": "demo"}), CM,
                                            dict(CM, metadata={"name": "B", "namespace": "demo"})))
        assert "nothing was written: 2 of 3 objects cannot be applied" in caught.value.msg
        assert "object 1 (ConfigMap/demo/A)" in caught.value.msg and "object 3 (ConfigMap/demo/B)" in caught.value.msg

    def test_other_refusals_stop_at_once(self, cluster):
        refusing(cluster, lambda method, body, dry_run: ClusterError("cluster 'hub' (https://fake): POST failed: 403 "
                                                                     "forbidden (the credentials lack RBAC permission for this)", 403))
        with pytest.raises(FleetError) as caught:
            objects.apply(cluster, prepared(NS, CM))
        assert caught.value.msg.endswith("403 forbidden (the credentials lack RBAC permission for this); nothing was "
                                         "written (object 1 (Namespace/demo))")
        assert len([c for c in cluster.calls if c[0] == "POST"]) == 1

    def test_an_object_for_a_namespace_of_the_same_run_is_validated_in_default(self, cluster):
        """A real API server answers 404 for a namespace that does not exist before it validates the object."""
        refusing(cluster, invalid_names)
        with pytest.raises(FleetError) as caught:
            objects.apply(cluster, prepared(NS, dict(CM, metadata={"name": "Bad_Name", "namespace": "demo"})))
        assert caught.value.msg.startswith("nothing was written: 1 of 2 objects cannot be applied (checked with a "
                                           "server-side dry run first): object 2 (ConfigMap/demo/Bad_Name): ")
        assert caught.value.msg.endswith("(validated in namespace default, since demo does not exist yet)")
        probe = [c for c in cluster.calls if c[0] == "POST" and c[1] == CONFIG_MAP.path("default")]
        assert probe == [("POST", CONFIG_MAP.path("default"), {"dryRun": "All"})] and real_writes(cluster) == []

    def test_a_valid_object_for_a_namespace_of_the_same_run(self, cluster):
        outcomes = objects.apply(cluster, prepared(NS, CM))
        assert [o.action for o in outcomes] == ["created", "created"]
        assert CONFIG_MAP.path("default", "settings") not in cluster.objects

    def test_a_namespace_that_is_neither_there_nor_planned(self, cluster):
        other = dict(CM, metadata={"name": "x", "namespace": "elsewhere"})
        with pytest.raises(FleetError) as caught:
            objects.apply(cluster, prepared(NS, CM, other), check_mode=True)
        assert caught.value.msg == ("nothing was written: 1 of 3 objects cannot be applied (checked with a server-side "
                                    "dry run first): object 3 (ConfigMap/elsewhere/x): namespace elsewhere does not "
                                    "exist on cluster 'hub' (https://fake) and is not among the objects")
        assert real_writes(cluster) == []

    def test_a_failure_after_writes_began_reports_what_was_written(self, cluster):
        def second_write_fails(method, body, dry_run):
            if not dry_run and body["metadata"]["name"] == "settings":
                return ClusterError("cluster 'hub' (https://fake): POST failed: 500 etcdserver: request timed out", 500)
            return None
        refusing(cluster, second_write_fails)
        with pytest.raises(FleetError) as caught:
            objects.apply(cluster, prepared(NS, CM))
        assert caught.value.msg == ("cluster 'hub' (https://fake): POST failed: 500 etcdserver: request timed out; "
                                    "applied before the failure: Namespace/demo: created")
        assert caught.value.details["changed"] is True
        assert caught.value.details["objects"] == ["Namespace/demo: created"]

    def test_a_wait_that_times_out_after_writes_reports_changed(self, cluster):
        with pytest.raises(WaitTimeout) as caught:
            objects.apply(cluster, prepared(NS, DEPLOY), wait=True, timeout=0)
        assert caught.value.details["changed"] is True
        assert caught.value.details["objects"] == ["Namespace/demo: created", "Deployment/demo/op: created"]

    def test_check_mode_is_the_dry_run(self, cluster):
        objects.apply(cluster, prepared(NS, CM), check_mode=True)
        assert real_writes(cluster) == [] and len([c for c in cluster.calls if c[0] == "POST"]) == 2

    def test_nothing_to_write_means_no_dry_run_writes_either(self, cluster):
        objects.apply(cluster, prepared(NS, CM))
        cluster.calls.clear()
        objects.apply(cluster, prepared(NS, CM))
        assert {c[0] for c in cluster.calls} == {"GET"}

    def test_deletions_before_a_failure_are_named(self, cluster):
        objects.apply(cluster, prepared(NS, CM))
        refusing(cluster, lambda method, body, dry_run: ClusterError("cluster 'hub' (https://fake): DELETE failed: 500 boom", 500)
                 if method == "DELETE" and cluster.calls[-1][1].endswith("/namespaces/demo") else None)
        with pytest.raises(FleetError) as caught:
            objects.remove(cluster, prepared(NS, CM))
        assert caught.value.msg.endswith("; deleted before the failure: ConfigMap/demo/settings: deleted")
        assert caught.value.details["changed"] is True


class TestRemove:
    def test_deletes_in_reverse_order(self, cluster):
        objects.apply(cluster, prepared(NS, CM))
        outcomes = objects.remove(cluster, prepared(NS, CM))
        assert [o.summary() for o in outcomes] == ["ConfigMap/demo/settings: deleted", "Namespace/demo: deleted"]
        deletes = [c[1] for c in cluster.calls if c[0] == "DELETE"]
        assert deletes == [CONFIG_MAP.path("demo", "settings"), NAMESPACE.path(name="demo")]
        assert [o.action for o in objects.remove(cluster, prepared(NS, CM))] == ["absent", "absent"]

    def test_check_mode_deletes_nothing(self, cluster):
        objects.apply(cluster, prepared(NS))
        assert objects.remove(cluster, prepared(NS), check_mode=True)[0].action == "deleted"
        assert NAMESPACE.path(name="demo") in cluster.objects

    def test_keep_unlabeled_spares_objects_someone_else_created(self, cluster):
        cluster.add(CRD, {"metadata": {"name": CRD_MANIFEST["metadata"]["name"]}})
        outcome = objects.remove(cluster, prepared(CRD_MANIFEST), keep_unlabeled=True)[0]
        assert outcome.action == "unchanged" and cluster.objects

    def test_keep_unlabeled_deletes_labelled_objects(self, cluster):
        objects.apply(cluster, prepared(CRD_MANIFEST))
        assert objects.remove(cluster, prepared(CRD_MANIFEST), keep_unlabeled=True)[0].action == "deleted"
        assert not cluster.objects

    def test_without_keep_unlabeled_deletes_anyway(self, cluster):
        cluster.add(CRD, {"metadata": {"name": CRD_MANIFEST["metadata"]["name"]}})
        assert objects.remove(cluster, prepared(CRD_MANIFEST))[0].action == "deleted"


class TestResult:
    def test_lines_changed_and_masked_diff(self, cluster):
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "demo"},
                  "stringData": {"kubeconfig": "token: sekret"}}
        outcomes = objects.apply(cluster, prepared(NS, secret))
        outcomes += objects.apply(cluster, prepared(NS))
        done = objects.result(outcomes)
        assert done["changed"] is True
        assert done["objects"] == ["Namespace/demo: created", "Secret/demo/s: created", "Namespace/demo: unchanged"]
        assert [d["after_header"] for d in done["diff"]] == ["Namespace/demo", "Secret/demo/s"]
        assert "sekret" not in str(done)

    def test_nothing_changed(self, cluster):
        objects.apply(cluster, prepared(NS))
        done = objects.result(objects.apply(cluster, prepared(NS)))
        assert done["changed"] is False and done["objects"] == ["Namespace/demo: unchanged"] and done["diff"] == []
        assert done["method"] == "update" and done["result"]["metadata"] == {"name": "demo"}

    def test_one_object_is_returned_as_kubernetes_core_k8s_does(self, cluster):
        cluster.add(NAMESPACE, NS)
        done = objects.result(objects.apply(cluster, prepared(CM)))
        assert done["method"] == "create"
        assert done["result"] == {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "settings", "namespace": "demo"}, "data": {"a": "1"}}

    def test_several_objects_as_result_results(self, cluster):
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "demo"},
                  "stringData": {"kubeconfig": "token: sekret"}}
        objects.apply(cluster, prepared(NS))
        done = objects.result(objects.apply(cluster, prepared(NS, secret)))
        assert "method" not in done and list(done["result"]) == ["results"]
        first, second = done["result"]["results"]
        assert (first["changed"], first["method"], first["result"]["kind"]) == (False, "update", "Namespace")
        assert (second["changed"], second["method"]) == (True, "create")
        assert second["result"]["stringData"] == {"kubeconfig": resources.MASKED} and "sekret" not in str(done)

    def test_deleted_objects_are_empty(self, cluster):
        objects.apply(cluster, prepared(NS, CM))
        done = objects.result(objects.remove(cluster, prepared(NS, CM)), "absent")
        assert done["result"]["results"] == [{"changed": True, "method": "delete", "result": {}}] * 2
        assert objects.result(objects.remove(cluster, prepared(NS)), "absent")["result"] == {}

    def test_waited_objects_are_returned_as_last_read(self, cluster):
        cluster.add(NAMESPACE, NS)
        stored = cluster.add(DEPLOYMENT, dict(DEPLOY, metadata=dict(DEPLOY["metadata"], generation=1)))
        stored["status"] = {"observedGeneration": 1, "availableReplicas": 1, "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]}
        done = objects.result(objects.apply(cluster, prepared(DEPLOY), wait=True, timeout=0))
        assert done["result"]["status"]["availableReplicas"] == 1

    def test_expand_lists(self):
        listed = {"apiVersion": "v1", "kind": "List", "items": [NS, CM]}
        assert list(objects.expand([listed, CM_NO_NS])) == [NS, CM, CM_NO_NS]


def test_update_the_server_turns_into_no_change_is_unchanged(cluster):
    cluster.add(NAMESPACE, NS)
    """A manifest that differs from the stored object only in form (canonicalized by the server) is unchanged."""
    objects.apply(cluster, prepared(CM))
    plain = cluster.request

    def canonicalizing(method, path, body=None, query=None, content_type="application/json", timeout=None):
        if method == "PATCH":
            body = dict(body, data={"a": "1"})  # the server stores "1.0" as "1"
        return plain(method, path, body, query, content_type, timeout)
    cluster.request = canonicalizing
    outcome = objects.apply(cluster, prepared(dict(CM, data={"a": "1.0"})))[0]
    assert outcome.action == "unchanged"
