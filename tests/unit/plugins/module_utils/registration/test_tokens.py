"""Bootstrap token Secrets and ServiceAccount tokens on a fake hub (tokens.py)."""

import base64
import copy
import datetime
import functools
import json

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, lease_lock, tokens
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import Conflict, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

NOW = datetime.datetime(2026, 11, 22, 4, 0, 0, tzinfo=datetime.timezone.utc)
KARMADA = [bootstrap.KARMADA_DEFAULT_GROUP]
BOTH = ["authentication", "signing"]
SA_PATH = resources.SERVICE_ACCOUNT.path(tokens.OCM_NAMESPACE, tokens.OCM_BOOTSTRAP_SA)


class TokenHub:
    """The shared FakeCluster plus PUT (replace), TokenRequest and TokenReview as the API server answers them."""

    def __init__(self, fake):
        self.fake = fake
        self.issued = []
        self.reviews = {}  # token -> user name the API server authenticates it as

    def __getattr__(self, name):
        return getattr(self.fake, name)

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        dry = (query or {}).get("dryRun") == "All"
        if method == "PUT":
            self.calls.append((method, path, dict(query or {})))
            current = self.objects.get(path)
            if current is None:
                raise NotFound("not found", 404)
            if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                raise Conflict("stale", 409, "Conflict")
            stored = copy.deepcopy(body)
            stored["metadata"]["resourceVersion"] = str(next(self.fake._versions))
            if not dry:
                self.objects[path] = stored
            return copy.deepcopy(stored)
        if method == "POST" and path == SA_PATH + "/token":
            self.calls.append((method, path, dict(query or {})))
            if SA_PATH not in self.objects:
                raise NotFound("serviceaccounts \"agent-registration-bootstrap\" not found", 404)
            seconds = body["spec"]["expirationSeconds"]
            token = jwt(NOW + datetime.timedelta(seconds=seconds), "issued-%d" % len(self.issued))
            self.issued.append(token)
            return {"status": {"token": token, "expirationTimestamp": _stamp(NOW + datetime.timedelta(seconds=seconds))}}
        if method == "POST" and path == tokens.TOKEN_REVIEW_PATH:
            self.calls.append((method, path, dict(query or {})))
            user = self.reviews.get(body["spec"]["token"])
            return {"status": {"authenticated": True, "user": {"username": user}} if user else {"user": {}, "error": "invalid"}}
        return self.fake.request(method, path, body, query, content_type, timeout)

    def secret(self, token_id):
        return self.objects.get(resources.SECRET.path("kube-system", "bootstrap-token-" + token_id))

    def store_token(self, token_id, secret, **kwargs):
        kwargs.setdefault("now", NOW)
        kwargs.setdefault("ttl_seconds", 3600)
        kwargs.setdefault("groups", KARMADA)
        return self.add(resources.SECRET, bootstrap.token_secret(token_id, secret, **kwargs))


def _stamp(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def jwt(expiry, subject="x"):
    def part(data):
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    claims = {"sub": subject}
    if expiry is not None:
        claims["exp"] = int(expiry.timestamp())
    return "%s.%s.%s" % (part({"alg": "RS256"}), part(claims), "c2lnbmF0dXJl")


def data_of(secret):
    return dict((k, base64.b64decode(v).decode()) for k, v in secret["data"].items())


@pytest.fixture
def hub(fake_cluster):
    return TokenHub(fake_cluster)


# --- durations ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value, seconds", [
    ("24h", 86400), ("1h30m", 5400), ("90s", 90), ("2h0m5s", 7205), ("15m", 900),
    (0, 0), ("0", 0), (3600, 3600), ("45", 45), (" 10m ", 600),
])
def test_parse_duration(value, seconds):
    assert tokens.parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["", "1d", "-5", -5, True, "h", "5x", "1.5h", None, "m30"])
def test_parse_duration_refuses(value):
    with pytest.raises(FleetError, match="ttl must"):
        tokens.parse_duration(value)


@pytest.mark.parametrize("seconds, text", [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (59, "59s"), (60, "1m"), (3599, "59m"), (3600, "1h"),
    (86399, "23h"), (86400, "1d"), (3 * 86400 + 5, "3d"), (364 * 86400, "364d"), (400 * 86400, "1y"),
])
def test_human_duration_matches_kubernetes(seconds, text):
    assert tokens.human_duration(seconds) == text


# --- describing and listing ----------------------------------------------------------------------


