"""kubeconfig: one context resolved or made self-contained, without the kubernetes library."""

import base64
import os

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import kubeconfig
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
        "clusters": [{"name": "one", "cluster": {"server": "https://one:6443/", "certificate-authority": "pki/ca.crt"}},
                     {"name": "two", "cluster": {"server": "https://two:6443", "certificate-authority-data": b64("CA2"),
                                                 "insecure-skip-tls-verify": True, "proxy-url": "http://proxy:3128",
                                                 "tls-server-name": "api.two"}}],
        "users": [{"name": "cert", "user": {"client-certificate": "pki/client.crt", "client-key": "pki/client.key"}},
                  {"name": "token", "user": {"tokenFile": "token"}},
                  {"name": "plugin", "user": {"exec": {"command": "get-token"}}},
                  {"name": "provider", "user": {"auth-provider": {"name": "oidc"}}},
                  {"name": "basic", "user": {"username": "admin", "password": "secret"}}],
        "contexts": [{"name": "a", "context": {"cluster": "one", "user": "cert", "namespace": "apps"}},
                     {"name": "b", "context": {"cluster": "two", "user": "token"}},
                     {"name": "c", "context": {"cluster": "two", "user": "plugin"}},
                     {"name": "d", "context": {"cluster": "missing", "user": "token"}},
                     {"name": "e", "context": {"cluster": "two", "user": "nobody"}},
                     {"name": "f", "context": {"cluster": "two", "user": "provider"}},
                     {"name": "g", "context": {"cluster": "one", "user": "basic"}},
                     {"name": "h", "context": {"cluster": "two"}},
                     {"name": "i", "context": {"user": "token"}}],
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(config))
    return path


class TestFlatten:
    def test_current_context_with_files_relative_to_the_kubeconfig(self, files):
        flat = kubeconfig.flatten(str(files), who="cluster 'member'")
        assert flat["apiVersion"] == "v1" and flat["kind"] == "Config" and flat["current-context"] == "a"
        assert flat["clusters"] == [{"name": "cluster", "cluster": {"server": "https://one:6443/",
                                                                    "certificate-authority-data": b64("CA PEM")}}]
        assert flat["users"] == [{"name": "user", "user": {"client-certificate-data": b64("CERT PEM"),
                                                           "client-key-data": b64("KEY PEM")}}]
        assert flat["contexts"] == [{"name": "a", "context": {"cluster": "cluster", "user": "user", "namespace": "apps"}}]

    def test_named_context_with_a_token_file(self, files):
        flat = kubeconfig.flatten(str(files), "b")
        assert flat["users"][0]["user"] == {"token": "sa-token"}
        assert flat["clusters"][0]["cluster"] == {
            "server": "https://two:6443", "certificate-authority-data": b64("CA2"), "insecure-skip-tls-verify": True,
            "proxy-url": "http://proxy:3128", "tls-server-name": "api.two"}

    def test_the_result_is_self_contained(self, files, tmp_path):
        flat = kubeconfig.flatten(str(files), "a")
        for name in ("pki/ca.crt", "pki/client.crt", "pki/client.key", "token"):
            (tmp_path / name).unlink()
        copy = tmp_path / "copy"
        copy.write_text(yaml.safe_dump(flat))
        assert kubeconfig.flatten(str(copy)) == flat

    def test_data_wins_over_a_file(self, files, monkeypatch):
        monkeypatch.chdir(files.parent)
        config = yaml.safe_load(files.read_text())
        config["clusters"][0]["cluster"]["certificate-authority-data"] = b64("INLINE")
        config["clusters"][0]["cluster"]["certificate-authority"] = "/no/such/file"
        flat = kubeconfig.flatten(config)
        assert flat["clusters"][0]["cluster"] == {"server": "https://one:6443/", "certificate-authority-data": b64("INLINE")}

    @pytest.mark.parametrize("context, message", [
        ("c", "user 'plugin' authenticates with exec, which cannot be copied for use elsewhere"),
        ("f", "user 'provider' authenticates with auth-provider, which cannot be copied for use elsewhere"),
    ])
    def test_plugin_credentials_are_refused(self, files, context, message):
        with pytest.raises(FleetError, match=message) as caught:
            kubeconfig.flatten(str(files), context, "cluster 'member'")
        assert caught.value.msg.startswith("cluster 'member': kubeconfig %s, context '%s', is not usable: " % (files, context))

    def test_unreadable_file(self, files):
        (files.parent / "pki" / "ca.crt").unlink()
        with pytest.raises(FleetError, match="certificate-authority .*ca.crt cannot be read: No such file"):
            kubeconfig.flatten(str(files))

    def test_a_dict_is_flattened_too(self, files):
        config = yaml.safe_load(files.read_text())
        config["users"][1]["user"]["tokenFile"] = str(files.parent / "token")  # a dict has no directory of its own
        assert kubeconfig.flatten(config, "b")["users"][0]["user"] == {"token": "sa-token"}

    def test_a_dict_refers_to_files_relative_to_the_working_directory(self, files, monkeypatch):
        monkeypatch.chdir(files.parent)
        flat = kubeconfig.flatten(yaml.safe_load(files.read_text()), "a")
        assert flat["users"][0]["user"]["client-key-data"] == b64("KEY PEM")

    def test_the_kubeconfig_is_not_changed(self, files, monkeypatch):
        monkeypatch.chdir(files.parent)
        config = yaml.safe_load(files.read_text())
        before = yaml.safe_dump(config)
        kubeconfig.flatten(config, "b")
        assert yaml.safe_dump(config) == before


