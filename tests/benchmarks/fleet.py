"""Wall time, controller CPU and API requests of playbooks/site.yml for fleets of 1 to 32 lab members, per engine.

For each engine and size N, writes an inventory of the lab hub and its first N members (members
alternate push and pull as in the lab's inventory; OCM members all register by pull), starts the lab
simulations of those clusters, runs site.yml with ``--forks N+1`` (or ``--forks`` as given) and records:

- the wall time, and its ratio to the 1-member run;
- the controller CPU seconds (user + system of ansible-playbook and every process it waited for: its
  workers and the module processes), in total and per member, and the part of the ansible-playbook
  process itself (strategy, variables, callbacks). Unlike the wall time this does not depend on how
  busy the machine is;
- the module runs per member: tasks that ran a module (not skipped, not one of the
  controller-side actions such as assert, set_fact, include_role or argument validation), retries
  included, counted by the callback in tests/benchmarks/callback_plugins/task_log.py. Each is a process: a child
  forked from the task's worker, where the collection's action plugin runs the module on the controller, or the
  module process ansible-core starts;
- the tasks per member that ran (not skipped), controller-side ones included;
- the API requests the collection made per member, on the hub and on the members, counted from the API servers'
  audit logs (requests whose User-Agent is the collection's client's, ``multicluster.fleet``); ``--requests`` prints
  them by verb and resource for the largest run. A lab started by the benchmark writes audit logs; one given with
  ``--lab-dir`` must have been started with ``lab.py up --audit`` for these columns;
- where the CPU of a member's tasks goes: its module processes (with the commands the connection runs) and the
  workers Ansible forks per task and host (templating, action plugins, the module payload), per member, as each
  worker reports it to the same callback. The rest of the CPU is the ansible-playbook process (``proc s``) and
  the hub's tasks.

Then, for the same sizes, the floor: tests/benchmarks/floor.yml, a member play of three tasks that run on the
controller and template nothing (a check, a message, a recorded fact), run the same way on as many local hosts - what
Ansible itself costs per member and task on this machine, beside what site.yml's tasks template and run.

After each run, playbooks/detach.yml (not timed) takes the fleet apart again, the hub set-up
included, so every site.yml run registers from scratch. ``--tasks`` prints the task list of one
push and one pull member of the largest run.

    python tests/benchmarks/fleet.py [--sizes 1,8,16,32] [--engines karmada,ocm] [--tasks] [--requests] [--lab-dir DIR]

Uses the lab in ``--lab-dir`` (or ``FLEET_LAB_DIR``) when it runs (it needs at least as many members
as the largest size; one lab serves both engines, its hub has both engines' CRDs); otherwise starts
the hub and the members needed and stops them afterwards (about 450 MB of memory per cluster).
The simulations run in this process; the Hosted-mode klusterlets are left out, site.yml installs
every klusterlet on its own member.
"""

import argparse
import collections
import copy
import json
import os
import resource
import sys
import tempfile

import yaml

import benchlab
import simulate
from lab import Lab, count_requests

HERE = os.path.dirname(os.path.abspath(__file__))
USER_AGENT = "multicluster.fleet"  # the User-Agent of the collection's client (plugins/module_utils/kube/client.py)
PLAYBOOKS = os.path.join(benchlab.ROOT, "playbooks")
# Actions Ansible carries out in the controller process without starting a module.
CONTROLLER_ACTIONS = frozenset(
    "ansible.builtin." + name for name in (
        "assert", "debug", "fail", "set_fact", "include_role", "include_tasks", "import_role", "import_tasks",
        "include_vars", "validate_argument_spec", "meta", "set_stats", "pause"))
LEGEND = """  wall s     wall time of site.yml; x 1 mbr: its ratio to the 1-member run
  CPU s      user + system CPU of ansible-playbook and every process it waited for (workers, modules)
  CPU s/mbr  CPU s divided by the members; +CPU/mbr: CPU s added per member beyond the smallest size
  proc s     the part of CPU s spent in the ansible-playbook process itself; the rest is its workers (one
             process forked per task and host) and the module processes they start (or fork)
  mod CPU/mbr, wrk CPU/mbr: per member, the CPU of its module processes (and the commands the connection runs)
             and of the workers forked for its tasks (skipped ones included); the rest of CPU s is proc s and the hub
  modules/mbr, tasks/mbr, skip/mbr: per member, the module runs (retries included), the tasks
             run (controller-side ones included) and the tasks skipped
  hub req/mbr, mbr req/mbr: per member, the API requests of the collection's client on the hub and on the members
             (- when the lab writes no audit logs)
  sims CPU   CPU of the simulations (this process) meanwhile, competing for the same cores
  floor      tests/benchmarks/floor.yml on as many local hosts: three tasks per member that template nothing;
             +CPU/task: CPU s added per member beyond the smallest size, per task"""


