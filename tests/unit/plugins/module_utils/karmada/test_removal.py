from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import registration, removal
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources


def push(name="m1", **spec):
    return {"metadata": {"name": name, "uid": "uid-" + name}, "spec": dict(syncMode="Push", **spec)}


def test_a_push_member_without_secrets_is_its_cluster_and_its_hub_record(fake_cluster):
    deletes, problem = removal.plan(fake_cluster, push(), None)
    assert problem is None
    assert deletes == [(karmada.CLUSTER, None, "m1"), (resources.CONFIG_MAP, "kube-system", "multicluster-fleet.karmada.m1")]


def test_a_secret_the_cluster_does_not_own_keeps_it(fake_cluster):
    fake_cluster.add(resources.SECRET, {"metadata": {"name": "m1", "namespace": "karmada-cluster"}})
    deletes, problem = removal.plan(fake_cluster, push(), None)
    assert "Secret karmada-cluster/m1 is not owned by this Cluster" in problem
    owned = {"metadata": {"name": "m1", "namespace": "karmada-cluster", "ownerReferences": [
        {"apiVersion": karmada.CLUSTER.api_version, "kind": "Cluster", "name": "m1", "uid": "uid-m1"}]}}
    fake_cluster.add(resources.SECRET, owned)
    deletes, problem = removal.plan(fake_cluster, push(), None)
    assert problem is None and (resources.SECRET, "karmada-cluster", "m1") in deletes


def test_a_secret_ref_naming_another_secret_keeps_the_cluster(fake_cluster):
    _deletes, problem = removal.plan(fake_cluster, push(secretRef={"namespace": "kube-system", "name": "admin"}), None)
    assert problem.startswith("its spec.secretRef names Secret kube-system/admin, not karmada-cluster/m1")


def test_a_pull_member_is_its_works_its_cluster_and_what_its_registration_created(fake_cluster):
    fake_cluster.add(karmada.WORK, {"metadata": {"name": "w1", "namespace": "karmada-es-m1"}})
    deletes, problem = removal.plan(fake_cluster, {"metadata": {"name": "m1"}, "spec": {"syncMode": "Pull"}}, None)
    assert problem is None
    assert deletes == [(karmada.WORK, "karmada-es-m1", "w1"), (karmada.CLUSTER, None, "m1")] + registration.hub_objects("m1")
