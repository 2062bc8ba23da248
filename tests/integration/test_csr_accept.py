"""csr_accept against the lab hub: real bootstrap tokens, real CSRs, the real CSR signer and RBAC.

The OCM klusterlet and the Karmada agent are the lab's simulations (tests/lab/sim_*.py); the
certificates they get are issued by the hub's kube-controller-manager and used against its API server.
"""

import base64
import secrets
import string
import threading

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER
import lab as fleet_lab
from runner import run_module, run_playbook
from sim_karmada_agent import SimulatedKarmadaAgent
from sim_klusterlet import SimulatedKlusterlet, SimulatedRegistrationController

CSR = resources.CSR
SIGNER = "kubernetes.io/kube-apiserver-client"
USAGES = ("digital signature", "key encipherment", "client auth")
KARMADA_AGENTS = ["system:karmada:agents"]
CLUSTER_MANAGER_ROLES = ("open-cluster-management:managedcluster:registration", "open-cluster-management:managedcluster:work")


def rand(length=5):
    return "".join(secrets.choice(string.ascii_lowercase + string.digits) for _index in range(length))


def ocm_groups(cluster):
    return ["system:open-cluster-management:%s" % cluster, "system:open-cluster-management:managed-clusters"]


def b64(data):
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()


def state_of(hub, name):
    obj = resources.get(hub, CSR, name)
    return [(c["type"], c["reason"]) for c in (obj.get("status") or {}).get("conditions") or []]


@pytest.fixture(scope="module")
def hub_auth(lab):
    return {"kubeconfig": lab.clusters["hub"]["kubeconfig"], "context": "hub"}


@pytest.fixture(scope="module")
def hub(hub_auth):
    return client.get_cluster(hub_auth, "hub")


class Tokens:
    """Bootstrap tokens on the hub, and clients that authenticate with them."""

    def __init__(self, lab, hub):
        self.info = lab.clusters["hub"]
        self.hub = hub
        self.ids = []

    def create(self, group):
        token_id, secret = bootstrap.generate_token().split(".")
        resources.ensure(self.hub, resources.SECRET, bootstrap.token_secret(token_id, secret, ttl_seconds=3600, groups=[group]))
        self.ids.append(token_id)
        token = "%s.%s" % (token_id, secret)
        # The API server authenticates bootstrap tokens from its cache of kube-system's Secrets, which sees a new one a
        # moment later (longer on a busy machine): until it does, the token is refused with 401.
        requester = self.client(token)

        def authenticates():
            try:
                requester.request("GET", "/version")
            except ClusterError as exc:
                return False, str(exc)
            return True, None
        resources.wait_until(authenticates, 30, "the API server to know bootstrap token %s" % token_id, interval=0.2)
        return token

    def client(self, token):
        auth = {"host": self.info["server"], "ca_cert": self.info["ca_cert"], "api_key": token}
        return client.get_cluster(auth, "hub as system:bootstrap:%s" % token.split(".")[0])

    def discover(self, token):
        """Hub discovery as a joining member does it, once the bootstrap signer has signed cluster-info."""
        with open(self.info["ca_cert"]) as handle:
            pin = bootstrap.ca_pin(handle.read())
        found = {}

        def signed():
            try:
                found.update(bootstrap.discover_hub(self.info["server"], token, ca_pins=[pin]))
            except FleetError as exc:
                return False, exc.msg
            return True, None
        resources.wait_until(signed, 30, "cluster-info to be signed for the token", interval=0.5)
        return found

    def delete_all(self):
        for token_id in self.ids:
            resources.delete(self.hub, resources.SECRET, bootstrap.SECRET_NAME_PREFIX + token_id, bootstrap.SECRET_NAMESPACE)


@pytest.fixture(scope="module")
def tokens(lab, hub, bootstrap_rbac):
    made = Tokens(lab, hub)
    yield made
    made.delete_all()


