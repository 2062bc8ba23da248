# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Join credentials on the hub: bootstrap token Secrets and ServiceAccount tokens.

Bootstrap tokens are Secrets ``kube-system/bootstrap-token-<id>`` (built and read by
:mod:`bootstrap`); Kubernetes' tokencleaner deletes them when they expire and its bootstrapsigner
signs ``kube-public/cluster-info`` with them. OCM's default join mode uses instead a TokenRequest
for the ServiceAccount ``open-cluster-management/agent-registration-bootstrap`` (docs/architecture.md 4.1, 4.5).

Token secrets never appear in exception messages or in the descriptions returned here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import datetime
import json
import re

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import Conflict, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.lease_lock import LEASE_DURATION_SECONDS, LeaseLock

# A token that would outlive the requested TTL by more than this is not reused (clock skew allowance).
EXPIRY_SLACK_SECONDS = 60
CREATE_ATTEMPTS = 3
# The Lease (kube-system, on the hub) one run at a time holds to create a join token, and how long another waits for it.
TOKEN_LOCK = "multicluster-fleet-join-token"
TOKEN_LOCK_TIMEOUT = 2 * LEASE_DURATION_SECONDS

# OCM's bootstrap ServiceAccount and the TokenRequest it is issued through.
OCM_NAMESPACE = ocm.OPERATOR_NAMESPACE
OCM_BOOTSTRAP_SA = ocm.BOOTSTRAP_SERVICE_ACCOUNT
OCM_BOOTSTRAP_USER = ocm.BOOTSTRAP_SERVICE_ACCOUNT_USER
MIN_SA_TOKEN_SECONDS = 600  # the API server refuses shorter TokenRequests
TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"

_DURATION_RE = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?\Z")


# --- durations ---------------------------------------------------------------------------------


# The longest TTL: a token's expiration must stay a date (year 9999 at the latest); 100 years is far beyond any use.
MAX_TTL_SECONDS = 100 * 365 * 24 * 3600


