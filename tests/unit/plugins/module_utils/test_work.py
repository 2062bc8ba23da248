import copy

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, work
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import Conflict, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER, WORK
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER, MANIFEST_WORK
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import NAMESPACE, Wait, wanted_condition as wanted

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hello", "namespace": "default"},
       "spec": {"containers": [{"name": "hello", "image": "busybox"}]}}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}, "data": {"a": "1"}}
OCM = engines.get("ocm").works
KARMADA = engines.get("karmada").works


@pytest.fixture
def hub(fake_cluster):
    """The in-memory API plus what work.py needs: PUT, and lists across namespaces with a name field selector."""
    fake = fake_cluster
    fake.put_conflicts = 0
    delegate = fake.request

    def request(method, path, body=None, query=None, content_type="application/json", timeout=None):
        selector = (query or {}).get("fieldSelector")
        if method == "PUT":
            fake.calls.append((method, path, dict(query or {})))
            if path not in fake.objects:
                raise NotFound("not found", 404)
            if fake.put_conflicts:
                fake.put_conflicts -= 1
                raise Conflict("conflict", 409, "Conflict")
            stored = copy.deepcopy(body)
            stored["metadata"]["resourceVersion"] = str(next(fake._versions))
            stored["metadata"]["generation"] = fake.objects[path]["metadata"].get("generation", 1) + 1
            if (query or {}).get("dryRun") != "All":
                fake.objects[path] = stored
            return copy.deepcopy(stored)
        if method == "GET" and selector and path in (MANIFEST_WORK.path(), WORK.path()):
            fake.calls.append((method, path, dict(query)))
            group_version, plural = path.rsplit("/", 1)
            name = selector.split("=", 1)[1]
            return {"items": [copy.deepcopy(o) for p, o in sorted(fake.objects.items())
                              if p.startswith(group_version + "/namespaces/") and p.split("/")[-2] == plural
                              and o["metadata"]["name"] == name]}
        return delegate(method, path, body, query, content_type, timeout)

    fake.request = request
    return fake


def register(hub, engine, *names, accepted=True, namespace=True):
    for name in names:
        if engine == "ocm":
            hub.add(MANAGED_CLUSTER, {"metadata": {"name": name}, "spec": {"hubAcceptsClient": accepted}})
        else:
            hub.add(CLUSTER, {"metadata": {"name": name}, "spec": {"syncMode": "Push"}})
        if namespace:
            hub.add(NAMESPACE, {"metadata": {"name": engines.get(engine).works.namespace(name)}})


def condition(kind, status="True", reason="R", message="m", generation=None):
    item = {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": "2026-11-22T03:21:02Z"}
    if generation is not None:
        item["observedGeneration"] = generation
    return item


class TestSources:
    def test_directory_in_name_order_with_documents(self, tmp_path):
        (tmp_path / "b.yaml").write_text("kind: B1\n---\n---\nkind: B2\n")
        (tmp_path / "a.json").write_text('{"kind": "A"}')
        (tmp_path / "c.yml").write_text("kind: C\n")
        (tmp_path / "readme.md").write_text("kind: ignored")
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "d.yaml").write_text("kind: not-recursive")
        items = work.load_sources([str(tmp_path)])
        assert [m["kind"] for m, _origin in items] == ["A", "B1", "B2", "C"]
        assert items[2][1] == "%s, document 3" % (tmp_path / "b.yaml")

    def test_files_and_errors(self, tmp_path):
        single = tmp_path / "one.yaml"
        single.write_text("kind: One\n")
        assert [m for m, _origin in work.load_sources([str(single), str(single)])] == [{"kind": "One"}] * 2
        with pytest.raises(FleetError, match="src .*absent.yaml does not exist"):
            work.load_sources([str(tmp_path / "absent.yaml")])
        broken = tmp_path / "broken.yaml"
        broken.write_text("kind: [unclosed\n")
        with pytest.raises(FleetError, match="cannot read manifests from .*broken.yaml"):
            work.load_sources([str(broken)])
        assert work.load_sources(None) == []


