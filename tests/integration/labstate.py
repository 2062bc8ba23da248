"""The state of the lab's clusters, for tests that must leave it as they found it.

``snapshot`` lists (or dumps) every object of the kinds the playbooks write, per cluster; ``admin_token``
gives a ServiceAccount token that may do everything on a lab cluster; ``closed_port`` a port of 127.0.0.1 that
nothing listens on, for a cluster that does not answer.
"""

import base64
import json
import socket

import lab as fleet_lab  # tests/lab, on sys.path through conftest.py

# Objects the lab's simulations of the engines' own controllers create and keep, not the playbooks:
# the ClusterRoles OCM's cluster-manager installs for its per-cluster RoleBindings.
SIMULATION_OWNED = {"ClusterRole/open-cluster-management:managedcluster:registration",
                    "ClusterRole/open-cluster-management:managedcluster:work"}
KINDS = (
    ("Namespace", "/api/v1/namespaces"),
    ("ServiceAccount", "/api/v1/serviceaccounts"),
    ("Secret", "/api/v1/secrets"),
    ("ConfigMap", "/api/v1/configmaps"),
    ("ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
    ("ClusterRoleBinding", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"),
    ("Role", "/apis/rbac.authorization.k8s.io/v1/roles"),
    ("RoleBinding", "/apis/rbac.authorization.k8s.io/v1/rolebindings"),
    ("Deployment", "/apis/apps/v1/deployments"),
    ("CustomResourceDefinition", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
)
TERMINATING_TIMEOUT = 120  # seconds a namespace an earlier test deleted may take to go
HUB_KINDS = KINDS + (
    ("Cluster", "/apis/cluster.karmada.io/v1alpha1/clusters"),
    ("ManagedCluster", "/apis/cluster.open-cluster-management.io/v1/managedclusters"),
    ("ClusterManager", "/apis/operator.open-cluster-management.io/v1/clustermanagers"),
)


def is_cluster_namespace(namespace):
    """An OCM cluster namespace: the hub controller creates it on acceptance and keeps it."""
    return "open-cluster-management.io/cluster-name" in (namespace["metadata"].get("labels") or {})


def settled_namespaces(api):
    """The cluster's namespaces, or None while one of them (other than an OCM cluster namespace) is being deleted:
    what an earlier test removed is gone before a snapshot is taken, so that it is neither seen nor missed."""
    namespaces = api.get("/api/v1/namespaces")["items"]
    terminating = [n for n in namespaces if n["metadata"].get("deletionTimestamp") and not is_cluster_namespace(n)]
    return None if terminating else namespaces


def wait_settled(api, name):
    """The namespaces of cluster ``name`` once none is being deleted (:func:`settled_namespaces`)."""
    return fleet_lab.wait_for(lambda: settled_namespaces(api), TERMINATING_TIMEOUT,
                              "%s: namespaces being deleted (by an earlier test) to be gone" % name)


def snapshot(lab, contents=False):
    """Every object of the kinds the playbooks write, per cluster, as ``Kind/namespace/name``.

    With ``contents``, a dict per cluster instead, mapping each such name to the object as JSON without
    its status and the metadata the API server maintains (``resourceVersion``, ``generation``,
    ``managedFields``); ``uid`` and ``creationTimestamp`` stay, so an object deleted and created again
    differs too. That is what a check-mode run must leave exactly as it was.

    Taken once no namespace is being deleted (:func:`wait_settled`). Left out: what Kubernetes derives by
    itself (ServiceAccount token Secrets, the ``kube-root-ca.crt`` ConfigMaps and ``default`` ServiceAccounts of each
    namespace; CertificateSigningRequests, which its csrcleaner removes an hour after they were issued), and the
    cluster namespaces (labelled ``open-cluster-management.io/cluster-name``) the OCM hub controller creates on
    acceptance and keeps, with what Kubernetes puts into them.
    """
    state = {}
    volatile = ("resourceVersion", "generation", "managedFields", "selfLink")
    for name, info in lab.clusters.items():
        api = fleet_lab.ApiClient.for_cluster(info)
        namespaces = wait_settled(api, name)
        cluster_namespaces = {n["metadata"]["name"] for n in namespaces if is_cluster_namespace(n)}
        found = {}
        for kind, path in HUB_KINDS if name == lab.hub else KINDS:
            for obj in api.get(path)["items"]:
                meta = obj["metadata"]
                namespace = meta.get("namespace")
                if (obj.get("type") == "kubernetes.io/service-account-token" or meta["name"] in ("kube-root-ca.crt", "default")
                        or namespace in cluster_namespaces or meta["name"] in cluster_namespaces and kind == "Namespace"):
                    continue
                ref = "/".join([kind] + ([namespace] if namespace else []) + [meta["name"]])
                if ref not in SIMULATION_OWNED:
                    obj.pop("status", None)
                    found[ref] = json.dumps(dict(obj, metadata={k: v for k, v in meta.items() if k not in volatile}),
                                            sort_keys=True)
        state[name] = found if contents else set(found)
    return state


def changes(before, after):
    """What differs between two :func:`snapshot` sets, per cluster: ``{cluster: {"added": [...], "removed": [...]}}``
    (``{}`` when nothing does), so that a failed comparison names the objects."""
    found = {}
    for cluster in sorted(set(before) | set(after)):
        old, new = before.get(cluster, set()), after.get(cluster, set())
        if old != new:
            found[cluster] = {"added": sorted(new - old), "removed": sorted(old - new)}
    return found


def version_info(lab):
    """The lab's Kubernetes version as ``(major, minor, patch)``."""
    return tuple(int(part) for part in fleet_lab.VERSION_RE.search(lab.version).groups())


def namespace_labels(lab, name, labels):
    """The labels of namespace ``name`` created with ``labels``, as the lab's API server keeps them: since 1.21 it sets
    ``kubernetes.io/metadata.name: <name>`` on every namespace (KEP-2161)."""
    return dict(labels, **({"kubernetes.io/metadata.name": name} if version_info(lab) >= (1, 21, 0) else {}))


def admin_token(api, name="fleet-test-admin"):
    """A ServiceAccount token that may do everything on a lab cluster (``kube-system/<name>``, cluster-admin)."""
    rbac = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
    if not api.exists("/api/v1/namespaces/kube-system/serviceaccounts/" + name):
        api.post("/api/v1/namespaces/kube-system/serviceaccounts", {"metadata": {"name": name}})
    if not api.exists(rbac + "/" + name):
        api.post(rbac, {"metadata": {"name": name},
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "kube-system"}]})

    # Kubernetes 1.24 and newer create no token Secret for a ServiceAccount by themselves: ask for one (the token
    # controller fills it in on every version).
    secret = "/api/v1/namespaces/kube-system/secrets/" + name
    if not api.exists(secret):
        api.post("/api/v1/namespaces/kube-system/secrets",
                 {"metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": name}},
                  "type": "kubernetes.io/service-account-token"})

    def issued():
        return (api.get(secret).get("data") or {}).get("token")
    return base64.b64decode(fleet_lab.wait_for(issued, 30, "the token of ServiceAccount kube-system/" + name)).decode()


def closed_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port
