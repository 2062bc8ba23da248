"""Median wall time of one read task through ansible-playbook against the lab hub.

Compares ``multicluster.fleet.cluster_info`` with the same read done by ``kubernetes.core.k8s_info``
and with ``ansible.builtin.ping`` (Ansible's own floor for a task). Each playbook holds
``--tasks`` tasks and runs ``--runs`` times; the figure per task is the median run divided by the
number of tasks, so ansible-playbook's start-up is spread out as it is in a real play.

    python tests/benchmarks/cluster_info.py [--tasks 10] [--runs 5] [--lab-dir DIR]

Uses the lab in ``--lab-dir`` (or ``FLEET_LAB_DIR``) when it runs; otherwise starts a hub-only lab
and stops it afterwards.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

import benchlab

READS = {
    "ansible.builtin.ping": lambda kubeconfig: {"ansible.builtin.ping": {}},
    "multicluster.fleet.cluster_info": lambda kubeconfig: {
        "multicluster.fleet.cluster_info": {"engine": "karmada", "kubeconfig": kubeconfig}},
    "kubernetes.core.k8s_info": lambda kubeconfig: {
        "kubernetes.core.k8s_info": {"api_version": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                     "kubeconfig": kubeconfig}},
}


def playbook(task, tasks):
    return [{"name": "benchmark", "hosts": "localhost", "gather_facts": False, "connection": "local",
             "vars": {"ansible_python_interpreter": sys.executable},
             "tasks": [dict(task, name="read %d" % i) for i in range(tasks)]}]


def time_playbook(path, runs):
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal", ANSIBLE_COLLECTIONS_PATH=benchlab.COLLECTIONS_ROOT,
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    seconds = []
    for _run in range(runs):
        start = time.monotonic()
        done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), path],
                              env=env, capture_output=True, text=True, check=False)
        seconds.append(time.monotonic() - start)
        if done.returncode != 0:
            raise SystemExit("%s failed:\n%s%s" % (path, done.stdout[-2000:], done.stderr[-2000:]))
    return statistics.median(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    benchlab.add_lab_argument(parser)
    args = parser.parse_args()

    with benchlab.lab(args.lab_dir, ["hub"]) as lab:
        kubeconfig = lab.clusters["hub"]["kubeconfig"]
        print("median wall time per task, %d tasks per playbook, %d runs each (hub %s)"
              % (args.tasks, args.runs, lab.clusters["hub"]["server"]))
        with tempfile.TemporaryDirectory() as tmp:
            for name, task in READS.items():
                path = os.path.join(tmp, name + ".yml")
                with open(path, "w") as handle:
                    yaml.safe_dump(playbook(task(kubeconfig), args.tasks), handle)
                run = time_playbook(path, args.runs)
                print("  %-34s %6.3f s/task  (%.2f s per playbook)" % (name, run / args.tasks, run))


if __name__ == "__main__":
    main()