@pytest.fixture
def submitted(hub):
    """``submit(requester_client, name, cn, orgs, ...)`` creates a CSR as that requester; all are deleted after the test."""
    names = []

    def submit(requester, name, cn, orgs, key=None, usages=USAGES, sans=(), labels=None, expiration=None, signer=SIGNER):
        names.append(name)
        subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
                            + [x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        builder = x509.CertificateSigningRequestBuilder().subject_name(subject)
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
        request = builder.sign(key or ec.generate_private_key(ec.SECP256R1()), hashes.SHA256())
        spec = {"request": b64(request.public_bytes(serialization.Encoding.PEM)), "signerName": signer, "usages": list(usages)}
        if expiration:
            spec["expirationSeconds"] = expiration
        return requester.request("POST", CSR.path(), body={
            "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name, "labels": labels or {}}, "spec": spec})
    yield submit
    for name in names:
        resources.delete(hub, CSR, name)


def accept(hub_auth, engine, clusters, check_mode=False, diff=False, **options):
    return run_module("csr_accept", dict(hub_auth, engine=engine, clusters=clusters, **options), check_mode=check_mode, diff=diff)


def ensure_namespace(api, name, labels=None):
    """Create the namespace on a lab cluster; True if this call created it."""
    try:
        api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}})
    except fleet_lab.ApiError as exc:
        if exc.status != 409:
            raise
        return False
    return True


def put_secret(api, namespace, name, data, labels=None):
    api.post("/api/v1/namespaces/%s/secrets" % namespace, {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "data": {k: b64(v) for k, v in data.items()}})


def delete_quietly(api, path):
    try:
        api.delete(path)
    except fleet_lab.ApiError as exc:
        if exc.status != 404:
            raise


def verify_issued_by(cert, ca_path):
    with open(ca_path, "rb") as handle:
        ca = x509.load_pem_x509_certificate(handle.read())
    assert cert.issuer == ca.subject
    ca.public_key().verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def subject(cert):
    return ([a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)],
            sorted(a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)))


def as_certificate(lab, tmp_path, label, cert_pem, key_pem):
    """A connection to the hub that authenticates with this client certificate."""
    paths = {}
    for name, data in (("tls.crt", cert_pem), ("tls.key", key_pem)):
        paths[name] = tmp_path / ("%s-%s" % (label, name))
        paths[name].write_bytes(data)
    info = lab.clusters["hub"]
    return client.get_cluster({"host": info["server"], "ca_cert": info["ca_cert"], "client_cert": str(paths["tls.crt"]),
                               "client_key": str(paths["tls.key"])}, label)


