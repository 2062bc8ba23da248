"""cluster_info against the lab hub: real API server, real CRDs, real authentication and RBAC."""

import threading

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER
from labstate import closed_port
from runner import run_module, run_playbook

KARMADA_OBJECTS = [
    ({"metadata": {"name": "info-push", "labels": {"env": "prod", "tier": "web"},
                   "annotations": {"example.com/owner": "platform", "multicluster.fleet/managed-labels": "env,tier"}},
      "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1", "id": "uid-push",
               "provider": "aws", "region": "eu-west-1", "zones": ["eu-west-1a"],
               "taints": [{"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule",
                           "timeAdded": "2026-11-24T12:00:00Z"}]}},
     {"kubernetesVersion": "v1.20.2", "conditions": [
         {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "cluster is healthy and ready",
          "lastTransitionTime": "2026-11-22T03:19:58Z"}]}),
    ({"metadata": {"name": "info-pull", "labels": {"env": "stage"}},
      "spec": {"syncMode": "Pull", "id": "uid-pull"}}, None),
]
OCM_OBJECTS = [
    ({"metadata": {"name": "info-ocm-a", "labels": {"env": "prod", "cluster.open-cluster-management.io/clusterset": "blue"}},
      "spec": {"hubAcceptsClient": True,
               "taints": [{"key": "multicluster.fleet/cordoned", "effect": "NoSelect", "timeAdded": "2026-11-24T12:00:00Z"}]}},
     {"version": {"kubernetes": "v1.20.2"}, "conditions": [
         {"type": "HubAcceptedManagedCluster", "status": "True", "reason": "HubClusterAdminAccepted",
          "message": "Accepted by hub cluster admin", "lastTransitionTime": "2026-11-22T03:25:40Z"},
         {"type": "ManagedClusterJoined", "status": "True", "reason": "ManagedClusterJoined",
          "message": "Managed cluster joined", "lastTransitionTime": "2026-11-22T03:28:13Z"},
         {"type": "ManagedClusterConditionAvailable", "status": "True", "reason": "ManagedClusterAvailable",
          "message": "Managed cluster is available", "lastTransitionTime": "2026-11-22T03:28:13Z"}]}),
    ({"metadata": {"name": "info-ocm-b"}, "spec": {"hubAcceptsClient": False}}, None),
]


@pytest.fixture(scope="module")
def hub(lab):
    info = lab.clusters["hub"]
    return {"kubeconfig": info["kubeconfig"], "context": "hub"}


@pytest.fixture(scope="module")
def registered(hub):
    """Cluster and ManagedCluster objects on the hub, status written through the status subresource."""
    connection = client.get_cluster(hub, "hub")
    created = []
    for kind, objects in ((CLUSTER, KARMADA_OBJECTS), (MANAGED_CLUSTER, OCM_OBJECTS)):
        for obj, status in objects:
            resources.ensure(connection, kind, obj)
            created.append((kind, obj["metadata"]["name"]))
            if status:
                connection.request("PATCH", kind.path(name=obj["metadata"]["name"], subresource="status"),
                                   body={"status": status}, content_type=resources.MERGE_PATCH)
    yield connection
    for kind, name in created:
        resources.delete(connection, kind, name, wait=resources.Wait())


def by_name(result):
    assert result["rc"] == 0, result.get("msg")
    return dict((c["name"], c) for c in result["clusters"])


def test_lists_karmada_clusters(hub, registered):
    clusters = by_name(run_module("cluster_info", dict(hub, engine="karmada")))
    assert {"info-push", "info-pull"} <= set(clusters)
    push, pull = clusters["info-push"], clusters["info-pull"]
    assert (push["mode"], push["ready"], push["kubernetes_version"], push["id"]) == ("Push", True, "v1.20.2", "uid-push")
    assert (push["provider"], push["region"], push["zones"]) == ("aws", "eu-west-1", ["eu-west-1a"])
    assert push["conditions"][0]["reason"] == "ClusterReady"
    assert push["object"]["spec"]["apiEndpoint"] == "https://127.0.0.1:1"
    assert (pull["mode"], pull["ready"], pull["kubernetes_version"]) == ("Pull", False, None)
    assert (push["labels"], push["annotations"], push["cordoned"], push["cluster_set"]) == (
        {"env": "prod", "tier": "web"}, {"example.com/owner": "platform"}, True, None)
    assert push["taints"] == [{"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule",
                               "timeAdded": "2026-11-24T12:00:00Z"}]
    assert (pull["annotations"], pull["taints"], pull["cordoned"]) == ({}, [], False)


