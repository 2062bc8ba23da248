"""Unit tests for register.py against a second runner and runs stopped half-way.

Two runs registering one member (one waits for the other's Lease, ``RegistrationLock``; the Lease itself is tested in
test_lease_lock.py), the CSR in flight that the next run resumes instead of posting a second CSR, refusals that leave
nothing behind, and ``force`` on an unreachable member. Time is a fake clock advanced by the fake ``sleep``; the
clusters are the in-memory fakes.
"""

import base64
import datetime

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import lease_lock
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import registration as karmada_flow
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.registration import KarmadaRegistration
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.registration import OcmRegistration
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CSR, NAMESPACE, SECRET
from conftest import FakeCluster
from fake_ca import FakeCA
from register_fakes import (AGENT_SECRET_PATH, CLUSTER, HUB_URL, OTHER_TOKEN, TOKEN, BootstrapHub, FakeDiscovery, connector, reg,
                            registration_of, secret_text)
from .lease_fakes import IN_FLIGHT_PATH, LEASE_PATH, START, Member, Time, hold, lock_of, writes


# --- two runs registering one member ----------------------------------------------------------------------


def register_karmada(member, hub, bootstrap_hub, time_, request=None, check_mode=False, holder="runner-b", discovery=None):
    flow = KarmadaRegistration(member, hub, request or reg(), check_mode, connect=connector(bootstrap_hub),
                               discover_hub=discovery or FakeDiscovery(bootstrap_hub.ca))
    return flow.present(lock=lock_of(member, time_, holder))


@pytest.fixture(scope="module")
def ca():
    return FakeCA()


def test_a_second_run_waits_and_keeps_the_first_runs_certificate(ca, time_):
    member, hub, bootstrap_hub = Member(), FakeCluster("hub"), BootstrapHub(ca)
    hold(member, "runner-a", START)

    def runner_a_finishes():  # runner-a registers (its Lease shown by the one above) and gives the Lease back
        member.objects.pop(LEASE_PATH)
        first.update(KarmadaRegistration(member, hub, reg(), connect=connector(bootstrap_hub),
                                         discover_hub=FakeDiscovery(ca)).present(lock=lock_of(member, Time(), "runner-a")))
    first = {}
    time_.actions = [runner_a_finishes]
    second = register_karmada(member, hub, bootstrap_hub, time_)
    assert first["changed"] and first["csr_name"] and len(bootstrap_hub.posted) == 1  # one CSR, runner-a's
    assert second["changed"] is False and second["csr_name"] is None and second["reason"] is None
    assert second["waited_for"]["holder"] == "runner-a"
    assert second["warnings"] == ["waited for the registration of cluster member1 by another run (runner-a, since "
                                  "2030-01-02T03:04:00.000000Z), which stored a valid certificate: kept it"]
    assert "member Secret/karmada-system/karmada-kubeconfig: unchanged" in second["changes"]
    assert LEASE_PATH not in member.objects and IN_FLIGHT_PATH not in member.objects


def test_a_run_that_finished_between_the_first_read_and_the_lease_is_not_registered_again(ca, time_):
    member, bootstrap_hub = Member(), BootstrapHub(ca)

    class RunnerAFinishesMeanwhile(FakeDiscovery):  # runner-b has read the member; runner-a completes during its discovery
        def __call__(self, *args, **kwargs):
            KarmadaRegistration(member, None, reg(), connect=connector(bootstrap_hub),
                                discover_hub=FakeDiscovery(ca)).present(lock=lock_of(member, Time(), "runner-a"))
            return super().__call__(*args, **kwargs)
    result = register_karmada(member, None, bootstrap_hub, time_, discovery=RunnerAFinishesMeanwhile(ca))
    assert len(bootstrap_hub.posted) == 1  # runner-a's CSR only
    assert result["changed"] is False and result["csr_name"] is None and result["waited_for"] is None
    assert result["warnings"] == ["another run registered cluster member1 meanwhile and stored a valid certificate: kept it"]
    assert LEASE_PATH not in member.objects


