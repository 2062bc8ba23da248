"""Make this checkout importable as ``ansible_collections.multicluster.fleet``.

ansible-test and Ansible itself load the collection from an ``ansible_collections/<ns>/<name>`` tree;
the tests build that tree as a symlink under tests/output so they run from a plain checkout.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS_ROOT = os.path.join(ROOT, "tests", "output", "collections")


def _link_collection():
    ns_dir = os.path.join(COLLECTIONS_ROOT, "ansible_collections", "multicluster")
    link = os.path.join(ns_dir, "fleet")
    os.makedirs(ns_dir, exist_ok=True)
    try:
        os.symlink(ROOT, link)
    except FileExistsError:  # made earlier, or by another pytest-xdist worker meanwhile
        pass
    return COLLECTIONS_ROOT


_link_collection()
if COLLECTIONS_ROOT not in sys.path:
    sys.path.insert(0, COLLECTIONS_ROOT)
os.environ["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join(
    p for p in (COLLECTIONS_ROOT, os.environ.get("ANSIBLE_COLLECTIONS_PATH")) if p
)
