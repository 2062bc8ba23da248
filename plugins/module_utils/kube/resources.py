# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading and reconciling objects: ensure, delete and wait, with check mode and diffs.

Kinds are described once (:class:`Kind`), with their group/version/plural, so every request goes to
a known path. ``ensure`` creates what is missing, merge-patches what differs in the fields we set
and leaves alone what already matches; in check mode the API server's dry run answers instead.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import copy
import decimal
import math
import re
import time
from urllib.parse import quote

from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError, Conflict, Gone, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout

# A DNS-1123 label: the names of namespaces, and of member clusters.
DNS1123_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")

CONFLICT_RETRIES = 5
MERGE_PATCH = "application/merge-patch+json"
# Metadata the server owns; left out of diffs and comparisons.
SERVER_METADATA = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink")
MASKED = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
# The wait options' defaults, as kubernetes.core has them (seconds between checks; condition statuses).
WAIT_SLEEP = 5
CONDITION_STATUSES = ("True", "False", "Unknown")
# How many pending items a wait message names before it summarizes the rest.
PENDING_SHOWN = 10


class Kind:
    """An API resource at a known path: ``Kind("v1", "Secret", "secrets", namespaced=True)``."""

    def __init__(self, api_version, kind, plural, namespaced):
        self.api_version = api_version
        self.kind = kind
        self.plural = plural
        self.namespaced = namespaced

    def path(self, namespace=None, name=None, subresource=None):
        """The REST path of the collection, or of one object (and its subresource)."""
        base = "/api/v1" if self.api_version == "v1" else "/apis/" + self.api_version
        if self.namespaced:
            if not namespace:
                if name:
                    raise FleetError("%s %s needs a namespace" % (self.kind, name))
            else:
                base += "/namespaces/" + quote(namespace, safe="")
        base += "/" + self.plural
        if name:
            base += "/" + quote(name, safe="")
            if subresource:
                base += "/" + subresource
        return base

    def ref(self, name, namespace=None):
        """``Kind/namespace/name`` (or ``Kind/name``) for messages and change lists."""
        return "/".join([self.kind] + ([namespace] if self.namespaced and namespace else []) + [name])

    def __repr__(self):
        return "Kind(%s %s)" % (self.api_version, self.kind)


NAMESPACE = Kind("v1", "Namespace", "namespaces", False)
SECRET = Kind("v1", "Secret", "secrets", True)
CONFIG_MAP = Kind("v1", "ConfigMap", "configmaps", True)
SERVICE_ACCOUNT = Kind("v1", "ServiceAccount", "serviceaccounts", True)
CLUSTER_ROLE = Kind("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False)
CLUSTER_ROLE_BINDING = Kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False)
ROLE = Kind("rbac.authorization.k8s.io/v1", "Role", "roles", True)
ROLE_BINDING = Kind("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True)
CSR = Kind("certificates.k8s.io/v1", "CertificateSigningRequest", "certificatesigningrequests", False)
# What the agents of both engines ask for in their CSRs: a client certificate from the kube-apiserver-client
# signer. karmada.agent_csr requests exactly these; csr.check approves no other signer and no other usage.
CSR_SIGNER = "kubernetes.io/kube-apiserver-client"
CSR_CLIENT_AUTH = "client auth"
CSR_USAGES = ("digital signature", "key encipherment", CSR_CLIENT_AUTH)
DEPLOYMENT = Kind("apps/v1", "Deployment", "deployments", True)
CRD = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False)


def kinds_by_type(*kinds):
    """``{(apiVersion, kind): Kind}`` for the given kinds, the lookup manifests are resolved with."""
    return dict(((k.api_version, k.kind), k) for k in kinds)


# The core kinds by (apiVersion, kind); engine kinds live in karmada.py and ocm.py.
KINDS = kinds_by_type(NAMESPACE, SECRET, CONFIG_MAP, SERVICE_ACCOUNT, CLUSTER_ROLE, CLUSTER_ROLE_BINDING, ROLE,
                      ROLE_BINDING, CSR, DEPLOYMENT, CRD)