def fleet_inventory(lab, engine, size):
    """The lab's inventory with its hub and first ``size`` members, for ``engine``."""
    with open(lab.inventory) as handle:
        inventory = yaml.safe_load(handle)
    inventory = copy.deepcopy(inventory)
    inventory["all"]["vars"]["fleet_engine"] = engine
    members = inventory["all"]["children"]["members"]["hosts"]
    available = list(members)
    if len(available) < size:
        raise SystemExit("the lab in %s has %d members, %d are needed" % (lab.dir, len(available), size))
    inventory["all"]["children"]["members"]["hosts"] = dict((name, members[name]) for name in available[:size])
    return inventory


def simulations(lab_dir, members):
    """The lab simulations of the hub and ``members`` (a view of the lab limited to them), not started."""
    view = Lab.load(lab_dir)
    view.clusters = dict((name, info) for name, info in view.clusters.items() if name == view.hub or name in members)
    return simulate.simulations(view, hosted=False)


def run_playbook(playbook, inventory, forks, task_log):
    """Run ansible-playbook with the task log callback; ``(seconds, cpu_seconds, returncode, output)``."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=benchlab.COLLECTIONS_ROOT, ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_PLUGINS=os.path.join(HERE, "callback_plugins"), ANSIBLE_CALLBACKS_ENABLED="task_log",
               FLEET_BENCH_TASK_LOG=task_log)
    if os.path.exists(task_log + ".workers"):
        os.remove(task_log + ".workers")  # the callback appends to it
    return benchlab.timed(playbook_command(os.path.join(PLAYBOOKS, playbook), inventory, forks), env)


def playbook_command(path, inventory, forks):
    """The ansible-playbook command that runs the playbook at ``path`` on ``inventory`` with ``forks`` forks."""
    return [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory, "--forks", str(forks), path]


def scaling(first, size, seconds, cpu):
    """The wall time of a run of ``size`` members as a multiple of the 1-member run (None when ``first``, the smallest
    run's ``(size, seconds, cpu)``, is not of one member), and the CPU seconds each member beyond ``first`` added (None
    for ``first`` itself)."""
    ratio = seconds / first[1] if first[0] == 1 else None
    added = (cpu - first[2]) / (size - first[0]) if size > first[0] else None
    return ratio, added


def column(value, width, digits=2):
    """``value`` right-aligned in ``width`` characters, ``-`` for None."""
    return "%*s" % (width, "-") if value is None else "%*.*f" % (width, digits, value)


def read_task_log(path):
    """The task events of the log, the CPU seconds of the ansible-playbook process (its last line) and the workers' lines."""
    with open(path) as handle:
        events = [json.loads(line) for line in handle]
    workers = []
    if os.path.exists(path + ".workers"):
        with open(path + ".workers") as handle:
            workers = [json.loads(line) for line in handle]
    return events[:-1], events[-1]["process_cpu"], workers


def runs_module(event):
    return event["event"] not in ("skipped", "item") and event["action"] not in CONTROLLER_ACTIONS


def per_member(events, members):
    """Module processes, tasks run and tasks skipped, each the mean over ``members``."""
    def mean(counted):
        return sum(1 for event in events if event["host"] in members and counted(event)) / float(len(members))
    return (mean(runs_module), mean(lambda event: event["event"] not in ("skipped", "retry", "item")),
            mean(lambda event: event["event"] == "skipped"))


def worker_cpu(workers, hosts):
    """The CPU seconds of the module processes and of the workers themselves, for the tasks of ``hosts``."""
    mine = [line for line in workers if line["host"] in hosts]
    return sum(line["module_cpu"] for line in mine), sum(line["worker_cpu"] for line in mine)


def print_tasks(events, workers, host, mode):
    print("\n  tasks of %s (%s) in the largest run: count, CPU s of its module processes + of its workers, action, task"
          " (m: runs a module; retries counted)" % (host, mode))
    counts = collections.OrderedDict()
    for event in events:
        if event["host"] == host and event["event"] not in ("skipped", "item"):
            key = (event["uuid"], event["action"], event["task"])
            counts[key] = counts.get(key, 0) + 1
    cpu = collections.defaultdict(lambda: [0.0, 0.0])
    for line in workers:
        if line["host"] == host:
            cpu[line["uuid"]][0] += line["module_cpu"]
            cpu[line["uuid"]][1] += line["worker_cpu"]
    for (uuid, action, task), count in counts.items():
        module, own = cpu.pop(uuid, (0.0, 0.0))
        print("    %3d %5.2f + %4.2f %s %-44s %s" % (count, module, own, "m" if action not in CONTROLLER_ACTIONS else " ", action, task))
    skipped = [own for module, own in cpu.values()]
    print("    %3d %5s + %4.2f   tasks skipped" % (len(skipped), "", sum(skipped)))


