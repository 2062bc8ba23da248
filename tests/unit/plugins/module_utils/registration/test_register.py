"""Unit tests for module_utils/register.py (and the pull-registration facts of karmada.py / ocm.py).

The member, the hub (admin) and the hub as the bootstrap token sees it are in-memory fakes; a test CA
signs the agent CSRs the way the hub's kube-apiserver-client signer does.
"""

import base64
import copy
import datetime
import json

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, register, registrar
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.registration import KarmadaRegistration
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.registration import OcmRegistration
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import NAMESPACE, SECRET
from conftest import FakeCluster
from fake_ca import FakeCA
from register_fakes import (AGENT_SECRET_PATH, CLUSTER, HUB_URL, OTHER_TOKEN, SA_TOKEN, TOKEN, BootstrapHub, FakeDiscovery, connector,
                            held_after_delete, joined, reg, registration_of, secret_text)

UTC = datetime.timezone.utc


@pytest.fixture(scope="module")
def ca():
    return FakeCA()


@pytest.fixture
def pin(ca):
    return bootstrap.ca_pin(ca.pem)


def assert_no_secrets(result, *values):
    text = json.dumps(result)
    for value in values:
        assert value not in text
    assert "PRIVATE KEY" not in text


# --- options -------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine, name, refusal", [
    ("karmada", "a" * 48, None), ("karmada", "a" * 49, "invalid cluster name"), ("ocm", "a" * 63, None),
    ("ocm", "a" * 64, "invalid cluster name"), ("ocm", "Member1", "invalid cluster name"),
    ("karmada", "-m", "invalid cluster name"), ("ocm", "", "invalid cluster name"), ("karmada", "m.1", "invalid cluster name"),
    # its agent identity would be karmadactl's all-powerful helper, which csr_accept refuses too
    ("karmada", "rbac-generator", "refusing cluster name 'rbac-generator': system:karmada:agent:rbac-generator is "
                                  "karmadactl's all-powerful helper identity"),
    ("ocm", "rbac-generator", None),
])
def test_cluster_names(engine, name, refusal):
    if refusal is None:
        registration_of(engine, name, state="absent")
    else:
        with pytest.raises(FleetError, match=refusal):
            registration_of(engine, name, state="absent")


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(token=None), "needs hub_apiserver and token"),
    (dict(hub_apiserver=None), "needs hub_apiserver and token"),
    (dict(hub_apiserver="http://hub:6443"), "https://"),
    (dict(token=SA_TOKEN), "a bootstrap token must have the form"),
    (dict(unsafe_skip_ca_verification=False), "no CA pin given"),
    (dict(ca_cert_hashes=["md5:00"]), "sha256:<64 hexadecimal digits>"),
    (dict(csr_wait_timeout=0), "csr_wait_timeout must be at least 1"),
    (dict(cert_expiration_seconds=60), "cert_expiration_seconds must be at least 600"),
    (dict(renew_before=-1), "renew_before must be at least 0"),
    (dict(wait_sleep=0), "wait_sleep must be at least 1"),
    (dict(api_endpoint="ftp://x"), "invalid api_endpoint"),
])
def test_registration_refuses(kwargs, fragment):
    with pytest.raises(FleetError) as exc_info:
        reg(**kwargs)
    assert fragment in exc_info.value.msg
    assert SA_TOKEN not in exc_info.value.msg and TOKEN not in exc_info.value.msg


def test_registration_normalizes():
    request = reg(hub_apiserver="hub.example:6443", ca_cert_hashes=["SHA256:" + "AB" * 32], renew_before=7)
    assert request.hub_apiserver == HUB_URL and request.ca_pins == ["sha256:" + "ab" * 32]
    assert request.renew_before == datetime.timedelta(days=7)
    assert reg("ocm").token == SA_TOKEN  # OCM also takes ServiceAccount tokens
    absent = registration_of("karmada", CLUSTER, state="absent")  # no token, hub or pin needed
    assert absent.hub_apiserver is None and absent.ca_pins == []


# --- Karmada facts -----------------------------------------------------------------------------------


