# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bootstrap tokens, CA public-key pins and token discovery through ``kube-public/cluster-info``.

The behaviour follows Kubernetes' own code: ``k8s.io/cluster-bootstrap/token`` (token format, Secret
layout, detached JWS of cluster-info) and kubeadm's ``discovery/token`` and ``util/pubkeypin`` (how a
joining member learns and pins the hub CA). See docs/architecture.md 4.1 and 4.2.

Token secrets never appear in exception messages: a message may name the token id, never the secret.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import contextlib
import datetime
import hashlib
import hmac
import json
import re
import secrets
import ssl
import urllib.error
import urllib.request
from http.client import HTTPException
from urllib.parse import urlsplit

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, pki
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

try:
    import yaml
except ImportError:  # pragma: no cover - pki.require_yaml() reports it where needed
    pass

# Token format (k8s.io/cluster-bootstrap/token/api): "<id>.<secret>".
TOKEN_RE = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})\Z")
TOKEN_ID_RE = re.compile(r"^[a-z0-9]{6}\Z")
TOKEN_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"
TOKEN_FORMAT = "<6 characters [a-z0-9]>.<16 characters [a-z0-9]>"

# The Secret that stores a token on the hub.
SECRET_NAMESPACE = "kube-system"
SECRET_NAME_PREFIX = "bootstrap-token-"
SECRET_TYPE = "bootstrap.kubernetes.io/token"
USAGE_KEY_PREFIX = "usage-bootstrap-"
KNOWN_USAGES = ("authentication", "signing")
DEFAULT_USAGES = ("authentication", "signing")
# Extra groups must match Kubernetes' BootstrapGroupPattern.
GROUP_RE = re.compile(r"^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\Z")
KARMADA_DEFAULT_GROUP = "system:bootstrappers:karmada:default-cluster-token"
OCM_DEFAULT_GROUP = "system:bootstrappers:managedcluster"
DEFAULT_TTL_SECONDS = 24 * 3600  # karmadactl's and kubeadm's default

# CA pins: "sha256:" + hex of SHA-256 over the certificate's DER SubjectPublicKeyInfo.
PIN_RE = re.compile(r"^sha256:([0-9a-f]{64})\Z", re.IGNORECASE)
PIN_FORMAT = "sha256:<64 hexadecimal digits>"
PEM_CERT_RE = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)

# Discovery.
CLUSTER_INFO = "kube-public/cluster-info"
CLUSTER_INFO_PATH = "/api/v1/namespaces/kube-public/configmaps/cluster-info"
KUBECONFIG_KEY = "kubeconfig"
JWS_KEY_PREFIX = "jws-kubeconfig-"


class MissingSignature(FleetError):
    """cluster-info carries no signature for the token: unknown, expired, not signing, or not signed yet."""


# --- tokens -----------------------------------------------------------------------------------


def _random_chars(length):
    """Return ``length`` characters drawn uniformly from [a-z0-9] by a cryptographically secure RNG."""
    return "".join(secrets.choice(TOKEN_CHARS) for dummy in range(length))


def generate_token_id():
    """Return a new random token id (6 characters [a-z0-9])."""
    return _random_chars(6)


def generate_token():
    """Return a new random bootstrap token ``<id>.<secret>``."""
    return "%s.%s" % (generate_token_id(), _random_chars(16))


def parse_token(token):
    """Split a bootstrap token into ``(token_id, token_secret)``.

    Raises FleetError when the token is malformed; the message shows the expected format, never the value.
    """
    match = TOKEN_RE.fullmatch(token) if isinstance(token, str) else None
    if match is None:
        raise FleetError("a bootstrap token must have the form %s" % TOKEN_FORMAT)
    return match.group(1), match.group(2)


def _check_token_id(token_id):
    """Raise FleetError unless ``token_id`` is a valid token id."""
    if not isinstance(token_id, str) or TOKEN_ID_RE.fullmatch(token_id) is None:
        raise FleetError("a bootstrap token id must be 6 characters [a-z0-9]")


# --- the token Secret -------------------------------------------------------------------------


