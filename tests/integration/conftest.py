"""Fixtures for integration tests against the lab (tests/lab/lab.py): real control planes on loopback.

The session-scoped ``lab`` fixture starts hub, member1 and member2 in a temporary directory and stops
them when the session ends. To iterate quickly, start a lab once and point the tests at it::

    python tests/lab/lab.py up --dir /tmp/fleet-lab
    FLEET_LAB_DIR=/tmp/fleet-lab pytest tests/integration
    python tests/lab/lab.py down --dir /tmp/fleet-lab

A lab reused that way is left running. Tests share the clusters, so they create uniquely named
objects and remove what they create.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lab"))

import lab as fleet_lab  # noqa: E402  (tests/lab is not a package)


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """The running Lab: clusters hub, member1, member2; see ``Lab.clusters`` for their details."""
    existing = os.environ.get("FLEET_LAB_DIR")
    if existing:
        running = fleet_lab.Lab.load(existing)
        down = [name for name, (ready, _detail) in running.status().items() if not ready]
        if down:
            pytest.exit(f"FLEET_LAB_DIR={existing}: cluster(s) {', '.join(down)} not answering", returncode=1)
        yield running
        return
    started = fleet_lab.Lab(str(tmp_path_factory.mktemp("lab")))
    started.up(fleet_lab.DEFAULT_CLUSTERS)
    try:
        yield started
    finally:
        started.down()
