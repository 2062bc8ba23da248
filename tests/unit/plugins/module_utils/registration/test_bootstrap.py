# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for module_utils/bootstrap.py (no network; a loopback TLS server at most)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import hashlib
import http.server
import ipaddress
import json
import os
import ssl
import tempfile
import threading
import urllib.error

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

UTC = datetime.timezone.utc
TOKEN_ID = "e214n7"
SECRET = "q4k7zw2m9xv1c8bt"
TOKEN = TOKEN_ID + "." + SECRET

# The real lab hub CA, as published in kube-public/cluster-info (recorded from a real karmadactl register).
REF_CA_PEM = """-----BEGIN CERTIFICATE-----
MIIDBTCCAe2gAwIBAgIUEd+myvwl5I3oa+FlPorLRqPPlTkwDQYJKoZIhvcNAQEL
BQAwEjEQMA4GA1UEAwwHa2h1Yi1jYTAeFw0yNjExMjIwMzE4MzJaFw0zNjExMTkw
MzE4MzJaMBIxEDAOBgNVBAMMB2todWItY2EwggEiMA0GCSqGSIb3DQEBAQUAA4IB
DwAwggEKAoIBAQDH378n32NN5wMkCAUfF4vGXcHi6kRtHskQEg6oJy97xubW/10H
CY4H/rlr1mwHdYZ9NuVwE1OdHODHeVE8T+Ae/K8NiPhTDoUsLRhLeI0puowpc0vG
IZdjwMxxd1nkeQEZMTa8wKHzCyS/+/Au4PuYMVpB0LzqvjScjnGetPNAbfS+zv24
ubVwweancXrAxdMfO+SUJ+zKFtPS/J8E3NA7T/PoON4+BGRhg6J/hgyI2M62n9JE
lKbZLL/JMxSSmVRZ7BsIBJyfsDefSO0NQcgbKKD3qbXlPyxtGAxjRcfGQ0jWANJl
cfNawQoJ7Lu3xYfcxOFDXsSj3OOVoQRcsBNpAgMBAAGjUzBRMB0GA1UdDgQWBBQp
CulkPQvNxX01KCMqTYSQS9WvUDAfBgNVHSMEGDAWgBQpCulkPQvNxX01KCMqTYSQ
S9WvUDAPBgNVHRMBAf8EBTADAQH/MA0GCSqGSIb3DQEBCwUAA4IBAQB/y1c4KwD6
LukL497XGKki9+fiGyASqnX8cYqaoYIePQFP3rTxMtbfONYMRcMzTRKszFOb2+9M
/xYTPaJwFHi2tZ6SLtXJhcY2NWPg7hNwxcd+ycSeXVRTImfCaRgZedMUC3JRLQtC
KXqqfffsl2MBTgMU9RhYWQJxwk7+bA3iCH5Gy/YuSj8VCQ73K3e4syvm55Q1NH+b
1GuDEHy7jHwjGh0ec62tLpimSWuR91AZd1RI3nhVOJo7l5BhnbUaocodm1dJf1IO
Me+Ydo1HSgObflAwQf2xG3WFVT4qMnk06gCGGSg/GC31vUFOgwBpQYqDX0xGNqd0
B8ZrBnax+IGg
-----END CERTIFICATE-----
"""
# openssl x509 -in ca.pem -pubkey -noout | openssl pkey -pubin -outform der | sha256sum
REF_CA_PIN = "sha256:7877f4b21bc834bd68751fe486fccd6d66b4375710126c7489fa7a22a306b426"
# The kubeconfig value of the real cluster-info, byte for byte.
REF_KUBECONFIG = (
    'apiVersion: v1\nkind: Config\nclusters:\n- name: ""\n  cluster: {server: https://127.0.0.1:17443, '
    "certificate-authority-data: %s}" % base64.b64encode(REF_CA_PEM.encode("ascii")).decode("ascii")
)
# The real bootstrapsigner's header for token id e214n7 (recorded from a real karmadactl register).
REF_JWS_HEADER = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImUyMTRuNyJ9"
# REF_KUBECONFIG signed with SECRET, computed independently:
#   H=$(printf '%s' '{"alg":"HS256","kid":"e214n7"}' | basenc --base64url | tr -d '=\n')
#   P=$(basenc --base64url -w0 kubeconfig.txt | tr -d '=')
#   printf '%s.%s' "$H" "$P" | openssl dgst -sha256 -hmac q4k7zw2m9xv1c8bt -binary | basenc --base64url
REF_JWS = REF_JWS_HEADER + "..Z0J5Lp3rnVhYGocAu9PeyDI0ojSBmlZxXJuTMWqFsns"

# Kubernetes' own vectors (k8s.io/cluster-bootstrap/token/jws/jws_test.go), produced by go-jose.
K8S_CONTENT = "Hello from the other side. I must have called a thousand times."
K8S_ID = "joshua"
K8S_SECRET = "my voice is my passcode"
K8S_VECTORS = [
    (K8S_CONTENT, K8S_SECRET, "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8"),
    ("", K8S_SECRET, "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk"),
    (K8S_CONTENT, "", "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8"),
]


def b64(text):
    return base64.b64encode(text.encode()).decode()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def assert_no_secret(exc_info, *secrets):
    """The failure message (and its details) must not contain the token secret nor the token."""
    for value in secrets or (SECRET, TOKEN):
        assert value not in str(exc_info.value)
        assert value not in repr(exc_info.value.details)


