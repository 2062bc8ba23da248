"""The in-memory API of conftest.py plus what placement.py and addon.py need from a hub: lists across namespaces,
label and field selectors, and null fields dropped from what is stored, as the API server drops them from custom
resources (a create's, and those inside the lists of a merge patch)."""

import copy

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources

NAMESPACED = [k for k in vars(ocm).values() if isinstance(k, resources.Kind) and k.namespaced]


def _pruned(value):
    if isinstance(value, dict):
        return dict((k, _pruned(v)) for k, v in value.items() if v is not None)
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _lists_pruned(patch):
    """A merge patch with the null fields inside its lists dropped (a null outside lists deletes the field)."""
    if isinstance(patch, dict):
        return dict((k, _lists_pruned(v)) for k, v in patch.items())
    if isinstance(patch, list):
        return [_pruned(v) for v in patch]
    return patch


def _matches(obj, label_selector, field_selector):
    labels = obj["metadata"].get("labels") or {}
    for term in (label_selector or "").split(","):
        if term and labels.get(term.split("=", 1)[0]) != term.split("=", 1)[1]:
            return False
    if field_selector:
        assert field_selector.startswith("metadata.name="), field_selector
        return obj["metadata"]["name"] == field_selector.split("=", 1)[1]
    return True


def ocm_hub(fake):
    """Wrap ``fake`` (a conftest FakeCluster) in place and return it."""
    delegate = fake.request

    def request(method, path, body=None, query=None, content_type="application/json", timeout=None):
        query = dict(query or {})
        if method == "POST":
            body = _pruned(body)
        elif method == "PATCH":
            body = _lists_pruned(body)
        if method != "GET":
            return delegate(method, path, body, query, content_type, timeout)
        label_selector, field_selector = query.pop("labelSelector", None), query.pop("fieldSelector", None)
        across = [k for k in NAMESPACED if k.path() == path]
        if across:
            fake.calls.append((method, path, dict(query, labelSelector=label_selector, fieldSelector=field_selector)))
            base, plural = path.rsplit("/", 1)
            answer = {"items": [copy.deepcopy(o) for p, o in sorted(fake.objects.items())
                                if p.startswith(base + "/namespaces/") and p.split("/")[-2] == plural]}
        else:
            answer = delegate(method, path, body, query, content_type, timeout)
        if "items" in answer:
            answer["items"] = [o for o in answer["items"] if _matches(o, label_selector, field_selector)]
        return answer

    fake.request = request
    return fake
