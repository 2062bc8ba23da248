"""k8s_objects against the lab: bundles of known kinds applied, awaited and removed on real API servers."""

import copy
import os

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import CLUSTER_MANAGER
from runner import ROOT, run_module

import lab as fleet_lab  # tests/lab, on sys.path through conftest.py
from sim_operators import DeploymentSimulation

NS = "k8s-objects-test"
BUNDLE = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op"}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "stringData": {"token": "s3cr3t-t0ken-value"}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "k8s-objects-test"},
     "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "op", "labels": {"app": "op"}},
     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "op"}},
              "template": {"metadata": {"labels": {"app": "op"}},
                           "spec": {"serviceAccountName": "op",
                                    "containers": [{"name": "op", "image": "registry.example/op:1",
                                                    "resources": {"requests": {"cpu": "1000m"}}}]}}}},
]
REFS = ["Namespace/k8s-objects-test", "ServiceAccount/k8s-objects-test/op", "Secret/k8s-objects-test/creds",
        "ClusterRole/k8s-objects-test", "Deployment/k8s-objects-test/op"]


@pytest.fixture(scope="module")
def member(lab):
    return {"kubeconfig": lab.clusters["member1"]["kubeconfig"], "context": "member1"}


@pytest.fixture(scope="class")
def rollout(lab):
    """The simulated deployment controller, for this test's namespace only."""
    sim = DeploymentSimulation(fleet_lab.ApiClient.for_cluster(lab.clusters["member1"]), namespaces=[NS]).start()
    yield sim
    sim.stop()


def apply(auth, objects=None, check_mode=False, **args):
    return run_module("k8s_objects", dict(auth, objects=copy.deepcopy(objects if objects is not None else BUNDLE),
                                          namespace=NS, **args), check_mode=check_mode, diff=True)


def ok(result):
    assert result["rc"] == 0, result.get("msg")
    return result


