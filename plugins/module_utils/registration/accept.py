# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Accepting registering member clusters on the hub, as ``clusteradm accept`` and manual Karmada CSR
approval do, but checked and idempotent.

For each cluster: find its agent's CSRs (OCM: label ``open-cluster-management.io/cluster-name``;
Karmada: CN ``system:karmada:agent:<cluster>``, or karmadactl's CSR name ``<cluster>-xxxxx``), check
every pending one with :func:`csr.check`, approve the newest that passes (one agent, one certificate)
through the ``approval`` subresource, optionally deny those that fail, and for OCM set
``ManagedCluster.spec.hubAcceptsClient``. A Karmada cluster the hub has in Push mode runs no agent:
its agent CSRs are refused.
A pending CSR that passes is approved even when the cluster was accepted before: an agent that registers
again, or renews, asks with a new CSR while the approved one of its earlier registration is still listed
(kube-controller-manager deletes issued CSRs after an hour). A cluster whose CSRs come from several
requesters gets nothing approved unless ``requesters`` names the ones to trust. Check mode sends every
write as a server-side dry run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime

from ansible_collections.multicluster.fleet.plugins.module_utils.registration import csr as csrs
from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import cluster_names
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import Conflict, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout

APPROVED_REASON = "MulticlusterFleetApproved"
DENIED_REASON = "MulticlusterFleetDenied"


def _age(csr):
    """Sort key putting newer CSRs last: creation time, then the resourceVersion within the same second."""
    metadata = csr.get("metadata") or {}
    version = metadata.get("resourceVersion") or ""
    return metadata.get("creationTimestamp") or "", int(version) if version.isdigit() else 0, csrs.name_of(csr)


class ClusterPlan:
    """What one cluster's CSRs and member object say, and what accepting it takes.

    ``earlier`` is None when any approved CSR of the agent, or the member having joined, shows the cluster
    accepted; otherwise a new CSR is expected and ``earlier`` holds the names of the approved CSRs that
    predate it: only a CSR approved since counts (see :attr:`certified_before`).

    At most one CSR is approved per cluster: one agent holds one certificate, so of several acceptable
    CSRs the newest is approved and the others are reported ``superseded``. A Karmada cluster the hub
    has in Push mode runs no agent: every agent CSR for it is refused.
    """

    def __init__(self, engine, name, found, member, requesters=None, earlier=None):
        self.engine = engine = engines.get(engine)
        self.name = name
        self.member = member  # the ManagedCluster (OCM) or Cluster (Karmada), or None
        self.earlier = earlier
        self.approve = []  # the pending CSR to approve (one at most)
        self.rejected = []  # (csr, reasons, deniable)
        self.superseded = []  # (csr, reason): acceptable, but a newer CSR of the cluster is approved instead
        self.approved_before = []  # approved CSRs that meet every rule
        self.warnings = []
        acceptable = []
        for item in found:
            state = csrs.state(item)
            if state == csrs.PENDING:
                reasons = csrs.check(engine, name, item)
                if not reasons and requesters and csrs.requester(item) not in requesters:
                    reasons = ["requester %s is not one of requesters (%s)" % (csrs.requester(item), ", ".join(requesters))]
                if self.push:
                    reasons = [self.push_reason()] + reasons
                if reasons:
                    self.rejected.append((item, reasons, True))
                else:
                    acceptable.append(item)
            elif state == csrs.APPROVED:
                reasons = csrs.check(engine, name, item)
                if reasons:
                    self.warnings.append("cluster %s: CSR %s was approved earlier, not by this module, although: %s"
                                         % (name, csrs.name_of(item), "; ".join(reasons)))
                else:
                    self.approved_before.append(item)
        who = sorted({csrs.requester(item) for item in acceptable})
        if len(who) > 1 and not requesters:
            reason = ("several requesters ask for cluster %s (%s): approving none; name the one to trust in requesters"
                      % (name, ", ".join(who)))
            self.rejected += [(item, [reason], False) for item in acceptable]
        elif acceptable:
            acceptable.sort(key=_age)
            newest = acceptable[-1]
            self.approve = [newest]
            self.superseded = [(item, "not approved: cluster %s gets one agent certificate, from its newest acceptable CSR"
                                      " %s" % (name, csrs.name_of(newest))) for item in acceptable[:-1]]

    @property
    def push(self):
        """The hub has the cluster as a Karmada Push member: Karmada reaches it with its own credentials, no agent."""
        return self.engine.is_push(self.member)

    def push_reason(self):
        return ("cluster %s is registered on the hub in Push mode, where no agent runs: refusing agent CSRs for it"
                " (unjoin it first to register it in Pull mode)" % self.name)

    @property
    def hub_accepts_client(self):
        return bool(((self.member or {}).get("spec") or {}).get("hubAcceptsClient"))

    @property
    def certified_before(self):
        """The agent got a certificate before: an approved CSR that meets the rules, or it joined with one.

        When a new CSR is expected (``earlier`` set), neither an approved CSR named in ``earlier`` nor the
        joined member counts: both may stem from an earlier registration; a CSR approved since does.
        """
        if self.earlier is not None:
            return any(csrs.name_of(item) not in self.earlier for item in self.approved_before)
        if self.approved_before:
            return True
        return self.engine.joined(self.member)

    @property
    def ready(self):
        """Nothing more to wait for: something to decide now, or acting now leaves the cluster accepted.

        That is a CSR to approve or an agent certified before, and for OCM a ManagedCluster to accept
        (acting sets its ``hubAcceptsClient`` when it is still false).
        """
        if self.push or any(not deniable for _csr, _reasons, deniable in self.rejected):
            return True
        if self.engine.accepts_clients and self.member is None:
            return False
        return bool(self.approve) or self.certified_before

    def problem(self):
        """Why the cluster is not (or would not be) accepted, for messages."""
        if self.push:
            return self.push_reason()
        if any(not deniable for _csr, _reasons, deniable in self.rejected):
            return self.rejected[-1][1][0]
        if not (self.approve or self.certified_before):
            if self.rejected:
                return "no acceptable CSR; refused: %s" % "; ".join(
                    "%s (%s)" % (csrs.name_of(item), ", ".join(reasons)) for item, reasons, _deniable in self.rejected)
            if self.earlier:
                return "no new CSR from its agent yet (approved before: %s)" % ", ".join(sorted(self.earlier))
            return "no pending CSR from its agent yet"
        return "ManagedCluster %s does not exist on the hub yet (the klusterlet creates it when it joins)" % self.name


