# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One run at a time: a Lease in ``kube-system`` that a run creates before it starts something two runs must not do
side by side (a member's registration, the hub's join token), renews while it works and deletes when done.

A Lease whose holder stopped renewing it within its duration is taken over, by an update guarded by its
``resourceVersion`` so that one run only wins; the others wait for it, and say whom they waited for.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os
import secrets
import socket
import time

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError, Conflict, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

LEASE = resources.Kind("coordination.k8s.io/v1", "Lease", "leases", True)
LOCK_NAMESPACE = "kube-system"
LEASE_DURATION_SECONDS = 60  # a run renews its Lease every third of this; a Lease not renewed for this long is free
REGISTRATION_LEASE = "multicluster-fleet-registration"


def micro_time(moment):
    """A Lease time (``MicroTime``): ``2027-11-23T04:00:00.123456Z``."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(text):
    try:
        return datetime.datetime.fromisoformat((text or "").replace("Z", "+00:00"))
    except ValueError:
        return None


class SystemClock:
    """The time a :class:`LeaseLock` keeps: ``now()``, the UTC time written into its Lease; ``monotonic()``, for its
    deadline and renewals; ``sleep(seconds)``, between two looks at another run's Lease. Tests give a fake one."""

    @staticmethod
    def now():
        return datetime.datetime.now(datetime.timezone.utc)

    @staticmethod
    def monotonic():
        return time.monotonic()

    @staticmethod
    def sleep(seconds):
        time.sleep(seconds)