def test_describe_has_the_token_list_columns_and_no_secret():
    secret = bootstrap.token_secret("abcdef", "0123456789abcdef", ttl_seconds=7200, now=NOW, description="edge",
                                    groups=KARMADA)
    info = tokens.describe(secret, now=NOW + datetime.timedelta(seconds=60))
    assert info == {
        "token_id": "abcdef", "secret_name": "bootstrap-token-abcdef", "description": "edge", "usages": BOTH,
        "groups": KARMADA, "expiration": "2026-11-22T06:00:00Z", "expired": False, "ttl": "1h", "ttl_seconds": 7140,
    }
    assert "0123456789abcdef" not in json.dumps(info)


def test_describe_forever_and_expired():
    forever = tokens.describe(bootstrap.token_secret("abcdef", "0123456789abcdef", ttl_seconds=0), now=NOW)
    assert (forever["ttl"], forever["ttl_seconds"], forever["expiration"], forever["expired"]) == ("<forever>", None, None, False)
    old = tokens.describe(bootstrap.token_secret("abcdef", "0123456789abcdef", ttl_seconds=60, now=NOW),
                          now=NOW + datetime.timedelta(hours=1))
    assert (old["ttl"], old["expired"], old["ttl_seconds"]) == ("<invalid>", True, -3540)


def test_list_tokens_sorted_skips_other_secrets_and_reports_broken_ones(hub):
    hub.store_token("zzzzzz", "0123456789abcdef")
    hub.store_token("aaaaaa", "fedcba9876543210", ttl_seconds=0, groups=[])
    hub.add(resources.SECRET, {"metadata": {"name": "other", "namespace": "kube-system"}, "type": "Opaque",
                               "data": {"token-secret": base64.b64encode(b"0123456789abcdef").decode()}})
    broken = bootstrap.token_secret("bbbbbb", "1111111111111111")
    broken["metadata"]["name"] = "bootstrap-token-cccccc"
    hub.add(resources.SECRET, broken)
    found, problems = tokens.list_tokens(hub, now=NOW)
    assert [t["token_id"] for t in found] == ["aaaaaa", "zzzzzz"]
    assert len(problems) == 1 and "bootstrap-token-cccccc" in problems[0] and "cluster 'hub'" in problems[0]
    assert "1111111111111111" not in json.dumps([found, problems])
    assert ("GET", "/api/v1/namespaces/kube-system/secrets",
            {"labelSelector": None, "fieldSelector": "type=bootstrap.kubernetes.io/token"}) in hub.calls


def test_list_one_token(hub):
    hub.store_token("abcdef", "0123456789abcdef")
    assert [t["token_id"] for t in tokens.list_tokens(hub, "abcdef", now=NOW)[0]] == ["abcdef"]
    assert tokens.list_tokens(hub, "zzzzzz", now=NOW) == ([], [])
    with pytest.raises(FleetError, match="6 characters"):
        tokens.list_tokens(hub, "ABCDEF")


# --- which token serves a request ------------------------------------------------------------------


def _info(**kwargs):
    secret = bootstrap.token_secret("abcdef", "0123456789abcdef", **dict(dict(now=NOW, ttl_seconds=3600, groups=KARMADA), **kwargs))
    return tokens.describe(secret, now=NOW)


def test_mismatches_none_for_a_fitting_token():
    assert tokens.mismatches(_info(), KARMADA, BOTH, None, 3600, NOW) == []
    # a token created earlier with the same ttl expires sooner than a new one would: still fits
    assert tokens.mismatches(_info(), KARMADA, BOTH, "", 7200, NOW) == []
    assert tokens.mismatches(_info(ttl_seconds=0), KARMADA, BOTH, None, 0, NOW) == []


@pytest.mark.parametrize("kwargs, want, fragment", [
    ({}, dict(groups=[bootstrap.OCM_DEFAULT_GROUP]), "extra groups are"),
    ({}, dict(usages=["signing"]), "usages are authentication,signing, not signing"),
    ({"description": "x"}, {}, "description differs"),
    ({}, dict(ttl=0), "but a token that never expires was asked for"),
    ({"ttl_seconds": 0}, {}, "never expires, but a ttl of 3600s"),
    ({"ttl_seconds": 86400}, {}, "later than the requested ttl allows"),
    ({"ttl_seconds": 1, "now": NOW - datetime.timedelta(hours=1)}, {}, "expired at"),
])
def test_mismatches_reasons(kwargs, want, fragment):
    request = dict(groups=KARMADA, usages=BOTH, description=None, ttl=3600)
    request.update(want)
    reasons = tokens.mismatches(_info(**kwargs), request["groups"], request["usages"], request["description"],
                                request["ttl"], NOW)
    assert any(fragment in reason for reason in reasons), reasons


