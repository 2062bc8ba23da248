"""cluster_diagnose on the lab, both engines: site.yml registers the fleet, then each test breaks one member the way it
breaks in the field - its agent paused and its Lease left to run out, the agent's hub RBAC deleted, its kubeconfig
pointed at a wrong address or CA, its certificate expired, its agent's image unpullable, its CSR denied, its API server
stopped - and diagnose names the verdict; each test repairs what it broke and waits (with a deadline) until the member
is ``healthy`` again. A member that fails in site.yml gets its verdict in the summary and the Markdown report, and
diagnose.yml prints the verdicts of a run.

Karmada: member1 joins by push, member2 registers by pull; OCM: both register by pull (klusterlet).
"""

import base64
import datetime
import os
import re

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

from playbooks import play, write_inventory
from runner import run_module, summary

import lab as fleet_lab  # tests/lab, on sys.path through conftest.py
import sim_karmada_agent
import sim_klusterlet

WAIT = 90  # seconds a verdict may take to show or to clear (a simulation's next round, an RBAC cache)
RBAC = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/"
UNPULLABLE = "unreachable.invalid/fleet/agent:v0"


def auth(lab, name):
    return {"kubeconfig": lab.clusters[name]["kubeconfig"], "context": name}


def diagnose(lab, engine, name, member=True, check_mode=False):
    args = dict(auth(lab, lab.hub), engine=engine, clusters=[name], **({"member": auth(lab, name)} if member else {}))
    result = run_module("cluster_diagnose", args, check_mode=check_mode)
    assert result["rc"] == 0, result.get("msg")
    assert result["changed"] is False
    return result["clusters"][0]


def wait_for_verdict(lab, engine, name, verdict, member=True, objects=None):
    """The diagnosis of ``name`` once its verdict is ``verdict`` and, when ``objects`` is given, its evidence names
    exactly those objects (the agent's Deployment and its status object change at different moments); AssertionError
    after WAIT seconds, naming the last diagnosis."""
    seen = {}

    def check():
        seen.update(diagnose(lab, engine, name, member))
        named = [e["object"] for e in seen["evidence"]]
        return seen["verdict"] == verdict and (objects is None or named == objects) and dict(seen)
    try:
        return fleet_lab.wait_for(check, WAIT, "verdict %s for %s" % (verdict, name), interval=1)
    except fleet_lab.LabError as exc:
        raise AssertionError("%s; last diagnosis: %s" % (exc, seen))


def fleet(lab, tmp_path_factory, engine):
    """site.yml for ``engine`` on the lab (both members healthy); detach.yml afterwards."""
    inventory = write_inventory(lab, tmp_path_factory.mktemp(engine), engine)
    done, recap = play("site.yml", inventory)
    assert done.returncode == 0, done.stdout[-4000:]
    yield inventory
    done, recap = play("detach.yml", inventory)
    assert done.returncode == 0, done.stdout[-4000:]


def agent_of(simulations, kind, member):
    """The running simulation of ``member``'s agent (not a Hosted one)."""
    return next(s for s in simulations if isinstance(s, kind) and s.info["name"] == member and not getattr(s, "hosted", False))


def secret_path(namespace, name):
    return "/api/v1/namespaces/%s/secrets/%s" % (namespace, name)


class Patched:
    """A member Secret's key holding a kubeconfig, edited by ``change(config)`` and restored on exit."""

    def __init__(self, api, path, key, change):
        self.api, self.path, self.key, self.change = api, path, key, change

    def __enter__(self):
        secret = self.api.get(self.path)
        self.kept = secret["data"][self.key]
        config = yaml.safe_load(base64.b64decode(self.kept))
        self.change(config)
        self.api.patch(self.path, {"data": {self.key: base64.b64encode(yaml.safe_dump(config).encode()).decode()}})
        return self

    def __exit__(self, *exc_info):
        self.api.patch(self.path, {"data": {self.key: self.kept}})


def set_cluster(**fields):
    def change(config):
        config["clusters"][0]["cluster"].update(fields)
    return change


