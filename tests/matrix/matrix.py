"""The version matrix: every ansible-core release from the lowest meta/runtime.yml declares to the newest on PyPI, each
in a virtualenv of its own on the Python it needs, and the newest pre-release of ansible-core when there is one.

    python tests/matrix/matrix.py [--only 2.21] [--sanity both|oldest|newest|none] [--covered unit,compare,awx,smoke]
                                  [--steps unit,doc,sanity,compare,awx,smoke]

For each minor version from the declared lowest to the newest released (its newest release, on the oldest Python
found here that it installs on; the ansible-core running this script on the Python running it):
    unit        pytest tests/unit (without test_galaxy_importer.py when the calling run's unit stage ran it: the
                importer is Galaxy's, and it imports the same artifact whatever ansible-core builds it)
    doc         ansible-doc of every module, inventory and filter plugin
    compare     tests/integration/test_in_worker_execution.py: one playbook run with the modules on the controller and
                as module processes, the results compared (a lab of its own)
    smoke       tests/matrix/smoke.py: per engine, site.yml, again (changed=0), --check, detach.yml, with the modules
                on the controller (compare covers the module processes)
on the newest also ``awx``: tests/integration/test_awx.py (site.yml, again and detach.yml as ansible-runner jobs
in an AWX-shaped private data directory, both engines); and ansible-test sanity on the oldest and the newest version
(``--sanity``; tests/run.sh, whose sanity stage runs ansible-test on its own version, the newest, asks for the oldest
only). The entry of the ansible-core and Python running this script skips the steps ``--covered`` names (tests/run.sh's
unit, integration and molecule stages ran them there: its smoke set is what the molecule scenarios run, on the current
Kubernetes, and the older releases run it on the oldest). The pre-release runs smoke only, and its result is reported
without failing the matrix.

The labs of the matrix run the oldest Kubernetes the collection supports, $FLEET_LAB_BIN_OLDEST (tests/setup.sh: the
Debian build, 1.20), when it is set: the integration and molecule stages run the current one ($FLEET_LAB_BIN).

meta/runtime.yml declares a lower bound only: the newest release is whatever pip finds, so that the matrix is what
keeps it honest.

``--steps`` runs some of the steps only (default: all): tests/run.sh runs those without a lab (unit, doc, sanity) beside
its lab stages, at the lowest CPU priority, and those with labs (compare, awx, smoke) after them.

Pythons are looked for as /usr/bin/pythonX.Y and under pyenv's versions directory ($PYENV_ROOT, else ~/.pyenv);
none is downloaded. Which versions exist (and on which Python each installs) pip tells: ``pip index versions``.
Virtualenvs are kept under $FLEET_MATRIX_CACHE (default ~/.cache/multicluster-fleet/matrix), one per version,
reinstalled when the requirements change. Exits 1 if a step of a released version failed.
"""

import argparse
import concurrent.futures
import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from ansible.release import __version__ as ansible_release

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("FLEET_MATRIX_CACHE", os.path.expanduser("~/.cache/multicluster-fleet/matrix"))
COLLECTIONS = os.path.join(ROOT, "tests", "output", "collections")
# Test requirements the matrix does not need (linters, molecule; ansible-rulebook, whose lab test is no matrix step) or
# replaces (the ansible package: ansible-core==X).
SKIPPED_REQUIREMENTS = re.compile(r"^(ansible|ansible-lint|molecule|ansible-rulebook)\s*([<>=!~;]|$)")
# Pythons older than this run no ansible-core still maintained: not asked.
OLDEST_PYTHON = (3, 10)
PRE_RELEASE = re.compile(r"(a|b|rc)\d+$")
STEPS = ("unit", "doc", "sanity", "compare", "awx", "smoke")


def log(message):
    print("[matrix] %s" % message, flush=True)


def version_key(version):
    """Sort key: 2.21.0rc1 before 2.21.0."""
    release = re.match(r"^[\d.]*\d", version).group(0)
    suffix = version[len(release):]
    return tuple(int(part) for part in release.split(".")) + ((1, "") if not suffix else (0, suffix))


def declared_lowest():
    """The lowest minor version, as a tuple, of meta/runtime.yml's requires_ansible (>=A.B.C)."""
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as handle:
        text = handle.read()
    found = re.search(r'^requires_ansible:\s*["\']>=(\d+)\.(\d+)(?:\.\d+)?["\']', text, re.MULTILINE)
    if not found:
        raise SystemExit("meta/runtime.yml: requires_ansible is not of the form '>=A.B.C' (a lower bound only)")
    return int(found.group(1)), int(found.group(2))


