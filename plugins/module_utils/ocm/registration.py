# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OCM registration from the member's side: ``clusteradm join`` / ``accept`` / ``unjoin`` (docs/architecture.md 4.6).

Join discovers and pins the hub, stores the bootstrap kubeconfig and the Klusterlet registration fields; the
klusterlet makes its own CSR. Once its registration agent holds a valid certificate for this cluster, the
bootstrap kubeconfig is left as it is. In Hosted modes everything is written to the hosting cluster.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import hub_members
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, objects, pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import accept, bootstrap, hub_record
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.lease_lock import LEASE, RegistrationLock
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.report import Accepted, failed_after, merge_written
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.registrar import (
    Registrar, certificate_expiration, check_identity, credentials_problem, hub_change, hub_server, hub_trust, proxy_problem,
    secret_value, utc_now)
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CONFIG_MAP, CSR, NAMESPACE, SECRET

# What wait waits for on the Klusterlet (clusteradm join --wait): the operator has applied it and its agents run.
KLUSTERLET_READY = (resources.wanted_condition("Applied"), resources.wanted_condition("Available"))


def _serves_klusterlets(runtime):
    try:
        runtime.request("GET", ocm.KLUSTERLET.path())
    except client.NotFound:
        return False
    return True


def _refuse_another_klusterlet(runtime, placement, name, doing):
    """FleetError when the Klusterlet this registration would use registers another cluster (none when the cluster does
    not serve the Klusterlet API yet); else the name it registers (None: no Klusterlet yet)."""
    current = resources.get(runtime, ocm.KLUSTERLET, placement.klusterlet)
    registered_as = ((current or {}).get("spec") or {}).get("clusterName")
    if registered_as and registered_as != name:
        raise FleetError("Klusterlet %s on %s registers cluster %s, not %s: refusing to %s another cluster "
                         "(unjoin %s first)" % (placement.klusterlet, runtime.label, registered_as, name, doing, registered_as))
    return registered_as


def remove_from_hub(hub, name, delete):
    """The hub side of unjoining ``name`` (4.6): its ManagedCluster, awaited (the hub's registration controller removes
    the cluster's RBAC before it lets the object go), then :func:`hub_objects`. ``delete`` as in
    :func:`karmada.registration.remove_from_hub`."""
    delete(hub, ocm.MANAGED_CLUSTER, name, wait=True)
    for kind, namespace, object_name in hub_objects(name):
        delete(hub, kind, object_name, namespace)


def hub_objects(name):
    """``(kind, namespace, name)`` of what :func:`remove_from_hub` deletes after the ManagedCluster, all named after
    ``name`` alone: the registration agent's Lease ``<cluster>/managed-cluster-lease``, which no hub controller removes
    (it has no owner), and this collection's record of the cluster (hub_record.py)."""
    return [(LEASE, name, ocm.CLUSTER_LEASE), (CONFIG_MAP, hub_record.NAMESPACE, hub_record.name("ocm", name))]