def test_agent_hub_objects_least_privilege():
    objects = karmada.agent_hub_objects("m2")
    refs = [kind.ref(o["metadata"]["name"], o["metadata"].get("namespace")) for kind, o in objects]
    assert refs == [
        "Namespace/karmada-cluster", "Namespace/karmada-es-m2",
        "ClusterRole/system:karmada:m2:agent", "ClusterRoleBinding/system:karmada:m2:agent",
        "Role/karmada-cluster/system:karmada:m2:agent-secret", "RoleBinding/karmada-cluster/system:karmada:m2:agent-secret",
        "Role/karmada-es-m2/system:karmada:m2:agent-work", "RoleBinding/karmada-es-m2/system:karmada:m2:agent-work",
    ]
    cluster_wide, in_credential_namespace = objects[2][1]["rules"], objects[4][1]["rules"]
    assert not [r for r in cluster_wide if {"secrets", "works", "leases", "*"} & set(r["resources"])]
    # every verb that can name an object names the agent's own; create, list and watch only where they are needed
    for rule in cluster_wide + in_credential_namespace:
        named = set(rule["verbs"]) & {"get", "update", "patch", "delete"}
        if {"clusters", "clusters/status", "secrets", "leases"} & set(rule["resources"]) and named:
            assert rule["resourceNames"] in (["m2"], ["m2", "m2-impersonator"]), rule
        if "resourceNames" not in rule:
            assert not (set(rule["verbs"]) - {"create", "list", "watch"}) or rule["resources"][0] not in (
                "clusters", "clusters/status", "secrets", "leases"), rule
    assert in_credential_namespace == [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["m2", "m2-impersonator"],
         "verbs": ["get", "patch", "update"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["m2"], "verbs": ["get", "update"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
    ]
    assert [r["verbs"] for r in cluster_wide if r["resources"] == ["clusters"]] == [
        ["get", "update", "patch", "delete"], ["create", "list", "watch"]]
    for kind, binding in objects[3::2]:
        assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:karmada:agent:m2"}]
        assert binding["roleRef"]["name"] == binding["metadata"]["name"]
        assert binding["roleRef"]["kind"] == ("ClusterRole" if kind is resources.CLUSTER_ROLE_BINDING else "Role")


# --- Karmada present -----------------------------------------------------------------------------------


@pytest.fixture
def cluster_fakes(ca):
    member, hub = FakeCluster("member"), FakeCluster("hub")
    return member, hub, BootstrapHub(ca)


def register_karmada(member, hub, bootstrap_hub, request, discovery, check_mode=False, seen=None):
    return KarmadaRegistration(member, hub, request, check_mode, connect=connector(bootstrap_hub, seen), discover_hub=discovery).present()


def test_karmada_warns_when_the_issued_certificate_is_already_due(ca, pin):
    """Kubernetes 1.22 and newer honour the CSR's expirationSeconds, capped by the signer: a certificate issued for less
    than renew_before would be renewed by every run, and the registration says so."""
    capped = register_karmada(FakeCluster("member"), FakeCluster("hub"), BootstrapHub(ca, days=10), reg(ca_cert_hashes=[pin]),
                              FakeDiscovery(ca))
    assert capped["changed"] is True
    (warning,) = [w for w in capped["warnings"] if "renew_before" in w]
    assert warning.startswith("the hub issued the agent certificate of cluster member1 until ")
    assert "asked for 31536000 seconds" in warning and "within renew_before (30 days)" in warning and "every run" in warning
    full = register_karmada(FakeCluster("member"), FakeCluster("hub"), BootstrapHub(ca), reg(ca_cert_hashes=[pin]),
                            FakeDiscovery(ca))
    assert full["changed"] is True and not [w for w in full["warnings"] if "renew_before" in w]


def test_karmada_fresh_registration(ca, pin, cluster_fakes):
    member, hub, bootstrap_hub = cluster_fakes
    discovery, seen = FakeDiscovery(ca), []
    result = register_karmada(member, hub, bootstrap_hub, reg(ca_cert_hashes=[pin], cert_expiration_seconds=86400),
                              discovery, seen=seen)
    assert result["changed"] is True and result["reason"].startswith("there is no karmada-system/karmada-kubeconfig")
    assert discovery.calls[0]["ca_pins"] == [pin] and discovery.calls[0]["allow_unsigned"] is False
    assert seen == [(HUB_URL, ca.pem, TOKEN)]  # the CSR goes to hub_apiserver with the token, trusting the discovered CA
    (body, query), = bootstrap_hub.posted
    assert query == {}
    assert body["metadata"]["name"] == result["csr_name"] and body["metadata"]["labels"] == {"karmada.io/system": "true"}
    assert result["csr_name"].startswith("member1-") and len(result["csr_name"]) == len("member1-") + 5
    assert body["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client"
    assert body["spec"]["usages"] == ["digital signature", "key encipherment", "client auth"]
    assert body["spec"]["expirationSeconds"] == 86400
    request = x509.load_pem_x509_csr(base64.b64decode(body["spec"]["request"]))
    assert [a.value for a in request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == ["system:karmada:agent:member1"]
    assert [a.value for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:karmada:agents"]
    # the member's Secret: the agent kubeconfig with server, CA, the issued certificate and its key
    stored = member.objects[AGENT_SECRET_PATH]
    assert stored["type"] == "Opaque" and stored["metadata"]["labels"] == {"karmada.io/system": "true"}
    assert member.objects[NAMESPACE.path(None, "karmada-system")]["metadata"]["labels"] == {"karmada.io/system": "true"}
    config = yaml.safe_load(secret_text(member, AGENT_SECRET_PATH, "karmada-kubeconfig"))
    assert config["current-context"] == "member1@karmada-apiserver"
    assert config["clusters"][0]["name"] == "karmada-apiserver" and config["users"][0]["name"] == "member1"
    parts = pki.read_kubeconfig(yaml.safe_dump(config))
    assert parts["server"] == HUB_URL and parts["ca_pem"] == ca.pem
    assert pki.client_certificate_problem(parts["client_cert_pem"], parts["client_key_pem"], ca.pem,
                                          "system:karmada:agent:member1", "system:karmada:agents") is None
    # hub RBAC first, then the CSR, then the member
    assert result["changes"][:2] == ["hub Namespace/karmada-cluster: created", "hub Namespace/karmada-es-member1: created"]
    assert result["changes"][-3:] == ["hub CertificateSigningRequest/%s: created" % result["csr_name"],
                                      "member Namespace/karmada-system: created",
                                      "member Secret/karmada-system/karmada-kubeconfig: created"]
    assert len(hub.objects) == 8
    assert result["ca_pins"] == [pin] and result["hub_server"] == HUB_URL and result["agent_user"] == "system:karmada:agent:member1"
    assert result["certificate_expiration"] == pki.describe(pki.load_certificates(parts["client_cert_pem"])[0])["not_after"]
    assert [d["before_header"] for d in result["diff"]][-1] == "member Secret/karmada-system/karmada-kubeconfig"
    assert_no_secrets(result, TOKEN, parts["client_key_pem"].splitlines()[1])


def test_karmada_agent_objects_are_karmadactls():
    request = reg(cluster_name="m2", agent_image="mirror/karmada-agent:v1.14.0", agent_replicas=2, provider="aws",
                  region="eu-west-1", zones=["a", "b"], proxy_server_address="socks5://gw:1080")
    manifests = karmada.agent_objects(request, "https://m2:6443")
    assert ["%s/%s" % (m["kind"], m["metadata"]["name"]) for m in manifests] == [
        "Namespace/karmada-system", "ServiceAccount/karmada-agent-sa", "ClusterRole/karmada-agent",
        "ClusterRoleBinding/karmada-agent", "Deployment/karmada-agent"]
    deployment = manifests[-1]
    assert deployment["spec"]["replicas"] == 2 and deployment["metadata"]["namespace"] == "karmada-system"
    pod = deployment["spec"]["template"]["spec"]
    container, = pod["containers"]
    assert container["image"] == "mirror/karmada-agent:v1.14.0" and pod["serviceAccountName"] == "karmada-agent-sa"
    assert pod["volumes"] == [{"name": "kubeconfig", "secret": {"secretName": "karmada-kubeconfig"}}]
    for argument in ("--cluster-name=m2", "--cluster-api-endpoint=https://m2:6443", "--cluster-provider=aws",
                     "--cluster-region=eu-west-1", "--cluster-zones=a,b", "--proxy-server-address=socks5://gw:1080",
                     "--karmada-kubeconfig=/etc/kubeconfig/karmada-kubeconfig"):
        assert argument in container["command"]
    assert all(m["metadata"]["labels"] == {"karmada.io/system": "true"} for m in manifests[:4])


class DryRunMember(FakeCluster):
    """A member that answers server-side dry runs (what objects.apply sends first) like an API server."""

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        if method == "PATCH" and (query or {}).get("dryRun") == "All":
            current = self.objects.get(path)
            if current is None:
                raise NotFound("not found", 404)
            return dict(copy.deepcopy(current), **{k: v for k, v in body.items() if k != "metadata"})
        return super().request(method, path, body, query, content_type, timeout)


def test_karmada_deploys_the_agent_after_the_registration(ca, pin):
    member, hub, bootstrap_hub = DryRunMember("member"), FakeCluster("hub"), BootstrapHub(ca)
    registered = register_karmada(member, hub, bootstrap_hub, reg(ca_cert_hashes=[pin], deploy_agent=True), FakeDiscovery(ca))
    result = KarmadaRegistration(member, hub, reg(ca_cert_hashes=[pin], deploy_agent=True, region="r1")).agent(registered)
    assert result["changed"] is True
    assert result["changes"][-4:] == ["member ServiceAccount/karmada-system/karmada-agent-sa: created",
                                      "member ClusterRole/karmada-agent: created",
                                      "member ClusterRoleBinding/karmada-agent: created",
                                      "member Deployment/karmada-system/karmada-agent: created"]
    deployment = member.objects[resources.DEPLOYMENT.path("karmada-system", "karmada-agent")]
    assert "--cluster-api-endpoint=https://fake" in deployment["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--cluster-region=r1" in deployment["spec"]["template"]["spec"]["containers"][0]["command"]


def test_karmada_marks_the_cluster_its_agent_created_reading_it_once():
    """The run that waits for the Cluster records its cluster id there (what cluster_prune trusts) from one read."""
    hub = FakeCluster("hub")
    request = reg(wait=True)
    hub.add(karmada.CLUSTER, {"metadata": {"name": request.cluster_name}, "spec": {"id": "id-1"}})
    registration = KarmadaRegistration(FakeCluster("member"), hub, request)
    registration.start()
    registration._mark(hub, "id-1")
    path = karmada.CLUSTER.path(None, request.cluster_name)
    assert [call[0] for call in hub.calls if call[1] == path] == ["GET", "PATCH"]
    assert hub.objects[path]["metadata"]["annotations"]
    # another cluster's id: nothing written
    hub.calls.clear()
    registration._mark(hub, "id-2")
    assert [call[0] for call in hub.calls if call[1] == path] == ["GET"]


def test_karmada_wait_needs_the_agent_or_the_hub(ca):
    member = FakeCluster("member")
    with pytest.raises(FleetError, match="set karmada.deploy_agent or hub"):
        register.run(member, None, reg(wait=True))
    assert member.objects == {}


def test_karmada_agent_wait_timeout_names_what_the_run_wrote(ca, pin):
    member, hub = DryRunMember("member"), FakeCluster("hub")
    registered = register_karmada(member, hub, BootstrapHub(ca), reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))
    with pytest.raises(WaitTimeout) as exc_info:
        KarmadaRegistration(member, hub, reg(ca_cert_hashes=[pin], deploy_agent=True, wait=True, wait_timeout=0)).agent(registered)
    details = exc_info.value.details
    assert "Deployment/karmada-system/karmada-agent" in exc_info.value.msg and details["last_seen"]
    assert details["changed"] is True
    assert "member Secret/karmada-system/karmada-kubeconfig: created" in details["changes"]
    assert "member Deployment/karmada-system/karmada-agent: created" in details["changes"]


def test_karmada_rerun_keeps_a_good_certificate_without_the_token(ca, pin, cluster_fakes):
    member, hub, bootstrap_hub = cluster_fakes
    register_karmada(member, hub, bootstrap_hub, reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))
    before = json.dumps(member.objects, sort_keys=True)
    never = FakeDiscovery(ca, errors=[AssertionError("no discovery expected")])
    result = register_karmada(member, hub, BootstrapHub(ca), reg(ca_cert_hashes=[pin], token=OTHER_TOKEN), never)
    assert result["changed"] is False and result["reason"] is None and result["csr_name"] is None
    assert never.calls == [] and json.dumps(member.objects, sort_keys=True) == before
    assert result["changes"][-1] == "member Secret/karmada-system/karmada-kubeconfig: unchanged"
    assert result["ca_pins"] == [pin] and result["certificate_expiration"]


def test_karmada_without_hub_credentials_touches_member_only(ca, cluster_fakes):
    member, dummy, bootstrap_hub = cluster_fakes
    result = register_karmada(member, None, bootstrap_hub, reg(), FakeDiscovery(ca))
    assert result["changed"] and not any(c.startswith(("ClusterRole", "Role")) for c in result["changes"])
    assert AGENT_SECRET_PATH in member.objects


@pytest.mark.parametrize("change, fragment", [
    (dict(renew_before=400), "within the renewal window"),
])
def test_karmada_requests_a_new_certificate_when_the_stored_one_does_not_fit(ca, pin, cluster_fakes, change, fragment):
    member, hub, bootstrap_hub = cluster_fakes
    register_karmada(member, None, bootstrap_hub, reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))
    result = register_karmada(member, None, bootstrap_hub, reg(**dict(dict(ca_cert_hashes=[pin]), **change)), FakeDiscovery(ca))
    assert fragment in result["reason"]
    assert result["changed"] and len(bootstrap_hub.posted) == 2
    assert "member Secret/karmada-system/karmada-kubeconfig: updated" in result["changes"]


def test_karmada_rebootstraps_to_a_moved_hub_keeping_the_certificate(ca, pin, cluster_fakes):
    """A new hub address: the agent kubeconfig is written again with it, the certificate kept (no CSR)."""
    member, hub, bootstrap_hub = cluster_fakes
    first = register_karmada(member, None, bootstrap_hub, reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))
    moved = reg(ca_cert_hashes=[pin], hub_apiserver="https://hub.moved:6443")
    before = dict(member.objects)
    preview = register_karmada(member, None, bootstrap_hub, moved, FakeDiscovery(ca), check_mode=True)
    assert preview["changed"] and member.objects == before
    assert preview["hub_change"] == {"address": {"from": HUB_URL, "to": "https://hub.moved:6443"}}
    result = register_karmada(member, None, bootstrap_hub, moved, FakeDiscovery(ca))
    assert result["hub_change"] == preview["hub_change"] and "points at %s, not https://hub.moved:6443" % HUB_URL in result["reason"]
    assert result["changes"] == ["member Secret/karmada-system/karmada-kubeconfig: updated"]
    assert len(bootstrap_hub.posted) == 1 and result["csr_name"] is None
    parts = pki.read_kubeconfig(secret_text(member, AGENT_SECRET_PATH, karmada.AGENT_KUBECONFIG_SECRET))
    assert parts["server"] == "https://hub.moved:6443" and result["certificate_expiration"] == first["certificate_expiration"]
    again = register_karmada(member, None, bootstrap_hub, moved, FakeDiscovery(ca))
    assert again["changed"] is False and again["hub_change"] is None


def test_karmada_new_hub_ca_that_did_not_issue_the_certificate_needs_a_new_one(ca, pin, cluster_fakes):
    member, hub, bootstrap_hub = cluster_fakes
    register_karmada(member, None, bootstrap_hub, reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))
    other = FakeCA()
    other_pin = bootstrap.ca_pin(other.pem)
    bootstrap_hub.ca = other
    result = register_karmada(member, None, bootstrap_hub, reg(ca_cert_hashes=[other_pin]), FakeDiscovery(other))
    assert result["hub_change"] == {"ca": {"from": [pin], "to": [other_pin]}}
    assert len(bootstrap_hub.posted) == 2 and result["csr_name"]


class BundleDiscovery(FakeDiscovery):
    """Discovery of a hub whose cluster-info publishes a bundle of CAs."""

    def __init__(self, *cas):
        super().__init__(cas[0])
        self.bundle = "".join(ca.pem for ca in cas)

    def __call__(self, server_url, token, **kwargs):
        self.calls.append(dict(kwargs, server_url=server_url, token=token))
        return {"server": self.server, "ca_pem": self.bundle, "ca_pins": bootstrap.pins_of_bundle(self.bundle), "kubeconfig": "..."}


def test_karmada_trusts_a_new_hub_ca_bundle_keeping_the_certificate(ca, pin, cluster_fakes):
    """A hub CA change: with the pins of both CAs the member trusts the bundle the hub publishes, with the same
    certificate; a re-run changes nothing."""
    member, hub, bootstrap_hub = cluster_fakes
    register_karmada(member, None, bootstrap_hub, reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))
    new_ca = FakeCA()
    both = [pin, bootstrap.ca_pin(new_ca.pem)]
    untouched = register_karmada(member, None, bootstrap_hub, reg(ca_cert_hashes=both), FakeDiscovery(ca))
    assert untouched["changed"] is False and untouched["hub_change"] is None  # the hub still publishes the old CA only
    result = register_karmada(member, None, bootstrap_hub, reg(ca_cert_hashes=both), BundleDiscovery(ca, new_ca))
    assert result["hub_change"] == {"ca": {"from": [pin], "to": both}}
    assert result["changes"] == ["member Secret/karmada-system/karmada-kubeconfig: updated"] and len(bootstrap_hub.posted) == 1
    parts = pki.read_kubeconfig(secret_text(member, AGENT_SECRET_PATH, karmada.AGENT_KUBECONFIG_SECRET))
    assert bootstrap.pins_of_bundle(parts["ca_pem"]) == both
    again = register_karmada(member, None, bootstrap_hub, reg(ca_cert_hashes=both), BundleDiscovery(ca, new_ca))
    assert again["changed"] is False and again["hub_change"] is None