def audit_offsets(lab, clusters):
    """Where each cluster's audit log ends now: ``{cluster: offset}`` (empty when the lab writes no audit logs)."""
    return dict((name, os.path.getsize(lab.clusters[name]["audit_log"])) for name in clusters
                if lab.clusters[name].get("audit_log"))


def requests_since(lab, offsets):
    """The collection's requests on each cluster since ``offsets``: ``{cluster: Counter("verb resource")}``."""
    return dict((name, count_requests(lab.clusters[name]["audit_log"], USER_AGENT, offset)[0])
                for name, offset in offsets.items())


def print_requests(requests, hub, members):
    print("\n  API requests of the collection per member in the largest run, by verb and resource:")
    for side, clusters in (("hub", [hub]), ("members", members)):
        total = collections.Counter()
        for name in clusters:
            total.update(requests[name])
        for key, count in sorted(total.items(), key=lambda item: (-item[1], item[0])):
            print("    %-8s %6.2f  %s" % (side, count / float(len(members)), key))


def keep(directory, name, output):
    with open(os.path.join(directory, name), "w") as handle:
        handle.write(output)


def measure(lab, engine, size, tmp, forks=None):
    """Run site.yml with ``forks`` forks (default: one per host), then detach.yml; return the figures of the site.yml run
    and its task log.

    ``tmp`` receives the inventory, the task logs (``tasks-<engine>-<size>.jsonl``, ``detach-...``) and the
    output of both playbooks (``site-<engine>-<size>.log``, ``detach-...``)."""
    inventory = fleet_inventory(lab, engine, size)
    members = list(inventory["all"]["children"]["members"]["hosts"])
    path = os.path.join(tmp, "inventory-%s-%d.yml" % (engine, size))
    with open(path, "w") as handle:
        yaml.safe_dump(inventory, handle, sort_keys=False)
    task_log = os.path.join(tmp, "tasks-%s-%d.jsonl" % (engine, size))
    sims = [sim.start() for sim in simulations(lab.dir, members)]
    before = resource.getrusage(resource.RUSAGE_SELF)
    offsets = audit_offsets(lab, [lab.hub] + members)
    try:
        seconds, cpu, returncode, output = run_playbook("site.yml", path, forks or size + 1, task_log)
        after = resource.getrusage(resource.RUSAGE_SELF)
        requests = requests_since(lab, offsets)
        keep(tmp, "site-%s-%d.log" % (engine, size), output)
        if returncode != 0:
            raise SystemExit("site.yml with %d %s members failed (rc %d):\n%s" % (size, engine, returncode, output[-4000:]))
        _detached, _cpu, returncode, output = run_playbook(
            "detach.yml", path, size + 1, os.path.join(tmp, "detach-%s-%d.jsonl" % (engine, size)))
        keep(tmp, "detach-%s-%d.log" % (engine, size), output)
        if returncode != 0:
            raise SystemExit("detach.yml with %d %s members failed (rc %d):\n%s" % (size, engine, returncode, output[-4000:]))
    finally:
        for sim in sims:
            sim.stop()
    events, process_cpu, workers = read_task_log(task_log)
    modules, tasks, skipped = per_member(events, members)
    module_cpu, own_cpu = worker_cpu(workers, members)
    return {"seconds": seconds, "cpu": cpu, "process_cpu": process_cpu, "members": members, "events": events,
            "workers": workers, "module_cpu": module_cpu / size, "worker_cpu": own_cpu / size, "modules": modules, "tasks": tasks,
            "skipped": skipped, "hub_modules": len([e for e in events if e["host"] not in members and runs_module(e)]),
            "sims_cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, "requests": requests,
            "hub_requests": sum(requests[lab.hub].values()) / float(size) if requests else None,
            "member_requests": sum(sum(requests[name].values()) for name in members) / float(size) if requests else None}


FLOOR = os.path.join(HERE, "floor.yml")