def _b64(text):
    """Base64-encode a text the way Secret ``data`` holds it."""
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _rfc3339(moment):
    """Format a datetime as RFC 3339 UTC with whole seconds (``2026-11-23T04:00:00Z``), as Go does."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_usages(usages):
    """Return the usages as a sorted list of unique names; FleetError on unknown or none."""
    usages = set(usages or ())
    unknown = sorted(usages - set(KNOWN_USAGES))
    if unknown:
        raise FleetError(
            "unknown bootstrap token usage(s) %s; known usages: %s" % (", ".join(unknown), ", ".join(KNOWN_USAGES))
        )
    if not usages:
        raise FleetError("a bootstrap token needs at least one usage of: %s" % ", ".join(KNOWN_USAGES))
    return sorted(usages)


def _check_groups(groups, usages):
    """Return the extra groups as a list; FleetError on a name Kubernetes would refuse."""
    groups = list(groups or ())
    for group in groups:
        if not isinstance(group, str) or GROUP_RE.fullmatch(group) is None:
            raise FleetError("bootstrap token group %r is invalid: it must match %s" % (group, GROUP_RE.pattern))
    if groups and "authentication" not in usages:
        raise FleetError("bootstrap token groups only apply to tokens with the authentication usage")
    return groups


def token_secret(token_id, token_secret, ttl_seconds=None, now=None, description=None,
                 usages=DEFAULT_USAGES, groups=()):
    """Return the manifest (a dict) of Secret ``kube-system/bootstrap-token-<id>`` for a token.

    ``ttl_seconds`` None or 0 means the token never expires; otherwise ``expiration`` is ``now``
    (default: the current time, UTC) plus the TTL. ``groups`` become ``auth-extra-groups``; pass
    ``KARMADA_DEFAULT_GROUP`` or ``OCM_DEFAULT_GROUP`` for the engines' defaults.
    """
    parse_token("%s.%s" % (token_id, token_secret))
    usages = _check_usages(usages)
    groups = _check_groups(groups, usages)
    data = {"token-id": token_id, "token-secret": token_secret}
    if ttl_seconds:
        if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds < 0:
            raise FleetError("ttl_seconds must be a non-negative whole number of seconds, got %r" % (ttl_seconds,))
        start = now or datetime.datetime.now(datetime.timezone.utc)
        data["expiration"] = _rfc3339(start + datetime.timedelta(seconds=ttl_seconds))
    for usage in usages:
        data[USAGE_KEY_PREFIX + usage] = "true"
    if groups:
        data["auth-extra-groups"] = ",".join(groups)
    if description:
        data["description"] = description
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET_NAME_PREFIX + token_id, "namespace": SECRET_NAMESPACE},
        "type": SECRET_TYPE,
        "data": dict((key, _b64(value)) for key, value in sorted(data.items())),
    }


def _secret_name(secret_dict):
    """Return ``namespace/name`` of a Secret dict, for messages."""
    meta = secret_dict.get("metadata") or {}
    return "%s/%s" % (meta.get("namespace") or SECRET_NAMESPACE, meta.get("name") or "?")


def _secret_data(secret_dict):
    """Return the decoded ``data`` of a bootstrap token Secret dict; FleetError if it is not one."""
    name = _secret_name(secret_dict)
    if secret_dict.get("type") != SECRET_TYPE:
        raise FleetError("Secret %s is not of type %s" % (name, SECRET_TYPE))
    decoded = {}
    for key, value in (secret_dict.get("data") or {}).items():
        try:
            decoded[key] = base64.b64decode(value or "", validate=True).decode("utf-8")
        except (binascii.Error, ValueError, TypeError):
            raise FleetError("Secret %s: key %s is not valid base64-encoded text" % (name, key))
    return decoded


def _parse_rfc3339(text, name):
    """Parse an RFC 3339 timestamp into an aware UTC datetime; FleetError naming the Secret otherwise."""
    try:
        moment = datetime.datetime.fromisoformat(re.sub(r"[Zz]$", "+00:00", text))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise FleetError("Secret %s: expiration %r is not an RFC 3339 timestamp" % (name, text))
    return moment.astimezone(datetime.timezone.utc)


def read_token_secret(secret_dict, now=None):
    """Describe a bootstrap token Secret (a dict as the API returns it) without its secret.

    Returns ``dict(token_id, expiration, usages, groups, description, expired)``: ``expiration`` is an
    aware UTC datetime or None (never expires), ``usages`` the sorted usages set to "true", ``expired``
    whether ``now`` (default: the current time) is past the expiration.
    """
    name = _secret_name(secret_dict)
    data = _secret_data(secret_dict)
    token_id = data.get("token-id", "")
    if TOKEN_ID_RE.fullmatch(token_id) is None:
        raise FleetError("Secret %s has no valid token-id" % name)
    if (secret_dict.get("metadata") or {}).get("name") != SECRET_NAME_PREFIX + token_id:
        raise FleetError("Secret %s does not match its token-id %s (expected %s%s)" % (name, token_id, SECRET_NAME_PREFIX, token_id))
    expiration = _parse_rfc3339(data["expiration"], name) if data.get("expiration") else None
    now = now or datetime.datetime.now(datetime.timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=datetime.timezone.utc)
    return {
        "token_id": token_id,
        "expiration": expiration,
        "usages": sorted(key[len(USAGE_KEY_PREFIX):] for key, value in data.items()
                         if key.startswith(USAGE_KEY_PREFIX) and value == "true"),
        "groups": [group for group in data.get("auth-extra-groups", "").split(",") if group],
        "description": data.get("description", ""),
        "expired": expiration is not None and now > expiration,
    }


def token_secret_value(secret_dict):
    """Return the token secret stored in a bootstrap token Secret dict (handle as no_log data)."""
    value = _secret_data(secret_dict).get("token-secret")
    if not value:
        raise FleetError("Secret %s has no token-secret" % _secret_name(secret_dict))
    return value


# --- CA pins ----------------------------------------------------------------------------------


def _load_certificate(cert):
    """Load one certificate from PEM (str or bytes; the first certificate) or DER bytes."""
    pki.require_cryptography()
    try:
        data = cert.encode("ascii") if isinstance(cert, str) else bytes(cert)
        if b"-----BEGIN" in data:
            return pki.x509.load_pem_x509_certificate(data)
        return pki.x509.load_der_x509_certificate(data)
    except (ValueError, TypeError) as exc:
        raise FleetError("cannot parse the CA certificate: %s" % exc)


def _pin_of(certificate):
    """Return the pin of a loaded certificate."""
    spki = certificate.public_key().public_bytes(
        pki.serialization.Encoding.DER, pki.serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return "sha256:" + hashlib.sha256(spki).hexdigest()


def ca_pin(cert_pem_or_der):
    """Return ``sha256:<lowercase hex>``, the SHA-256 over the certificate's DER SubjectPublicKeyInfo.

    This is the value of ``--discovery-token-ca-cert-hash``. Of a PEM bundle only the first
    certificate is pinned; use ``pins_of_bundle`` for all of them.
    """
    return _pin_of(_load_certificate(cert_pem_or_der))


def pins_of_bundle(pem_bundle):
    """Return the pins of every certificate in a PEM bundle (str or bytes), in order, without duplicates."""
    text = pem_bundle.decode("ascii", "replace") if isinstance(pem_bundle, bytes) else pem_bundle
    blocks = PEM_CERT_RE.findall(text or "")
    if not blocks:
        raise FleetError("no PEM certificate found in the CA bundle")
    pins = []
    for block in blocks:
        pin = ca_pin(block)
        if pin not in pins:
            pins.append(pin)
    return pins


def parse_pin(pin):
    """Normalize a CA pin ``sha256:<64 hex>`` (any case) to lowercase; FleetError if malformed."""
    match = PIN_RE.fullmatch(pin.strip()) if isinstance(pin, str) else None
    if match is None:
        raise FleetError("a CA certificate hash must have the form %s" % PIN_FORMAT)
    return "sha256:" + match.group(1).lower()


# --- detached JWS of cluster-info --------------------------------------------------------------


def _b64url(data):
    """Base64url without padding (RFC 7515)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def sign_kubeconfig(kubeconfig_str, token_id, token_secret):
    """Return the detached compact JWS (``header..signature``) Kubernetes' bootstrapsigner stores.

    The protected header is exactly ``{"alg":"HS256","kid":"<token-id>"}`` (go-jose marshals a Go map,
    so keys are sorted, no spaces); the signature is HMAC-SHA256 keyed by the token secret over
    ``b64url(header) + "." + b64url(kubeconfig)``. Kubernetes zero-pads secrets shorter than 32 bytes
    to 32 bytes for go-jose; HMAC pads any key shorter than its block size with zeros anyway, so the
    result is the same.
    """
    _check_token_id(token_id)
    payload = kubeconfig_str.encode("utf-8") if isinstance(kubeconfig_str, str) else kubeconfig_str
    header = _b64url(('{"alg":"HS256","kid":"%s"}' % token_id).encode("ascii"))
    signing_input = "%s.%s" % (header, _b64url(payload))
    digest = hmac.new(token_secret.encode("utf-8"), signing_input.encode("ascii"), hashlib.sha256).digest()
    return "%s..%s" % (header, _b64url(digest))