class OcmRegistration(Registrar):
    """Join (:meth:`present`, then :meth:`accept`) or unjoin (:meth:`absent`) a member; the klusterlet runs on
    ``runtime``: the member, or in Hosted modes the hosting cluster."""

    removed_from_hub = None  # why the hub no longer honours the klusterlet's certificate (_removed_from_hub), or None

    def run(self):
        reg = self.reg
        if reg.state != "present":
            return self.absent()
        if reg.placement.hosted and not reg.managed_kubeconfig:
            raise FleetError("a Hosted klusterlet needs the managed cluster's kubeconfig (ocm.managed_kubeconfig)")
        if reg.accept and not self.hub:
            raise FleetError("accept needs the hub's admin credentials (hub), with which clusteradm accept runs")
        joined = self.present()
        return self.accept(joined) if reg.accept else joined

    def _stored_credentials(self):
        """``(expiration or None, problem or None, hub change or None)`` of the registration agent's hub kubeconfig Secret;
        the change (:func:`registrar.hub_change`) is what differs between the hub it reaches and the one asked for."""
        reg = self.reg
        self.removed_from_hub = None
        namespace = reg.placement.agent_namespace
        stored = resources.get(self.runtime, SECRET, ocm.HUB_KUBECONFIG_SECRET, namespace)
        if stored is None:
            return None, "the klusterlet has not joined yet (no %s/%s Secret)" % (namespace, ocm.HUB_KUBECONFIG_SECRET), None
        cluster_name = secret_value(stored, "cluster-name")
        agent_name = secret_value(stored, "agent-name")
        if cluster_name != reg.cluster_name or not agent_name:
            return None, "the stored hub kubeconfig is for cluster %s, not %s" % (cluster_name, reg.cluster_name), None
        try:
            parts = pki.read_kubeconfig(secret_value(stored, ocm.KUBECONFIG_KEY) or "", "stored hub kubeconfig")
        except FleetError as exc:
            return None, exc.msg, None
        try:
            change = hub_change(reg, parts["server"], parts["ca_pem"]) if parts["ca_pem"] else None
        except FleetError:
            change = None
        cert_pem = secret_value(stored, "tls.crt")
        problem = (credentials_problem(reg, parts["server"], parts["ca_pem"], cert_pem, secret_value(stored, "tls.key"),
                                       ocm.agent_common_name(reg.cluster_name, agent_name),
                                       ocm.agent_organization(reg.cluster_name))
                   or proxy_problem(reg, parts["proxy_url"], parts["ca_pem"]))
        if problem:
            return None, problem, change
        removed = self.removed_from_hub = self._removed_from_hub()
        if removed:
            return None, removed, None
        change, dummy = self.published_ca_change(parts["ca_pem"])
        if change:  # the klusterlet bootstraps again with a bootstrap kubeconfig trusting the new bundle
            return None, "the hub publishes a new CA bundle (%s)" % ", ".join(change["ca"]["to"]), change
        return certificate_expiration(cert_pem), None, None

    def _removed_from_hub(self):
        """Why a good stored klusterlet certificate is no longer honoured, or None (also without hub credentials).

        A klusterlet creates its ManagedCluster before its CSR, so a certificate for a cluster the hub has no
        ManagedCluster of was issued for one removed since (prune.yml, or unjoined there): the hub's registration
        controller removed the cluster's RBAC with it, and the agent, which creates the ManagedCluster only while it
        bootstraps, waits for ever. The run then makes the klusterlet bootstrap again (:meth:`_start_rebootstrap`)."""
        if self.hub is None or resources.get(self.hub, ocm.MANAGED_CLUSTER, self.reg.cluster_name) is not None:
            return None
        return ("the hub has no ManagedCluster %s, the cluster the klusterlet's certificate was issued for: it was removed "
                "from the hub (prune.yml, or unjoined there), which no longer honours that certificate; the klusterlet "
                "bootstraps again" % self.reg.cluster_name)

    def _start_rebootstrap(self, reason):
        """Make the klusterlet bootstrap again on its operator's own path: condition ``RebootstrapProgressing=True`` on the
        Klusterlet's status. The operator's bootstrap controller then stops the registration agent, deletes
        ``hub-kubeconfig-secret`` and marks the condition False (``RebootstrapCompleted``); the agent starts again with the
        bootstrap kubeconfig, creates the ManagedCluster and posts a new CSR. Returns the Outcome."""
        runtime, name = self.runtime, self.reg.placement.klusterlet
        for _attempt in range(resources.CONFLICT_RETRIES):
            current = resources.get(runtime, ocm.KLUSTERLET, name)
            if current is None or resources.condition_is(current, ocm.REBOOTSTRAP_CONDITION):
                return resources.Outcome(ocm.KLUSTERLET, name, None, "unchanged", current, current)
            conditions = [c for c in (current.get("status") or {}).get("conditions") or []
                          if c.get("type") != ocm.REBOOTSTRAP_CONDITION]
            conditions.append({"type": ocm.REBOOTSTRAP_CONDITION, "status": "True", "reason": "RebootstrapStarted",
                               "message": reason[:1000], "lastTransitionTime": pki.rfc3339(utc_now()),
                               "observedGeneration": current["metadata"].get("generation", 0)})
            patch = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                     "status": {"conditions": conditions}}
            try:
                updated = runtime.request("PATCH", ocm.KLUSTERLET.path(name=name, subresource="status"), body=patch,
                                          query={"dryRun": "All"} if self.check_mode else None,
                                          content_type=resources.MERGE_PATCH)
            except client.Conflict:
                continue
            return resources.Outcome(ocm.KLUSTERLET, name, None, "updated", current, updated)
        raise FleetError("%s: Klusterlet %s kept changing while its rebootstrap was being requested; run again"
                         % (runtime.label, name))

    def _bootstrap_secret(self, server, trust, fresh=False):
        """The bootstrap kubeconfig Secret to write: with this run's token, unless the member's differs from it only by a
        token the hub still accepts (another run's join token, docs/architecture.md 3.3): that one is kept, as a new token
        would make the klusterlet bootstrap again - a second CSR for the same member."""
        reg = self.reg
        namespace = reg.placement.agent_namespace

        def secret(token):
            kubeconfig_text = bootstrap.bootstrap_kubeconfig(server, trust, token, proxy_url=reg.proxy_url)
            grpc_config = reg.grpc_server and ocm.grpc_bootstrap_config(reg.grpc_server, reg.grpc_ca_pem, token)
            return ocm.bootstrap_secret(kubeconfig_text, namespace, grpc_config)

        wanted = secret(reg.token)
        if fresh:
            return wanted
        stored = resources.get(self.runtime, SECRET, ocm.BOOTSTRAP_SECRET, namespace)
        try:
            token = pki.read_kubeconfig(secret_value(stored, ocm.KUBECONFIG_KEY) or "", "stored bootstrap kubeconfig")["token"]
        except FleetError:
            return wanted
        if not token or token == reg.token:
            return wanted
        kept = secret(token)
        if kept["data"] != stored.get("data"):
            return wanted
        return kept if self._token_may_register(server, trust, token) else wanted

    def _token_may_register(self, server, trust, token):
        """True when the hub accepts ``token`` and lets it create CSRs (a SelfSubjectAccessReview, as ``kubectl auth
        can-i``); False when it refuses it or cannot be asked."""
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {"verb": "create", "group": "certificates.k8s.io",
                                                  "resource": "certificatesigningrequests"}}}
        try:
            with self.connect(server, trust, token, self.reg.proxy_url) as hub:
                answer = hub.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review)
        except ClusterError:
            return False
        return bool((answer or {}).get("status", {}).get("allowed"))

    def present(self, lock=None):
        """Join: the bootstrap kubeconfig and the Klusterlet registration fields (the klusterlet does the CSR).

        ``hub`` is not needed: the klusterlet registers itself. In Hosted modes everything is written to
        ``hosting``, with the registration's ``managed_kubeconfig`` (how the agents reach ``member``) in its own
        Secret. A run that writes the bootstrap kubeconfig or a Klusterlet not yet registering this cluster holds
        ``lock`` (default: a new :class:`~lease_lock.RegistrationLock` on ``member``) while it decides and writes.
        """
        member, reg, runtime, check_mode = self.member, self.reg, self.runtime, self.check_mode
        report = self.start()
        placement = reg.placement
        cluster_id = check_identity(member, self.hub, reg)
        registered_as = _refuse_another_klusterlet(runtime, placement, reg.cluster_name, "join as")
        result = dict(engine=reg.engine.name, cluster_name=reg.cluster_name, cluster_id=cluster_id,
                      api_endpoint=reg.api_endpoint or member.server, csr_name=None, reason=None, certificate_expiration=None,
                      joined=False, hub_server=None, ca_pins=[], hub_change=None, removed_from_hub=False,
                      klusterlet=placement.klusterlet,
                      agent_namespace=placement.agent_namespace)
        # The klusterlet operator (ocm.operator_bundle), before the Klusterlet it runs: an existing CRD is kept (it may be
        # newer, or another installation's). The Klusterlet's wait covers the operator's start.
        if reg.operator_bundle:
            self.apply(runtime, reg.operator_bundle, existing="keep_crds", timeout=reg.wait_timeout)
        if not _serves_klusterlets(runtime):
            if check_mode:  # checked what can be checked (the identity rule); the rest needs the operator's API
                result["reason"] = ("not previewed: %s does not serve the Klusterlet API yet (%s)"
                                    % (runtime.label, "a real run installs it first, from ocm.operator_bundle"
                                       if reg.operator_bundle else "role multicluster.fleet.agent_install installs it"))
                report.warnings.append("check mode: the join of %s is %s" % (reg.cluster_name, result["reason"]))
                return report.result(**result)
            raise FleetError("%s does not serve the Klusterlet API (klusterlets.operator.open-cluster-management.io): "
                             "install the klusterlet operator first (role multicluster.fleet.agent_install)" % runtime.label)
        expiration, problem, change = self._stored_credentials()
        lock = lock or RegistrationLock(member, reg.cluster_name, interval=reg.wait_sleep)
        result["waited_for"] = None
        if problem and check_mode:
            result["waited_for"] = lock.held_by_another()
            if result["waited_for"]:
                report.warnings.append("a registration of cluster %s by another run (%s, since %s) is under way: a run now "
                                       "would wait for it and keep the bootstrap kubeconfig it wrote"
                                       % (reg.cluster_name, result["waited_for"]["holder"], result["waited_for"]["since"]))
        elif problem or registered_as != reg.cluster_name and not check_mode:
            result["waited_for"] = lock.acquire(reg.wait_timeout)
        klusterlet = ocm.klusterlet(reg.cluster_name, result["api_endpoint"], placement, reg.registration_driver,
                                    reg.klusterlet_spec, reg.client_cert_expiration_seconds)
        with report.failures_name_writes("written"):
            try:
                if lock.lease is not None:  # read again under the Lease: another run may have joined the member meanwhile,
                    check_identity(member, self.hub, reg)  # under this name or (refused here) another
                    _refuse_another_klusterlet(runtime, placement, reg.cluster_name, "join as")
                    expiration, problem, change = self._stored_credentials()
                result.update(reason=problem, certificate_expiration=expiration, joined=problem is None, hub_change=change)
                if problem:
                    discovered = self.discover()
                    result.update(hub_server=hub_server(reg, discovered), ca_pins=discovered["ca_pins"])
                    if change and "ca" in change:
                        change["ca"]["to"] = discovered["ca_pins"]
                namespaces = [placement.agent_namespace] if placement.hosted else [ocm.OPERATOR_NAMESPACE, ocm.AGENT_NAMESPACE]
                for namespace in namespaces:
                    self.ensure(runtime, NAMESPACE, {"metadata": {"name": namespace}})
                removed = result["removed_from_hub"] = bool(problem and self.removed_from_hub)
                if removed:  # first the request, then the bootstrap kubeconfig, whose change the operator notices at once
                    report.add(runtime, self._start_rebootstrap(problem))
                if problem:
                    trust = hub_trust(reg, discovered["ca_pem"])
                    self.ensure(runtime, SECRET, self._bootstrap_secret(result["hub_server"], trust, fresh=removed))
                if placement.hosted:
                    self.ensure(runtime, SECRET,
                                ocm.external_managed_kubeconfig_secret(reg.managed_kubeconfig, placement.agent_namespace))
                self.ensure(runtime, ocm.KLUSTERLET, klusterlet)
            finally:
                warning = lock.release()
            if reg.wait and not check_mode:
                objects.wait_ready(runtime, ocm.KLUSTERLET, klusterlet, reg.wait_timeout, KLUSTERLET_READY,
                                   interval=reg.wait_sleep)
        if warning:
            report.warnings.append(warning)
        return report.result(**result)

    def accept(self, registered):
        """After :meth:`present` (its result ``registered``): accept the cluster on ``hub`` as ``clusteradm accept`` does.

        Approves its klusterlet's CSR and sets ``hubAcceptsClient`` (:func:`accept.accept`); with ``wait``, first
        waits for the CSR, then until the hub reports the cluster Available, each within ``wait_timeout`` seconds.
        A check-mode run previews the acceptance only of a cluster whose klusterlet has registered. Returns
        ``registered`` with ``accepted`` (the acceptance of the cluster, as csr_accept's ``clusters`` entry).
        """
        hub, reg, check_mode = self.hub, self.reg, self.check_mode
        name = reg.cluster_name
        registered["accepted"] = None
        if check_mode and resources.get(hub, reg.engine.member_kind, name) is None:
            registered["warnings"].append("check mode: the acceptance of %s is not previewed: not registered with the hub "
                                          "yet (its klusterlet registers once a real run has joined it)" % name)
            return registered
        waits = reg.wait and not check_mode
        report = self.start()
        try:
            try:
                # a klusterlet whose bootstrap kubeconfig now names another hub or CA bootstraps again: wait for its new CSR
                rebootstraps = bool(registered.get("hub_change") or registered.get("removed_from_hub")) and not check_mode
                outcome = accept.accept(hub, reg.engine, [name], wait=resources.Wait(waits, reg.wait_timeout, reg.wait_sleep),
                                        check_mode=check_mode, expect_new_csr=rebootstraps)
            except WaitTimeout as exc:
                raise WaitTimeout(exc.msg, last_seen="the klusterlet of %s has not requested its certificate yet" % name)
            registered["accepted"] = outcome["clusters"][0]
            for diff in outcome["diff"]:
                ref = diff["before_header"]
                verb = "approved" if ref.startswith(CSR.kind) else "accepted (hubAcceptsClient)"
                report.add(hub, Accepted(ref, verb, diff))
            # the cluster id the identity check of later registrations compares with (OCM keeps none)
            self.ensure(hub, reg.engine.member_kind, hub_record.cluster_id_annotation(name, registered["cluster_id"]))
            # the record only hub administrators can write: what cluster_prune trusts (hub_record.py)
            self.ensure(hub, CONFIG_MAP, hub_record.desired("ocm", name, registered["cluster_id"]))
            if waits:
                hub_members.wait_for_clusters(hub, reg.engine, name, timeout=reg.wait_timeout, interval=reg.wait_sleep)
        except FleetError as exc:
            raise failed_after(exc, registered, report)
        return merge_written(registered, report)

    def absent(self):
        """Unjoin: the Klusterlet and the Secrets of its agent namespace (Hosted: the namespace too); with hub
        credentials the ManagedCluster too. With ``force`` an unreachable member (or hosting cluster) is skipped."""
        hub, reg = self.hub, self.reg
        report = self.start()
        name = reg.cluster_name
        placement = reg.placement
        runtime = self.runtime
        with report.failures_name_writes("deleted"):
            try:
                _refuse_another_klusterlet(runtime, placement, name, "unjoin")
            except ClusterError as exc:
                self.go_on_without_member(exc, "Klusterlet %s and the Secrets of namespace %s"
                                          % (placement.klusterlet, placement.agent_namespace))
                runtime = None
            if runtime:
                self.delete(runtime, ocm.KLUSTERLET, placement.klusterlet, wait=True)
                secrets_of_join = [ocm.BOOTSTRAP_SECRET, ocm.HUB_KUBECONFIG_SECRET]
                if placement.hosted:
                    secrets_of_join.append(ocm.EXTERNAL_MANAGED_KUBECONFIG_SECRET)
                for secret_name in secrets_of_join:
                    self.delete(runtime, SECRET, secret_name, placement.agent_namespace)
                if placement.hosted:  # created by the join, as the klusterlet's own namespace on the hosting cluster
                    self.delete(runtime, NAMESPACE, placement.agent_namespace, wait=True)
            if hub:
                remove_from_hub(hub, name, self.delete)
            else:
                report.warnings.append("no hub credentials given: the hub still lists ManagedCluster %s (pass hub to delete "
                                       "it)" % name)
        return report.result(engine=reg.engine.name, cluster_name=name, klusterlet=placement.klusterlet)