class TestValidateManifests:
    def test_valid_manifests_are_copied(self):
        manifests = work.validate_manifests([(POD, None), (CM, "f.yaml, document 1")])
        assert manifests == [POD, CM] and manifests[0] is not POD

    def test_every_problem_is_named_by_index_and_origin(self):
        items = [(POD, None), ({"apiVersion": "v1", "metadata": {"name": "x"}}, "a.yaml, document 2"),
                 ("text", None), ({"kind": "Pod", "metadata": {}}, None), (dict(POD), None),
                 ({"apiVersion": "v1", "kind": "X", "metadata": "oops"}, None)]
        with pytest.raises(FleetError) as caught:
            work.validate_manifests(items)
        assert caught.value.msg == (
            "invalid manifests: manifests[1] (a.yaml, document 2): missing kind; manifests[2] is not a mapping but string; "
            "manifests[3]: missing apiVersion, metadata.name; manifests[4]: Pod default/hello is already manifests[0]; "
            "manifests[5]: metadata must be a mapping, not string")

    @pytest.mark.parametrize("manifest, problem", [
        ({"apiVersion": 1, "kind": "Pod", "metadata": {"name": "x"}}, "apiVersion must be a string, not integer 1"),
        ({"apiVersion": ["v1"], "kind": "Pod", "metadata": {"name": "x"}}, 'apiVersion must be a string, not list ["v1"]'),
        ({"apiVersion": "v1", "kind": True, "metadata": {"name": "x"}}, "kind must be a string, not boolean true"),
        ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 5}}, "metadata.name must be a string, not integer 5"),
        ({"apiVersion": 1.5, "kind": "Pod"}, "missing metadata.name; apiVersion must be a string, not number 1.5"),
        ({"apiVersion": "v1", "kind": "Pod", "metadata": ["x"]}, "metadata must be a mapping, not list"),
    ])
    def test_a_value_of_another_type_is_not_called_missing(self, manifest, problem):
        with pytest.raises(FleetError) as caught:
            work.validate_manifests([(manifest, None)])
        assert caught.value.msg == "invalid manifests: manifests[0]: %s" % problem

    def test_same_name_in_other_group_or_namespace_is_fine(self):
        other = dict(POD, metadata={"name": "hello", "namespace": "other"})
        deployment = dict(POD, apiVersion="apps/v1", kind="Pod")
        assert len(work.validate_manifests([(POD, None), (other, None), (deployment, None)])) == 3

    def test_nothing_to_deliver(self):
        with pytest.raises(FleetError, match="no manifests given: set manifests or src"):
            work.validate_manifests([])


class TestBuild:
    def test_ocm_work(self):
        options = {"delete_option": {"propagation_policy": "Orphan"}, "labels": {"app": "hello"}, "annotations": {"team": "a"}}
        built = work.desired_work(OCM, "mw-01", "c1", [POD], options)
        assert built["metadata"]["name"] == "mw-01" and built["metadata"]["namespace"] == "c1"
        assert built["metadata"]["labels"] == {"app": "hello"}
        assert built["metadata"]["annotations"] == {"team": "a", work.SPEC_HASH_ANNOTATION: work.spec_hash(built["spec"])}
        assert built["spec"] == {"workload": {"manifests": [POD]}, "deleteOption": {"propagationPolicy": "Orphan"}}
        assert "finalizers" not in built["metadata"]  # the OCM work agent adds its own

    def test_karmada_work_is_shaped_like_karmadas_own(self):
        built = work.desired_work(KARMADA, "mw-01", "m1", [POD], {"delete_option": {"propagation_policy": "Orphan"}})
        assert built["metadata"]["namespace"] == "karmada-es-m1"
        assert built["metadata"]["finalizers"] == ["karmada.io/execution-controller"]
        assert built["spec"]["preserveResourcesOnDeletion"] is True
        manifest = built["spec"]["workload"]["manifests"][0]
        assert manifest["metadata"]["labels"] == {"karmada.io/managed": "true"}
        assert manifest["metadata"]["annotations"] == {"work.karmada.io/name": "mw-01", "work.karmada.io/namespace": "karmada-es-m1"}
        assert "labels" not in POD["metadata"]  # the input is not modified
        foreground = work.desired_work(KARMADA, "mw-01", "m1", [POD], {})
        assert "preserveResourcesOnDeletion" not in foreground["spec"]

    @pytest.mark.parametrize("options,message", [
        ({"delete_option": {"propagation_policy": "SelectivelyOrphan"}}, "SelectivelyOrphan is OCM only"),
        ({"manifest_configs": [{"resource_identifier": {"resource": "r", "name": "n"}}]}, "manifest_configs .* are OCM only"),
    ])
    def test_karmada_refuses_ocm_options(self, options, message):
        with pytest.raises(FleetError, match=message):
            work.desired_work(KARMADA, "mw", "m1", [POD], options)

    def test_spec_hash_follows_the_content(self):
        one = work.spec_hash({"a": [1, {"b": 2}]})
        assert one == work.spec_hash({"a": [1, {"b": 2}]}) and len(one) == 64
        assert one != work.spec_hash({"a": [1, {"b": 3}]})

    def test_secret_values(self):
        secret = {"kind": "Secret", "data": {"k": "dmFsdWU="}, "stringData": {"p": "pw", "empty": ""}}
        assert work.secret_values([POD, secret, "x"]) == {"dmFsdWU=", "pw"}


