# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a hub needs before members can register with join credentials (docs/architecture.md 4.1, 4.2, 4.4, 4.5).

- ``kube-public/cluster-info``: the hub URL and CA members discover (created only when missing;
  replaced only on request), readable by ``system:anonymous``.
- The RBAC objects each engine's installer creates for registration (``hub_objects.py`` of its package,
  :attr:`engine.Engine.hub_objects`).
- OCM, when the ClusterManager has the ``grpc`` registration driver: the gRPC endpoint members join through.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import socket
import ssl
from urllib.parse import urlsplit

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import (
    CLUSTER_ROLE, CLUSTER_ROLE_BINDING, CONFIG_MAP, NAMESPACE, ROLE, ROLE_BINDING,
)

try:
    import yaml
except ImportError:  # pragma: no cover - client.py reports the missing library first
    yaml = None

RBAC_GROUP = "rbac.authorization.k8s.io"
CLUSTER_INFO_NAMESPACE, CLUSTER_INFO_NAME = bootstrap.CLUSTER_INFO.split("/")

CLUSTER_MANAGER_NAME = ocm.CLUSTER_MANAGER_NAME
# The CA of the gRPC server's certificate when the operator issues it (no caBundle of its own given).
GRPC_CA_NAMESPACE, GRPC_CA_CONFIGMAP, GRPC_CA_KEY = "open-cluster-management-hub", "ca-bundle-configmap", "ca-bundle.crt"

# Seconds to connect to the hub's API server when reading its serving certificate.
TLS_TIMEOUT = 10


# --- RBAC objects, as the engines' own installers write them (karmada/hub_objects.py, ocm/hub_objects.py) ------

def meta(name, namespace=None, labels=None):
    result = {"name": name}
    if namespace:
        result["namespace"] = namespace
    if labels:
        result["labels"] = dict(labels)
    return result


def rule(group, resource, verbs, names=None):
    result = {"apiGroups": [group], "resources": [resource], "verbs": list(verbs)}
    if names:
        result["resourceNames"] = list(names)
    return result


def subject(kind, name, namespace=None):
    if kind == "ServiceAccount":
        return {"kind": kind, "name": name, "namespace": namespace}
    return {"apiGroup": RBAC_GROUP, "kind": kind, "name": name}


def role_ref(kind, name):
    return {"apiGroup": RBAC_GROUP, "kind": kind, "name": name}


def cluster_role(name, rules, labels=None):
    return CLUSTER_ROLE, {"metadata": meta(name, labels=labels), "rules": rules}


def cluster_role_binding(name, role, subjects, labels=None):
    return CLUSTER_ROLE_BINDING, {"metadata": meta(name, labels=labels), "roleRef": role_ref("ClusterRole", role),
                                  "subjects": subjects}


def cluster_info_reader(engine):
    """Role and RoleBinding in kube-public letting ``system:anonymous`` get cluster-info (as kubeadm does)."""
    engine = engines.get(engine)
    name, labels = engine.cluster_info_reader, engine.hub_labels
    return [
        (ROLE, {"metadata": meta(name, CLUSTER_INFO_NAMESPACE, labels),
                "rules": [rule("", "configmaps", ["get"], [CLUSTER_INFO_NAME])]}),
        (ROLE_BINDING, {"metadata": meta(name, CLUSTER_INFO_NAMESPACE, labels), "roleRef": role_ref("Role", name),
                        "subjects": [subject("User", "system:anonymous")]}),
    ]


def registration_objects(engine, csr_auto_approval=True):
    """``(wanted, unwanted)``: objects to ensure and objects to remove for ``engine``."""
    return engines.get(engine).hub_objects.registration_objects(csr_auto_approval)


# --- cluster-info -------------------------------------------------------------------------------


def cluster_info_kubeconfig(server, ca_pem):
    """The ``kubeconfig`` text of cluster-info as kubeadm writes it: one unnamed cluster, no users."""
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "", "cluster": {
            "certificate-authority-data": base64.b64encode(ca_pem.encode("ascii")).decode("ascii"),
            "server": server}}],
        "contexts": None, "current-context": "", "preferences": {}, "users": None,
    }
    return yaml.safe_dump(config, default_flow_style=False)


def _certificates(ca_pem):
    """The certificates of a PEM bundle, whitespace-normalized, for comparison."""
    return ["".join(block.split()) for block in bootstrap.PEM_CERT_RE.findall(ca_pem or "")]


