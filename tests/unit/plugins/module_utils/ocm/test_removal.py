from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import registration, removal


def test_the_plan_is_the_managed_cluster_and_what_its_registration_created(fake_cluster):
    deletes, problem = removal.plan(fake_cluster, {"metadata": {"name": "east"}}, None)
    assert problem is None and deletes[0] == (ocm.MANAGED_CLUSTER, None, "east")
    assert deletes[1:] == registration.hub_objects("east") and deletes[1:]
    assert all(name != "west" for _kind, _namespace, name in deletes)
    assert fake_cluster.calls == []  # planned from the name, nothing read