def test_ocm_registration_end_to_end(lab, hub, hub_auth, tokens, tmp_path):
    """Bootstrap token -> klusterlet (ManagedCluster + CSR) -> csr_accept -> agent certificate used on the hub."""
    name = "csr-ocm-" + rand()
    token = tokens.create(bootstrap.OCM_DEFAULT_GROUP)
    found = tokens.discover(token)
    member = lab.api("member1")
    namespace = "open-cluster-management-agent"
    created_namespace = ensure_namespace(member, namespace)
    hub_roles = [role for role in CLUSTER_MANAGER_ROLES if resources.get(hub, resources.CLUSTER_ROLE, role) is None]
    put_secret(member, namespace, "bootstrap-hub-kubeconfig",
               {"kubeconfig": bootstrap.bootstrap_kubeconfig(found["server"], found["ca_pem"], token)})
    controller = SimulatedRegistrationController(lab, [name]).start()
    klusterlet = SimulatedKlusterlet(lab, "member1", cluster_name=name).start()
    try:
        checked = accept(hub_auth, "ocm", [name], check_mode=True, wait=True, timeout=60, wait_sleep=1)
        assert checked["rc"] == 0 and checked["changed"] is True, checked.get("msg")
        approved = checked["clusters"][0]["approved"]
        assert len(approved) == 1 and approved[0].startswith(name + "-")
        csr_name = approved[0]
        assert state_of(hub, csr_name) == []  # check mode wrote nothing
        assert resources.get(hub, MANAGED_CLUSTER, name)["spec"]["hubAcceptsClient"] is False

        done = accept(hub_auth, "ocm", [name], diff=True, wait=True, wait_sleep=1)
        assert done["rc"] == 0 and done["changed"] is True, done.get("msg")
        assert done["clusters"] == [{"name": name, "approved": [csr_name], "rejected": [], "denied": [], "accepted": True}]
        assert [d["before_header"] for d in done["diff"]] == ["CertificateSigningRequest/" + csr_name, "ManagedCluster/" + name]
        assert state_of(hub, csr_name) == [("Approved", "MulticlusterFleetApproved")]
        assert resources.get(hub, MANAGED_CLUSTER, name)["spec"]["hubAcceptsClient"] is True

        # The klusterlet picks up the signed certificate, writes its hub kubeconfig and joins with it.
        def joined():
            obj = resources.get(hub, MANAGED_CLUSTER, name)
            return resources.condition_is(obj, "ManagedClusterJoined") and resources.condition_is(obj, "ManagedClusterConditionAvailable")
        klusterlet.wait_for(joined, 30, "ManagedCluster %s to be joined and available" % name)
        managed = resources.get(hub, MANAGED_CLUSTER, name)
        assert managed["status"]["version"] == {"kubernetes": lab.version}
        assert resources.condition(managed, "HubAcceptedManagedCluster")["reason"] == "HubClusterAdminAccepted"
        secret = member.get("/api/v1/namespaces/%s/secrets/hub-kubeconfig-secret" % namespace)
        assert sorted(secret["data"]) == ["agent-name", "cluster-name", "kubeconfig", "tls.crt", "tls.key"]
        data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
        identity = "system:open-cluster-management:%s:%s" % (name, data["agent-name"].decode())
        cert = x509.load_pem_x509_certificate(data["tls.crt"])
        assert subject(cert) == ([identity], ocm_groups(name))
        verify_issued_by(cert, lab.clusters["hub"]["ca_cert"])
        assert yaml.safe_load(data["kubeconfig"])["users"] == [
            {"name": "default-auth", "user": {"client-certificate": "tls.crt", "client-key": "tls.key"}}]

        # The certificate authenticates as the agent identity, in the groups of docs/architecture.md 4.6.
        agent = as_certificate(lab, tmp_path, "ocm-agent", data["tls.crt"], data["tls.key"])
        assert agent.request("GET", MANAGED_CLUSTER.path(name=name))["metadata"]["name"] == name  # group binding
        with pytest.raises(ClusterError) as refused:
            agent.request("GET", MANAGED_CLUSTER.path(name="someone-else"))
        assert refused.value.status == 403 and 'User "%s" cannot get resource "managedclusters"' % identity in refused.value.msg
        binding = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/csr-accept-test-" + name
        hub.request("POST", binding.rsplit("/", 1)[0], body={
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": binding.rsplit("/", 1)[1]},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:open-cluster-management:managed-clusters"}]})
        try:
            def reads():
                try:
                    return agent.request("GET", "/api/v1/namespaces/default/configmaps") is not None, None
                except ClusterError as exc:
                    return False, exc.msg
            resources.wait_until(reads, 10, "RBAC to allow the managed-clusters group", interval=0.2)
        finally:
            hub.request("DELETE", binding)
        assert klusterlet.error is None and controller.error is None, (klusterlet.error, controller.error)

        again = accept(hub_auth, "ocm", [name], wait=True)
        assert again["rc"] == 0 and again["changed"] is False
        assert again["clusters"] == [{"name": name, "approved": [], "rejected": [], "denied": [], "accepted": True}]
        assert accept(hub_auth, "ocm", [name], check_mode=True)["changed"] is False
    finally:
        resources.delete(hub, MANAGED_CLUSTER, name, wait=resources.Wait(timeout=30))  # the hub controller drops its finalizers
        klusterlet.stop()
        controller.stop()
        for item in resources.list_objects(hub, CSR, label_selector="open-cluster-management.io/cluster-name=" + name):
            resources.delete(hub, CSR, item["metadata"]["name"])
        resources.delete(hub, resources.NAMESPACE, name)
        for secret_name in ("bootstrap-hub-kubeconfig", "hub-kubeconfig-secret"):
            delete_quietly(member, "/api/v1/namespaces/%s/secrets/%s" % (namespace, secret_name))
        if created_namespace:
            delete_quietly(member, "/api/v1/namespaces/" + namespace)
        for role in hub_roles:  # installed by the simulated cluster-manager for this test
            resources.delete(hub, resources.CLUSTER_ROLE, role)