# --- ensure ---------------------------------------------------------------------------------------


def ensure(hub, token=None, token_id=None, check_mode=False, create=True, **request):
    want = dict(groups=KARMADA, usages=BOTH, ttl_seconds=3600, now=NOW)
    want.update(request)
    return tokens.ensure_token(hub, tokens.token_request(**want), token, token_id, check_mode, create)


def test_creates_a_random_token_and_reuses_it(hub):
    done = ensure(hub, description="edge")
    token_id, secret = bootstrap.parse_token(done["token"])
    assert done["action"] == "created" and done["summary"] == "Secret/kube-system/bootstrap-token-%s: created" % token_id
    stored = data_of(hub.secret(token_id))
    assert stored["token-secret"] == secret and stored["expiration"] == "2026-11-22T05:00:00Z"
    assert stored["description"] == "edge" and stored["auth-extra-groups"] == KARMADA[0]
    header = "Secret/kube-system/bootstrap-token-%s" % token_id
    assert done["diff"] == {"before": {}, "after": {"token_id": token_id, "description": "edge", "usages": BOTH,
                                                    "groups": KARMADA, "expiration": "2026-11-22T05:00:00Z"},
                            "before_header": header, "after_header": header}
    again = ensure(hub, description="edge", now=NOW + datetime.timedelta(minutes=10))
    assert again["action"] == "unchanged" and again["token"] == done["token"]
    assert again["diff"]["before"] == again["diff"]["after"]
    other = ensure(hub, description="another purpose")
    assert other["action"] == "created" and other["token"] != done["token"]


def test_reuse_prefers_the_token_that_lives_longest(hub):
    hub.store_token("aaaaaa", "0123456789abcdef", ttl_seconds=600)
    hub.store_token("bbbbbb", "0123456789abcdef", ttl_seconds=1800)
    assert ensure(hub)["token"] == "bbbbbb.0123456789abcdef"


TOKEN_LEASE_PATH = lease_lock.LEASE.path("kube-system", tokens.TOKEN_LOCK)


def test_a_new_token_is_created_under_the_hubs_lease(hub):
    done = ensure(hub, description="edge")
    writes = [(method, path) for method, path, dummy in hub.calls if method != "GET"]
    assert writes == [("POST", lease_lock.LEASE.path("kube-system")), ("POST", resources.SECRET.path("kube-system")),
                      ("DELETE", TOKEN_LEASE_PATH)]
    assert done["action"] == "created" and TOKEN_LEASE_PATH not in hub.objects


def test_a_second_run_takes_the_token_the_first_one_created_meanwhile(hub, monkeypatch):
    now = datetime.datetime.now(datetime.timezone.utc)
    hub.add(lease_lock.LEASE, {"metadata": {"name": tokens.TOKEN_LOCK, "namespace": "kube-system"},
                               "spec": {"holderIdentity": "runner-a", "leaseDurationSeconds": 60,
                                        "acquireTime": lease_lock.micro_time(now), "renewTime": lease_lock.micro_time(now)}})
    naps = []

    def first_run_finishes(seconds):  # runner-a creates its token and gives the Lease back
        naps.append(seconds)
        hub.store_token("aaaaaa", "0123456789abcdef", description="edge")
        hub.objects.pop(TOKEN_LEASE_PATH)
    clock = lease_lock.SystemClock()
    clock.sleep = first_run_finishes
    monkeypatch.setattr(tokens, "LeaseLock", functools.partial(lease_lock.LeaseLock, clock=clock))
    done = ensure(hub, description="edge")
    assert done["action"] == "unchanged" and done["token"] == "aaaaaa.0123456789abcdef" and naps == [1.0]
    assert len([path for path in hub.objects if "bootstrap-token-" in path]) == 1 and TOKEN_LEASE_PATH not in hub.objects


@pytest.mark.parametrize("check_mode", [False, True])
def test_without_create_a_missing_token_is_reported_not_made(hub, check_mode):
    with pytest.raises(FleetError, match="has no valid bootstrap token described 'edge'") as caught:
        ensure(hub, description="edge", create=False, check_mode=check_mode)
    assert caught.value.details["missing"] is True
    assert [call for call in hub.calls if call[0] != "GET"] == []


