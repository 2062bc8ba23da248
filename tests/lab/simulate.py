#!/usr/bin/env python
"""Run every lab SIMULATION against a running lab, as one background process.

The lab runs real control planes but none of the engines' controllers, agents or operators; the
simulations in this directory play their protocol parts (docs/architecture.md 5.2). This starts all of
them for a lab directory - what a main-job run (site.sh), molecule and the playbook tests need:

- sim_operators: Deployments roll out on every cluster; OCM's cluster-manager operator and Karmada's
  agent CSR approver on the hub; the klusterlet operator wherever its Deployment runs;
- sim_karmada: Karmada's cluster-status controller for Push clusters on the hub;
- sim_karmada_agent: a karmada-agent on every member (it acts once the member holds
  ``karmada-system/karmada-kubeconfig``, i.e. after pull registration);
- sim_klusterlet: the klusterlet registration agent on every cluster, the hub too (it acts once the
  cluster holds ``open-cluster-management-agent/bootstrap-hub-kubeconfig``; on the hub, a hub registered
  with itself), the Hosted one of every member on every other cluster (it acts once that cluster holds
  Klusterlet ``klusterlet-<member>`` and its Secrets), and the hub's registration controller for the
  members and for the hub's own cluster;
- sim_work_agent: OCM's work agent and Karmada's execution controllers for the members;
- sim_addon: OCM's placement controller and add-on manager on the hub.

Every member cluster registers under its lab name, as in the lab's inventory; the hub under the
``clusterName`` of its Klusterlet (``local-cluster``), as any klusterlet does.

Command line::

    python tests/lab/simulate.py --lab-dir DIR              # start in the background, return when running
    python tests/lab/simulate.py --lab-dir DIR --foreground # run here until interrupted
    python tests/lab/simulate.py --lab-dir DIR --stop       # stop the background process

``--without-hosted`` leaves the Hosted klusterlets out (each polls its hosting cluster): for runs in which no member
registers in Hosted mode (the molecule scenarios, the matrix's smoke sets).

The background process writes its pid to DIR/simulate.pid and its log to DIR/simulate.log.
Starting while one runs for DIR is refused. ``--stop`` is a no-op when none runs.

Python (in-process threads, as the integration tests use it)::

    sims = start_all(Lab.load(DIR))
    ...
    stop_all(sims)
"""

import argparse
import os
import signal
import subprocess
import sys
import time

import sim_addon
import sim_karmada
import sim_karmada_agent
import sim_klusterlet
import sim_operators
import sim_work_agent
from lab import ApiClient, Lab, LabError
from sim_base import Revision, run_until_signalled

HERE = os.path.abspath(__file__)


def simulations(lab, interval=0.5, hosted=True):
    """Every simulation for ``lab``, not started; without the Hosted-mode klusterlets unless ``hosted``."""
    hub = ApiClient.for_cluster(lab.clusters[lab.hub])
    members = [name for name in lab.clusters if name != lab.hub]
    agents = []
    for member in members:
        agents += [sim_karmada_agent.SimulatedKarmadaAgent(lab, member), sim_klusterlet.SimulatedKlusterlet(lab, member)]
        if hosted:
            agents += [sim_klusterlet.SimulatedKlusterlet(lab, member, hosting=hosting) for hosting in lab.clusters if hosting != member]
    agents.append(sim_klusterlet.SimulatedKlusterlet(lab, lab.hub))
    served = dict((member, lab.clusters[member]) for member in members)
    sims = sim_operators.simulations_for(lab, interval) + agents + [
        sim_karmada.ClusterStatusSimulation(hub),
        sim_klusterlet.SimulatedRegistrationController(lab, members, learn_from=list(lab.clusters)),
        sim_work_agent.WorkAgent(lab.clusters[lab.hub], "ocm", served),
        sim_work_agent.WorkAgent(lab.clusters[lab.hub], "karmada", served, karmada_agent_runs=lambda cluster: any(
            a.runs_as(cluster) for a in agents if isinstance(a, sim_karmada_agent.SimulatedKarmadaAgent))),
        sim_addon.PlacementController(hub, interval),
        sim_addon.AddOnManager(hub, interval),
    ]
    # Each passes when something changed on the servers it reads (or to resync), not on every tick
    # (sim_base.Simulation): an operator reads its own cluster, the others the whole lab.
    revisions = dict((info["server"], Revision(ApiClient.for_cluster(info))) for info in lab.clusters.values())
    for sim in sims:
        local = isinstance(sim, sim_operators.ApiSimulation)
        sim.revisions = [revisions[sim.api.server]] if local else list(revisions.values())
    return sims