class TestEnsureWork:
    def desired(self, manifests=None, **options):
        return work.desired_work(OCM, "mw-01", "c1", manifests or [CM], options)

    def test_create_then_unchanged_despite_server_defaults(self, hub):
        created = work.ensure_work(hub, MANIFEST_WORK, self.desired(delete_option={"propagation_policy": "Foreground"}))
        assert created.action == "created" and created.before is None
        path = MANIFEST_WORK.path("c1", "mw-01")
        stored = hub.objects[path]
        assert stored["kind"] == "ManifestWork" and stored["apiVersion"] == "work.open-cluster-management.io/v1"
        stored["metadata"]["finalizers"] = ["cluster.open-cluster-management.io/manifest-work-cleanup"]
        stored["spec"]["deleteOption"]["ttlSecondsAfterFinished"] = None  # something the server adds
        again = work.ensure_work(hub, MANIFEST_WORK, self.desired(delete_option={"propagation_policy": "Foreground"}))
        assert again.action == "unchanged" and not again.changed
        assert [c[0] for c in hub.calls].count("PUT") == 0

    def test_removed_fields_are_removed(self, hub):
        work.ensure_work(hub, MANIFEST_WORK, self.desired(delete_option={"propagation_policy": "Orphan"}, labels={"a": "1"}))
        path = MANIFEST_WORK.path("c1", "mw-01")
        hub.objects[path]["metadata"]["labels"]["other"] = "kept"
        hub.objects[path]["metadata"]["finalizers"] = ["agent"]
        smaller = dict(CM, data={})
        updated = work.ensure_work(hub, MANIFEST_WORK, self.desired([smaller], labels={"b": "2"}))
        assert updated.action == "updated" and updated.before["spec"]["deleteOption"] == {"propagationPolicy": "Orphan"}
        stored = hub.objects[path]
        assert stored["spec"] == {"workload": {"manifests": [smaller]}}
        assert stored["metadata"]["labels"] == {"a": "1", "other": "kept", "b": "2"}
        assert stored["metadata"]["finalizers"] == ["agent"]
        assert stored["metadata"]["annotations"][work.SPEC_HASH_ANNOTATION] == work.spec_hash(stored["spec"])

    def test_karmada_finalizer_is_kept_with_others(self, hub):
        desired = work.desired_work(KARMADA, "w", "m1", [CM], {})
        work.ensure_work(hub, WORK, desired)
        path = WORK.path("karmada-es-m1", "w")
        hub.objects[path]["metadata"]["finalizers"] = ["someone/else"]
        assert work.ensure_work(hub, WORK, desired).action == "updated"
        assert hub.objects[path]["metadata"]["finalizers"] == ["someone/else", "karmada.io/execution-controller"]
        assert work.ensure_work(hub, WORK, desired).action == "unchanged"

    def test_check_mode_stores_nothing(self, hub):
        planned = work.ensure_work(hub, MANIFEST_WORK, self.desired(), check_mode=True)
        assert planned.action == "created" and hub.objects == {}
        work.ensure_work(hub, MANIFEST_WORK, self.desired())
        before = copy.deepcopy(hub.objects)
        planned = work.ensure_work(hub, MANIFEST_WORK, self.desired([POD]), check_mode=True)
        assert planned.action == "updated" and planned.after["spec"]["workload"]["manifests"] == [POD]
        assert hub.objects == before
        assert ("PUT", MANIFEST_WORK.path("c1", "mw-01"), {"dryRun": "All"}) in hub.calls

    def test_conflicts_are_retried(self, hub):
        work.ensure_work(hub, MANIFEST_WORK, self.desired())
        hub.put_conflicts = 2
        assert work.ensure_work(hub, MANIFEST_WORK, self.desired([POD])).action == "updated"
        hub.put_conflicts = 99
        with pytest.raises(FleetError, match="kept changing while it was being updated"):
            work.ensure_work(hub, MANIFEST_WORK, self.desired([CM, POD]))

    def test_work_being_deleted_is_not_rewritten(self, hub):
        work.ensure_work(hub, MANIFEST_WORK, self.desired())
        meta = hub.objects[MANIFEST_WORK.path("c1", "mw-01")]["metadata"]
        meta.update(deletionTimestamp="2026-11-22T03:21:02Z", finalizers=["cluster.open-cluster-management.io/manifest-work-cleanup"])
        with pytest.raises(FleetError, match="is being deleted .finalizers: cluster.open-cluster-management.io/manifest-work-cleanup.; "
                                             "wait until it is gone"):
            work.ensure_work(hub, MANIFEST_WORK, self.desired([POD]))