def pythons():
    """{'3.11': path, ...}: the interpreters of this machine, system ones first, then pyenv's."""
    found = {}
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = sorted(glob.glob("/usr/bin/python3.[0-9]*"))
    candidates += sorted(glob.glob(os.path.join(pyenv, "versions", "*", "bin", "python3.[0-9]*")))
    for path in candidates:
        name = re.search(r"python(3\.\d+)$", path)
        if name and tuple(map(int, name.group(1).split("."))) < OLDEST_PYTHON:
            continue
        if name and name.group(1) not in found and os.access(path, os.X_OK):
            found[name.group(1)] = path
    return found


def available(python):
    """The ansible-core versions pip finds installable on ``python`` (pre-releases included)."""
    done = subprocess.run([python, "-m", "pip", "index", "versions", "--pre", "ansible-core"],
                          capture_output=True, text=True, check=False)
    listed = re.search(r"^Available versions: (.*)$", done.stdout, re.MULTILINE)
    return listed.group(1).split(", ") if listed else []


def select(low, interpreters, here):
    """([(version, python version, python path)] from ``low`` to the newest released minor, pre-release entry or None).

    ``here`` is (ansible-core, Python version, Python path) of this script: that release is tested on this Python."""
    where = {}  # version -> oldest Python it installs on
    for name in sorted(interpreters, key=lambda n: tuple(map(int, n.split(".")))):
        for version in available(interpreters[name]):
            where.setdefault(version, name)
    where[here[0]] = here[1]
    interpreters = dict(interpreters, **{here[1]: here[2]})
    released = [v for v in where if not PRE_RELEASE.search(v) and v.startswith("%d." % low[0])]
    high = max(int(v.split(".")[1]) for v in released) if released else low[1]
    chosen = []
    for minor in range(low[1], high + 1):
        releases = [v for v in released if v.startswith("%d.%d." % (low[0], minor))]
        if not releases:
            raise SystemExit("no release of ansible-core %d.%d installs on %s" % (low[0], minor, ", ".join(interpreters)))
        newest = max(releases, key=version_key)
        chosen.append((newest, where[newest], interpreters[where[newest]]))
    newest = max(where, key=version_key) if where else None
    pre = None
    if newest and PRE_RELEASE.search(newest) and version_key(newest) > version_key(chosen[-1][0]):
        pre = (newest, where[newest], interpreters[where[newest]])
    return chosen, pre


def requirements():
    lines = []
    for name in ("meta/requirements.txt", "tests/requirements.txt"):
        with open(os.path.join(ROOT, name)) as handle:
            lines += [line.strip() for line in handle if line.strip() and not line.startswith("#")
                      and not SKIPPED_REQUIREMENTS.match(line.strip())]
    return lines


def virtualenv(version, python):
    """The bin directory of the virtualenv of ``version`` (created or brought up to date)."""
    wanted = ["ansible-core==%s" % version] + requirements()
    stamp = hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:16]
    directory = os.path.join(CACHE, "ansible-core-%s" % version)
    os.makedirs(CACHE, exist_ok=True)
    with open(directory + ".lock", "w") as lock:  # two matrix runs at once (tests/run.sh's two lanes) make it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _virtualenv(directory, wanted, stamp, version, python)


