"""Unit tests for register.discover: how long token discovery retries before it reports a missing signature.

A fake clock stands in for time: each sleep advances it, so the retry schedule is checked exactly,
without waiting and without depending on how fast the machine is.
"""

import functools

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.registrar import DISCOVERY_RETRY_INTERVAL, discover
from register_fakes import registration_of
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

TOKEN_ID = "abcdef"
TOKEN = TOKEN_ID + ".0123456789abcdef"
HUB_URL = "https://hub.example:6443"
MISSING = ("no signature for token id %s in %s: the token is unknown, expired or not allowed to sign"
           % (TOKEN_ID, bootstrap.CLUSTER_INFO))


class FakeClock:
    """Monotonic time that only moves when something sleeps."""

    def __init__(self):
        self.now = 0.0
        self.naps = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0
        self.naps.append(seconds)
        self.now += seconds


class UnsignedHub:
    """Stands in for bootstrap.discover_hub on a hub whose cluster-info never gets a signature for the token
    (an expired token), or gets one after ``signed_after`` seconds of the fake clock."""

    def __init__(self, clock, signed_after=None):
        self.clock = clock
        self.signed_after = signed_after
        self.attempts = []  # (time, server, token) of each discovery attempt

    def __call__(self, server_url, token, **kwargs):
        self.attempts.append((self.clock.now, server_url, token))
        if self.signed_after is None or self.clock.now < self.signed_after:
            raise bootstrap.MissingSignature(MISSING)
        return {"server": server_url, "ca_pem": "CA", "ca_pins": [], "kubeconfig": "..."}


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(resources, "wait_until", functools.partial(resources.wait_until, clock=fake.monotonic))
    return fake


def registration(discovery_timeout):
    return registration_of("karmada", "member1", hub_apiserver=HUB_URL, token=TOKEN, unsafe_skip_ca_verification=True,
                           discovery_timeout=discovery_timeout)


@pytest.mark.parametrize("timeout, naps", [
    (1, [1]),
    (2, [2]),
    (5, [2, 2, 1]),
    (30, [2] * 15),
])
def test_an_expired_token_is_retried_until_discovery_timeout_then_fails(clock, timeout, naps):
    hub = UnsignedHub(clock)
    with pytest.raises(FleetError) as exc_info:
        discover(registration(timeout), hub, sleep=clock.sleep)
    # One attempt at the start and one after every sleep, the sleeps spaced by the retry interval
    # and ending exactly at discovery_timeout; the last attempt is made at the deadline.
    assert clock.naps == naps
    assert all(nap <= DISCOVERY_RETRY_INTERVAL for nap in clock.naps)
    assert clock.now == timeout
    assert len(hub.attempts) == len(naps) + 1
    assert [at for at, server, token in hub.attempts][-1] == timeout
    assert all((server, token) == (HUB_URL, TOKEN) for at, server, token in hub.attempts)
    assert exc_info.value.msg == ("%s (checked for %ss: create a fresh token with multicluster.fleet.bootstrap_token)"
                                  % (MISSING, timeout))


def test_a_zero_discovery_timeout_tries_once():
    hub = UnsignedHub(FakeClock())
    naps = []
    with pytest.raises(FleetError, match=r"not allowed to sign \(checked for 0s"):
        discover(registration(0), hub, sleep=naps.append)
    assert len(hub.attempts) == 1 and naps == []


def test_discovery_stops_retrying_once_the_signature_appears(clock):
    hub = UnsignedHub(clock, signed_after=3)
    found = discover(registration(30), hub, sleep=clock.sleep)
    assert found["server"] == HUB_URL
    assert [at for at, server, token in hub.attempts] == [0, 2, 4] and clock.naps == [2, 2]