def test_ocm_rejoins_for_a_new_hub_ca_bundle(ca, pin):
    member = FakeCluster("member")
    joined(member, ca)
    new_ca = FakeCA()
    both = [pin, bootstrap.ca_pin(new_ca.pem)]
    result = OcmRegistration(member, None, reg("ocm", ca_cert_hashes=both), discover_hub=BundleDiscovery(ca, new_ca)).present()
    assert result["hub_change"] == {"ca": {"from": [pin], "to": both}} and result["joined"] is False
    parts = pki.read_kubeconfig(secret_text(member, BOOTSTRAP_PATH, "kubeconfig"))
    assert bootstrap.pins_of_bundle(parts["ca_pem"]) == both


def test_karmada_agent_rolls_for_a_moved_hub(ca, pin, cluster_fakes):
    """The hub fingerprint annotation of the agent's pod template follows the kubeconfig it reads at start."""
    member, hub, bootstrap_hub = cluster_fakes

    def run(url):
        registration = KarmadaRegistration(member, None, reg(ca_cert_hashes=[pin], hub_apiserver=url, deploy_agent=True),
                                           connect=connector(bootstrap_hub, None), discover_hub=FakeDiscovery(ca))
        return registration.agent(registration.present())
    run(HUB_URL)
    deployment_path = "/apis/apps/v1/namespaces/karmada-system/deployments/karmada-agent"
    first = member.objects[deployment_path]["spec"]["template"]["metadata"]["annotations"]
    assert first[karmada.HUB_ANNOTATION] == karmada.hub_fingerprint(HUB_URL, ca.pem)
    result = run("https://hub.moved:6443")
    assert "member Deployment/karmada-system/karmada-agent: updated" in result["changes"]
    second = member.objects[deployment_path]["spec"]["template"]["metadata"]["annotations"]
    assert second[karmada.HUB_ANNOTATION] == karmada.hub_fingerprint("https://hub.moved:6443", ca.pem)
    assert second[karmada.CERTIFICATE_ANNOTATION] == first[karmada.CERTIFICATE_ANNOTATION]
    assert run("https://hub.moved:6443")["changed"] is False


