# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why a member cluster is not ready: read the hub (and the member, given its credentials), then decide.

:func:`read_hub` and :func:`read_member` gather plain facts per engine (what the engine objects of ``engines.py`` say
to read); :func:`decide` turns those facts and the current time into one verdict of :data:`VERDICTS`, the evidence for
it and the next step. It is a pure function: every time-based verdict is decided from the timestamps read and ``now``.
Nothing here writes to a cluster.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import csr as csrs
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.bootstrap import CLUSTER_INFO_PATH
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.lease_lock import LEASE

PROBE_TIMEOUT = (5.0, 10.0)  # connect, read (seconds) for the hub address in an agent kubeconfig
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

# The verdicts in their order of precedence (a cause before its symptoms), each with its next step.
VERDICTS = (
    ("member_unreachable", "Check that the member's API server runs and that its connection in the inventory points at "
                           "it, then diagnose again."),
    ("member_mismatch", "The member connection reaches another cluster than the one the hub registered under this name: "
                        "correct the member's connection in the inventory (kubeconfig, context), then diagnose again."),
    ("csr_denied", "The agent's certificate request was denied: delete it so that the agent asks again, then approve the "
                   "new one with multicluster.fleet.csr_accept (site.yml does it for this member)."),
    ("csr_pending", "Approve the agent's certificate request with multicluster.fleet.csr_accept once you have checked "
                    "it is the agent's (site.yml does it for this member)."),
    ("hub_ca_mismatch", "The agent trusts another CA than the hub's, or holds a certificate of another CA: run site.yml "
                        "for this member so that its kubeconfigs name the hub as it is now."),
    ("hub_unreachable_from_agent", "The hub address in the agent's kubeconfig does not answer: set hub_apiserver to the "
                                   "hub's address and run site.yml for this member."),
    ("certificate_expired", "The agent's certificate has expired: run site.yml for this member to renew it."),
    ("agent_not_running", "The agent does not run on the member: look at its Deployment's pods (image, events, logs), "
                          "then run site.yml for this member."),
    ("not_registered", "The hub has no member object of this name: run site.yml for this member."),
    ("rbac_missing", "The hub lacks the RBAC the agent needs: run site.yml for this member to write it again (OCM: check "
                     "that the hub's registration controller runs)."),
    ("lease_expired", "The agent stopped renewing its Lease on the hub: look at the agent on the member (its logs, its "
                      "connection to the hub), or diagnose again with the member's credentials."),
    ("not_ready", "The hub reports the member not ready for another reason: read its conditions and the agent's logs."),
    ("healthy", "Nothing to do."),
)
NAMES = tuple(name for name, _step in VERDICTS)
NEXT_STEPS = dict(VERDICTS)