# --- certificates for the tests ------------------------------------------------------------------


def make_cert(cn="hub-ca", key=None, issuer_cert=None, issuer_key=None, ca=True, san_ip=None):
    """A certificate (self-signed CA by default) and its key."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
        .issuer_name(issuer_cert.subject if issuer_cert else x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if san_ip:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(san_ip))]), critical=False)
    cert = builder.sign(issuer_key or key, hashes.SHA256())
    return cert, key


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def independent_pin(cert):
    spki = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(spki).hexdigest()


@pytest.fixture(scope="module")
def hub_ca():
    return make_cert("hub-ca")


@pytest.fixture(scope="module")
def other_ca():
    return make_cert("other-ca", key=rsa.generate_private_key(public_exponent=65537, key_size=2048))


# --- tokens -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["abcdef.0123456789abcdef", "000000.0000000000000000", "z9z9z9.a1b2c3d4e5f6g7h8", TOKEN])
def test_token_re_accepts(token):
    assert bootstrap.TOKEN_RE.fullmatch(token)
    assert bootstrap.parse_token(token) == tuple(token.split("."))


@pytest.mark.parametrize("token", [
    "", "abcdef", "abcdef.", ".0123456789abcdef", "ABCDEF.0123456789abcdef", "abcdef.0123456789ABCDEF",
    "abcde.0123456789abcdef", "abcdefg.0123456789abcdef", "abcdef.0123456789abcde", "abcdef.0123456789abcdef0",
    "abcdef:0123456789abcdef", "abcdef.0123456789abcdef\n", " abcdef.0123456789abcdef", "abc-ef.0123456789abcdef",
    "abcdef.0123456789abcdef.x", None, 42,
])
def test_parse_token_refuses_without_showing_value(token):
    with pytest.raises(FleetError) as exc_info:
        bootstrap.parse_token(token)
    assert bootstrap.TOKEN_FORMAT in str(exc_info.value)
    if isinstance(token, str) and token:
        assert token.strip() not in str(exc_info.value)


def test_generate_token_format_and_randomness():
    tokens = [bootstrap.generate_token() for dummy in range(300)]
    assert all(bootstrap.TOKEN_RE.fullmatch(t) for t in tokens)
    assert len(set(tokens)) == len(tokens)
    assert len(set(t.split(".")[0] for t in tokens)) > 290
    # every character of the alphabet shows up: uniform over [a-z0-9], not e.g. hex only
    assert set("".join(tokens).replace(".", "")) == set(bootstrap.TOKEN_CHARS)


def test_generate_token_id():
    ids = set(bootstrap.generate_token_id() for dummy in range(100))
    assert all(bootstrap.TOKEN_ID_RE.fullmatch(i) for i in ids)
    assert len(ids) > 95


def test_generate_token_uses_secrets_module(monkeypatch):
    monkeypatch.setattr(bootstrap.secrets, "choice", lambda seq: "7")
    assert bootstrap.generate_token() == "777777.7777777777777777"


# --- the token Secret ----------------------------------------------------------------------------


NOW = datetime.datetime(2026, 11, 22, 4, 0, 0, tzinfo=UTC)


def test_token_secret_exact_manifest():
    secret = bootstrap.token_secret(TOKEN_ID, SECRET, ttl_seconds=86400, now=NOW,
                                    groups=[bootstrap.KARMADA_DEFAULT_GROUP])
    assert secret == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "bootstrap-token-e214n7", "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "data": {
            "auth-extra-groups": "c3lzdGVtOmJvb3RzdHJhcHBlcnM6a2FybWFkYTpkZWZhdWx0LWNsdXN0ZXItdG9rZW4=",
            "expiration": "MjAyNi0xMS0yM1QwNDowMDowMFo=",
            "token-id": "ZTIxNG43",
            "token-secret": "cTRrN3p3Mm05eHYxYzhidA==",
            "usage-bootstrap-authentication": "dHJ1ZQ==",
            "usage-bootstrap-signing": "dHJ1ZQ==",
        },
    }
    data = secret["data"]
    assert base64.b64decode(data["expiration"]) == b"2026-11-23T04:00:00Z"
    assert base64.b64decode(data["auth-extra-groups"]) == b"system:bootstrappers:karmada:default-cluster-token"
    # same keys and value sizes as the Secret the real karmadactl token create made
    assert {k: len(v) for k, v in data.items()} == {
        "auth-extra-groups": 68, "expiration": 28, "token-id": 8, "token-secret": 24,
        "usage-bootstrap-authentication": 8, "usage-bootstrap-signing": 8,
    }


def test_token_secret_ocm_group_description_and_usage():
    secret = bootstrap.token_secret("abcdef", "0123456789abcdef", description="for kmember3",
                                    usages=["authentication"], groups=[bootstrap.OCM_DEFAULT_GROUP, "system:bootstrappers:x-y:z1"])
    data = secret["data"]
    assert sorted(data) == ["auth-extra-groups", "description", "token-id", "token-secret", "usage-bootstrap-authentication"]
    assert data["description"] == b64("for kmember3")
    assert data["auth-extra-groups"] == b64("system:bootstrappers:managedcluster,system:bootstrappers:x-y:z1")


@pytest.mark.parametrize("ttl", [None, 0])
def test_token_secret_without_ttl_never_expires(ttl):
    data = bootstrap.token_secret(TOKEN_ID, SECRET, ttl_seconds=ttl, now=NOW)["data"]
    assert "expiration" not in data
    assert "auth-extra-groups" not in data


def test_token_secret_naive_now_is_utc_and_other_zones_convert():
    naive = datetime.datetime(2026, 1, 1, 23, 30, 15)
    data = bootstrap.token_secret(TOKEN_ID, SECRET, ttl_seconds=3600, now=naive)["data"]
    assert base64.b64decode(data["expiration"]) == b"2026-01-02T00:30:15Z"
    plus2 = datetime.datetime(2026, 1, 1, 10, 0, 0, 123456, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    data = bootstrap.token_secret(TOKEN_ID, SECRET, ttl_seconds=60, now=plus2)["data"]
    assert base64.b64decode(data["expiration"]) == b"2026-01-01T08:01:00Z"


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(groups=["system:bootstrappers"]), "must match"),
    (dict(groups=["system:bootstrappers:"]), "must match"),
    (dict(groups=["system:bootstrappers:Karmada"]), "must match"),
    (dict(groups=["system:bootstrappers:foo-"]), "must match"),
    (dict(groups=["system:masters"]), "must match"),
    (dict(groups=["system:bootstrappers:" + "a" * 257]), "must match"),
    (dict(usages=["authentication", "admin"]), "unknown bootstrap token usage(s) admin"),
    (dict(usages=[]), "at least one usage"),
    (dict(usages=["signing"], groups=[bootstrap.OCM_DEFAULT_GROUP]), "authentication usage"),
    (dict(ttl_seconds=-5), "ttl_seconds"),
    (dict(ttl_seconds="3600"), "ttl_seconds"),
])
def test_token_secret_refuses(kwargs, fragment):
    with pytest.raises(FleetError) as exc_info:
        bootstrap.token_secret(TOKEN_ID, SECRET, **kwargs)
    assert fragment in str(exc_info.value)
    assert_no_secret(exc_info)


def test_token_secret_group_at_length_limit_accepted():
    group = "system:bootstrappers:" + "a" * 256
    assert bootstrap.token_secret(TOKEN_ID, SECRET, groups=[group])["data"]["auth-extra-groups"] == b64(group)


@pytest.mark.parametrize("token_id, secret", [("E214N7", SECRET), (TOKEN_ID, "short"), (TOKEN_ID, SECRET.upper())])
def test_token_secret_refuses_bad_token_without_showing_secret(token_id, secret):
    with pytest.raises(FleetError) as exc_info:
        bootstrap.token_secret(token_id, secret)
    assert_no_secret(exc_info, secret)


def test_read_token_secret_round_trip():
    manifest = bootstrap.token_secret(TOKEN_ID, SECRET, ttl_seconds=86400, now=NOW, description="d",
                                      groups=[bootstrap.KARMADA_DEFAULT_GROUP])
    info = bootstrap.read_token_secret(manifest, now=NOW)
    assert info == {
        "token_id": TOKEN_ID,
        "expiration": datetime.datetime(2026, 11, 23, 4, 0, 0, tzinfo=UTC),
        "usages": ["authentication", "signing"],
        "groups": [bootstrap.KARMADA_DEFAULT_GROUP],
        "description": "d",
        "expired": False,
    }
    assert SECRET not in repr(info)
    assert bootstrap.read_token_secret(manifest, now=datetime.datetime(2026, 11, 23, 4, 0, 1, tzinfo=UTC))["expired"]
    assert not bootstrap.read_token_secret(manifest, now=datetime.datetime(2026, 11, 23, 4, 0, 0))["expired"]
    assert bootstrap.token_secret_value(manifest) == SECRET


def test_read_token_secret_never_expiring_and_foreign_keys():
    manifest = bootstrap.token_secret(TOKEN_ID, SECRET, usages=["signing"])
    manifest["data"]["usage-bootstrap-authentication"] = b64("false")
    manifest["data"]["expiration"] = b64("")
    info = bootstrap.read_token_secret(manifest)
    assert info["expiration"] is None and info["expired"] is False
    assert info["usages"] == ["signing"] and info["groups"] == [] and info["description"] == ""


def test_read_token_secret_accepts_rfc3339_offsets():
    manifest = bootstrap.token_secret(TOKEN_ID, SECRET)
    manifest["data"]["expiration"] = b64("2026-11-23T06:00:00+02:00")
    assert bootstrap.read_token_secret(manifest)["expiration"] == datetime.datetime(2026, 11, 23, 4, 0, tzinfo=UTC)


@pytest.mark.parametrize("mutate, fragment", [
    (lambda s: s.update(type="Opaque"), "is not of type"),
    (lambda s: s["data"].pop("token-id"), "no valid token-id"),
    (lambda s: s["metadata"].update(name="bootstrap-token-zzzzzz"), "does not match its token-id"),
    (lambda s: s["data"].update(expiration=b64("tomorrow")), "not an RFC 3339"),
    (lambda s: s["data"].update(expiration=b64("2026-11-23T04:00:00")), "not an RFC 3339"),
    (lambda s: s["data"].update(description="%%%"), "not valid base64"),
])
def test_read_token_secret_refuses(mutate, fragment):
    manifest = bootstrap.token_secret(TOKEN_ID, SECRET)
    mutate(manifest)
    with pytest.raises(FleetError) as exc_info:
        bootstrap.read_token_secret(manifest)
    assert fragment in str(exc_info.value)
    assert_no_secret(exc_info)


def test_token_secret_value_missing():
    manifest = bootstrap.token_secret(TOKEN_ID, SECRET)
    del manifest["data"]["token-secret"]
    with pytest.raises(FleetError, match="has no token-secret"):
        bootstrap.token_secret_value(manifest)


# --- CA pins ------------------------------------------------------------------------------------


def test_ca_pin_fixed_vector():
    assert bootstrap.ca_pin(REF_CA_PEM) == REF_CA_PIN
    assert bootstrap.ca_pin(REF_CA_PEM.encode()) == REF_CA_PIN
    der = x509.load_pem_x509_certificate(REF_CA_PEM.encode()).public_bytes(serialization.Encoding.DER)
    assert bootstrap.ca_pin(der) == REF_CA_PIN


def test_ca_pin_generated_certs(hub_ca, other_ca):
    for cert, dummy in (hub_ca, other_ca):
        assert bootstrap.ca_pin(pem(cert)) == independent_pin(cert)
        assert bootstrap.ca_pin(cert.public_bytes(serialization.Encoding.DER)) == independent_pin(cert)
    assert independent_pin(hub_ca[0]) != independent_pin(other_ca[0])


def test_pin_depends_on_key_not_on_certificate(hub_ca):
    cert, key = hub_ca
    renewed, dummy = make_cert("hub-ca-renewed", key=key)
    assert bootstrap.ca_pin(pem(renewed)) == bootstrap.ca_pin(pem(cert))


def test_pins_of_bundle(hub_ca, other_ca):
    bundle = pem(hub_ca[0]) + REF_CA_PEM + pem(other_ca[0]) + pem(hub_ca[0])
    expected = [independent_pin(hub_ca[0]), REF_CA_PIN, independent_pin(other_ca[0])]
    assert bootstrap.pins_of_bundle(bundle) == expected
    assert bootstrap.pins_of_bundle(bundle.encode()) == expected
    assert bootstrap.ca_pin(bundle) == expected[0]


@pytest.mark.parametrize("bundle", ["", "not a cert", b"\x30\x03\x02\x01\x00"])
def test_pins_of_bundle_refuses(bundle):
    with pytest.raises(FleetError, match="no PEM certificate"):
        bootstrap.pins_of_bundle(bundle)


@pytest.mark.parametrize("cert", [b"\x30\x03\x02\x01\x00", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"])
def test_ca_pin_refuses_garbage(cert):
    with pytest.raises(FleetError, match="cannot parse the CA certificate"):
        bootstrap.ca_pin(cert)


def test_parse_pin():
    upper = "SHA256:" + REF_CA_PIN[len("sha256:"):].upper()
    assert bootstrap.parse_pin(upper) == REF_CA_PIN
    assert bootstrap.parse_pin(" %s\n" % REF_CA_PIN) == REF_CA_PIN


@pytest.mark.parametrize("pin", [
    "", REF_CA_PIN[len("sha256:"):], "sha1:" + "a" * 40, "sha256:" + "a" * 63, "sha256:" + "a" * 65,
    "sha256:" + "g" * 64, "sha256=" + "a" * 64, "sha256:" + "a" * 64 + ":x", None, TOKEN,
])
def test_parse_pin_refuses(pin):
    with pytest.raises(FleetError) as exc_info:
        bootstrap.parse_pin(pin)
    assert bootstrap.PIN_FORMAT in str(exc_info.value)
    assert_no_secret(exc_info)


# --- JWS ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("content, secret, expected", K8S_VECTORS)
def test_sign_matches_kubernetes_vectors(content, secret, expected):
    assert bootstrap.sign_kubeconfig(content, K8S_ID, secret) == expected
    assert bootstrap.verify_kubeconfig_signature(content, expected, K8S_ID, secret)


def test_sign_matches_openssl_vector_and_real_header():
    jws = bootstrap.sign_kubeconfig(REF_KUBECONFIG, TOKEN_ID, SECRET)
    assert jws == REF_JWS
    header, payload, dummy = jws.split(".")
    assert header == REF_JWS_HEADER
    assert payload == ""
    assert base64.urlsafe_b64decode(header + "==") == b'{"alg":"HS256","kid":"e214n7"}'


def test_sign_equals_go_jose_zero_padded_key():
    # Kubernetes zero-pads the secret to 32 bytes before handing it to go-jose.
    import hmac as hmac_mod
    header = b64url(b'{"alg":"HS256","kid":"abcdef"}')
    signing_input = (header + "." + b64url(b"payload")).encode()
    padded_key = b"0123456789abcdef" + b"\x00" * 16
    expected = header + ".." + b64url(hmac_mod.new(padded_key, signing_input, hashlib.sha256).digest())
    assert bootstrap.sign_kubeconfig("payload", "abcdef", "0123456789abcdef") == expected
    assert bootstrap.sign_kubeconfig(b"payload", "abcdef", "0123456789abcdef") == expected


def forged(header_json, content=REF_KUBECONFIG, secret=SECRET):
    """A detached JWS with an arbitrary header, correctly HMAC'd with ``secret``."""
    import hmac as hmac_mod
    header = b64url(header_json.encode())
    signing_input = (header + "." + b64url(content.encode())).encode()
    return header + ".." + b64url(hmac_mod.new(secret.encode(), signing_input, hashlib.sha256).digest())