def test_karmada_refuses_to_replace_another_clusters_agent(ca, pin, cluster_fakes):
    member, hub, bootstrap_hub = cluster_fakes
    register_karmada(member, None, bootstrap_hub, reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))
    discovery = FakeDiscovery(ca)
    with pytest.raises(FleetError) as exc_info:
        register_karmada(member, hub, bootstrap_hub, reg(cluster_name="member9"), discovery)
    assert exc_info.value.msg == ("the member's agent kubeconfig belongs to system:karmada:agent:member1, not to cluster "
                                  "member9: refusing to replace another cluster's agent (unregister member1 first)")
    assert discovery.calls == [] and hub.objects == {} and len(bootstrap_hub.posted) == 1


def test_credentials_problem_checks_the_pin_and_the_parts(ca, pin):
    cert, key = ca.client("system:karmada:agent:member1", ["system:karmada:agents"])
    args = ("system:karmada:agent:member1", "system:karmada:agents")
    assert registrar.credentials_problem(reg(ca_cert_hashes=[pin]), HUB_URL, ca.pem, cert, key, *args) is None
    assert registrar.credentials_problem(reg(), HUB_URL, ca.pem, cert, key, *args) is None  # unsafe: no pin to match
    wrong = "sha256:" + "0" * 64
    assert registrar.credentials_problem(reg(ca_cert_hashes=[wrong]), HUB_URL, ca.pem, cert, key, *args) == (
        "the stored hub CA (%s) is none of ca_cert_hashes" % pin)
    assert "lack the hub CA" in registrar.credentials_problem(reg(), HUB_URL, None, cert, key, *args)
    assert "no PEM certificate" in registrar.credentials_problem(reg(), HUB_URL, "junk", cert, key, *args)


def test_karmada_renews_near_expiry(ca, pin, cluster_fakes, monkeypatch):
    member, hub, bootstrap_hub = cluster_fakes
    first = register_karmada(member, None, bootstrap_hub, reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))
    expires = datetime.datetime.strptime(first["certificate_expiration"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    monkeypatch.setattr(registrar, "utc_now", lambda: expires - datetime.timedelta(days=31))
    assert register_karmada(member, None, bootstrap_hub, reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))["changed"] is False
    monkeypatch.setattr(registrar, "utc_now", lambda: expires - datetime.timedelta(days=29))
    renewed = register_karmada(member, None, BootstrapHub(ca), reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))
    assert renewed["changed"] and "within the renewal window" in renewed["reason"]


def test_karmada_force_internal_endpoint_lookup(ca, cluster_fakes):
    member, dummy, bootstrap_hub = cluster_fakes
    seen = []
    result = register_karmada(member, None, bootstrap_hub, reg(force_internal_endpoint_lookup=True),
                              FakeDiscovery(ca, server="https://10.0.0.1:6443"), seen=seen)
    assert seen[0][0] == result["hub_server"] == "https://10.0.0.1:6443"
    assert pki.read_kubeconfig(secret_text(member, AGENT_SECRET_PATH, "karmada-kubeconfig"))["server"] == "https://10.0.0.1:6443"
    # on re-runs the stored server is not compared with hub_apiserver
    again = register_karmada(member, None, bootstrap_hub, reg(force_internal_endpoint_lookup=True), FakeDiscovery(ca))
    assert again["changed"] is False


def test_karmada_check_mode_writes_nothing(ca, cluster_fakes):
    member, hub, bootstrap_hub = cluster_fakes
    result = register_karmada(member, hub, bootstrap_hub, reg(), FakeDiscovery(ca), check_mode=True)
    assert result["changed"] is True and result["certificate_expiration"] is None
    assert member.objects == {} and hub.objects == {} and bootstrap_hub.objects == {}
    (body, query), = bootstrap_hub.posted  # the CSR is a server-side dry run: token and RBAC still checked
    assert query == {"dryRun": "All"} and body["metadata"]["name"] == result["csr_name"]
    assert result["changes"][-1] == "member Secret/karmada-system/karmada-kubeconfig: created"
    assert all(query.get("dryRun") == "All" for method, path, query in member.calls + hub.calls if method != "GET")


def test_karmada_denied_csr_fails_fast_and_leaves_the_member_alone(ca, cluster_fakes):
    member = cluster_fakes[0]
    with pytest.raises(FleetError) as exc_info:
        register_karmada(member, None, BootstrapHub(ca, verdict="deny"), reg(), FakeDiscovery(ca))
    assert "was denied (Nope: not this one)" in exc_info.value.msg and "member was not changed" in exc_info.value.msg
    assert exc_info.value.details["csr_name"].startswith("member1-")
    assert member.objects == {}


def test_karmada_csr_wait_timeout_says_how_to_approve(ca, cluster_fakes):
    member = cluster_fakes[0]
    with pytest.raises(FleetError) as exc_info:
        register_karmada(member, None, BootstrapHub(ca, verdict="pending"), reg(csr_wait_timeout=1), FakeDiscovery(ca))
    msg = exc_info.value.msg
    assert "got no certificate within 1s (not approved yet)" in msg and "multicluster.fleet.csr_accept" in msg
    assert "agent kubeconfig was not changed" in msg and "the next run waits for this CSR" in msg
    assert exc_info.value.details["csr_name"] in msg
    # only the CSR in flight is kept, for the next run to resume
    assert list(member.objects) == [SECRET.path("kube-system", "multicluster-fleet-registration-member1")]


def test_karmada_failure_after_the_hub_rbac_and_the_csr_reports_them(ca, cluster_fakes):
    member, hub = cluster_fakes[:2]
    bootstrap_hub = BootstrapHub(ca, verdict="pending")
    with pytest.raises(FleetError) as exc_info:
        register_karmada(member, hub, bootstrap_hub, reg(csr_wait_timeout=1), FakeDiscovery(ca))
    details, name = exc_info.value.details, exc_info.value.details["csr_name"]
    written = [line for line in details["changes"] if not line.endswith(": unchanged")]
    assert details["changed"] is True and written == details["changes"]
    assert "hub ClusterRole/system:karmada:member1:agent: created" in written
    assert written[-1] == "hub CertificateSigningRequest/%s: created" % name
    assert exc_info.value.msg.endswith("; written before the failure: " + ", ".join(written))
    # the next run resumes the same CSR and writes nothing else: unchanged, and it says which CSR it resumed
    with pytest.raises(FleetError) as again:
        register_karmada(member, hub, bootstrap_hub, reg(csr_wait_timeout=1), FakeDiscovery(ca))
    assert again.value.details["csr_name"] == name and "written before" not in again.value.msg
    plan = register_karmada(member, hub, bootstrap_hub, reg(), FakeDiscovery(ca), check_mode=True)
    assert plan["csr_name"] == name and plan["csr_resumed"] is True


def test_karmada_refuses_a_certificate_from_another_ca(ca, cluster_fakes):
    member = cluster_fakes[0]
    with pytest.raises(FleetError, match="cannot be used: the certificate was not issued by the stored hub CA"):
        register_karmada(member, None, BootstrapHub(FakeCA("rogue")), reg(), FakeDiscovery(ca))
    assert member.objects == {}


