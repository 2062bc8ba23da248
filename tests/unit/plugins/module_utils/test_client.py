import json
import socket

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import client
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
            client.build_configuration({"kubeconfig": str(tmp_path / "nope")}, "hub")

    def test_unknown_context_lists_the_known_ones(self, kubeconfig_file):
        with pytest.raises(FleetError) as info:
            client.build_configuration({"kubeconfig": kubeconfig_file, "context": "prod"}, "member7")
        assert "cluster 'member7': context 'prod' not found" in info.value.msg
        assert "available: admin, other" in info.value.msg

    def test_no_current_context(self):
        data = kubeconfig(current=None)
        with pytest.raises(FleetError, match="has no current-context; set context"):
            client.build_configuration({"kubeconfig": data}, "hub")

    def test_not_a_kubeconfig(self, tmp_path):
        path = tmp_path / "config"
        path.write_text("- just\n- a list\n")
        with pytest.raises(FleetError, match="is not a kubeconfig"):
            client.build_configuration({"kubeconfig": str(path)}, "hub")

    def test_context_and_server_from_kubeconfig(self, kubeconfig_file):
        config = client.build_configuration({"kubeconfig": kubeconfig_file, "context": "other"}, "hub")
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
        config = client.build_configuration({"host": "https://h:6443", "api_key": "abc"}, "hub")
        assert config.host == "https://h:6443"

    def test_context_without_kubeconfig_or_default(self, monkeypatch, tmp_path):
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
        with pytest.raises(FleetError, match="no kubeconfig or host given, and no default kubeconfig"):
            client.build_configuration({}, "hub")

    def test_missing_ca_file(self):
        with pytest.raises(FleetError, match="ca_cert file /no/such/ca does not exist"):
            client.build_configuration({"host": "https://h", "ca_cert": "/no/such/ca"}, "hub")


class FakeResponse:
    def __init__(self, status, body):
        self.status = status
        self.data = json.dumps(body).encode() if body is not None else b""


class FakePool:
    def __init__(self, status, body=None):
        self.response = FakeResponse(status, body)
        self.requests = []

    def request(self, method, url, body=None, headers=None, timeout=None, preload_content=True):
        self.requests.append((method, url, body, headers))
        return self.response


def cluster_answering(status, body=None, **auth):
    auth.setdefault("host", "https://h:6443")
    cluster = client.Cluster("hub", client.build_configuration(auth, "hub"))
    cluster._pool = FakePool(status, body)
    return cluster


class TestRequest:
    def test_returns_json_and_sends_auth_headers(self):
        cluster = cluster_answering(200, {"items": []}, api_key="abc", impersonate_user="alice",
                                    impersonate_groups=["g1", "g2"])
        assert cluster.request("GET", "/api/v1/namespaces", query={"labelSelector": "a=b", "x": None}) == {"items": []}
        method, url, body, headers = cluster._pool.requests[0]
        assert url == "https://h:6443/api/v1/namespaces?labelSelector=a%3Db"
        assert headers["Authorization"] == "Bearer abc"
        assert headers["Impersonate-User"] == "alice"
        assert headers.getlist("Impersonate-Group") == ["g1", "g2"]

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


class TestGetCluster:
    def test_one_connection_per_credentials(self):
        first = client.get_cluster({"host": "https://cache-test:1", "api_key": "a"}, "hub")
        assert client.get_cluster({"host": "https://cache-test:1", "api_key": "a"}, "hub") is first
        assert client.get_cluster({"host": "https://cache-test:1", "api_key": "b"}, "hub") is not first