class LeaseLock:
    """Lease ``kube-system/<name>`` on ``cluster``: one run at a time does what the Lease guards (``doing``).

    Taken by creating the Lease (409: another run holds it), kept by renewing it at least every third
    of :data:`LEASE_DURATION_SECONDS`, given back by deleting it (only while it is still this run's).
    A Lease whose holder has not renewed it within its duration belongs to a run that was stopped: it
    is taken over by an update guarded by its ``resourceVersion``, so that one run only wins.
    ``holder`` names this run in other runs' messages: host, process id and a random part. ``clock`` is the time
    it keeps (default a :class:`SystemClock`).
    """

    def __init__(self, cluster, name, doing, unfinished="nothing more was written", holder=None, interval=1.0,
                 clock=None):
        self.cluster = cluster
        self.name = name
        self.doing = doing  # what the holder does, in other runs' messages: "registering cluster member1"
        self.unfinished = unfinished  # what a run that lost the Lease left undone
        self.interval = interval  # seconds between two looks at a Lease another run holds
        self.holder = holder or "%s/%d/%s" % (socket.gethostname(), os.getpid(), secrets.token_hex(4))
        self._clock = clock or SystemClock()
        self.lease = None  # this run's Lease while it holds it
        self._renewed = None

    @property
    def ref(self):
        return LEASE.ref(self.name, LOCK_NAMESPACE)

    def _spec(self, transitions):
        now = micro_time(self._clock.now())
        return {"holderIdentity": self.holder, "leaseDurationSeconds": LEASE_DURATION_SECONDS, "acquireTime": now,
                "renewTime": now, "leaseTransitions": transitions}

    def describe(self, lease):
        """What the module returns about another run's registration: its holder, since when, its Lease."""
        spec = lease.get("spec") or {}
        return {"holder": spec.get("holderIdentity"), "since": spec.get("acquireTime"), "lease": self.ref}

    def expired(self, lease):
        """True when nobody holds ``lease``, or its holder has not renewed it within its duration."""
        spec = lease.get("spec") or {}
        renewed = _parse_time(spec.get("renewTime") or spec.get("acquireTime"))
        duration = datetime.timedelta(seconds=spec.get("leaseDurationSeconds") or LEASE_DURATION_SECONDS)
        return not spec.get("holderIdentity") or renewed is None or renewed + duration < self._clock.now()

    def _get(self):
        return resources.get(self.cluster, LEASE, self.name, LOCK_NAMESPACE)

    def held_by_another(self):
        """:meth:`describe` of a Lease another run holds now, or None. Only reads (check mode)."""
        lease = self._get()
        return None if lease is None or self.expired(lease) else self.describe(lease)

    def acquire(self, timeout):
        """Take the Lease, waiting up to ``timeout`` seconds while another run holds it.

        Returns :meth:`describe` of the other run's Lease when this run had to wait for it, else None.
        """
        deadline = self._clock.monotonic() + timeout
        waited = None
        while True:
            current = self._get()
            try:
                if current is None:
                    body = {"apiVersion": LEASE.api_version, "kind": LEASE.kind, "spec": self._spec(0),
                            "metadata": {"name": self.name, "namespace": LOCK_NAMESPACE}}
                    self.lease = self.cluster.request("POST", LEASE.path(LOCK_NAMESPACE), body=body)
                    break
                if self.expired(current):
                    transitions = ((current.get("spec") or {}).get("leaseTransitions") or 0) + 1
                    patch = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                             "spec": self._spec(transitions)}
                    self.lease = self.cluster.request("PATCH", LEASE.path(LOCK_NAMESPACE, self.name), body=patch,
                                                      content_type=resources.MERGE_PATCH)
                    break
            except (Conflict, NotFound):
                continue  # another run was quicker: look again
            waited = self.describe(current)
            if self._clock.monotonic() >= deadline:
                raise FleetError("%s: another run (%s) has been %s since %s and still held %s after %ss: run again once it "
                                 "has finished (the Lease of a run that was stopped expires %ss after its last renewal)"
                                 % (self.cluster.label, waited["holder"], self.doing, waited["since"], self.ref, timeout,
                                    LEASE_DURATION_SECONDS), waited_for=waited)
            self._clock.sleep(self.interval)
        self._renewed = self._clock.monotonic()
        return waited

    def renew(self, force=False):
        """Renew the Lease when a third of its duration has passed (``force``: now); FleetError when it was lost."""
        if not force and self._clock.monotonic() - self._renewed < LEASE_DURATION_SECONDS / 3.0:
            return
        patch = {"metadata": {"resourceVersion": self.lease["metadata"]["resourceVersion"]},
                 "spec": {"renewTime": micro_time(self._clock.now())}}
        try:
            self.lease = self.cluster.request("PATCH", LEASE.path(LOCK_NAMESPACE, self.name), body=patch,
                                              content_type=resources.MERGE_PATCH)
        except (Conflict, NotFound):
            self.lease = None
            current = self._get()
            raise FleetError("%s: this run lost %s to %s (it was not renewed for %ss) while %s; %s: run again"
                             % (self.cluster.label, self.ref, self.describe(current)["holder"] if current else "nobody",
                                LEASE_DURATION_SECONDS, self.doing, self.unfinished))
        self._renewed = self._clock.monotonic()

    def release(self):
        """Delete the Lease if it is still this run's. Returns a warning when the member did not answer, else None."""
        if self.lease is None:
            return None
        options = {"kind": "DeleteOptions", "apiVersion": "v1",
                   "preconditions": {"resourceVersion": self.lease["metadata"]["resourceVersion"]}}
        try:
            self.cluster.request("DELETE", LEASE.path(LOCK_NAMESPACE, self.name), body=options)
        except (Conflict, NotFound):
            pass  # taken over after it expired, or deleted
        except ClusterError as exc:
            return ("%s; %s stays until it expires, %ss after its last renewal: other runs wait for it until then"
                    % (exc.msg, self.ref, LEASE_DURATION_SECONDS))
        finally:
            self.lease = None
        return None


class RegistrationLock(LeaseLock):
    """Lease ``kube-system/multicluster-fleet-registration`` on the member cluster: one registration of a cluster at a
    time, whatever name each run gives it, so that a second run reads what the first one wrote (the identity rule,
    docs/architecture.md 3.2 and 3.3)."""

    def __init__(self, member, cluster_name, **options):
        super(RegistrationLock, self).__init__(member, REGISTRATION_LEASE, "registering cluster %s" % cluster_name, **options)
