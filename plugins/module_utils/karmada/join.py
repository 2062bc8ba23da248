# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Push registration with a Karmada hub (``karmadactl join`` / ``unjoin``), idempotent and re-runnable.

A join runs in this order (docs/architecture.md 4.3):

1. Read only: the member's cluster id (its ``kube-system`` UID) and every Cluster on the hub. Any
   conflict (the member registered under another name, the name taken by another cluster, a Pull
   cluster of that name) stops the run before anything is written. A run that creates the Cluster
   first takes the member's registration Lease (one registration of a cluster at a time, whatever
   its name) and reads the hub again under it; it gives the Lease back once the Cluster is written.
2. Member: namespace, both ServiceAccounts, ClusterRole and ClusterRoleBinding, the token Secrets;
   then wait until Kubernetes' token controller has filled in both tokens.
3. Hub: namespace, the Cluster, then the two Secrets, each written once and already carrying its
   ownerReference to the Cluster's uid.

A join that fails after writing (a token that never comes, a hub that refuses, a wait that times out) reports, as
``changed`` and ``changes``, what it wrote before the failure.

The Cluster goes before its Secrets so that no hub Secret ever exists without its owner: a run that
stops anywhere leaves either nothing on the hub or a Cluster whose Secrets the next run creates (or
re-points, when the Cluster was re-created with a new uid). Every step is an ``ensure``, so a
re-run with the same input writes nothing and a changed input (region, zones, endpoint, a rotated
member token) updates just the objects it affects. Karmada's controller reports the Cluster not
ready during the moment its Secrets do not exist yet, and retries.

An unjoin deletes the Cluster and waits until Karmada's controller has released it (with ``force``,
after the timeout, it removes the finalizers itself), then the hub Secrets, then the member objects. A failure
part-way (say, a wait that times out) still reports, as ``changed`` and ``changes``, what was deleted before it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import cluster_identity, cluster_names, parallel
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import hub_record
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError, Conflict, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER, WORK
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.lease_lock import RegistrationLock
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import (
    CLUSTER_ROLE, CLUSTER_ROLE_BINDING, MERGE_PATCH, NAMESPACE, SECRET, SERVICE_ACCOUNT, Outcome,
)

# Seconds between two reads of a token Secret the token controller has not filled in yet: it does within a moment, so a
# join (and each of many joined together) waits for it a quarter of a second, not the second of the other waits.
TOKEN_POLL = 0.25

# Check mode cannot know a token the member has not minted yet; the planned hub Secrets carry this.
PLANNED = base64.b64encode(b"(minted by the member's token controller)").decode()


def validate(params):
    """Check the options before any request; raise :class:`FleetError` on the first problem."""
    karmada.validate_cluster_name(params["cluster_name"])
    validate_shared(params)
    if params.get("zones"):
        karmada.validate_zones(params["zones"])
    if params.get("api_endpoint"):
        karmada.validate_api_endpoint(params["api_endpoint"])
    if params.get("proxy_url"):
        karmada.validate_proxy_url(params["proxy_url"])


def validate_shared(params):
    """Check the options every join of a task shares (the credentials' namespace, the waits); FleetError if wrong."""
    karmada.validate_cluster_namespace(params["cluster_namespace"])
    resources.check_duration("wait_timeout", params.get("wait_timeout"), least=1)
    resources.check_duration("wait_sleep", params.get("wait_sleep"), least=1)


def registered_cluster(hub, name, cluster_id, member, clusters=None):
    """The hub's Cluster ``name`` (or None) after refusing every conflict with ``cluster_id`` (the identity rule,
    :func:`cluster_identity.registered_member`) and a Pull cluster of that name; among ``clusters``, the hub's Clusters
    as a caller listed them, else as listed now."""
    if clusters is None:
        clusters = resources.list_objects(hub, CLUSTER)
    existing = cluster_identity.registered_member("karmada", clusters, name, cluster_id, member.server)
    mode = ((existing or {}).get("spec") or {}).get("syncMode")
    if existing is not None and mode != "Push":
        raise FleetError("Cluster '%s' is registered in %s mode; remove it with multicluster.fleet.cluster_register "
                         "state=absent before joining it in Push mode" % (name, mode))
    return existing


