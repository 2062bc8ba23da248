"""The collection artifact: ``ansible-galaxy collection build`` ships the collection's content and nothing else.

The source tree (the files git tracks or would track, symbolic links kept as links) is copied to a temporary
directory together with what test runs and tools leave behind in a checkout; the collection is built from that copy
and the tarball's members are compared with an allow-list of top-level entries and with the source files. The
artifact, installed, runs every module through its action plugin.
"""

import os
import re
import subprocess
import sys
import tarfile
import textwrap

import pytest
import yaml

from source_tree import ROOT, ansible_galaxy, copy_sources, source_files

# Everything the artifact may hold at its top level. MANIFEST.json and FILES.json are written by
# ansible-galaxy; the rest is content of this collection.
ALLOWED_TOP_LEVEL = {
    "MANIFEST.json", "FILES.json", "README.md", "CHANGELOG.rst", "requirements.txt", "LICENSES",
    "changelogs", "docs", "extensions", "meta", "playbooks", "plugins", "roles", "tests",
}
GENERATED_BY_BUILD = {"MANIFEST.json", "FILES.json"}

# What test runs and tools write into a checkout: each must stay out of the artifact.
GENERATED = {
    ".pytest_cache/v/cache/nodeids": "[]",
    "tests/unit/.pytest_cache/v/cache/lastfailed": "{}",
    "plugins/module_utils/__pycache__/client.cpython-311.pyc": "",
    "tests/unit/__pycache__/test_packaging.cpython-311-pytest-8.0.0.pyc": "",
    "plugins/modules/cluster_info.pyc": "",
    ".ansible/collections/ansible_collections/.keep": "",
    "extensions/molecule/karmada/.ansible/roles/.keep": "",
    "tests/output/collections/ansible_collections/multicluster/.keep": "",
    "tests/output/.tmp/sanity/result.json": "{}",
    ".tox/py311/pyvenv.cfg": "",
    ".mypy_cache/3.11/cache.db": "",
    ".ruff_cache/CACHEDIR.TAG": "",
    ".cache/ansible-compat/config.json": "{}",
    ".benchmarks/Linux-CPython-3.11-64bit/0001_run.json": "{}",
    "changelogs/.plugin-cache.yaml": "",
    "lab/hub/etcd/member/wal/0.wal": "",
    "lab/inventory.yml": "",
    "multicluster-fleet-0.0.1.tar.gz": "",
    "tests/output/multicluster-fleet-0.0.1.tar.gz": "",
    ".ee-build/multicluster-fleet-0.0.1.tar.gz": "",
}


def _is_hidden(path):
    return any(part.startswith(".") for part in path.split("/"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``(source files, tarball member names)`` of the collection built from a copy with generated files."""
    source = tmp_path_factory.mktemp("source")
    output = tmp_path_factory.mktemp("output")
    files = source_files()
    copy_sources(source)
    for path, content in GENERATED.items():
        target = source / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    galaxy = ansible_galaxy()
    assert galaxy, "ansible-galaxy not found beside %s or on PATH" % sys.executable
    done = subprocess.run([galaxy, "collection", "build", "--output-path", str(output), str(source)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert done.returncode == 0, done.stdout
    tarballs = sorted(output.glob("multicluster-fleet-*.tar.gz"))
    assert len(tarballs) == 1, "expected one collection artifact in %s, found %s" % (output, tarballs)
    with tarfile.open(str(tarballs[0])) as tarball:
        members = {m.name for m in tarball.getmembers() if m.isfile() or m.issym()}
    return files, members, tarballs[0]


def test_only_allowed_top_level_entries(built):
    members = built[1]
    assert sorted(m for m in members if m.split("/")[0] not in ALLOWED_TOP_LEVEL) == []


def test_nothing_generated_is_shipped(built):
    files, members = built[:2]
    unexpected = members - set(files) - GENERATED_BY_BUILD
    assert sorted(unexpected) == [], "files in the artifact that are not collection sources"
    assert sorted(m for m in members if _is_hidden(m)) == []


def test_every_source_file_under_an_allowed_entry_is_shipped(built):
    files, members = built[:2]
    content = {f for f in files if f.split("/")[0] in ALLOWED_TOP_LEVEL and not _is_hidden(f)}
    assert sorted(content - members) == [], "collection sources missing from the artifact"
    assert GENERATED_BY_BUILD <= members


def test_every_licence_a_file_names_ships(built):
    """Each licence file that a source header points at (``see LICENSES/<id>.txt``) and each licence galaxy.yml
    declares ships in the artifact, with the licence's text."""
    files, members = built[:2]
    named = set()
    for path in files:
        with open(os.path.join(ROOT, path), "rb") as handle:
            named.update(re.findall(r"\bLICENSES/[A-Za-z0-9.+-]+\.txt\b", handle.read().decode("utf-8", "replace")))
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        named.update("LICENSES/%s.txt" % spdx for spdx in yaml.safe_load(handle)["license"])
    assert "LICENSES/GPL-3.0-or-later.txt" in named
    assert sorted(named - members) == [], "licence files named but not shipped"
    with open(os.path.join(ROOT, "LICENSES", "GPL-3.0-or-later.txt")) as handle:
        text = handle.read()
    assert "GNU GENERAL PUBLIC LICENSE" in text and "Version 3, 29 June 2007" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a notice


def test_every_module_runs_through_its_action_plugin_once_installed(built, tmp_path):
    """ansible-core loads each action plugin of the installed artifact as its module's, which runs the module on the
    controller (``-vvv`` says so) - here up to its argument validation, which refuses the task. (The action plugins
    stay files: antsibull-docs reads a link in plugins/action as a redirect of the module to another.)"""
    modules = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules")) if f.endswith(".py"))
    installed = tmp_path / "collections"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}  # not the checkout (tests/conftest.py)
    env.update(ANSIBLE_COLLECTIONS_PATH=str(installed), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false")
    done = subprocess.run([ansible_galaxy(), "collection", "install", "--offline", "-p", str(installed), str(built[2])],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert done.returncode == 0, done.stdout
    playbook = tmp_path / "modules.yml"
    playbook.write_text(textwrap.dedent("""\
        - hosts: localhost
          gather_facts: false
          vars:
            ansible_python_interpreter: "{{ ansible_playbook_python }}"
          tasks:
        """) + "".join("    - multicluster.fleet.%s: {packaging_probe: 1}\n      ignore_errors: true\n" % m for m in modules))
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-vvv", str(playbook)],
                          cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert done.returncode == 0 and "ignored=%d " % len(modules) in done.stdout, done.stdout[-3000:]
    for module in modules:
        assert "running multicluster.fleet.%s on the controller, in a child of the worker" % module in done.stdout, module
    # each refused by its own argument spec (its required options first), not for want of a plugin or module
    refused = r'"msg": "(missing required arguments|one of the following is required|Unsupported parameters for \(multi)'
    assert len(re.findall(refused, done.stdout)) == len(modules)