def ocm_work(generation=2, applied=None, available=None, manifests=None):
    obj = work.desired_work(OCM, "mw-01", "c1", [POD, CM], {})
    obj["metadata"]["generation"] = generation
    obj["status"] = {"conditions": [c for c in (applied, available) if c],
                     "resourceStatus": {"manifests": manifests or []}}
    return obj


class TestProgress:
    def test_ocm_applied_for_the_current_generation_only(self):
        assert OCM.progress(None, wanted("Applied")) == (False, "the work does not exist")
        assert OCM.progress(ocm_work(), wanted("Applied")) == (False, "no Applied condition yet")
        stale = ocm_work(applied=condition("Applied", generation=1))
        assert OCM.progress(stale, wanted("Applied")) == (False, "Applied=True is for generation 1, the work is at generation 2")
        assert OCM.progress(ocm_work(applied=condition("Applied", generation=2)), wanted("Applied")) == (True, None)
        unknown = condition("Available", "Unknown", "ResourcesStatusUnknown", "1 of 2 resources have unknown status", 2)
        not_yet = ocm_work(applied=condition("Applied", generation=2), available=unknown)
        assert OCM.progress(not_yet, wanted("Available")) == (False, "Available=Unknown ResourcesStatusUnknown: 1 of 2 resources have unknown status")

    def test_ocm_failure_names_the_failed_manifest(self):
        failed_manifest = {"resourceMeta": {"ordinal": 1, "kind": "ConfigMap"},
                           "conditions": [condition("Applied", "False", "AppliedManifestFailed", "Failed to apply manifest: boom", 2)]}
        failed = ocm_work(applied=condition("Applied", "False", "AppliedManifestWorkFailed", "Failed to apply manifest work", 2),
                          manifests=[failed_manifest])
        assert OCM.progress(failed, wanted("Applied")) == (
            False, "Applied=False AppliedManifestWorkFailed: Failed to apply manifest work; "
                   "manifests[1] ConfigMap default/cm: Failed to apply manifest: boom")

    def test_karmada_available_is_every_manifest_healthy(self):
        obj = work.desired_work(KARMADA, "w", "m1", [POD, CM], {})
        obj["metadata"]["generation"] = 1
        assert KARMADA.progress(obj, wanted("Available")) == (False, "no Applied condition yet")
        obj["status"] = {"conditions": [condition("Applied", reason="AppliedSuccessful")],
                         "manifestStatuses": [{"identifier": {"ordinal": 0}, "health": "Unhealthy", "status": {"phase": "Pending"}}]}
        assert KARMADA.progress(obj, wanted("Applied")) == (True, None)
        assert KARMADA.progress(obj, wanted("Available")) == (False, "manifests[0] Pod default/hello health Unhealthy")
        obj["status"]["manifestStatuses"][0]["health"] = "Healthy"
        assert KARMADA.progress(obj, wanted("Available")) == (False, "manifests[1] ConfigMap default/cm health not reported yet")
        obj["status"]["manifestStatuses"].append({"identifier": {"ordinal": 1}, "health": "Healthy"})
        assert KARMADA.progress(obj, wanted("Available")) == (True, None)


