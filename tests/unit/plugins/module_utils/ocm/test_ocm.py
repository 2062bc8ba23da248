from ansible_collections.multicluster.fleet.plugins.module_utils import ocm


def managed_cluster(**status):
    return {"metadata": {"name": "east", "annotations": {ocm.CLUSTER_ID_ANNOTATION: "id-1"}},
            "spec": {"hubAcceptsClient": True, "managedClusterClientConfigs": [{"url": "https://east:6443"}, {}]},
            "status": status}


def test_the_summary_of_a_managed_cluster():
    obj = managed_cluster(conditions=[{"type": ocm.AVAILABLE, "status": "True"}, {"type": ocm.JOINED, "status": "True"}],
                          version={"kubernetes": "v1.36.2"},
                          clusterClaims=[{"name": "id.k8s.io", "value": "claimed-id"},
                                         {"name": "region.open-cluster-management.io", "value": "eu"}])
    summary = ocm.summarize_managed_cluster(obj)
    assert {k: summary[k] for k in ("name", "engine", "mode", "id", "api_endpoint", "kubernetes_version", "ready", "joined",
                                    "accepted", "region", "zones")} == {
        "name": "east", "engine": "ocm", "mode": "Pull", "id": "claimed-id", "api_endpoint": "https://east:6443",
        "kubernetes_version": "v1.36.2", "ready": True, "joined": True, "accepted": True, "region": "eu", "zones": []}
    assert ocm.summarize_managed_cluster(managed_cluster())["ready"] is not True


def test_the_recorded_id_endpoints_and_agent_identities():
    assert ocm.recorded_cluster_id(managed_cluster()) == "id-1"
    assert ocm.recorded_cluster_id({"metadata": {"name": "east"}}) is None
    assert ocm.endpoints_of(managed_cluster()) == ["https://east:6443"]
    assert ocm.agent_organization("east") == "system:open-cluster-management:east"
    assert ocm.agent_common_name("east", "agent1") == "system:open-cluster-management:east:agent1"
