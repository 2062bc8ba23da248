"""The lab itself: real, separate control planes whose signers work as on a kubeadm cluster."""

import base64
import hashlib
import hmac
import json
import os
import secrets
import string
import subprocess
import sys
import time

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

import lab as fleet_lab
import sim_base

CLUSTERS = fleet_lab.DEFAULT_CLUSTERS
# CRD name -> (group, version, plural, kind, scope, printer columns as `kubectl get` shows them)
CRDS = {
    "clusters.cluster.karmada.io":
        ("cluster.karmada.io", "v1alpha1", "clusters", "Cluster", "Cluster", ["Name", "Version", "Mode", "Ready", "Age"]),
    "works.work.karmada.io":
        ("work.karmada.io", "v1alpha1", "works", "Work", "Namespaced", ["Name", "WORKLOAD-KIND", "APPLIED", "AGE"]),
    "managedclusters.cluster.open-cluster-management.io":
        ("cluster.open-cluster-management.io", "v1", "managedclusters", "ManagedCluster", "Cluster",
         ["Name", "Hub Accepted", "Managed Cluster URLs", "Joined", "Available", "Age"]),
    "manifestworks.work.open-cluster-management.io":
        ("work.open-cluster-management.io", "v1", "manifestworks", "ManifestWork", "Namespaced", ["Name", "Age"]),
    "clustermanagers.operator.open-cluster-management.io":
        ("operator.open-cluster-management.io", "v1", "clustermanagers", "ClusterManager", "Cluster", ["Name", "Age"]),
    "klusterlets.operator.open-cluster-management.io":
        ("operator.open-cluster-management.io", "v1", "klusterlets", "Klusterlet", "Cluster", ["Name", "Age"]),
}