class TestSelect:
    @pytest.mark.parametrize("context, message", [
        ("zz", "cluster 'member': context 'zz' not found in kubeconfig {path} (available: a, b, c, d, e, f, g, h, i)"),
        ("d", "cluster 'member': kubeconfig {path}, context 'd', is not usable: cluster 'missing' is not defined"),
        ("e", "cluster 'member': kubeconfig {path}, context 'e', is not usable: user 'nobody' is not defined"),
        ("i", "cluster 'member': kubeconfig {path}, context 'i', is not usable: the context names no cluster"),
    ])
    def test_missing_entries_name_the_cluster_and_the_kubeconfig(self, files, context, message):
        for function in (kubeconfig.flatten, kubeconfig.resolve):
            with pytest.raises(FleetError) as caught:
                function(str(files), context, "cluster 'member'")
            assert caught.value.msg == message.format(path=files)

    def test_no_current_context(self, files):
        config = yaml.safe_load(files.read_text())
        del config["current-context"]
        with pytest.raises(FleetError, match=r"^cluster 'hub': the kubeconfig given as a dict has no current-context; "
                                             r"set context \(one of: a, b, "):
            kubeconfig.resolve(config, who="cluster 'hub'")

    def test_missing_file(self, tmp_path):
        with pytest.raises(FleetError, match=r"^cluster 'x': kubeconfig file .*/nope does not exist$"):
            kubeconfig.flatten(str(tmp_path / "nope"), who="cluster 'x'")

    @pytest.mark.parametrize("text", ["", "- a\n- list\n"])
    def test_not_a_mapping(self, tmp_path, text):
        path = tmp_path / "config"
        path.write_text(text)
        with pytest.raises(FleetError, match=r"kubeconfig .* is not a kubeconfig \(expected a mapping\)"):
            kubeconfig.resolve(str(path))

    def test_invalid_yaml(self, tmp_path):
        path = tmp_path / "config"
        path.write_text("a: [")
        with pytest.raises(FleetError, match="^the cluster: cannot read kubeconfig "):
            kubeconfig.resolve(str(path))

    def test_home_is_expanded(self, files, monkeypatch):
        monkeypatch.setenv("HOME", str(files.parent))
        assert kubeconfig.resolve("~/config").server == "https://one:6443"


class TestResolve:
    def test_files_relative_to_the_kubeconfig(self, files):
        creds = kubeconfig.resolve(str(files))
        pki = files.parent / "pki"
        assert (creds.context, creds.namespace, creds.server) == ("a", "apps", "https://one:6443")
        assert (creds.ca_file, creds.ca_data) == (str(pki / "ca.crt"), None)
        assert (creds.client_cert_file, creds.client_key_file) == (str(pki / "client.crt"), str(pki / "client.key"))
        assert (creds.token, creds.insecure, creds.proxy_url, creds.tls_server_name, creds.plugin) == (None, False, None, None, None)

    def test_inline_data_token_file_and_cluster_options(self, files):
        creds = kubeconfig.resolve(str(files), "b")
        assert (creds.ca_file, creds.ca_data, creds.token) == (None, b"CA2", "sa-token")
        assert (creds.insecure, creds.proxy_url, creds.tls_server_name) == (True, "http://proxy:3128", "api.two")

    def test_token_wins_over_token_file(self, files):
        config = yaml.safe_load(files.read_text())
        config["users"][1]["user"]["token"] = "inline"
        assert kubeconfig.resolve(config, "b").token == "inline"

    def test_basic_auth_and_anonymous(self, files):
        basic = kubeconfig.resolve(str(files), "g")
        assert (basic.username, basic.password, basic.token) == ("admin", "secret", None)
        anonymous = kubeconfig.resolve(str(files), "h")
        assert (anonymous.username, anonymous.token, anonymous.client_cert_file, anonymous.client_cert_data) == (None,) * 4

    @pytest.mark.parametrize("context, plugin", [("c", "exec"), ("f", "auth-provider")])
    def test_plugins_are_reported(self, files, context, plugin):
        assert kubeconfig.resolve(str(files), context).plugin == plugin

    def test_missing_referenced_file(self, files):
        (files.parent / "pki" / "client.key").unlink()
        with pytest.raises(FleetError, match=r"context 'a', is not usable: client-key .*client.key does not exist$"):
            kubeconfig.resolve(str(files))

    def test_invalid_base64(self, files):
        config = yaml.safe_load(files.read_text())
        config["clusters"][1]["cluster"]["certificate-authority-data"] = "a"
        with pytest.raises(FleetError, match="certificate-authority-data is not valid base64"):
            kubeconfig.resolve(config, "b")


class TestDefaultPath:
    def test_kubeconfig_variable_first_entry(self, monkeypatch):
        monkeypatch.setenv("KUBECONFIG", os.pathsep.join(["", "/a/config", "/b/config"]))
        assert kubeconfig.default_path() == "/a/config"

    def test_home_config(self, monkeypatch, tmp_path):
        monkeypatch.delenv("KUBECONFIG", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path))
        assert kubeconfig.default_path() == str(tmp_path / ".kube" / "config")
