# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every pull registration shares, whichever engine (docs/architecture.md 4.2, 4.4, 4.6).

:class:`Registration` is one validated registration request, built from the parameters of module
``cluster_register``; :class:`Registrar` is one run of it, the state its steps share (the clusters, the
request, check mode and the :class:`report.Report` of what it wrote), as kubernetes.core's
``K8sService`` holds the client and the module. Here too: the token discovery of the hub and the connection
authenticated by the bootstrap token, the checks of credentials a member already holds, the identity rule and
the in-flight CSR of a registration (the Lease that lets one registration of a member cluster run at a time,
whatever its name, is :class:`lease_lock.RegistrationLock`). The flows are in
``karmada/registration.py`` and ``ocm/registration.py``, chosen by ``register.run``.

Credentials a member already holds are reused when they are still good. Through a forward proxy (``proxy_url``,
``clusteradm join --proxy-url --proxy-ca-file``) the member reaches the hub for discovery, for the Karmada CSR and
in the kubeconfig it stores (``proxy-url``, the proxy's CA added to the hub CA). Tokens and private keys never appear
in results or messages.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import contextlib
import datetime
import re
import time

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import versions
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import cluster_identity
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, kubeconfig, objects, pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.report import Report

STATES = ("present", "absent")
DEFAULT_RENEW_BEFORE_DAYS = 30
MIN_CERT_EXPIRATION_SECONDS = 600  # the API server's lower bound for expirationSeconds
DISCOVERY_RETRY_INTERVAL = 2.0
PROXY_URL_SCHEMES = ("http", "https")  # the forward proxies the shared client (urllib3) reaches the hub through
IN_FLIGHT_PREFIX = "multicluster-fleet-registration-"
GO_DURATION_RE = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+\Z")


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


class Registration:
    """One validated registration request: the parameters of module cluster_register (``params``, as its argument spec
    validated them and :func:`engines.scoped_options` gave them: the options of one engine in dicts ``karmada`` and
    ``ocm``), minus the connections."""

    def __init__(self, params):
        engine = self.engine = engines.get(params["engine"])
        cluster_name = self.cluster_name = params["cluster_name"]
        state = self.state = params["state"]
        if state not in STATES:
            raise FleetError("state must be one of %s, got %r" % (", ".join(STATES), state))
        engine.validate_cluster_name(cluster_name)
        karmada_options, ocm_options = params["karmada"], params["ocm"]
        self.placement = engine.klusterlet_placement(cluster_name, ocm_options["klusterlet_mode"],
                                                     ocm_options["registration_driver"])
        self.deploy_agent = bool(karmada_options["deploy_agent"])
        if karmada_options["agent_replicas"] < 0:
            raise FleetError("karmada.agent_replicas must be at least 0, got %d" % karmada_options["agent_replicas"])
        karmada.validate_zones(karmada_options["zones"] or [])
        self.accept = bool(ocm_options["accept"])
        self.allow_mode_change = bool(karmada_options["allow_mode_change"])
        self.klusterlet_spec = ocm_options["klusterlet_spec"]
        # the klusterlet operator's objects, checked before anything is written: [(Kind, manifest)]
        self.operator_bundle = objects.prepare(ocm_options["operator_bundle"] or []) if state == "present" else []
        if self.klusterlet_spec is not None:
            ocm.validate_klusterlet_spec(self.klusterlet_spec)
        self.agent_image, self.agent_replicas = karmada_options["agent_image"], karmada_options["agent_replicas"]
        self.hub_version = params.get("hub_version")
        self.allow_downgrade = bool(params.get("allow_downgrade"))
        # What is written into image references, and the hub's release: refused before anything is written.
        problems = [versions.release_problem("hub_version", self.hub_version) if self.hub_version else "",
                    versions.image_problem("karmada.agent_image", self.agent_image) if self.deploy_agent else ""]
        problems += [versions.image_problem("ocm.klusterlet_spec.%s" % field, self.klusterlet_spec[field])
                     for field in ocm.KLUSTERLET_IMAGE_FIELDS if field in (self.klusterlet_spec or {})]
        if any(problems):
            raise FleetError(next(problem for problem in problems if problem))
        self.cert_rotation = cert_rotation(karmada_options) if karmada_options["enable_cert_rotation"] else None
        self.client_cert_expiration_seconds = ocm_options["client_cert_expiration_seconds"]
        if self.client_cert_expiration_seconds is not None and self.client_cert_expiration_seconds < 3600:
            raise FleetError("ocm.client_cert_expiration_seconds must be at least 3600 (one hour), got %d"
                             % self.client_cert_expiration_seconds)
        self.provider, self.region = karmada_options["provider"] or "", karmada_options["region"] or ""
        self.zones = list(karmada_options["zones"] or [])
        self.wait = bool(params["wait"])
        self.registration_driver = ocm_options["registration_driver"]
        self.force = bool(params["force"])
        self.force_internal_endpoint_lookup = bool(params["force_internal_endpoint_lookup"])
        self.unsafe_skip_ca_verification = bool(params["unsafe_skip_ca_verification"])
        self.api_endpoint = params["api_endpoint"]
        if self.api_endpoint:
            karmada.validate_api_endpoint(self.api_endpoint)
        self.proxy_url, self.proxy_ca_pem = proxy_settings(cluster_name, params["proxy_url"], params["proxy_ca_cert"])
        self.proxy_ca_pins = bootstrap.pins_of_bundle(self.proxy_ca_pem) if self.proxy_ca_pem else []
        self.proxy_server_address = agent_proxy_server_address(cluster_name, karmada_options["proxy_server_address"])
        for option, value, least in (("discovery_timeout", params["discovery_timeout"], 0),
                                     ("karmada.csr_wait_timeout", karmada_options["csr_wait_timeout"], 1),
                                     ("karmada.cert_expiration_seconds", karmada_options["cert_expiration_seconds"],
                                      MIN_CERT_EXPIRATION_SECONDS),
                                     ("renew_before", params["renew_before"], 0), ("wait_timeout", params["wait_timeout"], 0),
                                     ("wait_sleep", params["wait_sleep"], 1)):
            if value < least:
                raise FleetError("%s must be at least %d, got %d" % (option, least, value))
        self.discovery_timeout = params["discovery_timeout"]
        self.csr_wait_timeout = karmada_options["csr_wait_timeout"]
        self.cert_expiration_seconds = karmada_options["cert_expiration_seconds"]
        self.renew_before = datetime.timedelta(days=params["renew_before"])
        self.wait_timeout = params["wait_timeout"]
        self.wait_sleep = params["wait_sleep"]
        self.token = params["token"]
        self.hub_apiserver = None
        self.ca_pins = []
        if state == "present":
            if not params["hub_apiserver"] or not self.token:
                raise FleetError("state=present needs hub_apiserver and token")
            self.hub_apiserver = bootstrap.hub_url(params["hub_apiserver"])
            if engine.bootstrap_token_only:
                bootstrap.parse_token(self.token)
            self.ca_pins = bootstrap.expected_pins(params["ca_cert_hashes"], self.unsafe_skip_ca_verification)
        self.grpc_server = self.grpc_ca_pem = None
        if self.registration_driver == "grpc" and state == "present":
            pki.load_certificates(ocm_options["grpc_ca_pem"], "ocm.grpc_ca_pem")
            self.grpc_server, self.grpc_ca_pem = ocm_options["grpc_server"], ocm_options["grpc_ca_pem"]
        # how the agents of a Hosted klusterlet reach the member: from the hosting cluster, with their own kubeconfig
        self.managed_kubeconfig = None
        if params.get("hosting") and state == "present":
            self.managed_kubeconfig = hosted_agents_kubeconfig(ocm_options["managed_kubeconfig"], params.get("kubeconfig"),
                                                               params.get("context"), params.get("host"),
                                                               client.describe(cluster_name))


def cert_rotation(options):
    """``(checking interval, remaining time threshold)`` of the Karmada agent's certificate rotation (``options``: the
    karmada options), checked."""
    interval = options.get("cert_rotation_checking_interval") or karmada.CERT_ROTATION_CHECKING_INTERVAL
    threshold = options.get("cert_rotation_remaining_time_threshold")
    threshold = karmada.CERT_ROTATION_REMAINING_TIME_THRESHOLD if threshold is None else threshold
    if not GO_DURATION_RE.match(str(interval)):
        raise FleetError("karmada.cert_rotation_checking_interval must be a Go duration such as 5m or 1h30m, got %r"
                         % interval)
    if not 0 < threshold < 1:
        raise FleetError("karmada.cert_rotation_remaining_time_threshold must be between 0 and 1, got %s" % threshold)
    return str(interval), threshold


def proxy_settings(cluster_name, proxy_url, proxy_ca_cert):
    """``(proxy_url, proxy CA PEM text or None)``: the forward proxy the member reaches the hub through.

    ``proxy_ca_cert`` is the path of the PEM file of the CA that signed an https proxy's certificate.
    """
    who = client.describe(cluster_name)
    if not proxy_url:
        if proxy_ca_cert:
            raise FleetError("%s: proxy_ca_cert is the CA of the proxy of proxy_url, which is not set" % who)
        return None, None
    try:
        karmada.validate_proxy_url(proxy_url, "proxy_url", PROXY_URL_SCHEMES)
    except FleetError as exc:
        raise FleetError("%s: %s, the forward proxy the member reaches the hub through" % (who, exc.msg))
    if not proxy_ca_cert:
        return proxy_url, None
    try:
        with open(proxy_ca_cert) as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise FleetError("%s: cannot read proxy_ca_cert %s: %s" % (who, proxy_ca_cert, exc))
    try:
        pki.load_certificates(text, "proxy_ca_cert %s" % proxy_ca_cert)
    except FleetError as exc:
        raise FleetError("%s: %s" % (who, exc.msg))
    return proxy_url, text


def agent_proxy_server_address(cluster_name, address):
    """The karmada-agent's ``--proxy-server-address`` (the Cluster's ``spec.proxyURL``), validated; None when not set."""
    if not address:
        return None
    try:
        karmada.validate_proxy_url(address, "proxy_server_address")
    except FleetError as exc:
        raise FleetError("%s: %s, the proxy through which the Karmada control plane reaches the member's API server"
                         % (client.describe(cluster_name), exc.msg))
    return address


def hosted_agents_kubeconfig(path, member_kubeconfig, member_context, member_host=None, who="the member cluster"):
    """The YAML text of the kubeconfig Hosted agents use to reach the member, every credential embedded.

    ``path`` (its current context) when given, else the member connection's kubeconfig (the default
    one when the connection names neither a kubeconfig nor a host) and context.
    """
    if path:
        source, context = path, None
    elif member_kubeconfig or not member_host:
        source, context = member_kubeconfig or kubeconfig.default_path(), member_context
    else:
        raise FleetError("%s: a Hosted klusterlet needs a kubeconfig of the managed cluster for its agents: set "
                         "ocm.managed_kubeconfig (the member connection is given by host, without a kubeconfig)" % who)
    return pki.yaml_text(kubeconfig.flatten(source, context, who))


# --- discovery and the bootstrap connection ------------------------------------------------------


def discover(reg, discover_hub=bootstrap.discover_hub, sleep=time.sleep):
    """Token discovery of the hub, retried while cluster-info has no signature for the token yet.

    Kubernetes' bootstrapsigner signs cluster-info moments after a token is created; like karmadactl,
    wait for it up to ``discovery_timeout`` seconds, then fail with the signer's verdict. Cluster-info is fetched
    through the forward proxy ``proxy_url`` when one is set (:func:`bootstrap.proxied_fetch`).
    """
    found, last = {}, {}
    opener = bootstrap.proxied_fetch(reg.proxy_url, reg.proxy_ca_pem) if reg.proxy_url else None

    def attempt():
        try:
            found.update(discover_hub(reg.hub_apiserver, reg.token, ca_pins=reg.ca_pins,
                                      unsafe_skip_ca_verification=reg.unsafe_skip_ca_verification, opener=opener,
                                      allow_unsigned=reg.engine.unsigned_discovery))
        except bootstrap.MissingSignature as exc:
            last["error"] = exc
            return False, exc.msg
        return True, None
    try:
        resources.wait_until(attempt, reg.discovery_timeout, "a signature of the token in %s" % bootstrap.CLUSTER_INFO,
                             interval=DISCOVERY_RETRY_INTERVAL, sleep=sleep)
    except WaitTimeout:
        raise FleetError("%s (checked for %ss: create a fresh token with multicluster.fleet.bootstrap_token)"
                         % (last["error"].msg, reg.discovery_timeout))
    return found


def hub_server(reg, discovered):
    """The hub URL the member's kubeconfig uses: hub_apiserver, or cluster-info's with force_internal_endpoint_lookup."""
    return discovered["server"] if reg.force_internal_endpoint_lookup else reg.hub_apiserver


def hub_trust(reg, ca_pem):
    """The CA bundle of the member's hub kubeconfig: the hub CA, plus the CA of the proxy (proxy_ca_cert)."""
    return pki.merge_certificates(ca_pem, reg.proxy_ca_pem) if reg.proxy_ca_pem else ca_pem


def proxy_problem(reg, proxy_url, ca_pem):
    """Why a stored hub kubeconfig (its ``proxy-url`` and CA bundle) does not reach the hub the way ``reg`` asks, or None."""
    def route(url):
        return "through proxy %s" % url if url else "directly"
    if (proxy_url or None) != reg.proxy_url:
        return "the stored kubeconfig reaches the hub %s, not %s" % (route(proxy_url), route(reg.proxy_url))
    missing = set(reg.proxy_ca_pins) - set(bootstrap.pins_of_bundle(ca_pem))
    if missing:
        return "the stored kubeconfig does not trust the proxy CA of proxy_ca_cert (%s)" % ", ".join(sorted(missing))
    return None


@contextlib.contextmanager
def bootstrap_connection(server, ca_pem, token, proxy=None):
    """A hub connection authenticated by the bootstrap token, trusting only ``ca_pem``, through ``proxy`` when given."""
    with bootstrap.temporary_pem_file(ca_pem) as path:
        config = client.build_configuration({"host": server, "api_key": token, "ca_cert": path, "proxy": proxy},
                                            client.describe(role="hub"))
        yield client.Cluster(None, config, role="hub")


# --- stored credentials --------------------------------------------------------------------------


def secret_value(secret_obj, key):
    """The decoded text of one Secret key, or None."""
    value = ((secret_obj or {}).get("data") or {}).get(key)
    if not value:
        return None
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def credentials_problem(reg, server, ca_pem, cert_pem, key_pem, common_name, organization, now=None):
    """Why stored hub credentials cannot be kept, or None when they are good for this cluster and hub.

    Good: the kubeconfig points at the expected hub (unless the hub URL comes from cluster-info), the
    hub CA is one of the pinned ones (when pins are given), and the client certificate is this agent's,
    matches the key, was issued by that CA and is not within ``renew_before`` of its expiry.
    """
    if not ca_pem or not cert_pem or not key_pem:
        return "the stored credentials lack the hub CA, the certificate or the key"
    try:
        change = hub_change(reg, server, ca_pem)
    except FleetError as exc:
        return exc.msg
    if change:
        return describe_hub_change(change)
    return certificate_problem(reg, ca_pem, cert_pem, key_pem, common_name, organization, now)


def certificate_problem(reg, ca_pem, cert_pem, key_pem, common_name, organization, now=None):
    """Why a stored client certificate cannot be kept with the hub CA bundle ``ca_pem``, or None."""
    return pki.client_certificate_problem(cert_pem, key_pem, ca_pem, common_name, organization,
                                          renew_before=reg.renew_before, now=now or utc_now())


def hub_change(reg, server, ca_pem):
    """What differs between the hub a stored kubeconfig reaches (``server``, CA bundle ``ca_pem``) and the one ``reg``
    asks for, or None: ``{"address": {"from", "to"}}`` when ``hub_apiserver`` changed (not compared with
    force_internal_endpoint_lookup, where the URL comes from cluster-info), ``{"ca": {"from", "to"}}`` (CA pins) when
    none of the stored CA's pins is among ``ca_cert_hashes``. The pins of a proxy's CA are left out. Raises FleetError
    when ``ca_pem`` cannot be read."""
    change = {}
    if not reg.force_internal_endpoint_lookup and server != reg.hub_apiserver:
        change["address"] = {"from": server, "to": reg.hub_apiserver}
    pins = [pin for pin in bootstrap.pins_of_bundle(ca_pem) if pin not in reg.proxy_ca_pins]
    if reg.ca_pins and not set(pins) & set(reg.ca_pins):
        change["ca"] = {"from": pins, "to": list(reg.ca_pins)}
    return change or None


def describe_hub_change(change):
    """A sentence of what :func:`hub_change` found."""
    parts = []
    if "address" in change:
        parts.append("the stored kubeconfig points at %s, not %s" % (change["address"]["from"], change["address"]["to"]))
    if "ca" in change:
        parts.append("the stored hub CA (%s) is none of ca_cert_hashes" % ", ".join(change["ca"]["from"]))
    return "; ".join(parts)


def certificate_expiration(cert_pem):
    return pki.rfc3339(pki.not_after(pki.load_certificates(cert_pem)[0]))


def renewal_warning(reg, cert_pem, now=None):
    """A warning when the agent certificate just issued is already within ``renew_before`` of its expiry, or None.

    Since Kubernetes 1.22 the hub's signer honours a CSR's ``expirationSeconds`` (older servers sign for their own
    duration) and caps it at its own maximum (``--cluster-signing-duration``): a certificate that short makes every run
    renew it."""
    expires = pki.not_after(pki.load_certificates(cert_pem)[0])
    if (now or utc_now()) + reg.renew_before < expires:
        return None
    return ("the hub issued the agent certificate of cluster %s until %s (cert_expiration_seconds asked for %d seconds; "
            "Kubernetes 1.22 and newer honour that, capped by the hub's signer), which is within renew_before (%d days) "
            "of its expiry already: every run will request a new certificate. Ask for a longer one with "
            "cert_expiration_seconds or lower renew_before below its lifetime"
            % (reg.cluster_name, pki.rfc3339(expires), reg.cert_expiration_seconds, reg.renew_before.days))


# --- a registration stopped half-way ------------------------------------------------------------------


def in_flight_name(cluster_name):
    """The name of the Secret of the CSR in flight of a registration of ``cluster_name`` (and of the Lease of version
    1.0.0, which a stopped registration may have left)."""
    return IN_FLIGHT_PREFIX + cluster_name


# --- one name, one cluster ------------------------------------------------------------------------


def check_identity(member, hub, reg):
    """Refuse, before anything is written, to register this member under a name the hub gives another cluster, or
    under a second name (docs/architecture.md 3.2); a Karmada Push member is not turned into a Pull one unless
    ``allow_mode_change``. Returns the member's cluster id. Without hub credentials there is nothing to compare with
    (a bootstrap token may not list the hub's clusters)."""
    cluster_id = cluster_identity.cluster_id(member)
    if hub is None:
        return cluster_id
    existing = cluster_identity.registered_member(reg.engine, resources.list_objects(hub, reg.engine.member_kind),
                                                  reg.cluster_name, cluster_id, reg.api_endpoint or member.server)
    reg.engine.check_pull_registration(existing, reg.cluster_name, reg.allow_mode_change)
    return cluster_id


class Registrar:
    """One run of a :class:`Registration`: what its steps share; one subclass per engine, its flow.

    ``member`` and ``hub`` (None without hub credentials) are the connections, ``hosting`` the cluster a Hosted
    klusterlet runs on (``runtime``: the cluster the agent runs on), ``reg`` the request, ``report`` what the
    current step wrote (each step starts a new one). ``connect`` (:func:`bootstrap_connection`) and
    ``discover_hub`` (:func:`bootstrap.discover_hub`) are how the run reaches the hub with the bootstrap token.
    """

    engine = None  # the name of the engine whose flow a subclass is

    def __init__(self, member, hub, reg, check_mode=False, hosting=None, connect=bootstrap_connection,
                 discover_hub=bootstrap.discover_hub):
        self.member, self.hub, self.reg, self.check_mode = member, hub, reg, check_mode
        self.hosting = hosting
        self.runtime = hosting or member
        self.connect, self.discover_hub = connect, discover_hub
        self.report = Report()

    def run(self):
        """Register (state present) or unregister (absent); return the module result."""
        raise NotImplementedError

    def start(self):
        """A new step: a new :class:`Report`, returned."""
        self.report = Report()
        return self.report

    def discover(self):
        return discover(self.reg, self.discover_hub)

    def published_ca_change(self, ca_pem):
        """``(change, discovered)`` when the hub now publishes another CA bundle than ``ca_pem``, the one a member's stored
        kubeconfig trusts, which lacks some of ``ca_cert_hashes`` (during a hub CA change, the pins of both CAs): the
        :func:`hub_change` entry ``ca`` and the discovery; ``(None, None)`` otherwise. Only then is the hub asked (token
        discovery); a hub that cannot be asked leaves the stored kubeconfig as it is."""
        reg = self.reg
        try:
            stored = [pin for pin in bootstrap.pins_of_bundle(ca_pem) if pin not in reg.proxy_ca_pins]
        except FleetError:
            return None, None
        if not set(reg.ca_pins) - set(stored):
            return None, None
        try:
            discovered = self.discover()
        except (FleetError, client.ClusterError):
            return None, None
        if set(discovered["ca_pins"]) == set(stored):
            return None, None
        return {"ca": {"from": stored, "to": discovered["ca_pins"]}}, discovered

    def ensure(self, cluster, kind, desired, current=None):
        return self.report.add(cluster, resources.ensure(cluster, kind, desired, self.check_mode, current))

    def apply(self, cluster, items, **options):
        """:func:`objects.apply` of ``items`` (as :func:`objects.prepare` gives them) with ``options``, each outcome
        recorded in this step's report."""
        for outcome in objects.apply(cluster, items, self.check_mode, **options):
            self.report.add(cluster, outcome)

    def delete(self, cluster, kind, name, namespace=None, wait=False):
        """Delete, recorded before the wait (``wait_timeout``) until it is gone: a wait that times out still reports the
        deletion."""
        return resources.delete(cluster, kind, name, namespace, self.check_mode,
                                resources.Wait(wait, self.reg.wait_timeout, self.reg.wait_sleep),
                                record=lambda outcome: self.report.add(cluster, outcome))

    def go_on_without_member(self, exc, leftovers):
        """Handle the error ``exc`` of an unregistration's first request to the member.

        An unreachable member is an error naming it, unless ``force`` is set and hub credentials are given:
        then the run goes on with the hub side only (``leftovers`` stay on the member, a warning says so).
        """
        reg = self.reg
        if exc.status:
            raise exc
        if not reg.force or self.hub is None:
            raise FleetError("%s; cluster %s cannot be unregistered without reaching it: run again once it answers, or with "
                             "force=true and hub credentials to remove it from the hub only" % (exc.msg, reg.cluster_name),
                             **exc.details)
        self.report.warnings.append("%s; force=true: removed cluster %s from the hub only, %s stay on it (run state=absent "
                                    "again once it answers)" % (exc.msg, reg.cluster_name, leftovers))
