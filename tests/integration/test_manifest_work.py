"""manifest_work against the lab: real hub and member API servers, the simulated work agents of tests/lab.

Setup, playing the engines' registration side: the OCM ManagedClusters ``mwo-1``/``mwo-2`` (accepted, with
the conditions the hub controller and the registration agent write) and their hub namespaces, or the Karmada
Clusters ``mwk-1``/``mwk-2`` (Ready) and ``karmada-es-mwk-*``. Each pair maps to the lab members member1 and
member2, where the simulated work agent (sim_work_agent.py) applies what the hub says.
"""

import copy

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER, WORK
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER, MANIFEST_WORK
from runner import run_module, run_playbook
from sim_work_agent import WorkAgent

import lab as fleet_lab

MEMBERS = ("member1", "member2")
STAMP = "2026-11-22T03:25:40Z"
SETUP = {
    "ocm": {"clusters": ("mwo-1", "mwo-2"), "kind": MANIFEST_WORK, "member_kind": MANAGED_CLUSTER,
            "namespace": "%s", "extra": {"mwo-new": {"spec": {"hubAcceptsClient": False}}}},
    "karmada": {"clusters": ("mwk-1", "mwk-2"), "kind": WORK, "member_kind": CLUSTER,
                "namespace": "karmada-es-%s", "extra": {"mwk-nons": {"spec": {"syncMode": "Push"}}}},
}
READY = {
    "ocm": [("HubAcceptedManagedCluster", "HubClusterAdminAccepted", "Accepted by hub cluster admin"),
            ("ManagedClusterJoined", "ManagedClusterJoined", "Managed cluster joined"),
            ("ManagedClusterConditionAvailable", "ManagedClusterAvailable", "Managed cluster is available")],
    "karmada": [("Ready", "ClusterReady", "cluster is healthy and ready to accept workloads")],
}
HELLO = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hello", "namespace": "default"},
         "spec": {"containers": [{"name": "hello", "image": "busybox",
                                  "command": ["sh", "-c", 'echo "Hello, Kubernetes!" && sleep 3600']}],
                  "restartPolicy": "OnFailure"}}


def config_map(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": data or {"greeting": "Hello, Kubernetes!"}}


def deployment(name):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}


class Fleet:
    """The hub, the clusters of one engine and the lab members they map to."""

    def __init__(self, lab, engine):
        self.lab = lab
        self.engine = engine
        self.setup = SETUP[engine]
        self.clusters = list(self.setup["clusters"])
        self.kind = self.setup["kind"]
        info = lab.clusters["hub"]
        self.auth = {"kubeconfig": info["kubeconfig"], "context": "hub"}
        self.hub = client.get_cluster(self.auth, "hub")
        self.members = dict(zip(self.clusters, (lab.api(m) for m in MEMBERS)))

    def namespace(self, cluster):
        return self.setup["namespace"] % cluster

    def run(self, name, check_mode=False, diff=False, **args):
        args = dict(self.auth, engine=self.engine, name=name, **args)
        args.setdefault("clusters", self.clusters)
        args.setdefault("wait_sleep", 1)  # the simulated agents sync every half second
        return run_module("manifest_work", args, check_mode=check_mode, diff=diff)

    def work(self, cluster, name):
        return resources.get(self.hub, self.kind, name, self.namespace(cluster))

    def member_object(self, cluster, path):
        try:
            return self.members[cluster].get(path)
        except fleet_lab.ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def remove(self, name):
        result = self.run(name, state="absent", wait=True, wait_timeout=30)
        assert result["rc"] == 0, result.get("msg")


def ok(result):
    assert result["rc"] == 0, result.get("msg")
    assert "exception" not in result
    return result


def pod_path(name):
    return "/api/v1/namespaces/default/pods/" + name


def cm_path(name):
    return "/api/v1/namespaces/default/configmaps/" + name


def wait_for(check, what, timeout=20):
    """Until ``check()`` is true (what the agents do on the members takes a pass or two)."""
    resources.wait_until(lambda: (bool(check()), "not yet"), timeout, what, interval=0.3)