def test_a_second_run_under_another_name_waits_and_is_refused(ca, time_):
    """Two hosts reaching one cluster under two new names: the Lease is the cluster's, not the name's."""
    member, bootstrap_hub = Member(), BootstrapHub(ca)
    hold(member, "runner-a", START)

    def runner_a_finishes():  # runner-a registers the cluster as member1 and gives the Lease back
        member.objects.pop(LEASE_PATH)
        KarmadaRegistration(member, None, reg(), connect=connector(bootstrap_hub),
                            discover_hub=FakeDiscovery(ca)).present(lock=lock_of(member, Time(), "runner-a"))
    time_.actions = [runner_a_finishes]
    with pytest.raises(FleetError, match="the member's agent kubeconfig belongs to system:karmada:agent:member1, not to "
                                         "cluster twin: refusing to replace another cluster's agent"):
        register_karmada(member, None, bootstrap_hub, time_, request=reg(cluster_name="twin"))
    assert len(bootstrap_hub.posted) == 1 and time_.naps == [2]  # runner-a's CSR only
    assert LEASE_PATH not in member.objects and SECRET.path("kube-system", "multicluster-fleet-registration-twin") \
        not in member.objects


def test_a_second_run_registers_when_the_first_one_failed(ca, time_):
    member, bootstrap_hub = Member(), BootstrapHub(ca)
    hold(member, "runner-a", START)
    time_.actions = [lambda: member.objects.pop(LEASE_PATH)]  # runner-a gave up without a certificate
    result = register_karmada(member, None, bootstrap_hub, time_)
    assert result["changed"] and result["waited_for"]["holder"] == "runner-a" and result["warnings"] == []
    assert len(bootstrap_hub.posted) == 1 and AGENT_SECRET_PATH in member.objects


def test_the_lease_is_held_from_after_discovery_until_the_kubeconfig_is_written(ca, time_):
    member, bootstrap_hub = Member(), BootstrapHub(ca)
    seen = []

    class Watching(FakeDiscovery):
        def __call__(self, *args, **kwargs):
            seen.append(("discovery", LEASE_PATH in member.objects))
            return super().__call__(*args, **kwargs)
    original = bootstrap_hub.request

    def request(method, path, body=None, query=None, content_type="application/json", timeout=None):
        if method == "POST":
            seen.append(("csr", member.objects[LEASE_PATH]["spec"]["holderIdentity"], IN_FLIGHT_PATH in member.objects))
        return original(method, path, body, query, content_type, timeout)
    bootstrap_hub.request = request
    result = register_karmada(member, None, bootstrap_hub, time_, discovery=Watching(ca))
    assert seen == [("discovery", False), ("csr", "runner-b", True)]
    assert result["changed"] and result["waited_for"] is None
    order = writes(member)
    assert order[0] == ("POST", lease_lock.LEASE.path("kube-system"))
    assert order[-3:] == [("POST", SECRET.path("karmada-system")), ("DELETE", IN_FLIGHT_PATH), ("DELETE", LEASE_PATH)]
    assert set(member.objects) == {NAMESPACE.path(None, "karmada-system"), AGENT_SECRET_PATH}


def test_the_lease_is_renewed_while_waiting_for_the_certificate_and_given_back_on_failure(ca, time_):
    member, bootstrap_hub = Member(), BootstrapHub(ca, verdict="pending")
    with pytest.raises(FleetError, match="got no certificate within 45s"):
        register_karmada(member, None, bootstrap_hub, time_, reg(csr_wait_timeout=45))
    renewals = [path for method, path in writes(member) if method == "PATCH"]
    assert renewals == [LEASE_PATH, LEASE_PATH]  # at 20s and 40s
    assert LEASE_PATH not in member.objects and IN_FLIGHT_PATH in member.objects


def test_a_run_that_lost_its_lease_while_waiting_writes_no_kubeconfig(ca, time_):
    member = Member()

    class TakenOver(BootstrapHub):  # runner-c takes the Lease over while this run waits for the signer
        def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
            if method == "GET" and path.startswith(CSR.path() + "/"):
                member.objects[LEASE_PATH]["spec"]["holderIdentity"] = "runner-c"
                member.objects[LEASE_PATH]["metadata"]["resourceVersion"] = "999"
            return super().request(method, path, body, query, content_type, timeout)
    with pytest.raises(FleetError, match="this run lost Lease/kube-system/multicluster-fleet-registration to runner-c"):
        register_karmada(member, None, TakenOver(ca), time_)
    assert sorted(member.objects) == [IN_FLIGHT_PATH, LEASE_PATH]  # runner-c's Lease; the CSR for runner-c to resume


