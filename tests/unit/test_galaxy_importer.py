"""Publishing: the collection artifact passes galaxy-importer, the importer Galaxy and Automation Hub run on every
upload.

The artifact is built from a copy of the source tree, as test_packaging builds it, and imported with
``python -m galaxy_importer.main`` configured to run here: without containers, and without the importer's
``ansible-test sanity`` step, which the ``sanity`` stage of tests/run.sh runs on the same sources. Everything else
the importer checks runs: the metadata, the documentation of every plugin (ansible-doc), role READMEs, the
changelog, the execution environment definition and ansible-lint.

galaxy.yml names no ``repository``: the collection has no public home yet, and the importer refuses metadata without
one. The test adds one to its copy only, so that every other check runs; a publisher sets the real one
(docs/development.md, "Publishing").
"""

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from source_tree import ROOT, ansible_galaxy, copy_sources

REPOSITORY = "https://example.invalid/multicluster/fleet"

# What the importer's ansible-lint step logs for every collection whose own playbooks import playbooks of the same
# collection by name (the molecule scenarios import multicluster.fleet.site and .detach): the importer extracts the
# artifact under ansible_collections/placeholder_namespace/placeholder_name, where no collection of that name is
# installed, so the names cannot be resolved there. Installed as multicluster.fleet they are (tests/run.sh lint).
PLACEHOLDER_PATH_LINES = {
    "WARNING: ERROR    Failed to find multicluster.fleet.site playbook.",
    "WARNING: ERROR    Failed to find multicluster.fleet.detach playbook.",
}


def _galaxy_yml():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)


def test_galaxy_yml_names_no_repository():
    """No public repository is known; a placeholder would be published as if it were the collection's home."""
    assert "repository" not in _galaxy_yml()


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """``(importer log lines, importer result)`` for the artifact built from a copy of the sources."""
    try:
        import galaxy_importer  # noqa: F401 pylint: disable=unused-import
    except ImportError:
        pytest.fail("galaxy-importer is not installed beside %s (tests/requirements.txt)" % sys.executable)
    source = tmp_path_factory.mktemp("source")
    output = tmp_path_factory.mktemp("output")
    work = tmp_path_factory.mktemp("importer")
    copy_sources(source)
    with open(str(source / "galaxy.yml"), "a") as handle:
        handle.write("repository: %s\n" % REPOSITORY)
    done = subprocess.run([ansible_galaxy(), "collection", "build", "--output-path", str(output), str(source)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert done.returncode == 0, done.stdout
    tarball = next(output.glob("multicluster-fleet-*.tar.gz"))

    config = work / "galaxy-importer.cfg"
    config.write_text("\n".join([
        "[galaxy-importer]",
        "run_ansible_test = False",   # tests/run.sh sanity
        "ansible_test_local_image = False",
        "local_image_docker = False",
        "run_ansible_doc = True",
        "run_ansible_lint = True",
        "offline_ansible_lint = True",
        "check_changelog = True",
        "ansible_local_tmp = %s" % (work / "ansible-tmp"),
        "tmp_root_dir = %s" % work,
        "",
    ]))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GALAXY_IMPORTER_", "ANSIBLE_"))}
    env["GALAXY_IMPORTER_CONFIG"] = str(config)
    # ansible-doc and ansible-lint are run from PATH: those of this Python's environment
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    done = subprocess.run([sys.executable, "-m", "galaxy_importer.main", str(tarball)], cwd=str(work), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False,
                          timeout=600)
    assert done.returncode == 0, "galaxy-importer refused the artifact:\n%s" % done.stdout
    with open(str(work / "importer_result.json")) as handle:
        result = json.load(handle)
    return done.stdout.splitlines(), result


def test_import_succeeds_without_errors_or_warnings(imported):
    lines = imported[0]
    assert "Importer processing completed successfully" in lines
    reported = [line for line in lines if re.match(r"^(WARNING|ERROR|CRITICAL)\b", line)]
    assert sorted(set(reported) - PLACEHOLDER_PATH_LINES) == []


def test_metadata(imported):
    result = imported[1]
    galaxy = _galaxy_yml()
    metadata = result["metadata"]
    assert (metadata["namespace"], metadata["name"], metadata["version"]) == (galaxy["namespace"], galaxy["name"],
                                                                              galaxy["version"])
    assert metadata["license"] == galaxy["license"] == ["GPL-3.0-or-later"]
    assert metadata["repository"] == REPOSITORY
    assert result["requires_ansible"]


def test_every_plugin_and_role_is_documented(imported):
    result = imported[1]
    contents = {(c["content_type"], c["content_name"]): c for c in result["docs_blob"]["contents"]}
    modules = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules"))
                     if f.endswith(".py") and not f.startswith("_"))
    assert modules
    for name in modules:
        assert contents[("module", name)]["doc_strings"], "no documentation extracted for module %s" % name
    assert contents[("inventory", "fleet")]["doc_strings"]
    for role in ("hub_init", "agent_install"):
        assert contents[("role", role)]["readme_html"], "no README for role %s" % role
    assert {("playbook", "site.yml"), ("playbook", "detach.yml")} <= set(contents)
    assert result["docs_blob"]["collection_readme"]["html"]


@pytest.mark.parametrize("path", ["README.md", "roles/hub_init/README.md", "roles/agent_install/README.md"])
def test_readmes_galaxy_renders_link_only_absolute_urls(path):
    """Galaxy shows these READMEs on pages of its own, where a link relative to the collection's files or to a
    heading's anchor leads nowhere."""
    with open(os.path.join(ROOT, path)) as handle:
        targets = re.findall(r"\]\(([^)\s]*)", handle.read())
    assert sorted(t for t in targets if not re.match(r"https?://", t)) == []