def test_discovery_waits_for_the_signer_then_gives_up(ca):
    missing = bootstrap.MissingSignature("no signature for token id abcdef in kube-public/cluster-info: the token is "
                                         "unknown, expired or not allowed to sign")
    naps = []
    discovery = FakeDiscovery(ca, errors=[missing, missing])
    found = registrar.discover(reg(discovery_timeout=30), discovery, sleep=naps.append)
    assert found["ca_pem"] == ca.pem and len(discovery.calls) == 3 and naps == [2.0, 2.0]
    with pytest.raises(FleetError) as exc_info:
        registrar.discover(reg(discovery_timeout=0), FakeDiscovery(ca, errors=[missing]), sleep=naps.append)
    assert "unknown, expired or not allowed to sign (checked for 0s" in exc_info.value.msg
    with pytest.raises(FleetError, match="does not verify"):  # other discovery failures are not retried
        registrar.discover(reg(), FakeDiscovery(ca, errors=[FleetError("does not verify")]), sleep=naps.append)


# --- OCM ---------------------------------------------------------------------------------------------------


class NoKlusterletApi(FakeCluster):
    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        if path.startswith(ocm.KLUSTERLET.path()):
            raise NotFound("404", 404)
        return super().request(method, path, body, query, content_type, timeout)


BOOTSTRAP_PATH = SECRET.path(ocm.AGENT_NAMESPACE, ocm.BOOTSTRAP_SECRET)


def test_ocm_join_writes_bootstrap_kubeconfig_and_klusterlet(ca, pin):
    member = FakeCluster("member")
    discovery = FakeDiscovery(ca)
    result = OcmRegistration(member, None, reg("ocm", ca_cert_hashes=[pin], api_endpoint="https://10.0.0.7:6443"), discover_hub=discovery).present()
    assert discovery.calls[0]["allow_unsigned"] is True and discovery.calls[0]["token"] == SA_TOKEN
    assert result["changed"] and result["joined"] is False and result["hub_server"] == HUB_URL
    config = yaml.safe_load(secret_text(member, BOOTSTRAP_PATH, "kubeconfig"))
    assert config["current-context"] == "bootstrap" and config["users"] == [{"name": "bootstrap", "user": {"token": SA_TOKEN}}]
    assert config["clusters"][0] == {"name": "hub", "cluster": {"server": HUB_URL, "certificate-authority-data": pki.b64(ca.pem)}}
    klusterlet = member.objects[ocm.KLUSTERLET.path(name="klusterlet")]
    assert klusterlet["spec"] == {"clusterName": CLUSTER, "namespace": "open-cluster-management-agent",
                                  "externalServerURLs": [{"url": "https://10.0.0.7:6443"}],
                                  "registrationConfiguration": {"registrationDriver": {"authType": "csr"}}}
    assert result["changes"] == ["member Namespace/open-cluster-management: created",
                                 "member Namespace/open-cluster-management-agent: created",
                                 "member Secret/open-cluster-management-agent/bootstrap-hub-kubeconfig: created",
                                 "member Klusterlet/klusterlet: created"]
    assert_no_secrets(result, SA_TOKEN)
    again = OcmRegistration(member, None, reg("ocm", ca_cert_hashes=[pin], api_endpoint="https://10.0.0.7:6443"), discover_hub=FakeDiscovery(ca)).present()
    assert again["changed"] is False


def test_ocm_join_writes_the_klusterlet_whole_with_the_installers_fields(ca, pin):
    member = FakeCluster("member")
    installer = {"registrationImagePullSpec": "quay.io/ocm/registration:v1", "imagePullSpec": "quay.io/ocm/operator:v1",
                 "resourceRequirement": {"type": "Default", "resourceRequirements": None},
                 "registrationConfiguration": {"clientCertExpirationSeconds": 86400}, "deployOption": {"other": 1}}
    request = reg("ocm", ca_cert_hashes=[pin], klusterlet_mode="Singleton", klusterlet_spec=installer)
    OcmRegistration(member, None, request, discover_hub=FakeDiscovery(ca)).present()
    spec = member.objects[ocm.KLUSTERLET.path(name="klusterlet")]["spec"]
    assert spec == {"clusterName": CLUSTER, "namespace": "open-cluster-management-agent",
                    "externalServerURLs": [{"url": "https://fake"}],
                    "registrationConfiguration": {"clientCertExpirationSeconds": 86400,
                                                  "registrationDriver": {"authType": "csr"}},
                    "deployOption": {"other": 1, "mode": "Singleton"},
                    "registrationImagePullSpec": "quay.io/ocm/registration:v1", "imagePullSpec": "quay.io/ocm/operator:v1",
                    "resourceRequirement": {"type": "Default", "resourceRequirements": None}}
    assert installer == {"registrationImagePullSpec": "quay.io/ocm/registration:v1", "imagePullSpec": "quay.io/ocm/operator:v1",
                         "resourceRequirement": {"type": "Default", "resourceRequirements": None},
                         "registrationConfiguration": {"clientCertExpirationSeconds": 86400},
                         "deployOption": {"other": 1}}  # the option itself is left as given
    assert OcmRegistration(member, None, request, discover_hub=FakeDiscovery(ca)).present()["changed"] is False


@pytest.mark.parametrize("engine, spec, message", [
    ("ocm", {"clusterName": "member2"}, "klusterlet_spec must not set clusterName: the registration writes them"),
    ("ocm", {"namespace": "x", "externalServerURLs": []}, "must not set externalServerURLs, namespace:"),
    ("ocm", {"deployOption": {"mode": "Hosted"}}, "must not set deployOption.mode:"),
    ("ocm", {"registrationConfiguration": {"registrationDriver": {}}}, "must not set registrationConfiguration.registrationDriver:"),
    ("karmada", {"imagePullSpec": "x"}, "the ocm options [(]klusterlet_spec[)] apply to engine ocm only"),
])
def test_klusterlet_spec_leaves_the_registration_fields_to_the_registration(engine, spec, message):
    with pytest.raises(FleetError, match=message):
        reg(engine, klusterlet_spec=spec)


def test_ocm_joined_member_keeps_its_bootstrap_secret_for_a_new_token(ca, pin):
    member = FakeCluster("member")
    OcmRegistration(member, None, reg("ocm", ca_cert_hashes=[pin]), discover_hub=FakeDiscovery(ca)).present()
    joined(member, ca)
    never = FakeDiscovery(ca, errors=[AssertionError("no discovery expected")])
    result = OcmRegistration(member, None, reg("ocm", ca_cert_hashes=[pin], token=OTHER_TOKEN), discover_hub=never).present()
    assert result["changed"] is False and result["joined"] is True and result["reason"] is None
    assert result["certificate_expiration"] and never.calls == []
    assert OTHER_TOKEN not in secret_text(member, BOOTSTRAP_PATH, "kubeconfig")


@pytest.mark.parametrize("stored_cluster, stored_server, fragment", [
    ("member2", HUB_URL, "is for cluster member2, not member1"),  # e.g. a Klusterlet renamed by hand
    (CLUSTER, "https://old-hub:6443", "points at https://old-hub:6443"),
])
def test_ocm_rejoins_when_the_stored_certificate_does_not_fit(ca, stored_cluster, stored_server, fragment):
    member = FakeCluster("member")
    joined(member, ca, stored_cluster, stored_server)
    result = OcmRegistration(member, None, reg("ocm", token=OTHER_TOKEN), discover_hub=FakeDiscovery(ca)).present()
    assert fragment in result["reason"] and result["joined"] is False
    assert OTHER_TOKEN in secret_text(member, BOOTSTRAP_PATH, "kubeconfig")
    assert result["hub_change"] == ({"address": {"from": stored_server, "to": HUB_URL}} if stored_server != HUB_URL else None)