def test_check_mode_says_a_registration_is_under_way_instead_of_planning_a_csr(ca, time_):
    member, hub, bootstrap_hub = Member(), FakeCluster("hub"), BootstrapHub(ca)
    hold(member, "runner-a", START)
    result = register_karmada(member, hub, bootstrap_hub, time_, check_mode=True)
    assert result["changed"] is False and result["csr_name"] is None and result["changes"] == []
    assert result["waited_for"]["holder"] == "runner-a" and bootstrap_hub.posted == []
    assert result["warnings"] == ["a registration of cluster member1 by another run (runner-a, since 2030-01-02T03:04:00.000000Z) "
                                  "is under way: a run now would wait for it and keep the certificate it stores; no CSR planned"]
    assert writes(member) == [] and hub.objects == {}
    assert time_.naps == []


# --- a run stopped half-way is resumed with its CSR ---------------------------------------------------------


def sign(bootstrap_hub, name):
    """Approve and sign a pending CSR on the fake hub, as an approver and the signer would."""
    stored = bootstrap_hub.objects[CSR.path(name=name)]
    request = base64.b64decode(stored["spec"]["request"]).decode()
    stored["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "AutoApproved"}],
                        "certificate": base64.b64encode(bootstrap_hub.ca.sign_request(request, 365).encode()).decode()}


def stopped_while_waiting(ca, time_, member, bootstrap_hub):
    """A first run that posted its CSR and gave up waiting for the certificate."""
    with pytest.raises(FleetError) as exc_info:
        register_karmada(member, None, bootstrap_hub, time_, reg(csr_wait_timeout=1))
    return exc_info.value.details["csr_name"]


def test_the_next_run_resumes_the_csr_of_a_run_that_stopped(ca, time_):
    member, bootstrap_hub = Member(), BootstrapHub(ca, verdict="pending")
    name = stopped_while_waiting(ca, time_, member, bootstrap_hub)
    stored = member.objects[IN_FLIGHT_PATH]
    assert stored["type"] == "Opaque" and sorted(stored["data"]) == ["csr-name", "csr.pem", "hub-server", "tls.key"]
    assert LEASE_PATH not in member.objects and AGENT_SECRET_PATH not in member.objects
    sign(bootstrap_hub, name)
    # check mode plans to resume it, posting nothing
    planned = register_karmada(member, None, bootstrap_hub, time_, check_mode=True)
    assert planned["csr_name"] == name and "hub CertificateSigningRequest/%s: unchanged" % name in planned["changes"]
    assert len(bootstrap_hub.posted) == 1
    result = register_karmada(member, None, bootstrap_hub, time_)
    assert result["changed"] and result["csr_name"] == name and len(bootstrap_hub.posted) == 1
    assert "hub CertificateSigningRequest/%s: unchanged" % name in result["changes"]
    parts = pki.read_kubeconfig(base64.b64decode(member.objects[AGENT_SECRET_PATH]["data"]["karmada-kubeconfig"]).decode())
    assert parts["client_key_pem"] == base64.b64decode(stored["data"]["tls.key"]).decode()
    assert IN_FLIGHT_PATH not in member.objects and LEASE_PATH not in member.objects


def test_a_csr_gone_from_the_hub_is_posted_again_with_the_same_key(ca, time_):
    member, bootstrap_hub = Member(), BootstrapHub(ca, verdict="pending")
    name = stopped_while_waiting(ca, time_, member, bootstrap_hub)
    first_request = bootstrap_hub.posted[0][0]["spec"]["request"]
    bootstrap_hub.objects.clear()  # the hub's CSR cleaner removed it
    bootstrap_hub.verdict = "approve"
    result = register_karmada(member, None, bootstrap_hub, time_)
    assert result["changed"] and result["csr_name"] == name
    assert [body["spec"]["request"] for body, dummy in bootstrap_hub.posted] == [first_request, first_request]


def test_a_stored_csr_of_another_hub_is_not_resumed(ca, time_):
    member, bootstrap_hub = Member(), BootstrapHub(ca, verdict="pending")
    name = stopped_while_waiting(ca, time_, member, bootstrap_hub)
    bootstrap_hub.verdict = "approve"
    result = register_karmada(member, None, bootstrap_hub, time_, reg(hub_apiserver="https://other-hub:6443"))
    assert result["csr_name"] != name and len(bootstrap_hub.posted) == 2
    assert IN_FLIGHT_PATH not in member.objects


