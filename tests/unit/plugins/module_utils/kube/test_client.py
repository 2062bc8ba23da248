import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import urllib3
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


def kubeconfig(server="https://127.0.0.1:6443", contexts=("admin",), current="admin", token="t0ken-value"):
    return {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": n, "context": {"cluster": "c", "user": "u"}} for n in contexts],
        "current-context": current,
    }


@pytest.fixture
def kubeconfig_file(tmp_path):
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(kubeconfig(contexts=("admin", "other"))))
    return str(path)


class TestBuildConfiguration:
    def test_missing_kubeconfig_file(self, tmp_path):
        with pytest.raises(FleetError, match=r"cluster 'hub': kubeconfig file .*/nope does not exist"):
            client.build_configuration({"kubeconfig": str(tmp_path / "nope")}, "cluster 'hub'")

    def test_unknown_context_lists_the_known_ones(self, kubeconfig_file):
        with pytest.raises(FleetError) as info:
            client.build_configuration({"kubeconfig": kubeconfig_file, "context": "prod"}, "cluster 'member7'")
        assert "cluster 'member7': context 'prod' not found" in info.value.msg
        assert "available: admin, other" in info.value.msg

    def test_no_current_context(self):
        data = kubeconfig(current=None)
        with pytest.raises(FleetError, match="has no current-context; set context"):
            client.build_configuration({"kubeconfig": data}, "cluster 'hub'")

    def test_not_a_kubeconfig(self, tmp_path):
        path = tmp_path / "config"
        path.write_text("- just\n- a list\n")
        with pytest.raises(FleetError, match="is not a kubeconfig"):
            client.build_configuration({"kubeconfig": str(path)}, "cluster 'hub'")

    def test_context_and_server_from_kubeconfig(self, kubeconfig_file):
        config = client.build_configuration({"kubeconfig": kubeconfig_file, "context": "other"}, "cluster 'hub'")
        assert config.host == "https://127.0.0.1:6443"
        assert config.get_api_key_with_prefix("BearerToken", alias="authorization") == "Bearer t0ken-value"

    def test_explicit_options_override_the_kubeconfig(self, kubeconfig_file, tmp_path):
        ca = tmp_path / "ca.crt"
        ca.write_text("x")
        config = client.build_configuration({"kubeconfig": kubeconfig_file, "host": "https://10.1.1.1:443",
                                             "api_key": "other", "ca_cert": str(ca), "validate_certs": True}, "hub")
        assert config.host == "https://10.1.1.1:443"
        assert config.get_api_key_with_prefix("BearerToken", alias="authorization") == "Bearer other"
        assert config.ssl_ca_cert == str(ca) and config.verify_ssl is True

    def test_host_and_token_without_kubeconfig(self):
        config = client.build_configuration({"host": "https://h:6443", "api_key": "abc"}, "cluster 'hub'")
        assert config.host == "https://h:6443"

    def test_context_without_kubeconfig_or_default(self, monkeypatch, tmp_path):
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
        with pytest.raises(FleetError, match="no kubeconfig or host given, and no default kubeconfig"):
            client.build_configuration({}, "cluster 'hub'")

    def test_missing_ca_file(self):
        with pytest.raises(FleetError, match="ca_cert file /no/such/ca does not exist"):
            client.build_configuration({"host": "https://h", "ca_cert": "/no/such/ca"}, "cluster 'hub'")


class FakeResponse:
    def __init__(self, status, body):
        self.status = status
        self.data = json.dumps(body).encode() if body is not None else b""


class FakeTransport:
    def __init__(self, status, body=None):
        self.response = FakeResponse(status, body)
        self.requests = []

    def send(self, method, url, payload, headers, timeout):
        self.requests.append((method, url, payload, headers))
        return self.response.status, self.response.data


def cluster_answering(status, body=None, **auth):
    auth.setdefault("host", "https://h:6443")
    cluster = client.Cluster("hub", client.build_configuration(auth, "cluster 'hub'"))
    cluster._transport = FakeTransport(status, body)
    return cluster


