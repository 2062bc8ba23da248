"""Unit tests for module_utils/pki.py: keys, CSRs, certificate checks and kubeconfigs."""

import base64
import datetime

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from kubernetes.client import Configuration
from kubernetes.config.kube_config import load_kube_config_from_dict

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from fake_ca import FakeCA, key_pem

UTC = datetime.timezone.utc
CN = "system:karmada:agent:member1"
ORG = "system:karmada:agents"


@pytest.fixture(scope="module")
def ca():
    return FakeCA()


@pytest.fixture(scope="module")
def rsa_ca():
    return FakeCA("rsa-ca", rsa_key=True)


def test_generate_private_key_types():
    assert isinstance(pki.generate_private_key(), ec.EllipticCurvePrivateKey)
    assert pki.generate_private_key().curve.name == "secp256r1"
    key = pki.generate_private_key("rsa")
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048
    with pytest.raises(FleetError, match="unknown key type 'dsa'"):
        pki.generate_private_key("dsa")


@pytest.mark.parametrize("key_type, header", [("ecdsa", "EC PRIVATE KEY"), ("rsa", "RSA PRIVATE KEY")])
def test_private_key_pem_round_trip(key_type, header):
    key = pki.generate_private_key(key_type)
    text = pki.private_key_pem(key)
    assert text.startswith("-----BEGIN %s-----" % header)
    cert = x509.load_pem_x509_certificate(FakeCA().issue(key.public_key(), CN).encode())
    assert pki.matches_key(cert, pki.load_private_key(text))
    assert not pki.matches_key(cert, pki.generate_private_key(key_type))


def test_load_private_key_refuses_without_echoing():
    garbage = "-----BEGIN EC PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n-----END EC PRIVATE KEY-----\n"
    with pytest.raises(FleetError) as exc_info:
        pki.load_private_key(garbage)
    assert "c2VjcmV0" not in str(exc_info.value) and "not an unencrypted PEM private key" in str(exc_info.value)