def test_lists_ocm_managed_clusters(hub, registered):
    clusters = by_name(run_module("cluster_info", dict(hub, engine="ocm")))
    a, b = clusters["info-ocm-a"], clusters["info-ocm-b"]
    assert (a["accepted"], a["joined"], a["ready"], a["kubernetes_version"]) == (True, True, True, "v1.20.2")
    assert (b["accepted"], b["joined"], b["ready"]) == (False, False, False)
    assert (a["cluster_set"], a["cordoned"], a["taints"][0]["effect"]) == ("blue", True, "NoSelect")
    assert (b["cluster_set"], b["cordoned"], b["taints"]) == (None, False, [])
    assert not {"info-push", "info-pull"} & set(clusters)


def test_filters_by_name_and_labels(hub, registered):
    assert list(by_name(run_module("cluster_info", dict(hub, engine="karmada", name="info-pull")))) == ["info-pull"]
    assert by_name(run_module("cluster_info", dict(hub, engine="karmada", name="nope"))) == {}
    selected = by_name(run_module("cluster_info", dict(hub, engine="karmada", label_selectors=["env=prod", "tier in (web,api)"])))
    assert list(selected) == ["info-push"]
    assert by_name(run_module("cluster_info", dict(hub, engine="karmada", name="info-pull", label_selectors=["env=prod"]))) == {}


def test_check_mode_reads_the_same(hub, registered):
    normal = run_module("cluster_info", dict(hub, engine="ocm"))
    checked = run_module("cluster_info", dict(hub, engine="ocm"), check_mode=True)
    assert checked["changed"] is False and normal["changed"] is False
    assert checked["clusters"] == normal["clusters"]


def test_module_defaults_group_and_environment(lab, registered):
    info = lab.clusters["hub"]
    plays = [{"hosts": "localhost", "gather_facts": False, "connection": "local",
              "module_defaults": {"group/multicluster.fleet.fleet": {"kubeconfig": info["kubeconfig"]}},
              "tasks": [
                  {"multicluster.fleet.cluster_info": {"engine": "karmada", "name": "info-push"}, "register": "one"},
                  {"ansible.builtin.assert": {"that": ["one.clusters | length == 1", "one.clusters[0].ready",
                                                       "one is not changed"]}},
              ]}]
    done = run_playbook(plays, env={"K8S_AUTH_CONTEXT": "hub"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok=2" in done.stdout


class TestWait:
    """cluster_info waits for members to become ready (or any wait_condition), so a play needs no until loop."""

    def test_ready_clusters_end_the_wait_at_once(self, hub, registered):
        result = run_module("cluster_info", dict(hub, engine="karmada", label_selectors=["env=prod"], wait=True, wait_timeout=0))
        assert [c["name"] for c in by_name(result).values()] == ["info-push"]

    def test_timeout_names_the_clusters_not_there_yet(self, lab, hub, registered):
        result = run_module("cluster_info", dict(hub, engine="karmada", name="info-pull", wait=True, wait_timeout=0))
        assert result["rc"] == 1 and result.get("changed") is not True
        assert result["msg"] == ("timed out after 0s waiting for member cluster info-pull on cluster 'hub' (%s) to have "
                                 "Ready=True; last seen: info-pull: no Ready condition yet" % lab.clusters["hub"]["server"])
        assert [c["name"] for c in result["clusters"]] == ["info-pull"]  # as last read
        missing = run_module("cluster_info", dict(hub, engine="ocm", name="info-nope", wait=True, wait_timeout=0))
        assert missing["rc"] == 1 and missing["msg"].endswith(
            "to have ManagedClusterConditionAvailable=True; last seen: info-nope is not registered (no ManagedCluster of "
            "that name)")

    def test_wait_condition(self, hub, registered):
        joined = run_module("cluster_info", dict(hub, engine="ocm", name="info-ocm-a", wait=True, wait_timeout=0,
                                                 wait_condition={"type": "ManagedClusterJoined", "reason": "ManagedClusterJoined"}))
        assert list(by_name(joined)) == ["info-ocm-a"]
        refused = run_module("cluster_info", dict(hub, engine="ocm", name="info-ocm-b", wait=True, wait_timeout=0,
                                                  wait_condition={"type": "HubAcceptedManagedCluster", "status": "False"}))
        assert refused["rc"] == 1 and "info-ocm-b: no HubAcceptedManagedCluster condition yet" in refused["msg"]

    def test_a_cluster_that_becomes_ready_while_waiting(self, hub, registered):
        """The module waits (re-reading every wait_sleep) until the Karmada controller reports the cluster Ready."""
        result = {}
        waiting = threading.Thread(target=lambda: result.update(run_module("cluster_info", dict(
            hub, engine="karmada", name="info-pull", wait=True, wait_timeout=120, wait_sleep=1))))
        waiting.start()
        try:
            registered.request("PATCH", CLUSTER.path(name="info-pull", subresource="status"), content_type=resources.MERGE_PATCH,
                               body={"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                                                                "message": "cluster is healthy and ready",
                                                                "lastTransitionTime": "2026-11-22T03:19:58Z"}]}})
        finally:
            waiting.join(150)
            registered.request("PATCH", CLUSTER.path(name="info-pull", subresource="status"), content_type=resources.MERGE_PATCH,
                               body={"status": {"conditions": None}})
        assert by_name(result)["info-pull"]["ready"] is True

    @pytest.mark.parametrize("args, message", [
        (dict(wait_timeout=-1), "wait_timeout must not be negative, got -1"),
        (dict(wait_sleep=0), "wait_sleep must be at least 1 second, got 0"),
        (dict(name="Info_Push"), "invalid cluster name 'Info_Push': Karmada cluster names are DNS-1123 labels"),
        (dict(name="i" * 49), "of 1 to 48 characters"),
    ])
    def test_bad_input(self, hub, args, message):
        result = run_module("cluster_info", dict(hub, engine="karmada", wait=True, **args))
        assert result["rc"] == 1 and message in result["msg"]