def verify_kubeconfig_signature(kubeconfig_str, jws, token_id, token_secret):
    """Return True when ``jws`` is the detached JWS of the kubeconfig for this token, else False.

    Like Kubernetes' ``DetachedTokenIsValid`` the whole JWS must equal the recomputed one, so any other
    header (another alg such as ``none``, another kid, extra fields) or an attached payload is refused.
    The comparison is constant-time.
    """
    if not isinstance(jws, str):
        return False
    expected = sign_kubeconfig(kubeconfig_str, token_id, token_secret)
    return hmac.compare_digest(jws.encode("utf-8"), expected.encode("ascii"))


# --- discovery ----------------------------------------------------------------------------------


def hub_url(server_url):
    """Return ``https://host:port`` from a URL or a bare ``host:port`` (as karmadactl register takes)."""
    url = (server_url or "").strip().rstrip("/")
    if "://" not in url:
        url = "https://" + url
    if not url.lower().startswith("https://") or url == "https://":
        raise FleetError("hub discovery needs an https:// API server URL or host:port, got %r" % (server_url,))
    return url


def insecure_tls_context():
    """A TLS context that does not verify the server: for the first, JWS-checked fetch, or to read what a server presents."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _verified_context(ca_pem):
    """A TLS context trusting only ``ca_pem`` and checking the host name."""
    try:
        return client.verifying_context(cadata=ca_pem)
    except (ssl.SSLError, ValueError) as exc:
        raise FleetError("cannot use the CA from %s for TLS: %s" % (CLUSTER_INFO, exc))


def _urllib_fetch(url, ssl_context, timeout):
    """GET ``url`` anonymously with ``ssl_context``; return ``(status, body_bytes)``."""
    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ssl_context))
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@contextlib.contextmanager
def temporary_pem_file(pem):
    """The path of a :func:`client.private_file` holding the PEM text ``pem``, released afterwards."""
    path, release = client.private_file(pem.encode("ascii"))
    try:
        yield path
    finally:
        release()


def proxied_fetch(proxy, proxy_ca_pem=None):
    """A fetch like :func:`_urllib_fetch` that goes through the forward proxy ``proxy`` (the shared client's proxy).

    It keeps the trust of the ``ssl_context`` it is given: none (the first, unverified fetch verifies
    neither the hub nor an https proxy), or the CA certificates of that context plus ``proxy_ca_pem``
    (the CA of an https proxy), which then verify both the proxy and the hub, as a kubeconfig's
    ``certificate-authority-data`` and ``proxy-url`` do.
    """
    def fetch(url, ssl_context, timeout):
        parts = urlsplit(url)
        auth = {"host": "%s://%s" % (parts.scheme, parts.netloc), "proxy": proxy}
        trusted = None
        if ssl_context.verify_mode == ssl.CERT_NONE:
            auth["validate_certs"] = False
        else:
            trusted = pki.merge_certificates("".join(ssl.DER_cert_to_PEM_cert(der) for der in ssl_context.get_ca_certs(True)),
                                             proxy_ca_pem)
        with contextlib.ExitStack() as stack:
            if trusted:
                auth["ca_cert"] = stack.enter_context(temporary_pem_file(trusted))
            hub = client.Cluster(None, client.build_configuration(auth, "the hub"), role="hub")
            try:
                return 200, json.dumps(hub.request("GET", parts.path, timeout=(timeout, timeout))).encode("utf-8")
            except client.ClusterError as exc:
                if exc.status:
                    return exc.status, b""
                raise OSError("%s; the request went through proxy %s: check proxy_url, and that the proxy lets the member "
                              "reach the hub" % (exc.msg, proxy))
    return fetch


def _fetch_cluster_info(fetch, url, ssl_context, timeout, how):
    """Fetch cluster-info with ``fetch`` and return its ``data``; FleetError naming the URL otherwise."""
    try:
        status, body = fetch(url, ssl_context, timeout)
    except (OSError, HTTPException) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise FleetError("cannot fetch %s (%s): %s" % (url, how, reason))
    if status == 404:
        raise FleetError("%s does not exist on the hub (%s returned 404); hub_init creates it" % (CLUSTER_INFO, url))
    if status in (401, 403):
        raise FleetError(
            "anonymous read of %s refused (HTTP %d from %s): the hub must let system:anonymous get it"
            " (hub_init sets this up)" % (CLUSTER_INFO, status, url)
        )
    if status != 200:
        raise FleetError("unexpected HTTP status %s from %s (%s)" % (status, url, how))
    try:
        configmap = json.loads(body)
    except (ValueError, TypeError):
        configmap = None
    if not isinstance(configmap, dict) or not isinstance(configmap.get("data"), dict):
        raise FleetError("%s did not return a ConfigMap (%s)" % (url, how))
    return configmap["data"]


def _kubeconfig_of(data):
    """Return the kubeconfig text of cluster-info ``data``."""
    kubeconfig = data.get(KUBECONFIG_KEY)
    if not kubeconfig:
        raise FleetError("%s has no %s key: this hub is not set up for token discovery" % (CLUSTER_INFO, KUBECONFIG_KEY))
    return kubeconfig


def _signed_kubeconfig(data, token_id, token_secret):
    """Return the kubeconfig text of cluster-info ``data`` after checking its JWS for the token."""
    kubeconfig = _kubeconfig_of(data)
    jws = data.get(JWS_KEY_PREFIX + token_id)
    if not jws:
        raise MissingSignature(
            "no signature for token id %s in %s: the token is unknown, expired or not allowed to sign" % (token_id, CLUSTER_INFO)
        )
    if not verify_kubeconfig_signature(kubeconfig, jws, token_id, token_secret):
        raise FleetError(
            "the signature for token id %s in %s does not verify: wrong token secret or tampered cluster-info" % (token_id, CLUSTER_INFO)
        )
    return kubeconfig


def _cluster_of(kubeconfig):
    """Return ``(server, ca_pem)`` of the single cluster in a cluster-info kubeconfig."""
    try:
        config = yaml.safe_load(kubeconfig)
    except yaml.YAMLError as exc:
        raise FleetError("the kubeconfig in %s is not valid YAML: %s" % (CLUSTER_INFO, exc))
    clusters = config.get("clusters") if isinstance(config, dict) else None
    if not isinstance(clusters, list) or len(clusters) != 1:
        raise FleetError(
            "the kubeconfig in %s must hold exactly one cluster, found %d" % (CLUSTER_INFO, len(clusters) if isinstance(clusters, list) else 0)
        )
    cluster = clusters[0].get("cluster") if isinstance(clusters[0], dict) else None
    server = cluster.get("server") if isinstance(cluster, dict) else None
    ca_data = cluster.get("certificate-authority-data") if isinstance(cluster, dict) else None
    if not server or not ca_data:
        raise FleetError("the cluster in the kubeconfig of %s needs server and certificate-authority-data" % CLUSTER_INFO)
    try:
        ca_pem = base64.b64decode(ca_data, validate=True).decode("ascii")
    except (binascii.Error, ValueError, TypeError):
        raise FleetError("certificate-authority-data in %s is not base64-encoded PEM" % CLUSTER_INFO)
    return server, ca_pem


def expected_pins(ca_pins, unsafe_skip_ca_verification=False):
    """Normalize the CA pins a member trusts; FleetError when there is none and pinning was not knowingly skipped."""
    if isinstance(ca_pins, str):
        ca_pins = [ca_pins] if ca_pins.strip() else []
    expected = [parse_pin(pin) for pin in ca_pins or []]
    if not expected and not unsafe_skip_ca_verification:
        raise FleetError(
            "no CA pin given: pass ca_cert_hashes (%s of the hub CA public key, as printed by"
            " 'karmadactl token create --print-register-command') or, knowingly, unsafe_skip_ca_verification=true" % PIN_FORMAT
        )
    return expected


def discover_hub(server_url, token, ca_pins=None, unsafe_skip_ca_verification=False, timeout=10, opener=None,
                 allow_unsigned=False):
    """Learn the hub's API server URL and CA the way a joining member does (kubeadm token discovery).

    Fetches ``kube-public/cluster-info`` from ``server_url`` anonymously without TLS verification,
    checks the ``jws-kubeconfig-<token-id>`` signature with the token, checks the CA bundle against
    ``ca_pins`` (at least one required unless ``unsafe_skip_ca_verification``; pins given are always
    checked), then fetches cluster-info again over TLS verified with that CA (host name included) and
    requires the same kubeconfig. ``opener(url, ssl_context, timeout) -> (status, body_bytes)`` makes both
    fetches: by default a direct HTTPS request; :func:`proxied_fetch` goes through a forward proxy (tests
    pass a fake). The token never leaves this process: it only keys the HMAC.

    With ``allow_unsigned``, a token that is not a bootstrap token (an OCM ServiceAccount token) is
    accepted: no JWS exists for it, so the CA pin (or the explicit unsafe option) is all that
    authenticates cluster-info. A bootstrap token is always checked against its JWS. Raises
    :class:`MissingSignature` when cluster-info has no JWS for the token (yet).

    Returns ``dict(server, ca_pem, ca_pins, kubeconfig)``: the server URL and CA bundle (PEM text) from
    cluster-info, the pins of the CA bundle and the cluster-info kubeconfig text.
    """
    pki.require_yaml()
    pki.require_cryptography()
    unsigned = allow_unsigned and isinstance(token, str) and TOKEN_RE.fullmatch(token) is None
    if unsigned and not token.strip():
        raise FleetError("the token is empty")
    token_id, secret = (None, None) if unsigned else parse_token(token)
    expected = expected_pins(ca_pins, unsafe_skip_ca_verification)
    url = hub_url(server_url) + CLUSTER_INFO_PATH
    fetch = opener or _urllib_fetch
    data = _fetch_cluster_info(fetch, url, insecure_tls_context(), timeout, "without TLS verification")
    kubeconfig = _kubeconfig_of(data) if unsigned else _signed_kubeconfig(data, token_id, secret)
    server, ca_pem = _cluster_of(kubeconfig)
    actual = pins_of_bundle(ca_pem)
    if expected and not set(actual) & set(expected):
        raise FleetError(
            "the hub CA in %s has public key pin %s, which is none of the expected ca_cert_hashes %s: refusing to trust %s"
            % (CLUSTER_INFO, ", ".join(actual), ", ".join(expected), server_url),
            expected_ca_pins=expected, actual_ca_pins=actual,
        )
    again = _fetch_cluster_info(fetch, url, _verified_context(ca_pem), timeout, "TLS verified with the CA from cluster-info")
    if again.get(KUBECONFIG_KEY) != kubeconfig:
        raise FleetError("%s changed between the insecure and the verified fetch from %s; refusing to trust it" % (CLUSTER_INFO, url))
    return {"server": server, "ca_pem": ca_pem, "ca_pins": actual, "kubeconfig": kubeconfig}


def bootstrap_kubeconfig(server, ca_pem, token, cluster_name="hub", user="bootstrap", context="bootstrap", proxy_url=None):
    """Return the YAML text of a kubeconfig that authenticates to the hub with ``token``.

    Shape of OCM's ``bootstrap-hub-kubeconfig`` (cluster ``hub``, user ``bootstrap``, context
    ``bootstrap``). ``token`` may be a bootstrap token or a ServiceAccount token. ``proxy_url`` is the
    forward proxy the hub is reached through (``clusteradm join --proxy-url``).
    """
    if not server or not ca_pem or not token:
        raise FleetError("a bootstrap kubeconfig needs the hub server, its CA and a token")
    return pki.kubeconfig(dict(server=server, ca_pem=ca_pem, token=token, proxy_url=proxy_url), cluster_name, user, context)
