# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private keys, certificate signing requests, certificates and kubeconfigs.

What a TLS bootstrap needs on the joining side: a fresh private key, a PKCS#10 request with the
identity the hub expects, checks on the certificate that comes back (or that an earlier run stored),
and the kubeconfig that carries server, CA and credentials.

Messages never contain key material or tokens.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import datetime

from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# cryptography is imported on first need (require_cryptography), not with this module: a task that only
# reads the API pays nothing for it.
x509 = InvalidSignature = UnsupportedAlgorithm = hashes = serialization = ec = ed25519 = padding = rsa = NameOID = None
CRYPTOGRAPHY_IMPORT_ERROR = None

try:
    import yaml
except ImportError as exc:  # pragma: no cover - reported when a function needs it
    YAML_IMPORT_ERROR = exc
else:
    YAML_IMPORT_ERROR = None

KEY_TYPES = ("ecdsa", "rsa")
UTC = datetime.timezone.utc


def require_cryptography():
    """Import the cryptography library for this module's functions; a FleetError when it is missing."""
    global x509, InvalidSignature, UnsupportedAlgorithm, hashes, serialization, ec, ed25519, padding, rsa, NameOID
    global CRYPTOGRAPHY_IMPORT_ERROR
    if CRYPTOGRAPHY_IMPORT_ERROR is None and x509 is None:
        try:
            from cryptography import x509
            from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
            from cryptography.x509.oid import NameOID
        except ImportError as exc:
            CRYPTOGRAPHY_IMPORT_ERROR = exc
    if CRYPTOGRAPHY_IMPORT_ERROR is not None:
        raise FleetError("the cryptography Python library is required: %s" % CRYPTOGRAPHY_IMPORT_ERROR)


def require_yaml():
    """Raise a FleetError when PyYAML is missing."""
    if YAML_IMPORT_ERROR is not None:
        raise FleetError("the PyYAML Python library is required: %s" % YAML_IMPORT_ERROR)


def _bytes(data):
    return data.encode("ascii") if isinstance(data, str) else bytes(data)


def rfc3339(moment):
    """``2027-11-23T04:00:00Z`` for an aware or naive (UTC) datetime."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- keys and requests ------------------------------------------------------------------------


def generate_private_key(key_type="ecdsa"):
    """A new private key: ECDSA P-256 (default) or RSA 2048."""
    require_cryptography()
    if key_type == "ecdsa":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    raise FleetError("unknown key type %r; known: %s" % (key_type, ", ".join(KEY_TYPES)))


def private_key_pem(key):
    """The key as unencrypted PEM text (``EC PRIVATE KEY`` / ``RSA PRIVATE KEY``, as client-go writes them)."""
    require_cryptography()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode("ascii")


def load_private_key(pem):
    """Load an unencrypted PEM private key; FleetError (without the key) when it is not one."""
    require_cryptography()
    try:
        return serialization.load_pem_private_key(_bytes(pem), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise FleetError("the private key is not an unencrypted PEM private key")


def csr_pem(key, common_name, organizations=()):
    """A PKCS#10 request (PEM text) for subject CN=``common_name``, O=``organizations``, signed by ``key``."""
    require_cryptography()
    names = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    names += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    request = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names))
    signed = request.sign(key, None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256())
    return signed.public_bytes(serialization.Encoding.PEM).decode("ascii")


# --- certificates -----------------------------------------------------------------------------


def load_certificates(pem, what="certificate"):
    """Every certificate of a PEM text (str or bytes), in order; FleetError naming ``what`` when there is none."""
    require_cryptography()
    data = _bytes(pem or b"")
    marker = b"-----BEGIN CERTIFICATE-----"
    blocks = [marker + part for part in data.split(marker)[1:]]
    if not blocks:
        raise FleetError("the %s holds no PEM certificate" % what)
    try:
        return [x509.load_pem_x509_certificate(block) for block in blocks]
    except ValueError as exc:
        raise FleetError("the %s is not a valid PEM certificate: %s" % (what, exc))


def _names(name, oid):
    return [attribute.value for attribute in name.get_attributes_for_oid(oid)]


def not_after(certificate):
    """The end of validity as an aware UTC datetime."""
    moment = getattr(certificate, "not_valid_after_utc", None)
    return moment or certificate.not_valid_after.replace(tzinfo=UTC)


def not_before(certificate):
    """The start of validity as an aware UTC datetime."""
    moment = getattr(certificate, "not_valid_before_utc", None)
    return moment or certificate.not_valid_before.replace(tzinfo=UTC)


def describe(certificate):
    """A summary fit for results: subject CN and O, issuer CN, validity (RFC 3339), serial number."""
    require_cryptography()
    return {
        "common_name": (_names(certificate.subject, NameOID.COMMON_NAME) or [None])[0],
        "organizations": _names(certificate.subject, NameOID.ORGANIZATION_NAME),
        "issuer": (_names(certificate.issuer, NameOID.COMMON_NAME) or [None])[0],
        "not_before": rfc3339(not_before(certificate)),
        "not_after": rfc3339(not_after(certificate)),
        "serial_number": "%x" % certificate.serial_number,
    }


def _public_der(key):
    require_cryptography()
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def fingerprint(certificate):
    """The SHA-256 fingerprint (lowercase hex) of ``certificate``'s DER encoding, as ``openssl x509 -fingerprint -sha256``."""
    require_cryptography()
    return binascii.hexlify(certificate.fingerprint(hashes.SHA256())).decode("ascii")


def matches_key(certificate, private_key):
    """True when the certificate carries the public half of ``private_key``."""
    return _public_der(certificate.public_key()) == _public_der(private_key.public_key())


