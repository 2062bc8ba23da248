"""What the tests of the registration Lease share: a member that can go down, a fake clock (:class:`Time`, the fixture
``time_`` of conftest.py) and a Lease of another run."""

import datetime

from ansible_collections.multicluster.fleet.plugins.module_utils.registration import lease_lock
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError, Conflict
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import SECRET
from conftest import FakeCluster
from register_fakes import CLUSTER

UTC = datetime.timezone.utc
START = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
LEASE_PATH = lease_lock.LEASE.path("kube-system", "multicluster-fleet-registration")
IN_FLIGHT_PATH = SECRET.path("kube-system", "multicluster-fleet-registration-member1")


class Member(FakeCluster):
    """The member: DELETE honours ``preconditions.resourceVersion``; ``down`` makes it unreachable."""

    def __init__(self, name="member"):
        super().__init__(name)
        self.down = False

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        if self.down:
            raise ClusterError("%s is unreachable: connection refused (check that the API server runs)" % self.label)
        expected = ((body or {}).get("preconditions") or {}).get("resourceVersion") if method == "DELETE" else None
        if expected and path in self.objects and self.objects[path]["metadata"]["resourceVersion"] != expected:
            raise Conflict("precondition failed", 409, "Conflict")
        return super().request(method, path, body, query, content_type, timeout)


class Time:
    """A fake lease_lock.SystemClock, wall and monotonic; ``sleep`` advances both and runs the queued actions first."""

    def __init__(self):
        self.wall = START
        self.elapsed = 0.0
        self.naps = []
        self.actions = []

    def now(self):
        return self.wall

    def monotonic(self):
        return self.elapsed

    def advance(self, seconds):
        self.elapsed += seconds
        self.wall += datetime.timedelta(seconds=seconds)

    def sleep(self, seconds):
        self.naps.append(seconds)
        if self.actions:
            self.actions.pop(0)()
        self.advance(seconds)


def lock_of(cluster, time_, holder="runner-b"):
    return lease_lock.RegistrationLock(cluster, CLUSTER, holder=holder, interval=2, clock=time_)


def hold(member, holder, renewed, duration=lease_lock.LEASE_DURATION_SECONDS):
    """Another run's Lease, last renewed at ``renewed``."""
    return member.add(lease_lock.LEASE, {"metadata": {"name": "multicluster-fleet-registration", "namespace": "kube-system"},
                                         "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                                                  "acquireTime": lease_lock.micro_time(renewed - datetime.timedelta(seconds=5)),
                                                  "renewTime": lease_lock.micro_time(renewed), "leaseTransitions": 0}})


def writes(cluster):
    return [(method, path) for method, path, dummy in cluster.calls if method != "GET"]