def other_ca(lab):
    with open(lab.clusters["member1"]["ca_cert"], "rb") as handle:
        return base64.b64encode(handle.read()).decode()


def expired_copy(lab, cert_pem):
    """``cert_pem`` issued again by the hub's CA (same subject and key) with a validity that ended an hour ago."""
    pki_dir = os.path.join(lab.clusters[lab.hub]["dir"], "pki")
    with open(os.path.join(pki_dir, "ca.crt"), "rb") as handle:
        ca = x509.load_pem_x509_certificate(handle.read())
    with open(os.path.join(pki_dir, "ca.key"), "rb") as handle:
        ca_key = serialization.load_pem_private_key(handle.read(), None)
    cert = x509.load_pem_x509_certificate(cert_pem)
    now = datetime.datetime.now(datetime.timezone.utc)
    expired = (x509.CertificateBuilder().subject_name(cert.subject).issuer_name(ca.subject).public_key(cert.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=2))
               .not_valid_after(now - datetime.timedelta(hours=1)).sign(ca_key, hashes.SHA256()))
    return expired.public_bytes(serialization.Encoding.PEM)


def paused_with_old_lease(lab, agent, lease_path):
    """Pause ``agent`` (a simulation) and write a renewTime an hour old into its Lease, as a stopped agent leaves it."""
    agent.pause()
    hub = lab.api(lab.hub)
    lease = hub.get(lease_path)
    an_hour_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    lease["spec"]["renewTime"] = an_hour_ago.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    hub.put(lease_path, lease)


def rbac_removed(lab, name):
    """Delete ClusterRoleBinding ``name`` on the hub; return a function that creates it again."""
    hub = lab.api(lab.hub)
    kept = hub.get(RBAC + name)
    hub.delete(RBAC + name)
    body = dict((key, kept[key]) for key in ("apiVersion", "kind", "roleRef", "subjects"))
    return lambda: hub.post(RBAC.rstrip("/"), dict(body, metadata={"name": name, "labels": kept["metadata"].get("labels") or {}}))


def healthy_in_check_mode_too(lab, engine):
    for name in ("member1", "member2"):
        for check_mode in (False, True):
            found = diagnose(lab, engine, name, check_mode=check_mode)
            assert found["verdict"] == "healthy" and found["member_read"], found


def lease_expired_while_paused(lab, engine, agent, lease_path):
    """The diagnosis of member2 with ``agent`` paused and its Lease an hour old; healthy again once it is resumed."""
    paused_with_old_lease(lab, agent, lease_path)
    try:
        found = diagnose(lab, engine, "member2")
    finally:
        agent.resume()
    assert found["verdict"] == "lease_expired", found
    wait_for_verdict(lab, engine, "member2", "healthy")
    return found


def member_stopped_is_unreachable(lab, engine):
    lab.stop_apiserver("member1", grace=2)
    try:
        found = diagnose(lab, engine, "member1")
    finally:
        lab.start_apiserver("member1")
    assert found["verdict"] == "member_unreachable" and found["member_read"] is False, found
    assert "is unreachable" in found["evidence"][0]["value"]
    wait_for_verdict(lab, engine, "member1", "healthy")


def another_clusters_credentials(lab, engine):
    """member1's connection given to diagnose member2: the verdict says so instead of judging member2 by member1's agent."""
    args = dict(auth(lab, lab.hub), engine=engine, clusters=["member2"], member=auth(lab, "member1"))
    result = run_module("cluster_diagnose", args)
    assert result["rc"] == 0, result.get("msg")
    found = result["clusters"][0]
    uid = lab.api("member1").get("/api/v1/namespaces/kube-system")["metadata"]["uid"]
    assert found["verdict"] == "member_mismatch", found
    assert found["evidence"][1]["value"] == "%s: the member connection reaches another cluster" % uid, found