def test_the_leftover_of_a_run_stopped_after_storing_the_kubeconfig_is_removed(ca, time_):
    member, bootstrap_hub = Member(), BootstrapHub(ca)
    register_karmada(member, None, bootstrap_hub, time_)
    stored = base64.b64decode(member.objects[AGENT_SECRET_PATH]["data"]["karmada-kubeconfig"]).decode()
    leftover = karmada_flow._in_flight_secret(reg(), "https://hub.example:6443", "member1-abcde", "csr",
                                              pki.read_kubeconfig(stored)["client_key_pem"])
    member.add(SECRET, leftover)
    checked = register_karmada(member, None, bootstrap_hub, time_, check_mode=True)
    assert checked["changed"] and IN_FLIGHT_PATH in member.objects
    result = register_karmada(member, None, bootstrap_hub, time_)
    assert result["changed"] and result["changes"][-1] == "member Secret/kube-system/multicluster-fleet-registration-member1: deleted"
    assert IN_FLIGHT_PATH not in member.objects and len(bootstrap_hub.posted) == 1
    # a key that is not the stored agent's is another registration's: left alone
    member.add(SECRET, karmada_flow._in_flight_secret(reg(), "https://hub.example:6443", "member1-fghij", "csr", "other key"))
    assert register_karmada(member, None, bootstrap_hub, time_)["changed"] is False and IN_FLIGHT_PATH in member.objects


class FlakyHub(BootstrapHub):
    """The hub as the bootstrap token sees it, not answering ``outages`` GETs of the CSR."""

    def __init__(self, ca, outages):
        super().__init__(ca)
        self.outages = outages

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        if method == "GET" and path.startswith(CSR.path() + "/") and self.outages:
            self.outages -= 1
            raise ClusterError("the hub (https://hub.example:6443) is unreachable: connection refused")
        return super().request(method, path, body, query, content_type, timeout)


def test_a_hub_that_does_not_answer_for_a_while_is_waited_for(ca, time_):
    member, bootstrap_hub = Member(), FlakyHub(ca, outages=3)
    result = register_karmada(member, None, bootstrap_hub, time_)
    assert result["changed"] and bootstrap_hub.outages == 0 and len(bootstrap_hub.posted) == 1
    bootstrap_hub = FlakyHub(ca, outages=100)
    member = Member()
    with pytest.raises(FleetError) as exc_info:
        register_karmada(member, None, bootstrap_hub, time_, reg(csr_wait_timeout=5))
    assert "got no certificate within 5s (the hub did not answer: the hub (https://hub.example:6443) is unreachable" \
        in exc_info.value.msg
    assert IN_FLIGHT_PATH in member.objects  # for the next run


REFUSALS = {
    401: "the hub (https://hub.example:6443) refused the credentials (401 Unauthorized): check the token, client "
         "certificate or kubeconfig user",
    # an API server just started forbids requests for about a second, until its RBAC authorizer has read the roles
    403: "the hub (https://hub.example:6443) forbids this (403 Forbidden)",
}


class RestartedHub(BootstrapHub):
    """A hub that refuses the bootstrap token the first ``refusals`` times the CSR is read (an API server just started),
    answering ``status``."""

    def __init__(self, ca, refusals, status=401):
        super().__init__(ca)
        self.refusals, self.status = refusals, status

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        if method == "GET" and path.startswith(CSR.path() + "/") and self.refusals:
            self.refusals -= 1
            raise ClusterError(REFUSALS[self.status], self.status, "Refused")
        return super().request(method, path, body, query, content_type, timeout)


@pytest.mark.parametrize("status, cause", [
    (401, "the bootstrap token expired or was deleted; create a fresh one with multicluster.fleet.bootstrap_token"),
    (403, "the hub's RBAC no longer lets the bootstrap token's groups read CSRs (ClusterRole system:node-bootstrapper, "
          "which hub_registration binds); restore it"),
])
def test_a_hub_refusing_the_token_for_a_while_is_waited_for_and_then_given_up(ca, time_, status, cause):
    tolerated = karmada_flow.TOKEN_REFUSAL_SECONDS  # polls a second apart (wait_sleep=1)
    result = register_karmada(Member(), None, RestartedHub(ca, tolerated, status), time_)
    assert result["changed"]
    member, bootstrap_hub = Member(), RestartedHub(ca, tolerated + 1, status)
    with pytest.raises(FleetError) as exc_info:
        register_karmada(member, None, bootstrap_hub, time_)
    name = exc_info.value.details["csr_name"]
    assert exc_info.value.msg == (
        "%s, %d times in a row, while this run waited for the certificate of CSR %s: %s and run again: the next run "
        "resumes with this CSR; written before the failure: hub CertificateSigningRequest/%s: created"
        % (REFUSALS[status], tolerated + 1, name, cause, name))
    assert exc_info.value.details["status"] == status and exc_info.value.details["changed"] is True
    assert sorted(member.objects) == [IN_FLIGHT_PATH]


