"""Unit tests for registration through a forward proxy (module_utils/register.py, bootstrap.py).

The member reaches the hub through ``proxy_url``: discovery and the Karmada CSR use it, and the
kubeconfig written on the member carries ``proxy-url`` and the proxy's CA next to the hub CA. The
other direction, ``proxy_server_address``, is the karmada-agent's flag for the Cluster's
``spec.proxyURL``.
"""

import base64
import json
import ssl

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, pki
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, registrar
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.registration import KarmadaRegistration
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.registration import OcmRegistration
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import SECRET
from conftest import FakeCluster
from fake_ca import FakeCA
from register_fakes import AGENT_SECRET_PATH, HUB_URL, OTHER_TOKEN, TOKEN, BootstrapHub, FakeDiscovery, connector, joined, reg

PROXY = "http://proxy.example:3128"
HTTPS_PROXY = "https://proxy.example:3129"
BOOTSTRAP_PATH = SECRET.path(ocm.AGENT_NAMESPACE, ocm.BOOTSTRAP_SECRET)


@pytest.fixture(scope="module")
def ca():
    return FakeCA()


@pytest.fixture(scope="module")
def proxy_ca():
    return FakeCA("proxy-ca")


@pytest.fixture
def proxy_ca_file(tmp_path, proxy_ca):
    path = tmp_path / "proxy-ca.pem"
    path.write_text(proxy_ca.pem)
    return str(path)


@pytest.fixture
def openers(monkeypatch):
    """bootstrap.proxied_fetch as a stand-in that names the way it goes: ``("proxy", proxy, proxy_ca_pem)``."""
    monkeypatch.setattr(bootstrap, "proxied_fetch", lambda proxy, proxy_ca_pem=None: ("proxy", proxy, proxy_ca_pem))


def proxy_of(call):
    """The proxy the opener of a FakeDiscovery call goes through (with :func:`openers`), None when it goes directly."""
    return call["opener"][1] if call["opener"] else None


def secret_text(cluster, path, key):
    return base64.b64decode(cluster.objects[path]["data"][key]).decode()


def stored_kubeconfig(cluster, path, key):
    return pki.read_kubeconfig(secret_text(cluster, path, key))


# --- options -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(proxy_url="socks5://proxy:1080"), "cluster 'member1': invalid proxy_url 'socks5://proxy:1080': expected http|https://host:port"),
    (dict(proxy_url="proxy.example:3128"), "invalid proxy_url 'proxy.example:3128'"),
    (dict(proxy_url="http://:3128"), "invalid proxy_url"),
    (dict(proxy_url="http://proxy:99999"), "invalid proxy_url"),
    (dict(proxy_ca_cert="/nonexistent/ca.pem"), "cluster 'member1': proxy_ca_cert is the CA of the proxy of proxy_url, which is not set"),
    (dict(proxy_url=PROXY, proxy_ca_cert="/nonexistent/ca.pem"), "cluster 'member1': cannot read proxy_ca_cert /nonexistent/ca.pem"),
    (dict(proxy_server_address="ftp://gateway:21"),
     "cluster 'member1': invalid proxy_server_address 'ftp://gateway:21': expected http|https|socks5://host:port"),
])
def test_proxy_options_refused(kwargs, fragment):
    with pytest.raises(FleetError) as exc_info:
        reg(**kwargs)
    assert fragment in exc_info.value.msg


def test_proxy_ca_cert_must_hold_a_certificate(tmp_path):
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    with pytest.raises(FleetError, match="cluster 'member1': the proxy_ca_cert .*junk.pem holds no PEM certificate"):
        reg(proxy_url=PROXY, proxy_ca_cert=str(junk))


def test_proxy_server_address_is_karmadas():
    assert reg(proxy_server_address="socks5://gateway:1080").proxy_server_address == "socks5://gateway:1080"
    with pytest.raises(FleetError, match="the karmada options [(]proxy_server_address[)] apply to engine karmada only; engine is ocm"):
        reg("ocm", proxy_server_address="http://gateway:8118")


def test_proxy_settings(proxy_ca_file, proxy_ca):
    request = reg(proxy_url=HTTPS_PROXY, proxy_ca_cert=proxy_ca_file)
    assert (request.proxy_url, request.proxy_ca_pem) == (HTTPS_PROXY, proxy_ca.pem)
    assert request.proxy_ca_pins == [bootstrap.ca_pin(proxy_ca.pem)]
    assert (reg().proxy_url, reg().proxy_ca_pem, reg().proxy_ca_pins) == (None, None, [])


