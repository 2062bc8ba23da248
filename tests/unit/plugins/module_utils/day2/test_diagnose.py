"""The decision of cluster_diagnose: facts and a time in, one verdict out, in the documented order of precedence."""

import copy
import datetime

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import diagnose

NOW = datetime.datetime(2026, 11, 29, 6, 0, 0, tzinfo=datetime.timezone.utc)

HUB = {
    "cluster": "member2", "engine": "karmada", "object": "Cluster/member2", "present": True, "push": False, "ready": True,
    "ready_condition": {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "cluster is healthy",
                        "lastTransitionTime": "2026-11-29T05:00:00Z"},
    "lease": {"object": "Lease/karmada-cluster/member2", "present": True, "renew_time": "2026-11-29T05:59:50.123456Z",
              "grace_seconds": 40},
    "csrs": [{"name": "member2-abcde", "state": "approved", "created": "2026-11-29T04:59:00Z"}],
    "denied_access": [], "agent_user": "system:karmada:agent:member2",
    "namespace": {"object": "Namespace/karmada-es-member2", "present": True}, "terminating_works": [],
    "cluster_id": "uid-of-member2",
}
MEMBER = {
    "reachable": True, "status_object": None, "cluster_id": "uid-of-member2", "server": "https://127.0.0.1:7002",
    "deployments": [{"object": "Deployment/karmada-system/karmada-agent", "present": True, "ready": "1/1", "running": True,
                     "since": "2026-11-29T05:00:00Z"}],
    "kubeconfigs": [{"object": "Secret/karmada-system/karmada-kubeconfig", "present": True, "server": "https://127.0.0.1:6443",
                     "ca_matches": True, "unreachable": None}],
    "certificate": {"object": "Secret/karmada-system/karmada-kubeconfig", "not_after": "2027-11-29T05:00:00Z",
                    "issuer": "hub-ca", "issued_by_hub": True},
}


def facts(hub=None, member=None, without_member=False):
    """HUB and MEMBER (healthy) with the changes given (dicts merged one level down)."""
    merged = copy.deepcopy(HUB)
    merged.update(hub or {})
    if without_member:
        return merged, None
    other = copy.deepcopy(MEMBER)
    other.update(member or {})
    return merged, other


def verdict(hub=None, member=None, without_member=False, now=NOW):
    return diagnose.decide(*facts(hub, member, without_member), now=now)


def pending(state="pending"):
    return [HUB["csrs"][0], {"name": "member2-fghij", "state": state, "created": "2026-11-29T05:50:00Z"}]


EXPIRED = dict(MEMBER["certificate"], not_after="2026-11-29T05:30:00Z")
WRONG_CA = [dict(MEMBER["kubeconfigs"][0], ca_matches=False)]
UNREACHABLE = [dict(MEMBER["kubeconfigs"][0], server="https://127.0.0.1:1",
                    unreachable="the hub (https://127.0.0.1:1) is unreachable: connection refused")]
STOPPED = [dict(MEMBER["deployments"][0], ready="0/1", running=False)]
OLD_LEASE = dict(HUB["lease"], renew_time="2026-11-29T05:00:00.000000Z")
NOT_READY = dict(HUB["ready_condition"], status="False", message="cluster is not reachable")