@pytest.mark.parametrize("content, jws, token_id, secret", [
    (REF_KUBECONFIG + " ", REF_JWS, TOKEN_ID, SECRET),  # tampered payload
    (REF_KUBECONFIG.replace("17443", "17444"), REF_JWS, TOKEN_ID, SECRET),
    (REF_KUBECONFIG, REF_JWS, TOKEN_ID, "q4k7zw2m9xv1c8bu"),  # wrong secret
    (REF_KUBECONFIG, REF_JWS, "e214n8", SECRET),  # wrong kid
    (REF_KUBECONFIG, forged('{"alg":"HS256","kid":"e214n8"}'), TOKEN_ID, SECRET),
    (REF_KUBECONFIG, forged('{"alg":"none","kid":"e214n7"}'), TOKEN_ID, SECRET),
    (REF_KUBECONFIG, b64url(b'{"alg":"none","kid":"e214n7"}') + "..", TOKEN_ID, SECRET),
    (REF_KUBECONFIG, forged('{"kid":"e214n7","alg":"HS256"}'), TOKEN_ID, SECRET),
    (REF_KUBECONFIG, forged('{"alg": "HS256", "kid": "e214n7"}'), TOKEN_ID, SECRET),
    (REF_KUBECONFIG, forged('{"alg":"HS256","kid":"e214n7","crit":["b64"]}'), TOKEN_ID, SECRET),
    (REF_KUBECONFIG, REF_JWS.replace("..", "." + b64url(REF_KUBECONFIG.encode()) + "."), TOKEN_ID, SECRET),  # attached
    (REF_KUBECONFIG, REF_JWS + "=", TOKEN_ID, SECRET),
    (REF_KUBECONFIG, REF_JWS + "foo", TOKEN_ID, SECRET),
    (REF_KUBECONFIG, "", TOKEN_ID, SECRET),
    (REF_KUBECONFIG, None, TOKEN_ID, SECRET),
    (REF_KUBECONFIG, "é" + REF_JWS, TOKEN_ID, SECRET),
])
def test_verify_rejects(content, jws, token_id, secret):
    assert bootstrap.verify_kubeconfig_signature(content, jws, token_id, secret) is False


