"""Wall time and CPU time of one manifest_work task delivering to 1, 50 and 500 clusters.

Registers the clusters as OCM managed clusters on the lab hub (accepted and available, with their
namespaces, as the hub controllers would leave them) and times the module run exactly as Ansible
runs it (a fresh Python process per task) delivering one ConfigMap:

- ``write``: with ``wait: false``, the module's own work: checking every cluster, then writing one
  ManifestWork per cluster. No agent runs meanwhile;
- ``wait``: with ``wait: true``, until every work is Applied. The clusters are all mapped to one lab
  member API, where one simulated work agent (tests/lab/sim_work_agent.py) serves all of them. Real
  clusters each run their own agent; here one agent process plays them all on the same cores, so for
  many clusters the figure holds the agent's time too. Sizes above ``--agent-max`` skip this.

Each figure is the median of ``--runs`` runs under a fresh work name; the work is removed after each
run (untimed). CPU is user + system time of the module process, a figure that does not depend on how
busy the machine is; the ratios are to the one-cluster task.

    python tests/benchmarks/manifest_work.py [--clusters 50,500] [--runs 3] [--agent-max 500] [--lab-dir DIR]

Uses the lab in ``--lab-dir`` (or ``FLEET_LAB_DIR``) when it runs; otherwise starts a hub and one
member and stops them afterwards. OCM only: Karmada Works of many clusters that all land on one
member API would compete for the same objects.
"""

import argparse
import os
import resource
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import benchlab
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER, MANIFEST_WORK
from lab import ApiError
from runner import run_module
from sim_work_agent import WorkAgent

STAMP = "2026-11-22T03:25:40Z"
MANIFEST = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench-greeting", "namespace": "default"},
            "data": {"greeting": "Hello, Kubernetes!"}}


def register(hub, name):
    """An accepted, available ManagedCluster and its hub namespace, as registration would leave them."""
    namespace = resources.get(hub, resources.NAMESPACE, name)
    if namespace is not None and namespace["metadata"].get("deletionTimestamp"):  # an earlier run's, still terminating
        resources.delete(hub, resources.NAMESPACE, name, wait=resources.Wait(timeout=300))
    resources.ensure(hub, MANAGED_CLUSTER, {"metadata": {"name": name}, "spec": {"hubAcceptsClient": True}})
    hub.request("PATCH", MANAGED_CLUSTER.path(name=name, subresource="status"), content_type=resources.MERGE_PATCH,
                body={"status": {"conditions": [
                    {"type": "HubAcceptedManagedCluster", "status": "True", "reason": "HubClusterAdminAccepted",
                     "message": "Accepted by hub cluster admin", "lastTransitionTime": STAMP},
                    {"type": "ManagedClusterConditionAvailable", "status": "True", "reason": "ManagedClusterAvailable",
                     "message": "Managed cluster is available", "lastTransitionTime": STAMP}]}})
    resources.ensure(hub, resources.NAMESPACE, {"metadata": {"name": name}})


def unregister(hub, name):
    """Remove the cluster; its namespace is waited for, so that a next run can register the name again."""
    resources.delete(hub, resources.NAMESPACE, name, wait=resources.Wait(timeout=300))
    resources.delete(hub, MANAGED_CLUSTER, name)


def timed(auth, name, clusters, wait):
    """``(seconds, cpu_seconds)`` of one module run delivering to ``clusters``; the work is removed afterwards."""
    args = dict(auth, engine="ocm", name=name, clusters=clusters, manifests=[MANIFEST], wait=wait, wait_timeout=600)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = run_module("manifest_work", args)
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result["rc"] != 0 or wait and not all(c["applied"] for c in result["clusters"].values()):
        raise SystemExit("manifest_work failed: %s" % result.get("msg"))
    removed = run_module("manifest_work", dict(args, state="absent", wait=True, wait_timeout=600))
    if removed["rc"] != 0:
        raise SystemExit("removing %s failed: %s" % (name, removed.get("msg")))
    return seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def median_run(auth, label, clusters, wait, runs):
    """Median seconds and median CPU seconds of ``runs`` runs."""
    figures = [timed(auth, "bench-%s-%d-%d" % (label, len(clusters), run), clusters, wait) for run in range(runs)]
    return statistics.median(f[0] for f in figures), statistics.median(f[1] for f in figures)


def report(label, size, figure, one):
    print("  %-6s %8d %8.2f s %6.1f x   CPU %6.2f s %6.1f x" % (label, size, figure[0], figure[0] / one[0], figure[1], figure[1] / one[1]),
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--clusters", default="50,500", help="comma-separated cluster counts besides 1 (default 50,500)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--agent-max", type=int, default=500, help="largest count timed with wait (default 500)")
    benchlab.add_lab_argument(parser)
    args = parser.parse_args()
    sizes = sorted(set([1] + [int(size) for size in args.clusters.split(",")]))

    with benchlab.lab(args.lab_dir, ["hub", "member1"]) as lab:
        member = next(name for name in lab.clusters if name != lab.hub)
        auth = {"kubeconfig": lab.clusters[lab.hub]["kubeconfig"], "context": lab.hub}
        hub = client.get_cluster(auth, "hub")
        names = ["bench-%03d" % index for index in range(1, sizes[-1] + 1)]
        agent = None
        try:
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda n: register(hub, n), names))
            print("manifest_work, OCM, median of %d runs (hub %s, works applied on member %s; %d CPUs, load %s)"
                  % (args.runs, lab.clusters[lab.hub]["server"], member, os.cpu_count(), benchlab.load()))
            print("  %-6s %8s %10s %8s   %10s %8s" % ("", "clusters", "wall", "x 1", "CPU", "x 1"))
            one = None
            for size in sizes:
                figure = median_run(auth, "write", names[:size], False, args.runs)
                one = one or figure
                report("write", size, figure, one)
            agent = WorkAgent(lab.clusters[lab.hub], "ocm", dict((n, lab.clusters[member]) for n in names), interval=0.5).start()
            one = None
            for size in [size for size in sizes if size <= args.agent_max]:
                figure = median_run(auth, "wait", names[:size], True, args.runs)
                one = one or figure
                report("wait", size, figure, one)
            print("  load now %s" % benchlab.load())
            if agent.error:
                print("simulated agent, last error: %s" % agent.error, file=sys.stderr)
        finally:
            for work in resources.list_objects(hub, MANIFEST_WORK):  # left by a failed run; the agent finalizes them
                if work["metadata"]["namespace"] in names and agent is not None:
                    resources.delete(hub, MANIFEST_WORK, work["metadata"]["name"], work["metadata"]["namespace"], wait=resources.Wait())
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
