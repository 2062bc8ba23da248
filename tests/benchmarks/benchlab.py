"""What the benchmarks share: the test helpers on ``sys.path``, the checkout importable as
multicluster.fleet, and the lab they run against.

    import benchlab  # before the test helpers: puts tests/, tests/lab and tests/integration on sys.path

    benchlab.add_lab_argument(parser)
    with benchlab.lab(args.lab_dir, ["hub", "member1"]) as lab:
        ...

``lab`` attaches to the lab in ``--lab-dir`` (or ``FLEET_LAB_DIR``) when one was started there;
otherwise it starts the clusters the benchmark needs (``audit``: with audit logs) and stops them when the
block ends.
``timed(command, env)`` runs a command and returns its wall time and CPU time.
"""

import contextlib
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for folder in (os.path.join("tests", "integration"), os.path.join("tests", "lab"), "tests"):  # tests/conftest.py first
    sys.path.insert(0, os.path.join(ROOT, folder))

import conftest  # noqa: E402  (links the checkout as multicluster.fleet)
from lab import Lab  # noqa: E402

COLLECTIONS_ROOT = conftest.COLLECTIONS_ROOT


def add_lab_argument(parser):
    parser.add_argument("--lab-dir", default=os.environ.get("FLEET_LAB_DIR"),
                        help="directory of a lab started with tests/lab/lab.py up (default: $FLEET_LAB_DIR); "
                             "without one, a lab is started for the run and stopped afterwards")


@contextlib.contextmanager
def lab(lab_dir, clusters, audit=False):
    """The lab in ``lab_dir`` if one was started there, else a new lab of ``clusters`` (with audit logs if
    ``audit``), stopped at the end."""
    if lab_dir and os.path.exists(os.path.join(lab_dir, "state.json")):
        yield Lab.load(lab_dir)
        return
    started = Lab(lab_dir or tempfile.mkdtemp(prefix="fleet-bench-"))
    started.up(clusters, audit=audit)
    try:
        yield started
    finally:
        started.down()


def timed(command, env):
    """Run ``command``; ``(seconds, cpu_seconds, returncode, output)``, stdout and stderr together in ``output``.

    The CPU seconds are user + system time of the process and of the descendants it waited for (os.wait4),
    a figure that, unlike the wall time, does not depend on how busy the machine is.
    """
    with tempfile.TemporaryFile("w+") as output:
        start = time.monotonic()
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, text=True)
        _pid, status, usage = os.wait4(process.pid, 0)
        seconds = time.monotonic() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        return seconds, usage.ru_utime + usage.ru_stime, process.returncode, output.read()


def load():
    """The load averages, as uptime prints them."""
    return " ".join("%.2f" % figure for figure in os.getloadavg())