def test_verify_accepts_the_real_header_form():
    assert forged('{"alg":"HS256","kid":"e214n7"}') == REF_JWS
    assert bootstrap.verify_kubeconfig_signature(REF_KUBECONFIG, REF_JWS, TOKEN_ID, SECRET) is True


@pytest.mark.parametrize("token_id", ["E214N7", "e214n", "e214n7x", '"', TOKEN])
def test_sign_refuses_bad_token_id(token_id):
    with pytest.raises(FleetError) as exc_info:
        bootstrap.sign_kubeconfig(REF_KUBECONFIG, token_id, SECRET)
    assert_no_secret(exc_info)


# --- discovery ------------------------------------------------------------------------------------


def kubeconfig_for(ca_pem, server="https://hub.example:6443", clusters=1):
    entries = "".join(
        '- name: "c%d"\n  cluster: {server: %s, certificate-authority-data: %s}\n' % (i, server, b64(ca_pem))
        for i in range(clusters)
    )
    return "apiVersion: v1\nkind: Config\nclusters:\n" + entries


def configmap(kubeconfig, token_id=TOKEN_ID, secret=SECRET, jws=None, extra=None):
    data = {"kubeconfig": kubeconfig, "jws-kubeconfig-" + token_id: jws or bootstrap.sign_kubeconfig(kubeconfig, token_id, secret)}
    data.update(extra or {})
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cluster-info", "namespace": "kube-public"}, "data": data}


