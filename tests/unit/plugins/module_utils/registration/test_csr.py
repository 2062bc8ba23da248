"""CSR rules: every way an agent CSR can ask for more than its cluster's client identity is refused."""

import base64
import functools
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from ansible_collections.multicluster.fleet.plugins.module_utils.registration import csr
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.engine import OcmEngine

KARMADA_CN = "system:karmada:agent:east"
KARMADA_O = ("system:karmada:agents",)
OCM_CN = "system:open-cluster-management:east:k7x2p"
OCM_O = ("system:open-cluster-management:east", "system:open-cluster-management:managed-clusters")
BOOTSTRAP = dict(username="system:bootstrap:abc123",
                 groups=["system:bootstrappers", "system:bootstrappers:managedcluster", "system:authenticated"])


@functools.lru_cache(maxsize=None)
def key(kind="ec256"):
    """Keys are slow to make; each kind is made once per session."""
    return {
        "rsa1024": lambda: rsa.generate_private_key(65537, 1024),
        "rsa2048": lambda: rsa.generate_private_key(65537, 2048),
        "ec256": lambda: ec.generate_private_key(ec.SECP256R1()),
        "ec384": lambda: ec.generate_private_key(ec.SECP384R1()),
        "ec521": lambda: ec.generate_private_key(ec.SECP521R1()),
        "ec256k1": lambda: ec.generate_private_key(ec.SECP256K1()),
        "ed25519": ed25519.Ed25519PrivateKey.generate,
        "dsa": lambda: dsa.generate_private_key(2048),
    }[kind]()


def request_pem(cn=OCM_CN, orgs=OCM_O, kind="ec256", sans=None, attributes=(), common_names=None):
    names = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    names += [x509.NameAttribute(NameOID.COMMON_NAME, c) for c in (common_names if common_names is not None else [cn])]
    names += [x509.NameAttribute(oid, value) for oid, value in attributes]
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    signing_key = key(kind)
    algorithm = None if kind == "ed25519" else hashes.SHA256()
    return builder.sign(signing_key, algorithm).public_bytes(serialization.Encoding.PEM)


def make(pem=None, signer="kubernetes.io/kube-apiserver-client", usages=("digital signature", "key encipherment", "client auth"), status=None,
         **spec):
    """A CSR as the API returns it; ``spec`` overrides username/groups and other spec fields."""
    pem = request_pem() if pem is None else pem
    body = dict(BOOTSTRAP, request=base64.b64encode(pem).decode(), signerName=signer, usages=list(usages))
    body.update(spec)
    obj = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
           "metadata": {"name": "east-abcde", "labels": {"open-cluster-management.io/cluster-name": "east"}},
           "spec": body}
    if status:
        obj["status"] = status
    return obj


def karmada_pem(**kwargs):
    kwargs.setdefault("cn", KARMADA_CN)
    kwargs.setdefault("orgs", KARMADA_O)
    kwargs.setdefault("kind", "rsa2048")
    return request_pem(**kwargs)


def reasons(engine, obj, cluster="east"):
    return csr.check(engine, cluster, obj)


def only(engine, obj, fragment, cluster="east"):
    """The CSR breaks exactly one rule, and the reason says which."""
    found = reasons(engine, obj, cluster)
    assert len(found) == 1 and fragment in found[0], found
    return found[0]


class TestAcceptable:
    def test_ocm_klusterlet_csr(self):
        # What the registration agent sends: EC P-256, O = both OCM groups, label and bootstrap token user.
        assert reasons("ocm", make()) == []

    def test_karmada_register_csr(self):
        assert reasons("karmada", make(karmada_pem(kind="rsa2048"),
                                       username="system:bootstrap:e214n7",
                                       groups=["system:bootstrappers", "system:bootstrappers:karmada:default-cluster-token"])) == []

    @pytest.mark.parametrize("kind", ["rsa2048", "ec256", "ec384", "ed25519"])
    def test_accepted_keys(self, kind):
        assert reasons("ocm", make(request_pem(kind=kind))) == []

    def test_usages_may_omit_digital_signature_and_key_encipherment(self):
        assert reasons("ocm", make(usages=["client auth"])) == []

    def test_ocm_bootstrap_service_account(self):
        user = "system:serviceaccount:open-cluster-management:agent-registration-bootstrap"
        assert reasons("ocm", make(username=user, groups=["system:serviceaccounts"])) == []

    def test_renewal_by_the_agent_itself(self):
        assert reasons("ocm", make(username=OCM_CN, groups=list(OCM_O))) == []
        assert reasons("karmada", make(karmada_pem(), username=KARMADA_CN, groups=list(KARMADA_O))) == []


