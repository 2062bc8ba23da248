# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Karmada pull registration from the member's side: ``karmadactl register`` / ``unregister`` (docs/architecture.md 4.4).

Discover and pin the hub, request the agent's client certificate with the bootstrap token, and store the agent
kubeconfig on the member; with hub admin credentials also the hub-side agent RBAC, created directly (never through
an all-powerful certificate). A valid agent certificate for this cluster and hub is never replaced by a new CSR, so
a re-run changes nothing even after the bootstrap token expired; a changed proxy rewrites the agent kubeconfig and
keeps the certificate.

One registration of a member cluster at a time, whatever its name: a run that needs a certificate holds Lease
``kube-system/multicluster-fleet-registration`` on the member (:class:`lease_lock.RegistrationLock`); a second run
waits for it, then reads again and keeps the certificate the first one stored - or is refused, when the first one
registered the cluster under another name. The CSR's key is stored on the
member before the CSR is posted, so that a run stopped half-way is resumed by the next one with the same CSR: each
member gets one certificate.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import secrets

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import hub_members
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import objects, pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, hub_record
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import csr as csrs
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError, Conflict, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.lease_lock import LEASE, LOCK_NAMESPACE, REGISTRATION_LEASE, RegistrationLock
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.report import failed_after, merge_written
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.registrar import (
    Registrar, certificate_expiration, certificate_problem, check_identity, credentials_problem, hub_change, hub_server,
    hub_trust, in_flight_name, proxy_problem, renewal_warning, secret_value, utc_now)
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CONFIG_MAP, CSR, NAMESPACE, SECRET

# Seconds of 401 or 403 answers in a row while waiting for a CSR before the token counts as gone or unauthorized: an
# API server that has just started refuses bootstrap tokens until it has read their Secrets (401), and forbids their
# requests until its RBAC authorizer has read the roles (403, about a second).
TOKEN_REFUSAL_SECONDS = 30
BOOTSTRAP_USER = "system:bootstrap:%s"  # how the hub's API server names a bootstrap token's requests


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


def _agent_kubeconfig(member):
    """``(secret, kubeconfig parts, problem)``: the member's agent kubeconfig Secret, or why it is not usable."""
    stored = resources.get(member, SECRET, karmada.AGENT_KUBECONFIG_SECRET, karmada.AGENT_NAMESPACE)
    if stored is None:
        return None, None, "there is no %s/%s Secret on the member" % (karmada.AGENT_NAMESPACE, karmada.AGENT_KUBECONFIG_SECRET)
    try:
        return stored, pki.read_kubeconfig(secret_value(stored, karmada.AGENT_KUBECONFIG_SECRET) or "", "stored agent kubeconfig"), None
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


def _hub_pins(reg, ca_pem):
    """The pins of a stored CA bundle, without the proxy's CA."""
    return [pin for pin in bootstrap.pins_of_bundle(ca_pem) if pin not in reg.proxy_ca_pins]


def remove_from_hub(hub, name, delete):
    """The hub side of unregistering Pull member ``name`` (4.4): its Works and the Cluster, each awaited, then the
    agent's hub RBAC and its execution namespace; returns that namespace, which terminates afterwards.

    ``delete(cluster, kind, name, namespace=None, wait=False)`` deletes one object (:meth:`Registrar.delete`; prune.py
    passes one that can release what an agent that never answers would release)."""
    es_namespace = karmada.execution_namespace(name)
    for work in resources.list_objects(hub, karmada.WORK, es_namespace):
        delete(hub, karmada.WORK, work["metadata"]["name"], es_namespace, wait=True)
    delete(hub, karmada.CLUSTER, name, wait=True)
    for kind, namespace, object_name in hub_objects(name):
        delete(hub, kind, object_name, namespace)
    return es_namespace


def hub_objects(name):
    """``(kind, namespace, name)`` of what :func:`remove_from_hub` deletes after the Cluster: the agent's hub RBAC, its
    execution namespace and this collection's record of the cluster (hub_record.py); all named after ``name`` alone."""
    found = []
    for kind, desired in reversed(karmada.agent_hub_objects(name)):
        metadata = desired["metadata"]
        if kind is NAMESPACE and metadata["name"] == karmada.DEFAULT_CLUSTER_NAMESPACE:
            continue  # shared by every cluster
        found.append((kind, metadata.get("namespace"), metadata["name"]))
    return found + [(CONFIG_MAP, hub_record.NAMESPACE, hub_record.name("karmada", name))]


