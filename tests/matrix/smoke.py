"""The lab smoke set of the version matrix, for the ansible-core of the Python running it.

Per engine (side by side), on a lab of its own (hub, member1 push, member2 pull, every simulation running), twice: once with the
collection's modules running on the controller (the default) and once as module processes (the off switch,
MULTICLUSTER_FLEET_MODULE_PROCESS=1):

    site.yml              registers the fleet
    site.yml again        changed=0 on every host
    site.yml --check      changed=0 on every host
    detach.yml            removes the fleet, so that the next round starts from the same state

    python tests/matrix/smoke.py [--engines karmada,ocm] [--paths controller,module-process]

Prints one line per step with its time; exits 1 if a step failed.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = os.path.join(ROOT, "tests", "lab")
COLLECTIONS = os.path.join(ROOT, "tests", "output", "collections")
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)
PATHS = {"controller": {}, "module-process": {"MULTICLUSTER_FLEET_MODULE_PROCESS": "1"}}


def link_collection():
    namespace = os.path.join(COLLECTIONS, "ansible_collections", "multicluster")
    os.makedirs(namespace, exist_ok=True)
    if not os.path.islink(os.path.join(namespace, "fleet")):
        os.symlink(ROOT, os.path.join(namespace, "fleet"))


def playbook(name, inventory, env, *options):
    """(ok, changed hosts, seconds, output) of ansible-playbook playbooks/<name> on the lab's inventory."""
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
               os.path.join(ROOT, "playbooks", name)] + list(options)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    output = done.stdout + done.stderr
    recap = RECAP.findall(done.stdout)
    changed = sorted(host for host, _ok, changed, _unreachable, _failed in recap if int(changed))
    ok = done.returncode == 0 and bool(recap)
    return ok, changed, time.monotonic() - started, output


def smoke(engine, paths):
    failures = []
    with tempfile.TemporaryDirectory(prefix="fleet-smoke-") as top:
        lab_dir = os.path.join(top, "lab")
        up = subprocess.run([sys.executable, os.path.join(LAB, "lab.py"), "up", "--dir", lab_dir, "--engine", engine],
                            capture_output=True, text=True, check=False)
        if up.returncode:
            return ["%s: the lab did not start: %s" % (engine, up.stderr[-2000:])]
        try:
            subprocess.run([sys.executable, os.path.join(LAB, "simulate.py"), "--lab-dir", lab_dir, "--without-hosted"],
                           check=True)
            inventory = os.path.join(lab_dir, "inventory.yml")
            for path in paths:
                env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_FORCE_COLOR="0")
                env.pop("MULTICLUSTER_FLEET_MODULE_PROCESS", None)
                env.update(PATHS[path])
                steps = [("site.yml", "site.yml", (), None), ("site.yml again", "site.yml", (), []),
                         ("site.yml --check", "site.yml", ("--check",), []), ("detach.yml", "detach.yml", (), None)]
                for label, name, options, want_changed in steps:
                    ok, changed, seconds, output = playbook(name, inventory, env, *options)
                    verdict = ok and (want_changed is None or changed == want_changed)
                    print("[matrix] %-8s %-15s %-17s %6.1f s  %s" % (
                        engine, path, label, seconds, "ok" if verdict else "FAILED"), flush=True)
                    if not verdict:
                        detail = "changed on %s" % ", ".join(changed) if ok else output[-4000:]
                        failures.append("%s %s %s: %s" % (engine, path, label, detail))
                        break
        finally:
            subprocess.run([sys.executable, os.path.join(LAB, "simulate.py"), "--lab-dir", lab_dir, "--stop"],
                           check=False)
            subprocess.run([sys.executable, os.path.join(LAB, "lab.py"), "down", "--dir", lab_dir],
                           capture_output=True, check=False)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="karmada,ocm")
    parser.add_argument("--paths", default=",".join(PATHS))
    args = parser.parse_args()
    link_collection()
    engines = args.engines.split(",")
    # The engines' labs run side by side, so that one engine's waits on its lab overlap the other's work.
    with concurrent.futures.ThreadPoolExecutor(len(engines)) as pool:
        failures = sum(pool.map(lambda engine: smoke(engine, args.paths.split(",")), engines), [])
    for failure in failures:
        print("[matrix] FAILED %s" % failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