class TestBundle:
    """One bundle through its life: check mode, create, wait, idempotence, update, removal."""

    def test_check_mode_writes_nothing(self, member):
        result = ok(apply(member, check_mode=True, wait=True))
        assert result["objects"] == [ref + ": created" for ref in REFS]
        assert result["changed"] is True
        assert resources.get(client.get_cluster(member, "member1"), resources.NAMESPACE, NS) is None

    def test_created_and_waited_for(self, member, rollout):
        result = ok(apply(member, wait=True, wait_timeout=60, wait_sleep=1))
        assert result["objects"] == [ref + ": created" for ref in REFS]
        assert [d["after_header"] for d in result["diff"]] == REFS
        assert "s3cr3t-t0ken-value" not in str(result)  # masked in the diff and the invocation
        # the objects, as kubernetes.core.k8s returns several: result.results, the Deployment as last read while waiting
        results = result["result"]["results"]
        assert [(r["changed"], r["method"], r["result"]["kind"]) for r in results] == [
            (True, "create", ref.split("/", maxsplit=1)[0]) for ref in REFS]
        assert results[2]["result"]["data"] == {"token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}  # stored from stringData
        assert results[4]["result"]["status"]["availableReplicas"] == 2
        assert "managedFields" not in results[4]["result"]["metadata"]
        deployment = resources.get(client.get_cluster(member, "member1"), resources.DEPLOYMENT, "op", NS)
        assert resources.condition_is(deployment, "Available") and deployment["status"]["availableReplicas"] == 2

    def test_second_run_changes_nothing(self, member, rollout):
        result = ok(apply(member, wait=True, wait_timeout=60, wait_sleep=1))
        assert result["changed"] is False and result["diff"] == []
        assert result["objects"] == [ref + ": unchanged" for ref in REFS]

    def test_a_changed_field_updates_one_object(self, member, rollout):
        changed = copy.deepcopy(BUNDLE)
        changed[4]["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/op:2"
        result = ok(apply(member, changed, wait=True, wait_timeout=60, wait_sleep=1))
        assert [line for line in result["objects"] if not line.endswith("unchanged")] == ["Deployment/k8s-objects-test/op: updated"]
        diff = result["diff"][0]
        assert diff["before"]["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/op:1"
        assert diff["after"]["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/op:2"

    def test_removed_in_reverse_order(self, member):
        result = ok(apply(member, state="absent", wait=True, wait_sleep=1))
        assert result["objects"] == [ref + ": deleted" for ref in reversed(REFS)]
        assert result["result"]["results"] == [{"changed": True, "method": "delete", "result": {}}] * len(REFS)
        cluster = client.get_cluster(member, "member1")
        assert resources.get(cluster, resources.NAMESPACE, NS) is None
        assert resources.get(cluster, resources.CLUSTER_ROLE, "k8s-objects-test") is None
        again = ok(apply(member, state="absent"))
        assert again["changed"] is False and set(again["objects"]) == {ref + ": absent" for ref in REFS}


def test_src_file_with_crd_and_custom_resource_in_one_call(lab, tmp_path):
    """A CRD created in the same call is Established before its objects follow; removal keeps a CRD
    someone else created (keep_unlabeled) and deletes the one these manifests created."""
    member2 = {"kubeconfig": lab.clusters["member2"]["kubeconfig"], "context": "member2"}
    with open(os.path.join(ROOT, "roles", "hub_init", "files", "clustermanagers.crd.yaml")) as handle:
        crd = yaml.safe_load(handle)
    custom = {"apiVersion": "operator.open-cluster-management.io/v1", "kind": "ClusterManager",
              "metadata": {"name": "k8s-objects-test"}, "spec": {"deployOption": {"mode": "Default"}}}
    src = tmp_path / "bundle.yaml"
    src.write_text(yaml.safe_dump_all([crd, None, custom]))
    cluster = client.get_cluster(member2, "member2")
    assert resources.get(cluster, resources.CRD, crd["metadata"]["name"]) is None, "member2 must start without this CRD"
    try:
        result = ok(run_module("k8s_objects", dict(member2, src=str(src), existing="keep")))
        assert result["objects"] == ["CustomResourceDefinition/clustermanagers.operator.open-cluster-management.io: created",
                                     "ClusterManager/k8s-objects-test: created"]
        stored = resources.get(cluster, CLUSTER_MANAGER, "k8s-objects-test")
        assert stored["spec"]["workConfiguration"] == {"workDriver": "kube"}  # the CRD's server-side default
        removed = ok(run_module("k8s_objects", dict(member2, src=str(src), state="absent", keep_unlabeled=True, wait=True)))
        assert removed["objects"] == ["ClusterManager/k8s-objects-test: deleted",
                                      "CustomResourceDefinition/clustermanagers.operator.open-cluster-management.io: deleted"]
    finally:
        resources.delete(cluster, resources.CRD, crd["metadata"]["name"], wait=resources.Wait())


def test_keep_leaves_an_existing_crd_alone(lab):
    """On the hub the lab installed this CRD: existing=keep does not touch it, removal keeps it."""
    hub = {"kubeconfig": lab.clusters["hub"]["kubeconfig"], "context": "hub"}
    with open(os.path.join(ROOT, "roles", "hub_init", "files", "clustermanagers.crd.yaml")) as handle:
        crd = yaml.safe_load(handle)
    before = resources.get(client.get_cluster(hub, "hub"), resources.CRD, crd["metadata"]["name"])
    kept = ok(run_module("k8s_objects", dict(hub, objects=[crd], existing="keep")))
    assert kept["objects"] == ["CustomResourceDefinition/clustermanagers.operator.open-cluster-management.io: unchanged"]
    spared = ok(run_module("k8s_objects", dict(hub, objects=[crd], state="absent", keep_unlabeled=True)))
    assert spared["changed"] is False
    after = resources.get(client.get_cluster(hub, "hub"), resources.CRD, crd["metadata"]["name"])
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "labels" not in after["metadata"]


def configmap(name, namespace="default"):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": {"a": "1"}}


def test_one_object_is_returned_as_kubernetes_core_k8s_returns_it(member):
    cluster = client.get_cluster(member, "member1")
    try:
        first = ok(run_module("k8s_objects", dict(member, objects=[configmap("k8s-objects-one")])))
        assert first["changed"] is True and first["method"] == "create"
        assert first["result"]["data"] == {"a": "1"} and first["result"]["metadata"]["name"] == "k8s-objects-one"
        again = ok(run_module("k8s_objects", dict(member, objects=[configmap("k8s-objects-one")])))
        assert again["changed"] is False and again["method"] == "update" and again["result"] == first["result"]
    finally:
        resources.delete(cluster, resources.CONFIG_MAP, "k8s-objects-one", "default")


WAITED = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "k8s-objects-wait"},
          "spec": {"syncMode": "Pull"}}


@pytest.fixture(scope="module")
def reported(lab):
    """A Cluster on the hub with Ready=False (ClusterNotReachable) in its status, as Karmada's controller would write it."""
    hub = {"kubeconfig": lab.clusters["hub"]["kubeconfig"], "context": "hub"}
    ok(run_module("k8s_objects", dict(hub, objects=[WAITED])))
    api = fleet_lab.ApiClient.for_cluster(lab.clusters["hub"])
    path = "/apis/cluster.karmada.io/v1alpha1/clusters/" + WAITED["metadata"]["name"]
    obj = api.get(path)
    obj["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "ClusterNotReachable",
                                     "message": "cluster is not reachable", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    api.put(path + "/status", obj)
    yield hub
    resources.delete(client.get_cluster(hub, "hub"), karmada.CLUSTER, WAITED["metadata"]["name"], wait=resources.Wait())


class TestWaitOptions:
    """kubernetes.core's wait options on a Karmada Cluster whose status the test set (no controller runs here)."""

    NAME = WAITED["metadata"]["name"]
    MANIFEST = WAITED

    def run(self, hub, **args):
        return run_module("k8s_objects", dict(hub, objects=[self.MANIFEST], wait=True, **args))

    def test_wait_condition_with_status_and_reason(self, reported):
        result = ok(self.run(reported, wait_condition={"type": "Ready", "status": "False", "reason": "ClusterNotReachable"}))
        assert result["changed"] is False and result["result"]["status"]["conditions"][0]["reason"] == "ClusterNotReachable"

    def test_wait_conditions_is_still_accepted(self, reported):
        ok(self.run(reported, wait_conditions=[{"type": "Ready", "status": "False"}]))

    def test_a_condition_not_met_times_out_with_what_was_seen(self, lab, reported):
        result = self.run(reported, wait_condition={"type": "Ready"}, wait_timeout=0)
        assert result["rc"] == 1 and result["changed"] is False
        assert result["msg"] == ("timed out after 0s waiting for Cluster/%s on cluster 'hub' (%s) to have Ready=True; last "
                                 "seen: Ready=False (ClusterNotReachable: cluster is not reachable)"
                                 % (self.NAME, lab.clusters["hub"]["server"]))
        other_reason = self.run(reported, wait_condition={"type": "Ready", "status": "False", "reason": "Other"}, wait_timeout=0)
        assert other_reason["rc"] == 1 and "to have Ready=False (reason Other)" in other_reason["msg"]

    def test_both_forms_at_once_are_refused(self, reported):
        result = self.run(reported, wait_condition={"type": "Ready"}, wait_conditions=[{"type": "Ready"}])
        assert result["rc"] == 1 and "mutually exclusive: wait_condition|wait_conditions" in result["msg"]

    @pytest.mark.parametrize("args, message", [
        (dict(wait_timeout=-1), "wait_timeout must not be negative, got -1"),
        (dict(wait_sleep=0), "wait_sleep must be at least 1 second, got 0"),
    ])
    def test_negative_durations_are_refused(self, reported, args, message):
        result = self.run(reported, wait_condition={"type": "Ready"}, **args)
        assert result["rc"] == 1 and result["msg"] == message


class TestFailures:
    def test_an_invalid_object_stops_the_run_before_any_write(self, lab, member):
        """Regression: two ConfigMaps, the second named Bad_Name, created the first and failed with changed false."""
        result = run_module("k8s_objects", dict(member, objects=[configmap("k8s-objects-first"), configmap("Bad_Name")]))
        assert result["rc"] == 1 and result["changed"] is False
        assert result["msg"].startswith(
            "nothing was written: 1 of 2 objects cannot be applied (checked with a server-side dry run first): object 2 "
            "(ConfigMap/default/Bad_Name): cluster 'member1' (%s): POST /api/v1/namespaces/default/configmaps failed: 422 "
            % lab.clusters["member1"]["server"]), result["msg"]
        assert "metadata.name: Invalid value: \"Bad_Name\"" in result["msg"]
        assert resources.get(client.get_cluster(member, "member1"), resources.CONFIG_MAP, "k8s-objects-first", "default") is None

    def test_an_invalid_object_in_a_namespace_of_the_same_run(self, member):
        """The namespace does not exist yet, yet the API server validates the name before it looks for the namespace."""
        result = run_module("k8s_objects", dict(member, objects=[BUNDLE[0], configmap("Bad_Name", NS)]))
        assert result["rc"] == 1 and "object 2 (ConfigMap/k8s-objects-test/Bad_Name)" in result["msg"], result["msg"]
        assert resources.get(client.get_cluster(member, "member1"), resources.NAMESPACE, NS) is None

    def test_a_namespace_that_does_not_exist(self, member):
        result = run_module("k8s_objects", dict(member, objects=[configmap("k8s-objects-first"), configmap("x", "nowhere")]))
        assert result["rc"] == 1 and result["changed"] is False
        assert "object 2 (ConfigMap/nowhere/x): namespace nowhere does not exist on cluster 'member1'" in result["msg"]
        assert resources.get(client.get_cluster(member, "member1"), resources.CONFIG_MAP, "k8s-objects-first", "default") is None

    def test_unknown_kind_is_refused_before_any_write(self, member):
        objects = [BUNDLE[0], {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x", "namespace": NS}}]
        result = run_module("k8s_objects", dict(member, objects=objects))
        assert result["rc"] == 1
        assert "Service (apiVersion v1) is not a kind this collection knows; known kinds:" in result["msg"]
        assert resources.get(client.get_cluster(member, "member1"), resources.NAMESPACE, NS) is None

    def test_deployment_that_never_runs_times_out_clearly(self, lab, member):
        """No simulated deployment controller here: the Deployment never becomes Available."""
        objects = [BUNDLE[0], BUNDLE[4]]
        try:
            result = run_module("k8s_objects", dict(member, objects=copy.deepcopy(objects), namespace=NS,
                                                    wait=True, wait_timeout=3, wait_sleep=1))
            assert result["rc"] == 1
            assert result["msg"].startswith("timed out after 3s waiting for Deployment/k8s-objects-test/op on cluster "
                                            "'member1' (%s) to be Available; last seen: the deployment controller has not "
                                            "yet seen" % lab.clusters["member1"]["server"])
            # a failure once writes have begun: changed, and what was written is named
            assert result["changed"] is True
            assert result["msg"].endswith("; applied before the failure: Namespace/k8s-objects-test: created, "
                                          "Deployment/k8s-objects-test/op: created")
            assert result["objects"] == ["Namespace/k8s-objects-test: created", "Deployment/k8s-objects-test/op: created"]
        finally:
            ok(run_module("k8s_objects", dict(member, objects=copy.deepcopy(objects), namespace=NS, state="absent", wait=True)))

    def test_server_rejection_names_the_object_and_cluster(self, member):
        bad = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Not_A_Valid_Name"}}
        result = run_module("k8s_objects", dict(member, objects=[bad]))
        assert result["rc"] == 1 and "cluster 'member1'" in result["msg"] and "Not_A_Valid_Name" in result["msg"]

    def test_missing_namespace_and_both_sources(self, member, tmp_path):
        result = run_module("k8s_objects", dict(member, objects=[BUNDLE[1]]))
        assert result["rc"] == 1 and result["msg"] == "ServiceAccount op needs a namespace: set metadata.namespace or the namespace option"
        both = run_module("k8s_objects", dict(member, objects=[BUNDLE[0]], src=str(tmp_path / "x.yaml")))
        assert both["rc"] == 1 and "mutually exclusive" in both["msg"]
        missing = run_module("k8s_objects", dict(member, src=str(tmp_path / "x.yaml")))
        assert missing["rc"] == 1 and missing["msg"] == "src %s does not exist" % (tmp_path / "x.yaml")