def karmada_agent_rbac(name):
    """The hub-side agent RBAC of docs/architecture.md 4.4 (cluster_register creates it in production)."""
    role = "system:karmada:%s:agent" % name
    rules = [
        {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["create", "get", "list", "watch", "delete", "update", "patch"]},
        {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/status"], "verbs": ["update", "patch"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
        {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["get", "create"]},
    ]
    return [
        (resources.CLUSTER_ROLE, {"metadata": {"name": role}, "rules": rules}),
        (resources.CLUSTER_ROLE_BINDING, {"metadata": {"name": role},
                                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                                          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                                        "name": "system:karmada:agent:%s" % name}]}),
    ]


def test_karmada_pull_registration_end_to_end(lab, hub, hub_auth, tokens, submitted):
    """A CSR as `karmadactl register` creates it -> csr_accept -> the agent registers with the certificate."""
    name = "csr-kmd-" + rand()
    token = tokens.create(bootstrap.KARMADA_DEFAULT_GROUP)
    found = tokens.discover(token)
    registrar = tokens.client(token)
    key = rsa.generate_private_key(65537, 3072)
    csr_name = "%s-%s" % (name, rand())
    submitted(registrar, csr_name, "system:karmada:agent:" + name, KARMADA_AGENTS, key=key,
              labels={"karmada.io/system": "true"}, expiration=365 * 24 * 3600)

    checked = accept(hub_auth, "karmada", [name], check_mode=True)
    assert checked["rc"] == 0 and checked["changed"] is True and checked["clusters"][0]["approved"] == [csr_name], checked.get("msg")
    assert state_of(hub, csr_name) == []
    done = accept(hub_auth, "karmada", [name], diff=True)
    assert done["rc"] == 0 and done["changed"] is True and done["clusters"][0]["approved"] == [csr_name]
    assert done["diff"][0]["after"]["status"]["conditions"][0]["reason"] == "MulticlusterFleetApproved"

    issued = {}

    def signed():
        obj = registrar.request("GET", CSR.path(name=csr_name))  # the registrar polls with its bootstrap token
        issued["pem"] = base64.b64decode((obj.get("status") or {}).get("certificate") or "")
        return bool(issued["pem"]), "not signed yet"
    resources.wait_until(signed, 30, "the certificate of " + csr_name, interval=0.5)
    cert = x509.load_pem_x509_certificate(issued["pem"])
    assert subject(cert) == (["system:karmada:agent:" + name], KARMADA_AGENTS)
    verify_issued_by(cert, lab.clusters["hub"]["ca_cert"])

    # karmadactl register's karmada-kubeconfig on the member; then the agent starts from it.
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())
    kubeconfig = {"apiVersion": "v1", "kind": "Config",
                  "clusters": [{"name": "karmada-apiserver", "cluster": {"server": found["server"], "certificate-authority-data": b64(found["ca_pem"])}}],
                  "users": [{"name": name, "user": {"client-certificate-data": b64(issued["pem"]), "client-key-data": b64(key_pem)}}],
                  "contexts": [{"name": "%s@karmada-apiserver" % name, "context": {"cluster": "karmada-apiserver", "user": name}}],
                  "current-context": "%s@karmada-apiserver" % name}
    member = lab.api("member2")
    labels = {"karmada.io/system": "true"}
    created_namespace = ensure_namespace(member, "karmada-system", labels)
    put_secret(member, "karmada-system", "karmada-kubeconfig", {"karmada-kubeconfig": yaml.safe_dump(kubeconfig)}, labels)
    agent = SimulatedKarmadaAgent(lab, "member2", cluster_name=name).start()
    rbac = karmada_agent_rbac(name)
    try:
        # Without the hub-side agent RBAC the agent fails as the real one does; the message names its identity.
        agent.wait_for(lambda: 'cannot list resource "clusters"' in (agent.error or ""), 20, "the agent to fail on listing clusters")
        assert 'User "system:karmada:agent:%s"' % name in agent.error
        assert resources.get(hub, CLUSTER, name) is None
        for kind, body in rbac:
            resources.ensure(hub, kind, body)

        def ready():
            obj = resources.get(hub, CLUSTER, name)
            return resources.condition_is(obj, "Ready") and obj
        cluster = agent.wait_for(ready, 30, "Cluster %s to be Ready" % name)
        assert cluster["spec"]["syncMode"] == "Pull" and cluster["spec"]["id"] == lab.clusters["member2"]["kube_system_uid"]
        assert cluster["spec"]["apiEndpoint"] == lab.clusters["member2"]["server"]
        assert cluster["status"]["kubernetesVersion"] == lab.version
        assert resources.condition(cluster, "Ready")["reason"] == "ClusterReady"

        again = accept(hub_auth, "karmada", [name])
        assert again["rc"] == 0 and again["changed"] is False and again["clusters"][0]["accepted"] is True
        assert accept(hub_auth, "karmada", [name], check_mode=True)["changed"] is False
        # The action group and module_defaults work; a re-run through ansible-playbook is ok, not changed.
        plays = [{"hosts": "localhost", "gather_facts": False, "connection": "local",
                  "module_defaults": {"group/multicluster.fleet.fleet": hub_auth},
                  "tasks": [{"multicluster.fleet.csr_accept": {"engine": "karmada", "clusters": [name]}, "register": "out"},
                            {"ansible.builtin.assert": {"that": ["out is not changed", "out.clusters[0].accepted"]}}]}]
        played = run_playbook(plays)
        assert played.returncode == 0 and "ok=2" in played.stdout, played.stdout + played.stderr
    finally:
        agent.stop()
        resources.delete(hub, CLUSTER, name)
        for kind, body in rbac:
            resources.delete(hub, kind, body["metadata"]["name"])
        delete_quietly(member, "/api/v1/namespaces/karmada-system/secrets/karmada-kubeconfig")
        if created_namespace:
            delete_quietly(member, "/api/v1/namespaces/karmada-system")