def floor(size, tmp):
    """Run floor.yml on ``size`` local hosts; ``(seconds, cpu_seconds)``."""
    host = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    inventory = {"all": {"children": {"members": {"hosts": dict(("member%d" % index, host) for index in range(1, size + 1))}}}}
    path = os.path.join(tmp, "inventory-floor-%d.yml" % size)
    with open(path, "w") as handle:
        yaml.safe_dump(inventory, handle, sort_keys=False)
    seconds, cpu, returncode, output = benchlab.timed(playbook_command(FLOOR, path, size + 1),
                                                      dict(os.environ, ANSIBLE_NOCOLOR="1"))
    if returncode != 0:
        raise SystemExit("floor.yml with %d hosts failed (rc %d):\n%s" % (size, returncode, output[-4000:]))
    return seconds, cpu


def print_floor(sizes, tmp):
    with open(FLOOR) as handle:
        tasks = len(yaml.safe_load(handle)[0]["tasks"])
    print("\n  %-7s %7s %7s %7s %7s %9s %9s %9s" % (
        "floor", "members", "wall s", "x 1 mbr", "CPU s", "CPU s/mbr", "+CPU/mbr", "+CPU/task"))
    first = None
    for size in sizes:
        seconds, cpu = floor(size, tmp)
        first = first or (size, seconds, cpu)
        ratio, added = scaling(first, size, seconds, cpu)
        print("  %-7s %7d %7.1f %s %7.1f %9.2f %s %s" % (
            "", size, seconds, column(ratio, 7), cpu, cpu / size, column(added, 9),
            column(None if added is None else added / tasks, 9)), flush=True)
    print("  load now %s" % benchlab.load())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="1,8,16,32", help="comma-separated member counts (default 1,8,16,32)")
    parser.add_argument("--engines", default="karmada,ocm", help="comma-separated engines (default karmada,ocm)")
    parser.add_argument("--tasks", action="store_true", help="print the task list of a push and a pull member of the largest run")
    parser.add_argument("--requests", action="store_true",
                        help="print the API requests per member of the largest run, by verb and resource")
    parser.add_argument("--forks", type=int, help="forks of each site.yml run (default: members + 1, a fork per host; "
                        "ansible-playbook's own default is 5)")
    parser.add_argument("--keep", metavar="DIR", help="keep the inventories, task logs and playbook outputs in DIR")
    benchlab.add_lab_argument(parser)
    args = parser.parse_args()
    sizes = sorted(set(int(size) for size in args.sizes.split(",")))
    engines = [engine for engine in args.engines.split(",") if engine]

    clusters = ["hub"] + ["member%d" % index for index in range(1, sizes[-1] + 1)]
    with benchlab.lab(args.lab_dir, clusters, audit=True) as lab, tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        print("site.yml per fleet size, forks = %s (hub %s, %d CPUs, load %s)"
              % (args.forks or "members + 1", lab.clusters[lab.hub]["server"], os.cpu_count(), benchlab.load()))
        print(LEGEND)
        for engine in engines:
            print("\n  %-7s %7s %7s %7s %7s %9s %9s %7s %11s %11s %11s %9s %9s %11s %11s %8s" % (
                engine, "members", "wall s", "x 1 mbr", "CPU s", "CPU s/mbr", "+CPU/mbr", "proc s", "mod CPU/mbr",
                "wrk CPU/mbr", "modules/mbr", "tasks/mbr", "skip/mbr", "hub req/mbr", "mbr req/mbr", "sims CPU"))
            first = None
            for size in sizes:
                figures = measure(lab, engine, size, tmp, args.forks)
                first = first or (size, figures["seconds"], figures["cpu"])
                ratio, added = scaling(first, size, figures["seconds"], figures["cpu"])
                requests = [column(figures[key], 11, 1) for key in ("hub_requests", "member_requests")]
                print("  %-7s %7d %7.1f %s %7.1f %9.2f %s %7.1f %11.2f %11.2f %11.1f %9.1f %9.1f %s %s %8.1f" % (
                    "", size, figures["seconds"], column(ratio, 7), figures["cpu"], figures["cpu"] / size, column(added, 9),
                    figures["process_cpu"], figures["module_cpu"], figures["worker_cpu"], figures["modules"], figures["tasks"],
                    figures["skipped"], requests[0], requests[1], figures["sims_cpu"]), flush=True)
                last = figures
            print("  hub: %d module runs in the last run; load now %s" % (last["hub_modules"], benchlab.load()))
            if args.tasks:
                for host in last["members"][:2]:
                    mode = "pull" if engine == "ocm" or last["members"].index(host) % 2 else "push"
                    print_tasks(last["events"], last["workers"], host, mode)
            if args.requests and last["requests"]:
                print_requests(last["requests"], lab.hub, last["members"])
        print_floor(sizes, tmp)


if __name__ == "__main__":
    main()
