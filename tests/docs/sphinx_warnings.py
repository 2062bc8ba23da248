"""Fail on the warnings of a Sphinx build (its -w file) except those an offline build cannot avoid.

Offline, the intersphinx inventories of the Ansible, Python and Jinja documentation cannot be fetched, and so the
references the generated plugin pages make into them cannot be resolved: ansible-core's labels (action_plugins,
common_return_values, ...), other collections' (ansible_collections.kubernetes.core....) and ansible-core's
environment variables (ANSIBLE_...). Every other warning counts, among them any reference to a label of this
collection (ansible_collections.multicluster.fleet....).

    python tests/docs/sphinx_warnings.py WARNINGS_FILE
"""

import re
import sys

OWN_LABELS = "ansible_collections.multicluster.fleet."
UNREACHABLE = "failed to reach any of the inventories with the following issues:"
OFFLINE = (
    re.compile(r"WARNING: undefined label: '(?!%s)[^']+' \[ref\.ref\]$" % re.escape(OWN_LABELS)),
    re.compile(r"WARNING: 'envvar' reference target not found: ANSIBLE_[A-Z0-9_]+ \[ref\.envvar\]$"),
)


def warnings(text):
    """The warnings of a -w file, each with its continuation lines."""
    found = []
    for line in text.splitlines():
        if "WARNING:" in line or "ERROR:" in line or not found:
            found.append(line)
        else:
            found[-1] += "\n" + line
    return [w for w in found if w.strip()]


def main():
    with open(sys.argv[1]) as handle:
        found = warnings(handle.read())
    unreachable = [w for w in found if UNREACHABLE in w]
    counted = [w for w in found if w not in unreachable
               and not (unreachable and any(p.search(w.splitlines()[0]) for p in OFFLINE))]
    print("[docs] Sphinx: %d warnings, %d of them from intersphinx inventories offline (%d unreachable)"
          % (len(found), len(found) - len(counted), len(unreachable)), file=sys.stderr)
    if counted:
        sys.exit("Sphinx warnings:\n%s" % "\n".join(counted))


if __name__ == "__main__":
    main()