class Registration:
    """cluster_register of lab member1 as Karmada cluster ``name``, run in the background as a playbook runs it async."""

    def __init__(self, lab, hub_auth, name, token, found):
        self.member_auth = {"kubeconfig": lab.clusters["member1"]["kubeconfig"], "context": "member1"}
        self.args = dict(self.member_auth, engine="karmada", cluster_name=name, hub_apiserver=found["server"], token=token,
                         ca_cert_hashes=found["ca_pins"], hub=hub_auth, karmada={"csr_wait_timeout": 60})
        self.name = name
        self.thread = None
        self.result = {}

    def start(self):
        self.result = {}
        self.thread = threading.Thread(target=lambda: self.result.update(run_module("cluster_register", self.args)))
        self.thread.start()
        return self

    def finish(self):
        self.thread.join(120)
        assert not self.thread.is_alive(), "cluster_register did not return"
        assert self.result["rc"] == 0 and self.result["changed"] is True, self.result.get("msg")
        return self.result["csr_name"]

    def remove(self):
        if self.thread is not None:
            self.thread.join(120)
        removed = run_module("cluster_register", dict(self.member_auth, engine="karmada", cluster_name=self.name, state="absent",
                                                      hub=self.args["hub"]))
        assert removed["rc"] == 0, removed.get("msg")


