from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import hub_objects
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.tokens import OCM_BOOTSTRAP_SA, OCM_NAMESPACE


def test_clusteradm_inits_bootstrap_objects_whatever_the_approval():
    wanted, unwanted = hub_objects.registration_objects(csr_auto_approval=False)
    assert unwanted == [] and hub_objects.registration_objects(csr_auto_approval=True) == (wanted, [])
    by_kind = dict(((kind.kind, obj["metadata"]["name"]), obj) for kind, obj in wanted)
    assert ("Namespace", OCM_NAMESPACE) in by_kind
    assert ("ServiceAccount", OCM_BOOTSTRAP_SA) in by_kind
    role = by_kind[("ClusterRole", hub_objects.BOOTSTRAP_CLUSTER_ROLE)]
    assert {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclustersets/join"],
            "verbs": ["create"]} in role["rules"]
    account = by_kind[("ClusterRoleBinding", OCM_BOOTSTRAP_SA)]
    assert account["subjects"] == [{"kind": "ServiceAccount", "name": OCM_BOOTSTRAP_SA, "namespace": OCM_NAMESPACE}]