def desired_cluster(params, cluster_id, member, existing):
    """The Cluster to ensure: options left unset follow the member connection or stay unmanaged."""
    proxy_url = params.get("proxy_url")
    if proxy_url is None:
        proxy_url = member.proxy
    insecure = params.get("insecure_skip_tls_verification")
    if insecure is None:
        insecure = not member.verifies_tls
    desired = karmada.push_cluster(dict(params, api_endpoint=params.get("api_endpoint") or member.server,
                                        insecure_skip_tls_verification=insecure, proxy_url=proxy_url), cluster_id)
    current = (existing or {}).get("spec") or {}
    # None removes a field with the merge patch; a field that is not there needs no removal.
    desired["spec"] = dict((k, v) for k, v in desired["spec"].items() if v is not None or current.get(k))
    return desired


def ensure_namespace(cluster, name, check_mode, timeout):
    """Ensure the credential namespace; one still being deleted (a recent unjoin) is waited out first."""
    current = resources.get(cluster, NAMESPACE, name)
    if current is not None and current["metadata"].get("deletionTimestamp") and not check_mode:
        resources.wait_until_gone(cluster, NAMESPACE, name, timeout=timeout)
    return resources.ensure(cluster, NAMESPACE, karmada.system_namespace(name), check_mode)


def _ensure_member(member, name, namespace, check_mode, timeout, outcomes):
    """Ensure the member objects, each outcome appended to ``outcomes`` as it happens."""
    service_account = karmada.service_account_name(name)
    outcomes.append(ensure_namespace(member, namespace, check_mode, timeout))
    plan = [
        (SERVICE_ACCOUNT, karmada.member_service_account(service_account, namespace)),
        (SERVICE_ACCOUNT, karmada.member_service_account(karmada.IMPERSONATOR_SERVICE_ACCOUNT, namespace)),
        (CLUSTER_ROLE, karmada.member_cluster_role(name)),
        (CLUSTER_ROLE_BINDING, karmada.member_cluster_role_binding(name, namespace)),
        (SECRET, karmada.service_account_token_secret(service_account, namespace)),
        (SECRET, karmada.service_account_token_secret(karmada.IMPERSONATOR_SERVICE_ACCOUNT, namespace)),
    ]
    for kind, desired in plan:
        outcomes.append(resources.ensure(member, kind, desired, check_mode))


def wait_for_token(member, service_account, namespace, timeout):
    """(data, recreated): the ServiceAccount's token Secret once the token controller has filled it in.

    A Secret the token controller removed meanwhile (its ServiceAccount was re-created, so its token
    was void) is created again, as karmadactl does; ``recreated`` says so.
    """
    found = {"recreated": False}

    def filled():
        account = resources.get(member, SERVICE_ACCOUNT, service_account, namespace)
        secret = resources.get(member, SECRET, service_account, namespace)
        if account is None:
            return False, "ServiceAccount %s/%s does not exist" % (namespace, service_account)
        if secret is None:
            resources.ensure(member, SECRET, karmada.service_account_token_secret(service_account, namespace))
            found["recreated"] = True
            return False, "the token Secret was missing and has been created again"
        annotations = secret["metadata"].get("annotations") or {}
        if not (secret.get("data") or {}).get(karmada.TOKEN_KEY):
            return False, "no token in the Secret yet"
        if annotations.get(karmada.SERVICE_ACCOUNT_UID_ANNOTATION) != account["metadata"]["uid"]:
            return False, "the Secret's token belongs to an earlier ServiceAccount of that name"
        found["data"] = secret["data"]
        return True, None
    try:
        resources.wait_until(filled, timeout, "the token of ServiceAccount %s/%s on %s"
                             % (namespace, service_account, member.label), interval=TOKEN_POLL)
    except WaitTimeout as exc:
        raise FleetError("%s; the member's kube-controller-manager must run its serviceaccount-token controller"
                         % exc.msg, **exc.details)
    return found["data"], found["recreated"]