def without_agent_kubeconfigs(lab, engine, agent, paths):
    """member2 holding none of its agent's kubeconfig Secrets (``paths``; its agent paused, as one that cannot start):
    agent_not_running, naming them; healthy again once they are back."""
    member = lab.api("member2")
    kept = [member.get(path) for path in paths]
    agent.pause()
    try:
        for path in paths:
            member.delete(path)
        found = diagnose(lab, engine, "member2")
    finally:
        for path, secret in zip(paths, kept):
            member.post(path.rsplit("/", 1)[0], dict((key, secret[key]) for key in ("apiVersion", "kind", "type", "data"))
                        | {"metadata": {"name": secret["metadata"]["name"], "namespace": secret["metadata"]["namespace"]}})
        agent.resume()
    assert found["verdict"] == "agent_not_running", found
    assert [e["object"] for e in found["evidence"]][:len(paths)] == [
        "Secret/%s/%s" % tuple(path.split("/")[-3::2]) for path in paths], found
    wait_for_verdict(lab, engine, "member2", "healthy")


def not_registered(lab, engine):
    found = diagnose(lab, engine, "member9", member=False)
    assert found["verdict"] == "not_registered", found
    assert found["evidence"][0]["value"] == "absent"


# --- Karmada ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="class")
def karmada_fleet(lab, simulations, tmp_path_factory):
    yield from fleet(lab, tmp_path_factory, "karmada")


KARMADA_KUBECONFIG = secret_path("karmada-system", "karmada-kubeconfig")
KARMADA_LEASE = "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/member2"
KARMADA_AGENT = "/apis/apps/v1/namespaces/karmada-system/deployments/karmada-agent"