def read_plans(hub, engine, clusters, requesters=None, earlier=None):
    """One list of CSRs plus each cluster's member object, turned into a :class:`ClusterPlan` per cluster.

    ``earlier`` (a dict, empty before the first read) is for when a new CSR is expected: the first read
    records there the names of each cluster's approved CSRs, and every read gives them to the plans as
    :attr:`ClusterPlan.earlier`.
    """
    engine = engines.get(engine)
    selector = engine.csr_selector(clusters)
    items = [(item, csrs.common_name(item)) for item in resources.list_objects(hub, resources.CSR, label_selector=selector)]
    plans = []
    for name in clusters:
        found = sorted((item for item, cn in items if engine.claims_csr(name, item, cn)), key=csrs.name_of)
        plan = ClusterPlan(engine, name, found, resources.get(hub, engine.member_kind, name), requesters)
        if earlier is not None:
            plan.earlier = earlier.setdefault(name, frozenset(csrs.name_of(item) for item in plan.approved_before))
        plans.append(plan)
    return plans


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _decide(hub, item, condition, check_mode):
    """PUT the CSR with ``condition`` added to its approval subresource; return ``(before, after)``.

    A conflict means the CSR changed meanwhile: read it again and retry while it is still pending
    (its spec is immutable, so the checks still hold). ``after`` is None when someone else decided first.
    """
    name = csrs.name_of(item)
    current = item
    for _attempt in range(resources.CONFLICT_RETRIES):
        body = copy.deepcopy(current)
        status = body.setdefault("status", {})
        status["conditions"] = list(status.get("conditions") or []) + [condition]
        try:
            after = hub.request("PUT", resources.CSR.path(name=name, subresource="approval"), body=body,
                                query={"dryRun": "All"} if check_mode else None)
            return current, after
        except Conflict:
            current = resources.get(hub, resources.CSR, name)
        except NotFound:
            current = None
        if current is None:
            raise FleetError("%s: CertificateSigningRequest %s disappeared while being %s"
                             % (hub.label, name, condition["type"].lower()))
        if csrs.state(current) != csrs.PENDING:
            return current, None
    raise FleetError("%s: CertificateSigningRequest %s kept changing (%d conflicts); try again"
                     % (hub.label, name, resources.CONFLICT_RETRIES))


def _csr_diff(before, after):
    header = resources.CSR.ref(csrs.name_of(before))

    def view(obj):
        return {"metadata": {"name": csrs.name_of(obj)}, "spec": {"username": csrs.requester(obj)},
                "status": {"conditions": resources.conditions_of(obj)}}
    return {"before_header": header, "after_header": header, "before": view(before), "after": view(after)}


def _approve(hub, plan, item, check_mode):
    condition = {
        "type": "Approved", "status": "True", "reason": APPROVED_REASON, "lastUpdateTime": _now(),
        "message": "approved by multicluster.fleet csr_accept: %s agent certificate of cluster %s, requested by %s"
                   % (plan.engine.name, plan.name, csrs.requester(item)),
    }
    return _decide(hub, item, condition, check_mode)


def _deny(hub, plan, item, reasons, check_mode):
    condition = {
        "type": "Denied", "status": "True", "reason": DENIED_REASON, "lastUpdateTime": _now(),
        "message": "denied by multicluster.fleet csr_accept for cluster %s: %s" % (plan.name, "; ".join(reasons)),
    }
    return _decide(hub, item, condition, check_mode)