def parse_duration(value):
    """Return whole seconds for ``value``: an integer (seconds) or a Go-style duration (``24h``, ``1h30m``, ``90s``).

    ``0`` means "never expires" for bootstrap tokens, as in ``karmadactl token create --ttl 0``.
    """
    if isinstance(value, bool):
        raise FleetError("ttl must be a duration such as 24h, 30m, 90s or a number of seconds, got %r" % (value,))
    if isinstance(value, int):
        seconds = value
    else:
        text = str(value).strip()
        match = _DURATION_RE.fullmatch(text) if text and not text.isdigit() else None
        if text.isdigit():
            seconds = int(text)
        elif match and any(match.groups()):
            hours, minutes, secs = (int(part or 0) for part in match.groups())
            seconds = hours * 3600 + minutes * 60 + secs
        else:
            raise FleetError("ttl must be a duration such as 24h, 30m, 90s or a number of seconds, got %r" % (value,))
    if seconds < 0:
        raise FleetError("ttl must not be negative, got %r" % (value,))
    if seconds > MAX_TTL_SECONDS:
        raise FleetError("ttl %r is longer than %d years, the longest a token's expiration can be written for; use 0 for "
                         "a token that never expires" % (value, MAX_TTL_SECONDS // (365 * 24 * 3600)))
    return seconds


def human_duration(seconds):
    """Kubernetes' short human duration (``45s``, ``12m``, ``23h``, ``6d``, ``2y``), as ``kubectl`` prints it."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 60:
        return "%ds" % max(seconds, 0)
    if seconds < 3600:
        return "%dm" % (seconds // 60)
    hours = seconds // 3600
    if hours < 24:
        return "%dh" % hours
    if hours < 24 * 365:
        return "%dd" % (hours // 24)
    return "%dy" % (hours // (24 * 365))


def _utc_now(now=None):
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return now if now.tzinfo else now.replace(tzinfo=datetime.timezone.utc)


def _rfc3339(moment):
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


# --- bootstrap tokens ----------------------------------------------------------------------------


def _check_id(token_id):
    """Return ``token_id`` when it is a valid token id, else raise FleetError."""
    if not isinstance(token_id, str) or bootstrap.TOKEN_ID_RE.fullmatch(token_id) is None:
        raise FleetError("a bootstrap token id must be 6 characters [a-z0-9]")
    return token_id


def _read_secret(cluster, token_id):
    return resources.get(cluster, resources.SECRET, bootstrap.SECRET_NAME_PREFIX + token_id, bootstrap.SECRET_NAMESPACE)


def describe(secret_dict, now=None):
    """The public description of a bootstrap token Secret: never the token secret.

    Keys: ``token_id``, ``secret_name``, ``description``, ``usages``, ``groups``, ``expiration``
    (RFC 3339 or None for never), ``expired``, ``ttl`` (as ``karmadactl token list`` shows it:
    ``23h``, ``<forever>``, ``<invalid>`` once expired) and ``ttl_seconds`` (None for never).
    """
    now = _utc_now(now)
    info = bootstrap.read_token_secret(secret_dict, now=now)
    expiration = info["expiration"]
    remaining = None if expiration is None else int((expiration - now).total_seconds())
    return {
        "token_id": info["token_id"],
        "secret_name": bootstrap.SECRET_NAME_PREFIX + info["token_id"],
        "description": info["description"],
        "usages": info["usages"],
        "groups": info["groups"],
        "expiration": _rfc3339(expiration),
        "expired": info["expired"],
        "ttl": "<forever>" if remaining is None else human_duration(remaining),
        "ttl_seconds": remaining,
    }


def list_tokens(cluster, token_id=None, now=None):
    """Describe the bootstrap tokens on ``cluster``, sorted by id; return ``(tokens, problems)``.

    ``problems`` are messages about Secrets of the bootstrap token type that are not valid tokens
    (``karmadactl token list`` reports and skips those too). ``token_id`` selects one token.
    """
    if token_id is not None:
        found = _read_secret(cluster, _check_id(token_id))
        secrets = [found] if found else []
    else:
        secrets = resources.list_objects(cluster, resources.SECRET, bootstrap.SECRET_NAMESPACE,
                                         field_selector="type=%s" % bootstrap.SECRET_TYPE)
    described, problems = [], []
    for secret in secrets:
        if secret.get("type") != bootstrap.SECRET_TYPE:
            continue
        try:
            described.append(describe(secret, now))
        except FleetError as exc:
            problems.append("%s: skipped %s" % (cluster.label, exc.msg))
    return sorted(described, key=lambda t: t["token_id"]), problems


def mismatches(info, groups, usages, description, ttl_seconds, now=None):
    """Why the described token does not serve the request (an empty list when it does).

    It must be unexpired, have exactly these usages, extra groups and description, never expire when
    ``ttl_seconds`` is 0, and otherwise expire no later than ``now + ttl_seconds`` (plus a minute).
    """
    now = _utc_now(now)
    reasons = []
    if info["expired"]:
        reasons.append("expired at %s" % info["expiration"])
    if sorted(info["usages"]) != sorted(usages):
        reasons.append("usages are %s, not %s" % (",".join(info["usages"]) or "none", ",".join(sorted(usages))))
    if sorted(info["groups"]) != sorted(groups):
        reasons.append("extra groups are %s, not %s" % (",".join(info["groups"]) or "none", ",".join(groups) or "none"))
    if info["description"] != (description or ""):
        reasons.append("description differs")
    if not ttl_seconds and info["expiration"]:
        reasons.append("expires at %s, but a token that never expires was asked for" % info["expiration"])
    elif ttl_seconds and not info["expiration"]:
        reasons.append("never expires, but a ttl of %ss was asked for" % ttl_seconds)
    elif ttl_seconds and not info["expired"] and info["ttl_seconds"] > ttl_seconds + EXPIRY_SLACK_SECONDS:
        reasons.append("expires at %s, later than the requested ttl allows" % info["expiration"])
    return reasons


def public_view(info):
    """The stable part of a description (what diffs show)."""
    if not info:
        return {}
    return dict((k, info[k]) for k in ("token_id", "description", "usages", "groups", "expiration") if k in info)


def token_request(groups, usages, ttl_seconds, description=None, now=None):
    """What :func:`ensure_token` asks of a bootstrap token: exactly these extra ``groups``, ``usages`` and
    ``description``, expiring ``ttl_seconds`` after ``now`` (default: the current time; 0: never). The keyword
    arguments of :func:`mismatches`."""
    return dict(groups=list(groups), usages=sorted(set(usages)), description=description, ttl_seconds=ttl_seconds,
                now=_utc_now(now))


def ensure_token(cluster, want, token=None, token_id=None, check_mode=False, create=True):
    """Make a bootstrap token that serves ``want`` (:func:`token_request`) exist; return what was done.

    With ``token`` (``<id>.<secret>``) or ``token_id`` that token is the one managed: created when
    missing, left alone when it serves the request (see :func:`mismatches`), otherwise rewritten in
    place (an expired token given only by id gets a new secret). Without either, an existing token
    that serves the request is reused, else a new random token is created - or, with ``create`` false,
    :class:`FleetError` is raised with the detail ``missing=True`` (a member play reading the join
    token the hub play made, before the hub was prepared).

    Returns ``dict(action, token, info, before, reasons, summary, diff)``: ``action`` created /
    updated / unchanged, ``token`` the full token (None when check mode would generate one), ``info``
    the description after the run (no secret), ``before`` the one before, ``reasons`` why it was
    rewritten, ``summary`` the "Kind/ns/name: action" line and ``diff`` before/after without secrets.
    """
    now = want["now"]
    secret = None
    if token is not None:
        token_id, secret = bootstrap.parse_token(token)
    elif token_id is not None:
        _check_id(token_id)

    if token_id is None:
        reused = _reuse(cluster, want)
        if reused:
            return reused
        if not create:
            raise FleetError("%s has no valid bootstrap token%s for groups %s: the hub has not been prepared (or its join "
                             "token expired); run the hub play first (role multicluster.fleet.hub_init)"
                             % (cluster.label, " described %r" % want["description"] if want["description"] else "",
                                ", ".join(want["groups"])),
                             missing=True)
        if check_mode:
            return _create(cluster, None, None, want, check_mode)
        # Two runs that found none would make one each, and their members would bootstrap with different tokens: one
        # run at a time looks again and creates it (a Lease on the hub, as for registrations).
        lock = LeaseLock(cluster, TOKEN_LOCK, "creating a join token", unfinished="no token was created")
        lock.acquire(TOKEN_LOCK_TIMEOUT)
        try:
            return _reuse(cluster, want) or _create(cluster, None, None, want, check_mode)
        finally:
            lock.release()

    existing = _read_secret(cluster, token_id)
    if existing is None:
        return _create(cluster, token_id, secret, want, check_mode)
    if existing.get("type") != bootstrap.SECRET_TYPE:
        raise FleetError("%s: Secret %s/%s exists but is not a bootstrap token (type %s); delete it or choose"
                         " another token id" % (cluster.label, bootstrap.SECRET_NAMESPACE, existing["metadata"]["name"],
                                                existing.get("type")))
    try:
        before = describe(existing, now)
        stored = bootstrap.token_secret_value(existing)
    except FleetError as exc:
        before, stored, reasons = None, None, ["not a valid bootstrap token (%s)" % exc.msg]
    else:
        reasons = mismatches(before, **want)
        if secret is not None and secret != stored:
            reasons.append("the stored token secret differs from the given token")
    if not reasons:
        return _result("unchanged", token_id, stored, before, before, [])
    if secret is None:
        secret = stored if before and not before["expired"] else _new_secret()
    manifest = _manifest(token_id, secret, want)
    manifest["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
    try:
        cluster.request("PUT", resources.SECRET.path(bootstrap.SECRET_NAMESPACE, manifest["metadata"]["name"]),
                        body=manifest, query={"dryRun": "All"} if check_mode else None)
    except Conflict:
        raise FleetError("%s: bootstrap token %s changed while it was being updated; try again"
                         % (cluster.label, token_id))
    return _result("updated", token_id, secret, describe(manifest, now), before, reasons)


def _reuse(cluster, want):
    """The :func:`_result` of reusing the stored token that serves ``want`` (the one expiring last), or None."""
    described, _problems = list_tokens(cluster, now=want["now"])
    fitting = [t for t in described if not mismatches(t, **want)]
    if not fitting:
        return None
    best = max(fitting, key=lambda t: t["expiration"] or "9999")  # never-expiring sorts last
    stored = _read_secret(cluster, best["token_id"])
    return _result("unchanged", best["token_id"], bootstrap.token_secret_value(stored), best, best, [])


def _manifest(token_id, secret, want):
    return bootstrap.token_secret(token_id, secret, ttl_seconds=want["ttl_seconds"], now=want["now"],
                                  description=want["description"], usages=want["usages"], groups=want["groups"])


def _new_secret():
    return bootstrap.parse_token(bootstrap.generate_token())[1]


def _create(cluster, token_id, secret, want, check_mode):
    """Create the token Secret; a random token when ``token_id`` is None (retried on an id collision)."""
    generated = token_id is None
    secret_given = secret is not None
    for _attempt in range(CREATE_ATTEMPTS):
        if generated:
            token_id, secret = bootstrap.parse_token(bootstrap.generate_token())
        elif not secret_given:
            secret = _new_secret()
        manifest = _manifest(token_id, secret, want)
        try:
            cluster.request("POST", resources.SECRET.path(bootstrap.SECRET_NAMESPACE), body=manifest,
                            query={"dryRun": "All"} if check_mode else None)
        except Conflict:
            if not generated:
                raise FleetError("%s: bootstrap token %s was created by someone else meanwhile; run again"
                                 % (cluster.label, token_id))
            continue
        info = describe(manifest, want["now"])
        if check_mode and generated:
            # Nothing was stored: a real run generates its own random token.
            return _result("created", None, None, dict(info, token_id=None, secret_name=None), None, [])
        return _result("created", token_id, secret if secret_given or not check_mode else None, info, None, [])
    raise FleetError("%s: could not find a free bootstrap token id in %d attempts" % (cluster.label, CREATE_ATTEMPTS))


def _result(action, token_id, secret, info, before, reasons):
    ref = resources.SECRET.ref(bootstrap.SECRET_NAME_PREFIX + (token_id or "<generated>"), bootstrap.SECRET_NAMESPACE)
    return {
        "action": action,
        "token": "%s.%s" % (token_id, secret) if token_id and secret else None,
        "info": info,
        "before": before,
        "reasons": reasons,
        "summary": "%s: %s" % (ref, action),
        "diff": {"before": public_view(before), "after": public_view(info), "before_header": ref, "after_header": ref},
    }


def delete_token(cluster, token, check_mode=False):
    """Delete the bootstrap token given by id or as a full token; return what was done.

    Returns ``dict(action, token_id, summary, diff)``; ``action`` is deleted or absent.
    """
    token_id = bootstrap.parse_token(token)[0] if "." in token else _check_id(token)
    outcome = resources.delete(cluster, resources.SECRET, bootstrap.SECRET_NAME_PREFIX + token_id,
                               bootstrap.SECRET_NAMESPACE, check_mode=check_mode)
    try:
        before = describe(outcome.before) if outcome.before else None
    except FleetError:
        before = {"token_id": token_id}
    return {"action": outcome.action, "token_id": token_id, "summary": outcome.summary(),
            "diff": {"before": public_view(before), "after": {}, "before_header": outcome.ref, "after_header": outcome.ref}}


# --- ServiceAccount tokens (OCM) -----------------------------------------------------------------


def _jwt_expiry(token):
    """The ``exp`` claim of a JWT as an aware datetime, or None (no claim, or not a JWT)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        return datetime.datetime.fromtimestamp(int(claims["exp"]), datetime.timezone.utc)
    except (binascii.Error, ValueError, TypeError, KeyError, OverflowError):
        return None


def review_token(cluster, token):
    """Ask the API server who ``token`` authenticates as (TokenReview); the user name or None."""
    answer = cluster.request("POST", TOKEN_REVIEW_PATH, body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
    status = (answer or {}).get("status") or {}
    return (status.get("user") or {}).get("username") if status.get("authenticated") else None


def service_account_token(cluster, ttl_seconds, token=None, check_mode=False, now=None):
    """A token for OCM's bootstrap ServiceAccount, issued by a TokenRequest; return what was done.

    A TokenRequest mints a new token each time and stores nothing, so nothing can be found again
    later. Idempotence therefore works through ``token``: a token from an earlier run that the API
    server still authenticates as the ServiceAccount (TokenReview) and that expires no later than
    the requested TTL allows is returned unchanged; otherwise a new one is issued (changed). In
    check mode nothing is issued (a dry-run TokenRequest would still sign a usable token).

    Returns ``dict(action, token, expiration, reasons, summary)``; ``action`` issued or unchanged.
    """
    now = _utc_now(now)
    if ttl_seconds < MIN_SA_TOKEN_SECONDS:
        raise FleetError("a ServiceAccount token needs a ttl of at least 10m (%ss); the API server refuses shorter"
                         " TokenRequests" % MIN_SA_TOKEN_SECONDS)
    ref = resources.SERVICE_ACCOUNT.ref(OCM_BOOTSTRAP_SA, OCM_NAMESPACE)
    reasons = []
    if token:
        user = review_token(cluster, token)
        expiry = _jwt_expiry(token)
        if user != OCM_BOOTSTRAP_USER:
            reasons.append("the given token is not (or no longer) valid for %s" % OCM_BOOTSTRAP_USER)
        elif expiry is None:
            reasons.append("the given token has no expiry, but a ttl of %ss was asked for" % ttl_seconds)
        elif (expiry - now).total_seconds() > ttl_seconds + EXPIRY_SLACK_SECONDS:
            reasons.append("the given token expires at %s, later than the requested ttl allows" % _rfc3339(expiry))
        else:
            return {"action": "unchanged", "token": token, "expiration": _rfc3339(expiry), "reasons": [],
                    "summary": "%s: token unchanged" % ref}
    missing = FleetError("%s: %s does not exist; create it with multicluster.fleet.hub_registration"
                         " (engine ocm) first" % (cluster.label, ref))
    if check_mode:
        if resources.get(cluster, resources.SERVICE_ACCOUNT, OCM_BOOTSTRAP_SA, OCM_NAMESPACE) is None:
            raise missing
        return {"action": "issued", "token": None, "expiration": None, "reasons": reasons,
                "summary": "%s: token issued" % ref}
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": ttl_seconds}}
    try:
        answer = cluster.request("POST", resources.SERVICE_ACCOUNT.path(OCM_NAMESPACE, OCM_BOOTSTRAP_SA, "token"), body=body)
    except NotFound:
        raise missing
    status = (answer or {}).get("status") or {}
    if not status.get("token"):
        raise FleetError("%s: the TokenRequest for %s returned no token" % (cluster.label, ref))
    return {"action": "issued", "token": status["token"], "expiration": status.get("expirationTimestamp"),
            "reasons": reasons, "summary": "%s: token issued" % ref}