def test_ocm_join_waits_for_the_klusterlet(ca, pin):
    """wait: the operator's Applied and Available on the Klusterlet; a timeout names what it saw and what was written."""
    member = FakeCluster("member")
    waiting = reg("ocm", ca_cert_hashes=[pin], wait=True, wait_timeout=0)
    with pytest.raises(WaitTimeout) as raised:
        OcmRegistration(member, None, waiting, discover_hub=FakeDiscovery(ca)).present()
    assert "waiting for Klusterlet/klusterlet on cluster 'member'" in raised.value.msg
    assert raised.value.details["last_seen"] == "no Applied condition yet"
    assert raised.value.details["changed"] is True
    assert raised.value.details["changes"][-1] == "member Klusterlet/klusterlet: created"
    klusterlet = member.objects[ocm.KLUSTERLET.path(name="klusterlet")]
    klusterlet["status"] = {"conditions": [{"type": "Applied", "status": "True"}, {"type": "Available", "status": "False",
                                                                                   "reason": "NoAvailablePods", "message": "0/1"}]}
    with pytest.raises(WaitTimeout, match=r"last seen: Available=False \(NoAvailablePods: 0/1\)"):
        OcmRegistration(member, None, waiting, discover_hub=FakeDiscovery(ca)).present()
    klusterlet["status"]["conditions"][1].update(status="True", reason="KlusterletAvailable")
    result = OcmRegistration(member, None, waiting, discover_hub=FakeDiscovery(ca)).present()
    assert result["changed"] is False
    # check mode writes nothing, so it waits for nothing
    fresh = FakeCluster("member")
    result = OcmRegistration(fresh, None, reg("ocm", wait=True, wait_timeout=0), check_mode=True, discover_hub=FakeDiscovery(ca)).present()
    assert result["changed"] and fresh.objects == {}


def test_ocm_check_mode_and_missing_klusterlet_api(ca):
    member = FakeCluster("member")
    result = OcmRegistration(member, None, reg("ocm"), check_mode=True, discover_hub=FakeDiscovery(ca)).present()
    assert result["changed"] and member.objects == {}
    bare = NoKlusterletApi("member")
    discovery = FakeDiscovery(ca)
    with pytest.raises(FleetError, match="install the klusterlet operator first"):
        OcmRegistration(bare, None, reg("ocm"), discover_hub=discovery).present()
    assert bare.objects == {} and discovery.calls == []


def test_ocm_absent(ca):
    member, hub = FakeCluster("member"), FakeCluster("hub")
    OcmRegistration(member, None, reg("ocm"), discover_hub=FakeDiscovery(ca)).present()
    joined(member, ca)
    hub.add(ocm.MANAGED_CLUSTER, {"metadata": {"name": CLUSTER}})
    result = OcmRegistration(member, hub, registration_of("ocm", CLUSTER, state="absent")).absent()
    assert result["changes"] == ["member Klusterlet/klusterlet: deleted",
                                 "member Secret/open-cluster-management-agent/bootstrap-hub-kubeconfig: deleted",
                                 "member Secret/open-cluster-management-agent/hub-kubeconfig-secret: deleted",
                                 "hub ManagedCluster/member1: deleted",
                                 "hub Lease/member1/managed-cluster-lease: absent",
                                 "hub ConfigMap/kube-system/multicluster-fleet.ocm.member1: absent"]
    assert hub.objects == {} and NAMESPACE.path(None, "open-cluster-management-agent") in member.objects
    alone = OcmRegistration(member, None, registration_of("ocm", CLUSTER, state="absent")).absent()
    assert alone["changed"] is False and "the hub still lists ManagedCluster member1" in alone["warnings"][0]


def test_ocm_absent_that_times_out_says_what_it_deleted(ca, fast_waits):
    member, hub = FakeCluster("member"), FakeCluster("hub")
    OcmRegistration(member, None, reg("ocm"), discover_hub=FakeDiscovery(ca)).present()
    joined(member, ca)
    hub.add(ocm.MANAGED_CLUSTER, {"metadata": {"name": CLUSTER}})
    held_after_delete(hub, ocm.MANAGED_CLUSTER, CLUSTER, finalizer="cluster.open-cluster-management.io/api-resource-cleanup")
    with pytest.raises(WaitTimeout) as caught:
        OcmRegistration(member, hub, registration_of("ocm", CLUSTER, state="absent", wait_timeout=5)).absent()
    assert caught.value.details["changed"] is True and caught.value.details["changes"] == [
        "member Klusterlet/klusterlet: deleted",
        "member Secret/open-cluster-management-agent/bootstrap-hub-kubeconfig: deleted",
        "member Secret/open-cluster-management-agent/hub-kubeconfig-secret: deleted",
        "hub ManagedCluster/member1: deleted"]
    assert "; deleted before the failure: member Klusterlet/klusterlet: deleted, " in caught.value.msg


def test_ocm_absent_refuses_another_clusters_klusterlet(ca):
    member = FakeCluster("member")
    OcmRegistration(member, None, reg("ocm", cluster_name="member2"), discover_hub=FakeDiscovery(ca)).present()
    joined = len(member.calls)
    with pytest.raises(FleetError, match="registers cluster member2, not member1: refusing to unjoin another cluster"):
        OcmRegistration(member, None, registration_of("ocm", CLUSTER, state="absent")).absent()
    discovery = FakeDiscovery(ca)
    with pytest.raises(FleetError, match="refusing to join as another cluster [(]unjoin member2 first[)]"):
        OcmRegistration(member, None, reg("ocm"), discover_hub=discovery).present()
    assert [method for method, dummy, dummy in member.calls[joined:] if method != "GET"] == [] and discovery.calls == []


def test_run_dispatches(ca, monkeypatch):
    calls = []
    for engine, flow in (("karmada", KarmadaRegistration), ("ocm", OcmRegistration)):
        for step in ("present", "absent"):
            name = "%s_%s" % (engine, step)
            monkeypatch.setattr(flow, step, lambda *args, _name=name, **kwargs: calls.append(_name) or {})
    for engine in ("karmada", "ocm"):
        register.run(None, None, reg(engine))
        register.run(None, None, registration_of(engine, CLUSTER, state="absent"))
    assert calls == ["karmada_present", "karmada_absent", "ocm_present", "ocm_absent"]


def test_run_matches_hosting_with_the_klusterlet_mode(ca):
    member, hosting = FakeCluster("member"), FakeCluster("hosting")
    with pytest.raises(FleetError, match="klusterlet_mode Hosted needs the hosting cluster's connection"):
        register.run(member, None, reg("ocm", klusterlet_mode="Hosted"))
    with pytest.raises(FleetError, match="hosting is only used with ocm.klusterlet_mode Hosted"):
        register.run(member, None, reg("ocm", klusterlet_mode="Default"), hosting=hosting)
    with pytest.raises(FleetError, match="needs the managed cluster's kubeconfig"):
        register.run(member, None, reg("ocm", klusterlet_mode="Hosted"), hosting=hosting)
    assert member.objects == {} and hosting.objects == {}


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(engine="karmada", klusterlet_mode="Hosted"), "^the ocm options [(]klusterlet_mode[)] apply to engine ocm only; "
                                                       "engine is karmada$"),
    (dict(engine="karmada", registration_driver="grpc", grpc_server="g:443", grpc_ca_pem="x"),
     "the ocm options [(]grpc_ca_pem, grpc_server, registration_driver[)] apply to engine ocm only"),
    (dict(engine="ocm", deploy_agent=True), "the karmada options [(]deploy_agent[)] apply to engine karmada only"),
    (dict(engine="ocm", zones=["z1"], enable_cert_rotation=True),
     "the karmada options [(]enable_cert_rotation, zones[)] apply to engine karmada only"),
    (dict(engine="karmada", zones=["z 1"]), "invalid zone"),
    (dict(engine="karmada", agent_replicas=-1), "agent_replicas must be at least 0"),
    (dict(engine="karmada", accept=True), "the ocm options [(]accept[)] apply to engine ocm only"),
    (dict(engine="ocm", klusterlet_mode="Remote"), "klusterlet_mode must be one of Default, Singleton, Hosted"),
    (dict(engine="ocm", registration_driver="awsirsa"), "registration_driver must be one of csr, grpc"),
    (dict(engine="ocm", klusterlet_mode="Hosted", cluster_name="c" * 53), "may have at most 52 characters"),
    (dict(engine="ocm", registration_driver="grpc", grpc_server="grpc.hub:443"),
     "^ocm.registration_driver is grpc but ocm.grpc_ca_pem missing$"),
    (dict(engine="ocm", registration_driver="grpc", grpc_server="grpc.hub:443", grpc_ca_pem="not a PEM"), "grpc_ca_pem"),
])
def test_ocm_settings_are_checked(kwargs, fragment):
    with pytest.raises(FleetError, match=fragment):
        reg(kwargs.pop("engine"), **kwargs)


