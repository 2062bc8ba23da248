import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.works import KarmadaWorks
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import wanted_condition

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}, "data": {"a": "1"}}


def test_each_manifest_is_marked_as_karmadas_execution_controller_expects():
    work = KarmadaWorks.build("app", "karmada-es-m1", [CM], {})
    assert work["metadata"] == {"name": "app", "namespace": "karmada-es-m1", "finalizers": [karmada.EXECUTION_FINALIZER]}
    manifest = work["spec"]["workload"]["manifests"][0]
    assert manifest["metadata"]["labels"] == {"karmada.io/managed": "true"}
    assert manifest["metadata"]["annotations"] == {"work.karmada.io/name": "app", "work.karmada.io/namespace": "karmada-es-m1"}
    assert "labels" not in CM["metadata"] and "preserveResourcesOnDeletion" not in work["spec"]
    assert KarmadaWorks.namespace("m1") == "karmada-es-m1"


def test_orphan_preserves_the_objects_and_ocm_only_options_are_refused():
    orphan = KarmadaWorks.build("app", "karmada-es-m1", [CM], {"delete_option": {"propagation_policy": "Orphan"}})
    assert orphan["spec"]["preserveResourcesOnDeletion"] is True
    with pytest.raises(FleetError, match="SelectivelyOrphan is OCM only"):
        KarmadaWorks.build("app", "karmada-es-m1", [CM], {"delete_option": {"propagation_policy": "SelectivelyOrphan"}})
    with pytest.raises(FleetError, match="manifest_configs .* are OCM only"):
        KarmadaWorks.build("app", "karmada-es-m1", [CM], {"manifest_configs": [{"resource_identifier": {}}]})


def test_available_is_applied_and_every_manifest_healthy():
    work = KarmadaWorks.build("app", "karmada-es-m1", [CM, CM], {})
    work["status"] = {"conditions": [{"type": "Applied", "status": "True", "reason": "AppliedSuccessful"}],
                      "manifestStatuses": [{"identifier": {"ordinal": 0}, "health": "Healthy"},
                                           {"identifier": {"ordinal": 1}, "health": "Unhealthy"}]}
    available = wanted_condition("Available")
    assert KarmadaWorks.progress(work, wanted_condition("Applied")) == (True, None)
    done, detail = KarmadaWorks.progress(work, available)
    assert not done and detail.startswith("manifests[1] ") and detail.endswith("health Unhealthy")
    work["status"]["manifestStatuses"][1]["health"] = "Healthy"
    assert KarmadaWorks.progress(work, available) == (True, None)
    with pytest.raises(FleetError, match="Karmada writes no Available condition"):
        KarmadaWorks.check_condition(wanted_condition("Available", status="False"))
