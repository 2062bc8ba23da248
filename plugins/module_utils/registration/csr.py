# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The certificate signing requests of registering agents, and the rules one must meet to be approved.

A member's agent asks the hub for a client certificate (docs/architecture.md 4.4 and 4.6): Karmada's agent as
``CN=system:karmada:agent:<cluster>, O=system:karmada:agents``, OCM's klusterlet as
``CN=system:open-cluster-management:<cluster>:<agent>`` with the two OCM groups as O. Whatever the
certificate says becomes the user and groups the hub's API server believes, so a CSR is approved only
when every rule holds: :func:`check` returns the reasons it does not (empty: acceptable). Pure
functions over the CSR as the API returns it; nothing here talks to a cluster.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import re

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CSR_CLIENT_AUTH, CSR_SIGNER, CSR_USAGES
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# karmadactl register's short-lived, all-powerful helper identity: never a cluster's.
KARMADA_RBAC_GENERATOR = karmada.RBAC_GENERATOR
# Bootstrap tokens authenticate as system:bootstrap:<token-id> in group system:bootstrappers.
BOOTSTRAP_USER_RE = re.compile(r"^system:bootstrap:[a-z0-9]{6}\Z")
BOOTSTRAP_GROUP = "system:bootstrappers"
PEM_BLOCK_RE = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----.*?-----END \1-----", re.DOTALL)
ACCEPTED_KEYS = "RSA of at least 2048 bits, ECDSA on P-256 or P-384, or Ed25519"
ACCEPTED_CURVES = ("secp256r1", "secp384r1")
_SAN_TYPES = {"DNSName": "DNS", "IPAddress": "IP", "UniformResourceIdentifier": "URI", "RFC822Name": "email"}

# What a CSR's status says.
PENDING = "pending"
APPROVED = "approved"
DENIED = "denied"
FAILED = "failed"


def name_of(csr):
    return (csr.get("metadata") or {}).get("name") or "?"


def spec_of(csr):
    return csr.get("spec") or {}


def requester(csr):
    """The user the API server authenticated when the CSR was created."""
    return spec_of(csr).get("username") or ""


def state(csr):
    """``pending``, ``approved``, ``denied`` or ``failed``, from the status conditions (Denied/Failed win)."""
    types = {c.get("type") for c in (csr.get("status") or {}).get("conditions") or [] if c.get("status", "True") == "True"}
    for condition_type, value in (("Denied", DENIED), ("Failed", FAILED), ("Approved", APPROVED)):
        if condition_type in types:
            return value
    return PENDING


def issued(csr):
    """True when the signer has written the certificate."""
    return bool((csr.get("status") or {}).get("certificate"))


# --- parsing ---------------------------------------------------------------------------------------


def parse(csr):
    """The ``cryptography`` request in ``spec.request`` (base64 of one PEM block); FleetError if it is none."""
    pki.require_cryptography()
    try:
        pem = base64.b64decode(spec_of(csr).get("request") or "", validate=True).decode("ascii")
    except (binascii.Error, ValueError, TypeError):
        raise FleetError("spec.request is not base64-encoded PEM text")
    blocks = PEM_BLOCK_RE.findall(pem)
    if blocks != ["CERTIFICATE REQUEST"]:
        raise FleetError("spec.request must hold exactly one PEM block CERTIFICATE REQUEST, found %s"
                         % (", ".join(blocks) or "none"))
    try:
        return pki.x509.load_pem_x509_csr(pem.encode("ascii"))
    except ValueError as exc:
        raise FleetError("spec.request is not a valid certificate request: %s" % exc)


def subject_of(request):
    """``(common_names, organizations, other_attributes)`` of a parsed request, values as strings."""
    common_names, organizations, others = [], [], []
    for attribute in request.subject:
        if attribute.oid == pki.NameOID.COMMON_NAME:
            common_names.append(attribute.value)
        elif attribute.oid == pki.NameOID.ORGANIZATION_NAME:
            organizations.append(attribute.value)
        else:
            others.append(attribute.rfc4514_string())
    return common_names, organizations, others


def common_name(csr):
    """The single CN a CSR asks for, or None when it cannot be read or has not exactly one."""
    try:
        names = subject_of(parse(csr))[0]
    except FleetError:
        return None
    return names[0] if len(names) == 1 else None


# --- the rules ---------------------------------------------------------------------------------------