@pytest.fixture(scope="module", params=["ocm", "karmada"])
def fleet(lab, request):
    """Registered clusters of one engine with their hub namespaces, and a running simulated agent."""
    engine = request.param
    setup = Fleet(lab, engine)
    hub = setup.hub
    for name in setup.clusters:
        resources.ensure(hub, setup.setup["member_kind"], {"metadata": {"name": name},
                                                           "spec": {"hubAcceptsClient": True} if engine == "ocm" else {"syncMode": "Push"}})
        hub.request("PATCH", setup.setup["member_kind"].path(name=name, subresource="status"), content_type=resources.MERGE_PATCH,
                    body={"status": {"conditions": [{"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": STAMP}
                                                    for t, r, m in READY[engine]]}})
        left = resources.get(hub, resources.NAMESPACE, setup.namespace(name))
        if left and left["metadata"].get("deletionTimestamp"):  # still terminating after a previous run
            resources.wait_until_gone(hub, resources.NAMESPACE, setup.namespace(name))
        resources.ensure(hub, resources.NAMESPACE, {"metadata": {"name": setup.namespace(name)}})
    for name, body in setup.setup["extra"].items():  # registered, but not accepted (OCM) / without namespace
        resources.ensure(hub, setup.setup["member_kind"], dict(body, metadata={"name": name}))
    agent = WorkAgent(lab.clusters["hub"], engine, dict(zip(setup.clusters, (lab.clusters[m] for m in MEMBERS))),
                      interval=0.3).start()
    yield setup
    try:
        leftovers = [w for w in resources.list_objects(hub, setup.kind)
                     if w["metadata"]["namespace"] in [setup.namespace(c) for c in setup.clusters]]
        for work in leftovers:
            resources.delete(hub, setup.kind, work["metadata"]["name"], work["metadata"]["namespace"], wait=resources.Wait(timeout=30))
        assert agent.error is None, agent.error
    finally:
        agent.stop()
        for name in setup.clusters:
            resources.delete(hub, resources.NAMESPACE, setup.namespace(name))
        for name in list(setup.clusters) + list(setup.setup["extra"]):
            resources.delete(hub, setup.setup["member_kind"], name)


@pytest.fixture
def cleanup(fleet):
    """Member objects (paths) to delete after the test, on every member."""
    paths = []
    yield paths
    for api in fleet.members.values():
        for path in paths:
            try:
                api.delete(path)
            except fleet_lab.ApiError as exc:
                assert exc.status == 404, exc