def parse_time(text):
    """An aware datetime of a Kubernetes timestamp (RFC 3339, with or without fractions), None when there is none."""
    try:
        moment = datetime.datetime.fromisoformat(str(text or "").replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def age(text, now):
    """How long ago ``text`` (a timestamp) was, as kubectl shortens it (``45s``, ``12m``, ``3h``, ``2d``); None when
    unknown. A time in the future is ``in 3h``."""
    moment = parse_time(text)
    if moment is None:
        return None
    seconds = int((now - moment).total_seconds())
    prefix, seconds = ("in ", -seconds) if seconds < 0 else ("", seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size:
            return "%s%d%s" % (prefix, seconds // size, unit)
    return "%s%ds" % (prefix, seconds)


def evidence(obj, field, value, when=None, now=None):
    """One piece of evidence: the object (``Kind/namespace/name``), the field read, its value and, for a timestamp
    ``when``, its age."""
    return {"object": obj, "field": field, "value": value, "age": age(when, now) if when and now else None}


def lease_expired(renew_time, grace_seconds, now):
    """A member's Lease, last renewed at ``renew_time`` (a timestamp, None when never), counts as gone at ``now``: its
    agent has not renewed it for longer than ``grace_seconds``."""
    renewed = parse_time(renew_time)
    return renewed is None or (now - renewed).total_seconds() > grace_seconds


# --- reading -----------------------------------------------------------------------------------------------------


def hub_identity(hub):
    """``(server, ca_pem)`` the hub publishes in ``kube-public/cluster-info``, else those of the connection to it."""
    try:
        info = hub.request("GET", CLUSTER_INFO_PATH)
        parts = pki.read_kubeconfig(((info or {}).get("data") or {}).get("kubeconfig") or "", "hub's cluster-info")
        if parts["server"] and parts["ca_pem"]:
            return parts["server"], parts["ca_pem"]
    except FleetError:
        pass
    return hub.server, hub.ca_pem


def _certificates(pem, what):
    try:
        return pki.load_certificates(pem, what) if pem else []
    except FleetError:
        return []


def agent_csrs(hub, engine, cluster):
    """The CSRs of ``cluster``'s agent (name, state, created), oldest first."""
    found = []
    for item in resources.list_objects(hub, resources.CSR, label_selector=engine.csr_selector([cluster])):
        try:
            common_name = csrs.common_name(item)
        except FleetError:
            common_name = None
        if engine.claims_csr(cluster, item, common_name):
            found.append({"name": csrs.name_of(item), "state": csrs.state(item), "created": item["metadata"].get("creationTimestamp")})
    return sorted(found, key=lambda c: (c["created"] or "", c["name"]))


def _denied_access(hub, engine, cluster):
    """The agent's user and what the hub's authorizer does not let it do of what it needs (SubjectAccessReviews)."""
    user, groups, checks = engine.agent_access(cluster)
    denied = []
    for attributes in checks:
        review = hub.request("POST", SUBJECT_ACCESS_REVIEWS, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups + ["system:authenticated"], "resourceAttributes": attributes}})
        if not ((review or {}).get("status") or {}).get("allowed"):
            denied.append("%s %s%s %s%s" % (
                attributes["verb"], attributes["resource"], "/" + attributes["subresource"] if attributes.get("subresource") else "",
                attributes["name"], " in namespace " + attributes["namespace"] if attributes.get("namespace") else ""))
    return user, denied


def read_hub(hub, engine, cluster):
    """The hub's facts about ``cluster``: its member object, Lease, agent CSRs, the agent's access, its namespace and
    works stuck terminating."""
    engine = engines.get(engine)
    obj = resources.get(hub, engine.member_kind, cluster)
    facts = {"cluster": cluster, "engine": engine.name, "object": engine.member_kind.ref(cluster), "present": obj is not None,
             "push": engine.is_push(obj), "ready": None, "ready_condition": None, "lease": None,
             "csrs": agent_csrs(hub, engine, cluster), "denied_access": [], "agent_user": None, "namespace": None,
             "terminating_works": [], "cluster_id": engine.recorded_cluster_id(obj) if obj is not None else None}
    if obj is not None:
        condition = resources.condition(obj, engine.ready_condition["type"]) or {}
        facts.update(ready=condition.get("status") == "True", ready_condition=dict(
            (key, condition.get(key)) for key in ("type", "status", "reason", "message", "lastTransitionTime")))
    if obj is None or facts["push"]:
        return facts
    namespace, name = engine.agent_lease(cluster)
    lease = resources.get(hub, LEASE, name, namespace)
    facts["lease"] = {"object": LEASE.ref(name, namespace), "present": lease is not None,
                      "renew_time": ((lease or {}).get("spec") or {}).get("renewTime"),
                      "grace_seconds": engine.lease_grace_seconds(obj, lease)}
    facts["agent_user"], facts["denied_access"] = _denied_access(hub, engine, cluster)
    kind, namespace = engine.works_of(cluster)
    facts["namespace"] = {"object": resources.NAMESPACE.ref(namespace),
                          "present": resources.get(hub, resources.NAMESPACE, namespace) is not None}
    if facts["namespace"]["present"]:
        try:
            works = resources.list_objects(hub, kind, namespace)
        except client.NotFound:  # the engine's work API is not served
            works = []
        facts["terminating_works"] = [{"object": kind.ref(w["metadata"]["name"], namespace),
                                       "deleted": w["metadata"]["deletionTimestamp"]}
                                      for w in works if w["metadata"].get("deletionTimestamp")]
    return facts


def _secret_text(secret, key):
    value = ((secret or {}).get("data") or {}).get(key)
    return base64.b64decode(value).decode("utf-8", "replace") if value else None


def probe(server, ca_pem, proxy_url):
    """Why ``server`` does not answer (an HTTPS GET of /version trusting ``ca_pem``), None when it does."""
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": "hub",
                  "clusters": [{"name": "hub", "cluster": dict(
                      server=server, **dict((k, v) for k, v in (("certificate-authority-data", pki.b64(ca_pem or "")),
                                                                ("proxy-url", proxy_url)) if v))}],
                  "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "probe"}}],
                  "users": [{"name": "probe", "user": {}}]}
    try:
        client.get_cluster({"kubeconfig": kubeconfig}, role="hub").request("GET", "/version", timeout=PROBE_TIMEOUT)
    except client.ClusterError as exc:
        return exc.msg if not exc.status else None  # any HTTP answer (401, 403) is an answer
    except FleetError as exc:
        return exc.msg
    return None


