"""kubeconfig.flatten: one context made self-contained, credentials that cannot be copied refused."""

import base64

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import kubeconfig
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


def b64(text):
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
def files(tmp_path):
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_text("CA PEM")
    (tmp_path / "pki" / "client.crt").write_text("CERT PEM")
    (tmp_path / "pki" / "client.key").write_text("KEY PEM")
    (tmp_path / "token").write_text("sa-token\n")
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "one", "cluster": {"server": "https://one:6443", "certificate-authority": "pki/ca.crt"}},
                     {"name": "two", "cluster": {"server": "https://two:6443", "certificate-authority-data": b64("CA2")}}],
        "users": [{"name": "cert", "user": {"client-certificate": "pki/client.crt", "client-key": "pki/client.key"}},
                  {"name": "token", "user": {"tokenFile": "token"}},
                  {"name": "plugin", "user": {"exec": {"command": "get-token"}}}],
        "contexts": [{"name": "a", "context": {"cluster": "one", "user": "cert", "namespace": "apps"}},
                     {"name": "b", "context": {"cluster": "two", "user": "token"}},
                     {"name": "c", "context": {"cluster": "two", "user": "plugin"}},
                     {"name": "d", "context": {"cluster": "missing", "user": "token"}}],
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(config))
    return path


def test_current_context_with_files_relative_to_the_kubeconfig(files):
    flat = kubeconfig.flatten(str(files), label="member")
    assert flat["current-context"] == "a"
    assert flat["clusters"] == [{"name": "cluster", "cluster": {"server": "https://one:6443", "certificate-authority-data": b64("CA PEM")}}]
    assert flat["users"] == [{"name": "user", "user": {"client-certificate-data": b64("CERT PEM"), "client-key-data": b64("KEY PEM")}}]
    assert flat["contexts"] == [{"name": "a", "context": {"cluster": "cluster", "user": "user", "namespace": "apps"}}]


def test_named_context_with_a_token_file(files):
    flat = kubeconfig.flatten(str(files), "b")
    assert flat["users"][0]["user"] == {"token": "sa-token"}
    assert flat["clusters"][0]["cluster"]["certificate-authority-data"] == b64("CA2")


@pytest.mark.parametrize("context, message", [
    ("c", "user 'plugin' authenticates with exec, which cannot be copied"),
    ("d", "cluster 'missing' is not defined"),
    ("zz", "context 'zz' is not defined"),
])
def test_refusals_name_the_cluster_and_the_kubeconfig(files, context, message):
    with pytest.raises(FleetError, match=message) as caught:
        kubeconfig.flatten(str(files), context, label="member")
    assert caught.value.msg.startswith("cluster 'member': kubeconfig %s" % files)


def test_missing_files(tmp_path, files):
    with pytest.raises(FleetError, match="does not exist"):
        kubeconfig.flatten(str(tmp_path / "nope"))
    (files.parent / "pki" / "ca.crt").unlink()
    with pytest.raises(FleetError, match="refers to .*ca.crt, which cannot be read"):
        kubeconfig.flatten(str(files))


def test_a_dict_is_flattened_too(files):
    config = yaml.safe_load(files.read_text())
    config["users"][1]["user"]["tokenFile"] = str(files.parent / "token")  # a dict has no directory of its own
    assert kubeconfig.flatten(config, "b")["users"][0]["user"] == {"token": "sa-token"}