def test_seed_pod_reaches_both_members_changes_propagate_and_foreground_deletes(fleet, cleanup):
    cleanup.append(pod_path("hello"))
    first = ok(fleet.run("mw-01", manifests=[HELLO], wait=True, wait_timeout=30, diff=True,
                         wait_condition={"type": "Applied", "status": "True"}))
    assert first["changed"] is True
    assert sorted(first["clusters"]) == sorted(fleet.clusters)
    for cluster, summary in first["clusters"].items():
        assert (summary["action"], summary["applied"], summary["namespace"]) == ("created", True, fleet.namespace(cluster))
        applied = [c for c in summary["conditions"] if c["type"] == "Applied"]
        assert applied and applied[0]["status"] == "True"
        assert applied[0]["reason"] == ("AppliedManifestWorkComplete" if fleet.engine == "ocm" else "AppliedSuccessful")
        assert [(m["kind"], m["namespace"], m["name"]) for m in summary["manifests"]] == [("Pod", "default", "hello")]
        assert summary["object"]["spec"]["workload"]["manifests"][0]["spec"] == HELLO["spec"]
        pod = fleet.member_object(cluster, pod_path("hello"))
        assert pod is not None and pod["spec"]["containers"][0]["image"] == "busybox"
    assert len(first["diff"]) == 2 and first["diff"][0]["before"] == {}
    if fleet.engine == "ocm":
        manifest = first["clusters"]["mwo-1"]["manifests"][0]
        assert (manifest["applied"], manifest["available"], manifest["resource"]) == (True, True, "pods")
    else:
        work = fleet.work("mwk-1", "mw-01")
        assert work["metadata"]["finalizers"] == ["karmada.io/execution-controller"]
        marked = work["spec"]["workload"]["manifests"][0]["metadata"]
        assert marked["annotations"]["work.karmada.io/namespace"] == "karmada-es-mwk-1"
        assert first["clusters"]["mwk-1"]["manifests"][0]["health"] == "Unhealthy"  # no kubelet: the Pod stays Pending

    again = ok(fleet.run("mw-01", manifests=[HELLO], wait=True, wait_timeout=30))
    assert again["changed"] is False
    assert {s["action"] for s in again["clusters"].values()} == {"unchanged"}

    labelled = copy.deepcopy(HELLO)
    labelled["metadata"]["labels"] = {"tier": "demo"}
    generations = dict((c, fleet.work(c, "mw-01")["metadata"]["generation"]) for c in fleet.clusters)
    planned = ok(fleet.run("mw-01", manifests=[labelled], check_mode=True, diff=True))
    assert planned["changed"] is True and {s["action"] for s in planned["clusters"].values()} == {"updated"}
    assert planned["diff"][0]["after"]["spec"]["workload"]["manifests"][0]["metadata"]["labels"]["tier"] == "demo"
    assert dict((c, fleet.work(c, "mw-01")["metadata"]["generation"]) for c in fleet.clusters) == generations

    changed = ok(fleet.run("mw-01", manifests=[labelled], wait=True, wait_timeout=30))
    assert changed["changed"] is True
    for cluster in fleet.clusters:
        wait_for(lambda c=cluster: (fleet.member_object(c, pod_path("hello"))["metadata"].get("labels") or {}).get("tier") == "demo",
                 "the new label on %s" % cluster)
    assert ok(fleet.run("mw-01", manifests=[labelled]))["changed"] is False

    planned_removal = ok(fleet.run("mw-01", state="absent", check_mode=True))
    assert planned_removal["changed"] is True and all(fleet.work(c, "mw-01") for c in fleet.clusters)
    removed = ok(fleet.run("mw-01", state="absent", wait=True, wait_timeout=30))
    assert removed["changed"] is True and {s["action"] for s in removed["clusters"].values()} == {"deleted"}
    for cluster in fleet.clusters:
        assert fleet.work(cluster, "mw-01") is None
        wait_for(lambda c=cluster: fleet.member_object(c, pod_path("hello")) is None, "the Pod to go from " + cluster)
    assert ok(fleet.run("mw-01", state="absent"))["changed"] is False


def test_orphan_leaves_the_objects_on_the_members(fleet, cleanup):
    cleanup.append(cm_path("mw-orphan"))
    ok(fleet.run("mw-orphan", manifests=[config_map("mw-orphan")], delete_option={"propagation_policy": "Orphan"},
                 wait=True, wait_timeout=30))
    work = fleet.work(fleet.clusters[0], "mw-orphan")
    if fleet.engine == "ocm":
        assert work["spec"]["deleteOption"] == {"propagationPolicy": "Orphan"}
    else:
        assert work["spec"]["preserveResourcesOnDeletion"] is True
    ok(fleet.run("mw-orphan", state="absent", wait=True, wait_timeout=30))
    for cluster in fleet.clusters:
        assert fleet.work(cluster, "mw-orphan") is None
        assert fleet.member_object(cluster, cm_path("mw-orphan"))["data"] == {"greeting": "Hello, Kubernetes!"}


