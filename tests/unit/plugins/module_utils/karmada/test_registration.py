"""Unit tests for karmada/registration.py: unregistering a pull member (``KarmadaRegistration.absent``), hub side then
member side. Registering is tested in registration/test_register.py, beside the OCM flow."""

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.registration import KarmadaRegistration
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import NAMESPACE
from conftest import FakeCluster
from fake_ca import FakeCA
from register_fakes import AGENT_SECRET_PATH, CLUSTER, BootstrapHub, FakeDiscovery, connector, held_after_delete, reg, registration_of


@pytest.fixture(scope="module")
def ca():
    return FakeCA()


@pytest.fixture
def pin(ca):
    return bootstrap.ca_pin(ca.pem)


def register_karmada(member, hub, bootstrap_hub, request, discovery):
    return KarmadaRegistration(member, hub, request, connect=connector(bootstrap_hub), discover_hub=discovery).present()


# --- Karmada absent ---------------------------------------------------------------------------------------


def registered(ca, pin, sync_mode="Pull"):
    member, hub = FakeCluster("member"), FakeCluster("hub")
    register_karmada(member, hub, BootstrapHub(ca), reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))
    hub.add(karmada.CLUSTER, {"metadata": {"name": CLUSTER}, "spec": {"syncMode": sync_mode}})
    for name in ("w1", "w2"):
        hub.add(karmada.WORK, {"metadata": {"name": name, "namespace": "karmada-es-member1"}})
    hub.add(karmada.WORK, {"metadata": {"name": "w3", "namespace": "karmada-es-other"}})
    for kind, name, namespace in karmada.agent_member_objects()[:-1]:
        member.add(kind, {"metadata": {"name": name, "namespace": namespace} if namespace else {"name": name}})
    member.calls.clear()  # what the registration did is not what the tests look at
    hub.calls.clear()
    return member, hub


def deletes(cluster):
    return [path for method, path, dummy in cluster.calls if method == "DELETE"]


def test_karmada_absent_removes_hub_then_member_in_order(ca, pin):
    member, hub = registered(ca, pin)
    result = KarmadaRegistration(member, hub, registration_of("karmada", CLUSTER, state="absent")).absent()
    assert result["changed"] and result["warnings"] == []
    assert deletes(hub) == [
        karmada.WORK.path("karmada-es-member1", "w1"), karmada.WORK.path("karmada-es-member1", "w2"),
        karmada.CLUSTER.path(None, CLUSTER),
        resources.ROLE_BINDING.path("karmada-es-member1", "system:karmada:member1:agent-work"),
        resources.ROLE.path("karmada-es-member1", "system:karmada:member1:agent-work"),
        resources.ROLE_BINDING.path("karmada-cluster", "system:karmada:member1:agent-secret"),
        resources.ROLE.path("karmada-cluster", "system:karmada:member1:agent-secret"),
        resources.CLUSTER_ROLE_BINDING.path(None, "system:karmada:member1:agent"),
        resources.CLUSTER_ROLE.path(None, "system:karmada:member1:agent"),
        NAMESPACE.path(None, "karmada-es-member1"),
    ]
    assert NAMESPACE.path(None, "karmada-cluster") in hub.objects  # shared with other clusters
    assert karmada.WORK.path("karmada-es-other", "w3") in hub.objects
    assert deletes(member) == [
        resources.DEPLOYMENT.path("karmada-system", "karmada-agent"), resources.CLUSTER_ROLE_BINDING.path(None, "karmada-agent"),
        resources.CLUSTER_ROLE.path(None, "karmada-agent"), resources.SERVICE_ACCOUNT.path("karmada-system", "karmada-agent-sa"),
        AGENT_SECRET_PATH, NAMESPACE.path(None, "karmada-system"),
    ]
    again = KarmadaRegistration(member, hub, registration_of("karmada", CLUSTER, state="absent")).absent()
    assert again["changed"] is False and all(c.endswith(": absent") for c in again["changes"])


def test_karmada_absent_that_times_out_says_what_it_deleted(ca, pin, fast_waits):
    member, hub = registered(ca, pin)
    held_after_delete(hub, karmada.CLUSTER, CLUSTER, finalizer=karmada.CLUSTER_FINALIZER)
    with pytest.raises(WaitTimeout) as caught:
        KarmadaRegistration(member, hub, registration_of("karmada", CLUSTER, state="absent", wait_timeout=5)).absent()
    deleted = ["hub Work/karmada-es-member1/w1: deleted", "hub Work/karmada-es-member1/w2: deleted",
               "hub Cluster/member1: deleted"]
    assert caught.value.details["changed"] is True and caught.value.details["changes"] == deleted
    assert caught.value.details["last_seen"] == "finalizers: %s" % karmada.CLUSTER_FINALIZER
    assert caught.value.msg.startswith("timed out after 5s waiting for Cluster/member1 to be deleted on cluster 'hub'")
    assert caught.value.msg.endswith("; deleted before the failure: " + ", ".join(deleted))
    assert AGENT_SECRET_PATH in member.objects  # the member side goes only once the hub has let the cluster go


def test_karmada_absent_check_mode_and_member_only(ca, pin):
    member, hub = registered(ca, pin)
    checked = KarmadaRegistration(member, hub, registration_of("karmada", CLUSTER, state="absent"), check_mode=True).absent()
    assert checked["changed"] and deletes(hub) == [] and deletes(member) == []
    result = KarmadaRegistration(member, None, registration_of("karmada", CLUSTER, state="absent")).absent()
    assert "the hub still lists cluster member1" in result["warnings"][0]
    assert deletes(hub) == [] and AGENT_SECRET_PATH not in member.objects


def test_karmada_absent_keeps_an_unlabelled_karmada_system(ca, pin):
    member, hub = registered(ca, pin)
    member.objects[NAMESPACE.path(None, "karmada-system")]["metadata"]["labels"] = {}
    KarmadaRegistration(member, None, registration_of("karmada", CLUSTER, state="absent")).absent()
    assert NAMESPACE.path(None, "karmada-system") in member.objects


def test_karmada_absent_refuses_push_clusters_and_other_agents(ca, pin):
    member, hub = registered(ca, pin, sync_mode="Push")
    with pytest.raises(FleetError, match="registered on the hub in Push mode: remove it with multicluster.fleet.cluster_join"):
        KarmadaRegistration(member, hub, registration_of("karmada", CLUSTER, state="absent")).absent()
    with pytest.raises(FleetError, match="belongs to system:karmada:agent:member1, not to cluster other: refusing to unregister"):
        KarmadaRegistration(member, hub, registration_of("karmada", "other", state="absent")).absent()
    assert deletes(hub) == [] and deletes(member) == []