def _credentials(member, member_outcomes, params, check_mode, hide):
    """(cluster Secret data, impersonator Secret data) for the hub, base64 encoded.

    A token Secret created again while waiting replaces its outcome in ``member_outcomes``.
    """
    namespace, timeout = params["cluster_namespace"], params["wait_timeout"]
    tokens = {}
    for index, outcome in enumerate(member_outcomes):
        if outcome.kind is SECRET:
            account = outcome.name
            if check_mode:
                tokens[account] = (outcome.before or {}).get("data") or {}
                continue
            tokens[account], recreated = wait_for_token(member, account, namespace, timeout)
            if recreated:
                member_outcomes[index] = Outcome(SECRET, account, namespace, "created", outcome.before)
    for data in tokens.values():
        if data.get(karmada.TOKEN_KEY):
            hide(data[karmada.TOKEN_KEY])
            hide(base64.b64decode(data[karmada.TOKEN_KEY]).decode("utf-8", "replace"))
    cluster_token = tokens[karmada.service_account_name(params["cluster_name"])]
    impersonator_token = tokens[karmada.IMPERSONATOR_SERVICE_ACCOUNT]
    # The CA the member connection trusts, else the cluster's root CA the token controller stored.
    ca = member.ca_pem
    ca = base64.b64encode(ca.encode()).decode() if ca else cluster_token.get("ca.crt")
    if not ca and not check_mode:
        raise FleetError("cannot tell which CA signs the API server of %s: set ca_cert in the member option"
                         % member.label)
    return ({karmada.CA_KEY: ca or PLANNED, karmada.TOKEN_KEY: cluster_token.get(karmada.TOKEN_KEY) or PLANNED},
            {karmada.TOKEN_KEY: impersonator_token.get(karmada.TOKEN_KEY) or PLANNED})


def join(hub, member, params, check_mode=False, hide=lambda value: None, warn=lambda message: None, clusters=None):
    """Create or reconcile everything a Push member needs; return the module result.

    ``params`` holds the module options; ``hide(value)`` is called with every token read from the
    member so the caller can keep it out of any output. A failure after a write reports ``changed``
    and names what this run wrote (:func:`resources.failed_after`). A run that creates the Cluster holds
    the member's :class:`RegistrationLock` until it has, and compares with the hub again under it: with a fresh list
    of the hub's Clusters, whatever ``clusters`` (the hub's Clusters as the caller listed them, for the first
    comparison) said.
    """
    validate(params)
    name, namespace = params["cluster_name"], params["cluster_namespace"]
    cluster_id = cluster_identity.cluster_id(member)
    existing = registered_cluster(hub, name, cluster_id, member, clusters)
    lock = None
    if existing is None and not check_mode:
        lock = RegistrationLock(member, name, interval=params.get("wait_sleep") or 1)
        lock.acquire(params["wait_timeout"])

    member_outcomes, hub_outcomes = [], []
    groups = [("member", member_outcomes), ("hub", hub_outcomes)]
    try:
        try:
            if lock is not None:  # read again under the Lease: another run may have registered the member meanwhile
                existing = registered_cluster(hub, name, cluster_id, member)
            _ensure_member(member, name, namespace, check_mode, params["wait_timeout"], member_outcomes)
            cluster_data, impersonator_data = _credentials(member, member_outcomes, params, check_mode, hide)

            hub_outcomes.append(ensure_namespace(hub, namespace, check_mode, params["wait_timeout"]))
            cluster_outcome = resources.ensure(hub, CLUSTER, desired_cluster(params, cluster_id, member, existing), check_mode)
            hub_outcomes.append(cluster_outcome)
            owner = cluster_outcome.after
            for secret_name, data in ((name, cluster_data), (karmada.impersonator_secret_name(name), impersonator_data)):
                hub_outcomes.append(resources.ensure(hub, SECRET, karmada.hub_secret(secret_name, namespace, data, owner),
                                                     check_mode))
            # the record only hub administrators can write: what cluster_prune trusts (hub_record.py)
            hub_outcomes.append(hub_record.ensure(hub, "karmada", name, cluster_id, check_mode, cluster_namespace=namespace))
        finally:
            if lock is not None:
                warning = lock.release()
                if warning:
                    warn(warning)
        cluster = cluster_outcome.after
        if params.get("wait") and not check_mode:
            cluster = _wait_until_ready(hub, name, params, cluster)
    except FleetError as exc:
        raise _failed_after(exc, groups, "written")
    return _result(groups, cluster=resources.presentable(cluster), cluster_id=cluster_id,
                   diff=_diff(name, cluster_outcome.before, cluster_outcome.after))