def _virtualenv(directory, wanted, stamp, version, python):
    marker = os.path.join(directory, ".fleet-requirements")
    if os.path.exists(marker) and open(marker).read() == stamp:
        return os.path.join(directory, "bin")
    shutil.rmtree(directory, ignore_errors=True)
    subprocess.run([python, "-m", "venv", directory], check=True)
    pip = [os.path.join(directory, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    done = subprocess.run(pip + wanted, capture_output=True, text=True, check=False)
    if done.returncode:
        print(done.stdout[-4000:] + done.stderr[-4000:], flush=True)
        raise SystemExit("[matrix] could not install ansible-core %s on Python at %s" % (version, python))
    with open(marker, "w") as handle:
        handle.write(stamp)
    return os.path.join(directory, "bin")


def plugin_names():
    """{'module': [...], 'inventory': [...], 'filter': [...]} of the collection."""
    def names(directory, suffix):
        return sorted("multicluster.fleet." + name[:-len(suffix)] for name in os.listdir(os.path.join(ROOT, "plugins", directory))
                      if name.endswith(suffix) and not name.startswith("_"))
    return {"module": names("modules", ".py"), "inventory": names("inventory", ".py"), "filter": names("filter", ".yml")}


def environment(bin_dir):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_FORCE_COLOR="0", PY_COLORS="0")
    if env.get("FLEET_LAB_BIN_OLDEST"):
        env["FLEET_LAB_BIN"] = env["FLEET_LAB_BIN_OLDEST"]
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env.pop("VIRTUAL_ENV", None)
    env.pop("MULTICLUSTER_FLEET_MODULE_PROCESS", None)
    return env


def step(label, command, env, cwd=ROOT, check_output=None):
    """Run ``command``; (ok, seconds, output tail)."""
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    output = done.stdout + done.stderr
    ok = done.returncode == 0 and (check_output is None or check_output(output))
    errors = [line for line in output.splitlines() if line.startswith("ERROR: ") or line.startswith("FAILED ")]
    return ok, time.monotonic() - started, "\n".join(errors[:200] + ["..."] + output[-6000:].splitlines())


def doc_step(bin_dir, env):
    def clean(output):
        return "ERROR" not in output and "[WARNING]" not in output

    def run():
        outputs, ok, seconds = [], True, 0.0
        for kind, names in plugin_names().items():
            done = step("doc", [os.path.join(bin_dir, "ansible-doc"), "-t", kind] + names, env, check_output=clean)
            ok, seconds = ok and done[0], seconds + done[1]
            outputs.append(done[2])
        return ok, seconds, "\n".join(outputs)
    return run()


def sanity_step(bin_dir, python_version, env):
    """ansible-test sanity on a copy of the tracked tree at ansible_collections/multicluster/fleet."""
    top = tempfile.mkdtemp(prefix="fleet-sanity-")
    try:
        tree = os.path.join(top, "ansible_collections", "multicluster", "fleet")
        os.makedirs(tree)
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                               capture_output=True, check=True).stdout
        subprocess.run(["rsync", "-a", "--from0", "--files-from=-", "./", tree + "/"], cwd=ROOT, input=files, check=True)
        subprocess.run("git init -q && git add -A", shell=True, cwd=tree, check=True)
        return step("sanity", [os.path.join(bin_dir, "ansible-test"), "sanity", "--local", "--requirements", "--python",
                               python_version, "--color", "no"], env, cwd=tree)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run this minor version (e.g. 2.21) alone")
    parser.add_argument("--sanity", choices=["both", "oldest", "newest", "none"], default="both",
                        help="the versions ansible-test sanity runs on (default: the oldest and the newest)")
    parser.add_argument("--covered", default="", metavar="STEP[,STEP]",
                        help="steps (unit, compare, awx, smoke) the calling test run already ran on the ansible-core and Python "
                             "running this script: not run again for that entry (tests/run.sh's unit, integration and molecule stages)")
    parser.add_argument("--steps", default=",".join(STEPS), metavar="STEP[,STEP]",
                        help="the steps to run (default: all of %s)" % ", ".join(STEPS))
    args = parser.parse_args()
    covered = set(filter(None, args.covered.split(",")))
    run_steps = set(filter(None, args.steps.split(",")))
    if run_steps - set(STEPS):
        parser.error("--steps: unknown %s (known: %s)" % (", ".join(sorted(run_steps - set(STEPS))), ", ".join(STEPS)))
    started = time.monotonic()
    low = declared_lowest()
    interpreters = pythons()
    here = (ansible_release, "%d.%d" % sys.version_info[:2])
    chosen, pre = select(low, interpreters, here + (sys.executable,))
    log("ansible-core %d.%d (meta/runtime.yml's lowest) to %s (the newest release); Pythons here: %s" % (
        low + (chosen[-1][0], ", ".join("%s %s" % item for item in sorted(interpreters.items())))))
    lab = os.environ.get("FLEET_LAB_BIN_OLDEST") or os.environ.get("FLEET_LAB_BIN") or "tests/lab/build.sh's build"
    log("labs: %s" % lab)
    for version, python_version, _path in chosen:
        own = covered and (version, python_version) == here
        log("found ansible-core %s (Python %s)%s" % (
            version, python_version, " - the test run's own: %s covered by it" % ", ".join(sorted(covered)) if own else ""))
    log("pre-release: %s" % ("ansible-core %s (Python %s), reported, not failing" % pre[:2] if pre else "none newer"))
    if args.only:
        chosen = [entry for entry in chosen if entry[0].startswith(args.only + ".")]
        pre = pre if pre and pre[0].startswith(args.only + ".") else None
    results = []  # (version, step, ok, seconds, counts)
    # One smoke set (two labs) at a time, beside the other steps: six labs at once spent the processors on keeping the
    # labs alive (about 0.15 cores each when idle) and made every step several times slower.
    smokes = concurrent.futures.ThreadPoolExecutor(1)
    pending = []

    def record(version, label, outcome, counts=True):
        ok, seconds, output = outcome
        results.append((version, label, ok, seconds, counts))
        log("%-12s %-8s %6.1f s  %s" % (version, label, seconds, "ok" if ok else "FAILED"))
        if not ok:
            print(output, flush=True)
        elif label == "smoke":  # its steps and their times
            print("\n".join(line for line in output.splitlines() if line.startswith("[matrix]")), flush=True)

    def runs(label, version, python_version):
        """Whether step ``label`` runs for that entry: asked for (--steps), and not covered by the calling run."""
        return label in run_steps and not (label in covered and (version, python_version) == here)

    # Every virtualenv first, so that each smoke set starts as soon as a smoke thread is free; then the other steps.
    entries = []
    for version, python_version, python in chosen + ([pre] if pre and "smoke" in run_steps else []):
        t0 = time.monotonic()
        # The test run's own ansible-core and Python run from its own virtualenv.
        bin_dir = os.path.dirname(sys.executable) if (version, python_version) == here else virtualenv(version, python)
        log("%-12s venv     %6.1f s  (Python %s, %s)" % (version, time.monotonic() - t0, python_version, bin_dir))
        env = environment(bin_dir)
        is_pre = pre is not None and version == pre[0]
        # A released version's compare step runs the modules as module processes beside the controller path, so the
        # smoke sets run the controller path alone (the pre-release's too: it is reported, not failing).
        smoke = [os.path.join(bin_dir, "python"), os.path.join(ROOT, "tests", "matrix", "smoke.py"), "--paths", "controller"]
        if runs("smoke", version, python_version):
            pending.append((version, not is_pre, smokes.submit(step, "smoke", smoke, env)))
        if not is_pre:
            entries.append((version, python_version, bin_dir, env))
    wanted = {"both": (0, len(chosen) - 1), "oldest": (0,), "newest": (len(chosen) - 1,), "none": ()}[args.sanity]

    def steps(index, version, python_version, bin_dir, env):
        """The other steps of one version, one after the other: [(label, outcome)]."""
        py = os.path.join(bin_dir, "python")
        done = []
        if runs("unit", version, python_version):
            unit = [py, "-m", "pytest", "tests/unit", "-q", "-p", "no:cacheprovider"]
            if "unit" in covered:  # the calling run's unit stage imported the artifact with galaxy-importer
                unit.append("--ignore=tests/unit/test_galaxy_importer.py")
            done.append(("unit", step("unit", unit, env)))
        if runs("doc", version, python_version):
            done.append(("doc", doc_step(bin_dir, env)))
        if runs("compare", version, python_version):
            done.append(("compare", step("compare", [py, "-m", "pytest", "tests/integration/test_in_worker_execution.py",
                                                     "-q", "-p", "no:cacheprovider"], env)))
        if index == len(chosen) - 1 and runs("awx", version, python_version):
            done.append(("awx", step("awx", [py, "-m", "pytest", "tests/integration/test_awx.py", "-q", "-p",
                                             "no:cacheprovider"], env)))
        if index in wanted and runs("sanity", version, python_version):
            done.append(("sanity", sanity_step(bin_dir, python_version, env)))
        return done

    # The versions' other steps side by side too (each version's in order): one version's steps alone left the
    # processors idle at the end of the matrix. Their results are printed version by version.
    with concurrent.futures.ThreadPoolExecutor(2) as others:
        chains = [(entry[0], others.submit(steps, index, *entry)) for index, entry in enumerate(entries)]
        for version, future in chains:
            for label, outcome in future.result():
                record(version, label, outcome)
    for version, counts, future in pending:
        record(version, "smoke", future.result(), counts)
    smokes.shutdown()
    failed = [(version, label) for version, label, ok, _seconds, counts in results if counts and not ok]
    log("summary (%.0f s in all):" % (time.monotonic() - started))
    for version, label, ok, seconds, counts in results:
        note = "" if counts else " (pre-release: reported, not failing)"
        log("  %-12s %-8s %6.1f s  %s%s" % (version, label, seconds, "ok" if ok else "FAILED", note))
    if failed:
        log("FAILED: %s" % ", ".join("%s %s" % item for item in failed))
        return 1
    log("%d passed, 0 failed" % sum(1 for _v, _l, _ok, _s, counts in results if counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