def published(configmap):
    """``(server, ca_pem)`` that a cluster-info ConfigMap publishes; ``(None, None)`` when unreadable."""
    text = ((configmap or {}).get("data") or {}).get(bootstrap.KUBECONFIG_KEY)
    try:
        config = yaml.safe_load(text) if text else None
        cluster = config["clusters"][0]["cluster"]
        return cluster.get("server"), base64.b64decode(cluster["certificate-authority-data"], validate=True).decode("ascii")
    except (yaml.YAMLError, TypeError, KeyError, IndexError, AttributeError, binascii.Error, ValueError):
        return None, None


def _pins(ca_pem):
    try:
        return bootstrap.pins_of_bundle(ca_pem) if ca_pem else []
    except FleetError:
        return []


def hub_endpoint(hub, hub_apiserver=None):
    """``(server, ca_cert_hashes)`` members use: what cluster-info publishes, else the hub connection's.

    ``hub_apiserver`` overrides the server. The pins are those of the published CA (what a joining
    member verifies), or of the CA that verifies the hub connection when cluster-info is missing.
    """
    server, ca_pem = published(resources.get(hub, CONFIG_MAP, CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE))
    if not server or not ca_pem:
        server, ca_pem = hub.server, hub.ca_pem
    return hub_apiserver or server, _pins(ca_pem)


def ensure_cluster_info(hub, server, ca_pem, update=False, check_mode=False):
    """Create cluster-info when missing; when it publishes something else, report it (or replace it).

    Returns ``(outcome, report)``: ``report`` is ``dict(action, server, ca_cert_hashes, matches)`` for
    what cluster-info publishes after the run, ``action`` created / updated / unchanged / different.
    """
    existing = resources.get(hub, CONFIG_MAP, CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE)
    desired = {"metadata": meta(CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE),
               "data": {bootstrap.KUBECONFIG_KEY: cluster_info_kubeconfig(server, ca_pem)}}
    if existing is not None:
        current_server, current_ca = published(existing)
        if current_server == server and _certificates(current_ca) == _certificates(ca_pem):
            outcome = resources.Outcome(CONFIG_MAP, CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE, "unchanged", existing, existing)
            return outcome, _report("unchanged", server, ca_pem, True)
        if not update:
            outcome = resources.Outcome(CONFIG_MAP, CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE, "unchanged", existing, existing)
            return outcome, _report("different", current_server, current_ca, False)
    # Creating, or patching only the kubeconfig key: the bootstrapsigner keeps the jws-kubeconfig-* keys signed.
    outcome = resources.ensure(hub, CONFIG_MAP, desired, check_mode)
    return outcome, _report(outcome.action, server, ca_pem, True)


def _report(action, server, ca_pem, matches):
    return {"action": action, "server": server, "ca_cert_hashes": _pins(ca_pem), "matches": matches}


# --- the hub CA -----------------------------------------------------------------------------------


def _presented_certificates(server, context, timeout=TLS_TIMEOUT):
    """The certificates (DER, leaf first) the API server at ``server`` presents in a TLS handshake with ``context``.

    Python 3.13 and later hand out the whole chain the server sent; earlier versions only its certificate.
    """
    parts = urlsplit(server)
    with socket.create_connection((parts.hostname, parts.port or 443), timeout=timeout) as sock:
        with context.wrap_socket(sock, server_hostname=parts.hostname) as tls:
            chain = getattr(tls, "get_unverified_chain", None)
            return list(chain()) if chain else [tls.getpeercert(binary_form=True)]


def _trusting_context(ca_pem):
    """A TLS context that trusts exactly the CAs of ``ca_pem``, an intermediate CA too (as Kubernetes' clients do).

    The host name is not checked: what matters here is which CA signed the server's certificate.
    """
    context = client.verifying_context(cadata=ca_pem)
    context.check_hostname = False
    context.verify_flags |= getattr(ssl, "VERIFY_X509_PARTIAL_CHAIN", 0)
    return context


def _issuer_description(presented, known_ca_pem):
    """Which CA issued the server certificate (the first of ``presented``): its pin, or its issuer name.

    The issuer is looked for among the rest of the chain the server sent and the CAs of ``known_ca_pem``
    (those that verify the hub connection); when it is in neither, only its name can be given.
    """
    chain = [ssl.DER_cert_to_PEM_cert(der) for der in presented]
    leaf = pki.load_certificates(chain[0], "serving certificate")[0]
    for pem in chain[1:] + bootstrap.PEM_CERT_RE.findall(known_ca_pem or ""):
        try:
            candidate = pki.load_certificates(pem, "CA certificate")[0]
        except FleetError:
            continue
        if pki.issued_by(leaf, candidate):
            return "CA %s (%s)" % (bootstrap.ca_pin(pem), candidate.subject.rfc4514_string())
    return "%s, a CA neither in the chain the server sent nor among the CAs of the hub connection" % (
        leaf.issuer.rfc4514_string() or "an unnamed issuer")


