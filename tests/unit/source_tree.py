"""The checkout the packaging tests build the collection from: its ``ROOT``, its source files (``source_files``: what git
tracks or would track), a copy of them (``copy_sources``) and the ansible-galaxy that builds it (``ansible_galaxy``)."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def source_files():
    """The collection's source files: tracked, or new and not ignored (what the next commit holds)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout.decode("utf-8")
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.fail("this test reads the source files from git, in a git checkout with git installed: %s" % exc)
    return sorted(p for p in set(listed.split("\0")) if p and os.path.isfile(os.path.join(ROOT, p)))


def copy_sources(target):
    """Copy the source files into the directory ``target``, a symbolic link as a link (the action plugins)."""
    for path in source_files():
        destination = os.path.join(str(target), path)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, path), destination, follow_symlinks=False)


def ansible_galaxy():
    beside_python = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
    return beside_python if os.path.exists(beside_python) else shutil.which("ansible-galaxy")
