"""Hub registration prerequisites on a fake hub (hub.py), and Cluster.ca_pem."""

import base64
import copy
import datetime
import ipaddress
import socket
import ssl
import threading

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, hub
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import CLUSTER_MANAGER
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import (
    CLUSTER_ROLE, CLUSTER_ROLE_BINDING, CONFIG_MAP, NAMESPACE, ROLE, ROLE_BINDING, SERVICE_ACCOUNT,
)

SERVER = "https://10.0.0.1:6443"


def issue(name, issuer=None, ca=True):
    """``(certificate PEM, key)``: a CA (self-signed without ``issuer``, a ``(pem, key)`` pair) or a serving
    certificate for 127.0.0.1 (``ca=False``)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    issuer_name, issuer_key = (x509.load_pem_x509_certificate(issuer[0].encode()).subject, issuer[1]) if issuer else (subject, key)
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer_name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now)
               .not_valid_after(now + datetime.timedelta(days=3650))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                        critical=False)
    return builder.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM).decode(), key


def make_ca(name):
    return issue(name)[0]


HUB_CA_PAIR = issue("hub-ca")
OTHER_CA_PAIR = issue("other-ca")
HUB_CA = HUB_CA_PAIR[0]
OTHER_CA = OTHER_CA_PAIR[0]


class TLSServer:
    """A TLS endpoint on 127.0.0.1 that presents ``chain`` (leaf first), as an API server does; handshakes only."""

    def __init__(self, tmp_path, chain, key):
        (tmp_path / "chain.pem").write_text("".join(chain))
        (tmp_path / "key.pem").write_text(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                            serialization.NoEncryption()).decode())
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(tmp_path / "chain.pem"), str(tmp_path / "key.pem"))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = "https://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                connection, _address = self.listener.accept()
            except OSError:
                return  # closed
            try:
                with self.context.wrap_socket(connection, server_side=True):
                    pass
            except (OSError, ssl.SSLError):
                pass  # the client refused the certificate

    def close(self):
        self.listener.close()


@pytest.fixture
def serving(tmp_path):
    """Start a TLS server presenting the chain given: ``serving(chain, key)``; stopped after the test."""
    servers = []

    def start(chain, key):
        servers.append(TLSServer(tmp_path, chain, key))
        return servers[-1]
    yield start
    for server in servers:
        server.close()


class Hub:
    """The shared FakeCluster with the hub's server URL and CA."""

    def __init__(self, fake):
        self.fake = fake
        self.server = SERVER
        self.ca_pem = HUB_CA
        self.proxy = None

    def __getattr__(self, name):
        return getattr(self.fake, name)


def at(kind, namespace=None, name=None):
    return kind.path(namespace, name)


INFO_PATH = at(CONFIG_MAP, "kube-public", "cluster-info")


@pytest.fixture
def fake_hub(fake_cluster):
    return Hub(fake_cluster)


def publish(fake, server, ca_pem, extra=None):
    data = {"kubeconfig": hub.cluster_info_kubeconfig(server, ca_pem)}
    data.update(extra or {})
    return fake.add(CONFIG_MAP, {"metadata": {"name": "cluster-info", "namespace": "kube-public"}, "data": data})


def names(result):
    return [line.rsplit(": ", 1)[0] for line in result["objects"]]


def actions(result):
    return dict(line.rsplit(": ", 1) for line in result["objects"])


# --- the objects ----------------------------------------------------------------------------------


