from ansible_collections.multicluster.fleet.plugins.module_utils import fleet
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER

# Shaped like the objects the real Karmada controllers and OCM registration agent write.
KARMADA_CLUSTER = {
    "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
    "metadata": {"name": "kmember1", "labels": {"env": "prod"}, "finalizers": ["karmada.io/cluster-controller"],
                 "managedFields": [{"manager": "karmadactl"}]},
    "spec": {"apiEndpoint": "https://127.0.0.1:18443", "id": "004830c5-3081-41f2-afc4-e68d86e4f96b",
             "syncMode": "Push", "provider": "aws", "region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"],
             "secretRef": {"name": "kmember1", "namespace": "karmada-cluster"}},
    "status": {"kubernetesVersion": "v1.20.2", "conditions": [
        {"type": "CompleteAPIEnablements", "status": "True", "reason": "Complete", "message": "collected",
         "lastTransitionTime": "2026-11-22T03:19:58Z"},
        {"type": "Ready", "status": "True", "reason": "ClusterReady",
         "message": "cluster is healthy and ready to accept workloads", "lastTransitionTime": "2026-11-22T03:19:58Z"},
    ]},
}

OCM_CLUSTER = {
    "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
    "metadata": {"name": "c2"},
    "spec": {"hubAcceptsClient": True, "leaseDurationSeconds": 60,
             "managedClusterClientConfigs": [{"url": "https://127.0.0.1:19443", "caBundle": "LS0t"}]},
    "status": {
        "clusterClaims": [{"name": "id.k8s.io", "value": "8e0a9f7c"},
                          {"name": "platform.open-cluster-management.io", "value": "AWS"}],
        "conditions": [
            {"type": "HubAcceptedManagedCluster", "status": "True", "reason": "HubClusterAdminAccepted"},
            {"type": "ManagedClusterJoined", "status": "True", "reason": "ManagedClusterJoined"},
            {"type": "ManagedClusterConditionAvailable", "status": "Unknown", "reason": "ManagedClusterLeaseUpdateStopped"},
        ],
        "version": {"kubernetes": "v1.20.2"},
    },
}


def test_karmada_summary():
    summary = fleet.summarize("karmada", KARMADA_CLUSTER)
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
    summary = fleet.summarize("karmada", {"metadata": {"name": "new"}, "spec": {"syncMode": "Pull", "zone": "z1"}})
    assert summary["ready"] is False and summary["kubernetes_version"] is None
    assert summary["mode"] == "Pull" and summary["zones"] == ["z1"] and summary["conditions"] == []


def test_ocm_summary():
    summary = fleet.summarize("ocm", OCM_CLUSTER)
    assert summary["engine"] == "ocm" and summary["mode"] == "Pull"
    assert summary["accepted"] is True and summary["joined"] is True
    assert summary["ready"] is False  # Available is Unknown: the lease stopped
    assert summary["id"] == "8e0a9f7c" and summary["provider"] == "AWS"
    assert summary["api_endpoint"] == "https://127.0.0.1:19443"
    assert summary["kubernetes_version"] == "v1.20.2"


def test_ocm_summary_of_a_fresh_registration():
    summary = fleet.summarize("ocm", {"metadata": {"name": "c9"}, "spec": {"hubAcceptsClient": False}})
    assert (summary["accepted"], summary["joined"], summary["ready"]) == (False, False, False)


def test_member_clusters_sorted_and_filtered(fake_cluster):
    for name in ("b", "a"):
        fake_cluster.add(CLUSTER, {"metadata": {"name": name}, "spec": {"syncMode": "Push"}})
    assert [c["name"] for c in fleet.member_clusters(fake_cluster, "karmada")] == ["a", "b"]
    fleet.member_clusters(fake_cluster, "karmada", name="a", label_selectors=["env=prod", "tier!=db"])
    method, path, query = fake_cluster.calls[-1]
    assert path == CLUSTER.path()
    assert query == {"labelSelector": "env=prod,tier!=db", "fieldSelector": "metadata.name=a"}


def test_member_kinds():
    assert fleet.member_kind("karmada") is CLUSTER
    assert fleet.member_kind("ocm") is MANAGED_CLUSTER
