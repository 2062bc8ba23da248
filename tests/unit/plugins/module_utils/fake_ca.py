"""A certificate authority for unit tests: signs CSRs and client certificates like a hub's signer."""

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

UTC = datetime.timezone.utc


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode("ascii")


def subject(common_name, organizations=()):
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
                     + [x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class FakeCA:
    """A self-signed CA (``rsa=True`` for an RSA key, else ECDSA P-256) that issues client certificates."""

    def __init__(self, name="hub-ca", rsa_key=False):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048) if rsa_key else ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(UTC)
        self.cert = (
            x509.CertificateBuilder().subject_name(subject(name)).issuer_name(subject(name))
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.pem = pem(self.cert)

    def issue(self, public_key, common_name, organizations=(), days=365, not_before=None):
        """A client certificate for ``public_key``, valid from ``not_before`` (default a minute ago) for ``days``."""
        start = not_before or datetime.datetime.now(UTC) - datetime.timedelta(minutes=1)
        return pem(
            x509.CertificateBuilder().subject_name(subject(common_name, organizations)).issuer_name(self.cert.subject)
            .public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(start + datetime.timedelta(days=days))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(self.key, hashes.SHA256())
        )

    def sign_request(self, request_pem, days=365):
        """Sign a PEM CSR as the kube-apiserver-client signer does (subject copied, client auth)."""
        request = x509.load_pem_x509_csr(request_pem.encode("ascii") if isinstance(request_pem, str) else request_pem)
        names = request.subject
        common_name = names.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        organizations = [a.value for a in names.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        return self.issue(request.public_key(), common_name, organizations, days=days)

    def client(self, common_name, organizations=(), days=365, not_before=None):
        """``(cert_pem, key_pem)`` of a new client key pair."""
        key = ec.generate_private_key(ec.SECP256R1())
        return self.issue(key.public_key(), common_name, organizations, days, not_before), key_pem(key)