# --- refusals leave nothing behind ---------------------------------------------------------------------------


class RefusingHub(BootstrapHub):
    """A hub whose API server refuses the CSR POST with ``status``."""

    def __init__(self, ca, status):
        super().__init__(ca)
        self.status = status

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        if method == "POST" and path == CSR.path():
            if self.status == 401:
                raise ClusterError("the hub (https://hub.example:6443) refused the credentials (401 Unauthorized): check the "
                                   "token, client certificate or kubeconfig user", 401, "Unauthorized")
            raise ClusterError("the hub (https://hub.example:6443) is unreachable: connection reset")
        return super().request(method, path, body, query, content_type, timeout)


def test_a_token_refused_after_discovery_leaves_nothing_on_the_member(ca, time_):
    member = Member()
    with pytest.raises(FleetError) as exc_info:
        register_karmada(member, None, RefusingHub(ca, 401), time_)
    msg = exc_info.value.msg
    assert msg.startswith("posting CSR member1-") and "401 Unauthorized" in msg
    assert "the bootstrap token expired or was deleted since discovery: create a fresh one with " \
           "multicluster.fleet.bootstrap_token and run again" in msg and msg.endswith("the member was not changed")
    assert exc_info.value.details["status"] == 401 and TOKEN.split(".")[1] not in msg
    assert member.objects == {}


def test_a_csr_post_without_answer_keeps_the_csr_in_flight(ca, time_):
    member = Member()
    with pytest.raises(FleetError, match="is unreachable: connection reset; the next run resumes with CSR member1-"):
        register_karmada(member, None, RefusingHub(ca, 0), time_)
    assert list(member.objects) == [IN_FLIGHT_PATH]


def test_a_denied_csr_is_forgotten(ca, time_):
    member = Member()
    with pytest.raises(FleetError, match="was denied"):
        register_karmada(member, None, BootstrapHub(ca, verdict="deny"), time_)
    assert member.objects == {}


def test_a_pending_csr_this_module_did_not_post_stops_the_run(ca, time_):
    member, bootstrap_hub = Member(), BootstrapHub(ca, verdict="pending")
    request = pki.csr_pem(pki.generate_private_key(), "system:karmada:agent:member1", ["system:karmada:agents"])
    foreign = karmada.agent_csr("member1-kctl1", request, 3600)
    foreign["spec"]["username"] = "system:bootstrap:abcdef"  # karmadactl register, with the same token
    foreign["metadata"]["creationTimestamp"] = "2030-01-02T03:00:00Z"
    bootstrap_hub.add(CSR, foreign)
    for others in ({"username": "system:bootstrap:zzzzzz"}, {"username": "system:karmada:agent:member1"}):
        bootstrap_hub.add(CSR, dict(foreign, metadata={"name": "member1-" + others["username"][-5:]},
                                    spec=dict(foreign["spec"], **others)))
    for check_mode in (True, False):
        with pytest.raises(FleetError) as exc_info:
            register_karmada(member, None, bootstrap_hub, time_, check_mode=check_mode)
        assert exc_info.value.msg == (
            "CSR member1-kctl1 for system:karmada:agent:member1, posted with the same bootstrap token at 2030-01-02T03:00:00Z, "
            "is pending on the hub and was not posted by this module: another registration of cluster member1 is under way "
            "(karmadactl register?). Let it finish, or deny or delete that CSR, then run again; the member was not changed")
    assert bootstrap_hub.posted == [] and member.objects == {}
    # once it is decided, the run goes on
    sign(bootstrap_hub, "member1-kctl1")
    bootstrap_hub.verdict = "approve"
    assert register_karmada(member, None, bootstrap_hub, time_)["changed"]


def test_csrs_that_cannot_be_listed_are_not_compared(ca, time_):
    class NoList(BootstrapHub):
        def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
            if method == "GET" and path == CSR.path():
                raise ClusterError("forbidden", 403, "Forbidden")
            return super().request(method, path, body, query, content_type, timeout)
    assert register_karmada(Member(), None, NoList(ca), time_)["changed"]


# --- force on an unreachable member --------------------------------------------------------------------------