# --- Karmada ---------------------------------------------------------------------------------------


def register_karmada(member, request, ca, discovery=None, seen=None, check_mode=False):
    return KarmadaRegistration(member, None, request, check_mode, connect=connector(BootstrapHub(ca), seen),
                               discover_hub=discovery or FakeDiscovery(ca)).present()


def test_karmada_registration_through_a_proxy(ca, proxy_ca, proxy_ca_file, openers):
    member, discovery, seen = FakeCluster("member"), FakeDiscovery(ca), []
    request = reg(proxy_url=HTTPS_PROXY, proxy_ca_cert=proxy_ca_file, proxy_server_address="http://gateway:8118")
    result = register_karmada(member, request, ca, discovery, seen)
    assert result["changed"] is True and result["proxy_server_address"] == "http://gateway:8118"
    # discovery and the CSR go through the proxy, trusting the hub CA and the proxy's
    assert discovery.calls[0]["opener"] == ("proxy", HTTPS_PROXY, proxy_ca.pem)
    bundle = pki.merge_certificates(ca.pem, proxy_ca.pem)
    assert seen == [(HUB_URL, bundle, TOKEN, HTTPS_PROXY)]
    parts = stored_kubeconfig(member, AGENT_SECRET_PATH, "karmada-kubeconfig")
    assert (parts["server"], parts["proxy_url"], parts["ca_pem"]) == (HUB_URL, HTTPS_PROXY, bundle)
    assert result["ca_pins"] == [bootstrap.ca_pin(ca.pem)]
    # the same proxy again: nothing changes, no discovery, and the pins are the hub's only
    never = FakeDiscovery(ca, errors=[AssertionError("no discovery expected")])
    again = register_karmada(member, request, ca, never)
    assert again["changed"] is False and again["reason"] is None and never.calls == []
    assert again["ca_pins"] == [bootstrap.ca_pin(ca.pem)]


def test_karmada_changed_proxy_rewrites_the_kubeconfig_and_keeps_the_certificate(ca, proxy_ca_file, openers):
    member = FakeCluster("member")
    register_karmada(member, reg(proxy_url=PROXY), ca)
    first = stored_kubeconfig(member, AGENT_SECRET_PATH, "karmada-kubeconfig")
    other = "http://other-proxy.example:8080"
    for request, reason in ((reg(proxy_url=other), "reaches the hub through proxy %s, not through proxy %s" % (PROXY, other)),
                            (reg(proxy_url=other, proxy_ca_cert=proxy_ca_file), "does not trust the proxy CA of proxy_ca_cert"),
                            (reg(), "reaches the hub through proxy %s, not directly" % other)):
        for check_mode in (True, False):
            discovery, seen = FakeDiscovery(ca), []
            result = register_karmada(member, request, ca, discovery, seen, check_mode=check_mode)
            assert result["changed"] is True and reason in result["reason"] and result["csr_name"] is None
            assert seen == [] and proxy_of(discovery.calls[0]) == request.proxy_url  # the new way to the hub is checked
            assert result["changes"] == ["member Secret/karmada-system/karmada-kubeconfig: updated"]
            assert result["diff"][0]["before_header"] == "member Secret/karmada-system/karmada-kubeconfig"
        parts = stored_kubeconfig(member, AGENT_SECRET_PATH, "karmada-kubeconfig")
        assert parts["proxy_url"] == request.proxy_url
        assert (parts["client_cert_pem"], parts["client_key_pem"]) == (first["client_cert_pem"], first["client_key_pem"])
        assert register_karmada(member, request, ca, FakeDiscovery(ca, errors=[AssertionError("none")]))["changed"] is False


# --- OCM -------------------------------------------------------------------------------------------


def test_ocm_bootstrap_kubeconfig_through_a_proxy(ca, proxy_ca, proxy_ca_file, openers):
    member = FakeCluster("member")
    request = reg("ocm", proxy_url=HTTPS_PROXY, proxy_ca_cert=proxy_ca_file)
    discovery = FakeDiscovery(ca)
    result = OcmRegistration(member, None, request, discover_hub=discovery).present()
    assert result["changed"] and proxy_of(discovery.calls[0]) == HTTPS_PROXY
    config = yaml.safe_load(secret_text(member, BOOTSTRAP_PATH, "kubeconfig"))
    assert config["clusters"][0] == {"name": "hub", "cluster": {
        "server": HUB_URL, "certificate-authority-data": pki.b64(pki.merge_certificates(ca.pem, proxy_ca.pem)),
        "proxy-url": HTTPS_PROXY}}
    assert OcmRegistration(member, None, request, discover_hub=FakeDiscovery(ca)).present()["changed"] is False


