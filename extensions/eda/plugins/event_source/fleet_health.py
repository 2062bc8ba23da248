# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_health: an Event-Driven Ansible source of the health of a fleet's member clusters.

It watches the hub - Karmada ``Cluster`` or OCM ``ManagedCluster`` objects and their Leases - and emits one event per
transition of a member: ``joined``, ``ready``, ``not_ready``, ``lease_expired``, ``removed``, and, from a periodic check
of the members whose connections it is given, ``certificate_expiring`` and ``version_skew``. A transition is emitted
once it has held for ``settle_seconds``. docs/self_healing.md describes the events and the rulebooks that act on them.

Arguments:
    engine:           karmada or ocm (required)
    kubeconfig, context, host, api_key, validate_certs, ca_cert, client_cert, client_key, proxy, impersonate_user,
    impersonate_groups:
                      the hub's connection, as the collection's modules take it; without kubeconfig, context and host,
                      the K8S_AUTH_* environment variables supply it
    label_selector:   watch only the members whose labels match (a Kubernetes label selector)
    settle_seconds:   how long a new state must hold before it is emitted (default 30)
    unready_seconds:  emit still_not_ready once for a member not ready for this long (default 0: never)
    members:          member name to its connection (a dict of the same options; the environment is never read for
                      it): cluster_diagnose reads the member too, and the periodic check runs for it
    check_seconds:    the periodic check's interval (default 3600; 0 turns it off)
    certificate_days: certificate_expiring when the agent's certificate has fewer days left (default 30)

Example:
    - name: Fleet health
      hosts: all
      sources:
        - multicluster.fleet.fleet_health:
            engine: karmada
            kubeconfig: /etc/fleet/hub.kubeconfig
            settle_seconds: 30
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import json
import logging
import os
import sys
import threading

try:
    from ansible_collections.multicluster.fleet.plugins.module_utils import engines
    from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client
except ImportError:  # ansible-rulebook runs this file by its path: the collection's root is not on sys.path then
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 7)))
    from ansible_collections.multicluster.fleet.plugins.module_utils import engines
    from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import fleet_watch, health
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

LOGGER = logging.getLogger("multicluster.fleet.fleet_health")
DEFAULT_CHECK_SECONDS = 3600


def settings(args):
    """The hub's connection and the Monitor's settings from the source's arguments; FleetError for a wrong one."""
    engine = engines.get(args.get("engine"))  # FleetError naming the choices
    hub = client.get_cluster(client.connection_options(args), role="hub")
    members = {}
    for name, options in (args.get("members") or {}).items():
        engine.validate_cluster_name(name)
        members[name] = client.get_cluster(client.connection_options(options or {}, environment=False), name=name,
                                           role="member")
    numbers = {}
    for key, default in (("settle_seconds", health.DEFAULT_SETTLE_SECONDS), ("unready_seconds", 0),
                         ("check_seconds", DEFAULT_CHECK_SECONDS), ("certificate_days", health.DEFAULT_CERTIFICATE_DAYS)):
        value = args.get(key, default)
        try:  # a rulebook's "{{ variable }}" arrives as text
            numbers[key] = float(default if value in (None, "") else value)
        except (TypeError, ValueError):
            numbers[key] = -1
        if numbers[key] < 0 or isinstance(value, bool):
            raise FleetError("fleet_health: %s must be a number of at least 0, not %r" % (key, value))
    return hub, engine, dict(numbers, members=members, label_selector=args.get("label_selector"))


async def main(queue, args):
    """Put the fleet's events into ``queue`` (ansible-rulebook's) until cancelled."""
    hub, engine, found = settings(args)
    loop = asyncio.get_running_loop()

    def emit(event):
        LOGGER.info("event: %s", json.dumps(event, sort_keys=True))  # one line each (ansible-rulebook -v shows it)
        asyncio.run_coroutine_threadsafe(queue.put(event), loop)

    monitor = fleet_watch.Monitor(hub, engine, emit, LOGGER.warning, found)
    stop = threading.Event()
    failure = []

    def run():
        try:
            monitor.run(stop)
        except Exception as exc:  # the thread's end must reach ansible-rulebook, not vanish with the thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="fleet_health", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            await asyncio.sleep(0.5)
    finally:
        stop.set()
    if failure:
        raise failure[0]


if __name__ == "__main__":
    # Try the source without ansible-rulebook: each event is written to standard output, as the EDA docs' mock queue
    # does. python fleet_health.py karmada [kubeconfig [context]]

    class MockQueue(asyncio.Queue):
        async def put(self, item):
            sys.stdout.write("%s\n" % item)
            sys.stdout.flush()

    logging.basicConfig(level=logging.INFO)
    given = dict(zip(("engine", "kubeconfig", "context"), sys.argv[1:]))
    asyncio.run(main(MockQueue(), dict(given, settle_seconds=5)))