MANAGED_KUBECONFIG = "apiVersion: v1\nkind: Config\n# the managed cluster, as the hosted agents reach it\n"


def test_ocm_hosted_join_writes_to_the_hosting_cluster(ca, pin):
    member, hosting = FakeCluster("member"), FakeCluster("hosting")
    request = reg("ocm", ca_cert_hashes=[pin], klusterlet_mode="Hosted")
    request.managed_kubeconfig = MANAGED_KUBECONFIG
    result = OcmRegistration(member, None, request, hosting=hosting, discover_hub=FakeDiscovery(ca)).present()
    assert member.objects == {} and result["klusterlet"] == "klusterlet-member1"
    assert result["changes"] == ["hosting Namespace/klusterlet-member1: created",
                                 "hosting Secret/klusterlet-member1/bootstrap-hub-kubeconfig: created",
                                 "hosting Secret/klusterlet-member1/external-managed-kubeconfig: created",
                                 "hosting Klusterlet/klusterlet-member1: created"]
    assert secret_text(hosting, SECRET.path("klusterlet-member1", "external-managed-kubeconfig"), "kubeconfig") == MANAGED_KUBECONFIG
    config = yaml.safe_load(secret_text(hosting, SECRET.path("klusterlet-member1", ocm.BOOTSTRAP_SECRET), "kubeconfig"))
    assert config["users"] == [{"name": "bootstrap", "user": {"token": SA_TOKEN}}]
    klusterlet = hosting.objects[ocm.KLUSTERLET.path(name="klusterlet-member1")]
    assert klusterlet["spec"] == {"clusterName": CLUSTER, "namespace": "open-cluster-management-klusterlet-member1",
                                  "externalServerURLs": [{"url": member.server}], "deployOption": {"mode": "Hosted"},
                                  "registrationConfiguration": {"registrationDriver": {"authType": "csr"}}}
    assert_no_secrets(result, SA_TOKEN)
    again = OcmRegistration(member, None, request, hosting=hosting, discover_hub=FakeDiscovery(ca)).present()
    assert again["changed"] is False
    gone = OcmRegistration(member, None, registration_of("ocm", CLUSTER, state="absent", klusterlet_mode="Hosted"), hosting=hosting).absent()
    assert gone["changes"] == ["hosting Klusterlet/klusterlet-member1: deleted",
                               "hosting Secret/klusterlet-member1/bootstrap-hub-kubeconfig: deleted",
                               "hosting Secret/klusterlet-member1/hub-kubeconfig-secret: absent",
                               "hosting Secret/klusterlet-member1/external-managed-kubeconfig: deleted",
                               "hosting Namespace/klusterlet-member1: deleted"]


def test_ocm_grpc_driver_writes_the_grpc_bootstrap_config(ca, pin):
    member = FakeCluster("member")
    request = reg("ocm", ca_cert_hashes=[pin], registration_driver="grpc", grpc_server="grpc.hub.example:443",
                  grpc_ca_pem=ca.pem)
    result = OcmRegistration(member, None, request, discover_hub=FakeDiscovery(ca)).present()
    config = yaml.safe_load(secret_text(member, BOOTSTRAP_PATH, "config.yaml"))
    assert config == {"url": "grpc.hub.example:443", "caData": pki.b64(ca.pem), "token": SA_TOKEN}
    assert yaml.safe_load(secret_text(member, BOOTSTRAP_PATH, "kubeconfig"))["current-context"] == "bootstrap"
    klusterlet = member.objects[ocm.KLUSTERLET.path(name="klusterlet")]
    assert klusterlet["spec"]["registrationConfiguration"] == {"registrationDriver": {"authType": "grpc"}}
    assert "deployOption" not in klusterlet["spec"]  # no klusterlet_mode given: the installer's choice is kept
    assert_no_secrets(result, SA_TOKEN)
    assert OcmRegistration(member, None, request, discover_hub=FakeDiscovery(ca)).present()["changed"] is False


def test_hosted_agents_kubeconfig_sources(tmp_path, monkeypatch, ca):
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "m",
              "clusters": [{"name": "c", "cluster": {"server": "https://member:6443", "certificate-authority-data": pki.b64(ca.pem)}}],
              "users": [{"name": "u", "user": {"token": "member-token"}}],
              "contexts": [{"name": "m", "context": {"cluster": "c", "user": "u"}}]}
    path = tmp_path / "member.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    for text in (registrar.hosted_agents_kubeconfig(str(path), None, None),
                 registrar.hosted_agents_kubeconfig(None, str(path), "m")):
        assert pki.read_kubeconfig(text)["server"] == "https://member:6443"
    monkeypatch.setenv("KUBECONFIG", str(path))
    assert pki.read_kubeconfig(registrar.hosted_agents_kubeconfig(None, None, None))["token"] == "member-token"
    with pytest.raises(FleetError, match="set ocm.managed_kubeconfig"):
        registrar.hosted_agents_kubeconfig(None, None, None, member_host="https://member:6443")


# --- OCM acceptance needs the hub -------------------------------------------------------------------------------


def test_ocm_accept_needs_the_hub():
    with pytest.raises(FleetError, match="accept needs the hub's admin credentials"):
        register.run(FakeCluster("member"), None, reg("ocm", accept=True))


# --- one name, one cluster: a registration never takes another cluster's name ---------------------------------


def written(cluster):
    """The writes a cluster received (dry runs included)."""
    return [(method, path) for method, path, _query in cluster.calls if method != "GET"]


def hub_with(kind, name, **fields):
    hub = FakeCluster("hub")
    hub.add(kind, dict({"metadata": {"name": name}}, **fields))
    return hub


@pytest.mark.parametrize("engine", ["karmada", "ocm"])
def test_a_name_the_hub_gives_another_cluster_is_refused_before_anything_is_written(ca, pin, engine):
    member = FakeCluster("member")
    if engine == "karmada":
        hub = hub_with(karmada.CLUSTER, CLUSTER, spec={"syncMode": "Pull", "id": "kube-system-of-member2",
                                                       "apiEndpoint": "https://10.0.0.8:6443"})
        taken_by = "Cluster 'member1' on the hub belongs to another cluster (https://10.0.0.8:6443, cluster id kube-system-of-member2)"
    else:
        hub = hub_with(MANAGED_CLUSTER, CLUSTER, metadata={"name": CLUSTER, "annotations": {
            "multicluster.fleet/cluster-id": "kube-system-of-member2"}})
        taken_by = "ManagedCluster 'member1' on the hub belongs to another cluster (endpoint unknown, cluster id kube-system-of-member2)"
    before = dict(hub.objects)
    with pytest.raises(FleetError) as exc_info:
        register.run(member, hub, reg(engine, ca_cert_hashes=[pin]))
    assert exc_info.value.msg.startswith(taken_by)
    assert "not to this member (https://fake, cluster id kube-system-of-member)" in exc_info.value.msg
    assert member.objects == {} and hub.objects == before


@pytest.mark.parametrize("engine", ["karmada", "ocm"])
def test_a_cluster_registered_under_another_name_is_refused(ca, pin, engine):
    member = FakeCluster("member")
    if engine == "karmada":
        hub = hub_with(karmada.CLUSTER, "member9", spec={"syncMode": "Pull", "id": "kube-system-of-member"})
    else:
        hub = hub_with(MANAGED_CLUSTER, "member9", metadata={"name": "member9", "annotations": {
            "multicluster.fleet/cluster-id": "kube-system-of-member"}})
    with pytest.raises(FleetError, match="this member \\(https://fake, cluster id kube-system-of-member\\) is already "
                                         "registered on the hub as (Managed)?Cluster 'member9': refusing to register it "
                                         "again as 'member1'"):
        register.run(member, hub, reg(engine, ca_cert_hashes=[pin]))
    assert member.objects == {} and written(hub) == []