def _ready_wait(params):
    """The :class:`resources.Wait` of ``wait``: for the ``wait_condition`` (default Ready)."""
    return resources.Wait(timeout=params["wait_timeout"], interval=params.get("wait_sleep") or resources.WAIT_SLEEP,
                          condition=params.get("wait_condition") or resources.wanted_condition("Ready"))


def _not_ready(exc, cluster):
    """The WaitTimeout ``exc`` of a wait for ``cluster`` (the Cluster written), saying what makes it ready."""
    return WaitTimeout("%s. Karmada's controller sets the Cluster's conditions once it reaches %s with the stored token: "
                       "check that karmada-controller-manager runs and that the hub can reach that endpoint"
                       % (exc.msg, cluster["spec"]["apiEndpoint"]), **exc.details)


def _wait_until_ready(hub, name, params, cluster):
    """The Cluster once it has the wanted condition (default Ready) within ``wait_timeout``."""
    try:
        return resources.wait_for_condition(hub, CLUSTER, name, wait=_ready_wait(params))
    except WaitTimeout as exc:
        raise _not_ready(exc, cluster)


def join_each(hub, items, params, connect, check_mode=False, hide=lambda value: None, warn=lambda message: None):
    """Join every cluster of ``items`` (cluster_join's ``per_cluster``: each a ``name``, its ``member`` connection and
    the Cluster's settings of a single join) on the one ``hub`` connection, four at a time (:func:`parallel.fan_out`);
    ``connect(item)`` gives the member's connection. The hub's Clusters are listed once for every join's identity check
    (a join that creates its Cluster lists them again under its member's Lease). With ``wait``, one wait follows for all
    the clusters joined: the hub's Clusters are listed every ``wait_sleep`` seconds until each has the condition, or
    ``wait_timeout`` passed.

    A cluster whose join fails, or whose wait runs out, fails alone; the others are joined. Returns the module result:
    ``changed``, ``clusters`` (``{name: {changed, changes, cluster_id}}``) and ``diff`` (a list, the Cluster of each
    cluster changed). When a cluster failed, raises one FleetError naming each (``<hub>: join failed on N of M clusters:
    name: why; ...``) with ``changed``, ``clusters`` (a failed one's ``changes`` say what its join wrote),
    ``clusters_failed``, ``cluster_errors`` (``{name: what a join of that cluster alone would say}``) and, when a wait
    ran out, ``last_seen`` (``{name: what was last seen}``), so that a task retried while it waits runs again.
    """
    validate_shared(params)  # once for the task, not once per cluster
    names = cluster_names.per_cluster_names(items)
    by_name = dict((item["name"], item) for item in items)
    listed = resources.list_objects(hub, CLUSTER)

    def join_one(name):  # (result, None) or (None, FleetError): fan_out keeps only an error's message
        item = by_name[name]
        options = dict(params, cluster_name=name, wait=False)
        options.update((key, value) for key, value in item.items() if key not in ("name", "member"))
        try:
            return join(hub, connect(item), options, check_mode, hide, warn, clusters=listed), None
        except FleetError as exc:
            return None, exc
    done, _none = parallel.fan_out(join_one, names)  # join_one raises no FleetError
    results = dict((name, result) for name, (result, _exc) in done.items() if result is not None)
    errors = dict((name, exc) for name, (_result, exc) in done.items() if exc is not None)
    if params.get("wait") and not check_mode and results:
        errors.update(_wait_until_all_ready(hub, results, params))
    clusters = {}
    for name in names:
        result = results.get(name) or errors[name].details  # a failed join: what it wrote before the failure
        clusters[name] = {"changed": bool(result.get("changed")), "changes": result.get("changes") or [],
                          "cluster_id": result.get("cluster_id")}
    changed = any(one["changed"] for one in clusters.values())
    if errors:
        failed = sorted(errors)
        last_seen = dict((name, errors[name].details["last_seen"]) for name in failed if isinstance(errors[name], WaitTimeout))
        raise FleetError("%s: join failed on %d of %d clusters: %s" % (
            hub.label, len(failed), len(names), "; ".join("%s: %s" % (name, errors[name].msg) for name in failed)),
            changed=changed and not check_mode, clusters=clusters, clusters_failed=failed,
            cluster_errors=dict((name, errors[name].msg) for name in failed), **({"last_seen": last_seen} if last_seen else {}))
    return dict(changed=changed, clusters=clusters,
                diff=[results[name]["diff"] for name in names if name in results and results[name]["changed"]])


