"""Wall time of one manifest_work task with wait: one cluster, then 50 clusters in one task.

Registers ``--clusters`` OCM managed clusters on the lab hub (accepted, with their namespaces, as the
hub controllers would leave them), maps them all to one lab member API, where one simulated work
agent (tests/lab/sim_work_agent.py) serves all of them, and times the module run exactly as Ansible
runs it (a fresh Python process per task), with ``wait: true``:

- one task delivering a ConfigMap to one cluster,
- one task delivering it to all clusters,

each ``--runs`` times under a fresh work name (the median is printed), next to 50 times the
one-cluster figure: the time the clusters would take one after another.

    python tests/benchmarks/manifest_work.py [--clusters 50] [--runs 3] [--lab-dir DIR]

Uses the lab in ``--lab-dir`` (or ``FLEET_LAB_DIR``) when it runs; otherwise starts a hub and one
member and stops them afterwards. OCM only: Karmada Works of many clusters that all land on one
member API would compete for the same objects.
"""

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import benchlab
from ansible_collections.multicluster.fleet.plugins.module_utils import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER, MANIFEST_WORK
from lab import ApiError
from runner import run_module
from sim_work_agent import WorkAgent

STAMP = "2026-11-22T03:25:40Z"
MANIFEST = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench-greeting", "namespace": "default"},
            "data": {"greeting": "Hello, Kubernetes!"}}


def register(hub, name):
    """An accepted, available ManagedCluster and its hub namespace, as registration would leave them."""
    resources.ensure(hub, MANAGED_CLUSTER, {"metadata": {"name": name}, "spec": {"hubAcceptsClient": True}})
    hub.request("PATCH", MANAGED_CLUSTER.path(name=name, subresource="status"), content_type=resources.MERGE_PATCH,
                body={"status": {"conditions": [
                    {"type": "HubAcceptedManagedCluster", "status": "True", "reason": "HubClusterAdminAccepted",
                     "message": "Accepted by hub cluster admin", "lastTransitionTime": STAMP},
                    {"type": "ManagedClusterConditionAvailable", "status": "True", "reason": "ManagedClusterAvailable",
                     "message": "Managed cluster is available", "lastTransitionTime": STAMP}]}})
    resources.ensure(hub, resources.NAMESPACE, {"metadata": {"name": name}})


def unregister(hub, name):
    resources.delete(hub, resources.NAMESPACE, name)
    resources.delete(hub, MANAGED_CLUSTER, name)


def timed(auth, name, clusters):
    """Seconds of one module run delivering to ``clusters`` with wait; the work is removed afterwards."""
    args = dict(auth, engine="ocm", name=name, clusters=clusters, manifests=[MANIFEST], wait=True, wait_timeout=300)
    start = time.monotonic()
    result = run_module("manifest_work", args)
    seconds = time.monotonic() - start
    if result["rc"] != 0 or not all(c["applied"] for c in result["clusters"].values()):
        raise SystemExit("manifest_work failed: %s" % result.get("msg"))
    removed = run_module("manifest_work", dict(args, state="absent", wait_timeout=60))
    if removed["rc"] != 0:
        raise SystemExit("removing %s failed: %s" % (name, removed.get("msg")))
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    benchlab.add_lab_argument(parser)
    args = parser.parse_args()

    with benchlab.lab(args.lab_dir, ["hub", "member1"]) as lab:
        member = next(name for name in lab.clusters if name != lab.hub)
        auth = {"kubeconfig": lab.clusters[lab.hub]["kubeconfig"], "context": lab.hub}
        hub = client.get_cluster(auth, "hub")
        names = ["bench-%03d" % index for index in range(1, args.clusters + 1)]
        agent = None
        try:
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda n: register(hub, n), names))
            agent = WorkAgent(lab.clusters[lab.hub], "ocm", dict((n, lab.clusters[member]) for n in names), interval=0.5).start()
            one = statistics.median(timed(auth, "bench-one-%d" % run, names[:1]) for run in range(args.runs))
            many = statistics.median(timed(auth, "bench-all-%d" % run, names) for run in range(args.runs))
            print("manifest_work with wait: true, OCM, median of %d runs (hub %s, %d clusters on member %s)"
                  % (args.runs, lab.clusters[lab.hub]["server"], args.clusters, member))
            print("  1 cluster in one task:            %6.2f s" % one)
            print("  %d clusters in one task:          %6.2f s" % (args.clusters, many))
            print("  %d clusters one after another:    %6.2f s  (%d x the one-cluster task)" % (args.clusters, args.clusters * one, args.clusters))
            print("  speed-up of the single task:      %6.1f x" % (args.clusters * one / many))
            if agent.error:
                print("simulated agent, last error: %s" % agent.error, file=sys.stderr)
        finally:
            for work in resources.list_objects(hub, MANIFEST_WORK):  # left by a failed run; the agent finalizes them
                if work["metadata"]["namespace"] in names and agent is not None:
                    resources.delete(hub, MANIFEST_WORK, work["metadata"]["name"], work["metadata"]["namespace"], wait=True)
            if agent is not None:
                agent.stop()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda n: unregister(hub, n), names))
            try:
                lab.api(member).delete("/api/v1/namespaces/default/configmaps/bench-greeting")
            except ApiError as exc:
                if exc.status != 404:
                    raise


if __name__ == "__main__":
    main()