class Outcome:
    """What one ensure/delete did: ``action`` is created, updated, unchanged, deleted or absent."""

    def __init__(self, kind, name, namespace, action, before=None, after=None):
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self.action = action
        self.before = before
        self.after = after
        self.current = None  # the object as last read while waiting for it, if it was waited for

    @property
    def changed(self):
        return self.action in ("created", "updated", "deleted")

    @property
    def ref(self):
        return self.kind.ref(self.name, self.namespace)

    def summary(self):
        """``Kind/namespace/name: action``, the line modules return in their change lists."""
        return "%s: %s" % (self.ref, self.action)

    def diff(self):
        """Ansible's ``diff`` for this object: before/after without server-owned noise or secret values."""
        return {"before": presentable(self.before) or {}, "after": presentable(self.after) or {}}


def presentable(obj):
    """A copy of ``obj`` fit for results and diffs: server-owned metadata dropped, Secret values masked."""
    if not obj:
        return obj
    obj = copy.deepcopy(obj)
    metadata = obj.get("metadata") or {}
    for key in SERVER_METADATA:
        metadata.pop(key, None)
    (metadata.get("annotations") or {}).pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if obj.get("kind") == "Secret":
        for key in ("data", "stringData"):
            if obj.get(key):
                obj[key] = dict((k, MASKED) for k in obj[key])
    return obj


def contains(actual, desired):
    """True when every field of ``desired`` is present in ``actual`` with the same value.

    Mappings are compared key by key (extra keys in ``actual`` are fine: the server adds defaults),
    lists element by element and must have the same length, scalars by equality. A ``None`` in
    ``desired`` asks for the field to be absent, as ``null`` does in a JSON merge patch.
    """
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(
            actual.get(k) is None if v is None else k in actual and contains(actual[k], v) for k, v in desired.items())
    if isinstance(desired, list):
        return (isinstance(actual, list) and len(actual) == len(desired)
                and all(contains(a, d) for a, d in zip(actual, desired)))
    return actual == desired


def _body(kind, desired):
    body = copy.deepcopy(desired)
    body.setdefault("apiVersion", kind.api_version)
    body.setdefault("kind", kind.kind)
    return body


def dry_run_query(check_mode):
    """The query of a write: the API server's dry run in check mode."""
    return {"dryRun": "All"} if check_mode else None


def get(cluster, kind, name, namespace=None):
    """The object, or ``None`` when it does not exist."""
    try:
        return cluster.request("GET", kind.path(namespace, name))
    except NotFound:
        return None


def list_objects(cluster, kind, namespace=None, label_selector=None, field_selector=None):
    """Items of a kind (all namespaces when ``namespace`` is None for namespaced kinds)."""
    query = {"labelSelector": label_selector or None, "fieldSelector": field_selector or None}
    answer = cluster.request("GET", kind.path(namespace), query=query)
    return answer.get("items") or []