@pytest.mark.parametrize("key_type", ["ecdsa", "rsa"])
def test_csr_subject_signature_and_key(key_type):
    key = pki.generate_private_key(key_type)
    request = x509.load_pem_x509_csr(pki.csr_pem(key, CN, [ORG, "second"]).encode())
    assert request.is_signature_valid
    assert [a.value for a in request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == [CN]
    assert [a.value for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [ORG, "second"]
    assert pki.matches_key(request, key)


def test_load_certificates_bundle_and_errors(ca, rsa_ca):
    certs = pki.load_certificates(ca.pem + "\n" + rsa_ca.pem)
    assert [c.subject for c in certs] == [ca.cert.subject, rsa_ca.cert.subject]
    assert len(pki.load_certificates(ca.pem.encode())) == 1
    with pytest.raises(FleetError, match="the CA bundle holds no PEM certificate"):
        pki.load_certificates("hello", "CA bundle")
    with pytest.raises(FleetError, match="holds no PEM certificate"):
        pki.load_certificates(None)
    with pytest.raises(FleetError, match="not a valid PEM certificate"):
        pki.load_certificates("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")


def test_describe(ca):
    start = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    cert_pem, dummy = ca.client(CN, [ORG], days=10, not_before=start)
    summary = pki.describe(pki.load_certificates(cert_pem)[0])
    assert summary["common_name"] == CN and summary["organizations"] == [ORG] and summary["issuer"] == "hub-ca"
    assert (summary["not_before"], summary["not_after"]) == ("2026-01-02T03:04:05Z", "2026-01-12T03:04:05Z")
    assert int(summary["serial_number"], 16) > 0


def test_issued_by_checks_name_and_signature(ca, rsa_ca):
    for issuer in (ca, rsa_ca):
        cert = pki.load_certificates(issuer.client(CN)[0])[0]
        assert pki.issued_by(cert, issuer.cert)
    cert = pki.load_certificates(ca.client(CN)[0])[0]
    assert not pki.issued_by(cert, rsa_ca.cert)
    impostor = FakeCA("hub-ca")  # same name, another key: the signature decides
    assert impostor.cert.subject == ca.cert.subject
    assert not pki.issued_by(cert, impostor.cert)


class TestClientCertificateProblem:
    def problem(self, ca, cert_pem, key, **kwargs):
        kwargs.setdefault("ca_pem", ca.pem)
        return pki.client_certificate_problem(cert_pem, key, common_name=CN, organization=ORG, **kwargs)

    def test_good(self, ca):
        cert_pem, key = ca.client(CN, [ORG])
        assert self.problem(ca, cert_pem, key) is None
        assert self.problem(ca, cert_pem, key, renew_before=datetime.timedelta(days=30)) is None
        assert self.problem(ca, cert_pem, key, ca_pem=FakeCA("other").pem + ca.pem) is None  # any CA of the bundle

    def test_identity(self, ca):
        cert_pem, key = ca.client("system:karmada:agent:other", [ORG])
        assert self.problem(ca, cert_pem, key) == "the certificate is for system:karmada:agent:other, not %s" % CN
        cert_pem, key = ca.client(CN, ["system:masters"])
        assert "lack system:karmada:agents" in self.problem(ca, cert_pem, key)
        assert pki.client_certificate_problem(cert_pem, key, ca.pem, CN) is None  # no organization asked for

    def test_key_and_issuer(self, ca):
        cert_pem, dummy = ca.client(CN, [ORG])
        other_key = key_pem(ec.generate_private_key(ec.SECP256R1()))
        assert self.problem(ca, cert_pem, other_key) == "the certificate does not match the stored private key"
        cert_pem, key = FakeCA().client(CN, [ORG])
        assert self.problem(ca, cert_pem, key) == "the certificate was not issued by the stored hub CA"

    def test_validity_window(self, ca):
        now = datetime.datetime.now(UTC)
        cert_pem, key = ca.client(CN, [ORG], days=10, not_before=now - datetime.timedelta(days=11))
        assert "expired at" in self.problem(ca, cert_pem, key)
        cert_pem, key = ca.client(CN, [ORG], days=10, not_before=now + datetime.timedelta(days=1))
        assert "not valid before" in self.problem(ca, cert_pem, key)
        cert_pem, key = ca.client(CN, [ORG], days=40, not_before=now - datetime.timedelta(days=20))
        assert "within the renewal window" in self.problem(ca, cert_pem, key, renew_before=datetime.timedelta(days=30))
        assert self.problem(ca, cert_pem, key, renew_before=datetime.timedelta(days=19)) is None
        assert "within the renewal window" in self.problem(ca, cert_pem, key, renew_before=datetime.timedelta(days=19),
                                                           now=now + datetime.timedelta(days=2))

    @pytest.mark.parametrize("what", ["cert", "key", "ca"])
    def test_garbage(self, ca, what):
        cert_pem, key = ca.client(CN, [ORG])
        args = {"cert": cert_pem, "key": key, "ca": ca.pem}
        args[what] = "garbage"
        problem = pki.client_certificate_problem(args["cert"], args["key"], args["ca"], CN)
        assert problem and "garbage" not in problem


def test_rfc3339():
    assert pki.rfc3339(datetime.datetime(2027, 1, 2, 3, 4, 5)) == "2027-01-02T03:04:05Z"
    east = datetime.timezone(datetime.timedelta(hours=2))
    assert pki.rfc3339(datetime.datetime(2027, 1, 2, 3, 4, 5, tzinfo=east)) == "2027-01-02T01:04:05Z"


def test_kubeconfig_with_client_certificate_loads_in_the_kubernetes_client(ca):
    cert_pem, key = ca.client(CN, [ORG])
    parts = dict(server="https://hub:6443", ca_pem=ca.pem, client_cert_pem=cert_pem, client_key_pem=key)
    text = pki.kubeconfig(parts, "karmada-apiserver", "member1", "member1@karmada-apiserver")
    config = yaml.safe_load(text)
    assert list(config) == ["apiVersion", "kind", "clusters", "users", "contexts", "current-context"]
    assert config["users"] == [{"name": "member1", "user": {
        "client-certificate-data": base64.b64encode(cert_pem.encode()).decode(),
        "client-key-data": base64.b64encode(key.encode()).decode()}}]
    loaded = Configuration()
    load_kube_config_from_dict(config, client_configuration=loaded, persist_config=False)
    assert loaded.host == "https://hub:6443" and loaded.cert_file and loaded.key_file
    assert pki.read_kubeconfig(text) == dict(parts, proxy_url=None, token=None)


def test_read_kubeconfig_token_and_current_context(ca):
    text = pki.kubeconfig(dict(server="https://hub:6443", ca_pem=ca.pem, token="abcdef.0123456789abcdef"),
                          "hub", "bootstrap", "bootstrap")
    config = yaml.safe_load(text)
    config["clusters"].insert(0, {"name": "other", "cluster": {"server": "https://other:1"}})
    config["contexts"].insert(0, {"name": "x", "context": {"cluster": "other", "user": "nobody"}})
    parts = pki.read_kubeconfig(yaml.safe_dump(config))
    assert (parts["server"], parts["token"], parts["ca_pem"], parts["client_cert_pem"]) == (
        "https://hub:6443", "abcdef.0123456789abcdef", ca.pem, None)


def test_kubeconfig_through_a_proxy_trusts_the_proxy_ca_too(ca):
    proxy_ca = FakeCA("proxy-ca")
    bundle = pki.merge_certificates(ca.pem, None, proxy_ca.pem + ca.pem)  # each certificate once, in order
    assert [pki.describe(c)["common_name"] for c in pki.load_certificates(bundle)] == [
        pki.describe(pki.load_certificates(ca.pem)[0])["common_name"], "proxy-ca"]
    text = pki.kubeconfig(dict(server="https://hub:6443", ca_pem=bundle, token="abcdef.0123456789abcdef",
                               proxy_url="http://proxy.example:3128"), "hub", "bootstrap", "bootstrap")
    assert yaml.safe_load(text)["clusters"][0]["cluster"]["proxy-url"] == "http://proxy.example:3128"
    parts = pki.read_kubeconfig(text)
    assert parts["proxy_url"] == "http://proxy.example:3128" and parts["ca_pem"] == bundle
    loaded = Configuration()
    load_kube_config_from_dict(yaml.safe_load(text), client_configuration=loaded, persist_config=False)
    assert loaded.proxy == "http://proxy.example:3128"  # as the kubernetes client reads it
    with pytest.raises(FleetError, match="the CA bundle holds no PEM certificate"):
        pki.merge_certificates(ca.pem, "junk")


@pytest.mark.parametrize("text, fragment", [
    ("", "is not a kubeconfig"),
    ("[1, 2]", "is not a kubeconfig"),
    ("a: [", "is not a kubeconfig"),
    ("current-context: nope\ncontexts: []\n", "no usable current-context"),
    ("current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
     "clusters: [{name: k, cluster: {server: 'https://h', certificate-authority-data: '!!'}}]\n", "not base64"),
])
def test_read_kubeconfig_refuses(text, fragment):
    with pytest.raises(FleetError, match=fragment):
        pki.read_kubeconfig(text, "stored kubeconfig")