# Each verdict, from facts that hold it and every verdict after it: the order of precedence decides.
CASES = [
    ("member_unreachable", dict(member={"reachable": False, "error": "cluster 'member2' is unreachable"},
                                hub={"csrs": pending(), "lease": OLD_LEASE, "ready": False})),
    ("member_mismatch", dict(member={"cluster_id": "uid-of-member1", "kubeconfigs": WRONG_CA, "certificate": EXPIRED},
                             hub={"csrs": pending(), "lease": OLD_LEASE, "ready": False})),
    ("csr_denied", dict(member={"certificate": None, "kubeconfigs": WRONG_CA}, hub={"csrs": pending("denied")})),
    ("csr_pending", dict(member={"certificate": EXPIRED, "deployments": STOPPED}, hub={"csrs": pending()})),
    ("hub_ca_mismatch", dict(member={"kubeconfigs": WRONG_CA, "certificate": EXPIRED}, hub={"lease": OLD_LEASE})),
    ("hub_ca_mismatch", dict(member={"certificate": dict(MEMBER["certificate"], issued_by_hub=False, issuer="other-ca")})),
    ("hub_unreachable_from_agent", dict(member={"kubeconfigs": UNREACHABLE, "certificate": EXPIRED, "deployments": STOPPED})),
    ("certificate_expired", dict(member={"certificate": EXPIRED, "deployments": STOPPED}, hub={"lease": OLD_LEASE})),
    ("agent_not_running", dict(member={"deployments": STOPPED}, hub={"present": False, "lease": None, "denied_access": ["x"]})),
    ("agent_not_running", dict(member={"status_object": {"object": "Klusterlet/klusterlet", "available": "False",
                                                         "message": "0 of requested instances are available",
                                                         "since": "2026-11-29T05:58:00Z"}})),
    ("not_registered", dict(hub={"present": False, "ready": None, "ready_condition": None, "lease": None, "csrs": []},
                            member={"kubeconfigs": [], "deployments": [dict(STOPPED[0], present=False)]})),
    ("rbac_missing", dict(hub={"denied_access": ["update clusters/status member2"], "lease": OLD_LEASE})),
    ("lease_expired", dict(hub={"lease": OLD_LEASE, "ready_condition": NOT_READY, "ready": False})),
    ("lease_expired", dict(hub={"lease": dict(HUB["lease"], present=False, renew_time=None)})),
    ("not_ready", dict(hub={"ready_condition": NOT_READY, "ready": False})),
    ("healthy", {}),
]


@pytest.mark.parametrize("expected, changes", CASES, ids=["%s-%d" % (c[0], i) for i, c in enumerate(CASES)])
def test_each_verdict_wins_over_those_after_it(expected, changes):
    result = verdict(**changes)
    assert result["verdict"] == expected, result
    assert result["evidence"] and result["next_step"] == diagnose.NEXT_STEPS[expected]


def test_every_documented_verdict_has_a_case():
    assert {expected for expected, _changes in CASES} == set(diagnose.NAMES)


def test_the_lease_expires_after_its_grace_only():
    renewed = {"lease": dict(HUB["lease"], renew_time="2026-11-29T05:59:20Z")}  # 40 s before NOW: not yet
    assert verdict(hub=renewed)["verdict"] == "healthy"
    assert verdict(hub=renewed, now=NOW + datetime.timedelta(seconds=1))["verdict"] == "lease_expired"
    found = verdict(hub=renewed, now=NOW + datetime.timedelta(minutes=5))["evidence"]
    assert found == [{"object": "Lease/karmada-cluster/member2", "field": "spec.renewTime",
                      "value": "2026-11-29T05:59:20Z (counts as gone 40s after)", "age": "5m"}]


def test_a_certificate_expires_at_its_not_after():
    at = {"certificate": dict(MEMBER["certificate"], not_after="2026-11-29T06:00:01Z")}
    assert verdict(member=at)["verdict"] == "healthy"
    assert verdict(member=at, now=NOW + datetime.timedelta(seconds=1))["verdict"] == "certificate_expired"


def test_a_pending_csr_of_an_agent_holding_a_valid_certificate_is_no_verdict():
    """A renewal waiting for approval while the agent works."""
    assert verdict(hub={"csrs": pending()})["verdict"] == "healthy"


def test_without_the_member_the_csrs_count_while_the_hub_reports_it_not_ready():
    assert verdict(hub={"csrs": pending()}, without_member=True)["verdict"] == "healthy"
    not_ready = {"csrs": pending("denied"), "ready": False, "ready_condition": NOT_READY}
    result = verdict(hub=not_ready, without_member=True)
    assert result["verdict"] == "csr_denied"
    assert result["evidence"] == [{"object": "CertificateSigningRequest/member2-fghij", "field": "status",
                                   "value": "denied", "age": "10m"}]


def test_a_member_connection_to_another_cluster_is_named():
    """member1's credentials given for member2: not a verdict on member2 from member1's agent."""
    result = verdict(member={"cluster_id": "uid-of-member1", "server": "https://127.0.0.1:7001"})
    assert result["verdict"] == "member_mismatch"
    assert result["evidence"] == [
        {"object": "Cluster/member2", "field": "cluster id", "value": "uid-of-member2", "age": None},
        {"object": "cluster at https://127.0.0.1:7001", "field": "kube-system namespace UID",
         "value": "uid-of-member1: the member connection reaches another cluster", "age": None}]
    # a hub object that records no cluster id (an OCM cluster accepted outside the collection) is not compared
    assert verdict(hub={"cluster_id": None}, member={"cluster_id": "uid-of-member1"})["verdict"] == "healthy"