def _wait_until_all_ready(hub, results, params):
    """``{name: WaitTimeout}`` of the clusters of ``results`` (``{name: its join's result}``) whose Cluster has not the
    ``wait_condition`` within ``wait_timeout``; the hub's Clusters listed once per look."""
    wait = _ready_wait(params)
    pending = {}

    def all_met():
        listed = dict((obj["metadata"]["name"], obj) for obj in resources.list_objects(hub, CLUSTER))
        pending.clear()
        for name in results:
            met, detail = resources.condition_met(listed.get(name), wait.condition)
            if not met:
                pending[name] = detail
        return not pending, "; ".join("%s: %s" % item for item in sorted(pending.items()))
    try:
        resources.wait_until(all_met, wait.timeout, "the Clusters on %s" % hub.label, interval=wait.interval)
    except WaitTimeout:
        pass
    errors = {}
    for name, detail in pending.items():
        result = results[name]
        exc = _not_ready(resources.timed_out(wait.timeout, resources.awaited_condition(hub, CLUSTER, name, wait.condition),
                                             detail), result["cluster"])
        written = [change for change in result["changes"] if not change.endswith(": unchanged")]
        errors[name] = resources.failed_after(exc, written, "written", changes=result["changes"])
    return errors


def _diff(name, before, after):
    """The Cluster before and after, the headers naming it (``Cluster/<name>`` on the hub)."""
    header = "hub %s" % CLUSTER.ref(name)
    return {"before": resources.presentable(before) or {}, "after": resources.presentable(after) or {},
            "before_header": header, "after_header": header}


def _result(groups, **result):
    """The module result; ``groups`` are (where, outcomes) in the order they happened.

    Each change line names the cluster it happened on: ``member Namespace/karmada-cluster: created``.
    """
    outcomes = [(where, o) for where, group in groups for o in group]
    return dict(result, changed=any(o.changed for _where, o in outcomes),
                changes=["%s %s" % (where, o.summary()) for where, o in outcomes])


def _failed_after(exc, groups, verb):
    """``exc`` as the failure of a run that wrote the outcomes in ``groups``: ``changed`` and ``changes`` say what it
    did, and its message names what was ``verb`` before it (so a retried task reports the change of this attempt)."""
    written = ["%s %s" % (where, o.summary()) for where, outcomes in groups for o in outcomes if o.changed]
    return resources.failed_after(exc, written, verb, changes=_result(groups)["changes"])


def remove_finalizers(cluster, kind, obj, finalizers=None):
    """Drop ``finalizers`` (all when None) from ``obj``; an :class:`Outcome` ``updated``, or None if nothing to do."""
    metadata = obj["metadata"]
    name, namespace = metadata["name"], metadata.get("namespace")
    for _attempt in range(resources.CONFLICT_RETRIES):
        current = obj["metadata"].get("finalizers") or []
        keep = [f for f in current if finalizers is not None and f not in finalizers]
        if keep == current:
            return None
        patch = {"metadata": {"finalizers": keep, "resourceVersion": obj["metadata"]["resourceVersion"]}}
        try:
            after = cluster.request("PATCH", kind.path(namespace, name), body=patch, content_type=MERGE_PATCH)
        except NotFound:
            return None
        except Conflict:
            obj = resources.get(cluster, kind, name, namespace)
            if obj is None:
                return None
            continue
        return Outcome(kind, name, namespace, "updated", obj, after)
    raise FleetError("%s: %s kept changing while its finalizers were being removed; try again"
                     % (cluster.label, kind.ref(name, namespace)))