def test_only_works_whose_content_changed_are_written(fleet, cleanup):
    cleanup.append(cm_path("mw-partial"))
    first, second = fleet.clusters
    manifests = [config_map("mw-partial")]
    ok(fleet.run("mw-partial", manifests=manifests, clusters=[first]))
    grown = ok(fleet.run("mw-partial", manifests=manifests, diff=True))
    assert (grown["clusters"][first]["action"], grown["clusters"][second]["action"]) == ("unchanged", "created")
    assert len(grown["diff"]) == 1 and second in grown["diff"][0]["after_header"]

    # Someone edits the work of the second cluster on the hub: only that work is written back. A merge patch, not a
    # read-modify-write: the agent writes the work's status in between, and a PUT of the stale copy would conflict.
    edited = copy.deepcopy(manifests)
    edited[0]["data"] = {"greeting": "edited"}
    fleet.hub.request("PATCH", fleet.kind.path(fleet.namespace(second), "mw-partial"), content_type=resources.MERGE_PATCH,
                      body={"spec": {"workload": {"manifests": edited}}})
    assert fleet.work(second, "mw-partial")["spec"]["workload"]["manifests"][0]["data"] == {"greeting": "edited"}
    repaired = ok(fleet.run("mw-partial", manifests=manifests, diff=True, wait=True, wait_timeout=30))
    assert (repaired["clusters"][first]["action"], repaired["clusters"][second]["action"]) == ("unchanged", "updated")
    assert [d["after_header"] for d in repaired["diff"]] == ["%s/%s/mw-partial (cluster %s)" % (
        fleet.kind.kind, fleet.namespace(second), second)]
    assert fleet.work(second, "mw-partial")["spec"]["workload"]["manifests"][0]["data"] == {"greeting": "Hello, Kubernetes!"}

    # A field dropped from the input is dropped from the work, although the comparison tolerates server defaults.
    removed_key = ok(fleet.run("mw-partial", manifests=[config_map("mw-partial", other="x")]))
    assert removed_key["changed"] is True
    assert fleet.work(first, "mw-partial")["spec"]["workload"]["manifests"][0]["data"] == {"other": "x"}
    fleet.remove("mw-partial")


def test_check_mode_creates_nothing(fleet):
    planned = ok(fleet.run("mw-planned", manifests=[config_map("mw-planned")], check_mode=True, diff=True, wait=True))
    assert planned["changed"] is True and {s["action"] for s in planned["clusters"].values()} == {"created"}
    assert planned["diff"][0]["after"]["spec"]["workload"]["manifests"][0]["metadata"]["name"] == "mw-planned"
    for cluster in fleet.clusters:
        assert fleet.work(cluster, "mw-planned") is None
        assert fleet.member_object(cluster, cm_path("mw-planned")) is None


def test_wait_timeout_names_the_pending_clusters_and_why(fleet, cleanup):
    cleanup.append(cm_path("mw-widget"))
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}}
    failed = fleet.run("mw-widget", manifests=[config_map("mw-widget"), widget], wait=True, wait_timeout=3)
    try:
        assert failed["rc"] == 1 and failed["changed"] is True
        kind = fleet.kind.kind
        assert ("timed out after 3s waiting for %s mw-widget to have Applied=True on 2 cluster(s)" % kind) in failed["msg"]
        assert "2 of 2 clusters pending" in failed["msg"]
        for cluster in fleet.clusters:
            assert cluster + " (Applied=False" in failed["msg"]
            assert failed["clusters"][cluster]["action"] == "created"
        assert 'no matches for kind "Widget" in version "example.com/v1"' in failed["msg"]
        if fleet.engine == "ocm":
            assert "manifests[1] Widget default/w: Failed to apply manifest" in failed["msg"]
        else:
            assert "Failed to apply all manifests (1/2)" in failed["msg"]
    finally:
        fleet.remove("mw-widget")
    for cluster in fleet.clusters:
        if fleet.engine == "ocm":  # Foreground: the agent deletes what it applied
            wait_for(lambda c=cluster: fleet.member_object(c, cm_path("mw-widget")) is None, "the ConfigMap to go")
        else:  # Karmada's execution controller deletes the objects of applied Works only
            assert fleet.member_object(cluster, cm_path("mw-widget")) is not None