class TestSummarize:
    def test_ocm(self):
        manifest_status = {"resourceMeta": {"ordinal": 0, "resource": "pods"},
                           "conditions": [condition("Applied", reason="AppliedManifestComplete", generation=2),
                                          condition("Available", "False", "ResourceNotAvailable")],
                           "statusFeedback": {"values": [
                               {"name": "Replicas", "fieldValue": {"type": "Integer", "integer": 2}},
                               {"name": "PodPhase", "fieldValue": {"type": "String", "string": "Running"}},
                               {"name": "Ready", "fieldValue": {"type": "Boolean", "boolean": False}},
                               {"name": "raw", "fieldValue": {"type": "JsonRaw", "jsonRaw": '{"a": 1}'}}]}}
        obj = ocm_work(applied=condition("Applied", generation=2), available=condition("Available", generation=2),
                       manifests=[manifest_status])
        summary = work.summarize(OCM, obj, "created")
        assert (summary["action"], summary["applied"], summary["available"], summary["namespace"]) == ("created", True, True, "c1")
        first, second = summary["manifests"]
        assert (first["ordinal"], first["kind"], first["name"], first["resource"]) == (0, "Pod", "hello", "pods")
        assert (first["applied"], first["available"]) == (True, False)
        assert first["feedback"] == {"Replicas": 2, "PodPhase": "Running", "Ready": False, "raw": {"a": 1}}
        assert [c["type"] for c in first["conditions"]] == ["Applied", "Available"]
        assert (second["name"], second["applied"], second["conditions"], second["feedback"]) == ("cm", None, [], {})
        assert work.summarize(OCM, None, "deleted") == {"action": "deleted", "applied": False, "available": False,
                                                        "conditions": [], "manifests": [], "object": {}}

    def test_karmada_and_secret_masking(self):
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
                  "data": {"password": "c2VjcmV0"}, "stringData": {"token": "t0ken"}}
        obj = work.desired_work(KARMADA, "w", "m1", [secret], {})
        obj["status"] = {"conditions": [condition("Applied")],
                         "manifestStatuses": [{"identifier": {"ordinal": 0}, "health": "Healthy", "status": {"x": 1}}]}
        summary = work.summarize(KARMADA, obj)
        manifest = summary["manifests"][0]
        assert (manifest["health"], manifest["available"], manifest["status"]) == ("Healthy", True, {"x": 1})
        shown = summary["object"]["spec"]["workload"]["manifests"][0]
        assert shown["data"] == {"password": work.resources.MASKED} and shown["stringData"] == {"token": work.resources.MASKED}
        assert "c2VjcmV0" not in str(summary) and obj["spec"]["workload"]["manifests"][0]["data"]["password"] == "c2VjcmV0"