class TestBadInput:
    """Each failure is a fail_json naming the cluster and the cause, never a traceback."""

    def fails(self, args, *fragments):
        result = run_module("cluster_info", dict(args, engine="karmada"))
        assert result["rc"] == 1 and result["failed"] is True
        assert "exception" not in result and "Traceback" not in result["msg"]
        for fragment in fragments:
            assert fragment in result["msg"], result["msg"]
        return result

    def test_missing_kubeconfig(self, tmp_path):
        self.fails({"kubeconfig": str(tmp_path / "absent.kubeconfig")},
                   "the hub: kubeconfig file %s does not exist" % (tmp_path / "absent.kubeconfig"))

    def test_unknown_context(self, hub):
        self.fails(dict(hub, context="production"), "the hub: context 'production' not found", "available: hub")

    def test_unreachable_host(self, lab):
        port = closed_port()
        self.fails({"host": "https://127.0.0.1:%d" % port, "ca_cert": lab.clusters["hub"]["ca_cert"]},
                   "the hub (https://127.0.0.1:%d) is unreachable" % port, "Connection refused")

    def test_refused_credentials(self, lab):
        info = lab.clusters["hub"]
        result = self.fails({"host": info["server"], "ca_cert": info["ca_cert"], "api_key": "abcdef.0123456789abcdef"},
                            "the hub (%s) refused the credentials (401 Unauthorized)" % info["server"])
        assert "0123456789abcdef" not in str(result)

    def test_wrong_ca(self, lab):
        info = lab.clusters["hub"]
        other_ca = lab.clusters["member1"]["ca_cert"]
        self.fails({"kubeconfig": info["kubeconfig"], "ca_cert": other_ca},
                   "cluster 'hub'", "is unreachable", "TLS verification failed")

    def test_forbidden_by_rbac(self, lab, hub):
        self.fails(dict(hub, impersonate_user="nobody"),
                   "cluster 'hub' (%s): GET /apis/cluster.karmada.io/v1alpha1/clusters failed: 403" % lab.clusters["hub"]["server"],
                   'User "nobody" cannot list resource "clusters"', "RBAC")

    def test_terminating_namespace_is_not_called_an_rbac_problem(self, hub):
        """The API server's own 403 for writes into a namespace that is being deleted, read through client.py."""
        admin = client.get_cluster(hub, "hub")
        held = {"metadata": {"name": "held", "namespace": "info-terminating", "finalizers": ["example.com/hold"]}}
        resources.ensure(admin, resources.NAMESPACE, {"metadata": {"name": "info-terminating"}})
        resources.ensure(admin, resources.CONFIG_MAP, held)
        admin.request("DELETE", resources.NAMESPACE.path(name="info-terminating"))
        try:
            with pytest.raises(client.ClusterError) as info:
                admin.request("POST", resources.CONFIG_MAP.path("info-terminating"),
                              body={"metadata": {"name": "late"}, "data": {}})
            assert info.value.status == 403 and "being terminated" in info.value.msg
            assert "the namespace is being deleted; run again once it is gone" in info.value.msg
            assert "RBAC" not in info.value.msg
        finally:
            admin.request("PATCH", resources.CONFIG_MAP.path("info-terminating", "held"), body={"metadata": {"finalizers": None}},
                          content_type="application/merge-patch+json")
            resources.wait_until_gone(admin, resources.NAMESPACE, "info-terminating", timeout=60)

    def test_bad_engine(self, hub):
        result = run_module("cluster_info", dict(hub, engine="fleetd"))
        assert result["failed"] and "value of engine must be one of: karmada, ocm" in result["msg"]