@pytest.mark.usefixtures("karmada_fleet")
class TestKarmada:
    def test_a_registered_fleet_is_healthy_in_check_mode_too(self, lab):
        healthy_in_check_mode_too(lab, "karmada")
        assert [e["object"] for e in diagnose(lab, "karmada", "member2")["evidence"]] == [
            "Cluster/member2", "Lease/karmada-cluster/member2"]

    def test_a_stopped_agent_lets_its_lease_expire(self, lab, simulations):
        agent = agent_of(simulations, sim_karmada_agent.SimulatedKarmadaAgent, "member2")
        found = lease_expired_while_paused(lab, "karmada", agent, KARMADA_LEASE)
        assert found["evidence"][0]["object"] == "Lease/karmada-cluster/member2" and found["evidence"][0]["age"] == "60m"

    def test_the_agents_hub_rbac_deleted(self, lab):
        restore = rbac_removed(lab, "system:karmada:member2:agent")
        try:
            found = wait_for_verdict(lab, "karmada", "member2", "rbac_missing")
        finally:
            restore()
        assert found["evidence"][0]["value"] == "not update clusters/status member2"
        wait_for_verdict(lab, "karmada", "member2", "healthy")

    def test_a_kubeconfig_naming_a_wrong_hub_address(self, lab):
        with Patched(lab.api("member2"), KARMADA_KUBECONFIG, "karmada-kubeconfig", set_cluster(server="https://127.0.0.1:1")):
            found = diagnose(lab, "karmada", "member2")
        assert found["verdict"] == "hub_unreachable_from_agent", found
        assert found["evidence"][0]["value"].startswith("https://127.0.0.1:1: ")
        wait_for_verdict(lab, "karmada", "member2", "healthy")

    def test_a_kubeconfig_trusting_another_ca(self, lab):
        change = set_cluster(**{"certificate-authority-data": other_ca(lab)})
        with Patched(lab.api("member2"), KARMADA_KUBECONFIG, "karmada-kubeconfig", change):
            found = diagnose(lab, "karmada", "member2")
        assert found["verdict"] == "hub_ca_mismatch", found
        assert found["evidence"] == [{"object": "Secret/karmada-system/karmada-kubeconfig", "field": "certificate-authority-data",
                                      "value": "does not hold the hub's CA", "age": None}]
        wait_for_verdict(lab, "karmada", "member2", "healthy")

    def test_an_expired_agent_certificate(self, lab):
        def expire(config):
            user = config["users"][0]["user"]
            user["client-certificate-data"] = base64.b64encode(
                expired_copy(lab, base64.b64decode(user["client-certificate-data"]))).decode()
        with Patched(lab.api("member2"), KARMADA_KUBECONFIG, "karmada-kubeconfig", expire):
            found = diagnose(lab, "karmada", "member2")
        assert found["verdict"] == "certificate_expired", found
        assert found["evidence"][0]["field"] == "certificate notAfter" and found["evidence"][0]["age"] in ("60m", "59m")
        wait_for_verdict(lab, "karmada", "member2", "healthy")

    def test_an_agent_whose_image_cannot_be_pulled(self, lab):
        member = lab.api("member2")
        deployment = member.get(KARMADA_AGENT)
        image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]

        def set_image(value):
            member.patch(KARMADA_AGENT, {"spec": {"template": {"spec": {"containers": [{"name": "karmada-agent", "image": value}]}}}})
        set_image(UNPULLABLE)
        try:
            found = wait_for_verdict(lab, "karmada", "member2", "agent_not_running")
        finally:
            set_image(image)
        assert found["evidence"][0]["object"] == "Deployment/karmada-system/karmada-agent"
        assert found["evidence"][0]["value"] == "0/1"
        wait_for_verdict(lab, "karmada", "member2", "healthy")

    def test_a_member_whose_api_server_stopped(self, lab):
        member_stopped_is_unreachable(lab, "karmada")

    def test_a_name_the_hub_does_not_know(self, lab):
        not_registered(lab, "karmada")

    def test_another_clusters_credentials(self, lab):
        another_clusters_credentials(lab, "karmada")

    def test_a_pull_member_without_its_agent_kubeconfig(self, lab, simulations):
        agent = agent_of(simulations, sim_karmada_agent.SimulatedKarmadaAgent, "member2")
        without_agent_kubeconfigs(lab, "karmada", agent, [KARMADA_KUBECONFIG])

    def test_site_gives_a_failed_member_its_verdict_and_diagnose_yml_prints_it(self, lab, simulations, karmada_fleet, tmp_path):
        """member2's agent stopped, its Lease run out: site.yml's wait for readiness fails, and the summary says why."""
        agent = agent_of(simulations, sim_karmada_agent.SimulatedKarmadaAgent, "member2")
        hub = lab.api(lab.hub)
        report = tmp_path / "fleet.md"
        paused_with_old_lease(lab, agent, KARMADA_LEASE)
        try:  # the hub's cluster-status controller would mark it so after the Lease ran out
            cluster = hub.get("/apis/cluster.karmada.io/v1alpha1/clusters/member2")
            for condition in cluster["status"]["conditions"]:
                if condition["type"] == "Ready":
                    # what an agent can write there: the report quotes it as text
                    condition.update(status="Unknown", reason="ClusterStatusUnknown",
                                     message="cluster status unknown\n# injected\n![x](https://evil.example/x.png)")
            hub.put("/apis/cluster.karmada.io/v1alpha1/clusters/member2/status", cluster)
            done, recap = play("site.yml", karmada_fleet, fleet_wait_timeout=2, fleet_wait_step=1,
                               agent_install_wait_timeout=2, agent_install_wait_step=1, fleet_report_path=str(report))
            printed, _recap = play("diagnose.yml", karmada_fleet)
        finally:
            agent.resume()
        assert done.returncode != 0 and recap["member2"]["rescued"] == 1, done.stdout[-4000:]
        assert summary(done.stdout)["member2"]["RESULT"].startswith("failed (lease_expired): "), summary(done.stdout)
        text = report.read_text()
        assert re.search(r"^- \*\*member2\*\* \(lease_expired\): .*\n  - evidence: Lease/karmada-cluster/member2 spec\.renewTime: "
                         r".*\(6[0-9]m ago\)\n(  - evidence: .*\n)*  - next step: The agent stopped renewing its Lease", text,
                         re.MULTILINE), text
        assert "# injected" not in text.splitlines() and "![x](" not in text and "!\\[x\\](https://evil.example/x.png)" in text
        assert printed.returncode == 0, printed.stdout[-4000:]
        assert '"member1: healthy - Nothing to do."' in printed.stdout
        assert '"member2: lease_expired - The agent stopped renewing its Lease' in printed.stdout
        wait_for_verdict(lab, "karmada", "member2", "healthy")


