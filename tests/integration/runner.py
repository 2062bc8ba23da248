"""Run this collection's modules and playbooks for real, the way Ansible runs them.

``run_module`` executes a module file as Ansible's module runner does (arguments in a JSON file,
check and diff mode as internal arguments), in a fresh Python process, and returns its JSON result.
``run_playbook`` runs ``ansible-playbook`` and returns the process result; ``start_playbook`` runs a playbook
in the background, ``finish_playbook`` waits for it, ``run_while_paused`` runs one while a lab simulation is down.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)\s+rescued=(\d+)",
                   re.MULTILINE)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "tests", "output", "collections")


def run_module(name, args, check_mode=False, diff=False, env=None):
    """Run ``plugins/modules/<name>.py`` with ``args``; return the parsed result (with ``rc``)."""
    module_args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": module_args}, handle)
    try:
        done = subprocess.run(
            [sys.executable, os.path.join(ROOT, "plugins", "modules", name + ".py"), handle.name],
            capture_output=True, text=True, check=False, env=dict(os.environ, PYTHONPATH=COLLECTIONS, **(env or {})),
        )
    finally:
        os.unlink(handle.name)
    try:
        result = json.loads(done.stdout)
    except ValueError:
        raise AssertionError("module %s printed no JSON (rc %s):\n%s\n%s" % (name, done.returncode, done.stdout, done.stderr))
    result["rc"] = done.returncode
    return result


def run_playbook(plays, inventory=None, extra_vars=None, env=None, check=False, diff=False, limit=None):
    """Run the plays (a list, written to a temporary playbook) with ansible-playbook (``--check``, ``--diff``,
    ``--limit``)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "play.yml")
        with open(path, "w") as handle:
            yaml.safe_dump(plays, handle)
        command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), path]
        if inventory:
            command += ["-i", inventory]
        if extra_vars:
            command += ["-e", json.dumps(extra_vars)]
        if check:
            command.append("--check")
        if diff:
            command.append("--diff")
        if limit:
            command += ["--limit", limit]
        environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1",
                           ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
                           **(env or {}))
        return subprocess.run(command, capture_output=True, text=True, env=environment, check=False)


def start_playbook(playbook, inventory, output, **extra_vars):
    """``playbooks/<playbook>`` (or the playbook at the path ``playbook``) run by ansible-playbook in the background,
    its output unbuffered into the file ``output``; :func:`finish_playbook` waits for it."""
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1", PYTHONUNBUFFERED="1",
                       ANSIBLE_LOCALHOST_WARNING="false")
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
               os.path.join(ROOT, "playbooks", playbook), "-e", json.dumps(extra_vars)]
    handle = open(output, "w")  # closed by finish_playbook()
    return subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, text=True, env=environment), handle


def finish_playbook(process, timeout=900):
    """Wait for a run :func:`start_playbook` started; return (rc, output, recap)."""
    proc, handle = process
    try:
        proc.wait(timeout=timeout)
    finally:
        handle.close()
    with open(handle.name) as stream:
        output = stream.read()
    return proc.returncode, output, recap_of(output)


def run_while_paused(simulation, retry_line, playbook, inventory, output, **extra_vars):
    """Run a playbook as :func:`start_playbook` does while ``simulation`` is paused (a controller or agent that is
    down), resuming it once the output has a line matching the regular expression ``retry_line`` (a task retrying its
    wait); return (rc, output, recap)."""
    from lab import wait_for  # tests/lab, which conftest.py puts on sys.path

    simulation.pause()
    running = start_playbook(playbook, inventory, output, **extra_vars)
    try:
        wait_for(lambda: re.search(retry_line, open(output).read(), re.MULTILINE), 120, "a line matching %r" % retry_line)
    finally:
        simulation.resume()
        result = finish_playbook(running)
    return result


def task_result(stdout, task, host):
    """How a task ended for a host (ok, changed, skipping, fatal), from the lines under its banners."""
    for section in re.findall(r"^TASK \[%s\] \**\n((?:(?!TASK \[).*\n)*)" % re.escape(task), stdout, re.MULTILINE):
        found = re.search(r"^(ok|changed|skipping|fatal): \[%s\]" % re.escape(host), section, re.MULTILINE)
        if found:
            return found.group(1)
    return None


def recap_of(stdout):
    """The PLAY RECAP of an ansible-playbook run: {host: {ok, changed, unreachable, failed, skipped, rescued}}."""
    return dict((m[0], dict(zip(("ok", "changed", "unreachable", "failed", "skipped", "rescued"), map(int, m[1:]))))
                for m in RECAP.findall(stdout))


def summary_rows(stdout):
    """The rows of the last fleet summary table a playbook printed, in order: [{column: value}] (RESULT with its
    reason); a cluster that two hosts of the run registered has a row for each."""
    block = stdout[stdout.rindex("TASK [Print the fleet summary]"):]
    lines = re.findall(r'^\s+"(.*)",?$', block[:block.index("\n}")], re.MULTILINE)
    header = re.split(r"\s{2,}", lines[0])
    return [dict(zip(header, re.split(r"\s{2,}", line, maxsplit=len(header) - 1))) for line in lines[1:]]


def summary(stdout):
    """The last fleet summary table a playbook printed, as {name: {column: value}} (RESULT with its reason)."""
    return dict((row["NAME"], row) for row in summary_rows(stdout))


def failures(stdout, after="PLAY [Summarize the fleet]"):
    """{host: message} of the hosts a playbook run failed, from the first line ``after`` on (the summary play)."""
    found = {}
    for host, result in re.findall(r"^fatal: \[(\S+)\]: FAILED! => (\{.*\})$", stdout[stdout.find(after):], re.MULTILINE):
        found[host] = json.loads(result).get("msg")
    return found
