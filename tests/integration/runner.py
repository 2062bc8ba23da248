"""Run this collection's modules and playbooks for real, the way Ansible runs them.

``run_module`` executes a module file as Ansible's module runner does (arguments in a JSON file,
check and diff mode as internal arguments), in a fresh Python process, and returns its JSON result.
``run_playbook`` runs ``ansible-playbook`` and returns the process result.
"""

import json
import os
import subprocess
import sys
import tempfile

import yaml

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


def run_playbook(plays, inventory=None, extra_vars=None, env=None, check=False, diff=False):
    """Run the plays (a list, written to a temporary playbook) with ansible-playbook (``--check``, ``--diff``)."""
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
        environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1",
                           ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
                           **(env or {}))
        return subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