def _kubeconfig_facts(ref, text, hub_cas):
    """What an agent kubeconfig (``text``, None when its Secret or key is missing) says, and its client certificate."""
    entry = {"object": ref, "present": bool(text), "server": None, "ca_matches": None, "unreachable": None}
    if not text:
        return entry, None
    try:
        parts = pki.read_kubeconfig(text, "kubeconfig in %s" % ref)
    except FleetError:
        return entry, None
    entry["server"] = parts["server"]
    cas = _certificates(parts["ca_pem"], "kubeconfig CA")
    if hub_cas and cas:
        entry["ca_matches"] = any(ca in hub_cas for ca in cas)
    if parts["server"] and entry["ca_matches"] is not False:
        entry["unreachable"] = probe(parts["server"], parts["ca_pem"], parts["proxy_url"])
    return entry, parts["client_cert_pem"]


def read_member(member, engine, hub_ca_pem):
    """The member's facts, read with ``member`` (a :class:`client.Cluster`): the agent's Deployments, its kubeconfig
    Secrets (whether their CA is the hub's and their hub address answers) and its certificate."""
    engine = engines.get(engine)
    try:
        member.request("GET", "/version", timeout=PROBE_TIMEOUT)
    except client.ClusterError as exc:
        if not exc.status:
            return {"reachable": False, "error": exc.msg}
    namespace = resources.get(member, resources.NAMESPACE, "kube-system")
    facts = {"reachable": True, "status_object": None, "deployments": [], "kubeconfigs": [], "certificate": None,
             "cluster_id": ((namespace or {}).get("metadata") or {}).get("uid"), "server": member.server}
    status_object = None
    if engine.agent_status:
        kind, name = engine.agent_status
        status_object = resources.get(member, kind, name)  # None also when the kind is not served
        condition = resources.condition(status_object, "Available") or {}
        if status_object is not None:
            facts["status_object"] = {"object": kind.ref(name), "available": condition.get("status"),
                                      "message": condition.get("message"), "since": condition.get("lastTransitionTime")}
    layout = engine.agent_layout(status_object)
    if layout is None:
        return facts
    for namespace, name in layout["deployments"]:
        deployment = resources.get(member, resources.DEPLOYMENT, name, namespace)
        status = (deployment or {}).get("status") or {}
        available = resources.condition(deployment, "Available") or {}
        facts["deployments"].append({
            "object": resources.DEPLOYMENT.ref(name, namespace), "present": deployment is not None,
            "ready": "%s/%s" % (status.get("readyReplicas") or 0, ((deployment or {}).get("spec") or {}).get("replicas", 1)),
            "running": bool(status.get("readyReplicas")) and available.get("status") == "True",
            "since": available.get("lastTransitionTime")})
    hub_cas = _certificates(hub_ca_pem, "hub CA")
    secrets, client_certificates = {}, {}
    for namespace, name, key in layout["kubeconfigs"]:
        secret = secrets[(namespace, name)] = resources.get(member, resources.SECRET, name, namespace)
        entry, client_certificates[(namespace, name)] = _kubeconfig_facts(
            resources.SECRET.ref(name, namespace), _secret_text(secret, key), hub_cas)
        facts["kubeconfigs"].append(entry)
    namespace, name, key = layout["certificate"]
    pem = client_certificates.get((namespace, name)) if key is None else _secret_text(secrets.get((namespace, name)), key)
    found = _certificates(pem, "agent certificate")
    if found:
        facts["certificate"] = {"object": resources.SECRET.ref(name, namespace), "not_after": pki.rfc3339(pki.not_after(found[0])),
                                "issuer": pki.describe(found[0])["issuer"],
                                "issued_by_hub": any(pki.issued_by(found[0], ca) for ca in hub_cas) if hub_cas else None}
    return facts