class TestWait:
    def store(self, hub, cluster, status, generation=1):
        obj = work.desired_work(OCM, "mw-01", cluster, [CM], {})
        obj["metadata"]["generation"] = generation
        obj["status"] = status
        return hub.add(MANIFEST_WORK, obj)

    def test_all_done_in_one_list_request(self, hub):
        for cluster in ("c1", "c2"):
            self.store(hub, cluster, {"conditions": [condition("Applied", generation=1)]})
        self.store(hub, "c3", {})  # not targeted
        latest = work.wait_for_works(hub, OCM, "mw-01", ["c1", "c2"], timeout=0, interval=0)
        assert sorted(latest) == ["c1", "c2"] and latest["c1"]["metadata"]["namespace"] == "c1"
        assert hub.calls == [("GET", MANIFEST_WORK.path(), {"labelSelector": None, "fieldSelector": "metadata.name=mw-01"})]

    def test_timeout_names_pending_clusters(self, hub):
        self.store(hub, "c1", {"conditions": [condition("Applied", generation=1)]})
        self.store(hub, "c2", {"conditions": [condition("Applied", "False", "AppliedManifestWorkFailed", "Failed to apply manifest work", 1)]})
        latest = {}
        with pytest.raises(WaitTimeout) as caught:
            work.wait_for_works(hub, OCM, "mw-01", ["c1", "c2", "c3"], timeout=0, interval=0, latest=latest)
        assert caught.value.msg == (
            "timed out after 0s waiting for ManifestWork mw-01 to have Applied=True on 3 cluster(s); last seen: 2 of 3 clusters pending: "
            "c2 (Applied=False AppliedManifestWorkFailed: Failed to apply manifest work); c3 (the work does not exist)")
        assert latest["c3"] is None and latest["c1"]["metadata"]["namespace"] == "c1"

    def test_long_pending_lists_are_cut(self, hub):
        clusters = ["c%02d" % i for i in range(15)]
        with pytest.raises(WaitTimeout, match="15 of 15 clusters pending: c00 .*; c09 \\(the work does not exist\\); and 5 more$"):
            work.wait_for_works(hub, OCM, "mw-01", clusters, timeout=0, interval=0)

    def test_wait_until_deleted(self, hub):
        self.store(hub, "c1", {})
        hub.objects[MANIFEST_WORK.path("c1", "mw-01")]["metadata"]["finalizers"] = ["agent/cleanup"]
        self.store(hub, "other", {})
        with pytest.raises(WaitTimeout, match="to be deleted from 2 cluster.s.; last seen: 1 still present: c1 .finalizers: agent/cleanup.$"):
            work.wait_until_deleted(hub, OCM, "mw-01", ["c1", "c2"], timeout=0, interval=0)
        del hub.objects[MANIFEST_WORK.path("c1", "mw-01")]
        work.wait_until_deleted(hub, OCM, "mw-01", ["c1", "c2"], timeout=0, interval=0)


class TestFanOutAndChecks:
    def test_check_clusters_reports_every_problem(self, hub):
        register(hub, "ocm", "ok")
        register(hub, "ocm", "pending", accepted=False)
        register(hub, "ocm", "nons", namespace=False)
        with pytest.raises(FleetError) as caught:
            work.check_clusters(hub, engines.get("ocm"), ["ok", "pending", "lost", "nons"])
        assert caught.value.msg == (
            "cluster 'hub' (https://fake): "
            "cannot deliver ManifestWork to every cluster: cluster 'pending' is not accepted: ManagedCluster pending has "
            "spec.hubAcceptsClient false; accept it first (clusteradm accept, or approve its CSR and set hubAcceptsClient); "
            "cluster 'lost' is not registered on the hub (no ManagedCluster named lost); cluster 'nons' has no namespace nons "
            "on the hub yet (the hub controllers create it for a registered and accepted cluster)")
        assert caught.value.details == {"clusters_failed": ["lost", "nons", "pending"]}
        work.check_clusters(hub, engines.get("ocm"), ["ok"])

    def test_karmada_clusters_need_their_execution_namespace(self, hub):
        register(hub, "karmada", "m1")
        register(hub, "karmada", "m2", namespace=False)
        work.check_clusters(hub, engines.get("karmada"), ["m1"])
        with pytest.raises(FleetError, match="cluster 'm2' has no namespace karmada-es-m2 on the hub yet"):
            work.check_clusters(hub, engines.get("karmada"), ["m1", "m2"])
        hub.objects[NAMESPACE.path(name="karmada-es-m1")]["metadata"]["deletionTimestamp"] = "2026-11-22T03:21:02Z"
        with pytest.raises(FleetError, match="cluster 'm1' has its namespace karmada-es-m1 on the hub being deleted"):
            work.check_clusters(hub, engines.get("karmada"), ["m1"])