def registered_pull_member(ca, time_):
    member, hub = Member(), FakeCluster("hub")
    register_karmada(member, hub, BootstrapHub(ca), time_)
    hub.add(karmada.CLUSTER, {"metadata": {"name": CLUSTER}, "spec": {"syncMode": "Pull"}})
    hub.add(karmada.WORK, {"metadata": {"name": "w1", "namespace": "karmada-es-member1"}})
    return member, hub


def test_unregistering_an_unreachable_member_fails_naming_it_unless_forced(ca, time_):
    member, hub = registered_pull_member(ca, time_)
    member.down = True
    for hub_given, force in ((hub, False), (None, True)):
        with pytest.raises(FleetError) as exc_info:
            KarmadaRegistration(member, hub_given, registration_of("karmada", CLUSTER, state="absent", force=force)).absent()
        assert exc_info.value.msg.startswith("cluster 'member' (https://fake) is unreachable: connection refused")
        assert exc_info.value.msg.endswith("cluster member1 cannot be unregistered without reaching it: run again once it "
                                           "answers, or with force=true and hub credentials to remove it from the hub only")
    assert karmada.CLUSTER.path(name=CLUSTER) in hub.objects
    forced = KarmadaRegistration(member, hub, registration_of("karmada", CLUSTER, state="absent", force=True)).absent()
    assert forced["changed"] and not [c for c in forced["changes"] if c.startswith("member ")]
    assert forced["changes"][:2] == ["hub Work/karmada-es-member1/w1: deleted", "hub Cluster/member1: deleted"]
    assert [o for o in hub.objects if "member1" in o] == []
    assert forced["warnings"] == [
        "cluster 'member' (https://fake) is unreachable: connection refused (check that the API server runs); force=true: "
        "removed cluster member1 from the hub only, its agent objects (namespace karmada-system with Secret "
        "karmada-kubeconfig, the karmada-agent Deployment and RBAC) stay on it (run state=absent again once it answers)"]
    member.down = False
    assert AGENT_SECRET_PATH in member.objects
    cleaned = KarmadaRegistration(member, hub, registration_of("karmada", CLUSTER, state="absent")).absent()
    assert AGENT_SECRET_PATH not in member.objects and "member Secret/karmada-system/karmada-kubeconfig: deleted" in cleaned["changes"]


def test_a_member_that_answers_with_an_error_is_not_skipped_by_force(ca, time_):
    class Forbidding(Member):
        def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
            raise ClusterError("forbidden", 403, "Forbidden")
    forced = registration_of("karmada", CLUSTER, state="absent", force=True)
    with pytest.raises(ClusterError, match="forbidden"):
        KarmadaRegistration(Forbidding(), FakeCluster("hub"), forced).absent()


def test_force_unjoins_an_unreachable_ocm_member_from_the_hub(ca):
    member, hub = Member(), FakeCluster("hub")
    OcmRegistration(member, None, reg("ocm"), discover_hub=FakeDiscovery(ca)).present()
    hub.add(ocm.MANAGED_CLUSTER, {"metadata": {"name": CLUSTER}})
    member.down = True
    with pytest.raises(FleetError, match="cannot be unregistered without reaching it"):
        OcmRegistration(member, hub, registration_of("ocm", CLUSTER, state="absent")).absent()
    result = OcmRegistration(member, hub, registration_of("ocm", CLUSTER, state="absent", force=True)).absent()
    assert result["changes"] == ["hub ManagedCluster/member1: deleted", "hub Lease/member1/managed-cluster-lease: absent",
                                 "hub ConfigMap/kube-system/multicluster-fleet.ocm.member1: absent"] and hub.objects == {}
    assert "Klusterlet klusterlet and the Secrets of namespace open-cluster-management-agent stay on it" in result["warnings"][0]


def test_unregister_removes_what_a_stopped_registration_left(ca, time_):
    member, bootstrap_hub = Member(), BootstrapHub(ca, verdict="pending")
    stopped_while_waiting(ca, time_, member, bootstrap_hub)
    hold(member, "runner-killed", START - datetime.timedelta(hours=1))
    result = KarmadaRegistration(member, None, registration_of("karmada", CLUSTER, state="absent")).absent()
    assert result["changes"][-2:] == ["member Secret/kube-system/multicluster-fleet-registration-member1: deleted",
                                      "member Lease/kube-system/multicluster-fleet-registration: deleted"]
    assert member.objects == {}
    again = KarmadaRegistration(member, None, registration_of("karmada", CLUSTER, state="absent")).absent()
    assert not [c for c in again["changes"] if "kube-system" in c]


