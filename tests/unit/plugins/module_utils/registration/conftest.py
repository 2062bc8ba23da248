"""Fixtures of the registration tests."""

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.registration import registrar
from .lease_fakes import Time

REAL_WAIT_UNTIL = registrar.resources.wait_until


@pytest.fixture
def time_(monkeypatch):
    """The fake time, which every wait of register.py (resources.wait_until) follows too, polling each second."""
    fake = Time()

    def wait_until(check, timeout, what, interval=1.0, clock=None, sleep=None):
        return REAL_WAIT_UNTIL(check, timeout, what, interval=1.0, clock=fake.monotonic, sleep=fake.advance)
    monkeypatch.setattr(registrar.resources, "wait_until", wait_until)
    return fake