class TestDeliverAndRemove:
    def test_deliver_is_idempotent_and_reports_per_cluster(self, hub):
        register(hub, "ocm", "c1", "c2")
        first = work.deliver(hub, "ocm", "mw-01", ["c1", "c2", "c1"], [(POD, None)], {})
        assert first["changed"] is True and sorted(first["clusters"]) == ["c1", "c2"]
        assert {s["action"] for s in first["clusters"].values()} == {"created"}
        assert [d["before_header"] for d in first["diff"]] == ["ManifestWork/c1/mw-01 (cluster c1)", "ManifestWork/c2/mw-01 (cluster c2)"]
        second = work.deliver(hub, "ocm", "mw-01", ["c1", "c2"], [(POD, None)], {})
        assert second["changed"] is False and second["diff"] == []

    def test_nothing_is_written_when_a_check_fails(self, hub):
        register(hub, "ocm", "c1")
        with pytest.raises(FleetError, match="cluster 'c2' is not registered"):
            work.deliver(hub, "ocm", "mw-01", ["c1", "c2"], [(POD, None)], {})
        with pytest.raises(FleetError, match="manifests\\[0\\]: missing kind"):
            work.deliver(hub, "ocm", "mw-01", ["c1"], [({"apiVersion": "v1", "metadata": {"name": "x"}}, None)], {})
        with pytest.raises(FleetError, match="name 'MW_01' is not a valid Kubernetes object name"):
            work.deliver(hub, "ocm", "MW_01", ["c1"], [(POD, None)], {})
        with pytest.raises(FleetError, match="clusters is empty"):
            work.deliver(hub, "ocm", "mw-01", [], [(POD, None)], {})
        assert not [c for c in hub.calls if c[0] != "GET"]

    def test_partial_write_failure_reports_both_sides(self, hub, monkeypatch):
        register(hub, "ocm", "c1", "c2")
        original = work.ensure_work

        def flaky(cluster, kind, desired, check_mode=False):
            if desired["metadata"]["namespace"] == "c2":
                raise FleetError("cluster 'hub': POST failed: 403 forbidden")
            return original(cluster, kind, desired, check_mode)
        monkeypatch.setattr(work, "ensure_work", flaky)
        with pytest.raises(FleetError) as caught:
            work.deliver(hub, "ocm", "mw-01", ["c1", "c2"], [(POD, None)], {})
        assert caught.value.msg == "writing ManifestWork mw-01 failed on 1 of 2 clusters: cluster 'c2': cluster 'hub': POST failed: 403 forbidden"
        assert caught.value.details["changed"] is True and caught.value.details["clusters_failed"] == ["c2"]
        assert caught.value.details["clusters"]["c1"]["action"] == "created"

    def test_wait_timeout_keeps_what_was_written(self, hub):
        register(hub, "ocm", "c1")
        with pytest.raises(FleetError) as caught:
            work.deliver(hub, "ocm", "mw-01", ["c1"], [(POD, None)], {}, wait=Wait(timeout=0, interval=0))
        assert "timed out after 0s waiting for ManifestWork mw-01 to have Applied=True on 1 cluster(s)" in caught.value.msg
        assert caught.value.details["changed"] is True
        assert caught.value.details["clusters"]["c1"]["action"] == "created"

    def test_check_mode_skips_the_wait(self, hub):
        register(hub, "ocm", "c1")
        planned = work.deliver(hub, "ocm", "mw-01", ["c1"], [(POD, None)], {}, check_mode=True, wait=Wait(timeout=0))
        assert planned["changed"] is True and hub.objects.get(MANIFEST_WORK.path("c1", "mw-01")) is None

    def test_remove(self, hub):
        register(hub, "karmada", "m1", "m2", "m3")
        work.deliver(hub, "karmada", "w", ["m1", "m2"], [(CM, None)], {})
        deleting = hub.objects[WORK.path("karmada-es-m2", "w")]["metadata"]
        deleting["deletionTimestamp"] = "2026-11-22T03:21:02Z"
        planned = work.remove(hub, "karmada", "w", ["m1", "m2", "m3"], check_mode=True)
        assert planned["changed"] is True and hub.objects.get(WORK.path("karmada-es-m1", "w"))
        removed = work.remove(hub, "karmada", "w", ["m1", "m2", "m3"])
        actions = dict((c, s["action"]) for c, s in removed["clusters"].items())
        assert actions == {"m1": "deleted", "m2": "unchanged", "m3": "absent"}
        assert removed["changed"] is True and hub.objects.get(WORK.path("karmada-es-m1", "w")) is None
        assert removed["clusters"]["m1"]["object"] == {} and removed["clusters"]["m2"]["object"]["metadata"]["name"] == "w"
        assert [d["before_header"] for d in removed["diff"]] == ["Work/karmada-es-m1/w (cluster m1)"]
        with pytest.raises(FleetError, match="to be deleted from 3 cluster.s.; last seen: 1 still present: m2"):
            work.remove(hub, "karmada", "w", ["m1", "m2", "m3"], wait=Wait(timeout=0, interval=0))
