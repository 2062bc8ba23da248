#!/usr/bin/env bash
# The collection's documentation as Galaxy and the Ansible docsite build it, offline:
#   1. docs/docsite/rst/*.rst are the guides docs/*.md as they are now (tests/docs/md2rst.py --check);
#   2. antsibull-docs lint-collection-docs --plugin-docs: plugin, module and role documentation, the extra docs
#      (docs/docsite/extra-docs.yml) and docs/docsite/links.yml;
#   3. the docsite: antsibull-docs writes the RST for every plugin and role and the guides (failing on any
#      documentation it cannot parse), Sphinx builds the HTML. Every Sphinx warning fails the build except those of
#      intersphinx inventories that cannot be fetched offline and of the references into them
#      (tests/docs/sphinx_warnings.py).
#
#   bash tests/docs/build.sh            # check and build in a temporary directory
#   bash tests/docs/build.sh DIR        # ... and keep the HTML in DIR (open DIR/index.html)
#
# Needs the Python packages of tests/requirements.txt (antsibull-docs, Sphinx, sphinx-ansible-theme, pypandoc-binary).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
keep="${1:-}"
cd "$root"
started=$SECONDS

python tests/docs/md2rst.py --check

top="$(mktemp -d)"
trap 'rm -rf "$top"' EXIT
tree="$top/collections/ansible_collections/multicluster/fleet"
mkdir -p "$tree"
git ls-files -z --cached --others --exclude-standard | rsync -a --from0 --files-from=- ./ "$tree/"
export ANSIBLE_COLLECTIONS_PATH="$top/collections"

echo "[docs] antsibull-docs lint-collection-docs --plugin-docs" >&2
(cd "$tree" && antsibull-docs lint-collection-docs --plugin-docs .)

echo "[docs] docsite" >&2
site="$top/site"
mkdir -m 700 "$site"  # antsibull-docs writes only into a directory no one else may write to
antsibull-docs sphinx-init --use-current --dest-dir "$site" multicluster.fleet >/dev/null
antsibull-docs --config-file "$site/antsibull-docs.cfg" collection --use-current --fail-on-error \
  --cleanup everything --dest-dir "$site/rst" multicluster.fleet
sphinx-build -q -b html -c "$site" -w "$site/warnings.txt" "$site/rst" "$site/html" 2>"$site/sphinx.log" \
  || { cat "$site/sphinx.log" >&2; exit 1; }
python tests/docs/sphinx_warnings.py "$site/warnings.txt"
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  rsync -a --delete "$site/html/" "$keep/"
  echo "[docs] HTML in $keep" >&2
fi
echo "[docs] passed in $((SECONDS - started)) s" >&2
