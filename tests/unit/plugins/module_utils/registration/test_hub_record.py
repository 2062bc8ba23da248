from ansible_collections.multicluster.fleet.plugins.module_utils.registration import hub_record
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CONFIG_MAP


def test_the_record_is_named_by_engine_and_cluster_and_labelled_with_its_engine():
    record = hub_record.desired("ocm", "east", "id-1")
    assert record["metadata"]["name"] == "multicluster-fleet.ocm.east" and record["metadata"]["namespace"] == "kube-system"
    assert record["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "multicluster.fleet",
                                            "multicluster.fleet/registered-cluster-engine": "ocm"}
    assert record["data"] == {"engine": "ocm", "cluster-name": "east", "cluster-id": "id-1"}
    assert hub_record.ref("ocm", "east") == "ConfigMap/kube-system/multicluster-fleet.ocm.east"


def test_written_read_and_deleted(fake_cluster):
    assert hub_record.ensure(fake_cluster, "karmada", "m1", "id-1", check_mode=True).action == "created"
    assert hub_record.read_all(fake_cluster, "karmada") == {}
    assert hub_record.ensure(fake_cluster, "karmada", "m1", "id-1").action == "created"
    assert hub_record.ensure(fake_cluster, "karmada", "m1", "id-1").action == "unchanged"
    assert hub_record.read_all(fake_cluster, "karmada") == {"m1": {"engine": "karmada", "cluster-name": "m1", "cluster-id": "id-1"}}
    assert hub_record.delete(fake_cluster, "karmada", "m1").action == "deleted"
    assert hub_record.delete(fake_cluster, "karmada", "m1").action == "absent"


def test_the_record_is_read_only_where_its_name_and_data_agree(fake_cluster):
    hub = fake_cluster
    hub.add(CONFIG_MAP, hub_record.desired("karmada", "member1", "id-1", "karmada-cluster"))
    other = hub_record.desired("karmada", "member2", "id-2")
    other["data"]["cluster-name"] = "member3"  # a record must name the cluster its name names
    hub.add(CONFIG_MAP, other)
    hub.add(CONFIG_MAP, hub_record.desired("ocm", "member4", "id-4"))
    assert hub_record.read_all(hub, "karmada") == {
        "member1": {"engine": "karmada", "cluster-name": "member1", "cluster-id": "id-1", "cluster-namespace": "karmada-cluster"}}
    assert hub_record.read(hub, "karmada", "member1") == hub_record.read_all(hub, "karmada")["member1"]
    assert hub_record.read(hub, "karmada", "member2") is None  # its data names member3
    assert hub_record.read(hub, "karmada", "member4") is None  # an OCM record
    assert hub_record.read(hub, "karmada", "member5") is None  # none


def test_the_cluster_id_annotation_patch():
    assert hub_record.cluster_id_annotation("east", "id-1") == {
        "metadata": {"name": "east", "annotations": {"multicluster.fleet/cluster-id": "id-1"}}}