def test_ocm_joined_member_with_another_proxy_gets_a_new_bootstrap_kubeconfig(ca):
    member = FakeCluster("member")
    OcmRegistration(member, None, reg("ocm"), discover_hub=FakeDiscovery(ca)).present()
    joined(member, ca)  # the agent's hub kubeconfig, without proxy-url
    result = OcmRegistration(member, None, reg("ocm", proxy_url=PROXY), discover_hub=FakeDiscovery(ca)).present()
    assert result["joined"] is False and result["reason"] == "the stored kubeconfig reaches the hub directly, not through proxy %s" % PROXY
    assert "member Secret/open-cluster-management-agent/bootstrap-hub-kubeconfig: updated" in result["changes"]
    config = yaml.safe_load(secret_text(member, BOOTSTRAP_PATH, "kubeconfig"))
    assert config["clusters"][0]["cluster"]["proxy-url"] == PROXY


# --- discovery through the proxy --------------------------------------------------------------------


class RecordingCluster:
    """Stands in for client.Cluster: records the configuration and answers one request."""

    built = []

    def __init__(self, name, config, role=None):
        ca = open(config.ssl_ca_cert).read() if config.ssl_ca_cert else None
        RecordingCluster.built.append((config.host, config.proxy, config.verify_ssl, ca))
        self.answer = RecordingCluster.answers.pop(0)

    def request(self, method, path, timeout=None):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_proxied_fetch_keeps_the_trust_of_each_fetch(monkeypatch, ca, proxy_ca):
    monkeypatch.setattr(client, "Cluster", RecordingCluster)
    RecordingCluster.built = []
    RecordingCluster.answers = [{"data": {}}, {"data": {}}, client.ClusterError("refused", 403),
                                client.ClusterError("the hub (x) is unreachable: proxy down")]
    fetch = bootstrap.proxied_fetch(HTTPS_PROXY, proxy_ca.pem)
    url = HUB_URL + bootstrap.CLUSTER_INFO_PATH
    assert fetch(url, bootstrap.insecure_tls_context(), 5) == (200, json.dumps({"data": {}}).encode())
    assert fetch(url, bootstrap._verified_context(ca.pem), 5)[0] == 200
    insecure, verified = RecordingCluster.built
    assert insecure == (HUB_URL, HTTPS_PROXY, False, None)
    assert verified[:3] == (HUB_URL, HTTPS_PROXY, True)
    assert bootstrap.pins_of_bundle(verified[3]) == [bootstrap.ca_pin(ca.pem), bootstrap.ca_pin(proxy_ca.pem)]
    assert fetch(url, ssl.create_default_context(cadata=ca.pem), 5) == (403, b"")
    with pytest.raises(OSError, match="proxy down; the request went through proxy %s: check proxy_url" % HTTPS_PROXY):
        fetch(url, bootstrap.insecure_tls_context(), 5)


def test_discovery_goes_through_the_proxy_only_when_one_is_given(ca, proxy_ca, proxy_ca_file, openers):
    for request, opener in ((reg(proxy_url=PROXY, proxy_ca_cert=proxy_ca_file), ("proxy", PROXY, proxy_ca.pem)), (reg(), None)):
        discovery = FakeDiscovery(ca)
        registrar.discover(request, discovery)
        assert discovery.calls[0]["opener"] == opener
    with pytest.raises(FleetError, match="does not exist on the hub"):  # the opener makes the fetches
        bootstrap.discover_hub(HUB_URL, TOKEN, unsafe_skip_ca_verification=True, opener=lambda url, context, timeout: (404, b""))


def test_a_proxy_that_does_not_answer_writes_nothing(ca):
    member = FakeCluster("member")
    refused = FleetError("cannot fetch %s (without TLS verification): the hub is unreachable; the request went through proxy %s"
                         % (HUB_URL, PROXY))
    with pytest.raises(FleetError, match="through proxy"):
        register_karmada(member, reg(proxy_url=PROXY, token=OTHER_TOKEN), ca, FakeDiscovery(ca, errors=[refused]))
    assert member.objects == {}