class FakeHub:
    """An injected opener: answers each call with the next response and records the calls."""

    def __init__(self, *responses):
        self.responses = list(responses)
        self.calls = []

    def __call__(self, url, ssl_context, timeout):
        self.calls.append((url, ssl_context, timeout))
        response = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(response, Exception):
            raise response
        if isinstance(response, tuple):
            return response
        return 200, json.dumps(response).encode()


def discover_error(opener, **kwargs):
    kwargs.setdefault("ca_pins", [REF_CA_PIN])
    with pytest.raises(FleetError) as exc_info:
        bootstrap.discover_hub("https://hub.example:6443", TOKEN, opener=opener, **kwargs)
    assert_no_secret(exc_info)
    return exc_info


def test_discover_success_with_real_cluster_info():
    hub = FakeHub(configmap(REF_KUBECONFIG, jws=REF_JWS))
    result = bootstrap.discover_hub("127.0.0.1:17443", TOKEN, ca_pins=[REF_CA_PIN.upper().replace("SHA256", "sha256")],
                                    timeout=3, opener=hub)
    assert result == {
        "server": "https://127.0.0.1:17443",
        "ca_pem": REF_CA_PEM,
        "ca_pins": [REF_CA_PIN],
        "kubeconfig": REF_KUBECONFIG,
    }
    assert len(hub.calls) == 2
    (url1, insecure, t1), (url2, verified, t2) = hub.calls
    assert url1 == url2 == "https://127.0.0.1:17443/api/v1/namespaces/kube-public/configmaps/cluster-info"
    assert (t1, t2) == (3, 3)
    assert insecure.verify_mode == ssl.CERT_NONE and insecure.check_hostname is False
    assert verified.verify_mode == ssl.CERT_REQUIRED and verified.check_hostname is True
    assert [c["subject"] for c in verified.get_ca_certs()] == [((("commonName", "khub-ca"),),)]