def test_a_pull_member_without_any_agent_kubeconfig_has_no_running_agent():
    """The hub has member2 in Pull mode, but the member holds no kubeconfig for its agent: no agent can reach the hub,
    even while a pod that read it before still runs."""
    gone = [dict(MEMBER["kubeconfigs"][0], present=False, server=None, ca_matches=None)]
    result = verdict(member={"kubeconfigs": gone, "certificate": None})
    assert result["verdict"] == "agent_not_running"
    assert result["evidence"] == [{"object": "Secret/karmada-system/karmada-kubeconfig", "field": "data",
                                   "value": "absent: the agent has no kubeconfig to reach the hub with", "age": None}]
    # OCM while it bootstraps: the bootstrap kubeconfig there, the hub kubeconfig not yet - not this verdict
    ocm = [dict(MEMBER["kubeconfigs"][0], object="Secret/open-cluster-management-agent/bootstrap-hub-kubeconfig"),
           dict(gone[0], object="Secret/open-cluster-management-agent/hub-kubeconfig-secret")]
    assert verdict(member={"kubeconfigs": ocm, "certificate": None})["verdict"] == "healthy"
    # not registered on the hub either: nothing says an agent should run
    absent = {"present": False, "ready": None, "ready_condition": None, "lease": None, "csrs": [], "cluster_id": None}
    assert verdict(hub=absent, member={"kubeconfigs": gone, "certificate": None})["verdict"] == "not_registered"


def test_a_push_member_is_judged_by_its_condition():
    push = {"push": True, "lease": None, "csrs": []}
    member = {"kubeconfigs": [], "deployments": [dict(STOPPED[0], present=False)], "certificate": None}
    assert verdict(hub=push, member=member)["verdict"] == "healthy"
    assert verdict(hub=dict(push, ready=False, ready_condition=NOT_READY), member=member)["verdict"] == "not_ready"


def test_healthy_shows_the_condition_and_the_lease():
    assert verdict()["evidence"] == [
        {"object": "Cluster/member2", "field": "condition Ready", "value": "True", "age": "60m"},
        {"object": "Lease/karmada-cluster/member2", "field": "spec.renewTime", "value": "2026-11-29T05:59:50.123456Z",
         "age": "9s"}]


def test_context_names_a_missing_namespace_and_works_stuck_terminating():
    hub = dict(HUB, namespace={"object": "Namespace/member2", "present": False},
               terminating_works=[{"object": "ManifestWork/member2/app", "deleted": "2026-11-28T06:00:00Z"}])
    assert diagnose.context(hub, NOW) == [
        {"object": "Namespace/member2", "field": "metadata.name", "value": "absent", "age": None},
        {"object": "ManifestWork/member2/app", "field": "metadata.deletionTimestamp", "value": "2026-11-28T06:00:00Z",
         "age": "24h"}]


@pytest.mark.parametrize("text, expected", [
    ("2026-11-29T05:59:15Z", "45s"), ("2026-11-29T05:58:01Z", "119s"), ("2026-11-29T05:58:00Z", "2m"), ("2026-11-29T05:57:59Z", "2m"),
    ("2026-11-29T03:00:00Z", "3h"), ("2026-11-26T06:00:00Z", "3d"), ("2026-11-29T09:00:00Z", "in 3h"), (None, None),
    ("yesterday", None)])
def test_age(text, expected):
    assert diagnose.age(text, NOW) == expected


def test_engines_say_where_the_agent_lives():
    karmada, ocm = engines.get("karmada"), engines.get("ocm")
    assert karmada.agent_lease("m") == ("karmada-cluster", "m") and ocm.agent_lease("m") == ("m", "managed-cluster-lease")
    assert karmada.lease_grace_seconds({}, {"spec": {"leaseDurationSeconds": 30}}) == 30
    assert ocm.lease_grace_seconds({"spec": {"leaseDurationSeconds": 20}}, None) == 100
    assert ocm.agent_layout(None)["deployments"] == [("open-cluster-management-agent", "klusterlet-registration-agent")]
    assert ocm.agent_layout({"spec": {"deployOption": {"mode": "Singleton"}, "namespace": "agents"}})["deployments"] == [
        ("agents", "klusterlet-agent")]
    assert ocm.agent_layout({"spec": {"deployOption": {"mode": "Hosted"}}}) is None
    user, groups, checks = ocm.agent_access("m")
    assert user == "system:open-cluster-management:m:agent" and "system:open-cluster-management:m" in groups
    assert [c["resource"] for c in checks] == ["managedclusters", "leases"]