def test_check_mode_on_an_unreachable_member_fails_too(ca, time_):
    member, hub = registered_pull_member(ca, time_)
    member.down = True
    with pytest.raises(FleetError, match="cannot be unregistered without reaching it"):
        KarmadaRegistration(member, hub, registration_of("karmada", CLUSTER, state="absent"), check_mode=True).absent()
    checked = KarmadaRegistration(member, hub, registration_of("karmada", CLUSTER, state="absent", force=True), check_mode=True).absent()
    assert checked["changed"] and karmada.CLUSTER.path(name=CLUSTER) in hub.objects


def test_not_found_is_no_reason_to_give_up_a_lease(time_):
    member = Member()
    lock = lock_of(member, time_)
    lock.acquire(timeout=0)
    member.objects.pop(LEASE_PATH)
    with pytest.raises(FleetError, match="lost Lease/kube-system/multicluster-fleet-registration to nobody"):
        lock.renew(force=True)


# --- OCM: one join at a time, and a working bootstrap kubeconfig is kept ---------------------------------------------

BOOTSTRAP_PATH = SECRET.path(ocm.AGENT_NAMESPACE, ocm.BOOTSTRAP_SECRET)
REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


class ReviewingHub(FakeCluster):
    """The hub as a bootstrap token sees it: answers SelfSubjectAccessReviews (``allowed``), or refuses the token."""

    def __init__(self, allowed=True, refused=False):
        super().__init__("hub")
        self.allowed, self.refused, self.reviews = allowed, refused, 0

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        if path == REVIEW_PATH:
            self.reviews += 1
            if self.refused:
                raise ClusterError("hub refused the credentials (401 Unauthorized)")
            return dict(body, status={"allowed": self.allowed})
        return super().request(method, path, body, query, content_type, timeout)


def ocm_member(ca):
    """A member that serves the Klusterlet API and was joined with TOKEN (its klusterlet has not bootstrapped yet)."""
    member = Member()
    member.add(ocm.KLUSTERLET, {"metadata": {"name": "klusterlet"}})
    member.objects.pop(ocm.KLUSTERLET.path(name="klusterlet"))  # the API is served; no Klusterlet yet
    OcmRegistration(member, None, reg("ocm", token=TOKEN), discover_hub=FakeDiscovery(ca)).present()
    return member


def join_again(ca, member, hub, time_, token=OTHER_TOKEN, **options):
    seen = []
    lock = lease_lock.RegistrationLock(member, CLUSTER, holder="runner-b", interval=2, clock=time_)
    result = OcmRegistration(member, None, reg("ocm", token=token, **options), discover_hub=FakeDiscovery(ca),
                             connect=connector(hub, seen)).present(lock=lock)
    return result, seen


def bootstrap_token(member):
    return pki.read_kubeconfig(secret_text(member, BOOTSTRAP_PATH, "kubeconfig"))["token"]


def test_a_bootstrap_kubeconfig_with_another_working_token_is_kept(ca, time_):
    member = ocm_member(ca)
    hub = ReviewingHub()
    result, seen = join_again(ca, member, hub, time_)
    assert bootstrap_token(member) == TOKEN and not result["changed"] and hub.reviews == 1
    assert [(server, token) for server, dummy, token in seen] == [(HUB_URL, TOKEN)]  # the stored token is the one asked


@pytest.mark.parametrize("hub", [ReviewingHub(allowed=False), ReviewingHub(refused=True)], ids=["not-allowed", "refused"])
def test_a_bootstrap_kubeconfig_whose_token_no_longer_registers_is_rewritten(ca, time_, hub):
    member = ocm_member(ca)
    result, dummy = join_again(ca, member, hub, time_)
    assert bootstrap_token(member) == OTHER_TOKEN and result["changed"] and hub.reviews == 1
    assert "member Secret/open-cluster-management-agent/bootstrap-hub-kubeconfig: updated" in result["changes"]


def test_a_bootstrap_kubeconfig_for_another_hub_is_rewritten_without_asking(ca, time_):
    member = ocm_member(ca)
    hub = ReviewingHub()
    result, dummy = join_again(ca, member, hub, time_, hub_apiserver="https://hub.example:7443")
    assert bootstrap_token(member) == OTHER_TOKEN and result["changed"] and hub.reviews == 0