def test_discover_bundle_any_cert_may_match(hub_ca, other_ca):
    bundle = pem(other_ca[0]) + pem(hub_ca[0])
    hub = FakeHub(configmap(kubeconfig_for(bundle)))
    result = bootstrap.discover_hub("https://hub.example:6443/", TOKEN, ca_pins=independent_pin(hub_ca[0]), opener=hub)
    assert result["ca_pins"] == [independent_pin(other_ca[0]), independent_pin(hub_ca[0])]
    assert result["server"] == "https://hub.example:6443"
    assert hub.calls[0][0] == "https://hub.example:6443/api/v1/namespaces/kube-public/configmaps/cluster-info"


def test_discover_missing_signature():
    cm = configmap(REF_KUBECONFIG, token_id="zzzzzz")
    exc_info = discover_error(FakeHub(cm))
    assert str(exc_info.value) == (
        "no signature for token id e214n7 in kube-public/cluster-info: the token is unknown, expired or not allowed to sign"
    )


def test_discover_bad_signature():
    exc_info = discover_error(FakeHub(configmap(REF_KUBECONFIG, secret="0000000000000000")))
    assert str(exc_info.value) == (
        "the signature for token id e214n7 in kube-public/cluster-info does not verify: wrong token secret or tampered cluster-info"
    )


def test_discover_tampered_kubeconfig():
    cm = configmap(REF_KUBECONFIG, jws=REF_JWS)
    cm["data"]["kubeconfig"] = REF_KUBECONFIG.replace("127.0.0.1", "10.6.6.6")
    exc_info = discover_error(FakeHub(cm))
    assert "does not verify" in str(exc_info.value)


def test_discover_wrong_pin(other_ca):
    wrong = independent_pin(other_ca[0])
    exc_info = discover_error(FakeHub(configmap(REF_KUBECONFIG, jws=REF_JWS)), ca_pins=[wrong])
    msg = str(exc_info.value)
    assert REF_CA_PIN in msg and wrong in msg and "refusing to trust" in msg
    assert exc_info.value.details == {"expected_ca_pins": [wrong], "actual_ca_pins": [REF_CA_PIN]}


def test_discover_wrong_pin_is_checked_even_when_unsafe(other_ca):
    exc_info = discover_error(FakeHub(configmap(REF_KUBECONFIG, jws=REF_JWS)), ca_pins=[independent_pin(other_ca[0])],
                              unsafe_skip_ca_verification=True)
    assert "refusing to trust" in str(exc_info.value)


def test_discover_two_clusters(hub_ca):
    exc_info = discover_error(FakeHub(configmap(kubeconfig_for(pem(hub_ca[0]), clusters=2))))
    assert "exactly one cluster, found 2" in str(exc_info.value)


@pytest.mark.parametrize("kubeconfig, fragment", [
    ("apiVersion: v1\nclusters: []\n", "exactly one cluster, found 0"),
    ("- just a list\n", "exactly one cluster, found 0"),
    ("clusters: [{name: x, cluster: {server: https://h:6443}}]\n", "needs server and certificate-authority-data"),
    ("clusters: [{name: x, cluster: {server: https://h:6443, certificate-authority-data: '!!'}}]\n", "not base64"),
    ("clusters: [{name: x, cluster: {certificate-authority-data: QUJD}}]\n", "needs server"),
    ("clusters: [x]\n", "needs server"),
    ("clusters: {a: [\n", "not valid YAML"),
])
def test_discover_malformed_kubeconfig(kubeconfig, fragment):
    exc_info = discover_error(FakeHub(configmap(kubeconfig)))
    assert fragment in str(exc_info.value)


def test_discover_changed_between_fetches(hub_ca):
    first = kubeconfig_for(pem(hub_ca[0]))
    second = first.replace("hub.example", "other.example")
    hub = FakeHub(configmap(first), configmap(second))
    exc_info = discover_error(hub, ca_pins=[independent_pin(hub_ca[0])])
    assert "changed between the insecure and the verified fetch" in str(exc_info.value)
    assert len(hub.calls) == 2


def test_discover_second_fetch_without_kubeconfig(hub_ca):
    first = kubeconfig_for(pem(hub_ca[0]))
    hub = FakeHub(configmap(first), {"kind": "ConfigMap", "data": {}})
    exc_info = discover_error(hub, ca_pins=[independent_pin(hub_ca[0])])
    assert "changed between" in str(exc_info.value)


@pytest.mark.parametrize("ca_pins", [None, [], ""])
def test_discover_requires_a_pin(ca_pins):
    hub = FakeHub(configmap(REF_KUBECONFIG, jws=REF_JWS))
    exc_info = discover_error(hub, ca_pins=ca_pins)
    msg = str(exc_info.value)
    assert "ca_cert_hashes" in msg and "unsafe_skip_ca_verification" in msg
    assert hub.calls == []  # refused before any request


def test_discover_unsafe_skips_the_pin():
    hub = FakeHub(configmap(REF_KUBECONFIG, jws=REF_JWS))
    result = bootstrap.discover_hub("https://127.0.0.1:17443", TOKEN, unsafe_skip_ca_verification=True, opener=hub)
    assert result["ca_pins"] == [REF_CA_PIN]
    assert result["server"] == "https://127.0.0.1:17443"
    assert len(hub.calls) == 2 and hub.calls[1][1].verify_mode == ssl.CERT_REQUIRED