def test_deployment_status_comes_back(fleet, cleanup):
    cleanup.append("/apis/apps/v1/namespaces/default/deployments/mw-web")
    args = {"manifests": [deployment("mw-web")]}
    if fleet.engine == "ocm":
        args["manifest_configs"] = [{"resource_identifier": {"group": "apps", "resource": "deployments",
                                                             "namespace": "default", "name": "mw-web"},
                                     "feedback_rules": [{"type": "WellKnownStatus"}]}]
    ok(fleet.run("mw-web", wait=True, wait_timeout=30, **args))
    # No deployment controller runs in the lab: write the status it would write, on each member.
    for cluster, api in fleet.members.items():
        path = "/apis/apps/v1/namespaces/default/deployments/mw-web"
        generation = api.get(path)["metadata"]["generation"]
        api.patch(path + "/status", {"status": {"observedGeneration": generation, "replicas": 1, "updatedReplicas": 1,
                                                "readyReplicas": 1, "availableReplicas": 1}})
    # Available may already hold from the first run; the agent reports the new status on its next sync.
    runs = []

    def status_reported():
        runs.append(ok(fleet.run("mw-web", wait=True, wait_timeout=30, wait_condition="Available", **args)))
        manifests = [summary["manifests"][0] for summary in runs[-1]["clusters"].values()]
        reported = [m.get("feedback") if fleet.engine == "ocm" else (m.get("status") or {}).get("readyReplicas") for m in manifests]
        return all(reported), reported
    resources.wait_until(status_reported, 30, "the members' agents to report the Deployment status")
    available = runs[-1]
    assert available["changed"] is False
    for summary in available["clusters"].values():
        assert summary["available"] is True
        manifest = summary["manifests"][0]
        if fleet.engine == "ocm":
            assert manifest["feedback"] == {"ReadyReplicas": 1, "Replicas": 1, "AvailableReplicas": 1}
            assert [c["reason"] for c in manifest["conditions"]] == ["AppliedManifestComplete", "ResourceAvailable",
                                                                     "StatusFeedbackSynced"]
        else:
            assert manifest["health"] == "Healthy" and manifest["status"]["readyReplicas"] == 1
    fleet.remove("mw-web")


class TestBadInput:
    """Each is refused before anything is written, with a message naming the manifest or the cluster."""

    def fails(self, fleet, name, *fragments, **args):
        result = fleet.run(name, **args)
        assert result["rc"] == 1 and result["failed"] is True, result
        assert "Traceback" not in result["msg"]
        for fragment in fragments:
            assert fragment in result["msg"], result["msg"]
        for cluster in fleet.clusters:
            assert fleet.work(cluster, name) is None
        return result

    def test_missing_kind_names_the_index(self, fleet):
        broken = {"apiVersion": "v1", "metadata": {"name": "x"}}
        self.fails(fleet, "mw-broken", "invalid manifests: manifests[1]: missing kind",
                   manifests=[config_map("ok"), broken])

    @pytest.mark.parametrize("value, problem", [
        (1, "apiVersion must be a string, not integer 1"),
        (["v1"], 'apiVersion must be a string, not list ["v1"]'),
    ])
    def test_a_non_string_api_version_is_not_called_missing(self, fleet, value, problem):
        """Regression: a non-string apiVersion was reported as "missing apiVersion"."""
        broken = dict(config_map("x"), apiVersion=value)
        result = self.fails(fleet, "mw-broken", "invalid manifests: manifests[1]: " + problem, manifests=[config_map("ok"), broken])
        assert "missing" not in result["msg"]

    @pytest.mark.parametrize("args, message", [
        (dict(wait_timeout=-1), "wait_timeout must not be negative, got -1"),
        (dict(wait_sleep=0), "wait_sleep must be at least 1 second, got 0"),
        (dict(wait_condition={"type": "Ready"}), "invalid wait_condition: type must be one of Applied, Available, got 'Ready'"),
        (dict(wait_condition={"type": "Applied", "status": "Yes"}), "status must be one of True, False, Unknown, got 'Yes'"),
        (dict(wait_condition={"type": "Applied", "state": "x"}), "unknown key state (known: type, status, reason)"),
        (dict(clusters=["MWO-1"]), "invalid cluster name 'MWO-1'"),
    ])
    def test_wait_options_and_cluster_names(self, fleet, args, message):
        self.fails(fleet, "mw-opts", message, manifests=[config_map("x")], wait=True, **args)

    def test_unknown_cluster(self, fleet):
        result = self.fails(fleet, "mw-lost", "cluster 'nowhere' is not registered on the hub (no %s named nowhere)"
                            % fleet.setup["member_kind"].kind,
                            manifests=[config_map("x")], clusters=[fleet.clusters[0], "nowhere"])
        assert result["clusters_failed"] == ["nowhere"]

    def test_cluster_not_ready_for_works(self, fleet):
        (extra,) = fleet.setup["extra"]
        expected = ("cluster 'mwo-new' is not accepted: ManagedCluster mwo-new has spec.hubAcceptsClient false"
                    if fleet.engine == "ocm" else "cluster 'mwk-nons' has no namespace karmada-es-mwk-nons on the hub")
        self.fails(fleet, "mw-early", expected, manifests=[config_map("x")], clusters=[extra])

    def test_engine_specific_options(self, fleet):
        if fleet.engine == "karmada":
            self.fails(fleet, "mw-opts", "SelectivelyOrphan is OCM only", manifests=[config_map("x")],
                       delete_option={"propagation_policy": "SelectivelyOrphan"})
            self.fails(fleet, "mw-opts", "Karmada writes no Available condition on a Work", manifests=[config_map("x")],
                       wait=True, wait_condition={"type": "Available", "status": "False"})
        else:
            self.fails(fleet, "mw-opts", "manifest_configs[0]: feedback rule type JSONPaths needs json_paths",
                       manifests=[config_map("x")],
                       manifest_configs=[{"resource_identifier": {"resource": "configmaps", "name": "x"},
                                          "feedback_rules": [{"type": "JSONPaths"}]}])