# --- OCM -------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="class")
def ocm_fleet(lab, simulations, tmp_path_factory):
    yield from fleet(lab, tmp_path_factory, "ocm")


OCM_AGENT_NAMESPACE = "open-cluster-management-agent"
OCM_BOOTSTRAP = secret_path(OCM_AGENT_NAMESPACE, "bootstrap-hub-kubeconfig")
OCM_HUB_SECRET = secret_path(OCM_AGENT_NAMESPACE, "hub-kubeconfig-secret")
OCM_LEASE = "/apis/coordination.k8s.io/v1/namespaces/member2/leases/managed-cluster-lease"
KLUSTERLET = "/apis/operator.open-cluster-management.io/v1/klusterlets/klusterlet"
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def newest_csr(lab, known):
    """The name of member2's agent CSR that is not among ``known``, once there is one."""
    def check():
        items = lab.api(lab.hub).get(CSRS + "?labelSelector=open-cluster-management.io/cluster-name%3Dmember2")["items"]
        return next((c["metadata"]["name"] for c in items if c["metadata"]["name"] not in known), None)
    return fleet_lab.wait_for(check, WAIT, "a new CSR of member2's klusterlet")


def dropped(lab):
    """Wait until member2's klusterlet has dropped its hub kubeconfig (its bootstrap kubeconfig names another hub)."""
    fleet_lab.wait_for(lambda: not lab.api("member2").exists(OCM_HUB_SECRET), WAIT, "the klusterlet to drop its hub kubeconfig")


def csr_names(lab):
    return {c["metadata"]["name"] for c in lab.api(lab.hub).get(CSRS)["items"]}


def accept(lab):
    accepted = run_module("csr_accept", dict(auth(lab, lab.hub), engine="ocm", clusters=["member2"], wait=True,
                                             expect_new_csr=True, wait_timeout=WAIT))
    assert accepted["rc"] == 0, accepted.get("msg")