def _act(hub, plan, deny_invalid, check_mode):
    """Approve, deny and accept one cluster; return ``(result, diffs)``."""
    result = {"name": plan.name, "approved": [], "rejected": [], "denied": []}
    diffs = []
    certified = plan.certified_before
    for item in plan.approve:
        before, after = _approve(hub, plan, item, check_mode)
        if after is not None:
            result["approved"].append(csrs.name_of(item))
            diffs.append(_csr_diff(before, after))
        certified = certified or csrs.state(after or before) == csrs.APPROVED
    for item, reason in plan.superseded:
        result["rejected"].append({"name": csrs.name_of(item), "requester": csrs.requester(item), "reasons": [reason]})
    for item, reasons, deniable in plan.rejected:
        result["rejected"].append({"name": csrs.name_of(item), "requester": csrs.requester(item), "reasons": reasons})
        if deny_invalid and deniable:
            before, after = _deny(hub, plan, item, reasons, check_mode)
            if after is not None:
                result["denied"].append(csrs.name_of(item))
                diffs.append(_csr_diff(before, after))
    accepted = certified
    if plan.engine.accepts_clients:
        if accepted and plan.member is not None and not plan.hub_accepts_client:
            outcome = resources.ensure(hub, plan.engine.member_kind, {"metadata": {"name": plan.name}, "spec": {"hubAcceptsClient": True}},
                                       check_mode)
            diffs.append(dict(outcome.diff(), before_header=outcome.ref, after_header=outcome.ref))
        accepted = accepted and plan.member is not None
    result["accepted"] = accepted
    return result, diffs


def _wait(hub, engine, clusters, requesters, timeout, earlier=None, interval=resources.WAIT_SLEEP):
    """Poll every ``interval`` seconds until every cluster's plan is ready; return the plans.

    Times out naming the clusters still waiting."""
    seen = {}

    def ready():
        plans = seen["plans"] = read_plans(hub, engine, clusters, requesters, earlier)
        waiting = [p for p in plans if not p.ready]
        return not waiting, "; ".join("%s: %s" % (p.name, p.problem()) for p in waiting)
    try:
        resources.wait_until(ready, timeout, "an acceptable agent CSR of every cluster", interval=interval)
    except WaitTimeout as exc:
        waiting = [p.name for p in seen["plans"] if not p.ready]
        raise WaitTimeout("%s: timed out after %ss waiting for the agent CSRs of %s: %s"
                          % (hub.label, timeout, ", ".join(waiting), exc.details.get("last_seen")),
                          waiting=waiting)
    return seen["plans"]


def accept(hub, engine, clusters, requesters=None, deny_invalid=False, wait=resources.NO_WAIT, check_mode=False,
           expect_new_csr=False):
    """Accept member ``clusters`` on ``hub``; return ``dict(changed, clusters, diff, warnings)``.

    A pending CSR that passes the checks is approved whether or not the cluster was accepted before;
    of several, only the newest (one certificate per agent). Agent CSRs of Karmada Push members are
    refused. With ``wait`` (an enabled :class:`resources.Wait`), first poll (every ``wait.interval`` seconds, up
    to ``wait.timeout``) until every cluster has an acceptable pending CSR or is accepted already.
    ``expect_new_csr`` says that the agents are requesting certificates now (a registration, a
    re-registration, a renewal): the approved CSRs listed when the call starts and the joined state then
    do not count as accepted, only a CSR approved now or since (so ``wait`` waits for the new CSR).
    Raises FleetError naming each cluster that is not accepted afterwards (nothing acceptable, only
    refused CSRs, ambiguous requesters), with the per-cluster results, ``changed`` and ``warnings`` as details.
    ``warnings`` name the approved CSRs of these clusters that break the rules (approved by someone else before).
    """
    engine = engines.get(engine)
    clusters = cluster_names.cluster_names(engine, clusters)
    earlier = {} if expect_new_csr else None
    if wait.enabled:
        plans = _wait(hub, engine, clusters, requesters, wait.timeout, earlier, wait.interval)
    else:
        plans = read_plans(hub, engine, clusters, requesters, earlier)
    results, diffs, warnings = [], [], []
    for plan in plans:
        warnings += plan.warnings
        result, changes = _act(hub, plan, deny_invalid, check_mode)
        results.append(result)
        diffs += changes
    outcome = {"changed": bool(diffs), "clusters": results, "diff": diffs, "warnings": warnings}
    failed = [(plan, result) for plan, result in zip(plans, results) if not result["accepted"]]
    if failed:
        raise FleetError("%s: not accepted: %s" % (hub.label, "; ".join(
            "%s (%s)" % (plan.name, plan.problem()) for plan, _result in failed)), **outcome)
    return outcome