def test_check_mode_create_stores_nothing_and_invents_no_token(hub):
    done = ensure(hub, check_mode=True)
    assert done["action"] == "created" and done["token"] is None and done["info"]["token_id"] is None
    assert hub.objects == {}
    assert [c for c in hub.calls if c[0] == "POST"][0][2] == {"dryRun": "All"}


def test_given_token_is_created_kept_and_corrected(hub):
    token = "abcdef.0123456789abcdef"
    assert ensure(hub, token=token)["action"] == "created"
    assert ensure(hub, token=token)["action"] == "unchanged"
    changed = ensure(hub, token="abcdef.ffffffffffffffff")
    assert changed["action"] == "updated" and changed["token"] == "abcdef.ffffffffffffffff"
    assert changed["reasons"] == ["the stored token secret differs from the given token"]
    assert data_of(hub.secret("abcdef"))["token-secret"] == "ffffffffffffffff"


def test_check_mode_with_a_given_token_returns_it(hub):
    done = ensure(hub, token="abcdef.0123456789abcdef", check_mode=True)
    assert (done["action"], done["token"]) == ("created", "abcdef.0123456789abcdef") and hub.objects == {}


def test_token_id_expired_gets_a_new_secret(hub):
    hub.store_token("abcdef", "0123456789abcdef", ttl_seconds=60, now=NOW - datetime.timedelta(hours=1))
    done = ensure(hub, token_id="abcdef")
    assert done["action"] == "updated" and done["reasons"][0].startswith("expired at")
    token_id, secret = bootstrap.parse_token(done["token"])
    assert token_id == "abcdef" and secret != "0123456789abcdef"
    assert data_of(hub.secret("abcdef")) == dict(data_of(hub.secret("abcdef")), **{
        "token-secret": secret, "expiration": "2026-11-22T05:00:00Z"})
    assert done["diff"]["before"]["expiration"] == "2026-11-22T03:01:00Z"


def test_token_id_with_other_properties_keeps_its_secret_and_drops_old_keys(hub):
    hub.store_token("abcdef", "0123456789abcdef", description="old")
    done = ensure(hub, token_id="abcdef", ttl_seconds=0, groups=[], usages=["signing"])
    assert done["action"] == "updated" and done["token"] == "abcdef.0123456789abcdef"
    stored = data_of(hub.secret("abcdef"))
    # replaced, not merged: no expiration, description, extra groups or authentication usage remain
    assert stored == {"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-signing": "true"}


def test_token_id_missing_is_created_with_a_random_secret(hub):
    done = ensure(hub, token_id="abcdef")
    assert done["action"] == "created" and done["token"].startswith("abcdef.")
    assert ensure(hub, token_id="abcdef")["token"] == done["token"]
    assert ensure(hub, token_id="zzzzzz", check_mode=True)["token"] is None


def test_check_mode_update_writes_nothing(hub):
    hub.store_token("abcdef", "0123456789abcdef", description="old")
    before = copy.deepcopy(hub.objects)
    done = ensure(hub, token_id="abcdef", check_mode=True)
    assert done["action"] == "updated" and hub.objects == before
    assert ("PUT", "/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef", {"dryRun": "All"}) in hub.calls


def test_invalid_token_secret_is_rewritten(hub):
    broken = hub.store_token("abcdef", "0123456789abcdef")
    broken["data"]["token-secret"] = base64.b64encode(b"").decode()
    done = ensure(hub, token_id="abcdef")
    assert done["action"] == "updated" and "not a valid bootstrap token" in done["reasons"][0]
    assert done["diff"]["before"] == {}


def test_a_foreign_secret_with_the_name_is_refused(hub):
    hub.add(resources.SECRET, {"metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"}, "type": "Opaque"})
    with pytest.raises(FleetError, match="exists but is not a bootstrap token .type Opaque.; delete it"):
        ensure(hub, token_id="abcdef")


def test_generated_id_collision_is_retried(hub, monkeypatch):
    hub.store_token("aaaaaa", "0123456789abcdef", description="taken")
    generated = iter(["aaaaaa.1111111111111111", "bbbbbb.2222222222222222"])
    monkeypatch.setattr(bootstrap, "generate_token", lambda: next(generated))
    assert ensure(hub)["token"] == "bbbbbb.2222222222222222"


@pytest.mark.parametrize("kwargs", [
    dict(token="abcdef.0123456789ABCDEF"), dict(token="abcdef0123456789abcdef"), dict(token_id="ABCDEF"),
    dict(token="abcdef.0123456789abcdef", groups=["system:masters"]),
])
def test_bad_input_never_echoes_the_secret(hub, kwargs):
    with pytest.raises(FleetError) as info:
        ensure(hub, **kwargs)
    assert "0123456789" not in info.value.msg and "0123456789" not in str(info.value.details)