def check_ca_verifies_hub(hub, ca_pem, pins, timeout=TLS_TIMEOUT):
    """FleetError unless ``ca_pem`` (with ``pins``) verifies the certificate the hub's API server presents.

    The server's certificate chain is read over TLS twice: verified against ``ca_pem`` and, when that
    fails, without verification, to name the CA that did issue it. Members that discover the hub
    through cluster-info would otherwise pin a CA that cannot verify the hub and fail to register.
    Returns a warning (nothing checked) when the hub connection goes through a proxy.
    """
    if hub.proxy:
        return ("hub_ca_cert was not checked against the serving certificate of %s: the hub connection goes through"
                " proxy %s" % (hub.label, hub.proxy))
    try:
        context = _trusting_context(ca_pem)
    except (ssl.SSLError, ValueError) as exc:
        raise FleetError("hub_ca_cert cannot be used as a CA bundle: %s" % exc)
    try:
        _presented_certificates(hub.server, context, timeout)
        return None
    except ssl.SSLCertVerificationError as exc:
        reason = exc.verify_message or exc.reason
    except (OSError, ssl.SSLError) as exc:
        raise FleetError("cannot read the serving certificate of %s to check hub_ca_cert: %s" % (hub.label, exc))
    try:
        presented = _presented_certificates(hub.server, bootstrap.insecure_tls_context(), timeout)
    except (OSError, ssl.SSLError) as exc:
        raise FleetError("cannot read the serving certificate of %s to check hub_ca_cert: %s" % (hub.label, exc))
    try:
        known = hub.ca_pem
    except FleetError:
        known = None
    raise FleetError(
        "hub_ca_cert (CA %s) does not verify the serving certificate of %s (%s): that certificate was issued by %s."
        " Members would pin a CA that cannot verify the hub, so %s was not changed; give the CA bundle that signed"
        " the hub API server's certificate, or leave hub_ca_cert out to publish the CA of the hub connection"
        % (", ".join(pins), hub.label, reason, _issuer_description(presented, known), bootstrap.CLUSTER_INFO))


# --- the whole set ------------------------------------------------------------------------------


def _ensure(hub, kind, desired, check_mode):
    """``resources.ensure``, except that a binding whose roleRef differs is replaced (roleRef is immutable)."""
    if kind in (ROLE_BINDING, CLUSTER_ROLE_BINDING):
        meta = desired["metadata"]
        existing = resources.get(hub, kind, meta["name"], meta.get("namespace"))
        if existing is not None and not resources.contains(existing.get("roleRef"), desired["roleRef"]):
            if check_mode:
                return resources.Outcome(kind, meta["name"], meta.get("namespace"), "updated", existing, desired)
            resources.delete(hub, kind, meta["name"], meta.get("namespace"))
            created = resources.ensure(hub, kind, desired)
            return resources.Outcome(kind, meta["name"], meta.get("namespace"), "updated", existing, created.after)
    return resources.ensure(hub, kind, desired, check_mode)


