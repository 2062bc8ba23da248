import copy

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import cluster_identity
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import NotFound
from .cluster_objects import KARMADA_CLUSTER

ID = KARMADA_CLUSTER["spec"]["id"]
URL = "https://member.example:6443"


def test_the_cluster_id_is_the_uid_of_kube_system(fake_cluster):
    assert cluster_identity.cluster_id(fake_cluster) == "kube-system-of-hub"


def test_a_cluster_without_kube_system_has_no_id(fake_cluster):
    def request(method, path, body=None, query=None, content_type=None, timeout=None):
        raise NotFound("namespaces \"kube-system\" not found", 404)
    fake_cluster.request = request
    with pytest.raises(FleetError, match="has no kube-system namespace"):
        cluster_identity.cluster_id(fake_cluster)


def test_the_member_object_of_this_cluster_is_returned():
    assert cluster_identity.registered_member("karmada", [KARMADA_CLUSTER], "kmember1", ID, URL) is KARMADA_CLUSTER
    assert cluster_identity.registered_member("karmada", [KARMADA_CLUSTER], "other", "another-id", URL) is None


def test_a_name_recorded_for_another_cluster_is_refused():
    with pytest.raises(FleetError) as caught:
        cluster_identity.registered_member("karmada", [KARMADA_CLUSTER], "kmember1", "another-id", URL)
    assert "Cluster 'kmember1' on the hub belongs to another cluster (https://127.0.0.1:18443, cluster id %s)" % ID in (
        caught.value.msg)


def test_a_cluster_registered_under_another_name_is_refused():
    with pytest.raises(FleetError) as caught:
        cluster_identity.registered_member("karmada", [KARMADA_CLUSTER], "kmember2", ID, URL)
    assert "already registered on the hub as Cluster 'kmember1'" in caught.value.msg


def test_an_object_without_a_recorded_id_is_not_compared():
    unrecorded = copy.deepcopy(KARMADA_CLUSTER)
    del unrecorded["spec"]["id"]
    assert cluster_identity.registered_member("karmada", [unrecorded], "kmember1", "any-id", URL) is unrecorded
