import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.registration.report import Accepted, Report, failed_after, merge_written
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import NAMESPACE, SECRET, Outcome
from conftest import FakeCluster

HUB, MEMBER = FakeCluster("hub", "hub"), FakeCluster("m1", "member")


def report_of(*outcomes):
    report = Report()
    for cluster, outcome in outcomes:
        report.add(cluster, outcome)
    return report


def test_the_result_names_the_cluster_of_each_object_and_diffs_only_changes():
    report = report_of((HUB, Outcome(NAMESPACE, "ns1", None, "created", None, {"metadata": {"name": "ns1"}})),
                       (MEMBER, Outcome(SECRET, "s", "ns1", "unchanged", {"a": 1}, {"a": 1})))
    result = report.result(cluster_name="m1")
    assert result["changed"] is True and result["cluster_name"] == "m1"
    assert result["changes"] == ["hub Namespace/ns1: created", "member Secret/ns1/s: unchanged"]
    assert [d["before_header"] for d in result["diff"]] == ["hub Namespace/ns1"]
    assert report_of((MEMBER, Outcome(SECRET, "s", "ns1", "unchanged"))).result()["changed"] is False


def test_a_failure_names_what_was_written_before_it():
    report = report_of((HUB, Outcome(NAMESPACE, "ns1", None, "created", None, {})))
    with pytest.raises(FleetError) as caught:
        with report.failures_name_writes("written"):
            raise FleetError("the CSR was denied")
    assert caught.value.details["changed"] is True
    assert caught.value.details["changes"] == ["hub Namespace/ns1: created"]
    assert caught.value.msg == "the CSR was denied; written before the failure: hub Namespace/ns1: created"


def test_merge_and_failed_after_keep_what_the_registration_wrote():
    registered = {"changed": False, "changes": ["member Secret/ns1/s: unchanged"], "diff": [], "warnings": ["w"]}
    report = report_of((HUB, Accepted("CertificateSigningRequest/c1", "approved", {"before": {}, "after": {"approved": True}})))
    error = failed_after(WaitTimeout("timed out", changed=False, clusters=["x"]), dict(registered), report)
    assert isinstance(error, WaitTimeout) and error.details["changed"] is True and "clusters" not in error.details
    assert error.details["changes"] == ["member Secret/ns1/s: unchanged", "hub CertificateSigningRequest/c1: approved"]
    merged = merge_written(registered, report)
    assert merged["changed"] is True and merged["warnings"] == ["w"]
    assert merged["diff"] == [{"before": {}, "after": {"approved": True}, "before_header": "hub CertificateSigningRequest/c1",
                               "after_header": "hub CertificateSigningRequest/c1"}]