def test_a_push_member_is_made_a_pull_member_only_when_asked(ca, pin, cluster_fakes):
    member, _hub, bootstrap_hub = cluster_fakes
    hub = hub_with(karmada.CLUSTER, CLUSTER, spec={"syncMode": "Push", "id": "kube-system-of-member"})
    for check_mode in (True, False):
        with pytest.raises(FleetError, match="Cluster 'member1' is registered on the hub in Push mode; registering it by "
                                             "pull would make it a Pull member: set karmada.allow_mode_change=true"):
            register_karmada(member, hub, bootstrap_hub, reg(ca_cert_hashes=[pin]), FakeDiscovery(ca), check_mode=check_mode)
    assert member.objects == {} and written(hub) == []
    result = register_karmada(member, hub, bootstrap_hub, reg(ca_cert_hashes=[pin], allow_mode_change=True),
                              FakeDiscovery(ca))
    assert result["changed"] and result["cluster_id"] == "kube-system-of-member"
    with pytest.raises(FleetError, match="the karmada options [(]allow_mode_change[)] apply to engine karmada only"):
        reg("ocm", allow_mode_change=True)


def test_the_same_cluster_under_its_own_name_registers(ca, pin, cluster_fakes):
    member, _hub, bootstrap_hub = cluster_fakes
    hub = hub_with(karmada.CLUSTER, CLUSTER, spec={"syncMode": "Pull", "id": "kube-system-of-member"})
    assert register_karmada(member, hub, bootstrap_hub, reg(ca_cert_hashes=[pin]), FakeDiscovery(ca))["changed"]


def test_ocm_check_mode_before_the_klusterlet_api_checks_the_identity_and_says_the_rest_waits(ca, pin):
    """Without ocm.operator_bundle, on a fresh member: the identity checks pass, and the run says why nothing more is
    previewed; a member whose Klusterlet registers another cluster is refused."""
    class Fresh(FakeCluster):
        def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
            if path.startswith(ocm.KLUSTERLET.path()):
                raise NotFound("the server could not find the requested resource", 404)
            return super().request(method, path, body, query, content_type, timeout)
    fresh = Fresh("member")
    planned = OcmRegistration(fresh, None, reg("ocm", ca_cert_hashes=[pin]), check_mode=True, discover_hub=FakeDiscovery(ca)).present()
    assert planned["changed"] is False and planned["cluster_id"] == "kube-system-of-member" and fresh.objects == {}
    reason = ("not previewed: cluster 'member' (https://fake) does not serve the Klusterlet API yet (role "
              "multicluster.fleet.agent_install installs it)")
    assert planned["reason"] == reason and planned["warnings"] == ["check mode: the join of member1 is " + reason]
    taken = FakeCluster("member")
    taken.add(ocm.KLUSTERLET, {"metadata": {"name": "klusterlet"}, "spec": {"clusterName": "member9"}})
    with pytest.raises(FleetError, match="Klusterlet klusterlet on cluster 'member' \\(https://fake\\) registers cluster "
                                         "member9, not member1: refusing to join as another cluster"):
        OcmRegistration(taken, None, reg("ocm", ca_cert_hashes=[pin]), check_mode=True, discover_hub=FakeDiscovery(ca)).present()


# The klusterlet operator bundle as role agent_install passes it (ocm.operator_bundle): its CRD, then the operator.
KLUSTERLET_CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                  "metadata": {"name": "klusterlets.operator.open-cluster-management.io"},
                  "spec": {"group": "operator.open-cluster-management.io", "scope": "Cluster", "versions": ["v1"]}}
OPERATOR_NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "open-cluster-management"}}
OPERATOR = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "klusterlet", "namespace": "open-cluster-management"}, "spec": {"replicas": 1}}
CRD_PATH = resources.CRD.path(name=KLUSTERLET_CRD["metadata"]["name"])
OPERATOR_PATH = resources.DEPLOYMENT.path("open-cluster-management", "klusterlet")


class FreshCluster(FakeCluster):
    """A cluster that serves the Klusterlet API once the Klusterlet CRD is stored, which then becomes Established (as on
    a real API server)."""

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        if path.startswith(ocm.KLUSTERLET.path()) and CRD_PATH not in self.objects:
            raise NotFound("the server could not find the requested resource", 404)
        answer = super().request(method, path, body, query, content_type, timeout)
        crd = self.objects.get(CRD_PATH)
        if crd is not None and "status" not in crd:
            crd["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
        return answer


def bundle_reg(pin, **kwargs):
    return reg("ocm", ca_cert_hashes=[pin], ocm={"operator_bundle": [KLUSTERLET_CRD, OPERATOR_NAMESPACE, OPERATOR]}, **kwargs)


def test_ocm_join_installs_the_operator_bundle_after_the_identity_checks_and_before_the_klusterlet(ca, pin):
    member = FreshCluster("member")
    result = OcmRegistration(member, None, bundle_reg(pin), discover_hub=FakeDiscovery(ca)).present()
    assert result["changes"][:4] == ["member CustomResourceDefinition/klusterlets.operator.open-cluster-management.io: created",
                                     "member Namespace/open-cluster-management: created",
                                     "member Deployment/open-cluster-management/klusterlet: created",
                                     "member Namespace/open-cluster-management: unchanged"]
    assert result["changes"][-1] == "member Klusterlet/klusterlet: created" and result["changed"]
    assert member.objects[OPERATOR_PATH]["spec"] == {"replicas": 1}
    # Installed: the bundle is unchanged on the next run, and an existing CRD is kept as it is (it may be newer).
    member.objects[CRD_PATH]["spec"]["versions"] = ["v1", "v2"]
    again = OcmRegistration(member, None, bundle_reg(pin), discover_hub=FakeDiscovery(ca)).present()
    assert again["changed"] is False and member.objects[CRD_PATH]["spec"]["versions"] == ["v1", "v2"]
    assert "member Deployment/open-cluster-management/klusterlet: unchanged" in again["changes"]


def test_ocm_join_refuses_another_clusters_name_before_it_installs_the_operator(ca, pin):
    taken = FakeCluster("member")
    taken.add(ocm.KLUSTERLET, {"metadata": {"name": "klusterlet"}, "spec": {"clusterName": "member9"}})
    for check_mode in (True, False):
        with pytest.raises(FleetError, match="registers cluster member9, not member1: refusing to join as another cluster"):
            OcmRegistration(taken, None, bundle_reg(pin), check_mode=check_mode, discover_hub=FakeDiscovery(ca)).present()
        assert OPERATOR_PATH not in taken.objects and CRD_PATH not in taken.objects


def test_ocm_check_mode_previews_the_operator_bundle_and_says_the_join_is_not_previewed(ca, pin):
    fresh = FreshCluster("member")
    planned = OcmRegistration(fresh, None, bundle_reg(pin), check_mode=True, discover_hub=FakeDiscovery(ca)).present()
    assert fresh.objects == {} and planned["changed"]
    assert planned["changes"] == ["member CustomResourceDefinition/klusterlets.operator.open-cluster-management.io: created",
                                  "member Namespace/open-cluster-management: created",
                                  "member Deployment/open-cluster-management/klusterlet: created"]
    reason = ("not previewed: cluster 'member' (https://fake) does not serve the Klusterlet API yet (a real run installs it "
              "first, from ocm.operator_bundle)")
    assert planned["reason"] == reason and planned["warnings"] == ["check mode: the join of member1 is " + reason]


def test_ocm_operator_bundle_is_checked_before_anything_is_read(pin):
    with pytest.raises(FleetError, match="object 2 [(]Deployment[)] has no metadata.name"):
        reg("ocm", ca_cert_hashes=[pin], ocm={"operator_bundle": [KLUSTERLET_CRD, {"apiVersion": "apps/v1", "kind": "Deployment"}]})