def ensure(cluster, kind, desired, check_mode=False, current=None):
    """Make the object carry the fields of ``desired``; return an :class:`Outcome`.

    Missing: created. Present with every desired field equal: unchanged, no write. Otherwise one
    JSON merge patch with the desired fields, guarded by the ``resourceVersion`` read just before;
    a conflict (someone else wrote in between) is retried with a fresh read. In check mode the
    writes are server-side dry runs, so ``after`` is what the server would store. ``current`` is the
    object as the caller has just read it, which takes the place of the first read.
    """
    metadata = desired.get("metadata") or {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not name:
        raise FleetError("%s without metadata.name" % kind.kind)
    body = _body(kind, desired)
    for attempt in range(CONFLICT_RETRIES):
        existing = current if current is not None and attempt == 0 else get(cluster, kind, name, namespace)
        if existing is None:
            try:
                created = cluster.request("POST", kind.path(namespace), body=body, query=dry_run_query(check_mode))
            except Conflict:
                continue  # created concurrently: reconcile against it
            except NotFound:
                if not check_mode:
                    raise
                created = body  # the namespace itself is only planned in this check-mode run
            return Outcome(kind, name, namespace, "created", None, created)
        if contains(existing, body):
            return Outcome(kind, name, namespace, "unchanged", existing, existing)
        patch = copy.deepcopy(body)
        patch["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        try:
            updated = cluster.request("PATCH", kind.path(namespace, name), body=patch,
                                      query=dry_run_query(check_mode), content_type=MERGE_PATCH)
        except Conflict:
            continue
        return Outcome(kind, name, namespace, "updated", existing, updated)
    raise FleetError("%s: %s kept changing while it was being updated (%d conflicts); try again"
                     % (cluster.label, kind.ref(name, namespace), CONFLICT_RETRIES))


class Wait:
    """The wait options (doc fragment ``multicluster.fleet.wait``) as one value: whether to wait (``enabled``, the
    ``wait`` option), for at most ``timeout`` seconds (``wait_timeout``), looking every ``interval`` seconds
    (``wait_sleep``), and, for waits on a condition, for which (``condition``, a ``wait_condition``: a
    :func:`wanted_condition` or, for a module that parses its own, the option as given; None: the waiter's default).
    """

    def __init__(self, enabled=True, timeout=60, interval=1.0, condition=None):
        self.enabled = enabled
        self.timeout = timeout
        self.interval = interval
        self.condition = condition

    @classmethod
    def from_params(cls, params):
        """The wait options of a module's ``params`` (``wait_condition`` only where the module has it)."""
        return cls(params["wait"], params["wait_timeout"], params["wait_sleep"], params.get("wait_condition"))


NO_WAIT = Wait(enabled=False)


def delete(cluster, kind, name, namespace=None, check_mode=False, wait=NO_WAIT, record=None):
    """Delete the object; ``absent`` when it was not there. With ``wait`` (a :class:`Wait` that is ``enabled``) wait
    until it is gone.

    ``record`` (a callable) is given the outcome before any wait, so that a run whose wait times out still reports
    the deletion (:func:`failed_after`).
    """
    outcome = Outcome(kind, name, namespace, "absent")
    existing = get(cluster, kind, name, namespace)
    if existing is not None:
        try:
            if not check_mode:
                cluster.request("DELETE", kind.path(namespace, name),
                                body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
            outcome = Outcome(kind, name, namespace, "deleted", existing, None)
        except NotFound:
            pass
    if record:
        record(outcome)
    if wait.enabled and outcome.changed and not check_mode:
        wait_until_gone(cluster, kind, name, namespace, wait.timeout, wait.interval)
    return outcome


def failed_after(exc, written, verb, **details):
    """``exc`` as the failure of a run that changed ``written`` (change lines) before it: the message names them
    (``<verb> before the failure: ...``), ``changed`` says so, and ``details`` (say, every outcome) join the result."""
    if not written:  # the error itself, saying that nothing changed
        exc.details.update(details, changed=False)
        return exc
    msg = "%s; %s before the failure: %s" % (exc.msg, verb, ", ".join(written))
    error = WaitTimeout if isinstance(exc, WaitTimeout) else FleetError
    return error(msg, **dict(exc.details, changed=True, **details))


def wait_until_gone(cluster, kind, name, namespace=None, timeout=60, interval=1.0):
    """Wait until the object no longer exists (checked every ``interval`` seconds); on timeout say which finalizers
    still hold it."""
    def gone():
        obj = get(cluster, kind, name, namespace)
        if obj is None:
            return True, None
        finalizers = (obj.get("metadata") or {}).get("finalizers") or []
        return False, "finalizers: %s" % ", ".join(finalizers) if finalizers else "still present"
    wait_until(gone, timeout, "%s to be deleted on %s" % (kind.ref(name, namespace), cluster.label), interval=interval)


def condition(obj, condition_type):
    """The status condition of that type, or ``None``."""
    for item in ((obj or {}).get("status") or {}).get("conditions") or []:
        if item.get("type") == condition_type:
            return item
    return None


def conditions_of(obj):
    """The object's status conditions, each reduced to type/status/reason/message/lastTransitionTime."""
    keys = ("type", "status", "reason", "message", "lastTransitionTime")
    return [dict((k, c.get(k)) for k in keys) for c in ((obj or {}).get("status") or {}).get("conditions") or []]


def condition_is(obj, condition_type, status="True"):
    item = condition(obj, condition_type)
    return item is not None and item.get("status") == status


def wanted_condition(condition_type, status="True", reason=None):
    """A ``wait_condition`` as kubernetes.core spells it: ``{"type", "status", "reason"}`` (reason None: any)."""
    return {"type": condition_type, "status": status, "reason": reason}


def describe_condition(wanted):
    """``Ready=True``, or ``Ready=True (reason Joined)`` when a reason is wanted, for messages."""
    text = "%s=%s" % (wanted["type"], wanted.get("status") or "True")
    return text + (" (reason %s)" % wanted["reason"] if wanted.get("reason") else "")


def condition_met(obj, wanted):
    """``(done, detail)``: whether ``obj`` has the ``wanted`` condition (:func:`wanted_condition`).

    As kubernetes.core's ``wait_condition``: the condition of that type must have that status and,
    when a reason is wanted, that reason. ``detail`` says what the object has instead.
    """
    if obj is None:
        return False, "the object does not exist"
    item = condition(obj, wanted["type"])
    if item is None:
        return False, "no %s condition yet" % wanted["type"]
    status, reason = wanted.get("status") or "True", wanted.get("reason")
    if item.get("status") == status and (not reason or item.get("reason") == reason):
        return True, None
    return False, "%s=%s (%s: %s)" % (wanted["type"], item.get("status"), item.get("reason"), item.get("message"))


def awaited_condition(cluster, kind, name, wanted, namespace=None):
    """What a wait for the ``wanted`` condition of an object awaits, as its timeout says it:
    ``<Kind/name> on <cluster> to have <condition>``."""
    return "%s on %s to have %s" % (kind.ref(name, namespace), cluster.label, describe_condition(wanted))


def wait_for_condition(cluster, kind, name, namespace=None, wait=None):
    """Wait until the object has the ``wait.condition`` (:func:`wanted_condition`; default ``Ready=True``) within
    ``wait.timeout`` seconds (default 120); return the object."""
    seen = {}
    wait = wait or Wait(timeout=120)
    wanted = wait.condition or wanted_condition("Ready")

    def met():
        obj = seen["obj"] = get(cluster, kind, name, namespace)
        return condition_met(obj, wanted)
    wait_until(met, wait.timeout, awaited_condition(cluster, kind, name, wanted, namespace), interval=wait.interval)
    return seen["obj"]


_QUANTITY_RE = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?\Z")
_QUANTITY_SUFFIXES = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
                      "n": decimal.Decimal("1e-9"), "u": decimal.Decimal("1e-6"), "m": decimal.Decimal("1e-3"), None: 1,
                      "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18}


def quantity(text, option):
    """The value of a Kubernetes quantity (``500m``, ``1Gi``, ``2``) as a Decimal; FleetError naming ``option`` otherwise."""
    match = _QUANTITY_RE.match(str(text).strip())
    if not match:
        raise FleetError("%s: %r is not a Kubernetes quantity (such as 500m, 2, 128Mi or 1Gi)" % (option, text))
    number, suffix = decimal.Decimal(match.group(1)), match.group(2)
    if suffix and suffix[0] in "eE" and len(suffix) > 1:
        return number.scaleb(int(suffix[1:]))
    return number * _QUANTITY_SUFFIXES[suffix]


def check_requests_within_limits(requests, limits, option):
    """FleetError naming ``option`` when a resource request exceeds its limit (every Pod would be refused)."""
    for name, request in sorted((requests or {}).items()):
        if name in (limits or {}) and quantity(request, "%s requests.%s" % (option, name)) > quantity(
                limits[name], "%s limits.%s" % (option, name)):
            raise FleetError("%s: the %s request %s exceeds its limit %s; Kubernetes refuses such a container"
                             % (option, name, request, limits[name]))


def check_duration(option, value, least=0):
    """FleetError unless the duration option ``value`` (seconds; None: unset) is at least ``least``.

    Negative durations are refused everywhere, as ``bootstrap_token`` refuses a negative ``ttl``.
    """
    if value is None or value >= least:
        return
    if least == 0:
        raise FleetError("%s must not be negative, got %r" % (option, value))
    raise FleetError("%s must be at least %d second%s, got %r" % (option, least, "" if least == 1 else "s", value))


def check_wait_options(params):
    """Refuse a negative ``wait_timeout`` and a ``wait_sleep`` under a second among a module's options."""
    check_duration("wait_timeout", params.get("wait_timeout"))
    check_duration("wait_sleep", params.get("wait_sleep"), least=1)


def shown_pending(pending):
    """The first :data:`PENDING_SHOWN` of ``pending`` (what a wait still waits for), ``; ``-joined, and how many more."""
    shown = "; ".join(pending[:PENDING_SHOWN])
    if len(pending) > PENDING_SHOWN:
        shown += "; and %d more" % (len(pending) - PENDING_SHOWN)
    return shown


def wait_until(check, timeout, what, interval=1.0, clock=time.monotonic, sleep=time.sleep):
    """Call ``check()`` -> ``(done, detail)`` until done or ``timeout`` seconds pass.

    Raises :class:`WaitTimeout` saying what was awaited, for how long, and the last detail seen.
    """
    deadline = clock() + timeout
    while True:
        done, detail = check()
        if done:
            return
        if clock() >= deadline:
            raise timed_out(timeout, what, detail)
        sleep(min(interval, max(0.0, deadline - clock())))


# How a wait reads the time and spends it (a test gives a fake one).
Timer = collections.namedtuple("Timer", "clock sleep")
REAL_TIME = Timer(time.monotonic, time.sleep)


def watch_until(cluster, kind, name, check, wait, what, namespace=None, timer=REAL_TIME):
    """Wait until ``check(obj)`` -> ``(done, detail)`` holds for the object ``name`` (``obj`` None while it does not
    exist), for at most ``wait.timeout`` seconds (a :class:`Wait`); return the object as last seen.

    Follows the object with a watch: it is listed once (by name), then each of its changes arrives as the API server
    sends it, so a wait costs two requests however long it lasts, where :func:`wait_until` reads every
    ``wait.interval`` seconds. A watch the server ends early, breaks off, refuses for now (429) or starts from a version
    it no longer has is followed by another list after at most ``wait.interval`` seconds; credentials that may not list
    or watch the kind make the wait read the object every ``wait.interval`` seconds. Raises :class:`WaitTimeout` as
    :func:`wait_until` does.
    """
    deadline = timer.clock() + wait.timeout
    path, query = kind.path(namespace), {"fieldSelector": "metadata.name=%s" % name}
    watchable = True
    while True:
        obj, version = _read_named(cluster, kind, name, namespace, query if watchable else None)
        watchable = version is not None
        done, detail = check(obj)
        if done:
            return obj
        remaining = deadline - timer.clock()
        if remaining <= 0:
            raise timed_out(wait.timeout, what, detail)
        if watchable:
            try:
                for event, item in cluster.watch(path, version, query, timeout_seconds=int(math.ceil(remaining))):
                    if event in ("ADDED", "MODIFIED", "DELETED"):
                        obj = None if event == "DELETED" else item
                        done, detail = check(obj)
                        if done:
                            return obj
            except Gone:
                pass
            except ClusterError as exc:  # 403: read every interval; a watch broken off or refused for now: list again
                if exc.status not in (0, 403, 429):
                    raise
                watchable = exc.status != 403
        timer.sleep(min(wait.interval, max(0.0, deadline - timer.clock())))


def _read_named(cluster, kind, name, namespace, query):
    """The object ``name`` (None when it does not exist) and the resourceVersion to watch it from: listed with ``query``
    (its name's field selector) when given, else (or where the credentials may not list the kind) read, with no version
    (None)."""
    if query:
        try:
            listed = cluster.request("GET", kind.path(namespace), query=query)
            return next(iter(listed.get("items") or []), None), (listed.get("metadata") or {}).get("resourceVersion") or ""
        except ClusterError as exc:
            if exc.status != 403:
                raise
    return get(cluster, kind, name, namespace), None


def timed_out(timeout, what, detail):
    """The WaitTimeout of a wait for ``what`` that ran out after ``timeout`` seconds, ``detail`` last seen."""
    return WaitTimeout("timed out after %ss waiting for %s; last seen: %s" % (timeout, what, detail), last_seen=detail)