def test_karmada_reregistration_within_the_hour(lab, hub, hub_auth, tokens):
    """Register, unregister, register again: the new CSR is approved although the earlier one, approved and signed
    by the hub's kube-controller-manager, is still listed (its csrcleaner deletes issued CSRs after an hour)."""
    name = "csr-rereg-" + rand()
    token = tokens.create(bootstrap.KARMADA_DEFAULT_GROUP)
    registration = Registration(lab, hub_auth, name, token, tokens.discover(token))
    options = {"requesters": ["system:bootstrap:" + token.split(".")[0]], "wait": True, "timeout": 60, "wait_sleep": 1}

    def csrs_of_cluster():
        return sorted(item["metadata"]["name"] for item in resources.list_objects(hub, CSR) if item["metadata"]["name"].startswith(name + "-"))
    try:
        registration.start()
        first = accept(hub_auth, "karmada", [name], expect_new_csr=True, **options)
        first_csr = registration.finish()
        assert first["rc"] == 0 and first["clusters"][0]["approved"] == [first_csr], first.get("msg")
        registration.remove()
        earlier = resources.get(hub, CSR, first_csr)
        assert state_of(hub, first_csr) == [("Approved", "MulticlusterFleetApproved")] and earlier["status"]["certificate"]
        # The earlier approval still reads as "accepted already" while nothing new is pending ...
        assert accept(hub_auth, "karmada", [name])["changed"] is False

        # ... but a new pending CSR beside it is approved (the registration gets its certificate).
        registration.start()
        resources.wait_until(lambda: (len(csrs_of_cluster()) == 2, csrs_of_cluster()), 60, "the CSR of the second registration",
                             interval=0.5)
        second = accept(hub_auth, "karmada", [name])
        second_csr = registration.finish()
        assert second_csr != first_csr and csrs_of_cluster() == sorted([first_csr, second_csr])
        assert second["rc"] == 0 and second["changed"] is True, second.get("msg")
        assert second["clusters"] == [{"name": name, "approved": [second_csr], "rejected": [], "denied": [], "accepted": True}]
        assert accept(hub_auth, "karmada", [name])["changed"] is False
        registration.remove()

        # Waiting from the start of a registration, as a playbook does: the approved CSRs listed do not end the wait.
        registration.start()
        third = accept(hub_auth, "karmada", [name], expect_new_csr=True, **options)
        third_csr = registration.finish()
        assert third_csr not in (first_csr, second_csr) and len(csrs_of_cluster()) == 3
        assert third["rc"] == 0 and third["changed"] is True, third.get("msg")
        assert third["clusters"] == [{"name": name, "approved": [third_csr], "rejected": [], "denied": [], "accepted": True}]
        assert state_of(hub, third_csr) == [("Approved", "MulticlusterFleetApproved")]
        assert resources.get(hub, CSR, third_csr)["status"]["certificate"]
        again = accept(hub_auth, "karmada", [name], wait=True)
        assert again["rc"] == 0 and again["changed"] is False and again["clusters"][0]["accepted"] is True
        # A caller that expects a new CSR when none comes is told so, naming the earlier ones.
        waited = accept(hub_auth, "karmada", [name], expect_new_csr=True, wait=True, timeout=2)
        assert waited["rc"] == 1 and waited["waiting"] == [name]
        assert "%s: no new CSR from its agent yet (approved before: %s)" % (name, ", ".join(csrs_of_cluster())) in waited["msg"]
    finally:
        registration.remove()
        for csr_name in csrs_of_cluster():
            resources.delete(hub, CSR, csr_name)


@pytest.fixture(scope="module")
def requester(tokens):
    """A bootstrap token user that may create CSRs, as a joining member is."""
    return tokens.client(tokens.create(bootstrap.KARMADA_DEFAULT_GROUP))