class TestRefused:
    def test_system_masters(self):
        only("karmada", make(karmada_pem(orgs=["system:masters"])), "O must be exactly system:karmada:agents, it is system:masters")
        only("ocm", make(request_pem(orgs=OCM_O + ("system:masters",))), "O must be exactly")

    def test_another_clusters_identity(self):
        only("karmada", make(karmada_pem(cn="system:karmada:agent:west")), "CN system:karmada:agent:west is not system:karmada:agent:east")
        west = request_pem(cn="system:open-cluster-management:west:k7x2p",
                           orgs=["system:open-cluster-management:west", "system:open-cluster-management:managed-clusters"])
        found = reasons("ocm", make(west))
        assert len(found) == 2 and "CN system:open-cluster-management:west:k7x2p is not" in found[0] and "O must be" in found[1]

    def test_ocm_common_name_needs_one_agent_name(self):
        for cn in ("system:open-cluster-management:east", "system:open-cluster-management:east:",
                   "system:open-cluster-management:east:a:b", "system:open-cluster-management:east:addon:x"):
            assert any("is not system:open-cluster-management:east:<agent-name>" in r
                       for r in reasons("ocm", make(request_pem(cn=cn)))), cn

    def test_karmada_rbac_generator_identity(self):
        obj = make(karmada_pem(cn=csr.KARMADA_RBAC_GENERATOR))
        assert "is not system:karmada:agent:east" in reasons("karmada", obj)[0]

    def test_server_auth(self):
        only("ocm", make(usages=["digital signature", "key encipherment", "client auth", "server auth"]), "usage server auth is not allowed")

    def test_other_usages(self):
        only("ocm", make(usages=["client auth", "code signing", "any"]), "usages any, code signing are not allowed")

    def test_missing_client_auth(self):
        only("ocm", make(usages=["digital signature"]), "usage client auth is missing")

    @pytest.mark.parametrize("san, shown", [
        (x509.DNSName("hub.example.com"), "DNS:hub.example.com"),
        (x509.IPAddress(ipaddress.ip_address("10.0.0.1")), "IP:10.0.0.1"),
        (x509.UniformResourceIdentifier("spiffe://east/agent"), "URI:spiffe://east/agent"),
        (x509.RFC822Name("agent@example.com"), "email:agent@example.com"),
    ])
    def test_subject_alternative_names(self, san, shown):
        only("ocm", make(request_pem(sans=[san])), "subject alternative names are not allowed, it asks for %s" % shown)

    def test_wrong_signer(self):
        only("ocm", make(signer="kubernetes.io/kube-apiserver-client-kubelet"), "signer is kubernetes.io/kube-apiserver-client-kubelet")
        only("ocm", make(signer=None), "signer is unset")

    @pytest.mark.parametrize("kind, shown", [("rsa1024", "RSA 1024 bits"), ("ec521", "ECDSA on secp521r1"),
                                             ("ec256k1", "ECDSA on secp256k1"), ("dsa", "DSAPublicKey")])
    def test_weak_or_unusual_keys(self, kind, shown):
        only("ocm", make(request_pem(kind=kind)), "key %s is not accepted" % shown)

    def test_extra_subject_attributes(self):
        pem = request_pem(attributes=[(NameOID.ORGANIZATIONAL_UNIT_NAME, "admins")])
        only("ocm", make(pem), "the subject may only hold CN and O, it also has OU=admins")

    def test_two_common_names(self):
        only("ocm", make(request_pem(common_names=[OCM_CN, "system:admin"])), "exactly one CN, it has 2")

    def test_requester_is_no_bootstrap_identity(self):
        found = only("ocm", make(username="kubernetes-admin", groups=["system:masters"]), "requester kubernetes-admin is neither")
        assert "agent-registration-bootstrap" in found
        found = only("karmada", make(karmada_pem(), username="kubernetes-admin", groups=["system:masters"]), "requester kubernetes-admin")
        assert "agent-registration-bootstrap" not in found

    def test_bootstrap_user_without_bootstrap_group(self):
        only("ocm", make(groups=["system:authenticated"]), "requester system:bootstrap:abc123 is not in group system:bootstrappers")

    def test_ocm_service_account_is_no_karmada_bootstrap_identity(self):
        user = "system:serviceaccount:open-cluster-management:agent-registration-bootstrap"
        only("karmada", make(karmada_pem(), username=user, groups=["system:serviceaccounts"]), "requester %s" % user)

    def test_another_agent_renewing_for_this_cluster(self):
        only("ocm", make(username="system:open-cluster-management:west:k7x2p"), "requester system:open-cluster-management:west:k7x2p")
        only("karmada", make(karmada_pem(), username="system:karmada:agent:west"), "requester system:karmada:agent:west")
        # an OCM agent of this cluster may renew its own identity only, not mint another agent name
        only("ocm", make(username="system:open-cluster-management:east:other"), "requester system:open-cluster-management:east:other")

    def test_tampered_request(self):
        pem = bytearray(request_pem(kind="rsa2048"))
        der = x509.load_pem_x509_csr(bytes(pem)).public_bytes(serialization.Encoding.DER)
        tampered = der.replace(b"east", b"west", 1)
        body = base64.encodebytes(tampered).decode()
        tampered_pem = ("-----BEGIN CERTIFICATE REQUEST-----\n%s-----END CERTIFICATE REQUEST-----\n" % body).encode()
        found = reasons("ocm", make(tampered_pem))
        assert "the request's signature does not verify" in found

    @pytest.mark.parametrize("request_value, fragment", [
        ("not base64!", "spec.request is not base64-encoded PEM text"),
        (base64.b64encode(b"hello").decode(), "exactly one PEM block CERTIFICATE REQUEST, found none"),
        (None, "found none"),
    ])
    def test_unreadable_request(self, request_value, fragment):
        obj = make()
        obj["spec"]["request"] = request_value
        assert fragment in reasons("ocm", obj)[0]

    def test_extra_pem_blocks(self):
        key_pem = key("ec256").private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption())
        found = reasons("ocm", make(request_pem() + key_pem))
        assert "found CERTIFICATE REQUEST, PRIVATE KEY" in found[0]
        assert "found CERTIFICATE REQUEST, CERTIFICATE REQUEST" in reasons("ocm", make(request_pem() * 2))[0]

    def test_every_broken_rule_is_reported(self):
        obj = make(request_pem(kind="rsa1024", orgs=["system:masters"], sans=[x509.DNSName("x")]),
                   signer="example.com/other", usages=["server auth"], username="mallory", groups=[])
        assert len(reasons("ocm", obj)) == 7

    def test_unknown_engine(self):
        with pytest.raises(FleetError, match="engine must be one of karmada, ocm, got 'fleetd'"):
            csr.check("fleetd", "east", make())


class TestReading:
    def test_state(self):
        def cond(kind, status="True"):
            return {"conditions": [{"type": kind, "status": status}]}
        assert csr.state(make()) == csr.PENDING
        assert csr.state(make(status=cond("Approved"))) == csr.APPROVED
        assert csr.state(make(status={"conditions": [{"type": "Approved", "status": "True"}, {"type": "Failed", "status": "True"}]})) == csr.FAILED
        assert csr.state(make(status=cond("Denied"))) == csr.DENIED
        assert csr.state(make(status=cond("Approved", "False"))) == csr.PENDING

    def test_issued(self):
        assert not csr.issued(make(status={"conditions": []}))
        assert csr.issued(make(status={"certificate": "LS0t"}))

    def test_common_name(self):
        assert csr.common_name(make()) == OCM_CN
        assert csr.common_name(make(request_pem(common_names=[]))) is None
        broken = make()
        broken["spec"]["request"] = "%%%"
        assert csr.common_name(broken) is None

    def test_ocm_agent_name(self):
        assert OcmEngine.agent_name("east", OCM_CN) == "k7x2p"
        assert OcmEngine.agent_name("eas", OCM_CN) is None
        assert OcmEngine.agent_name("east", None) is None