class KarmadaRegistration(Registrar):
    """Register (:meth:`present`, then :meth:`agent`) or unregister (:meth:`absent`) a member in Pull mode."""

    certificate_pem = None  # the agent certificate the member holds after present(), None when not known (check mode)
    hub_sha256 = None  # karmada.hub_fingerprint of the agent kubeconfig the member holds after present()

    def run(self):
        reg = self.reg
        if reg.state != "present":
            return self.absent()
        if reg.wait and not (reg.deploy_agent or self.hub):
            raise FleetError("wait (Karmada) waits for the karmada-agent this module deploys (karmada.deploy_agent) and for "
                             "the hub to report the cluster Ready (hub): set karmada.deploy_agent or hub")
        return self.agent(self.present())

    # --- the CSR in flight ---------------------------------------------------------------------------

    def _in_flight(self, server=None):
        """``{csr-name, hub-server, csr.pem, tls.key}`` of the CSR an earlier run posted (to ``server`` when given), or None."""
        stored = resources.get(self.member, SECRET, in_flight_name(self.reg.cluster_name), LOCK_NAMESPACE)
        values = dict((key, secret_value(stored, key)) for key in ("csr-name", "hub-server", "csr.pem", "tls.key"))
        if stored is None or not all(values.values()) or server and values["hub-server"] != server:
            return None
        return values

    def _forget_in_flight(self):
        return resources.delete(self.member, SECRET, in_flight_name(self.reg.cluster_name), LOCK_NAMESPACE)

    def _refuse_foreign_csrs(self, hub, own):
        """FleetError when a CSR for this agent that this module did not post is pending, from the same requester.

        That is another registration of the cluster under way without the Lease (``karmadactl register``);
        a second CSR would get a second certificate. ``hub`` is the connection with the bootstrap token.
        """
        reg = self.reg
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
                raise FleetError("CSR %s for %s, posted with the same bootstrap token at %s, is pending on the hub and was "
                                 "not posted by this module: another registration of cluster %s is under way (karmadactl "
                                 "register?). Let it finish, or deny or delete that CSR, then run again; the member was not "
                                 "changed" % (csrs.name_of(item), karmada.agent_user(reg.cluster_name),
                                              (item.get("metadata") or {}).get("creationTimestamp"), reg.cluster_name),
                                 csr_name=csrs.name_of(item))

    def _post_csr(self, hub, name, request_pem):
        """POST the agent CSR; a refusal (the token expired since discovery, RBAC) forgets the CSR in flight."""
        body = karmada.agent_csr(name, request_pem, self.reg.cert_expiration_seconds)
        try:
            return hub.request("POST", CSR.path(), body=body, query={"dryRun": "All"} if self.check_mode else None)
        except Conflict:
            existing = resources.get(hub, CSR, name)
            if existing is not None and (existing.get("spec") or {}).get("request") == body["spec"]["request"]:
                return existing  # posted by an earlier attempt of this registration
            raise FleetError("%s: CSR %s exists on the hub but is not this registration's; run again" % (hub.label, name))
        except ClusterError as exc:
            if not exc.status:  # the hub may have received it: the next run looks for it
                raise FleetError("%s; the next run resumes with CSR %s if the hub received it" % (exc.msg, name), **exc.details)
            if not self.check_mode:
                self._forget_in_flight()
            hint = (" (the bootstrap token expired or was deleted since discovery: create a fresh one with "
                    "multicluster.fleet.bootstrap_token and run again; that run keeps what this one wrote on the hub)"
                    if exc.status == 401 else "")
            raise FleetError("posting CSR %s failed: %s%s; the member was not changed" % (name, exc.msg, hint), **exc.details)

    def request_certificate(self, server, ca_pem, lock=None):
        """Post the agent CSR with the bootstrap token (or resume an earlier run's); return ``(name, cert_pem, key_pem,
        resumed)``, ``resumed`` true when the CSR is one an earlier run posted and the hub still has.

        The CSR and its key are stored on the member (:func:`_in_flight_secret`) before the CSR is posted:
        a run that stopped after posting (the hub or the runner went away) is resumed by the next one with
        the same CSR, so the member gets one certificate. In check mode the CSR is a server-side dry run
        (so the token's authentication and RBAC are still checked) and nothing is stored or awaited:
        ``cert_pem`` and ``key_pem`` are None. ``lock`` is the :class:`~lease_lock.RegistrationLock` this run holds.
        """
        reg, member, report, check_mode = self.reg, self.member, self.report, self.check_mode
        in_flight = self._in_flight(server)
        with self.connect(server, hub_trust(reg, ca_pem), reg.token, reg.proxy_url) as hub:
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
                self._refuse_foreign_csrs(hub, name)
                if not check_mode and not in_flight:
                    resources.ensure(member, SECRET, _in_flight_secret(reg, server, name, request_pem, key_pem))
                created = self._post_csr(hub, name, request_pem)
                report.add(hub, resources.Outcome(CSR, name, None, "created", None, created))
            if check_mode:
                return name, None, None, bool(resumed)
            try:
                cert_pem = wait_for_certificate(hub, name, reg.csr_wait_timeout, lock.renew if lock else None, reg.wait_sleep)
            except CsrRefused:
                self._forget_in_flight()
                raise
        problem = pki.client_certificate_problem(cert_pem, key_pem, ca_pem, karmada.agent_user(reg.cluster_name),
                                                 karmada.AGENTS_GROUP, now=utc_now())
        if problem:
            self._forget_in_flight()
            raise CsrRefused("the certificate issued for CSR %s cannot be used: %s; the member was not changed"
                             % (name, problem), csr_name=name)
        return name, cert_pem, key_pem, bool(resumed)

    # --- the agent's credentials -------------------------------------------------------------------------

    def ensure_agent_rbac(self):
        """The hub-side agent RBAC and namespaces, created before the agent's certificate exists."""
        for kind, desired in karmada.agent_hub_objects(self.reg.cluster_name):
            self.ensure(self.hub, kind, desired)

    def _stored_agent(self):
        """``(secret, kubeconfig parts, problem)`` of the member's agent credentials; problem None when they are good."""
        reg = self.reg
        stored, parts, problem = _agent_kubeconfig(self.member)
        _refuse_another_karmada_agent(parts, reg.cluster_name, "replace")
        if parts:
            problem = credentials_problem(reg, parts["server"], parts["ca_pem"], parts["client_cert_pem"],
                                          parts["client_key_pem"], karmada.agent_user(reg.cluster_name), karmada.AGENTS_GROUP)
        if parts and problem is None:
            problem = self._removed_from_hub()
        return stored, parts, problem

    def _removed_from_hub(self):
        """Why a good stored agent certificate is not kept because the hub no longer has the registration it was issued
        for, or None (also without hub credentials: nothing to compare with).

        A cluster removed from the hub (prune.yml, an unregistration without the member) leaves neither its Cluster nor
        the agent's hub RBAC (ClusterRoleBinding ``system:karmada:<cluster>:agent``), which a registration creates before
        its CSR: the agent that still runs does not create the Cluster again (karmada-agent registers only at its start),
        so keeping the certificate would leave the member unregistered. The registration then starts afresh: a new CSR,
        whose certificate rolls the agent, which creates the Cluster. A stored certificate whose agent has not created the
        Cluster yet (its RBAC is there) is kept - unless a CSR of this registration is in flight (an earlier run of the
        fresh registration stopped before it stored the new certificate, after it wrote the RBAC): that one goes on.
        """
        if self.hub is None:
            return None
        name = self.reg.cluster_name
        binding = karmada.agent_role_name(name)
        if resources.get(self.hub, karmada.CLUSTER, name) is not None:
            return None
        if resources.get(self.hub, resources.CLUSTER_ROLE_BINDING, binding) is None:
            return ("the hub has neither Cluster %s nor its agent's ClusterRoleBinding %s: the cluster was removed from the "
                    "hub (prune.yml, or unregistered there) after its agent got its certificate, and the running agent does "
                    "not register it again; registering it afresh with a new certificate" % (name, binding))
        in_flight = self._in_flight()
        if in_flight:
            return ("the hub has no Cluster %s and CSR %s of its registration is in flight: going on with it"
                    % (name, in_flight["csr-name"]))
        return None

    def _keep(self, stored, parts, result):
        """The result of a run that keeps the stored agent credentials (the hub RBAC still ensured).

        Also removes the CSR in flight of the registration that stored them, left when its run stopped
        right after storing them.
        """
        member, report = self.member, self.report
        if self.hub:
            self.ensure_agent_rbac()
        report.add(member, resources.Outcome(SECRET, karmada.AGENT_KUBECONFIG_SECRET, karmada.AGENT_NAMESPACE,
                                             "unchanged", stored, stored))
        in_flight = self._in_flight()
        if in_flight and in_flight["tls.key"] == parts["client_key_pem"]:
            report.add(member, resources.delete(member, SECRET, in_flight_name(self.reg.cluster_name), LOCK_NAMESPACE,
                                                self.check_mode))
        self.certificate_pem = parts["client_cert_pem"]
        self.hub_sha256 = karmada.hub_fingerprint(parts["server"], parts["ca_pem"], parts["proxy_url"])
        result.update(reason=None, hub_server=parts["server"], ca_pins=_hub_pins(self.reg, parts["ca_pem"]),
                      certificate_expiration=certificate_expiration(parts["client_cert_pem"]))
        return report.result(**result)

    def _store_agent_kubeconfig(self, server, hub_ca_pem, cert_pem, key_pem):
        """Write ``karmada-kubeconfig`` on the member: the hub through the proxy asked for, trusting the hub CA and the
        proxy's."""
        reg = self.reg
        trust = hub_trust(reg, hub_ca_pem)
        agent_kubeconfig = karmada.agent_kubeconfig(server, trust, reg.cluster_name, cert_pem, key_pem, reg.proxy_url)
        self.ensure(self.member, SECRET, karmada.agent_kubeconfig_secret(agent_kubeconfig))
        self.hub_sha256 = karmada.hub_fingerprint(server, trust, reg.proxy_url)

    def _reroute(self, parts, discovered, result, server=None):
        """Keep the stored agent certificate, and reach the hub through this run's proxy settings (or directly), at
        ``server`` (default: the stored one; a moved hub's new address).

        The agent kubeconfig is written again with ``proxy-url`` and the discovered hub CA plus the proxy's.
        """
        if self.hub:
            self.ensure_agent_rbac()
        server = server or parts["server"]
        self._store_agent_kubeconfig(server, discovered["ca_pem"], parts["client_cert_pem"], parts["client_key_pem"])
        self.certificate_pem = parts["client_cert_pem"]
        result.update(hub_server=server, ca_pins=discovered["ca_pins"],
                      certificate_expiration=certificate_expiration(parts["client_cert_pem"]))
        return self.report.result(**result)

    def _register(self, stored, discovered, result, lock=None):
        """Request the certificate and store the agent kubeconfig (holding ``lock`` unless in check mode)."""
        member, report, check_mode = self.member, self.report, self.check_mode
        server = hub_server(self.reg, discovered)
        if self.hub:
            self.ensure_agent_rbac()
        name, cert_pem, key_pem, resumed = self.request_certificate(server, discovered["ca_pem"], lock)
        if not check_mode:
            lock.renew(force=True)  # still this run's registration: nobody took over meanwhile
        self.ensure(member, NAMESPACE, karmada.system_namespace(karmada.AGENT_NAMESPACE))
        if check_mode:
            planned = dict(karmada.agent_kubeconfig_secret(""), apiVersion="v1", kind="Secret")
            report.add(member, resources.Outcome(SECRET, karmada.AGENT_KUBECONFIG_SECRET, karmada.AGENT_NAMESPACE,
                                                 "updated" if stored else "created", stored, planned))
            self.hub_sha256 = karmada.hub_fingerprint(server, hub_trust(self.reg, discovered["ca_pem"]), self.reg.proxy_url)
            expiration = None
        else:
            self._store_agent_kubeconfig(server, discovered["ca_pem"], cert_pem, key_pem)
            self._forget_in_flight()
            expiration = certificate_expiration(cert_pem)
            warning = renewal_warning(self.reg, cert_pem)
            if warning:
                report.warnings.append(warning)
        self.certificate_pem = cert_pem
        result.update(csr_name=name, csr_resumed=resumed, hub_server=server, ca_pins=discovered["ca_pins"],
                      certificate_expiration=expiration)
        return report.result(**result)

    def _rebootstrap(self, parts, discovered, result):
        """True when the stored agent kubeconfig only reaches a hub that moved or got a new CA and its certificate still
        holds under the discovered CA: then it is kept, and only the kubeconfig is written again (no CSR, the Cluster
        keeps its registration). ``hub_change`` of ``result`` says what changed, also when a new certificate is needed.
        """
        reg = self.reg
        try:
            change = parts and parts["ca_pem"] and hub_change(reg, parts["server"], parts["ca_pem"])
        except FleetError:
            return False
        if not change:
            return False
        if "ca" in change:
            change["ca"]["to"] = discovered["ca_pins"]
        result["hub_change"] = change
        return certificate_problem(reg, discovered["ca_pem"], parts["client_cert_pem"], parts["client_key_pem"],
                                   karmada.agent_user(reg.cluster_name), karmada.AGENTS_GROUP) is None

    # --- the steps -------------------------------------------------------------------------------------

    def present(self, lock=None):
        """Register the member in Pull mode; see the module documentation for the steps.

        ``lock`` is the :class:`~lease_lock.RegistrationLock` to use (default: a new one for this run). A failure after a write
        (the hub RBAC, the CSR) reports ``changed`` and names what was written.
        """
        with self.start().failures_name_writes("written"):
            return self._present(lock)

    def _present(self, lock):
        member, reg, report = self.member, self.reg, self.report
        cluster_id = check_identity(member, self.hub, reg)
        stored, parts, problem = self._stored_agent()
        result = dict(engine=reg.engine.name, cluster_name=reg.cluster_name, cluster_id=cluster_id,
                      agent_user=karmada.agent_user(reg.cluster_name),
                      api_endpoint=reg.api_endpoint or member.server, proxy_server_address=reg.proxy_server_address,
                      csr_name=None, csr_resumed=None, reason=problem, waited_for=None, hub_change=None)
        if problem is None:
            change, discovered = self.published_ca_change(parts["ca_pem"])
            if change:  # the hub publishes a new CA bundle: trust it, with the same certificate while it still holds
                result.update(hub_change=change, reason="the hub publishes a new CA bundle (%s)" % ", ".join(change["ca"]["to"]))
                if certificate_problem(reg, discovered["ca_pem"], parts["client_cert_pem"], parts["client_key_pem"],
                                       karmada.agent_user(reg.cluster_name), karmada.AGENTS_GROUP) is None:
                    return self._reroute(parts, discovered, result)
        if problem is None and result["hub_change"] is None:
            rerouted = proxy_problem(reg, parts["proxy_url"], parts["ca_pem"])
            if rerouted is None:
                return self._keep(stored, parts, result)
            result["reason"] = rerouted
            return self._reroute(parts, self.discover(), result)
        new_bundle = problem is None  # and the certificate does not hold under the hub's new CA bundle
        if new_bundle:
            problem = result["reason"] = "the agent certificate was not issued by a CA of the hub's new CA bundle"
        else:
            discovered = self.discover()
        if self._rebootstrap(parts, discovered, result):
            return self._reroute(parts, discovered, result, hub_server(reg, discovered))
        lock = lock or RegistrationLock(member, reg.cluster_name, unfinished="the agent kubeconfig was not written",
                                        interval=reg.wait_sleep)
        if self.check_mode:
            under_way = lock.held_by_another()
            if under_way is None:
                return self._register(stored, discovered, result)
            report.warnings.append("a registration of cluster %s by another run (%s, since %s) is under way: a run now "
                                   "would wait for it and keep the certificate it stores; no CSR planned"
                                   % (reg.cluster_name, under_way["holder"], under_way["since"]))
            result.update(waited_for=under_way, hub_server=hub_server(reg, discovered), ca_pins=discovered["ca_pins"],
                          certificate_expiration=None)
            return report.result(**result)
        waited = result["waited_for"] = lock.acquire(reg.csr_wait_timeout)
        try:
            # Read again under the Lease: another run may have registered the member since the first read, under this
            # name or (refused here) another.
            check_identity(member, self.hub, reg)
            stored, parts, problem = self._stored_agent()
            if problem is None and not new_bundle:
                report.warnings.append(("waited for the registration of cluster %s by another run (%s, since %s), which"
                                        % (reg.cluster_name, waited["holder"], waited["since"]) if waited else
                                        "another run registered cluster %s meanwhile and" % reg.cluster_name)
                                       + " stored a valid certificate: kept it")
                done = self._keep(stored, parts, result)
            else:
                result["reason"] = problem or result["reason"]
                done = self._register(stored, discovered, result, lock)
        finally:
            warning = lock.release()
        if warning:
            done["warnings"].append(warning)
        return done

    def agent(self, registered):
        """After :meth:`present` (its result ``registered``): the karmada-agent and the waits, as karmadactl register.

        With ``deploy_agent`` the agent's objects (:func:`karmada.agent_objects`) are applied on the member; with
        ``wait`` its Deployment must become available and, with ``hub``, the hub must report the cluster Ready,
        each within ``wait_timeout`` seconds (neither is waited for in check mode). Returns ``registered`` with
        the agent's objects added; a failure names what was written before it, the registration included.
        """
        member, hub, reg = self.member, self.hub, self.reg
        waits = reg.wait and not self.check_mode
        if not (reg.deploy_agent or reg.wait and hub):
            return registered
        report = self.start()
        try:
            if reg.deploy_agent:
                fingerprint = (pki.fingerprint(pki.load_certificates(self.certificate_pem)[0]) if self.certificate_pem
                               else "a new certificate (check mode)")
                manifests = karmada.agent_objects(reg, registered["api_endpoint"], fingerprint, self.hub_sha256)
                self.apply(member, objects.prepare(manifests), wait=waits, timeout=reg.wait_timeout, interval=reg.wait_sleep)
            if waits and hub:
                hub_members.wait_for_clusters(hub, reg.engine, reg.cluster_name, timeout=reg.wait_timeout, interval=reg.wait_sleep)
            if reg.wait and hub:  # the run that waits for the Cluster marks it (in check mode: would mark it)
                self._mark(hub, registered.get("cluster_id"))
        except FleetError as exc:
            raise failed_after(exc, registered, report)
        return merge_written(registered, report)

    def _mark(self, hub, cluster_id):
        """Record ``cluster_id`` on the Cluster the agent created (hub_record.CLUSTER_ID_ANNOTATION, as push join and OCM's accept
        do), once it is there and is this member's: the mark of a cluster this collection registered (prune.py)."""
        cluster = resources.get(hub, karmada.CLUSTER, self.reg.cluster_name)
        if cluster is not None and karmada.recorded_cluster_id(cluster) == cluster_id:
            self.ensure(hub, karmada.CLUSTER, hub_record.cluster_id_annotation(self.reg.cluster_name, cluster_id), cluster)
            # the record only hub administrators can write: what cluster_prune trusts (hub_record.py)
            self.ensure(hub, CONFIG_MAP, hub_record.desired("karmada", self.reg.cluster_name, cluster_id))

    def absent(self):
        """Unregister: Works, Cluster and agent RBAC on the hub (with hub credentials), then the member objects.

        Works and the Cluster are awaited before the next step; the namespaces terminate in parallel and
        are awaited at the end. With ``force`` an unreachable member is skipped (hub side only).
        """
        member, hub, reg, check_mode = self.member, self.hub, self.reg, self.check_mode
        report = self.start()
        name = reg.cluster_name
        namespaces = []
        with report.failures_name_writes("deleted"):
            try:
                _refuse_another_karmada_agent(_agent_kubeconfig(member)[1], name, "unregister")
            except ClusterError as exc:
                self.go_on_without_member(exc, "its agent objects (namespace %s with Secret %s, the karmada-agent "
                                          "Deployment and RBAC)" % (karmada.AGENT_NAMESPACE, karmada.AGENT_KUBECONFIG_SECRET))
                member = None
            if hub:
                cluster = resources.get(hub, karmada.CLUSTER, name)
                if reg.engine.is_push(cluster):
                    raise FleetError("cluster %s is registered on the hub in Push mode: remove it with "
                                     "multicluster.fleet.cluster_join (state=absent), not cluster_register" % name)
                namespaces.append((hub, remove_from_hub(hub, name, self.delete)))
            else:
                report.warnings.append("no hub credentials given: only the member side was removed; the hub still lists "
                                       "cluster %s (pass hub to remove its Cluster, Works and agent RBAC too)" % name)
            if member:
                for kind, obj_name, namespace in karmada.agent_member_objects():
                    self.delete(member, kind, obj_name, namespace)
                # What a registration that was stopped half-way left: its CSR in flight and its Lease (in version 1.0.0
                # named like the Secret).
                for kind, leftover in ((SECRET, in_flight_name(name)), (LEASE, in_flight_name(name)),
                                       (LEASE, REGISTRATION_LEASE)):
                    if resources.get(member, kind, leftover, LOCK_NAMESPACE) is not None:
                        self.delete(member, kind, leftover, LOCK_NAMESPACE)
                namespace = resources.get(member, NAMESPACE, karmada.AGENT_NAMESPACE)
                if ((namespace or {}).get("metadata", {}).get("labels") or {}).get(karmada.SYSTEM_LABEL) == "true":
                    self.delete(member, NAMESPACE, karmada.AGENT_NAMESPACE)
                    namespaces.append((member, karmada.AGENT_NAMESPACE))
            if not check_mode:
                for cluster, namespace_name in namespaces:
                    resources.wait_until_gone(cluster, NAMESPACE, namespace_name, timeout=reg.wait_timeout,
                                              interval=reg.wait_sleep)
        return report.result(engine=reg.engine.name, cluster_name=name)