def release_cluster(hub, name):
    """Remove the finalizers that hold a deleted Cluster, in Karmada's order (docs/architecture.md 4.3).

    The execution controller's finalizer on the Works in ``karmada-es-<cluster>``, then that namespace
    (its finalizers removed, deleted), then the cluster controller's finalizer on the Cluster.
    """
    outcomes = []
    execution_space = karmada.execution_namespace(name)
    for work in resources.list_objects(hub, WORK, execution_space):
        outcomes.append(remove_finalizers(hub, WORK, work, [karmada.EXECUTION_FINALIZER]))
    space = resources.get(hub, NAMESPACE, execution_space)
    if space is not None:
        outcomes.append(remove_finalizers(hub, NAMESPACE, space))
        if not space["metadata"].get("deletionTimestamp"):
            outcomes.append(resources.delete(hub, NAMESPACE, execution_space))
    cluster = resources.get(hub, CLUSTER, name)
    if cluster is not None:
        outcomes.append(remove_finalizers(hub, CLUSTER, cluster, [karmada.CLUSTER_FINALIZER]))
    return [o for o in outcomes if o is not None]


def delete_cluster(hub, name, params, check_mode, outcomes):
    """Delete the Cluster and wait until Karmada released it (with ``force``, release it); ``outcomes`` get each step."""
    outcome = resources.delete(hub, CLUSTER, name, check_mode=check_mode)
    outcomes.append(outcome)
    if outcome.action != "deleted" or check_mode:
        return
    timeout = params["wait_timeout"]
    try:
        resources.wait_until_gone(hub, CLUSTER, name, timeout=timeout)
    except WaitTimeout as exc:
        if not params.get("force"):
            raise WaitTimeout("%s. Karmada's controller removes its finalizers once it has cleaned up the member; check "
                              "that karmada-controller-manager runs, or re-run with force=true to remove them"
                              % exc.msg, **exc.details)
        outcomes += release_cluster(hub, name)
        resources.wait_until_gone(hub, CLUSTER, name, timeout=timeout)


def unjoin(hub, member, params, check_mode=False, warn=lambda message: None):
    """Remove a Push member: the Cluster (waiting for Karmada to release it), hub Secrets, member objects.

    ``member`` may be None: the member objects then stay, with a warning through ``warn``.
    """
    validate(params)
    name, namespace = params["cluster_name"], params["cluster_namespace"]
    existing = resources.get(hub, CLUSTER, name)
    spec = (existing or {}).get("spec") or {}
    if existing is not None and spec.get("syncMode") != "Push":
        raise FleetError("Cluster '%s' is registered in %s mode; unregister it with multicluster.fleet.cluster_register "
                         "state=absent" % (name, spec.get("syncMode")))
    cluster_id = spec.get("id")
    if member is not None:
        try:
            cluster_id = cluster_identity.cluster_id(member)
        except ClusterError as exc:
            raise FleetError("%s; to unjoin without cleaning up the member, leave out the member option" % exc.msg,
                             **exc.details)
        if spec.get("id") and spec["id"] != cluster_id:
            raise FleetError("Cluster '%s' on the hub is cluster id %s, but the member credentials reach cluster id %s; "
                             "refusing to clean up a different cluster" % (name, spec["id"], cluster_id))

    hub_outcomes, member_outcomes = [], []
    groups = [("hub", hub_outcomes), ("member", member_outcomes)]
    try:
        delete_cluster(hub, name, params, check_mode, hub_outcomes)
        for secret_name in (name, karmada.impersonator_secret_name(name)):
            hub_outcomes.append(resources.delete(hub, SECRET, secret_name, namespace, check_mode=check_mode))
        hub_outcomes.append(hub_record.delete(hub, "karmada", name, check_mode))
        if member is None:
            warn("no member credentials given: the member objects of '%s' (namespace %s, ServiceAccounts, ClusterRole and "
                 "ClusterRoleBinding %s) stay on the member cluster" % (name, namespace, karmada.cluster_role_name(name)))
        else:
            role = karmada.cluster_role_name(name)
            for kind, object_name, object_namespace in (
                    (CLUSTER_ROLE_BINDING, role, None), (CLUSTER_ROLE, role, None),
                    (SERVICE_ACCOUNT, karmada.service_account_name(name), namespace), (NAMESPACE, namespace, None)):
                resources.delete(member, kind, object_name, object_namespace, check_mode,
                                 resources.Wait(timeout=params["wait_timeout"]), record=member_outcomes.append)
    except FleetError as exc:
        raise _failed_after(exc, groups, "deleted")
    return _result(groups, cluster=resources.presentable(existing), cluster_id=cluster_id, diff=_diff(name, existing, None))
