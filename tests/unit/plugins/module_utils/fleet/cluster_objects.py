"""A Karmada Cluster and an OCM ManagedCluster, shaped like the objects the real Karmada controllers and OCM
registration agent write."""

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
