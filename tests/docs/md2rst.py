"""The collection's guides in the docsite: docs/*.md (the source, read in the repository and on Galaxy) converted
to docs/docsite/rst/*.rst, the extra docs antsibull-docs puts on the collection's docsite (it reads RST only).

    python tests/docs/md2rst.py           # write docs/docsite/rst/<name>.rst for every guide
    python tests/docs/md2rst.py --check   # exit 1 if a written file differs from what the guide converts to

pandoc converts (the one pypandoc-binary ships, pinned in tests/requirements.txt, so that every machine writes
the same RST); then each section label pandoc derives from a heading is dropped, and the document gets the one label
antsibull-docs requires, ansible_collections.multicluster.fleet.docsite.<name>.
"""

import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUIDES = ("architecture", "awx", "addons", "labels", "cluster_sets", "maintenance", "versions", "hub_changes",
          "upgrades", "self_healing", "inventory", "modules", "performance", "development")
LABEL_PREFIX = "ansible_collections.multicluster.fleet.docsite."


def pandoc():
    try:
        import pypandoc
    except ImportError:
        sys.exit("pypandoc-binary is not installed beside %s (tests/requirements.txt)" % sys.executable)
    return pypandoc.get_pandoc_path()


def convert(name, executable):
    source = os.path.join("docs", name + ".md")
    rst = subprocess.run([executable, "--from", "gfm", "--to", "rst", "--wrap", "preserve",
                          os.path.join(ROOT, source)],
                         stdout=subprocess.PIPE, check=True, universal_newlines=True).stdout
    rst = re.sub(r"^\.\. _[^:\n]+:\n\n", "", rst, flags=re.MULTILINE)
    return ".. Generated from %s by tests/docs/md2rst.py: edit the guide, then run that script.\n\n.. _%s%s:\n\n%s" % (
        source, LABEL_PREFIX, name, rst)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    args = parser.parse_args()
    executable = pandoc()
    stale = []
    for name in GUIDES:
        target = os.path.join(ROOT, "docs", "docsite", "rst", name + ".rst")
        wanted = convert(name, executable)
        try:
            with open(target) as handle:
                current = handle.read()
        except FileNotFoundError:
            current = None
        if current == wanted:
            continue
        stale.append(os.path.relpath(target, ROOT))
        if not args.check:
            with open(target, "w") as handle:
                handle.write(wanted)
    if args.check and stale:
        sys.exit("not converted from docs/*.md as they are now: %s - run: python tests/docs/md2rst.py"
                 % ", ".join(stale))
    for path in stale:
        print("wrote %s" % path)


if __name__ == "__main__":
    main()