def test_discover_missing_signature_is_its_own_error():
    with pytest.raises(bootstrap.MissingSignature):
        bootstrap.discover_hub("https://hub.example:6443", TOKEN, ca_pins=[REF_CA_PIN],
                               opener=FakeHub(configmap(REF_KUBECONFIG, token_id="zzzzzz")))


SA_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJl"


def test_discover_service_account_token_needs_no_signature():
    cm = configmap(REF_KUBECONFIG, token_id="zzzzzz")  # signed for some other token only
    hub = FakeHub(cm)
    result = bootstrap.discover_hub("https://127.0.0.1:17443", SA_TOKEN, ca_pins=[REF_CA_PIN], opener=hub, allow_unsigned=True)
    assert (result["server"], result["ca_pins"]) == ("https://127.0.0.1:17443", [REF_CA_PIN])
    assert len(hub.calls) == 2 and hub.calls[1][1].verify_mode == ssl.CERT_REQUIRED


def test_discover_service_account_token_still_needs_the_pin(other_ca):
    hub = FakeHub(configmap(REF_KUBECONFIG))
    with pytest.raises(FleetError) as exc_info:
        bootstrap.discover_hub("https://hub.example:6443", SA_TOKEN, opener=hub, allow_unsigned=True)
    assert "ca_cert_hashes" in str(exc_info.value) and hub.calls == []
    assert_no_secret(exc_info, SA_TOKEN)
    with pytest.raises(FleetError, match="refusing to trust"):
        bootstrap.discover_hub("https://hub.example:6443", SA_TOKEN, ca_pins=[independent_pin(other_ca[0])],
                               opener=FakeHub(configmap(REF_KUBECONFIG)), allow_unsigned=True)


def test_discover_bootstrap_token_is_always_signature_checked():
    hub = FakeHub(configmap(REF_KUBECONFIG, secret="0000000000000000"))
    exc_info = discover_error(hub, allow_unsigned=True)
    assert "does not verify" in str(exc_info.value)
    with pytest.raises(bootstrap.MissingSignature):
        bootstrap.discover_hub("https://hub.example:6443", TOKEN, ca_pins=[REF_CA_PIN], allow_unsigned=True,
                               opener=FakeHub(configmap(REF_KUBECONFIG, token_id="zzzzzz")))


@pytest.mark.parametrize("token", ["", "  "])
def test_discover_refuses_an_empty_service_account_token(token):
    with pytest.raises(FleetError, match="token is empty"):
        bootstrap.discover_hub("https://hub:6443", token, ca_pins=[REF_CA_PIN], opener=FakeHub({}), allow_unsigned=True)


def test_discover_unsigned_refused_without_allow_unsigned():
    with pytest.raises(FleetError, match="a bootstrap token must have the form"):
        bootstrap.discover_hub("https://hub:6443", SA_TOKEN, ca_pins=[REF_CA_PIN], opener=FakeHub({}))


def test_discover_bad_pin_format_before_any_request():
    hub = FakeHub(configmap(REF_KUBECONFIG, jws=REF_JWS))
    exc_info = discover_error(hub, ca_pins=["md5:abc"])
    assert bootstrap.PIN_FORMAT in str(exc_info.value)
    assert hub.calls == []


@pytest.mark.parametrize("token", ["nope", "E214N7." + SECRET, SECRET])
def test_discover_bad_token(token):
    with pytest.raises(FleetError) as exc_info:
        bootstrap.discover_hub("https://hub:6443", token, ca_pins=[REF_CA_PIN], opener=FakeHub({}))
    assert_no_secret(exc_info, SECRET, token)