def test_karmada_objects_are_karmadactl_inits():
    wanted, unwanted = hub.registration_objects("karmada")
    assert unwanted == []
    by_name = dict(((kind.kind, obj["metadata"]["name"]), obj) for kind, obj in wanted)
    assert set(by_name) == {
        ("Role", "system:karmada:bootstrap-signer-clusterinfo"),
        ("RoleBinding", "system:karmada:bootstrap-signer-clusterinfo"),
        ("ClusterRoleBinding", "system:karmada:agent-bootstrap"),
        ("ClusterRole", "system:karmada:certificatesigningrequest:autoapprover"),
        ("ClusterRoleBinding", "system:karmada:agent-autoapprove-bootstrap"),
        ("ClusterRole", "system:karmada:certificatesigningrequest:selfautoapprover"),
        ("ClusterRoleBinding", "system:karmada:agent-autoapprove-certificate-rotation"),
    }
    assert all(obj["metadata"]["labels"] == {"karmada.io/bootstrapping": "rbac-defaults"} for obj in by_name.values())
    group = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:bootstrappers:karmada:default-cluster-token"}
    binding = by_name[("ClusterRoleBinding", "system:karmada:agent-bootstrap")]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"}
    assert binding["subjects"] == [group]
    assert by_name[("ClusterRole", "system:karmada:certificatesigningrequest:autoapprover")]["rules"] == [
        {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/clusteragent"], "verbs": ["create"]}]
    assert by_name[("ClusterRole", "system:karmada:certificatesigningrequest:selfautoapprover")]["rules"] == [
        {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/selfclusteragent"], "verbs": ["create"]}]
    assert by_name[("ClusterRoleBinding", "system:karmada:agent-autoapprove-bootstrap")]["subjects"] == [group]
    assert by_name[("ClusterRoleBinding", "system:karmada:agent-autoapprove-certificate-rotation")]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:karmada:agents"}]
    reader = by_name[("Role", "system:karmada:bootstrap-signer-clusterinfo")]
    assert reader["metadata"]["namespace"] == "kube-public"
    assert reader["rules"] == [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"], "verbs": ["get"]}]
    assert by_name[("RoleBinding", "system:karmada:bootstrap-signer-clusterinfo")]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:anonymous"}]


def test_karmada_without_auto_approval_removes_the_approver_roles():
    wanted, unwanted = hub.registration_objects("karmada", csr_auto_approval=False)
    assert [obj["metadata"]["name"] for _kind, obj in wanted][-1] == "system:karmada:agent-bootstrap"
    assert sorted(obj["metadata"]["name"] for _kind, obj in unwanted) == [
        "system:karmada:agent-autoapprove-bootstrap", "system:karmada:agent-autoapprove-certificate-rotation",
        "system:karmada:certificatesigningrequest:autoapprover", "system:karmada:certificatesigningrequest:selfautoapprover"]


def test_ocm_objects_are_clusteradm_inits():
    wanted, unwanted = hub.registration_objects("ocm")
    assert unwanted == []
    by_name = dict(((kind.kind, obj["metadata"]["name"]), obj) for kind, obj in wanted)
    assert by_name[("ServiceAccount", "agent-registration-bootstrap")]["metadata"]["namespace"] == "open-cluster-management"
    assert ("Namespace", "open-cluster-management") in by_name
    # The rules of the reference dump (ClusterRole open-cluster-management:bootstrap as clusteradm init makes it).
    assert by_name[("ClusterRole", "open-cluster-management:bootstrap")]["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
        {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get", "list", "watch"]},
        {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters"], "verbs": ["get", "create", "list", "watch"]},
        {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclustersets/join"], "verbs": ["create"]},
    ]
    role_ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "open-cluster-management:bootstrap"}
    token_binding = by_name[("ClusterRoleBinding", "open-cluster-management:bootstrap:agent-registration")]
    assert token_binding["roleRef"] == role_ref
    assert token_binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:bootstrappers:managedcluster"}]
    sa_binding = by_name[("ClusterRoleBinding", "agent-registration-bootstrap")]
    assert sa_binding["roleRef"] == role_ref
    assert sa_binding["subjects"] == [{"kind": "ServiceAccount", "name": "agent-registration-bootstrap", "namespace": "open-cluster-management"}]
    assert ("RoleBinding", "open-cluster-management:bootstrap-signer-clusterinfo") in by_name


def test_cluster_info_kubeconfig_is_kubeadms_shape():
    config = yaml.safe_load(hub.cluster_info_kubeconfig(SERVER, HUB_CA))
    assert config["clusters"] == [{"name": "", "cluster": {
        "server": SERVER, "certificate-authority-data": base64.b64encode(HUB_CA.encode()).decode()}}]
    assert (config["users"], config["contexts"], config["current-context"]) == (None, None, "")
    assert hub.published({"data": {"kubeconfig": hub.cluster_info_kubeconfig(SERVER, HUB_CA)}}) == (SERVER, HUB_CA)


@pytest.mark.parametrize("configmap", [None, {}, {"data": {}}, {"data": {"kubeconfig": "{{{"}},
                                       {"data": {"kubeconfig": "clusters: []"}},
                                       {"data": {"kubeconfig": "clusters: [{cluster: {server: x, certificate-authority-data: '@@'}}]"}}])
def test_published_tolerates_anything(configmap):
    assert hub.published(configmap) == (None, None)


# --- ensure ---------------------------------------------------------------------------------------


def test_creates_everything_then_nothing_changes(fake_hub):
    result = hub.ensure_registration(fake_hub, "karmada")
    assert result["changed"] and set(actions(result).values()) == {"created"}
    assert names(result)[0] == "ConfigMap/kube-public/cluster-info"
    assert result["cluster_info"] == {"action": "created", "server": SERVER, "ca_cert_hashes": [bootstrap.ca_pin(HUB_CA)],
                                      "matches": True}
    assert (result["hub_apiserver"], result["ca_cert_hashes"]) == (SERVER, [bootstrap.ca_pin(HUB_CA)])
    assert hub.published(fake_hub.objects[INFO_PATH]) == (SERVER, HUB_CA)
    assert len(result["diff"]) == len(result["objects"]) and result["diff"][0]["before"] == {}
    assert result["diff"][1]["after_header"] == "Role/kube-public/system:karmada:bootstrap-signer-clusterinfo"
    again = hub.ensure_registration(fake_hub, "karmada")
    assert not again["changed"] and set(actions(again).values()) == {"unchanged"} and again["diff"] == []
    assert again["warnings"] == []


def test_check_mode_writes_nothing(fake_hub):
    result = hub.ensure_registration(fake_hub, "ocm", check_mode=True)
    assert result["changed"] and set(actions(result).values()) == {"created"}
    assert fake_hub.objects == {}
    assert all(query == {"dryRun": "All"} for method, _path, query in fake_hub.calls if method != "GET")


def test_ocm_creates_namespace_first(fake_hub):
    result = hub.ensure_registration(fake_hub, "ocm")
    assert names(result)[:3] == ["ConfigMap/kube-public/cluster-info", "Namespace/open-cluster-management",
                                 "ServiceAccount/open-cluster-management/agent-registration-bootstrap"]
    assert at(NAMESPACE, name="open-cluster-management") in fake_hub.objects


def test_explicit_server_and_ca(fake_hub, serving):
    """A hub_ca_cert other than the connection's CA is published when it verifies the hub's serving certificate."""
    leaf, key = issue("kube-apiserver", OTHER_CA_PAIR, ca=False)
    fake_hub.server = serving([leaf], key).url
    result = hub.ensure_registration(fake_hub, "karmada", "https://hub.example.com:6443", OTHER_CA)
    assert hub.published(fake_hub.objects[INFO_PATH]) == ("https://hub.example.com:6443", OTHER_CA)
    assert result["ca_cert_hashes"] == [bootstrap.ca_pin(OTHER_CA)]


class TestHubCaCert:
    """hub_ca_cert must verify the certificate the hub's API server presents; another CA is refused, naming both pins."""

    def test_another_clusters_ca_is_refused(self, fake_hub, serving):
        leaf, key = issue("kube-apiserver", HUB_CA_PAIR, ca=False)
        fake_hub.server = serving([leaf], key).url
        with pytest.raises(FleetError) as caught:
            hub.ensure_registration(fake_hub, "karmada", ca_pem=OTHER_CA)
        assert caught.value.msg.startswith(
            "hub_ca_cert (CA %s) does not verify the serving certificate of cluster 'hub' (https://fake) (" % bootstrap.ca_pin(OTHER_CA))
        assert "that certificate was issued by CA %s (CN=hub-ca)." % bootstrap.ca_pin(HUB_CA) in caught.value.msg
        assert "kube-public/cluster-info was not changed" in caught.value.msg
        assert [c for c in fake_hub.calls if c[0] != "GET"] == [] and fake_hub.objects == {}

    def test_refused_in_check_mode_too(self, fake_hub, serving):
        leaf, key = issue("kube-apiserver", HUB_CA_PAIR, ca=False)
        fake_hub.server = serving([leaf], key).url
        with pytest.raises(FleetError, match="does not verify the serving certificate"):
            hub.ensure_registration(fake_hub, "karmada", ca_pem=OTHER_CA, check_mode=True)
        assert fake_hub.calls == []

    def test_an_issuer_nobody_knows_is_named(self, fake_hub, serving):
        unknown = issue("unknown-ca")
        leaf, key = issue("kube-apiserver", unknown, ca=False)
        fake_hub.server = serving([leaf], key).url
        with pytest.raises(FleetError) as caught:
            hub.ensure_registration(fake_hub, "karmada", ca_pem=OTHER_CA)
        assert ("that certificate was issued by CN=unknown-ca, a CA neither in the chain the server sent nor among the "
                "CAs of the hub connection." in caught.value.msg)

    @pytest.mark.parametrize("trusted", ["root", "intermediate"])
    def test_a_chain_through_an_intermediate_ca(self, fake_hub, serving, trusted):
        """The server sends its intermediate CA: the root verifies it, and so does the intermediate alone."""
        intermediate = issue("intermediate-ca", OTHER_CA_PAIR)
        leaf, key = issue("kube-apiserver", intermediate, ca=False)
        fake_hub.server = serving([leaf, intermediate[0]], key).url
        ca_pem = OTHER_CA if trusted == "root" else intermediate[0]
        result = hub.ensure_registration(fake_hub, "karmada", ca_pem=ca_pem)
        assert result["ca_cert_hashes"] == [bootstrap.ca_pin(ca_pem)] and result["changed"]

    def test_a_bundle_with_the_right_ca_among_others(self, fake_hub, serving):
        leaf, key = issue("kube-apiserver", HUB_CA_PAIR, ca=False)
        fake_hub.server = serving([leaf], key).url
        result = hub.ensure_registration(fake_hub, "karmada", ca_pem=OTHER_CA + HUB_CA)
        assert result["ca_cert_hashes"] == [bootstrap.ca_pin(OTHER_CA), bootstrap.ca_pin(HUB_CA)]

    def test_unreachable_hub(self, fake_hub):
        closed = socket.create_server(("127.0.0.1", 0))
        fake_hub.server = "https://127.0.0.1:%d" % closed.getsockname()[1]
        closed.close()
        with pytest.raises(FleetError, match=r"cannot read the serving certificate of cluster 'hub' \(https://fake\) to check "
                                             r"hub_ca_cert: .*[Cc]onnection refused"):
            hub.ensure_registration(fake_hub, "karmada", ca_pem=OTHER_CA)
        assert fake_hub.calls == []

    def test_not_checked_through_a_proxy(self, fake_hub):
        fake_hub.proxy = "http://proxy.example:3128"
        result = hub.ensure_registration(fake_hub, "karmada", ca_pem=OTHER_CA)
        assert result["warnings"] == ["hub_ca_cert was not checked against the serving certificate of cluster 'hub' "
                                      "(https://fake): the hub connection goes through proxy http://proxy.example:3128"]


@pytest.mark.parametrize("url, problem", [
    ("ftp://x", "the scheme must be https (or http)"),
    ("https://", "it has no host"),
    ("https://user@hub:6443", "user information is not permitted"),
    ("https://hub:99999", "the port is not a number between 1 and 65535"),
])
def test_hub_apiserver_is_validated_like_api_endpoint(fake_hub, url, problem):
    with pytest.raises(FleetError) as caught:
        hub.ensure_registration(fake_hub, "karmada", url)
    assert caught.value.msg == "invalid hub_apiserver %r: %s; expected a URL such as https://10.0.0.7:6443" % (url, problem)
    assert fake_hub.calls == []


def test_existing_cluster_info_is_kept_and_reported(fake_hub):
    stored = publish(fake_hub, "https://old:6443", OTHER_CA, {"jws-kubeconfig-abcdef": "x..y"})
    result = hub.ensure_registration(fake_hub, "karmada")
    assert actions(result)["ConfigMap/kube-public/cluster-info"] == "unchanged"
    assert result["cluster_info"] == {"action": "different", "server": "https://old:6443",
                                      "ca_cert_hashes": [bootstrap.ca_pin(OTHER_CA)], "matches": False}
    assert fake_hub.objects[INFO_PATH] == stored
    assert len(result["warnings"]) == 1
    warning = result["warnings"][0]
    assert "publishes server https://old:6443" in warning and "not %s" % SERVER in warning
    assert "update_cluster_info: true" in warning and "cluster 'hub'" in warning


def test_update_cluster_info_replaces_only_the_kubeconfig(fake_hub):
    publish(fake_hub, "https://old:6443", OTHER_CA, {"jws-kubeconfig-abcdef": "x..y"})
    checked = hub.ensure_registration(fake_hub, "karmada", update_cluster_info=True, check_mode=True)
    assert checked["cluster_info"]["action"] == "updated"
    assert hub.published(fake_hub.objects[INFO_PATH])[0] == "https://old:6443"
    result = hub.ensure_registration(fake_hub, "karmada", update_cluster_info=True)
    assert result["cluster_info"] == {"action": "updated", "server": SERVER, "ca_cert_hashes": [bootstrap.ca_pin(HUB_CA)],
                                      "matches": True}
    assert result["warnings"] == []
    stored = fake_hub.objects[INFO_PATH]
    assert hub.published(stored) == (SERVER, HUB_CA) and stored["data"]["jws-kubeconfig-abcdef"] == "x..y"


def test_same_content_in_another_layout_is_unchanged(fake_hub):
    ca_data = base64.b64encode(("\n" + HUB_CA + "\n").encode()).decode()
    text = "apiVersion: v1\nkind: Config\nclusters:\n- name: ''\n  cluster: {server: '%s', certificate-authority-data: %s}\n" % (SERVER, ca_data)
    fake_hub.add(CONFIG_MAP, {"metadata": {"name": "cluster-info", "namespace": "kube-public"}, "data": {"kubeconfig": text}})
    result = hub.ensure_registration(fake_hub, "karmada")
    assert result["cluster_info"]["action"] == "unchanged" and result["cluster_info"]["matches"]


def test_turning_auto_approval_off_deletes_the_roles(fake_hub):
    hub.ensure_registration(fake_hub, "karmada")
    result = hub.ensure_registration(fake_hub, "karmada", csr_auto_approval=False)
    assert actions(result)["ClusterRole/system:karmada:certificatesigningrequest:autoapprover"] == "deleted"
    assert actions(result)["ClusterRoleBinding/system:karmada:agent-bootstrap"] == "unchanged"
    assert at(CLUSTER_ROLE, name="system:karmada:certificatesigningrequest:selfautoapprover") not in fake_hub.objects
    assert result["changed"]
    assert not hub.ensure_registration(fake_hub, "karmada", csr_auto_approval=False)["changed"]


def test_a_binding_with_another_role_is_replaced(fake_hub):
    # Newer karmadactl init binds the group to system:karmada:cluster-bootstrapper under the same name.
    path = at(CLUSTER_ROLE_BINDING, name="system:karmada:agent-bootstrap")
    fake_hub.add(CLUSTER_ROLE_BINDING, {"metadata": {"name": "system:karmada:agent-bootstrap"},
                                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                    "name": "system:karmada:cluster-bootstrapper"},
                                        "subjects": [{"kind": "Group", "name": "system:bootstrappers:karmada:default-cluster-token"}]})
    before = copy.deepcopy(fake_hub.objects[path])
    checked = hub.ensure_registration(fake_hub, "karmada", check_mode=True)
    assert actions(checked)["ClusterRoleBinding/system:karmada:agent-bootstrap"] == "updated"
    assert fake_hub.objects[path] == before
    result = hub.ensure_registration(fake_hub, "karmada")
    assert actions(result)["ClusterRoleBinding/system:karmada:agent-bootstrap"] == "updated"
    assert fake_hub.objects[path]["roleRef"]["name"] == "system:node-bootstrapper"
    assert ("DELETE", path, {}) in fake_hub.calls


def test_a_binding_with_other_subjects_is_patched(fake_hub):
    path = at(ROLE_BINDING, "kube-public", "system:karmada:bootstrap-signer-clusterinfo")
    hub.ensure_registration(fake_hub, "karmada")
    fake_hub.objects[path]["subjects"] = [{"kind": "User", "name": "someone"}]
    result = hub.ensure_registration(fake_hub, "karmada")
    assert actions(result)["RoleBinding/kube-public/system:karmada:bootstrap-signer-clusterinfo"] == "updated"
    assert fake_hub.objects[path]["subjects"][0]["name"] == "system:anonymous"


def test_no_ca_known(fake_hub):
    fake_hub.ca_pem = None
    with pytest.raises(FleetError, match=r"cluster 'hub' \(https://fake\): the hub connection has no CA certificate .*; set hub_ca_cert"):
        hub.ensure_registration(fake_hub, "karmada")
    with pytest.raises(FleetError, match="no PEM certificate"):
        hub.ensure_registration(fake_hub, "karmada", ca_pem="not a certificate")


# --- remove ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["karmada", "ocm"])
def test_remove_keeps_cluster_info_and_namespace(fake_hub, engine):
    hub.ensure_registration(fake_hub, engine)
    checked = hub.remove_registration(fake_hub, engine, check_mode=True)
    assert checked["changed"] and len(fake_hub.objects) > 3
    result = hub.remove_registration(fake_hub, engine)
    assert set(actions(result).values()) == {"deleted"}
    left = sorted(fake_hub.objects)
    assert left == sorted([INFO_PATH] + ([at(NAMESPACE, name="open-cluster-management")] if engine == "ocm" else []))
    assert set(actions(hub.remove_registration(fake_hub, engine)).values()) == {"absent"}
    kinds = {line.split("/")[0] for line in result["objects"]}
    assert kinds <= {ROLE.kind, ROLE_BINDING.kind, CLUSTER_ROLE.kind, CLUSTER_ROLE_BINDING.kind, SERVICE_ACCOUNT.kind}


# --- what members are told ------------------------------------------------------------------------


def test_hub_endpoint_prefers_cluster_info(fake_hub):
    assert hub.hub_endpoint(fake_hub) == (SERVER, [bootstrap.ca_pin(HUB_CA)])
    publish(fake_hub, "https://public:6443", OTHER_CA)
    assert hub.hub_endpoint(fake_hub) == ("https://public:6443", [bootstrap.ca_pin(OTHER_CA)])
    assert hub.hub_endpoint(fake_hub, "https://lb:443") == ("https://lb:443", [bootstrap.ca_pin(OTHER_CA)])


def test_hub_endpoint_without_any_ca(fake_hub):
    fake_hub.ca_pem = None
    assert hub.hub_endpoint(fake_hub) == (SERVER, [])


def test_cluster_ca_pem_from_kubeconfig_data_or_file(tmp_path):
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "c", "cluster": {"server": "https://10.9.9.9:6443",
                                                     "certificate-authority-data": base64.b64encode(HUB_CA.encode()).decode()}}],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    assert client.get_cluster({"kubeconfig": config}, "unit-ca-data").ca_pem == HUB_CA
    ca_file = tmp_path / "ca.crt"
    ca_file.write_text(OTHER_CA)
    assert client.get_cluster({"kubeconfig": config, "ca_cert": str(ca_file)}, "unit-ca-file").ca_pem == OTHER_CA
    insecure = copy.deepcopy(config)
    insecure["clusters"][0]["cluster"] = {"server": "https://10.9.9.9:6443", "insecure-skip-tls-verify": True}
    assert client.get_cluster({"kubeconfig": insecure}, "unit-ca-none").ca_pem is None


# --- the gRPC registration endpoint (OCM) ----------------------------------------------------------


def cluster_manager(fake, drivers, hostname=None):
    spec = {"registrationConfiguration": {"registrationDrivers": [{"authType": d} for d in drivers]}}
    if hostname is not None:
        spec["serverConfiguration"] = {"endpointsExposure": [
            {"protocol": "grpc", "usage": "agentToHub", "grpc": {"type": "hostname", "hostname": hostname}}]}
    fake.add(CLUSTER_MANAGER, {"metadata": {"name": "cluster-manager"}, "spec": spec})


def test_grpc_endpoint_needs_the_grpc_driver(fake_hub):
    assert hub.grpc_endpoint(fake_hub) is None  # no ClusterManager
    cluster_manager(fake_hub.fake, ["csr"])
    assert hub.grpc_endpoint(fake_hub) is None
    assert hub.ensure_registration(fake_hub, "ocm")["grpc"] is None


def test_grpc_endpoint_ca_from_the_endpoint_or_the_operators_configmap(fake_hub):
    cluster_manager(fake_hub.fake, ["csr", "grpc"], {"host": "grpc.hub.example"})
    result = hub.ensure_registration(fake_hub, "ocm")
    assert result["grpc"] == {"server": "grpc.hub.example", "ca_pem": None}
    assert "its CA is not published yet (open-cluster-management-hub/ca-bundle-configmap)" in result["warnings"][0]
    fake_hub.add(CONFIG_MAP, {"metadata": {"name": "ca-bundle-configmap", "namespace": "open-cluster-management-hub"},
                              "data": {"ca-bundle.crt": OTHER_CA}})
    result = hub.ensure_registration(fake_hub, "ocm")
    assert result["grpc"] == {"server": "grpc.hub.example", "ca_pem": OTHER_CA} and result["warnings"] == []
    fake_hub.fake.objects.clear()
    cluster_manager(fake_hub.fake, ["grpc"], {"host": "grpc.hub.example", "caBundle": base64.b64encode(HUB_CA.encode()).decode()})
    assert hub.grpc_endpoint(fake_hub) == {"server": "grpc.hub.example", "ca_pem": HUB_CA}