def test_a_second_ocm_join_waits_for_the_first_and_keeps_what_it_wrote(ca, time_):
    member = Member()
    member.add(ocm.KLUSTERLET, {"metadata": {"name": "klusterlet"}})
    member.objects.pop(ocm.KLUSTERLET.path(name="klusterlet"))
    hold(member, "runner-a", START)

    def first_run_finishes():  # runner-a writes the bootstrap kubeconfig with its token and gives the Lease back
        member.objects.pop(LEASE_PATH)
        OcmRegistration(member, None, reg("ocm", token=TOKEN), discover_hub=FakeDiscovery(ca)).present()
    time_.actions.append(first_run_finishes)
    result, dummy = join_again(ca, member, ReviewingHub(), time_)
    assert result["waited_for"] == {"holder": "runner-a", "since": "2030-01-02T03:04:00.000000Z",
                                    "lease": "Lease/kube-system/multicluster-fleet-registration"}
    assert bootstrap_token(member) == TOKEN and not result["changed"] and LEASE_PATH not in member.objects
    assert time_.naps == [2]


def test_a_second_ocm_join_under_another_name_waits_and_is_refused(ca, time_):
    member = Member()
    member.add(ocm.KLUSTERLET, {"metadata": {"name": "klusterlet"}})
    member.objects.pop(ocm.KLUSTERLET.path(name="klusterlet"))
    hold(member, "runner-a", START)

    def first_run_finishes():  # runner-a joins the cluster as member1 and gives the Lease back
        member.objects.pop(LEASE_PATH)
        OcmRegistration(member, None, reg("ocm", token=TOKEN), discover_hub=FakeDiscovery(ca)).present()
    time_.actions.append(first_run_finishes)
    with pytest.raises(FleetError, match="Klusterlet klusterlet on cluster 'member' .* registers cluster member1, not "
                                         "twin: refusing to join as another cluster"):
        join_again(ca, member, ReviewingHub(), time_, cluster_name="twin")
    klusterlet = member.objects[ocm.KLUSTERLET.path(name="klusterlet")]
    assert klusterlet["spec"]["clusterName"] == CLUSTER and bootstrap_token(member) == TOKEN
    assert LEASE_PATH not in member.objects


def test_an_ocm_join_takes_the_lease_to_write_a_klusterlet_beside_a_good_bootstrap_kubeconfig(ca, time_):
    """Another run may have written the bootstrap kubeconfig and not yet its Klusterlet: the Lease still decides."""
    member = ocm_member(ca)
    member.objects.pop(ocm.KLUSTERLET.path(name="klusterlet"))
    member.calls[:] = []
    result, dummy = join_again(ca, member, ReviewingHub(), time_, token=TOKEN)
    order = writes(member)
    assert order[0] == ("POST", lease_lock.LEASE.path("kube-system")) and order[-1] == ("DELETE", LEASE_PATH)
    assert result["changed"] and bootstrap_token(member) == TOKEN
    assert "member Klusterlet/klusterlet: created" in result["changes"]


def test_the_ocm_join_lease_is_held_while_writing_and_given_back_before_waiting(ca, time_):
    member = Member()
    member.add(ocm.KLUSTERLET, {"metadata": {"name": "klusterlet"}})
    member.objects.pop(ocm.KLUSTERLET.path(name="klusterlet"))
    result, dummy = join_again(ca, member, ReviewingHub(), time_)
    order = writes(member)
    assert order[0] == ("POST", lease_lock.LEASE.path("kube-system"))
    assert order[-1] == ("DELETE", LEASE_PATH) and order[-2][1] == ocm.KLUSTERLET.path()
    assert result["waited_for"] is None and result["changed"]


def test_check_mode_says_an_ocm_join_is_under_way(ca, time_):
    member = Member()
    member.add(ocm.KLUSTERLET, {"metadata": {"name": "klusterlet"}})
    member.objects.pop(ocm.KLUSTERLET.path(name="klusterlet"))
    hold(member, "runner-a", START)
    result = OcmRegistration(member, None, reg("ocm"), check_mode=True, discover_hub=FakeDiscovery(ca)).present()
    assert result["waited_for"]["holder"] == "runner-a"
    assert [call for call in member.calls if call[0] != "GET" and call[2] != {"dryRun": "All"}] == []
    assert "a registration of cluster member1 by another run (runner-a, since " in result["warnings"][0]