@pytest.mark.parametrize("fleet", ["ocm"], indirect=True)  # update strategies, selective orphaning: OCM only
def test_ocm_update_strategies_and_selective_orphaning(fleet, cleanup):
    names = ("mw-create-only", "mw-ssa", "mw-read-only", "mw-kept")
    cleanup.extend(cm_path(n) for n in names)
    for api in fleet.members.values():  # ReadOnly only reads what exists
        api.post("/api/v1/namespaces/default/configmaps", config_map("mw-read-only", owner="member"))

    def configs(strategy_of):
        return [{"resource_identifier": {"resource": "configmaps", "namespace": "default", "name": n},
                 "update_strategy": strategy_of[n], "feedback_rules": [{"type": "JSONPaths",
                                                                       "json_paths": [{"name": "phase", "path": ".phase"}]}]}
                for n in strategy_of]

    strategies = {"mw-create-only": {"type": "CreateOnly"},
                  "mw-ssa": {"type": "ServerSideApply", "server_side_apply": {"force": True, "field_manager": "work-agent-test"}},
                  "mw-read-only": {"type": "ReadOnly"}}
    delete_option = {"propagation_policy": "SelectivelyOrphan",
                     "orphaning_rules": [{"resource": "configmaps", "namespace": "default", "name": "mw-kept"}]}
    manifests = [config_map(n) for n in names]
    ok(fleet.run("mw-strategies", manifests=manifests, manifest_configs=configs(strategies), delete_option=delete_option,
                 wait=True, wait_timeout=30))
    work = fleet.work("mwo-1", "mw-strategies")
    assert work["spec"]["deleteOption"]["selectivelyOrphans"]["orphaningRules"] == [
        {"resource": "configmaps", "namespace": "default", "name": "mw-kept"}]
    assert work["spec"]["manifestConfigs"][1]["updateStrategy"] == {
        "type": "ServerSideApply", "serverSideApply": {"force": True, "fieldManager": "work-agent-test"}}
    for cluster in fleet.clusters:
        ssa = fleet.member_object(cluster, cm_path("mw-ssa"))
        assert "work-agent-test" in [f["manager"] for f in ssa["metadata"]["managedFields"]]
        assert fleet.member_object(cluster, cm_path("mw-read-only"))["data"] == {"owner": "member"}

    changed = [config_map(n, greeting="v2") for n in names]
    ok(fleet.run("mw-strategies", manifests=changed, manifest_configs=configs(strategies), delete_option=delete_option))
    for cluster in fleet.clusters:
        wait_for(lambda c=cluster: fleet.member_object(c, cm_path("mw-ssa"))["data"] == {"greeting": "v2"}, "the applied update")
        assert fleet.member_object(cluster, cm_path("mw-create-only"))["data"] == {"greeting": "Hello, Kubernetes!"}
        assert fleet.member_object(cluster, cm_path("mw-read-only"))["data"] == {"owner": "member"}

    # A manifest dropped from the work is deleted from the members, as its owner is gone.
    del strategies["mw-create-only"]
    ok(fleet.run("mw-strategies", manifests=changed[1:], manifest_configs=configs(strategies), delete_option=delete_option,
                 wait=True, wait_timeout=30))
    for cluster in fleet.clusters:
        wait_for(lambda c=cluster: fleet.member_object(c, cm_path("mw-create-only")) is None, "the dropped manifest to go")
        assert fleet.member_object(cluster, cm_path("mw-ssa")) is not None

    fleet.remove("mw-strategies")
    for cluster in fleet.clusters:
        assert fleet.member_object(cluster, cm_path("mw-ssa")) is None
        assert fleet.member_object(cluster, cm_path("mw-read-only")) is not None  # never owned by the work
        assert fleet.member_object(cluster, cm_path("mw-kept")) is not None       # selectively orphaned


