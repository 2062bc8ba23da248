"""The execution environment definition: the command README documents builds the collection into .ee-build/ and
``ansible-builder create`` (in place of ``build``) turns meta/execution-environment.yml into a build context, from a
clean checkout and from one with earlier builds lying around; the requirements the image build would install are
resolved here with ansible-builder's own introspection script from that context.

No container engine is needed: the context is checked as written (Containerfile, _build/requirements.txt, the
collection tarball), and the introspection runs on the collection installed into a temporary directory, as the
image build runs it on /usr/share/ansible/collections.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

from source_tree import ROOT, ansible_galaxy, source_files


def requirement_lines(path):
    with open(path) as handle:
        return [line.strip() for line in handle if line.strip() and not line.lstrip().startswith("#")]


def run(command, cwd=None):
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          check=False)
    assert done.returncode == 0, "%s failed:\n%s" % (" ".join(command), done.stdout)
    return done.stdout


@pytest.fixture(scope="module")
def galaxy():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)


# The one command README and meta/execution-environment.yml give for building the image from the collection's root:
# the collection built afresh into .ee-build/, where the definition takes it from.
BUILD_COMMAND = ("rm -rf .ee-build && ansible-galaxy collection build --output-path .ee-build "
                 "&& ansible-builder build -f meta/execution-environment.yml -t multicluster-fleet-ee:latest")
# The same with ansible-builder create (the build context, no container engine) in place of build.
CREATE_COMMAND = BUILD_COMMAND.replace("ansible-builder build -f meta/execution-environment.yml -t multicluster-fleet-ee:latest",
                                       "ansible-builder create -f meta/execution-environment.yml -c {context} "
                                       "--output-filename Containerfile")


def one_line(path):
    """The text of a file with shell line continuations (also inside comments) joined."""
    with open(os.path.join(ROOT, path)) as handle:
        return re.sub(r"\\\n[#\s]*", "", handle.read())


@pytest.mark.parametrize("path", ["README.md", "meta/execution-environment.yml"])
def test_the_build_command_is_documented(path):
    assert BUILD_COMMAND in one_line(path)


@pytest.fixture(scope="module", params=["clean checkout", "old tarballs lying around"])
def context(request, tmp_path_factory):
    """The build context the documented command writes (with ``ansible-builder create`` in place of ``build``) from a
    clean checkout, or from one where earlier builds left collection tarballs of another version: beside galaxy.yml,
    as ``ansible-galaxy collection build`` writes them by default, and in .ee-build/."""
    builder = os.path.join(os.path.dirname(sys.executable), "ansible-builder")
    assert os.path.exists(builder), "ansible-builder is not installed beside %s (tests/requirements.txt)" % sys.executable
    source = tmp_path_factory.mktemp("checkout")
    for path in source_files():
        target = source / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, path), str(target))
    assert not list(source.glob("*.tar.gz")) and not (source / ".ee-build").exists()
    if request.param == "old tarballs lying around":
        (source / ".ee-build").mkdir()
        for old in (source / "multicluster-fleet-0.0.1.tar.gz", source / ".ee-build" / "multicluster-fleet-0.0.1.tar.gz"):
            old.write_bytes(b"an earlier build")
    output = tmp_path_factory.mktemp("context")
    environment = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    done = subprocess.run(["bash", "-c", CREATE_COMMAND.format(context=output)], cwd=str(source), env=environment,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert done.returncode == 0, done.stdout
    return output


def test_containerfile_installs_ansible_runner_and_the_collection(context):
    containerfile = (context / "Containerfile").read_text()
    assert 'ARG EE_BASE_IMAGE="quay.io/centos/centos:stream9"' in containerfile
    refs = next(line for line in containerfile.splitlines() if line.startswith("ARG ANSIBLE_INSTALL_REFS="))
    assert "ansible-core>=2.16" in refs and "ansible-runner>=2.4" in refs
    assert ("RUN ansible-galaxy collection install --offline /tmp/multicluster-fleet/*.tar.gz "
            "--collections-path /usr/share/ansible/collections") in containerfile
    # the Python requirements go through ansible-builder's introspection, collection and user ones alike
    assert "introspect.py introspect --user-pip=requirements.txt" in containerfile
    assert 'LABEL ansible-execution-environment=true' in containerfile


def test_context_holds_the_collections_python_requirements(context):
    assert requirement_lines(str(context / "_build" / "requirements.txt")) == requirement_lines(
        os.path.join(ROOT, "meta", "requirements.txt"))
    assert requirement_lines(os.path.join(ROOT, "meta", "requirements.txt"))  # not an empty list


def test_context_holds_the_collection(context, galaxy):
    """Exactly the collection as it is now: no earlier build's tarball."""
    tarballs = list((context / "_build" / "collection").iterdir())
    assert [t.name for t in tarballs] == ["multicluster-fleet-%s.tar.gz" % galaxy["version"]]
    with tarfile.open(str(tarballs[0])) as tarball:
        names = set(tarball.getnames())
        manifest = json.load(tarball.extractfile("MANIFEST.json"))["collection_info"]
    assert (manifest["namespace"], manifest["name"], manifest["version"]) == (galaxy["namespace"], galaxy["name"],
                                                                              galaxy["version"])
    assert {"plugins/inventory/fleet.py", "extensions/awx/credential_type.yml", "meta/execution-environment.yml",
            "meta/requirements.txt", "requirements.txt", "playbooks/site.yml"} <= names


def test_image_build_resolves_the_collections_requirements(context, tmp_path):
    """What the image build's builder stage runs: the collection installed, then ansible-builder's introspection
    over the installed collections with the definition's requirements as the user's."""
    collections = tmp_path / "collections"
    tarball = next((context / "_build" / "collection").glob("*.tar.gz"))
    # --force: the test session's ANSIBLE_COLLECTIONS_PATH already holds the checkout as multicluster.fleet
    run([ansible_galaxy(), "collection", "install", "--offline", "--force", str(tarball), "--collections-path", str(collections)])
    resolved = tmp_path / "requirements.txt"
    run([sys.executable, str(context / "_build" / "scripts" / "introspect.py"), "introspect", str(collections),
         "--user-pip=%s" % (context / "_build" / "requirements.txt"), "--write-pip=%s" % resolved])
    wanted = requirement_lines(os.path.join(ROOT, "meta", "requirements.txt"))
    lines = requirement_lines(str(resolved))
    # PyYAML comes with ansible-core, so ansible-builder leaves it out of collections' requirements
    assert lines == ["%s  # from collection multicluster.fleet" % r for r in wanted if not r.startswith("PyYAML")] + [
        "%s  # from collection user" % r for r in wanted]