@pytest.mark.parametrize("response, fragment", [
    (urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")), "Connection refused"),
    (TimeoutError("timed out"), "timed out"),
    (ssl.SSLError("handshake failure"), "handshake failure"),
    ((404, b"{}"), "kube-public/cluster-info does not exist"),
    ((403, b'{"kind":"Status"}'), "anonymous read of kube-public/cluster-info refused (HTTP 403"),
    ((401, b""), "HTTP 401"),
    ((500, b"oops"), "unexpected HTTP status 500"),
    ((200, b"<html>"), "did not return a ConfigMap"),
    ((200, b'{"kind":"ConfigMap"}'), "did not return a ConfigMap"),
    ({"kind": "ConfigMap", "data": {}}, "has no kubeconfig key"),
])
def test_discover_fetch_failures_name_the_url(response, fragment):
    exc_info = discover_error(FakeHub(response))
    msg = str(exc_info.value)
    assert fragment in msg
    assert "https://hub.example:6443" in msg or "kubeconfig key" in msg


def test_discover_network_error_on_verified_fetch(hub_ca):
    hub = FakeHub(configmap(kubeconfig_for(pem(hub_ca[0]))),
                  urllib.error.URLError(ssl.SSLCertVerificationError(1, "IP address mismatch")))
    exc_info = discover_error(hub, ca_pins=[independent_pin(hub_ca[0])])
    assert "TLS verified with the CA from cluster-info" in str(exc_info.value)
    assert "IP address mismatch" in str(exc_info.value)


@pytest.mark.parametrize("url", ["http://hub:6443", "", "ftp://hub"])
def test_discover_refuses_non_https(url):
    with pytest.raises(FleetError, match="https://"):
        bootstrap.discover_hub(url, TOKEN, ca_pins=[REF_CA_PIN], opener=FakeHub({}))


def test_missing_libraries_are_reported(monkeypatch):
    monkeypatch.setattr(pki, "CRYPTOGRAPHY_IMPORT_ERROR", ImportError("No module named 'cryptography'"))
    with pytest.raises(FleetError, match="cryptography Python library is required"):
        bootstrap.ca_pin(REF_CA_PEM)
    monkeypatch.setattr(pki, "YAML_IMPORT_ERROR", ImportError("No module named 'yaml'"))
    with pytest.raises(FleetError, match="PyYAML Python library is required"):
        bootstrap.discover_hub("https://hub:6443", TOKEN, ca_pins=[REF_CA_PIN], opener=FakeHub({}))
    with pytest.raises(FleetError, match="PyYAML"):
        bootstrap.bootstrap_kubeconfig("https://hub:6443", REF_CA_PEM, TOKEN)
    # the pure parts keep working
    assert bootstrap.parse_token(TOKEN) == (TOKEN_ID, SECRET)
    assert bootstrap.sign_kubeconfig(REF_KUBECONFIG, TOKEN_ID, SECRET) == REF_JWS


# --- discovery against a loopback TLS server with the default opener ------------------------------------


@pytest.fixture
def tls_hub(hub_ca):
    """Serve cluster-info over TLS on 127.0.0.1; returns a function (server_cert, server_key, body) -> URL."""
    servers = []

    def start(cert, key, body):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server API
                assert "Authorization" not in self.headers  # anonymous
                self.send_response(200 if self.path == bootstrap.CLUSTER_INFO_PATH else 404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        tmp = tempfile.mkdtemp()
        cert_file, key_file = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        with open(cert_file, "w") as handle:
            handle.write(pem(cert))
        with open(key_file, "wb") as handle:
            handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
        httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return "https://127.0.0.1:%d" % httpd.server_address[1]

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def serving_cert(ca, san_ip="127.0.0.1"):
    return make_cert("kube-apiserver", issuer_cert=ca[0], issuer_key=ca[1], ca=False, san_ip=san_ip)


def test_discover_over_real_tls(tls_hub, hub_ca, monkeypatch):
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    kubeconfig = kubeconfig_for(pem(hub_ca[0]), server="https://hub.example:6443")
    url = tls_hub(*serving_cert(hub_ca), body=json.dumps(configmap(kubeconfig)).encode())
    result = bootstrap.discover_hub(url, TOKEN, ca_pins=[independent_pin(hub_ca[0])], timeout=5)
    assert result["server"] == "https://hub.example:6443"
    assert result["kubeconfig"] == kubeconfig


def test_discover_over_real_tls_refuses_server_not_signed_by_published_ca(tls_hub, hub_ca, other_ca, monkeypatch):
    # An impostor signs cluster-info correctly (it knows the token) but its TLS cert is not from the published CA.
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    kubeconfig = kubeconfig_for(pem(hub_ca[0]))
    url = tls_hub(*serving_cert(other_ca), body=json.dumps(configmap(kubeconfig)).encode())
    with pytest.raises(FleetError) as exc_info:
        bootstrap.discover_hub(url, TOKEN, ca_pins=[independent_pin(hub_ca[0])], timeout=5)
    assert "TLS verified with the CA from cluster-info" in str(exc_info.value)
    assert "CERTIFICATE_VERIFY_FAILED" in str(exc_info.value)
    assert_no_secret(exc_info)


def test_discover_over_real_tls_checks_the_host_name(tls_hub, hub_ca, monkeypatch):
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    kubeconfig = kubeconfig_for(pem(hub_ca[0]))
    url = tls_hub(*serving_cert(hub_ca, san_ip="10.1.2.3"), body=json.dumps(configmap(kubeconfig)).encode())
    with pytest.raises(FleetError) as exc_info:
        bootstrap.discover_hub(url, TOKEN, ca_pins=[independent_pin(hub_ca[0])], timeout=5)
    assert "mismatch" in str(exc_info.value)


# --- bootstrap kubeconfig -----------------------------------------------------------------------------


def test_bootstrap_kubeconfig_shape():
    text = bootstrap.bootstrap_kubeconfig("https://hub.example:6443", REF_CA_PEM, TOKEN)
    assert yaml.safe_load(text) == {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "hub", "cluster": {"server": "https://hub.example:6443",
                                                 "certificate-authority-data": b64(REF_CA_PEM)}}],
        "users": [{"name": "bootstrap", "user": {"token": TOKEN}}],
        "contexts": [{"name": "bootstrap", "context": {"cluster": "hub", "user": "bootstrap"}}],
        "current-context": "bootstrap",
    }
    custom = yaml.safe_load(bootstrap.bootstrap_kubeconfig("https://h:1", REF_CA_PEM.encode(), "sa.jwt.token",
                                                           cluster_name="c", user="u", context="x"))
    assert custom["contexts"] == [{"name": "x", "context": {"cluster": "c", "user": "u"}}]
    assert custom["current-context"] == "x" and custom["users"][0] == {"name": "u", "user": {"token": "sa.jwt.token"}}
    assert custom["clusters"][0]["cluster"]["certificate-authority-data"] == b64(REF_CA_PEM)


@pytest.mark.parametrize("args", [("", REF_CA_PEM, TOKEN), ("https://h:1", "", TOKEN), ("https://h:1", REF_CA_PEM, "")])
def test_bootstrap_kubeconfig_refuses_missing_parts(args):
    with pytest.raises(FleetError, match="needs the hub server"):
        bootstrap.bootstrap_kubeconfig(*args)