# --- delete ---------------------------------------------------------------------------------------


def test_delete_by_id_or_full_token(hub):
    hub.store_token("abcdef", "0123456789abcdef")
    checked = tokens.delete_token(hub, "abcdef", check_mode=True)
    assert checked["action"] == "deleted" and hub.secret("abcdef") is not None
    done = tokens.delete_token(hub, "abcdef.0123456789abcdef")
    assert done["action"] == "deleted" and hub.secret("abcdef") is None
    assert done["diff"]["before"]["token_id"] == "abcdef" and done["diff"]["after"] == {}
    assert tokens.delete_token(hub, "abcdef")["action"] == "absent"
    with pytest.raises(FleetError, match="6 characters"):
        tokens.delete_token(hub, "abc")
    with pytest.raises(FleetError) as info:
        tokens.delete_token(hub, "abcdef.0123456789ABCDEX")
    assert "0123456789" not in info.value.msg


# --- ServiceAccount tokens ------------------------------------------------------------------------


@pytest.fixture
def sa_hub(hub):
    hub.add(resources.SERVICE_ACCOUNT, {"metadata": {"name": tokens.OCM_BOOTSTRAP_SA, "namespace": tokens.OCM_NAMESPACE}})
    return hub


def test_service_account_token_is_issued(sa_hub):
    done = tokens.service_account_token(sa_hub, 3600, now=NOW)
    assert done["action"] == "issued" and done["token"] == sa_hub.issued[0]
    assert done["expiration"] == "2026-11-22T05:00:00Z"
    assert done["summary"] == "ServiceAccount/open-cluster-management/agent-registration-bootstrap: token issued"
    second = tokens.service_account_token(sa_hub, 3600, now=NOW)
    assert second["token"] != done["token"]  # a TokenRequest always mints a new token


def test_service_account_token_check_mode_issues_nothing(sa_hub):
    done = tokens.service_account_token(sa_hub, 3600, check_mode=True, now=NOW)
    assert (done["action"], done["token"]) == ("issued", None) and sa_hub.issued == []


@pytest.mark.parametrize("check_mode", [False, True])
def test_service_account_missing(hub, check_mode):
    with pytest.raises(FleetError, match="ServiceAccount/open-cluster-management/agent-registration-bootstrap does not"
                                         " exist; create it with multicluster.fleet.hub_registration"):
        tokens.service_account_token(hub, 3600, check_mode=check_mode, now=NOW)


def test_service_account_ttl_minimum(sa_hub):
    with pytest.raises(FleetError, match="at least 10m"):
        tokens.service_account_token(sa_hub, 599, now=NOW)


def test_a_valid_earlier_token_is_kept(sa_hub):
    earlier = jwt(NOW + datetime.timedelta(minutes=50))
    sa_hub.reviews[earlier] = tokens.OCM_BOOTSTRAP_USER
    done = tokens.service_account_token(sa_hub, 3600, token=earlier, now=NOW)
    assert (done["action"], done["token"], done["expiration"]) == ("unchanged", earlier, "2026-11-22T04:50:00Z")
    assert sa_hub.issued == []


@pytest.mark.parametrize("user, expiry, fragment", [
    (None, NOW + datetime.timedelta(minutes=50), "not (or no longer) valid"),
    ("system:serviceaccount:default:other", NOW + datetime.timedelta(minutes=50), "not (or no longer) valid"),
    (tokens.OCM_BOOTSTRAP_USER, NOW + datetime.timedelta(days=2), "later than the requested ttl allows"),
    (tokens.OCM_BOOTSTRAP_USER, None, "has no expiry"),
])
def test_an_unfit_earlier_token_is_replaced(sa_hub, user, expiry, fragment):
    earlier = jwt(expiry)
    if user:
        sa_hub.reviews[earlier] = user
    done = tokens.service_account_token(sa_hub, 3600, token=earlier, now=NOW)
    assert done["action"] == "issued" and done["token"] == sa_hub.issued[0]
    assert fragment in done["reasons"][0] and earlier not in done["reasons"][0]


def test_jwt_expiry_of_garbage():
    assert tokens._jwt_expiry("not-a-jwt") is None
    assert tokens._jwt_expiry("a.###.c") is None
    assert tokens._jwt_expiry(jwt(NOW)) == NOW