def _subject_reasons(engine, cluster, request):
    common_names, organizations, others = subject_of(request)
    reasons = []
    if others:
        reasons.append("the subject may only hold CN and O, it also has %s" % ", ".join(others))
    if len(common_names) != 1:
        reasons.append("the subject must have exactly one CN, it has %d" % len(common_names))
    else:
        problem = engine.common_name_problem(cluster, common_names[0])
        if problem:
            reasons.append(problem)
    expected = engine.agent_organizations(cluster)
    if sorted(organizations) != expected:
        reasons.append("O must be exactly %s, it is %s" % (", ".join(expected), ", ".join(organizations) or "empty"))
    return reasons


def _signer_reasons(spec):
    signer = spec.get("signerName")
    if signer != CSR_SIGNER:
        return ["signer is %s, not %s" % (signer or "unset", CSR_SIGNER)]
    return []


def _usage_reasons(spec):
    usages = spec.get("usages") or []
    reasons = []
    if "server auth" in usages:
        reasons.append("usage server auth is not allowed: an agent gets a client certificate")
    others = sorted(set(usages) - set(CSR_USAGES) - {"server auth"})
    if others:
        reasons.append("usages %s are not allowed (only %s)" % (", ".join(others), ", ".join(CSR_USAGES)))
    if CSR_CLIENT_AUTH not in usages:
        reasons.append("usage client auth is missing")
    return reasons


def _key_reasons(request):
    key = request.public_key()
    if isinstance(key, pki.rsa.RSAPublicKey):
        if key.key_size >= 2048:
            return []
        description = "RSA %d bits" % key.key_size
    elif isinstance(key, pki.ec.EllipticCurvePublicKey):
        if key.curve.name in ACCEPTED_CURVES:
            return []
        description = "ECDSA on %s" % key.curve.name
    elif isinstance(key, pki.ed25519.Ed25519PublicKey):
        return []
    else:
        description = type(key).__name__
    return ["key %s is not accepted (%s)" % (description, ACCEPTED_KEYS)]


def _extension_reasons(request):
    try:
        extensions = list(request.extensions)
    except (ValueError, pki.x509.DuplicateExtension) as exc:
        return ["the requested extensions cannot be read: %s" % exc]
    reasons = []
    for extension in extensions:
        if isinstance(extension.value, pki.x509.SubjectAlternativeName):
            names = ["%s:%s" % (_SAN_TYPES.get(type(name).__name__, type(name).__name__), name.value)
                     for name in extension.value]
            reasons.append("subject alternative names are not allowed, it asks for %s" % ", ".join(names))
    return reasons


def _requester_reasons(engine, cluster, spec, cn):
    user = spec.get("username") or ""
    groups = spec.get("groups") or []
    if BOOTSTRAP_USER_RE.match(user):
        if BOOTSTRAP_GROUP in groups:
            return []
        return ["requester %s is not in group %s" % (user, BOOTSTRAP_GROUP)]
    if engine.is_bootstrap_identity(user) or engine.renews_itself(cluster, user, cn):
        return []
    return ["requester %s is neither %s nor the agent of cluster %s itself"
            % (user or "unknown", engine.bootstrap_identities(), cluster)]


def check(engine, cluster, csr):
    """The reasons ``csr`` must not be approved as the agent certificate of ``cluster``; empty if acceptable.

    Rules: signer ``kubernetes.io/kube-apiserver-client``; usages client auth plus at most digital
    signature and key encipherment (never server auth); one PEM request whose signature verifies;
    subject exactly the engine's CN and O for that cluster; no subject alternative names; an RSA
    (>= 2048 bits), ECDSA P-256/P-384 or Ed25519 key; requested by a bootstrap identity (a bootstrap
    token user in ``system:bootstrappers``, for OCM also its bootstrap ServiceAccount) or by the
    cluster's agent identity itself (a renewal).
    """
    engine = engines.get(engine)
    spec = spec_of(csr)
    reasons = _signer_reasons(spec) + _usage_reasons(spec)
    cn = None
    try:
        request = parse(csr)
    except FleetError as exc:
        reasons.append(exc.msg)
    else:
        if not request.is_signature_valid:
            reasons.append("the request's signature does not verify")
        reasons += _subject_reasons(engine, cluster, request) + _key_reasons(request) + _extension_reasons(request)
        names = subject_of(request)[0]
        cn = names[0] if len(names) == 1 else None
    return reasons + _requester_reasons(engine, cluster, spec, cn)