def _wait(check, timeout, what):
    """Poll ``check`` until it returns something true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.2)
    pytest.fail(f"{what} did not happen within {timeout}s")


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.mark.parametrize("name", CLUSTERS)
def test_cluster_answers_with_its_version(lab, name):
    assert lab.version and lab.api(name).get("/version")["gitVersion"] == lab.version


def test_clusters_are_distinct(lab):
    cas = []
    for name in CLUSTERS:
        info = lab.clusters[name]
        with open(info["ca_cert"], "rb") as f:
            cas.append(x509.load_pem_x509_certificate(f.read()).public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))
        live_uid = lab.api(name).get("/api/v1/namespaces/kube-system")["metadata"]["uid"]
        assert live_uid == info["kube_system_uid"]
    assert len(set(cas)) == len(CLUSTERS)
    assert len({lab.clusters[n]["kube_system_uid"] for n in CLUSTERS}) == len(CLUSTERS)
    assert len({lab.clusters[n]["server"] for n in CLUSTERS}) == len(CLUSTERS)


@pytest.mark.parametrize("name", CLUSTERS)
def test_kubeconfig_works_with_the_kubernetes_client(lab, name):
    kubernetes = pytest.importorskip("kubernetes")
    info = lab.clusters[name]
    client = kubernetes.config.new_client_from_config(config_file=info["kubeconfig"], context=name)
    namespace = kubernetes.client.CoreV1Api(client).read_namespace("kube-system")
    assert namespace.metadata.uid == info["kube_system_uid"]


def test_inventory_parses_with_ansible(lab):
    ansible_inventory = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")
    done = subprocess.run([ansible_inventory, "-i", os.path.join(lab.dir, "inventory.yml"), "--list"],
                          check=True, capture_output=True, text=True)
    assert "same name" not in done.stderr, done.stderr
    inventory = json.loads(done.stdout)
    assert inventory["hub"]["hosts"] == ["hub-cluster"]
    assert inventory["members"]["hosts"] == ["member1", "member2"]
    hostvars = inventory["_meta"]["hostvars"]
    assert hostvars["hub-cluster"]["hub_apiserver"] == lab.clusters["hub"]["server"]
    assert [hostvars[m]["registration_mode"] for m in ("member1", "member2")] == ["push", "pull"]
    for name in CLUSTERS:
        host = "hub-cluster" if name == "hub" else name
        assert hostvars[host]["kubeconfig"] == lab.clusters[name]["kubeconfig"]
        assert hostvars[host]["context"] == hostvars[host]["cluster_name"] == name
        assert hostvars[host]["fleet_engine"] == "karmada"


@pytest.mark.parametrize("crd", sorted(CRDS))
def test_hub_serves_engine_crds(lab, crd):
    group, version, plural, kind, scope, columns = CRDS[crd]
    api = lab.api(lab.hub)
    definition = api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
    assert definition["spec"]["scope"] == scope
    assert definition["spec"]["names"]["kind"] == kind
    listing = api.get(f"/apis/{group}/{version}/{plural}")
    assert listing["kind"] == f"{kind}List"
    assert listing["apiVersion"] == f"{group}/{version}"
    assert isinstance(listing["items"], list)  # other tests may have created objects already
    table = api.get(f"/apis/{group}/{version}/{plural}",
                    headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert [c["name"] for c in table["columnDefinitions"]] == columns


def test_crds_reinstall_idempotently(lab):
    fleet_lab.install_crds(lab.clusters[lab.hub])


def test_crd_validation_is_enforced(lab):
    with pytest.raises(fleet_lab.ApiError) as error:
        lab.api(lab.hub).post("/apis/cluster.karmada.io/v1alpha1/clusters", {
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "lab-invalid"}, "spec": {"syncMode": "Sideways"}})
    assert error.value.status == 422


@pytest.mark.parametrize("name", CLUSTERS)
def test_bootstrapsigner_signs_cluster_info(lab, name):
    api = lab.api(name)
    alphabet = string.ascii_lowercase + string.digits
    token_id = "".join(secrets.choice(alphabet) for _index in range(6))
    token_secret = "".join(secrets.choice(alphabet) for _index in range(16))
    expiration = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    secrets_path = "/api/v1/namespaces/kube-system/secrets"
    api.post(secrets_path, {
        "apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
        "stringData": {"token-id": token_id, "token-secret": token_secret, "expiration": expiration,
                       "usage-bootstrap-signing": "true", "usage-bootstrap-authentication": "true"}})
    try:
        # Anonymous, as a joining member reads it.
        anonymous = fleet_lab.ApiClient.for_cluster(lab.clusters[name], anonymous=True)
        cluster_info = "/api/v1/namespaces/kube-public/configmaps/cluster-info"
        key = f"jws-kubeconfig-{token_id}"

        def signed():
            current = anonymous.get(cluster_info)["data"]
            return key in current and current
        data = _wait(signed, 30, f"{key} in cluster-info on {name}")
        header, payload, signature = data[key].split(".")
        assert payload == ""
        assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "HS256", "kid": token_id}
        signing_input = f"{header}.{_b64url(data['kubeconfig'].encode())}".encode()
        assert signature == _b64url(hmac.new(token_secret.encode(), signing_input, hashlib.sha256).digest())
        kubeconfig = yaml.safe_load(data["kubeconfig"])
        cluster = kubeconfig["clusters"][0]["cluster"]
        assert cluster["server"] == lab.clusters[name]["server"]
        with open(lab.clusters[name]["ca_cert"], "rb") as f:
            assert base64.b64decode(cluster["certificate-authority-data"]) == f.read()
    finally:
        api.delete(f"{secrets_path}/bootstrap-token-{token_id}")


@pytest.mark.parametrize("name", CLUSTERS)
def test_approved_csr_gets_a_certificate_from_the_cluster_ca(lab, name, tmp_path):
    api = lab.api(name)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    user = f"system:lab:test-{secrets.token_hex(4)}"
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:lab"),
                                    x509.NameAttribute(NameOID.COMMON_NAME, user)]))
           .sign(key, hashes.SHA256()))
    csr_name = user.replace(":", "-")
    path = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    created = api.post(path, {
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": csr_name},
        "spec": {"request": base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode(),
                 "signerName": "kubernetes.io/kube-apiserver-client",
                 "usages": ["digital signature", "key encipherment", "client auth"]}})
    try:
        created["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "LabTest",
                                             "message": "approved by test_lab"}]}
        api.put(f"{path}/{csr_name}/approval", created)
        issued = _wait(lambda: api.get(f"{path}/{csr_name}").get("status", {}).get("certificate"), 30,
                       f"certificate for CSR {csr_name} on {name}")
        certificate = x509.load_pem_x509_certificate(base64.b64decode(issued))
        with open(lab.clusters[name]["ca_cert"], "rb") as f:
            ca = x509.load_pem_x509_certificate(f.read())
        assert certificate.issuer == ca.subject
        ca.public_key().verify(certificate.signature, certificate.tbs_certificate_bytes, padding.PKCS1v15(),
                               certificate.signature_hash_algorithm)
        assert certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == user
        assert certificate.public_key().public_numbers() == key.public_key().public_numbers()
        # The API server accepts the certificate and knows the user (who has no rights).
        (tmp_path / "user.crt").write_bytes(base64.b64decode(issued))
        (tmp_path / "user.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                              serialization.PrivateFormat.PKCS8,
                                                              serialization.NoEncryption()))
        as_user = fleet_lab.ApiClient(lab.clusters[name]["server"], lab.clusters[name]["ca_cert"],
                                      str(tmp_path / "user.crt"), str(tmp_path / "user.key"))
        with pytest.raises(fleet_lab.ApiError) as error:
            as_user.get("/api/v1/namespaces")
        assert error.value.status == 403
        assert f'User "{user}"' in json.loads(error.value.body)["message"]
    finally:
        api.delete(f"{path}/{csr_name}")


def test_up_starts_again_on_other_ports_when_one_is_taken(tmp_path, monkeypatch):
    """A port chosen free but taken before etcd binds it (another lab starting beside this one) costs a retry, not
    the session."""
    import socket

    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.bind((fleet_lab.HOST, 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    chosen = []
    free_ports = fleet_lab._free_ports

    def first_one_taken(count):
        ports = free_ports(count)
        if not chosen:
            ports[0] = taken  # cluster "solo"'s etcd client port
        chosen.append(ports)
        return ports

    monkeypatch.setattr(fleet_lab, "_free_ports", first_one_taken)
    lab = fleet_lab.Lab(str(tmp_path / "lab"))
    try:
        lab.up(["solo"])
        assert len(chosen) == 2
        assert lab.clusters["solo"]["ports"]["etcd_client"] == chosen[1][0] != taken
        assert lab.status()["solo"][0]
    finally:
        lab.down()
        squatter.close()


def test_audit_logs_count_the_requests_of_one_client(tmp_path):
    """up(audit=True): each request the API server served is one audit event, and count_requests counts those whose
    client names itself so, by verb and resource, from where the last count ended."""
    lab = fleet_lab.Lab(str(tmp_path / "lab"))
    try:
        lab.up(["solo"], audit=True)
        log = lab.clusters["solo"]["audit_log"]
        assert fleet_lab.Lab.load(lab.dir).audit
        _wait(lambda: os.path.exists(log) and os.path.getsize(log) > 0, 30, "the first audit event")
        start = fleet_lab.count_requests(log, "multicluster.fleet")[1]
        api = lab.api("solo")
        headers = {"User-Agent": "multicluster.fleet"}
        api.request("GET", "/api/v1/namespaces/default", headers=headers)
        api.request("GET", "/api/v1/namespaces/kube-system/configmaps", headers=headers)
        api.request("GET", "/api/v1/namespaces/default")  # another client: not counted

        def both_logged():
            counts = fleet_lab.count_requests(log, "multicluster.fleet", start)[0]
            return counts if sum(counts.values()) == 2 else None

        assert _wait(both_logged, 30, "two audit events of the client") == {"get namespaces": 1, "list configmaps": 1}
    finally:
        lab.down()


def test_a_write_moves_the_revision_of_its_server(lab):
    """sim_base.Revision: the number the simulations compare moves with any write on the server."""
    api = lab.api(lab.hub)
    revision = sim_base.Revision(api, max_age=0)
    before = revision.current()
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fleet-test-revision"}, "data": {}}
    api.post("/api/v1/namespaces/default/configmaps", configmap)
    try:
        assert before is not None and int(revision.current()) > int(before)
    finally:
        api.delete("/api/v1/namespaces/default/configmaps/fleet-test-revision")


def test_a_simulation_passes_when_the_servers_it_reads_change():
    """With revisions, a simulation passes once, then not while they stay (for up to RESYNC_SECONDS), again once one
    moves or does not answer, and after resume(); without, on every tick."""
    passes = []

    class Counting(sim_base.Simulation):
        name = "counting"
        RESYNC_SECONDS = 3600

        def sync(self):
            passes.append(True)

    class Server:
        version = "1"

        def get(self, _path):
            if self.version is None:
                raise fleet_lab.LabError("not answering")
            return {"metadata": {"resourceVersion": self.version}}

    def passes_after(simulation, ticks):
        for _tick in range(ticks):
            simulation._pass()
        return len(passes)

    server = Server()
    gated = Counting()
    gated.revisions = [sim_base.Revision(server, max_age=0)]
    assert passes_after(gated, 3) == 1
    server.version = "2"
    assert passes_after(gated, 2) == 2
    server.version = None
    assert passes_after(gated, 2) == 4
    server.version = "2"
    assert passes_after(gated, 2) == 5
    gated.pause()
    gated.resume()
    assert passes_after(gated, 1) == 6
    assert passes_after(Counting(), 3) == 9