@pytest.mark.parametrize("fleet", ["ocm"], indirect=True)  # reading sources does not depend on the engine
def test_sources_and_secrets(fleet, tmp_path):
    folder = tmp_path / "manifests"
    folder.mkdir()
    (folder / "b.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, namespace: default}\n"
                                   "---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: three, namespace: default}\n")
    (folder / "a.json").write_text('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}}')
    (folder / "notes.txt").write_text("not a manifest")
    single = tmp_path / "secret.yml"
    single.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: default}\n"
                      "stringData: {password: s3cr3t-value}\n")
    inline = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "inline", "namespace": "default"},
              "data": {"token": "aW5saW5lLXRva2VuLXZhbHVl"}}
    planned = ok(fleet.run("mw-sources", src=[str(folder), str(single)], manifests=[config_map("zero"), inline],
                           check_mode=True, diff=True, clusters=["mwo-1"]))
    manifests = planned["clusters"]["mwo-1"]["object"]["spec"]["workload"]["manifests"]
    assert [m["metadata"]["name"] for m in manifests] == ["zero", "inline", "one", "two", "three", "creds"]
    assert manifests[5]["stringData"] == {"password": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}
    assert manifests[1]["data"] == {"token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}
    assert "s3cr3t-value" not in str(planned) and "aW5saW5lLXRva2VuLXZhbHVl" not in str(planned)

    bad = fleet.run("mw-sources", src=[str(tmp_path / "absent.yaml")], check_mode=True)
    assert bad["rc"] == 1 and "src %s does not exist" % (tmp_path / "absent.yaml") in bad["msg"]
    (folder / "c.yaml").write_text("apiVersion: v1\nmetadata: {name: nokind}\n")
    bad = fleet.run("mw-sources", src=[str(folder)], check_mode=True)
    assert bad["rc"] == 1 and "manifests[3] (%s, document 1): missing kind" % (folder / "c.yaml") in bad["msg"]


@pytest.mark.parametrize("fleet", ["karmada"], indirect=True)  # one engine is enough for the action group
def test_playbook_with_module_defaults(fleet, cleanup):
    cleanup.append(cm_path("mw-play"))
    info = fleet.lab.clusters["hub"]
    plays = [{"hosts": "localhost", "gather_facts": False, "connection": "local",
              "module_defaults": {"group/multicluster.fleet.fleet": {"kubeconfig": info["kubeconfig"], "context": "hub"}},
              "tasks": [
                  {"multicluster.fleet.manifest_work": {"engine": "karmada", "name": "mw-play", "clusters": fleet.clusters,
                                                        "manifests": [config_map("mw-play")], "wait": True},
                   "register": "delivered"},
                  {"ansible.builtin.assert": {"that": [
                      "delivered is changed",
                      "delivered.clusters | dict2items | selectattr('value.applied') | list | length == 2"]}},
                  {"multicluster.fleet.manifest_work": {"engine": "karmada", "name": "mw-play", "clusters": fleet.clusters,
                                                        "state": "absent", "wait": True}},
              ]}]
    done = run_playbook(plays)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok=3" in done.stdout and "changed=2" in done.stdout