# --- deciding ----------------------------------------------------------------------------------------------------


def _unusable_certificate(member, hub, now):
    """The agent holds no usable certificate: none or an expired one on the member, or (member unknown) the hub has
    no ready member object."""
    if member is None:
        return not hub["ready"]
    cert = member.get("certificate")
    return cert is None or parse_time(cert["not_after"]) <= now


def _rules(hub, member, now):
    """``(verdict, evidence or None)`` in the order of :data:`VERDICTS`."""
    cluster = hub["cluster"]
    newest = hub["csrs"][-1] if hub["csrs"] else None
    kubeconfigs = [k for k in (member or {}).get("kubeconfigs") or () if k["present"] and k["server"]]
    cert = (member or {}).get("certificate")
    # A Pull member object on the hub means an agent on the member, also when the member holds no kubeconfig for it
    agent_expected = not hub["push"] and (bool(kubeconfigs) or hub["present"])
    lease = hub["lease"]

    yield "member_unreachable", member is not None and not member["reachable"] and [
        evidence("cluster %s" % cluster, "API server", member.get("error"))]
    yield "member_mismatch", member is not None and member["reachable"] and hub["cluster_id"] and (
        member.get("cluster_id") != hub["cluster_id"]) and [
        evidence(hub["object"], "cluster id", hub["cluster_id"]),
        evidence("cluster at %s" % member.get("server"), "kube-system namespace UID",
                 "%s: the member connection reaches another cluster" % (member.get("cluster_id") or "unreadable"))]
    if newest and _unusable_certificate(member, hub, now):
        found = [evidence("CertificateSigningRequest/%s" % newest["name"], "status", newest["state"], newest["created"], now)]
        yield "csr_denied", newest["state"] in (csrs.DENIED, csrs.FAILED) and found
        yield "csr_pending", newest["state"] == csrs.PENDING and found
    yield "hub_ca_mismatch", (
        [evidence(k["object"], "certificate-authority-data", "does not hold the hub's CA") for k in kubeconfigs
         if k["ca_matches"] is False]
        + ([evidence(cert["object"], "certificate issuer", "%s, not the hub's CA" % cert["issuer"])]
           if cert and cert["issued_by_hub"] is False else []))
    yield "hub_unreachable_from_agent", [evidence(k["object"], "server", "%s: %s" % (k["server"], k["unreachable"]))
                                         for k in kubeconfigs if k["unreachable"]]
    yield "certificate_expired", cert and parse_time(cert["not_after"]) <= now and [
        evidence(cert["object"], "certificate notAfter", cert["not_after"], cert["not_after"], now)]
    status = (member or {}).get("status_object")
    yield "agent_not_running", agent_expected and member is not None and member["reachable"] and (
        ([] if kubeconfigs else [evidence(k["object"], "data", "absent: the agent has no kubeconfig to reach the hub with")
                                 for k in member["kubeconfigs"] if not k["present"]])
        + [evidence(d["object"], "readyReplicas", d["ready"] if d["present"] else "absent", d.get("since"), now)
           for d in member["deployments"] if not d["running"]]
        + ([evidence(status["object"], "Available", "%s: %s" % (status["available"], status["message"]), status["since"], now)]
           if status and status["available"] != "True" else []))
    yield "not_registered", not hub["present"] and [evidence(hub["object"], "metadata.name", "absent")]
    yield "rbac_missing", hub["denied_access"] and [
        evidence("SubjectAccessReview", "user %s may" % hub["agent_user"], "not " + access) for access in hub["denied_access"]]
    if lease is not None:
        yield "lease_expired", lease_expired(lease["renew_time"], lease["grace_seconds"], now) and [evidence(
            lease["object"], "spec.renewTime", "%s (counts as gone %ss after)" % (lease["renew_time"], lease["grace_seconds"])
            if lease["present"] else "absent", lease["renew_time"], now)]
    condition = hub["ready_condition"] or {}
    said = "%s: %s" % (condition.get("status") or "absent", condition.get("message") or "")
    yield "not_ready", hub["present"] and not hub["ready"] and [
        evidence(hub["object"], "condition %s" % condition.get("type"), said, condition.get("lastTransitionTime"), now)]