class TestRefusals:
    """Security: CSRs that ask for more than the cluster's agent identity are never approved."""

    def refused(self, hub_auth, engine, name, fragment, **options):
        result = accept(hub_auth, engine, [name], **options)
        assert result["rc"] == 1 and result["failed"] is True and "Traceback" not in result["msg"]
        assert fragment in result["msg"], result["msg"]
        assert result["clusters"][0]["approved"] == [] and result["clusters"][0]["accepted"] is False
        return result

    def test_system_masters(self, hub, hub_auth, requester, submitted):
        name = "csr-sec-" + rand()
        # The API server's CertificateSubjectRestriction admission already refuses system:masters for the
        # kube-apiserver-client signer; with another signer such a CSR exists, and csr_accept must refuse it too.
        with pytest.raises(ClusterError, match="kube-apiserver-client signer with system:masters group is not allowed"):
            submitted(requester, name + "-n0p3s", "system:karmada:agent:" + name, ["system:masters"])
        submitted(requester, name + "-m4st3", "system:karmada:agent:" + name, ["system:masters"], signer="example.com/agent-client")
        result = self.refused(hub_auth, "karmada", name, "O must be exactly system:karmada:agents, it is system:masters",
                              deny_invalid=True)
        assert result["clusters"][0]["denied"] == [name + "-m4st3"] and result["changed"] is True
        denied = resources.get(hub, CSR, name + "-m4st3")
        assert [(c["type"], c["reason"]) for c in denied["status"]["conditions"]] == [("Denied", "MulticlusterFleetDenied")]
        assert "system:masters" in denied["status"]["conditions"][0]["message"]
        assert not (denied.get("status") or {}).get("certificate")

    def test_another_clusters_identity(self, hub, hub_auth, requester, submitted):
        name, other = "csr-sec-" + rand(), "csr-sec-" + rand()
        resources.ensure(hub, MANAGED_CLUSTER, {"metadata": {"name": name}, "spec": {"hubAcceptsClient": False}})
        try:
            submitted(requester, name + "-0ther", "system:open-cluster-management:%s:agent1" % other, ocm_groups(other),
                      labels={"open-cluster-management.io/cluster-name": name})
            self.refused(hub_auth, "ocm", name, "CN system:open-cluster-management:%s:agent1 is not" % other)
            assert state_of(hub, name + "-0ther") == []
            assert resources.get(hub, MANAGED_CLUSTER, name)["spec"]["hubAcceptsClient"] is False
        finally:
            resources.delete(hub, MANAGED_CLUSTER, name)

    def test_server_auth_usage(self, hub, hub_auth, requester, submitted):
        name = "csr-sec-" + rand()
        submitted(requester, name + "-s3rv3", "system:karmada:agent:" + name, KARMADA_AGENTS, usages=USAGES + ("server auth",))
        self.refused(hub_auth, "karmada", name, "usage server auth is not allowed")
        assert state_of(hub, name + "-s3rv3") == []

    def test_subject_alternative_names(self, hub, hub_auth, requester, submitted):
        name = "csr-sec-" + rand()
        submitted(requester, name + "-s4nss", "system:karmada:agent:" + name, KARMADA_AGENTS,
                  sans=[x509.DNSName("kubernetes.default.svc")])
        self.refused(hub_auth, "karmada", name, "subject alternative names are not allowed, it asks for DNS:kubernetes.default.svc")

    def test_requester_must_be_a_bootstrap_identity(self, hub, hub_auth, submitted):
        name = "csr-sec-" + rand()
        submitted(hub, name + "-4dm1n", "system:karmada:agent:" + name, KARMADA_AGENTS)  # the hub admin asks
        self.refused(hub_auth, "karmada", name, "requester hub-admin is neither a bootstrap token user nor the agent")

    def test_clusters_not_listed_are_left_alone(self, hub, hub_auth, requester, submitted):
        listed, unlisted = "csr-sec-" + rand(), "csr-sec-" + rand()
        submitted(requester, listed + "-l1st1", "system:karmada:agent:" + listed, KARMADA_AGENTS)
        submitted(requester, unlisted + "-n0t1t", "system:karmada:agent:" + unlisted, KARMADA_AGENTS)
        result = accept(hub_auth, "karmada", [listed], deny_invalid=True)
        assert result["rc"] == 0 and result["clusters"][0]["approved"] == [listed + "-l1st1"]
        assert state_of(hub, listed + "-l1st1") == [("Approved", "MulticlusterFleetApproved")]
        assert state_of(hub, unlisted + "-n0t1t") == []

    def test_several_requesters(self, hub, hub_auth, tokens, requester, submitted):
        name = "csr-sec-" + rand()
        second_token = tokens.create(bootstrap.KARMADA_DEFAULT_GROUP)
        submitted(requester, name + "-f1rst", "system:karmada:agent:" + name, KARMADA_AGENTS)
        submitted(tokens.client(second_token), name + "-s3cnd", "system:karmada:agent:" + name, KARMADA_AGENTS)
        self.refused(hub_auth, "karmada", name, "several requesters ask for cluster %s" % name, deny_invalid=True)
        assert state_of(hub, name + "-f1rst") == state_of(hub, name + "-s3cnd") == []
        trusted = "system:bootstrap:" + second_token.split(".")[0]
        chosen = accept(hub_auth, "karmada", [name], requesters=[trusted])
        assert chosen["rc"] == 0 and chosen["clusters"][0]["approved"] == [name + "-s3cnd"], chosen.get("msg")
        assert chosen["clusters"][0]["rejected"][0]["name"] == name + "-f1rst"
        assert state_of(hub, name + "-f1rst") == []

    def test_wait_times_out_naming_the_cluster(self, hub_auth):
        name = "csr-sec-" + rand()
        result = accept(hub_auth, "karmada", [name], wait=True, timeout=2)
        assert result["rc"] == 1
        assert "timed out after 2s waiting for the agent CSRs of %s: %s: no pending CSR from its agent yet" % (name, name) in result["msg"]
        assert result["waiting"] == [name]


