# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pull registration of a member with a hub, from the member's side (docs/architecture.md 4.2, 4.4, 4.6).

Karmada (``karmadactl register`` / ``unregister``): discover and pin the hub, request the agent's
client certificate with the bootstrap token, and store the agent kubeconfig on the member; with hub
admin credentials also the hub-side agent RBAC, created directly (never through an all-powerful
certificate). OCM (``clusteradm join`` / ``unjoin``): discover and pin the hub, store the bootstrap
kubeconfig and the Klusterlet registration fields; the klusterlet makes its own CSR.

Credentials a member already holds are reused when they are still good: a valid agent certificate
for this cluster and hub is never replaced by a new CSR, so a re-run changes nothing even after the
bootstrap token expired. Tokens and private keys never appear in results or messages.

Through a forward proxy (``proxy_url``, ``clusteradm join --proxy-url --proxy-ca-file``) the member
reaches the hub for discovery, for the Karmada CSR and in the kubeconfig it stores (``proxy-url``,
the proxy's CA added to the hub CA). A changed proxy rewrites that kubeconfig; a Karmada agent keeps
its certificate.

One registration of a member cluster at a time, whatever its name: a run that writes the member's
credentials holds Lease ``kube-system/multicluster-fleet-registration`` on the member
(:class:`~lease_lock.RegistrationLock`); a second run waits for it, then reads again and keeps what the
first one stored - or refuses, when the first one registered the cluster under another name. The CSR's key is
stored on the member before the CSR is posted, so that a run stopped half-way is resumed by the next
one with the same CSR: each member gets one certificate.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import contextlib
import datetime
import secrets
import time

from ansible_collections.multicluster.fleet.plugins.module_utils import accept, bootstrap, client, fleet, karmada, kubeconfig, objects, ocm, pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils import csr as csrs
from ansible_collections.multicluster.fleet.plugins.module_utils.client import ClusterError, Conflict, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.lease_lock import LEASE, LOCK_NAMESPACE, REGISTRATION_LEASE, RegistrationLock
from ansible_collections.multicluster.fleet.plugins.module_utils.resources import CSR, NAMESPACE, SECRET

ENGINES = ("karmada", "ocm")
STATES = ("present", "absent")
DEFAULT_RENEW_BEFORE_DAYS = 30
MIN_CERT_EXPIRATION_SECONDS = 600  # the API server's lower bound for expirationSeconds
DISCOVERY_RETRY_INTERVAL = 2.0
PROXY_URL_SCHEMES = ("http", "https")  # the forward proxies the shared client (urllib3) reaches the hub through
IN_FLIGHT_PREFIX = "multicluster-fleet-registration-"
# What wait waits for on the Klusterlet (clusteradm join --wait): the operator has applied it and its agents run.
KLUSTERLET_READY = (resources.wanted_condition("Applied"), resources.wanted_condition("Available"))
# Seconds of 401 or 403 answers in a row while waiting for a CSR before the token counts as gone or unauthorized: an
# API server that has just started refuses bootstrap tokens until it has read their Secrets (401), and forbids their
# requests until its RBAC authorizer has read the roles (403, about a second).
TOKEN_REFUSAL_SECONDS = 30
BOOTSTRAP_USER = "system:bootstrap:%s"  # how the hub's API server names a bootstrap token's requests


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


class Registration:
    """One validated registration request (the module's options, minus the connections)."""

    def __init__(self, engine, cluster_name, state="present", hub_apiserver=None, token=None, ca_cert_hashes=None,
                 unsafe_skip_ca_verification=False, force_internal_endpoint_lookup=False, discovery_timeout=30,
                 csr_wait_timeout=300, cert_expiration_seconds=karmada.DEFAULT_CERT_EXPIRATION_SECONDS,
                 renew_before=DEFAULT_RENEW_BEFORE_DAYS, api_endpoint=None, wait_timeout=60, klusterlet_mode=None,
                 registration_driver="csr", grpc_server=None, grpc_ca_pem=None, force=False, wait_sleep=1, proxy_url=None,
                 proxy_ca_cert=None, proxy_server_address=None, wait=False, deploy_agent=False,
                 agent_image=karmada.DEFAULT_AGENT_IMAGE, agent_replicas=1, provider=None, region=None, zones=None,
                 accept=False, allow_mode_change=False, klusterlet_spec=None):
        if engine not in ENGINES:
            raise FleetError("engine must be one of %s, got %r" % (", ".join(ENGINES), engine))
        if state not in STATES:
            raise FleetError("state must be one of %s, got %r" % (", ".join(STATES), state))
        fleet.validate_cluster_name(engine, cluster_name)
        self.placement = klusterlet_placement(engine, cluster_name, klusterlet_mode, registration_driver)
        self.deploy_agent = bool(deploy_agent)
        if engine != "karmada" and (deploy_agent or provider or region or zones):
            raise FleetError("deploy_agent, provider, region and zones are Karmada settings (the klusterlet is installed by "
                             "role multicluster.fleet.agent_install); engine is %s" % engine)
        if agent_replicas < 0:
            raise FleetError("agent_replicas must be at least 0, got %d" % agent_replicas)
        karmada.validate_zones(zones or [])
        if accept and engine != "ocm":
            raise FleetError("accept is an OCM setting (clusteradm accept); a Karmada hub approves agent CSRs itself, or "
                             "with multicluster.fleet.csr_accept; engine is %s" % engine)
        self.accept = bool(accept)
        if allow_mode_change and engine != "karmada":
            raise FleetError("allow_mode_change is a Karmada setting (an OCM cluster has no Push or Pull mode); engine is %s"
                             % engine)
        self.allow_mode_change = bool(allow_mode_change)
        if klusterlet_spec is not None:
            if engine != "ocm":
                raise FleetError("klusterlet_spec is an OCM setting (the Klusterlet's images and resources); engine is %s"
                                 % engine)
            ocm.validate_klusterlet_spec(klusterlet_spec)
        self.klusterlet_spec = klusterlet_spec
        self.agent_image, self.agent_replicas = agent_image, agent_replicas
        self.provider, self.region, self.zones = provider or "", region or "", list(zones or [])
        self.wait = bool(wait)
        self.registration_driver = registration_driver
        self.engine = engine
        self.cluster_name = cluster_name
        self.state = state
        self.force = bool(force)
        self.force_internal_endpoint_lookup = bool(force_internal_endpoint_lookup)
        self.unsafe_skip_ca_verification = bool(unsafe_skip_ca_verification)
        self.api_endpoint = api_endpoint
        if api_endpoint:
            karmada.validate_api_endpoint(api_endpoint)
        self.proxy_url, self.proxy_ca_pem = proxy_settings(cluster_name, proxy_url, proxy_ca_cert)
        self.proxy_ca_pins = bootstrap.pins_of_bundle(self.proxy_ca_pem) if self.proxy_ca_pem else []
        self.proxy_server_address = agent_proxy_server_address(engine, cluster_name, proxy_server_address)
        for option, value, least in (("discovery_timeout", discovery_timeout, 0), ("csr_wait_timeout", csr_wait_timeout, 1),
                                     ("cert_expiration_seconds", cert_expiration_seconds, MIN_CERT_EXPIRATION_SECONDS),
                                     ("renew_before", renew_before, 0), ("wait_timeout", wait_timeout, 0),
                                     ("wait_sleep", wait_sleep, 1)):
            if value < least:
                raise FleetError("%s must be at least %d, got %d" % (option, least, value))
        self.discovery_timeout = discovery_timeout
        self.csr_wait_timeout = csr_wait_timeout
        self.cert_expiration_seconds = cert_expiration_seconds
        self.renew_before = datetime.timedelta(days=renew_before)
        self.wait_timeout = wait_timeout
        self.wait_sleep = wait_sleep
        self.token = token
        self.hub_apiserver = None
        self.ca_pins = []
        if state == "present":
            if not hub_apiserver or not token:
                raise FleetError("state=present needs hub_apiserver and token")
            self.hub_apiserver = bootstrap.hub_url(hub_apiserver)
            if engine == "karmada":
                bootstrap.parse_token(token)  # Karmada registers with a bootstrap token only
            self.ca_pins = bootstrap.expected_pins(ca_cert_hashes, unsafe_skip_ca_verification)
        self.grpc_server = self.grpc_ca_pem = None
        if registration_driver == "grpc" and state == "present":
            if not grpc_server or not grpc_ca_pem:
                raise FleetError("registration_driver=grpc needs grpc_server and grpc_ca_pem (the CA of the hub's gRPC server)")
            pki.load_certificates(grpc_ca_pem, "grpc_ca_pem")
            self.grpc_server, self.grpc_ca_pem = grpc_server, grpc_ca_pem


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


def agent_proxy_server_address(engine, cluster_name, address):
    """The karmada-agent's ``--proxy-server-address`` (the Cluster's ``spec.proxyURL``), validated; None when not set."""
    if not address:
        return None
    who = client.describe(cluster_name)
    if engine != "karmada":
        raise FleetError("%s: proxy_server_address is a Karmada setting (the agent's --proxy-server-address, which sets the "
                         "Cluster's spec.proxyURL); engine is %s" % (who, engine))
    try:
        karmada.validate_proxy_url(address, "proxy_server_address")
    except FleetError as exc:
        raise FleetError("%s: %s, the proxy through which the Karmada control plane reaches the member's API server"
                         % (who, exc.msg))
    return address


def klusterlet_placement(engine, cluster_name, mode, driver):
    """The :class:`ocm.Placement` of the cluster's Klusterlet; FleetError for settings only OCM has."""
    if engine != "ocm":
        if mode or driver != "csr":
            raise FleetError("klusterlet_mode and registration_driver are OCM settings; engine is %s" % engine)
        return None
    if mode is not None and mode not in ocm.KLUSTERLET_MODES:
        raise FleetError("klusterlet_mode must be one of %s, got %r" % (", ".join(ocm.KLUSTERLET_MODES), mode))
    if driver not in ocm.REGISTRATION_DRIVERS:
        raise FleetError("registration_driver must be one of %s, got %r" % (", ".join(ocm.REGISTRATION_DRIVERS), driver))
    placement = ocm.Placement(cluster_name, mode)
    if placement.hosted and len(cluster_name) > ocm.HOSTED_CLUSTER_NAME_MAX_LENGTH:
        raise FleetError("cluster name %r is too long for klusterlet_mode %s: the Klusterlet and its namespace on the hosting "
                         "cluster are named %s<cluster>, so the name may have at most %d characters"
                         % (cluster_name, mode, ocm.HOSTED_PREFIX, ocm.HOSTED_CLUSTER_NAME_MAX_LENGTH))
    return placement


class Report:
    """The outcomes of one run, in order, and what the module returns about them."""

    def __init__(self):
        self.outcomes = []  # (cluster role: hub, member or hosting; Outcome)
        self.warnings = []

    def add(self, cluster, outcome):
        self.outcomes.append((cluster.role, outcome))
        return outcome

    def ensure(self, cluster, kind, desired, check_mode):
        return self.add(cluster, resources.ensure(cluster, kind, desired, check_mode))

    def delete(self, cluster, kind, name, namespace=None, check_mode=False, wait=False, timeout=60, interval=1.0):
        """Delete, recorded before the wait until it is gone: a wait that times out still reports the deletion."""
        return resources.delete(cluster, kind, name, namespace, check_mode, wait=wait, timeout=timeout, interval=interval,
                                record=lambda outcome: self.add(cluster, outcome))

    @contextlib.contextmanager
    def failures_name_writes(self, verb):
        """A FleetError raised inside after a change fails with ``changed`` and ``changes`` saying what the run did,
        its message naming what was ``verb`` (``written``, ``deleted``) before it."""
        try:
            yield
        except FleetError as exc:
            done = self.result()
            written = [line for line, (_cluster, outcome) in zip(done["changes"], self.outcomes) if outcome.changed]
            raise resources.failed_after(exc, written, verb, changes=done["changes"])

    def result(self, **extra):
        """``changes`` name the cluster of each object, as cluster_join's do: ``hub Cluster/member1: deleted``."""
        diffs = []
        for cluster, outcome in self.outcomes:
            if outcome.changed:
                header = "%s %s" % (cluster, outcome.ref)
                diffs.append(dict(outcome.diff(), before_header=header, after_header=header))
        return dict(changed=bool(diffs), changes=["%s %s" % (cluster, o.summary()) for cluster, o in self.outcomes],
                    diff=diffs, warnings=self.warnings, **extra)


def _merge_written(registered, report):
    """``registered`` (a module result) with the outcomes of ``report``, written after it, added."""
    done = report.result()
    registered.update(changed=registered["changed"] or done["changed"], changes=registered["changes"] + done["changes"],
                      diff=registered["diff"] + done["diff"], warnings=registered["warnings"] + done["warnings"])
    return registered


def _failed_after(exc, registered, report):
    """``exc`` raised after ``registered`` and ``report`` were written: the same error, naming everything written."""
    details = dict(exc.details)
    applied, written = details.pop("changed", False), details.pop("objects", [])
    for key in ("clusters", "diff", "waiting"):
        details.pop(key, None)
    merged = _merge_written(registered, report)
    error = WaitTimeout if isinstance(exc, WaitTimeout) else FleetError
    return error(exc.msg, changed=bool(merged["changed"] or applied),
                 changes=merged["changes"] + ["member %s" % summary for summary in written], **details)


class _Accepted:
    """An acceptance step (a CSR approved, hubAcceptsClient set) as a :class:`Report` outcome."""

    changed = True

    def __init__(self, ref, verb, diff):
        self.ref, self.verb, self._diff = ref, verb, diff

    def summary(self):
        return "%s: %s" % (self.ref, self.verb)

    def diff(self):
        return {"before": self._diff["before"], "after": self._diff["after"]}


# --- discovery and the bootstrap connection ------------------------------------------------------


def discover(reg, discover_hub=bootstrap.discover_hub, sleep=time.sleep):
    """Token discovery of the hub, retried while cluster-info has no signature for the token yet.

    Kubernetes' bootstrapsigner signs cluster-info moments after a token is created; like karmadactl,
    wait for it up to ``discovery_timeout`` seconds, then fail with the signer's verdict.
    """
    found, last = {}, {}

    def attempt():
        try:
            found.update(discover_hub(reg.hub_apiserver, reg.token, ca_pins=reg.ca_pins,
                                      unsafe_skip_ca_verification=reg.unsafe_skip_ca_verification,
                                      allow_unsigned=reg.engine == "ocm", proxy=reg.proxy_url, proxy_ca_pem=reg.proxy_ca_pem))
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


def _secret_value(secret_obj, key):
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
    if not reg.force_internal_endpoint_lookup and server != reg.hub_apiserver:
        return "the stored kubeconfig points at %s, not %s" % (server, reg.hub_apiserver)
    if not ca_pem or not cert_pem or not key_pem:
        return "the stored credentials lack the hub CA, the certificate or the key"
    try:
        pins = bootstrap.pins_of_bundle(ca_pem)
    except FleetError as exc:
        return exc.msg
    if reg.ca_pins and not set(pins) & set(reg.ca_pins):
        return "the stored hub CA (%s) is none of ca_cert_hashes" % ", ".join(pins)
    return pki.client_certificate_problem(cert_pem, key_pem, ca_pem, common_name, organization,
                                          renew_before=reg.renew_before, now=now or _now())


def _certificate_expiration(cert_pem):
    return pki.rfc3339(pki.not_after(pki.load_certificates(cert_pem)[0]))


def _agent_kubeconfig(member):
    """``(secret, kubeconfig parts, problem)``: the member's agent kubeconfig Secret, or why it is not usable."""
    stored = resources.get(member, SECRET, karmada.AGENT_KUBECONFIG_SECRET, karmada.AGENT_NAMESPACE)
    if stored is None:
        return None, None, "there is no %s/%s Secret on the member" % (karmada.AGENT_NAMESPACE, karmada.AGENT_KUBECONFIG_SECRET)
    try:
        return stored, pki.read_kubeconfig(_secret_value(stored, karmada.AGENT_KUBECONFIG_SECRET) or "", "stored agent kubeconfig"), None
    except FleetError as exc:
        return stored, None, exc.msg


def _refuse_another_karmada_agent(parts, name, doing):
    """FleetError when the member's agent kubeconfig holds another cluster's agent certificate."""
    try:
        identity = pki.describe(pki.load_certificates((parts or {}).get("client_cert_pem"))[0])["common_name"]
    except FleetError:
        return  # nothing readable to protect
    if identity.startswith(karmada.AGENT_USER_PREFIX) and identity != karmada.agent_user(name):
        raise FleetError("the member's agent kubeconfig belongs to %s, not to cluster %s: refusing to %s another cluster's "
                         "agent (unregister %s first)" % (identity, name, doing, identity[len(karmada.AGENT_USER_PREFIX):]))


def _refuse_another_klusterlet(runtime, placement, name, doing):
    """FleetError when the Klusterlet this registration would use registers another cluster (none when the cluster does
    not serve the Klusterlet API yet); else the name it registers (None: no Klusterlet yet)."""
    current = resources.get(runtime, ocm.KLUSTERLET, placement.klusterlet)
    registered_as = ((current or {}).get("spec") or {}).get("clusterName")
    if registered_as and registered_as != name:
        raise FleetError("Klusterlet %s on %s registers cluster %s, not %s: refusing to %s another cluster "
                         "(unjoin %s first)" % (placement.klusterlet, runtime.label, registered_as, name, doing, registered_as))
    return registered_as


# --- a registration stopped half-way ------------------------------------------------------------------


def in_flight_name(cluster_name):
    """The name of the Secret of the CSR in flight of a registration of ``cluster_name`` (and of the Lease of earlier
    versions, which a stopped registration may have left)."""
    return IN_FLIGHT_PREFIX + cluster_name


# --- one name, one cluster ------------------------------------------------------------------------


def check_identity(member, hub, reg):
    """Refuse, before anything is written, to register this member under a name the hub gives another cluster, or
    under a second name (docs/architecture.md 3.2); a Karmada Push member is not turned into a Pull one unless
    ``allow_mode_change``. Returns the member's cluster id. Without hub credentials there is nothing to compare with
    (a bootstrap token may not list the hub's clusters)."""
    cluster_id = fleet.cluster_id(member)
    if hub is None:
        return cluster_id
    existing = fleet.registered_member(reg.engine, resources.list_objects(hub, fleet.member_kind(reg.engine)),
                                       reg.cluster_name, cluster_id, reg.api_endpoint or member.server)
    if reg.engine == "karmada" and ((existing or {}).get("spec") or {}).get("syncMode") == "Push" \
            and not reg.allow_mode_change:
        raise FleetError("Cluster '%s' is registered on the hub in Push mode; registering it by pull would make it a "
                         "Pull member: set allow_mode_change=true to do so, or keep joining it with "
                         "multicluster.fleet.cluster_join" % reg.cluster_name)
    return cluster_id


# --- Karmada ---------------------------------------------------------------------------------------


def csr_name(cluster_name):
    """``<cluster>-<5 random [a-z0-9]>``, as karmadactl register names its CSR."""
    return "%s-%s" % (cluster_name, "".join(secrets.choice(bootstrap.TOKEN_CHARS) for dummy in range(5)))


class CsrRefused(FleetError):
    """The hub denied the CSR, or issued a certificate that cannot be used: a new run starts afresh."""


def wait_for_certificate(hub, name, timeout, renew=None, interval=1.0):
    """Wait until CSR ``name`` carries its certificate; fail at once when it is denied or failed.

    A hub that does not answer for a while (restarting), or refuses the token for up to
    :data:`TOKEN_REFUSAL_SECONDS` in a row, is waited for within ``timeout``. ``renew()`` is called on
    every poll, ``interval`` seconds apart (it keeps the registration's Lease).
    """
    issued = {}
    refusals = []
    tolerated = max(1, int(TOKEN_REFUSAL_SECONDS / interval))

    def check():
        if renew:
            renew()
        try:
            csr = hub.request("GET", CSR.path(name=name))
        except NotFound:
            raise FleetError("CSR %s disappeared from the hub (deleted, or removed by its CSR cleaner) before its "
                             "certificate was issued; run again to post it anew; the member's agent kubeconfig was not "
                             "changed" % name, csr_name=name)
        except ClusterError as exc:
            if exc.status in (401, 403):
                refusals.append(exc.msg)
                if len(refusals) > tolerated:
                    cause = ("the bootstrap token expired or was deleted; create a fresh one with "
                             "multicluster.fleet.bootstrap_token" if exc.status == 401 else
                             "the hub's RBAC no longer lets the bootstrap token's groups read CSRs (ClusterRole "
                             "system:node-bootstrapper, which hub_registration binds); restore it")
                    raise FleetError("%s, %d times in a row, while this run waited for the certificate of CSR %s: %s and run "
                                     "again: the next run resumes with this CSR" % (exc.msg, len(refusals), name, cause),
                                     csr_name=name, **exc.details)
                return False, "the hub refused the bootstrap token: %s" % exc.msg
            if exc.status and exc.status < 500:
                raise
            return False, "the hub did not answer: %s" % exc.msg
        del refusals[:]
        for condition in ("Denied", "Failed"):
            item = resources.condition(csr, condition)
            if item and item.get("status") == "True":
                raise CsrRefused("CSR %s on the hub was %s (%s: %s); the member was not changed"
                                 % (name, condition.lower(), item.get("reason"), item.get("message")), csr_name=name)
        certificate = (csr.get("status") or {}).get("certificate")
        if certificate:
            issued["pem"] = base64.b64decode(certificate).decode("ascii")
            return True, None
        approved = resources.condition_is(csr, "Approved")
        return False, "approved, waiting for the signer" if approved else "not approved yet"
    try:
        resources.wait_until(check, timeout, "the certificate of CSR %s" % name, interval=interval)
    except WaitTimeout as exc:
        raise FleetError("CSR %s on the hub got no certificate within %ss (%s): approve it with "
                         "multicluster.fleet.csr_accept, or let Karmada approve agent CSRs automatically "
                         "(hub_registration with csr_auto_approval); the member's agent kubeconfig was not changed, and "
                         "the next run waits for this CSR instead of posting another" % (name, timeout, exc.details.get("last_seen")),
                         csr_name=name)
    return issued["pem"]


def _in_flight_secret(reg, server, name, request_pem, key_pem):
    """Secret ``kube-system/multicluster-fleet-registration-<cluster>``: the CSR a run posts, with its key."""
    data = {"csr-name": name, "hub-server": server, "csr.pem": request_pem, "tls.key": key_pem}
    return {"metadata": {"name": in_flight_name(reg.cluster_name), "namespace": LOCK_NAMESPACE}, "type": "Opaque",
            "data": dict((key, pki.b64(value)) for key, value in data.items())}


def _in_flight(member, reg, server=None):
    """``{csr-name, hub-server, csr.pem, tls.key}`` of the CSR an earlier run posted (to ``server`` when given), or None."""
    stored = resources.get(member, SECRET, in_flight_name(reg.cluster_name), LOCK_NAMESPACE)
    values = dict((key, _secret_value(stored, key)) for key in ("csr-name", "hub-server", "csr.pem", "tls.key"))
    if stored is None or not all(values.values()) or server and values["hub-server"] != server:
        return None
    return values


def _forget_in_flight(member, reg):
    return resources.delete(member, SECRET, in_flight_name(reg.cluster_name), LOCK_NAMESPACE)


def _refuse_foreign_csrs(hub, reg, own):
    """FleetError when a CSR for this agent that this module did not post is pending, from the same requester.

    That is another registration of the cluster under way without the Lease (``karmadactl register``);
    a second CSR would get a second certificate.
    """
    requester = BOOTSTRAP_USER % bootstrap.parse_token(reg.token)[0]
    try:
        found = resources.list_objects(hub, CSR)
    except ClusterError as exc:
        if exc.status == 403:  # the token may create CSRs but not list them: nothing to compare with
            return
        raise
    for item in found:
        if (csrs.name_of(item) != own and csrs.state(item) == csrs.PENDING and csrs.requester(item) == requester
                and csrs.common_name(item) == karmada.agent_user(reg.cluster_name)):
            raise FleetError("CSR %s for %s, posted with the same bootstrap token at %s, is pending on the hub and was not "
                             "posted by this module: another registration of cluster %s is under way (karmadactl register?). "
                             "Let it finish, or deny or delete that CSR, then run again; the member was not changed"
                             % (csrs.name_of(item), karmada.agent_user(reg.cluster_name),
                                (item.get("metadata") or {}).get("creationTimestamp"), reg.cluster_name),
                             csr_name=csrs.name_of(item))


def _post_csr(hub, member, reg, name, request_pem, check_mode):
    """POST the agent CSR; a refusal (the token expired since discovery, RBAC) forgets the CSR in flight."""
    body = karmada.agent_csr(name, request_pem, reg.cert_expiration_seconds)
    try:
        return hub.request("POST", CSR.path(), body=body, query={"dryRun": "All"} if check_mode else None)
    except Conflict:
        existing = resources.get(hub, CSR, name)
        if existing is not None and (existing.get("spec") or {}).get("request") == body["spec"]["request"]:
            return existing  # posted by an earlier attempt of this registration
        raise FleetError("%s: CSR %s exists on the hub but is not this registration's; run again" % (hub.label, name))
    except ClusterError as exc:
        if not exc.status:  # the hub may have received it: the next run looks for it
            raise FleetError("%s; the next run resumes with CSR %s if the hub received it" % (exc.msg, name), **exc.details)
        if not check_mode:
            _forget_in_flight(member, reg)
        hint = (" (the bootstrap token expired or was deleted since discovery: create a fresh one with "
                "multicluster.fleet.bootstrap_token and run again; that run keeps what this one wrote on the hub)"
                if exc.status == 401 else "")
        raise FleetError("posting CSR %s failed: %s%s; the member was not changed" % (name, exc.msg, hint), **exc.details)


def request_certificate(reg, member, server, ca_pem, report, check_mode, connect=bootstrap_connection, lock=None):
    """Post the agent CSR with the bootstrap token (or resume an earlier run's); return ``(name, cert_pem, key_pem,
    resumed)``, ``resumed`` true when the CSR is one an earlier run posted and the hub still has.

    The CSR and its key are stored on the member (:func:`_in_flight_secret`) before the CSR is posted:
    a run that stopped after posting (the hub or the runner went away) is resumed by the next one with
    the same CSR, so the member gets one certificate. In check mode the CSR is a server-side dry run
    (so the token's authentication and RBAC are still checked) and nothing is stored or awaited:
    ``cert_pem`` and ``key_pem`` are None. ``lock`` is the :class:`RegistrationLock` this run holds.
    """
    in_flight = _in_flight(member, reg, server)
    with connect(server, hub_trust(reg, ca_pem), reg.token, reg.proxy_url) as hub:
        resumed = None
        if in_flight:
            resumed = resources.get(hub, CSR, in_flight["csr-name"])
            if resumed and (resumed.get("spec") or {}).get("request") != pki.b64(in_flight["csr.pem"]):
                resumed = in_flight = None  # the name is another CSR's now
        if resumed:
            name, request_pem, key_pem = in_flight["csr-name"], in_flight["csr.pem"], in_flight["tls.key"]
            report.add(hub, resources.Outcome(CSR, name, None, "unchanged", resumed, resumed))
        else:
            if in_flight:  # posted before, gone from the hub since: post it again
                name, request_pem, key_pem = in_flight["csr-name"], in_flight["csr.pem"], in_flight["tls.key"]
            else:
                key = pki.generate_private_key()
                name = csr_name(reg.cluster_name)
                request_pem = pki.csr_pem(key, karmada.agent_user(reg.cluster_name), [karmada.AGENTS_GROUP])
                key_pem = pki.private_key_pem(key)
            _refuse_foreign_csrs(hub, reg, name)
            if not check_mode and not in_flight:
                resources.ensure(member, SECRET, _in_flight_secret(reg, server, name, request_pem, key_pem))
            created = _post_csr(hub, member, reg, name, request_pem, check_mode)
            report.add(hub, resources.Outcome(CSR, name, None, "created", None, created))
        if check_mode:
            return name, None, None, bool(resumed)
        try:
            cert_pem = wait_for_certificate(hub, name, reg.csr_wait_timeout, lock.renew if lock else None, reg.wait_sleep)
        except CsrRefused:
            _forget_in_flight(member, reg)
            raise
    problem = pki.client_certificate_problem(cert_pem, key_pem, ca_pem, karmada.agent_user(reg.cluster_name),
                                             karmada.AGENTS_GROUP, now=_now())
    if problem:
        _forget_in_flight(member, reg)
        raise CsrRefused("the certificate issued for CSR %s cannot be used: %s; the member was not changed" % (name, problem),
                         csr_name=name)
    return name, cert_pem, key_pem, bool(resumed)


def ensure_agent_rbac(hub, reg, report, check_mode):
    """The hub-side agent RBAC and namespaces, created before the agent's certificate exists."""
    for kind, desired in karmada.agent_hub_objects(reg.cluster_name):
        report.ensure(hub, kind, desired, check_mode)


def _stored_agent(member, reg):
    """``(secret, kubeconfig parts, problem)`` of the member's agent credentials; problem None when they are good."""
    stored, parts, problem = _agent_kubeconfig(member)
    _refuse_another_karmada_agent(parts, reg.cluster_name, "replace")
    if parts:
        problem = credentials_problem(reg, parts["server"], parts["ca_pem"], parts["client_cert_pem"], parts["client_key_pem"],
                                      karmada.agent_user(reg.cluster_name), karmada.AGENTS_GROUP)
    return stored, parts, problem


def _keep_karmada_credentials(member, hub, reg, report, stored, parts, result, check_mode):
    """The result of a run that keeps the stored agent credentials (the hub RBAC still ensured).

    Also removes the CSR in flight of the registration that stored them, left when its run stopped
    right after storing them.
    """
    if hub:
        ensure_agent_rbac(hub, reg, report, check_mode)
    report.add(member, resources.Outcome(SECRET, karmada.AGENT_KUBECONFIG_SECRET, karmada.AGENT_NAMESPACE,
                                         "unchanged", stored, stored))
    in_flight = _in_flight(member, reg)
    if in_flight and in_flight["tls.key"] == parts["client_key_pem"]:
        report.add(member, resources.delete(member, SECRET, in_flight_name(reg.cluster_name), LOCK_NAMESPACE, check_mode))
    result.update(reason=None, hub_server=parts["server"], ca_pins=_hub_pins(reg, parts["ca_pem"]),
                  certificate_expiration=_certificate_expiration(parts["client_cert_pem"]))
    return report.result(**result)


def _hub_pins(reg, ca_pem):
    """The pins of a stored CA bundle, without the proxy's CA."""
    return [pin for pin in bootstrap.pins_of_bundle(ca_pem) if pin not in reg.proxy_ca_pins]


def _store_agent_kubeconfig(member, reg, report, server, hub_ca_pem, cert_pem, key_pem, check_mode):
    """Write ``karmada-kubeconfig`` on the member: the hub through ``reg``'s proxy, trusting the hub CA and the proxy's."""
    agent_kubeconfig = karmada.agent_kubeconfig(server, hub_trust(reg, hub_ca_pem), reg.cluster_name, cert_pem, key_pem,
                                                reg.proxy_url)
    report.ensure(member, SECRET, karmada.agent_kubeconfig_secret(agent_kubeconfig), check_mode)


def _reroute_karmada_credentials(member, hub, reg, report, parts, discovered, result, check_mode):
    """Keep the stored agent certificate, and reach the hub through this run's proxy settings (or directly).

    The agent kubeconfig is written again with ``proxy-url`` and the discovered hub CA plus the proxy's.
    """
    if hub:
        ensure_agent_rbac(hub, reg, report, check_mode)
    _store_agent_kubeconfig(member, reg, report, parts["server"], discovered["ca_pem"], parts["client_cert_pem"],
                            parts["client_key_pem"], check_mode)
    result.update(hub_server=parts["server"], ca_pins=discovered["ca_pins"],
                  certificate_expiration=_certificate_expiration(parts["client_cert_pem"]))
    return report.result(**result)


def _register_karmada(member, hub, reg, report, stored, discovered, result, check_mode, connect, lock=None):
    """Request the certificate and store the agent kubeconfig (holding ``lock`` unless in check mode)."""
    server = hub_server(reg, discovered)
    if hub:
        ensure_agent_rbac(hub, reg, report, check_mode)
    name, cert_pem, key_pem, resumed = request_certificate(reg, member, server, discovered["ca_pem"], report, check_mode,
                                                           connect, lock)
    if not check_mode:
        lock.renew(force=True)  # still this run's registration: nobody took over meanwhile
    report.ensure(member, NAMESPACE, karmada.system_namespace(karmada.AGENT_NAMESPACE), check_mode)
    if check_mode:
        planned = dict(karmada.agent_kubeconfig_secret(""), apiVersion="v1", kind="Secret")
        report.add(member, resources.Outcome(SECRET, karmada.AGENT_KUBECONFIG_SECRET, karmada.AGENT_NAMESPACE,
                                             "updated" if stored else "created", stored, planned))
        expiration = None
    else:
        _store_agent_kubeconfig(member, reg, report, server, discovered["ca_pem"], cert_pem, key_pem, check_mode)
        _forget_in_flight(member, reg)
        expiration = _certificate_expiration(cert_pem)
    result.update(csr_name=name, csr_resumed=resumed, hub_server=server, ca_pins=discovered["ca_pins"],
                  certificate_expiration=expiration)
    return report.result(**result)


def karmada_present(member, hub, reg, check_mode=False, connect=bootstrap_connection, discover_hub=bootstrap.discover_hub,
                    lock=None):
    """Register the member in Pull mode; see the module documentation for the steps.

    ``lock`` is the :class:`RegistrationLock` to use (default: a new one for this run). A failure after a write
    (the hub RBAC, the CSR) reports ``changed`` and names what was written.
    """
    report = Report()
    with report.failures_name_writes("written"):
        return _karmada_present(member, hub, reg, report, check_mode, connect, discover_hub, lock)


def _karmada_present(member, hub, reg, report, check_mode, connect, discover_hub, lock):
    cluster_id = check_identity(member, hub, reg)
    stored, parts, problem = _stored_agent(member, reg)
    result = dict(engine="karmada", cluster_name=reg.cluster_name, cluster_id=cluster_id,
                  agent_user=karmada.agent_user(reg.cluster_name),
                  api_endpoint=reg.api_endpoint or member.server, proxy_server_address=reg.proxy_server_address,
                  csr_name=None, csr_resumed=None, reason=problem, waited_for=None)
    if problem is None:
        rerouted = proxy_problem(reg, parts["proxy_url"], parts["ca_pem"])
        if rerouted is None:
            return _keep_karmada_credentials(member, hub, reg, report, stored, parts, result, check_mode)
        result["reason"] = rerouted
        return _reroute_karmada_credentials(member, hub, reg, report, parts, discover(reg, discover_hub), result, check_mode)
    discovered = discover(reg, discover_hub)
    lock = lock or RegistrationLock(member, reg.cluster_name, interval=reg.wait_sleep)
    if check_mode:
        under_way = lock.held_by_another()
        if under_way is None:
            return _register_karmada(member, hub, reg, report, stored, discovered, result, check_mode, connect)
        report.warnings.append("a registration of cluster %s by another run (%s, since %s) is under way: a run now would "
                               "wait for it and keep the certificate it stores; no CSR planned"
                               % (reg.cluster_name, under_way["holder"], under_way["since"]))
        result.update(waited_for=under_way, hub_server=hub_server(reg, discovered), ca_pins=discovered["ca_pins"],
                      certificate_expiration=None)
        return report.result(**result)
    waited = result["waited_for"] = lock.acquire(reg.csr_wait_timeout)
    try:
        # Read again under the Lease: another run may have registered the member since the first read, under this name
        # or (refused here) another.
        check_identity(member, hub, reg)
        stored, parts, problem = _stored_agent(member, reg)
        if problem is None:
            report.warnings.append(("waited for the registration of cluster %s by another run (%s, since %s), which"
                                    % (reg.cluster_name, waited["holder"], waited["since"]) if waited else
                                    "another run registered cluster %s meanwhile and" % reg.cluster_name)
                                   + " stored a valid certificate: kept it")
            done = _keep_karmada_credentials(member, hub, reg, report, stored, parts, result, check_mode)
        else:
            result["reason"] = problem
            done = _register_karmada(member, hub, reg, report, stored, discovered, result, check_mode, connect, lock)
    finally:
        warning = lock.release()
    if warning:
        done["warnings"].append(warning)
    return done


def karmada_agent(member, hub, reg, registered, check_mode=False):
    """After ``karmada_present`` (its result ``registered``): the karmada-agent and the waits, as karmadactl register.

    With ``deploy_agent`` the agent's objects (:func:`karmada.agent_objects`) are applied on the member; with
    ``wait`` its Deployment must become available and, with ``hub``, the hub must report the cluster Ready,
    each within ``wait_timeout`` seconds (neither is waited for in check mode). Returns ``registered`` with
    the agent's objects added; a failure names what was written before it, the registration included.
    """
    waits = reg.wait and not check_mode
    if not (reg.deploy_agent or waits and hub):
        return registered
    report = Report()
    try:
        if reg.deploy_agent:
            manifests = karmada.agent_objects(reg.cluster_name, registered["api_endpoint"], reg.agent_image, reg.agent_replicas,
                                              reg.provider, reg.region, reg.zones, reg.proxy_server_address)
            for outcome in objects.apply(member, objects.prepare(manifests), check_mode, wait=waits, timeout=reg.wait_timeout,
                                         interval=reg.wait_sleep):
                report.add(member, outcome)
        if waits and hub:
            fleet.wait_for_clusters(hub, "karmada", reg.cluster_name, timeout=reg.wait_timeout, interval=reg.wait_sleep)
    except FleetError as exc:
        raise _failed_after(exc, registered, report)
    return _merge_written(registered, report)


def _go_on_without_member(exc, reg, hub, leftovers, report):
    """Handle the error ``exc`` of an unregistration's first request to the member.

    An unreachable member is an error naming it, unless ``force`` is set and hub credentials are given:
    then the run goes on with the hub side only (``leftovers`` stay on the member, a warning says so).
    """
    if exc.status:
        raise exc
    if not reg.force or hub is None:
        raise FleetError("%s; cluster %s cannot be unregistered without reaching it: run again once it answers, or with "
                         "force=true and hub credentials to remove it from the hub only" % (exc.msg, reg.cluster_name),
                         **exc.details)
    report.warnings.append("%s; force=true: removed cluster %s from the hub only, %s stay on it (run state=absent again "
                           "once it answers)" % (exc.msg, reg.cluster_name, leftovers))


def karmada_absent(member, hub, reg, check_mode=False):
    """Unregister: Works, Cluster and agent RBAC on the hub (with hub credentials), then the member objects.

    Works and the Cluster are awaited before the next step; the namespaces terminate in parallel and
    are awaited at the end. With ``force`` an unreachable member is skipped (hub side only).
    """
    report = Report()
    name = reg.cluster_name
    namespaces = []
    with report.failures_name_writes("deleted"):
        try:
            _refuse_another_karmada_agent(_agent_kubeconfig(member)[1], name, "unregister")
        except ClusterError as exc:
            _go_on_without_member(exc, reg, hub, "its agent objects (namespace %s with Secret %s, the karmada-agent Deployment "
                                  "and RBAC)" % (karmada.AGENT_NAMESPACE, karmada.AGENT_KUBECONFIG_SECRET), report)
            member = None
        if hub:
            cluster = resources.get(hub, karmada.CLUSTER, name)
            if cluster and (cluster.get("spec") or {}).get("syncMode") == "Push":
                raise FleetError("cluster %s is registered on the hub in Push mode: remove it with multicluster.fleet.cluster_join "
                                 "(state=absent), not cluster_register" % name)
            es_namespace = karmada.execution_namespace(name)
            for work in resources.list_objects(hub, karmada.WORK, es_namespace):
                report.delete(hub, karmada.WORK, work["metadata"]["name"], es_namespace, check_mode, wait=True,
                              timeout=reg.wait_timeout, interval=reg.wait_sleep)
            report.delete(hub, karmada.CLUSTER, name, check_mode=check_mode, wait=True, timeout=reg.wait_timeout, interval=reg.wait_sleep)
            for kind, desired in reversed(karmada.agent_hub_objects(name)):
                metadata = desired["metadata"]
                if kind is NAMESPACE and metadata["name"] == karmada.DEFAULT_CLUSTER_NAMESPACE:
                    continue  # shared by every cluster
                report.delete(hub, kind, metadata["name"], metadata.get("namespace"), check_mode)
            namespaces.append((hub, es_namespace))
        else:
            report.warnings.append("no hub credentials given: only the member side was removed; the hub still lists cluster %s "
                                   "(pass hub to remove its Cluster, Works and agent RBAC too)" % name)
        if member:
            for kind, obj_name, namespace in karmada.agent_member_objects():
                report.delete(member, kind, obj_name, namespace, check_mode)
            # What a registration that was stopped half-way left: its CSR in flight and its Lease (in version 1.0.0
            # named like the Secret).
            for kind, leftover in ((SECRET, in_flight_name(name)), (LEASE, in_flight_name(name)), (LEASE, REGISTRATION_LEASE)):
                if resources.get(member, kind, leftover, LOCK_NAMESPACE) is not None:
                    report.delete(member, kind, leftover, LOCK_NAMESPACE, check_mode)
            namespace = resources.get(member, NAMESPACE, karmada.AGENT_NAMESPACE)
            if ((namespace or {}).get("metadata", {}).get("labels") or {}).get(karmada.SYSTEM_LABEL) == "true":
                report.delete(member, NAMESPACE, karmada.AGENT_NAMESPACE, check_mode=check_mode)
                namespaces.append((member, karmada.AGENT_NAMESPACE))
        if not check_mode:
            for cluster, namespace_name in namespaces:
                resources.wait_until_gone(cluster, NAMESPACE, namespace_name, timeout=reg.wait_timeout, interval=reg.wait_sleep)
    return report.result(engine="karmada", cluster_name=name)


# --- OCM -------------------------------------------------------------------------------------------


def _serves_klusterlets(runtime):
    try:
        runtime.request("GET", ocm.KLUSTERLET.path())
    except client.NotFound:
        return False
    return True


def _stored_ocm_credentials(runtime, reg):
    """``(expiration or None, problem or None)`` of the registration agent's hub kubeconfig Secret."""
    namespace = reg.placement.agent_namespace
    stored = resources.get(runtime, SECRET, ocm.HUB_KUBECONFIG_SECRET, namespace)
    if stored is None:
        return None, "the klusterlet has not joined yet (no %s/%s Secret)" % (namespace, ocm.HUB_KUBECONFIG_SECRET)
    cluster_name = _secret_value(stored, "cluster-name")
    agent_name = _secret_value(stored, "agent-name")
    if cluster_name != reg.cluster_name or not agent_name:
        return None, "the stored hub kubeconfig is for cluster %s, not %s" % (cluster_name, reg.cluster_name)
    try:
        parts = pki.read_kubeconfig(_secret_value(stored, ocm.KUBECONFIG_KEY) or "", "stored hub kubeconfig")
    except FleetError as exc:
        return None, exc.msg
    cert_pem = _secret_value(stored, "tls.crt")
    problem = (credentials_problem(reg, parts["server"], parts["ca_pem"], cert_pem, _secret_value(stored, "tls.key"),
                                   ocm.agent_common_name(reg.cluster_name, agent_name), ocm.agent_organization(reg.cluster_name))
               or proxy_problem(reg, parts["proxy_url"], parts["ca_pem"]))
    return (None, problem) if problem else (_certificate_expiration(cert_pem), None)


def _ocm_bootstrap_secret(runtime, reg, server, trust, connect):
    """The bootstrap kubeconfig Secret to write: with this run's token, unless the member's differs from it only by a
    token the hub still accepts (another run's join token, docs/architecture.md 3.3): that one is kept, as a new token
    would make the klusterlet bootstrap again - a second CSR for the same member."""
    namespace = reg.placement.agent_namespace

    def secret(token):
        kubeconfig_text = bootstrap.bootstrap_kubeconfig(server, trust, token, proxy_url=reg.proxy_url)
        grpc_config = reg.grpc_server and ocm.grpc_bootstrap_config(reg.grpc_server, reg.grpc_ca_pem, token)
        return ocm.bootstrap_secret(kubeconfig_text, namespace, grpc_config)

    wanted = secret(reg.token)
    stored = resources.get(runtime, SECRET, ocm.BOOTSTRAP_SECRET, namespace)
    try:
        token = pki.read_kubeconfig(_secret_value(stored, ocm.KUBECONFIG_KEY) or "", "stored bootstrap kubeconfig")["token"]
    except FleetError:
        return wanted
    if not token or token == reg.token:
        return wanted
    kept = secret(token)
    if kept["data"] != stored.get("data"):
        return wanted
    return kept if _token_may_register(server, trust, token, reg.proxy_url, connect) else wanted


def _token_may_register(server, trust, token, proxy_url, connect):
    """True when the hub accepts ``token`` and lets it create CSRs (a SelfSubjectAccessReview, as ``kubectl auth
    can-i``); False when it refuses it or cannot be asked."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"verb": "create", "group": "certificates.k8s.io",
                                              "resource": "certificatesigningrequests"}}}
    try:
        with connect(server, trust, token, proxy_url) as hub:
            answer = hub.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review)
    except ClusterError:
        return False
    return bool((answer or {}).get("status", {}).get("allowed"))


def ocm_present(member, hub, reg, check_mode=False, discover_hub=bootstrap.discover_hub, hosting=None, managed_kubeconfig=None,
                connect=bootstrap_connection, lock=None):
    """Join: the bootstrap kubeconfig and the Klusterlet registration fields (the klusterlet does the CSR).

    ``hub`` is not needed: the klusterlet registers itself. In Hosted modes everything is written to
    ``hosting``, with ``managed_kubeconfig`` (how the agents reach ``member``) in its own Secret. A run that writes
    the bootstrap kubeconfig or a Klusterlet not yet registering this cluster holds ``lock`` (default: a new
    :class:`RegistrationLock` on ``member``) while it decides and writes.
    """
    report = Report()
    placement = reg.placement
    runtime = hosting or member
    cluster_id = check_identity(member, hub, reg)
    registered_as = _refuse_another_klusterlet(runtime, placement, reg.cluster_name, "join as")
    result = dict(engine="ocm", cluster_name=reg.cluster_name, cluster_id=cluster_id,
                  api_endpoint=reg.api_endpoint or member.server, csr_name=None, reason=None, certificate_expiration=None,
                  joined=False, hub_server=None, ca_pins=[], klusterlet=placement.klusterlet,
                  agent_namespace=placement.agent_namespace)
    if not _serves_klusterlets(runtime):
        if check_mode:  # checked what can be checked (the identity rule); the rest needs the operator's API
            result["reason"] = ("not previewed: %s does not serve the Klusterlet API yet (role "
                                "multicluster.fleet.agent_install installs it)" % runtime.label)
            return report.result(**result)
        raise FleetError("%s does not serve the Klusterlet API (klusterlets.operator.open-cluster-management.io): "
                         "install the klusterlet operator first (role multicluster.fleet.agent_install)" % runtime.label)
    expiration, problem = _stored_ocm_credentials(runtime, reg)
    lock = lock or RegistrationLock(member, reg.cluster_name, unfinished="nothing more was written", interval=reg.wait_sleep)
    result["waited_for"] = None
    if problem and check_mode:
        result["waited_for"] = lock.held_by_another()
        if result["waited_for"]:
            report.warnings.append("a registration of cluster %s by another run (%s, since %s) is under way: a run now would "
                                   "wait for it and keep the bootstrap kubeconfig it wrote"
                                   % (reg.cluster_name, result["waited_for"]["holder"], result["waited_for"]["since"]))
    elif problem or registered_as != reg.cluster_name and not check_mode:
        result["waited_for"] = lock.acquire(reg.wait_timeout)
    klusterlet = ocm.klusterlet(reg.cluster_name, result["api_endpoint"], placement, reg.registration_driver,
                                reg.klusterlet_spec)
    with report.failures_name_writes("written"):
        try:
            if lock.lease is not None:  # read again under the Lease: another run may have joined the member meanwhile,
                check_identity(member, hub, reg)  # under this name or (refused here) another
                _refuse_another_klusterlet(runtime, placement, reg.cluster_name, "join as")
                expiration, problem = _stored_ocm_credentials(runtime, reg)
            result.update(reason=problem, certificate_expiration=expiration, joined=problem is None)
            if problem:
                discovered = discover(reg, discover_hub)
                result.update(hub_server=hub_server(reg, discovered), ca_pins=discovered["ca_pins"])
            namespaces = [placement.agent_namespace] if placement.hosted else [ocm.OPERATOR_NAMESPACE, ocm.AGENT_NAMESPACE]
            for namespace in namespaces:
                report.ensure(runtime, NAMESPACE, {"metadata": {"name": namespace}}, check_mode)
            if problem:
                trust = hub_trust(reg, discovered["ca_pem"])
                report.ensure(runtime, SECRET, _ocm_bootstrap_secret(runtime, reg, result["hub_server"], trust, connect), check_mode)
            if placement.hosted:
                report.ensure(runtime, SECRET, ocm.external_managed_kubeconfig_secret(managed_kubeconfig, placement.agent_namespace),
                              check_mode)
            report.ensure(runtime, ocm.KLUSTERLET, klusterlet, check_mode)
        finally:
            warning = lock.release()
        if reg.wait and not check_mode:
            objects.wait_ready(runtime, ocm.KLUSTERLET, klusterlet, reg.wait_timeout, KLUSTERLET_READY, interval=reg.wait_sleep)
    if warning:
        report.warnings.append(warning)
    return report.result(**result)


def ocm_accept(hub, reg, registered, check_mode=False):
    """After ``ocm_present`` (its result ``registered``): accept the cluster on ``hub`` as ``clusteradm accept`` does.

    Approves its klusterlet's CSR and sets ``hubAcceptsClient`` (:func:`accept.accept`); with ``wait``, first
    waits for the CSR, then until the hub reports the cluster Available, each within ``wait_timeout`` seconds.
    A check-mode run previews the acceptance only of a cluster whose klusterlet has registered. Returns
    ``registered`` with ``accepted`` (the acceptance of the cluster, as csr_accept's ``clusters`` entry).
    """
    name = reg.cluster_name
    registered["accepted"] = None
    if check_mode and resources.get(hub, ocm.MANAGED_CLUSTER, name) is None:
        registered["warnings"].append("check mode: the acceptance of %s is not previewed: not registered with the hub yet "
                                      "(its klusterlet registers once a real run has joined it)" % name)
        return registered
    waits = reg.wait and not check_mode
    report = Report()
    try:
        try:
            outcome = accept.accept(hub, "ocm", [name], wait=waits, timeout=reg.wait_timeout, check_mode=check_mode,
                                    interval=reg.wait_sleep)
        except WaitTimeout as exc:
            raise WaitTimeout(exc.msg, last_seen="the klusterlet of %s has not requested its certificate yet" % name)
        registered["accepted"] = outcome["clusters"][0]
        for diff in outcome["diff"]:
            ref = diff["before_header"]
            verb = "approved" if ref.startswith(CSR.kind) else "accepted (hubAcceptsClient)"
            report.add(hub, _Accepted(ref, verb, diff))
        # the cluster id the identity check of later registrations compares with (OCM keeps none)
        report.ensure(hub, ocm.MANAGED_CLUSTER, ocm.cluster_id_annotation(name, registered["cluster_id"]), check_mode)
        if waits:
            fleet.wait_for_clusters(hub, "ocm", name, timeout=reg.wait_timeout, interval=reg.wait_sleep)
    except FleetError as exc:
        raise _failed_after(exc, registered, report)
    return _merge_written(registered, report)


def ocm_absent(member, hub, reg, check_mode=False, hosting=None):
    """Unjoin: the Klusterlet and the Secrets of its agent namespace (Hosted: the namespace too); with hub
    credentials the ManagedCluster too. With ``force`` an unreachable member (or hosting cluster) is skipped."""
    report = Report()
    name = reg.cluster_name
    placement = reg.placement
    runtime = hosting or member
    with report.failures_name_writes("deleted"):
        try:
            _refuse_another_klusterlet(runtime, placement, name, "unjoin")
        except ClusterError as exc:
            _go_on_without_member(exc, reg, hub, "Klusterlet %s and the Secrets of namespace %s"
                                  % (placement.klusterlet, placement.agent_namespace), report)
            runtime = None
        if runtime:
            report.delete(runtime, ocm.KLUSTERLET, placement.klusterlet, check_mode=check_mode, wait=True,
                          timeout=reg.wait_timeout, interval=reg.wait_sleep)
            secrets_of_join = [ocm.BOOTSTRAP_SECRET, ocm.HUB_KUBECONFIG_SECRET]
            if placement.hosted:
                secrets_of_join.append(ocm.EXTERNAL_MANAGED_KUBECONFIG_SECRET)
            for secret_name in secrets_of_join:
                report.delete(runtime, SECRET, secret_name, placement.agent_namespace, check_mode)
            if placement.hosted:  # created by the join, as the klusterlet's own namespace on the hosting cluster
                report.delete(runtime, NAMESPACE, placement.agent_namespace, check_mode=check_mode, wait=True,
                              timeout=reg.wait_timeout, interval=reg.wait_sleep)
        if hub:
            report.delete(hub, ocm.MANAGED_CLUSTER, name, check_mode=check_mode, wait=True, timeout=reg.wait_timeout, interval=reg.wait_sleep)
        else:
            report.warnings.append("no hub credentials given: the hub still lists ManagedCluster %s (pass hub to delete it)" % name)
    return report.result(engine="ocm", cluster_name=name, klusterlet=placement.klusterlet)


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
                         "managed_kubeconfig (the member connection is given by host, without a kubeconfig)" % who)
    return pki.yaml_text(kubeconfig.flatten(source, context, who))


def run(member, hub, reg, check_mode=False, hosting=None, managed_kubeconfig=None):
    """Dispatch on engine and state; return the module result.

    ``hosting`` (a Cluster) and ``managed_kubeconfig`` (YAML text) are for Hosted klusterlets only.
    """
    hosted = bool(reg.placement and reg.placement.hosted)
    if hosted != bool(hosting):
        raise FleetError("klusterlet_mode %s needs the hosting cluster's connection (hosting)" % reg.placement.mode if hosted else
                         "hosting is only used with klusterlet_mode Hosted or SingletonHosted")
    if reg.engine == "karmada":
        if reg.state == "present":
            if reg.wait and not (reg.deploy_agent or hub):
                raise FleetError("wait (Karmada) waits for the karmada-agent this module deploys (deploy_agent) and for the hub "
                                 "to report the cluster Ready (hub): set deploy_agent or hub")
            return karmada_agent(member, hub, reg, karmada_present(member, hub, reg, check_mode), check_mode)
        return karmada_absent(member, hub, reg, check_mode)
    if reg.state == "present":
        if hosted and not managed_kubeconfig:
            raise FleetError("a Hosted klusterlet needs the managed cluster's kubeconfig (managed_kubeconfig)")
        if reg.accept and not hub:
            raise FleetError("accept needs the hub's admin credentials (hub), with which clusteradm accept runs")
        joined = ocm_present(member, hub, reg, check_mode, hosting=hosting, managed_kubeconfig=managed_kubeconfig)
        return ocm_accept(hub, reg, joined, check_mode) if reg.accept else joined
    return ocm_absent(member, hub, reg, check_mode, hosting=hosting)
