"""Median wall time of one read task and of one write task through ansible-playbook against the lab hub.

Reads: ``multicluster.fleet.cluster_info`` and the same read done by ``kubernetes.core.k8s_info``.
Writes: ``multicluster.fleet.k8s_objects`` and ``kubernetes.core.k8s`` creating the same ConfigMap
(one per task, ``bench-write-<n>`` in namespace ``default``; they are deleted before every run, so
every task creates). ``ansible.builtin.ping`` is Ansible's own floor for a task. Each playbook holds
``--tasks`` tasks and runs ``--runs`` times; the figure per task is the median run divided by the
number of tasks, so ansible-playbook's start-up is spread out as it is in a real play; the ratio is
to the ping figure.

    python tests/benchmarks/cluster_info.py [--tasks 10] [--runs 5] [--lab-dir DIR]

Uses the lab in ``--lab-dir`` (or ``FLEET_LAB_DIR``) when it runs; otherwise starts a hub-only lab
and stops it afterwards.
"""

import argparse
import os
import statistics
import sys
import tempfile

import yaml

import benchlab
from lab import ApiError

WRITTEN = "bench-write-%d"


def config_map(index):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": WRITTEN % index, "namespace": "default"},
            "data": {"greeting": "Hello, Kubernetes!"}}


# Per kind of task, the modules compared: a function of (kubeconfig, task number) returning the task.
TASKS = {
    "read": {
        "ansible.builtin.ping": lambda kubeconfig, index: {"ansible.builtin.ping": {}},
        "multicluster.fleet.cluster_info": lambda kubeconfig, index: {
            "multicluster.fleet.cluster_info": {"engine": "karmada", "kubeconfig": kubeconfig}},
        "kubernetes.core.k8s_info": lambda kubeconfig, index: {
            "kubernetes.core.k8s_info": {"api_version": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                         "kubeconfig": kubeconfig}},
    },
    "write": {
        "multicluster.fleet.k8s_objects": lambda kubeconfig, index: {
            "multicluster.fleet.k8s_objects": {"kubeconfig": kubeconfig, "objects": [config_map(index)]}},
        "kubernetes.core.k8s": lambda kubeconfig, index: {
            "kubernetes.core.k8s": {"kubeconfig": kubeconfig, "definition": config_map(index)}},
    },
}


def playbook(task, kubeconfig, tasks):
    return [{"name": "benchmark", "hosts": "localhost", "gather_facts": False, "connection": "local",
             "vars": {"ansible_python_interpreter": sys.executable},
             "tasks": [dict(task(kubeconfig, index), name="task %d" % index) for index in range(tasks)]}]


def delete_written(api, tasks):
    """Delete the ConfigMaps the write tasks create, so that the next run creates them again."""
    for index in range(tasks):
        try:
            api.delete("/api/v1/namespaces/default/configmaps/" + WRITTEN % index)
        except ApiError as exc:
            if exc.status != 404:
                raise


def time_playbook(path, runs, before_run):
    """Median wall time and median CPU time (ansible-playbook and its children) of ``runs`` runs."""
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal", ANSIBLE_COLLECTIONS_PATH=benchlab.COLLECTIONS_ROOT,
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    seconds, cpu = [], []
    for _run in range(runs):
        before_run()
        wall, used, returncode, output = benchlab.timed([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), path], env)
        if returncode != 0:
            raise SystemExit("%s failed:\n%s" % (path, output[-4000:]))
        seconds.append(wall)
        cpu.append(used)
    return statistics.median(seconds), statistics.median(cpu)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    benchlab.add_lab_argument(parser)
    args = parser.parse_args()

    with benchlab.lab(args.lab_dir, ["hub"]) as lab:
        kubeconfig = lab.clusters[lab.hub]["kubeconfig"]
        api = lab.api(lab.hub)
        print("median wall time and CPU time per task, %d tasks per playbook, %d runs each (hub %s, %d CPUs, load %s)"
              % (args.tasks, args.runs, lab.clusters[lab.hub]["server"], os.cpu_count(), benchlab.load()))
        floor = None
        try:
            with tempfile.TemporaryDirectory() as tmp:
                for kind, tasks in TASKS.items():
                    print("  %s" % kind)
                    for name, task in tasks.items():
                        path = os.path.join(tmp, name + ".yml")
                        with open(path, "w") as handle:
                            yaml.safe_dump(playbook(task, kubeconfig, args.tasks), handle)
                        run, cpu = time_playbook(path, args.runs, lambda: delete_written(api, args.tasks))
                        floor = floor or (run, cpu)
                        print("    %-34s %6.3f s/task %5.2f x ping   CPU %6.3f s/task %5.2f x ping   (%.2f s per playbook)"
                              % (name, run / args.tasks, run / floor[0], cpu / args.tasks, cpu / floor[1], run))
        finally:
            delete_written(api, args.tasks)


if __name__ == "__main__":
    main()
