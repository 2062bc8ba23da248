"""Unit tests for ocm/registration.py: accepting a joined cluster (``OcmRegistration.accept``). Joining is tested in
registration/test_register.py, beside the Karmada flow."""

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.registration import OcmRegistration
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CSR
from accept_fakes import Hub, managed_cluster, ocm_csr
from register_fakes import reg


# --- OCM acceptance with the join (accept) ----------------------------------------------------------------------


def joined_result():
    return {"changed": True, "changes": ["member Secret/open-cluster-management-agent/bootstrap-hub-kubeconfig: created"],
            "diff": [], "warnings": [], "engine": "ocm", "cluster_name": "east", "cluster_id": "uid-of-east"}


def test_ocm_accept_approves_the_csr_and_accepts_the_cluster(fake_cluster):
    hub = Hub(fake_cluster)
    managed_cluster(hub)
    hub.add(CSR, ocm_csr("east-abcde"))
    result = OcmRegistration(None, hub, reg("ocm", cluster_name="east", accept=True)).accept(joined_result())
    assert result["accepted"]["accepted"] is True and result["accepted"]["approved"] == ["east-abcde"]
    assert result["changes"][1:] == ["hub CertificateSigningRequest/east-abcde: approved",
                                     "hub ManagedCluster/east: accepted (hubAcceptsClient)",
                                     "hub ManagedCluster/east: updated",
                                     "hub ConfigMap/kube-system/multicluster-fleet.ocm.east: created"]
    assert [d["before_header"] for d in result["diff"]] == ["hub CertificateSigningRequest/east-abcde", "hub ManagedCluster/east",
                                                            "hub ManagedCluster/east",
                                                            "hub ConfigMap/kube-system/multicluster-fleet.ocm.east"]
    accepted = hub.get(MANAGED_CLUSTER, "east")
    assert accepted["spec"]["hubAcceptsClient"] is True
    # the cluster id later registrations of the name are checked against (OCM records none of its own)
    assert accepted["metadata"]["annotations"] == {"multicluster.fleet/cluster-id": "uid-of-east"}
    again = OcmRegistration(None, hub, reg("ocm", cluster_name="east", accept=True)).accept(dict(joined_result(), changed=False, changes=[]))
    assert again["changed"] is False and again["accepted"]["accepted"] is True


def test_ocm_accept_in_check_mode_before_the_klusterlet_registered_says_so(fake_cluster):
    hub = Hub(fake_cluster)
    result = OcmRegistration(None, hub, reg("ocm", cluster_name="east", accept=True), check_mode=True).accept(joined_result())
    assert result["accepted"] is None and hub.writes() == []
    assert "the acceptance of east is not previewed: not registered with the hub yet" in result["warnings"][0]


def test_ocm_accept_wait_timeout_is_retriable_and_names_what_was_written(fake_cluster):
    hub = Hub(fake_cluster)
    with pytest.raises(WaitTimeout) as exc_info:
        OcmRegistration(None, hub, reg("ocm", cluster_name="east", accept=True, wait=True, wait_timeout=0)).accept(joined_result())
    details = exc_info.value.details
    assert details["last_seen"] == "the klusterlet of east has not requested its certificate yet"
    assert details["changed"] is True and details["changes"] == joined_result()["changes"]
    assert "waiting" not in details and "timed out after 0s waiting for the agent CSRs of east" in exc_info.value.msg
