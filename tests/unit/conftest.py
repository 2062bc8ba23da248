"""Shared fakes for unit tests: an in-memory API server behind the ``Cluster.request`` interface."""

import copy
import functools
import itertools
from urllib.parse import quote

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError, Conflict, NotFound

PLURALS = {k.plural for m in (resources, karmada, ocm) for k in vars(m).values() if isinstance(k, resources.Kind)}


class FakeCluster:
    """Stores objects by path and answers GET/POST/PATCH/DELETE like an API server would (roughly).

    ``calls`` records (method, path, query) for assertions; ``conflicts`` makes the next N patches
    fail with 409; ``dry_run`` requests never store anything. With ``finalizers`` set, a DELETE of an object with
    finalizers only sets its ``deletionTimestamp``, and the PATCH that empties them removes it.
    """

    finalizers = False

    def __init__(self, name="hub", role=None):
        self.name = name
        self.role = role or name
        self.server = "https://fake"
        self.objects = {}
        self.calls = []
        self.conflicts = 0
        self._versions = itertools.count(1)

    @property
    def label(self):
        return "cluster '%s' (%s)" % (self.name, self.server)

    def add(self, kind, obj):
        meta = obj["metadata"]
        stored = copy.deepcopy(obj)
        stored.setdefault("apiVersion", kind.api_version)
        stored.setdefault("kind", kind.kind)
        stored["metadata"]["resourceVersion"] = str(next(self._versions))
        stored["metadata"].setdefault("uid", "uid-%s" % meta["name"])
        self.objects[kind.path(meta.get("namespace"), meta["name"])] = stored
        return stored

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        self.calls.append((method, path, dict(query or {})))
        dry = (query or {}).get("dryRun") == "All"
        if method == "GET":
            if path in self.objects:
                return copy.deepcopy(self.objects[path])
            if path == "/api/v1/namespaces/kube-system":  # every cluster has one; its UID is the cluster's id
                return {"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": "kube-system", "uid": "kube-system-of-%s" % self.name}}
            if path.rsplit("/", 1)[-1] not in PLURALS:
                raise NotFound("not found", 404)
            prefix = path + "/"
            named = ((query or {}).get("fieldSelector") or "").partition("metadata.name=")[2]
            return {"items": [copy.deepcopy(o) for p, o in sorted(self.objects.items())
                              if p.startswith(prefix) and "/" not in p[len(prefix):]
                              and o["metadata"]["name"] == (named or o["metadata"]["name"])]}
        if method == "POST":
            target = path + "/" + quote(body["metadata"]["name"], safe="")
            if target in self.objects:
                raise Conflict("exists", 409, "AlreadyExists")
            stored = copy.deepcopy(body)
            stored["metadata"]["resourceVersion"] = str(next(self._versions))
            if not dry:
                self.objects[target] = stored
            return copy.deepcopy(stored)
        if method == "PATCH":
            if path not in self.objects:
                raise NotFound("not found", 404)
            if self.conflicts:
                self.conflicts -= 1
                raise Conflict("conflict", 409, "Conflict")
            current = self.objects[path]
            if body["metadata"].get("resourceVersion") not in (None, current["metadata"]["resourceVersion"]):
                raise Conflict("stale", 409, "Conflict")
            merged = _merge(copy.deepcopy(current), body)
            merged["metadata"]["resourceVersion"] = str(next(self._versions))
            if not dry:
                self.objects[path] = merged
                if self.finalizers and merged["metadata"].get("deletionTimestamp") and not merged["metadata"].get("finalizers"):
                    del self.objects[path]
            return copy.deepcopy(merged)
        if method == "DELETE":
            if path not in self.objects:
                raise NotFound("not found", 404)
            if not dry and self.finalizers and self.objects[path]["metadata"].get("finalizers"):
                self.objects[path]["metadata"].setdefault("deletionTimestamp", "2026-12-04T12:00:00Z")
            elif not dry:
                del self.objects[path]
            return {"kind": "Status", "status": "Success"}
        raise ClusterError("unsupported method %s" % method)

    def watch(self, path, resource_version, query=None, timeout_seconds=None):
        """A watch the server ends at once, with no event: the waiter lists again after its interval."""
        self.calls.append(("WATCH", path, dict(query or {}, resourceVersion=resource_version)))
        return iter(())


def _merge(target, patch):
    """RFC 7386 JSON merge patch."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            target[key] = _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


@pytest.fixture
def fake_cluster():
    return FakeCluster()


@pytest.fixture
def fast_waits(monkeypatch):
    """Waits without real sleeping: a fake clock that the sleep advances."""
    now = [0.0]

    def sleep(seconds):
        now[0] += max(seconds, 0.01)
    monkeypatch.setattr(resources, "wait_until", functools.partial(resources.wait_until, clock=lambda: now[0], sleep=sleep))
    watch_until = functools.partial(resources.watch_until, timer=resources.Timer(lambda: now[0], sleep))
    monkeypatch.setattr(resources, "watch_until", watch_until)