def ensure_registration(hub, engine, hub_apiserver=None, ca_pem=None, csr_auto_approval=True,
                        update_cluster_info=False, check_mode=False):
    """Set the hub up for registration with join credentials; return a result dict for the module.

    ``hub_apiserver`` (default: the hub connection's server) and ``ca_pem`` (default: the CA that
    verifies the hub connection) are what cluster-info publishes. Result keys: ``changed``,
    ``objects`` ("Kind/ns/name: action" for every object), ``diff`` (one per changed object),
    ``cluster_info`` (see :func:`ensure_cluster_info`), ``warnings``, ``hub_apiserver``,
    ``ca_cert_hashes`` (the pins of ``ca_pem``) and ``grpc`` (:func:`grpc_endpoint`, OCM).
    """
    if hub_apiserver:
        karmada.validate_api_endpoint(hub_apiserver, "hub_apiserver")
    server = hub_apiserver or hub.server
    warnings = []
    if ca_pem:
        pins = bootstrap.pins_of_bundle(ca_pem)  # refuses a file without certificates
        warnings += filter(None, [check_ca_verifies_hub(hub, ca_pem, pins)])
    else:
        ca_pem = hub.ca_pem
        if not ca_pem:
            raise FleetError("%s: the hub connection has no CA certificate to publish in %s; set hub_ca_cert"
                             % (hub.label, bootstrap.CLUSTER_INFO))
        pins = bootstrap.pins_of_bundle(ca_pem)
    info_outcome, report = ensure_cluster_info(hub, server, ca_pem, update_cluster_info, check_mode)
    wanted, unwanted = registration_objects(engine, csr_auto_approval)
    outcomes = [info_outcome] + [_ensure(hub, kind, desired, check_mode) for kind, desired in wanted]
    outcomes += [_delete(hub, kind, desired, check_mode) for kind, desired in unwanted]
    grpc = grpc_endpoint(hub) if engines.get(engine).grpc_registration else None
    if grpc and not (grpc["server"] and grpc["ca_pem"]):
        warnings.append("the ClusterManager has the grpc registration driver, but %s: members cannot use it yet"
                        % ("no hostname endpoint for it" if not grpc["server"] else
                           "its CA is not published yet (%s/%s)" % (GRPC_CA_NAMESPACE, GRPC_CA_CONFIGMAP)))
    if not report["matches"]:
        warnings.append(
            "%s on %s publishes server %s (CA %s), not %s (CA %s); members discovering the hub get what it"
            " publishes. Set update_cluster_info: true to replace it (the bootstrapsigner re-signs it)."
            % (bootstrap.CLUSTER_INFO, hub.label, report["server"], ", ".join(report["ca_cert_hashes"]) or "unreadable",
               server, ", ".join(pins)))
    return _result(outcomes, cluster_info=report, warnings=warnings, hub_apiserver=server, ca_cert_hashes=pins, grpc=grpc)


def grpc_endpoint(hub):
    """``{"server", "ca_pem"}`` of the ClusterManager's gRPC registration endpoint, or None without the grpc driver.

    ``server`` is the host of the C(hostname) endpoint exposure; ``ca_pem`` its ``caBundle``, else the
    operator's CA in ConfigMap ``open-cluster-management-hub/ca-bundle-configmap`` (None until the
    operator created it).
    """
    spec = (resources.get(hub, ocm.CLUSTER_MANAGER, CLUSTER_MANAGER_NAME) or {}).get("spec") or {}
    drivers = (spec.get("registrationConfiguration") or {}).get("registrationDrivers") or []
    if not any(driver.get("authType") == "grpc" for driver in drivers):
        return None
    exposures = (spec.get("serverConfiguration") or {}).get("endpointsExposure") or []
    hostname = next(((e.get("grpc") or {}).get("hostname") or {} for e in exposures if e.get("protocol") == "grpc"), {})
    ca_pem = None
    if hostname.get("caBundle"):
        ca_pem = base64.b64decode(hostname["caBundle"]).decode("ascii")
    else:
        configmap = resources.get(hub, CONFIG_MAP, GRPC_CA_CONFIGMAP, GRPC_CA_NAMESPACE)
        ca_pem = ((configmap or {}).get("data") or {}).get(GRPC_CA_KEY)
    return {"server": hostname.get("host"), "ca_pem": ca_pem}


def _delete(hub, kind, desired, check_mode):
    meta = desired["metadata"]
    return resources.delete(hub, kind, meta["name"], meta.get("namespace"), check_mode=check_mode)


def remove_registration(hub, engine, check_mode=False):
    """Remove what :func:`ensure_registration` creates, except cluster-info and namespaces.

    cluster-info is public information other tools rely on; the namespace ``open-cluster-management``
    also holds the OCM operator. Without the bindings no bootstrap identity can register any more.
    """
    wanted, unwanted = registration_objects(engine, csr_auto_approval=True)
    objects = [(kind, desired) for kind, desired in reversed(wanted + unwanted) if kind is not NAMESPACE]
    return _result([_delete(hub, kind, desired, check_mode) for kind, desired in objects])


def _result(outcomes, **extra):
    diffs = []
    for outcome in outcomes:
        if outcome.changed:
            diff = outcome.diff()
            diff.update(before_header=outcome.ref, after_header=outcome.ref)
            diffs.append(diff)
    return dict(changed=any(o.changed for o in outcomes), objects=[o.summary() for o in outcomes], diff=diffs, **extra)