@pytest.mark.usefixtures("ocm_fleet")
class TestOcm:
    def test_a_registered_fleet_is_healthy_in_check_mode_too(self, lab):
        healthy_in_check_mode_too(lab, "ocm")

    def test_a_stopped_agent_lets_its_lease_expire(self, lab, simulations):
        agent = agent_of(simulations, sim_klusterlet.SimulatedKlusterlet, "member2")
        found = lease_expired_while_paused(lab, "ocm", agent, OCM_LEASE)
        assert found["evidence"][0]["object"] == "Lease/member2/managed-cluster-lease"

    def test_the_agents_hub_rbac_deleted_while_the_hub_controller_is_down(self, lab, simulations):
        controller = next(s for s in simulations if isinstance(s, sim_klusterlet.SimulatedRegistrationController))
        controller.pause()  # the hub's registration controller writes it back at once
        try:
            rbac_removed(lab, "open-cluster-management:managedcluster:member2")  # the controller writes it again
            found = wait_for_verdict(lab, "ocm", "member2", "rbac_missing")
        finally:
            controller.resume()
        assert found["evidence"][0]["value"] == "not update managedclusters/status member2"
        wait_for_verdict(lab, "ocm", "member2", "healthy")

    def test_an_agent_whose_image_cannot_be_pulled(self, lab):
        member = lab.api("member2")
        kept = member.get(KLUSTERLET)["spec"].get("registrationImagePullSpec")
        member.patch(KLUSTERLET, {"spec": {"registrationImagePullSpec": UNPULLABLE}})
        try:
            found = wait_for_verdict(lab, "ocm", "member2", "agent_not_running", objects=[
                "Deployment/open-cluster-management-agent/klusterlet-registration-agent", "Klusterlet/klusterlet"])
        finally:
            member.patch(KLUSTERLET, {"spec": {"registrationImagePullSpec": kept}})
        assert found["evidence"][0]["value"] == "0/1"
        assert found["evidence"][1]["value"].startswith("False")
        wait_for_verdict(lab, "ocm", "member2", "healthy")

    def test_an_expired_agent_certificate_of_a_stopped_agent(self, lab, simulations):
        agent = agent_of(simulations, sim_klusterlet.SimulatedKlusterlet, "member2")
        member = lab.api("member2")
        kept = member.get(OCM_HUB_SECRET)["data"]["tls.crt"]
        agent.pause()  # a running agent would bootstrap again at once
        try:
            member.patch(OCM_HUB_SECRET, {"data": {"tls.crt": base64.b64encode(expired_copy(lab, base64.b64decode(kept))).decode()}})
            found = diagnose(lab, "ocm", "member2")
            member.patch(OCM_HUB_SECRET, {"data": {"tls.crt": kept}})
        finally:
            agent.resume()
        assert found["verdict"] == "certificate_expired", found
        assert found["evidence"][0]["object"] == "Secret/open-cluster-management-agent/hub-kubeconfig-secret"
        wait_for_verdict(lab, "ocm", "member2", "healthy")

    def test_a_wrong_ca_then_its_csr_pending_then_denied(self, lab):
        """The bootstrap kubeconfig trusts another CA: the klusterlet drops its hub kubeconfig and cannot bootstrap.
        Repaired, it asks for a certificate again (csr_pending); that CSR denied (csr_denied), deleted, asked again and
        approved: healthy."""
        member, hub = lab.api("member2"), lab.api(lab.hub)
        known = csr_names(lab)
        with Patched(member, OCM_BOOTSTRAP, "kubeconfig", set_cluster(**{"certificate-authority-data": other_ca(lab)})):
            found = wait_for_verdict(lab, "ocm", "member2", "hub_ca_mismatch")
            assert found["evidence"][0]["object"] == "Secret/open-cluster-management-agent/bootstrap-hub-kubeconfig"
            dropped(lab)
        denied = newest_csr(lab, known)
        found = wait_for_verdict(lab, "ocm", "member2", "csr_pending")
        assert found["evidence"][0] == dict(found["evidence"][0], object="CertificateSigningRequest/" + denied, value="pending")
        csr = hub.get("%s/%s" % (CSRS, denied))
        csr.setdefault("status", {})["conditions"] = [{"type": "Denied", "status": "True", "reason": "FleetTest", "message": "denied by a test"}]
        hub.put("%s/%s/approval" % (CSRS, denied), csr)
        found = wait_for_verdict(lab, "ocm", "member2", "csr_denied")
        assert found["evidence"][0]["object"] == "CertificateSigningRequest/" + denied
        hub.delete("%s/%s" % (CSRS, denied))  # the agent asks again
        newest_csr(lab, known | {denied})
        accept(lab)
        wait_for_verdict(lab, "ocm", "member2", "healthy")

    def test_a_bootstrap_kubeconfig_naming_a_wrong_hub_address(self, lab):
        known = csr_names(lab)
        with Patched(lab.api("member2"), OCM_BOOTSTRAP, "kubeconfig", set_cluster(server="https://127.0.0.1:1")):
            found = wait_for_verdict(lab, "ocm", "member2", "hub_unreachable_from_agent")
            dropped(lab)
        assert found["evidence"][0]["object"] == "Secret/open-cluster-management-agent/bootstrap-hub-kubeconfig"
        newest_csr(lab, known)
        accept(lab)
        wait_for_verdict(lab, "ocm", "member2", "healthy")

    def test_a_member_whose_api_server_stopped(self, lab):
        member_stopped_is_unreachable(lab, "ocm")

    def test_a_name_the_hub_does_not_know(self, lab):
        not_registered(lab, "ocm")

    def test_another_clusters_credentials(self, lab):
        another_clusters_credentials(lab, "ocm")

    def test_a_pull_member_without_its_agent_kubeconfigs(self, lab, simulations):
        agent = agent_of(simulations, sim_klusterlet.SimulatedKlusterlet, "member2")
        without_agent_kubeconfigs(lab, "ocm", agent, [OCM_BOOTSTRAP, OCM_HUB_SECRET])