def decide(hub, member, now):
    """The verdict on a member from the facts of :func:`read_hub` and :func:`read_member` (None: not read) at ``now`` (an
    aware datetime): ``dict(verdict, evidence, next_step)``, the first rule of :data:`VERDICTS` that holds."""
    for verdict, found in _rules(hub, member, now):
        if found:
            return {"verdict": verdict, "evidence": found, "next_step": NEXT_STEPS[verdict]}
    condition = hub["ready_condition"] or {}
    found = [evidence(hub["object"], "condition %s" % condition.get("type"), condition.get("status"),
                      condition.get("lastTransitionTime"), now)]
    if hub["lease"]:
        found.append(evidence(hub["lease"]["object"], "spec.renewTime", hub["lease"]["renew_time"], hub["lease"]["renew_time"], now))
    return {"verdict": "healthy", "evidence": found, "next_step": NEXT_STEPS["healthy"]}


def context(hub, now):
    """Evidence worth showing whatever the verdict: a missing execution or cluster namespace, works stuck terminating."""
    found = []
    if hub["namespace"] and not hub["namespace"]["present"]:
        found.append(evidence(hub["namespace"]["object"], "metadata.name", "absent"))
    found += [evidence(w["object"], "metadata.deletionTimestamp", w["deleted"], w["deleted"], now)
              for w in hub["terminating_works"]]
    return found


def diagnose(hub, engine, clusters, member_of, now=None):
    """The diagnosis of each of ``clusters`` (names) on ``hub``; ``member_of(name)`` returns the member's connection
    (None when not given; it may raise FleetError, which makes the member unreachable)."""
    pki.require_cryptography()
    now = now or datetime.datetime.now(datetime.timezone.utc)
    for name in clusters:
        engines.get(engine).validate_cluster_name(name)
    hub_server, hub_ca_pem = hub_identity(hub)
    results = []
    for name in clusters:
        hub_facts = read_hub(hub, engine, name)
        try:
            member = member_of(name)
            member_facts = read_member(member, engine, hub_ca_pem) if member is not None else None
        except FleetError as exc:
            member_facts = {"reachable": False, "error": exc.msg}
        result = decide(hub_facts, member_facts, now)
        results.append(dict(result, name=name, member_read=member_facts is not None and member_facts["reachable"],
                            context=context(hub_facts, now)))
    return {"changed": False, "clusters": results, "hub_server": hub_server,
            "verdicts": dict((r["name"], r["verdict"]) for r in results)}