def start_all(lab, interval=0.5, hosted=True):
    """Start every simulation for ``lab`` in this process (the Hosted-mode klusterlets only if ``hosted``); return them
    for :func:`stop_all`."""
    return [s.start() for s in simulations(lab, interval, hosted)]


def stop_all(sims):
    for sim in sims:
        sim.stop()


def _pid_file(lab_dir):
    return os.path.join(lab_dir, "simulate.pid")


def running_pid(lab_dir):
    """The pid of this lab's background simulation process, or None."""
    try:
        with open(_pid_file(lab_dir)) as f:
            pid = int(f.read().strip())
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().split(b"\0")
    except (OSError, ValueError):
        return None
    # A recycled pid belongs to someone else: ours runs this file for this lab directory.
    if HERE.encode() in cmdline and os.path.abspath(lab_dir).encode() in cmdline:
        return pid
    return None


def start_background(lab_dir, interval, hosted=True):
    """Start ``simulate.py --foreground`` detached, wait until it reports running; return its pid."""
    lab_dir = os.path.abspath(lab_dir)
    Lab.load(lab_dir)  # fail early, in this process, when there is no lab
    pid = running_pid(lab_dir)
    if pid:
        raise LabError(f"simulations already run for {lab_dir} (pid {pid}); stop them with --stop first")
    log_path = os.path.join(lab_dir, "simulate.log")
    with open(log_path, "ab") as log:
        command = [sys.executable, HERE, "--lab-dir", lab_dir, "--foreground", "--interval", str(interval)]
        child = subprocess.Popen(command + ([] if hosted else ["--without-hosted"]), stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 20
    while running_pid(lab_dir) != child.pid:
        if child.poll() is not None or time.monotonic() > deadline:
            raise LabError(f"the simulation process did not start (exit status {child.poll()}); see {log_path}")
        time.sleep(0.1)
    return child.pid


def stop_background(lab_dir, grace=10):
    """SIGTERM the background process of ``lab_dir`` (SIGKILL after ``grace`` seconds); True if one ran."""
    pid = running_pid(lab_dir)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while running_pid(lab_dir) == pid and time.monotonic() < deadline:
        time.sleep(0.1)
    if running_pid(lab_dir) == pid:
        os.kill(pid, signal.SIGKILL)
    return True


def run_foreground(lab_dir, interval, hosted=True):
    lab = Lab.load(lab_dir)
    sims = simulations(lab, interval, hosted)

    def started():
        with open(_pid_file(lab.dir), "w") as f:
            f.write(f"{os.getpid()}\n")
        print(f"[simulate] {len(sims)} simulations running for {lab.dir}: "
              f"{', '.join(sorted({type(s).__name__ for s in sims}))}", file=sys.stderr, flush=True)
    run_until_signalled(sims, started=started)
    os.unlink(_pid_file(lab.dir))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--lab-dir", required=True, help="directory of a running lab (lab.py up --dir)")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between rounds (default 0.5)")
    parser.add_argument("--without-hosted", action="store_true",
                        help="leave out the Hosted-mode klusterlets (for runs in which no member registers in Hosted mode)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--foreground", action="store_true", help="run in this process until interrupted")
    mode.add_argument("--stop", action="store_true", help="stop the background process of this lab")
    args = parser.parse_args(argv)
    try:
        if args.stop:
            stopped = stop_background(args.lab_dir)
            print(f"[simulate] {'stopped' if stopped else 'none running'} for {args.lab_dir}", file=sys.stderr)
            return 0
        if args.foreground:
            return run_foreground(args.lab_dir, args.interval, not args.without_hosted)
        pid = start_background(args.lab_dir, args.interval, not args.without_hosted)
        print(f"[simulate] running in the background (pid {pid}); log {os.path.join(args.lab_dir, 'simulate.log')}",
              file=sys.stderr)
        return 0
    except LabError as e:
        print(f"simulate.py: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