class TestRequest:
    def test_returns_json_and_sends_auth_headers(self):
        cluster = cluster_answering(200, {"items": []}, api_key="abc", impersonate_user="alice",
                                    impersonate_groups=["g1", "g2"])
        assert cluster.request("GET", "/api/v1/namespaces", query={"labelSelector": "a=b", "x": None}) == {"items": []}
        method, url, body, headers = cluster._transport.requests[0]
        assert url == "https://h:6443/api/v1/namespaces?labelSelector=a%3Db"
        assert ("Authorization", "Bearer abc") in headers and ("Impersonate-User", "alice") in headers
        assert [value for name, value in headers if name == "Impersonate-Group"] == ["g1", "g2"]

    def test_401_says_credentials_refused(self):
        cluster = cluster_answering(401, {"kind": "Status", "message": "Unauthorized", "reason": "Unauthorized"})
        with pytest.raises(client.ClusterError) as info:
            cluster.request("GET", "/api/v1/namespaces")
        assert "cluster 'hub' (https://h:6443) refused the credentials (401 Unauthorized)" in info.value.msg
        assert info.value.status == 401

    def test_403_names_request_and_rbac(self):
        message = 'secrets is forbidden: User "x" cannot list resource "secrets"'
        cluster = cluster_answering(403, {"kind": "Status", "message": message, "reason": "Forbidden"})
        with pytest.raises(client.ClusterError) as info:
            cluster.request("GET", "/api/v1/secrets")
        assert "GET /api/v1/secrets failed: 403 " + message in info.value.msg
        assert "RBAC" in info.value.msg

    def test_403_in_a_terminating_namespace_says_so_not_rbac(self):
        message = ('secrets "s" is forbidden: unable to create new content in namespace gone because it is being '
                   'terminated')
        cluster = cluster_answering(403, {"kind": "Status", "message": message, "reason": "Forbidden", "details": {
            "causes": [{"reason": "NamespaceTerminating", "message": "namespace gone is being terminated"}]}})
        with pytest.raises(client.ClusterError) as info:
            cluster.request("POST", "/api/v1/namespaces/gone/secrets", body={})
        assert "the namespace is being deleted; run again once it is gone" in info.value.msg
        assert "RBAC" not in info.value.msg

    def test_404_and_409_have_their_own_types(self):
        with pytest.raises(client.NotFound):
            cluster_answering(404, {"reason": "NotFound"}).request("GET", "/api/v1/namespaces/x")
        with pytest.raises(client.Conflict):
            cluster_answering(409, {"reason": "AlreadyExists"}).request("POST", "/api/v1/namespaces", body={})

    def test_unreachable_names_cluster_and_cause(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()  # nothing listens there now
        cluster = client.Cluster("member3", client.build_configuration({"host": "https://127.0.0.1:%d" % port}, "x"))
        with pytest.raises(client.ClusterError) as info:
            cluster.request("GET", "/version")
        assert "cluster 'member3' (https://127.0.0.1:%d) is unreachable" % port in info.value.msg
        assert "Connection refused" in info.value.msg


class RecordingHandler(BaseHTTPRequestHandler):
    """Answers every request with its headers as JSON; closes the connection after it when the path says so."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.server.connections.add(self.client_address)
        body = json.dumps({"groups": self.headers.get_all("Impersonate-Group") or [],
                           "connection": "%s:%d" % self.client_address}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = self.path.endswith("close")  # without saying so: the client finds out when it reuses it

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), RecordingHandler)
    server.connections = set()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


class TestDirectTransport:
    """Requests without a proxy go over kept-alive connections of the standard library."""

    def cluster(self, server, **auth):
        auth["host"] = "http://127.0.0.1:%d" % server.server_address[1]
        return client.Cluster("c", client.build_configuration(auth, "x"))

    def test_requests_share_one_kept_alive_connection(self, http_server):
        cluster = self.cluster(http_server, impersonate_groups=["g1", "g2"])
        answers = [cluster.request("GET", "/api/v1/namespaces/%d" % n) for n in range(3)]
        assert answers[0]["groups"] == ["g1", "g2"]
        assert len({answer["connection"] for answer in answers}) == 1 and len(http_server.connections) == 1

    def test_a_connection_the_server_closed_is_replaced(self, http_server):
        cluster = self.cluster(http_server)
        first = cluster.request("GET", "/version/close")
        second = cluster.request("GET", "/version")
        assert first["connection"] != second["connection"] and len(http_server.connections) == 2

    def test_does_not_import_urllib3(self, http_server):
        code = ("import sys; from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client; "
                "client.Cluster('c', client.build_configuration({'host': 'http://127.0.0.1:%d'}, 'x')).request('GET', '/v'); "
                "assert 'urllib3' not in sys.modules" % http_server.server_address[1])
        subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)),
                       check=True)


class WatchHandler(BaseHTTPRequestHandler):
    """A watch as the API server streams it (chunked, one JSON event a line): ``server.script[resourceVersion]`` is the
    status and the events to send for a watch from that version."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.server.paths.append(self.path)
        query = dict(part.split("=", 1) for part in self.path.split("?", 1)[1].split("&"))
        status, events = self.server.script[query["resourceVersion"]]
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            line = (json.dumps(event) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args):
        pass


class TestWatch:
    """``Cluster.watch``: a GET with ?watch=true from a resourceVersion, its events read as they are streamed."""

    @pytest.fixture
    def server(self):
        server = ThreadingHTTPServer(("127.0.0.1", 0), WatchHandler)
        server.paths, server.script = [], {}
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server
        server.shutdown()
        server.server_close()

    def cluster(self, server):
        return client.Cluster("hub", client.build_configuration({"host": "http://127.0.0.1:%d" % server.server_address[1]}, "x"))

    def test_events_in_order_with_bookmarks(self, server):
        server.script["7"] = (200, [{"type": "ADDED", "object": {"metadata": {"name": "m1", "resourceVersion": "8"}}},
                                    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
                                    {"type": "DELETED", "object": {"metadata": {"name": "m1", "resourceVersion": "10"}}}])
        events = list(self.cluster(server).watch("/apis/cluster.karmada.io/v1alpha1/clusters", "7", {"labelSelector": "a=b"}, 5))
        assert [(kind, obj["metadata"]["resourceVersion"]) for kind, obj in events] == [("ADDED", "8"), ("BOOKMARK", "9"),
                                                                                        ("DELETED", "10")]
        path, query = server.paths[0].split("?")
        assert path == "/apis/cluster.karmada.io/v1alpha1/clusters"
        assert sorted(query.split("&")) == ["allowWatchBookmarks=true", "labelSelector=a%3Db", "resourceVersion=7",
                                            "timeoutSeconds=5", "watch=true"]

    @pytest.mark.parametrize("status, events", [
        (200, [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}}]),
        (410, [{"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}]),
    ])
    def test_a_version_the_server_no_longer_has_is_gone(self, server, status, events):
        server.script["3"] = (status, events)
        with pytest.raises(client.Gone) as info:
            list(self.cluster(server).watch("/api/v1/namespaces", "3"))
        assert info.value.status == 410 and "too old" in info.value.msg

    def test_a_hub_that_does_not_answer(self, server):
        port = server.server_address[1]
        server.shutdown()
        server.server_close()
        with pytest.raises(client.ClusterError) as info:
            list(client.Cluster("hub", client.build_configuration({"host": "http://127.0.0.1:%d" % port}, "x")).watch("/api/v1/namespaces", "1"))
        assert "is unreachable" in info.value.msg and info.value.status == 0


class TestGetCluster:
    def test_one_connection_per_credentials(self):
        first = client.get_cluster({"host": "https://cache-test:1", "api_key": "a"}, "hub")
        assert client.get_cluster({"host": "https://cache-test:1", "api_key": "a"}, "hub") is first
        assert client.get_cluster({"host": "https://cache-test:1", "api_key": "b"}, "hub") is not first


def b64(text):
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
def without_kubernetes(monkeypatch):
    """Make any import of the kubernetes library fail."""
    for module in [m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes.")] + ["kubernetes"]:
        monkeypatch.setitem(sys.modules, module, None)


class TestKubeconfigCredentials:
    """Common credentials are read without the kubernetes library, as its loader would read them."""

    def test_files_are_relative_to_the_kubeconfig(self, tmp_path, without_kubernetes):
        (tmp_path / "pki").mkdir()
        for name in ("ca.crt", "client.crt", "client.key"):
            (tmp_path / "pki" / name).write_text(name.upper())
        (tmp_path / "token").write_text("file-token\n")
        data = kubeconfig()
        data["clusters"][0]["cluster"] = {"server": "https://h:6443/", "certificate-authority": "pki/ca.crt"}
        data["users"][0]["user"] = {"client-certificate": "pki/client.crt", "client-key": "pki/client.key",
                                    "tokenFile": "token"}
        path = tmp_path / "config"
        path.write_text(yaml.safe_dump(data))
        config = client.build_configuration({"kubeconfig": str(path)}, "cluster 'hub'")
        assert (config.host, config.verify_ssl, config.proxy) == ("https://h:6443", True, None)
        assert (config.ssl_ca_cert, config.cert_file, config.key_file) == tuple(
            str(tmp_path / "pki" / name) for name in ("ca.crt", "client.crt", "client.key"))
        assert config.get_api_key_with_prefix("BearerToken", alias="authorization") == "Bearer file-token"
        cluster = client.Cluster("hub", config)
        assert (cluster.server, cluster.ca_pem, cluster.verifies_tls, cluster.proxy) == ("https://h:6443", "CA.CRT", True, None)

    def test_inline_data_goes_to_private_files(self, without_kubernetes):
        data = kubeconfig()
        data["clusters"][0]["cluster"] = {"server": "https://h:6443", "certificate-authority-data": b64("CA PEM"),
                                          "proxy-url": "http://proxy:3128", "tls-server-name": "api.internal"}
        data["users"][0]["user"] = {"client-certificate-data": b64("CERT"), "client-key-data": b64("KEY")}
        config = client.build_configuration({"kubeconfig": data}, "cluster 'hub'")
        for attribute, content in (("ssl_ca_cert", "CA PEM"), ("cert_file", "CERT"), ("key_file", "KEY")):
            path = getattr(config, attribute)
            assert open(path).read() == content and path.startswith("/proc/self/fd/")
        assert (config.proxy, config.tls_server_name) == ("http://proxy:3128", "api.internal")
        assert config.get_api_key_with_prefix("BearerToken", alias="authorization") is None
        cluster = client.Cluster("hub", config)
        assert (cluster.ca_pem, cluster.proxy) == ("CA PEM", "http://proxy:3128")
        assert isinstance(cluster._transport._pool, urllib3.ProxyManager)

    def test_insecure_and_basic_auth(self, without_kubernetes):
        data = kubeconfig()
        data["users"][0]["user"] = {"username": "admin", "password": "secret"}
        config = client.build_configuration({"kubeconfig": data}, "cluster 'hub'")
        assert config.verify_ssl is False and client.Cluster("hub", config).verifies_tls is False
        assert config.get_api_key_with_prefix("BearerToken", alias="authorization") == "Basic " + b64("admin:secret")

    def test_validate_certs_overrides_insecure(self):
        config = client.build_configuration({"kubeconfig": kubeconfig(), "validate_certs": True}, "cluster 'hub'")
        assert config.verify_ssl is True

    @pytest.mark.parametrize("change, message", [
        (lambda d: d["contexts"][0]["context"].update(cluster="gone"),
         "cluster 'hub': the kubeconfig given as a dict, context 'admin', is not usable: cluster 'gone' is not defined"),
        (lambda d: d["contexts"][0]["context"].update(user="gone"),
         "cluster 'hub': the kubeconfig given as a dict, context 'admin', is not usable: user 'gone' is not defined"),
        (lambda d: d["clusters"][0]["cluster"].pop("server"),
         "cluster 'hub': no API server given; set kubeconfig (and context) or host"),
    ])
    def test_unusable_contexts(self, change, message):
        data = kubeconfig()
        change(data)
        with pytest.raises(FleetError) as info:
            client.build_configuration({"kubeconfig": data}, "cluster 'hub'")
        assert info.value.msg == message

    def test_host_overrides_a_kubeconfig_without_server(self):
        data = kubeconfig()
        data["clusters"][0]["cluster"].pop("server")
        assert client.build_configuration({"kubeconfig": data, "host": "https://x:1"}, "cluster 'hub'").host == "https://x:1"


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no anonymous memory files on this system")
class TestPrivateFiles:
    """A kubeconfig's inline CA, certificate and key reach the TLS settings as files that only this process reads."""

    def test_a_memory_file_where_the_system_has_them(self):
        path, release = client.private_file(b"KEY")
        assert path.startswith("/proc/self/fd/") and open(path, "rb").read() == b"KEY"
        assert os.readlink(path).startswith("/memfd:multicluster-fleet")
        release()
        assert not os.path.exists(path) or not os.readlink(path).startswith("/memfd:multicluster-fleet")
        release()  # twice: no error

    def test_elsewhere_a_temporary_file_only_its_owner_reads(self, monkeypatch, tmp_path):
        monkeypatch.setattr(client, "_memory_file", lambda content: None)
        monkeypatch.setattr(client.tempfile, "tempdir", str(tmp_path))
        path, release = client.private_file(b"KEY")
        assert os.path.dirname(path) == str(tmp_path) and open(path, "rb").read() == b"KEY"
        assert os.stat(path).st_mode & 0o077 == 0
        release()
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize("memory", [True, False], ids=["memory-file", "temporary-file"])
    def test_what_a_killed_module_leaves_on_disk(self, tmp_path, memory):
        """A module killed mid-run (a cancelled job, a task timeout) runs no clean-up: only a memory file leaves no
        copy of the key behind."""
        script = "\n".join([
            "import os, signal, sys",
            "sys.path[:0] = %r" % sys.path,
            "from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client",
            "" if memory else "client._memory_file = lambda content: None",
            "assert open(client._data_file(b'KEY'), 'rb').read() == b'KEY'",
            "os.kill(os.getpid(), signal.SIGKILL)"])
        result = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, TMPDIR=str(tmp_path)),
                                capture_output=True, text=True, check=False)
        assert result.returncode == -signal.SIGKILL, result.stderr
        assert [path.read_bytes() for path in tmp_path.iterdir()] == ([] if memory else [b"KEY"])


class TestPluginUsers:
    """exec and auth-provider users go through the kubernetes library's loader, imported only for them."""

    @staticmethod
    def exec_kubeconfig(tmp_path, token="exec-token", status=None):
        script = tmp_path / "get-token.py"
        script.write_text("import json\nprint(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1beta1', "
                          "'kind': 'ExecCredential', 'status': %r}))\n" % (status or {"token": token}))
        data = kubeconfig()
        data["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                             "command": sys.executable, "args": [str(script)]}}
        return data

    def test_exec_plugin_token(self, tmp_path):
        config = client.build_configuration({"kubeconfig": self.exec_kubeconfig(tmp_path)}, "cluster 'hub'")
        assert config.host == "https://127.0.0.1:6443" and config.verify_ssl is False
        assert dict(client.Cluster("hub", config)._headers(None))["Authorization"] == "Bearer exec-token"

    @pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no anonymous memory files on this system")
    def test_the_files_the_library_writes_are_moved_into_memory(self, tmp_path, monkeypatch):
        """A plugin's client certificate and key, and the cluster's inline CA: the kubernetes library writes them to
        files, which are moved into memory files at once - a module killed mid-run leaves none of them behind."""
        data = self.exec_kubeconfig(tmp_path, status={"clientCertificateData": "CERT", "clientKeyData": "KEY"})
        data["clusters"][0]["cluster"] = {"server": "https://127.0.0.1:6443", "certificate-authority-data": base64.b64encode(b"CA").decode()}
        scratch = tmp_path / "tmp"
        scratch.mkdir()
        monkeypatch.setattr(client.tempfile, "tempdir", str(scratch))
        config = client.build_configuration({"kubeconfig": data}, "cluster 'hub'")
        files = [getattr(config, attribute) for attribute in ("ssl_ca_cert", "cert_file", "key_file")]
        assert [open(path, "rb").read() for path in files] == [b"CA", b"CERT", b"KEY"]
        assert all(path.startswith("/proc/self/fd/") for path in files), files
        assert list(scratch.iterdir()) == []

    def test_api_key_overrides_the_plugin(self, tmp_path):
        config = client.build_configuration({"kubeconfig": self.exec_kubeconfig(tmp_path), "api_key": "mine"}, "cluster 'hub'")
        assert dict(client.Cluster("hub", config)._headers(None))["Authorization"] == "Bearer mine"

    def test_without_the_kubernetes_library(self, tmp_path, without_kubernetes):
        with pytest.raises(FleetError) as info:
            client.build_configuration({"kubeconfig": self.exec_kubeconfig(tmp_path)}, "cluster 'hub'")
        assert info.value.msg.startswith("cluster 'hub': the kubeconfig given as a dict, context 'admin', is not usable: "
                                         "user 'u' authenticates with exec, which needs the kubernetes Python library")

    def test_common_path_does_not_import_kubernetes(self, tmp_path):
        code = ("import sys; from ansible_collections.multicluster.fleet.plugins.module_utils import module; "
                "from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client; "
                "client.build_configuration({'host': 'https://h', 'api_key': 'x'}); "
                "client.build_configuration({'kubeconfig': %r}); "
                "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))" % kubeconfig())
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        output = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
        assert output.strip() == "[]"


HUB_ENVIRONMENT = {"K8S_AUTH_HOST": "https://hub:6443", "K8S_AUTH_API_KEY": "hub-token", "K8S_AUTH_VERIFY_SSL": "false",
                   "K8S_AUTH_SSL_CA_CERT": "/etc/hub-ca.pem", "K8S_AUTH_IMPERSONATE_GROUPS": "a, b"}


class TestCredentialRule:
    """The K8S_AUTH_* environment supplies a whole connection or nothing of it."""

    @pytest.mark.parametrize("naming", [{"kubeconfig": "/etc/member1.kubeconfig"}, {"context": "member1"},
                                        {"host": "https://member1:6443"}, {"kubeconfig": {"clusters": []}}])
    def test_a_task_that_names_a_cluster_reads_no_variable(self, naming):
        assert client.connection_options(dict(naming, api_key=None), environ=HUB_ENVIRONMENT) == naming

    def test_a_task_that_names_no_cluster_takes_every_variable(self):
        assert client.connection_options({"kubeconfig": None, "context": ""}, environ=HUB_ENVIRONMENT) == {
            "host": "https://hub:6443", "api_key": "hub-token", "validate_certs": False, "ca_cert": "/etc/hub-ca.pem",
            "impersonate_groups": ["a", "b"]}

    def test_options_the_task_gives_win_over_the_environment(self):
        options = client.connection_options({"impersonate_user": "alice", "validate_certs": True}, environ=HUB_ENVIRONMENT)
        assert options["impersonate_user"] == "alice" and options["validate_certs"] is True
        assert options["host"] == "https://hub:6443"

    def test_member_connections_never_read_the_environment(self):
        assert client.connection_options({}, environment=False, environ=HUB_ENVIRONMENT) == {}

    def test_first_variable_of_an_option_wins_and_paths_expand(self):
        found = client.from_environment({"K8S_AUTH_VALIDATE_CERTS": "yes", "K8S_AUTH_VERIFY_SSL": "false",
                                         "K8S_AUTH_KUBECONFIG": "~/fleet.kubeconfig", "K8S_AUTH_CONTEXT": ""})
        assert found == {"validate_certs": True, "kubeconfig": os.path.expanduser("~/fleet.kubeconfig")}


class TestNaming:
    def test_a_cluster_is_named_by_its_name_else_its_context_else_its_role(self, kubeconfig_file):
        named = client.get_cluster({"kubeconfig": kubeconfig_file}, "member7", "member")
        assert named.label == "cluster 'member7' (https://127.0.0.1:6443)"
        by_context = client.get_cluster({"kubeconfig": kubeconfig_file, "context": "other"}, role="hub")
        assert by_context.label == "cluster 'other' (https://127.0.0.1:6443)"
        by_current_context = client.get_cluster({"kubeconfig": kubeconfig_file}, role="hub")
        assert by_current_context.label == "cluster 'admin' (https://127.0.0.1:6443)"
        by_role = client.get_cluster({"host": "https://10.0.0.7:6443"}, role="hub")
        assert by_role.label == "the hub (https://10.0.0.7:6443)"

    def test_errors_before_the_server_is_known_name_the_cluster(self, tmp_path):
        with pytest.raises(FleetError, match=r"^cluster 'edge7': kubeconfig file .*/edge7 does not exist$"):
            client.get_cluster({"kubeconfig": str(tmp_path / "edge7")}, "edge7", "member")
        with pytest.raises(FleetError, match=r"^the hub: kubeconfig file .* is a directory, not a file$"):
            client.get_cluster({"kubeconfig": str(tmp_path)}, role="hub")