class TestOneCertificatePerAgent:
    """Regressions: two CSRs for one cluster's agent identity were both approved, also for a Push cluster (no agent)."""

    def test_of_two_keys_only_the_newest_csr_is_approved(self, hub, hub_auth, requester, submitted):
        name = "csr-one-" + rand()
        submitted(requester, name + "-0lder", "system:karmada:agent:" + name, KARMADA_AGENTS)
        submitted(requester, name + "-n3wer", "system:karmada:agent:" + name, KARMADA_AGENTS)  # another key
        result = accept(hub_auth, "karmada", [name], deny_invalid=True)
        assert result["rc"] == 0 and result["changed"] is True, result.get("msg")
        assert result["clusters"][0]["approved"] == [name + "-n3wer"] and result["clusters"][0]["denied"] == []
        assert result["clusters"][0]["rejected"] == [{
            "name": name + "-0lder", "requester": requester.name.split(" as ")[1],
            "reasons": ["not approved: cluster %s gets one agent certificate, from its newest acceptable CSR %s-n3wer"
                        % (name, name)]}]
        assert state_of(hub, name + "-n3wer") == [("Approved", "MulticlusterFleetApproved")]
        assert state_of(hub, name + "-0lder") == []

    def test_agent_csrs_of_a_push_cluster_are_refused(self, hub, hub_auth, tokens, requester, submitted):
        name = "csr-push-" + rand()
        resources.ensure(hub, CLUSTER, {"metadata": {"name": name}, "spec": {
            "syncMode": "Push", "apiEndpoint": "https://127.0.0.1:6443", "id": "push-" + name}})
        try:
            second = tokens.client(tokens.create(bootstrap.KARMADA_DEFAULT_GROUP))
            submitted(requester, name + "-k3y0n", "system:karmada:agent:" + name, KARMADA_AGENTS)
            submitted(second, name + "-k3y2t", "system:karmada:agent:" + name, KARMADA_AGENTS)
            reason = ("cluster %s is registered on the hub in Push mode, where no agent runs: refusing agent CSRs for it"
                      " (unjoin it first to register it in Pull mode)" % name)
            checked = accept(hub_auth, "karmada", [name], check_mode=True, requesters=[requester.name.split(" as ")[1]])
            assert checked["rc"] == 1 and checked["msg"] == "cluster 'hub' (%s): not accepted: %s (%s)" % (
                hub.server, name, reason)
            done = accept(hub_auth, "karmada", [name], deny_invalid=True, wait=True, wait_timeout=60)  # nothing to wait for
            assert done["rc"] == 1 and reason in done["msg"]
            cluster = done["clusters"][0]
            assert cluster["approved"] == [] and cluster["accepted"] is False
            assert sorted(cluster["denied"]) == [name + "-k3y0n", name + "-k3y2t"] and done["changed"] is True
            assert state_of(hub, name + "-k3y0n") == state_of(hub, name + "-k3y2t") == [("Denied", "MulticlusterFleetDenied")]
        finally:
            resources.delete(hub, CLUSTER, name)


class TestWaitOptions:
    @pytest.mark.parametrize("option", ["wait_timeout", "timeout"])
    def test_negative_timeout_is_refused(self, hub_auth, option):
        """Regression: timeout -1 was taken, then reported as "timed out after -1s"."""
        result = accept(hub_auth, "karmada", ["csr-neg"], wait=True, **{option: -1})
        assert result["rc"] == 1 and result["msg"] == "wait_timeout must not be negative, got -1"

    def test_wait_sleep_below_a_second_is_refused(self, hub_auth):
        result = accept(hub_auth, "karmada", ["csr-neg"], wait=True, wait_sleep=0)
        assert result["rc"] == 1 and result["msg"] == "wait_sleep must be at least 1 second, got 0"

    def test_wait_timeout_and_wait_sleep(self, hub_auth):
        name = "csr-sec-" + rand()
        result = accept(hub_auth, "karmada", [name], wait=True, wait_timeout=2, wait_sleep=1)
        assert result["rc"] == 1 and result["waiting"] == [name]
        assert "timed out after 2s waiting for the agent CSRs of %s" % name in result["msg"]