def issued_by(certificate, issuer):
    """True when ``issuer`` (a CA certificate) signed ``certificate``: issuer name and signature both match."""
    require_cryptography()
    if certificate.issuer != issuer.subject:
        return False
    key = issuer.public_key()
    signature, data = certificate.signature, certificate.tbs_certificate_bytes
    try:
        if isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, data, padding.PKCS1v15(), certificate.signature_hash_algorithm)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, data, ec.ECDSA(certificate.signature_hash_algorithm))
        elif isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, data)
        else:
            return False
    except (InvalidSignature, UnsupportedAlgorithm, ValueError, TypeError):
        return False
    return True


def client_certificate_problem(cert_pem, key_pem, ca_pem, common_name, organization=None, renew_before=None, now=None):
    """Why a stored client certificate cannot be reused, or ``None`` when it can.

    Reusable means: it parses, its subject CN is ``common_name`` (and O includes ``organization`` when
    given), it carries the public half of ``key_pem``, one certificate of the CA bundle ``ca_pem`` signed
    it, it is valid now and stays valid for longer than ``renew_before`` (a timedelta).
    """
    try:
        certificate = load_certificates(cert_pem, "client certificate")[0]
        key = load_private_key(key_pem)
        cas = load_certificates(ca_pem, "CA bundle")
    except FleetError as exc:
        return exc.msg
    summary = describe(certificate)
    if summary["common_name"] != common_name:
        return "the certificate is for %s, not %s" % (summary["common_name"], common_name)
    if organization and organization not in summary["organizations"]:
        return "the certificate's organizations %s lack %s" % (summary["organizations"], organization)
    if not matches_key(certificate, key):
        return "the certificate does not match the stored private key"
    if not any(issued_by(certificate, ca) for ca in cas):
        return "the certificate was not issued by the stored hub CA"
    now = now or datetime.datetime.now(UTC)
    if now < not_before(certificate):
        return "the certificate is not valid before %s" % summary["not_before"]
    if now >= not_after(certificate):
        return "the certificate expired at %s" % summary["not_after"]
    if renew_before and now + renew_before >= not_after(certificate):
        return "the certificate expires at %s, within the renewal window" % summary["not_after"]
    return None


# --- kubeconfigs ------------------------------------------------------------------------------


def b64(data):
    """Base64 text of a str or bytes value, as Secret data and kubeconfig ``*-data`` fields hold it."""
    return base64.b64encode(_bytes(data)).decode("ascii")


def yaml_text(data):
    """``data`` as block-style YAML text, keys in the given order."""
    require_yaml()
    return yaml.safe_dump(data, default_flow_style=False, sort_keys=False)


def merge_certificates(*bundles):
    """The PEM text of the certificates of several PEM bundles (None skipped), in order, each once.

    As ``clusteradm join --proxy-ca-file`` adds the proxy's CA to the hub CA of a kubeconfig.
    """
    merged = []
    for bundle in bundles:
        if bundle:
            for certificate in load_certificates(bundle, "CA bundle"):
                text = certificate.public_bytes(serialization.Encoding.PEM).decode("ascii")
                if text not in merged:
                    merged.append(text)
    return "".join(merged)


def kubeconfig(parts, cluster, user, context):
    """The YAML text of a kubeconfig with one cluster, one user and one context, named ``cluster``, ``user`` and
    ``context``: the inverse of :func:`read_kubeconfig`.

    ``parts`` are what :func:`read_kubeconfig` returns: ``server``, ``ca_pem``, the credentials (a ``token``, or
    ``client_cert_pem`` and ``client_key_pem``) and, optional, ``proxy_url``, which becomes the cluster's
    ``proxy-url``: the forward proxy clients reach the server through.
    """
    credentials = {"token": parts["token"]} if parts.get("token") else {
        "client-certificate-data": b64(parts.get("client_cert_pem")),
        "client-key-data": b64(parts.get("client_key_pem")),
    }
    cluster_entry = {"server": parts["server"], "certificate-authority-data": b64(parts["ca_pem"])}
    if parts.get("proxy_url"):
        cluster_entry["proxy-url"] = parts["proxy_url"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": cluster_entry}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": user}}],
        "current-context": context,
    }
    return yaml_text(config)


def _named(entries, name, key):
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name and isinstance(entry.get(key), dict):
            return entry[key]
    return None


def _decoded(value, what):
    if not value:
        return None
    try:
        return base64.b64decode(value, validate=True).decode("ascii")
    except (binascii.Error, ValueError, TypeError):
        raise FleetError("the kubeconfig's %s is not base64-encoded PEM" % what)


def read_kubeconfig(text, what="kubeconfig"):
    """Server, CA and embedded credentials of a kubeconfig's current context.

    Returns ``dict(server, proxy_url, ca_pem, token, client_cert_pem, client_key_pem)`` (missing parts are None);
    FleetError naming ``what`` when it is not a kubeconfig with a usable current context.
    """
    require_yaml()
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        config = None
    if not isinstance(config, dict):
        raise FleetError("the %s is not a kubeconfig" % what)
    context = _named(config.get("contexts"), config.get("current-context"), "context")
    if context is None:
        raise FleetError("the %s has no usable current-context" % what)
    cluster = _named(config.get("clusters"), context.get("cluster"), "cluster") or {}
    user = _named(config.get("users"), context.get("user"), "user") or {}
    return {
        "server": cluster.get("server"),
        "proxy_url": cluster.get("proxy-url") or None,
        "ca_pem": _decoded(cluster.get("certificate-authority-data"), "certificate-authority-data"),
        "token": user.get("token"),
        "client_cert_pem": _decoded(user.get("client-certificate-data"), "client-certificate-data"),
        "client_key_pem": _decoded(user.get("client-key-data"), "client-key-data"),
    }
