"""Registration through a forward proxy, against the lab: a CONNECT proxy on loopback between member2 and the hub.

cluster_register (``proxy_url``) discovers the hub, posts the Karmada CSR and writes the member's
kubeconfig through the proxy; the simulated agents then reach the hub through the ``proxy-url`` of
that kubeconfig. The proxy counts the tunnels it opened per target, so every step is seen passing
through it. The other direction, ``proxy_server_address``, goes through agent_install into the
karmada-agent's ``--proxy-server-address`` and from there into the Cluster's ``spec.proxyURL``.
Every object created here is removed again.
"""

import base64
import collections
import http.server
import os
import select
import socket
import ssl
import threading

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import hub
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CSR, NAMESPACE, SECRET
from agents import agent_csrs, approve_when_posted, auth, delete_all, delete_token, join_credentials
from runner import recap_of, run_module, run_playbook

import lab as fleet_lab
from sim_karmada_agent import SimulatedKarmadaAgent
from sim_klusterlet import SimulatedKlusterlet, SimulatedRegistrationController

MEMBER = "member2"
K_NAME, R_NAME, O_NAME = "prx-k1", "prx-k2", "prx-o1"  # cluster_register (Karmada), agent_install (Karmada), OCM
GATEWAY = "http://member2-gateway.example:8118"  # how the Karmada control plane would reach member2


class ConnectProxy:
    """A forwarding HTTP CONNECT proxy on 127.0.0.1 (a thread per tunnel); ``targets`` counts the tunnels per host:port.

    With ``tls`` (a certificate file and its key file) it is an https proxy: clients speak TLS with it,
    and the TLS of the server inside the tunnel.
    """

    def __init__(self, tls=None):
        self.targets = collections.Counter()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_CONNECT(self):  # noqa: N802 - http.server API
                try:
                    host, port = self.path.rsplit(":", 1)
                    upstream = socket.create_connection((host, int(port)), timeout=10)
                except (OSError, ValueError):
                    self.send_error(502)
                    return
                with proxy._lock:
                    proxy.targets[self.path] += 1
                self.send_response(200, "Connection established")
                self.end_headers()
                proxy._pipe(self.connection, upstream)
                self.close_connection = True

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.url = "%s://127.0.0.1:%d" % ("https" if tls else "http", self._server.server_address[1])

    def _pipe(self, downstream, upstream):
        sockets = [downstream, upstream]
        try:
            while not self._stopping.is_set():
                for sock in select.select(sockets, [], [], 0.5)[0]:
                    data = sock.recv(65536)
                    if not data:
                        return
                    while isinstance(sock, ssl.SSLSocket) and sock.pending():  # decrypted already: select does not see it
                        data += sock.recv(sock.pending())
                    (upstream if sock is downstream else downstream).sendall(data)
        except OSError:
            pass
        finally:
            upstream.close()

    def seen(self, server):
        """How many tunnels the proxy opened to ``server`` (a URL) so far."""
        with self._lock:
            return self.targets[server.split("://", 1)[1]]

    def __enter__(self):
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()


def connection(lab, name):
    return client.get_cluster(auth(lab, name), name)


def secret_kubeconfig(secret, key):
    return yaml.safe_load(base64.b64decode(secret["data"][key]))


@pytest.fixture(scope="module")
def hub_api(lab):
    return connection(lab, "hub")


@pytest.fixture(scope="module")
def hub_prepared(lab, hub_api):
    """What hub_registration sets up (test setup, in-process; undone if this module added it)."""
    had = dict((ns, resources.get(hub_api, NAMESPACE, ns) is not None)
               for ns in (ocm.OPERATOR_NAMESPACE, karmada.DEFAULT_CLUSTER_NAMESPACE))
    added = [engine for engine in ("karmada", "ocm") if hub.ensure_registration(hub_api, engine)["changed"]]
    yield
    for engine in added:
        hub.remove_registration(hub_api, engine)
    delete_all([(hub_api, NAMESPACE, ns, None) for ns, existed in had.items() if not existed])


@pytest.fixture(scope="module")
def karmada_join(lab, hub_api, hub_prepared):
    join = join_credentials(lab, hub_api, "karmada")
    yield join
    delete_token(hub_api, join)


def karmada_args(lab, join, proxy_url, **extra):
    return dict(auth(lab, MEMBER), engine="karmada", cluster_name=K_NAME, hub_apiserver=join["hub_apiserver"],
                token=join["token"], ca_cert_hashes=join["ca_cert_hashes"], hub=auth(lab, "hub"), karmada={"csr_wait_timeout": 90},
                proxy_url=proxy_url, **extra)


def test_karmada_pull_registration_through_the_proxy(lab, hub_api, karmada_join):
    member = connection(lab, MEMBER)
    hub_server = lab.clusters["hub"]["server"]
    try:
        with ConnectProxy() as proxy:
            planned = run_module("cluster_register", karmada_args(lab, karmada_join, proxy.url), check_mode=True)
            assert planned["rc"] == 0 and planned["changed"] is True, planned.get("msg")
            assert resources.get(member, NAMESPACE, karmada.AGENT_NAMESPACE) is None and agent_csrs(hub_api, K_NAME) == []
            assert proxy.seen(hub_server) >= 3  # two discovery fetches, the CSR dry run

            before = proxy.seen(hub_server)
            done = approve_when_posted(lab, "karmada", K_NAME, [], lambda: run_module(
                "cluster_register", karmada_args(lab, karmada_join, proxy.url), diff=True))
            assert done["rc"] == 0 and done["changed"] is True, done.get("msg")
            assert proxy.seen(hub_server) > before
            csr = resources.get(hub_api, CSR, done["csr_name"])
            assert csr["spec"]["username"] == "system:bootstrap:" + karmada_join["token"].partition(".")[0]
            secret = resources.get(member, SECRET, karmada.AGENT_KUBECONFIG_SECRET, karmada.AGENT_NAMESPACE)
            config = secret_kubeconfig(secret, karmada.AGENT_KUBECONFIG_SECRET)
            assert config["clusters"][0]["cluster"]["proxy-url"] == proxy.url
            assert config["clusters"][0]["cluster"]["server"] == hub_server

            for check_mode in (True, False):  # the same proxy again: nothing to do
                again = run_module("cluster_register", karmada_args(lab, karmada_join, proxy.url), check_mode=check_mode)
                assert again["rc"] == 0 and again["changed"] is False and again["csr_name"] is None, again

            # the simulated karmada-agent starts from that kubeconfig: it reaches the hub through the proxy
            before = proxy.seen(hub_server)
            with SimulatedKarmadaAgent(lab, MEMBER, cluster_name=K_NAME) as agent:
                agent.wait_for(lambda: resources.condition_is(resources.get(hub_api, karmada.CLUSTER, K_NAME) or {}, "Ready"),
                               60, "the Pull Cluster through the proxy")
            assert proxy.seen(hub_server) > before

            # another proxy: the kubeconfig is written again (diff), the certificate kept, no new CSR
            with ConnectProxy() as other:
                moved = run_module("cluster_register", karmada_args(lab, karmada_join, other.url), diff=True)
                assert moved["rc"] == 0 and moved["changed"] is True, moved.get("msg")
                assert moved["csr_name"] is None and agent_csrs(hub_api, K_NAME) == [done["csr_name"]]
                assert "reaches the hub through proxy %s, not through proxy %s" % (proxy.url, other.url) in moved["reason"]
                assert "member Secret/karmada-system/karmada-kubeconfig: updated" in moved["changes"]
                assert [d["before_header"] for d in moved["diff"]][-1] == "member Secret/karmada-system/karmada-kubeconfig"
                assert other.seen(hub_server) >= 2  # the new way to the hub was checked by discovery
                stored = secret_kubeconfig(resources.get(member, SECRET, karmada.AGENT_KUBECONFIG_SECRET, karmada.AGENT_NAMESPACE),
                                           karmada.AGENT_KUBECONFIG_SECRET)
                assert stored["clusters"][0]["cluster"]["proxy-url"] == other.url
                assert stored["users"] == config["users"]
                assert run_module("cluster_register", karmada_args(lab, karmada_join, other.url))["changed"] is False
    finally:
        gone = run_module("cluster_register", dict(auth(lab, MEMBER), engine="karmada", cluster_name=K_NAME, state="absent",
                                                   hub=auth(lab, "hub")))
        delete_all([(hub_api, CSR, name, None) for name in agent_csrs(hub_api, K_NAME)])
    assert gone["rc"] == 0, gone.get("msg")
    assert resources.get(hub_api, karmada.CLUSTER, K_NAME) is None
    assert resources.get(member, NAMESPACE, karmada.AGENT_NAMESPACE) is None


def test_karmada_registration_through_an_https_proxy_trusts_proxy_ca_cert(lab, hub_api, karmada_join):
    """The proxy's certificate is member1's serving certificate: proxy_ca_cert (member1's CA) lets the member trust it."""
    pki_dir = os.path.join(lab.clusters["member1"]["dir"], "pki")
    tls = (os.path.join(pki_dir, "apiserver.crt"), os.path.join(pki_dir, "apiserver.key"))
    hub_server = lab.clusters["hub"]["server"]
    with ConnectProxy(tls=tls) as proxy:
        refused = run_module("cluster_register", karmada_args(lab, karmada_join, proxy.url), check_mode=True)
        assert refused["rc"] == 1 and "CERTIFICATE_VERIFY_FAILED" in refused["msg"], refused
        assert "through proxy %s" % proxy.url in refused["msg"]
        planned = run_module("cluster_register", karmada_args(lab, karmada_join, proxy.url,
                                                              proxy_ca_cert=lab.clusters["member1"]["ca_cert"]), check_mode=True)
        assert planned["rc"] == 0 and planned["changed"] is True, planned.get("msg")
        assert proxy.seen(hub_server) >= 4  # the unverified fetch twice, the verified one, the CSR dry run
    member = connection(lab, MEMBER)
    assert resources.get(member, NAMESPACE, karmada.AGENT_NAMESPACE) is None and agent_csrs(hub_api, K_NAME) == []
    assert resources.get(hub_api, resources.CLUSTER_ROLE, karmada.agent_role_name(K_NAME)) is None


def test_agent_install_proxy_server_address_becomes_the_clusters_proxy_url(lab, hub_api, karmada_join):
    options = {"fleet_engine": "karmada", "agent_install_cluster_name": R_NAME, "agent_install_hub": auth(lab, "hub"),
               "agent_install_hub_apiserver": karmada_join["hub_apiserver"], "agent_install_token": karmada_join["token"],
               "agent_install_ca_cert_hashes": karmada_join["ca_cert_hashes"], "agent_install_karmada_approve_csr": True,
               "agent_install_wait": False, "agent_install_proxy_server_address": GATEWAY}
    member = connection(lab, MEMBER)
    hub_server = lab.clusters["hub"]["server"]

    def play(**variables):
        return [{"name": "member", "hosts": MEMBER, "gather_facts": False, "vars": dict(options, **variables),
                 "roles": ["multicluster.fleet.agent_install"]}]
    try:
        with ConnectProxy() as proxy:
            done = run_playbook(play(agent_install_proxy_url=proxy.url), inventory=lab.inventory)
            assert done.returncode == 0, done.stdout[-3000:]
            assert proxy.seen(hub_server) > 0
            deployment = resources.get(member, resources.DEPLOYMENT, "karmada-agent", karmada.AGENT_NAMESPACE)
            assert "--proxy-server-address=%s" % GATEWAY in deployment["spec"]["template"]["spec"]["containers"][0]["command"]
            secret = resources.get(member, SECRET, karmada.AGENT_KUBECONFIG_SECRET, karmada.AGENT_NAMESPACE)
            assert secret_kubeconfig(secret, karmada.AGENT_KUBECONFIG_SECRET)["clusters"][0]["cluster"]["proxy-url"] == proxy.url
            with SimulatedKarmadaAgent(lab, MEMBER) as agent:  # its settings come from the Deployment's flags
                cluster = agent.wait_for(lambda: resources.get(hub_api, karmada.CLUSTER, R_NAME), 60, "the Pull Cluster")
                assert cluster["spec"]["proxyURL"] == GATEWAY and cluster["spec"]["syncMode"] == "Pull"
                again = run_playbook(play(agent_install_proxy_url=proxy.url), inventory=lab.inventory)
                assert again.returncode == 0 and recap_of(again.stdout)[MEMBER]["changed"] == 0, again.stdout[-3000:]
                # without the flag the restarted agent clears spec.proxyURL, as the real one does
                cleared = run_playbook(play(agent_install_proxy_url=proxy.url, agent_install_proxy_server_address=""),
                                       inventory=lab.inventory)
                assert cleared.returncode == 0, cleared.stdout[-3000:]
                agent.wait_for(lambda: "proxyURL" not in resources.get(hub_api, karmada.CLUSTER, R_NAME)["spec"], 60,
                               "spec.proxyURL removed")
    finally:
        gone = run_playbook(play(agent_install_state="absent"), inventory=lab.inventory)
        delete_all([(hub_api, CSR, name, None) for name in agent_csrs(hub_api, R_NAME)])
    assert gone.returncode == 0, gone.stdout[-3000:]
    assert resources.get(hub_api, karmada.CLUSTER, R_NAME) is None
    assert resources.get(member, NAMESPACE, karmada.AGENT_NAMESPACE) is None


def test_ocm_join_through_the_proxy(lab, hub_api, hub_prepared):
    member = connection(lab, MEMBER)
    hub_server = lab.clusters["hub"]["server"]
    crd = "klusterlets.operator.open-cluster-management.io"
    had_crd = resources.get(member, resources.CRD, crd) is not None
    had = [ns for ns in (ocm.OPERATOR_NAMESPACE, ocm.AGENT_NAMESPACE) if resources.get(member, NAMESPACE, ns)]
    fleet_lab.install_crds(lab.clusters[MEMBER], [crd])
    join = join_credentials(lab, hub_api, "ocm")
    # the ClusterRoles the simulated registration controller installs, as the cluster-manager does
    manager_roles = ["open-cluster-management:managedcluster:" + agent for agent in ("registration", "work")]
    manager_roles = [role for role in manager_roles if resources.get(hub_api, resources.CLUSTER_ROLE, role) is None]
    sims = []
    try:
        with ConnectProxy() as proxy:
            args = dict(auth(lab, MEMBER), engine="ocm", cluster_name=O_NAME, hub_apiserver=join["hub_apiserver"],
                        token=join["token"], ca_cert_hashes=join["ca_cert_hashes"], proxy_url=proxy.url)
            planned = run_module("cluster_register", args, check_mode=True)
            assert planned["rc"] == 0 and planned["changed"] is True, planned
            assert proxy.seen(hub_server) >= 2  # the unverified and the verified discovery fetch
            assert resources.get(member, SECRET, ocm.BOOTSTRAP_SECRET, ocm.AGENT_NAMESPACE) is None
            before = proxy.seen(hub_server)
            done = run_module("cluster_register", args)
            assert done["rc"] == 0 and done["changed"] is True and proxy.seen(hub_server) >= before + 2, done.get("msg")
            stored = resources.get(member, SECRET, ocm.BOOTSTRAP_SECRET, ocm.AGENT_NAMESPACE)
            assert secret_kubeconfig(stored, ocm.KUBECONFIG_KEY)["clusters"][0]["cluster"]["proxy-url"] == proxy.url
            assert run_module("cluster_register", args)["changed"] is False
            # the simulated klusterlet bootstraps through the proxy, then runs as the agent through it
            sims += [SimulatedKlusterlet(lab, MEMBER).start(), SimulatedRegistrationController(lab, [O_NAME]).start()]
            before = proxy.seen(hub_server)
            resources.wait_until(lambda: (bool(agent_csrs(hub_api, O_NAME)), sims[0].status), 60, "the klusterlet CSR")
            assert proxy.seen(hub_server) > before
            accepted = run_module("csr_accept", dict(auth(lab, "hub"), engine="ocm", clusters=[O_NAME], wait=True))
            assert accepted["rc"] == 0, accepted.get("msg")
            sims[0].wait_for(lambda: resources.condition_is(resources.get(hub_api, ocm.MANAGED_CLUSTER, O_NAME) or {},
                                                            "ManagedClusterJoined"), 60, "the klusterlet to join")
            hub_secret = resources.get(member, SECRET, ocm.HUB_KUBECONFIG_SECRET, ocm.AGENT_NAMESPACE)
            assert secret_kubeconfig(hub_secret, ocm.KUBECONFIG_KEY)["clusters"][0]["cluster"]["proxy-url"] == proxy.url
            before = proxy.seen(hub_server)
            sims[0].wait_for(lambda: proxy.seen(hub_server) > before, 30, "the joined agent's requests through the proxy")
            for check_mode in (True, False):
                again = run_module("cluster_register", args, check_mode=check_mode)
                assert again["rc"] == 0 and again["changed"] is False and again["joined"] is True, again
    finally:
        gone = run_module("cluster_register", dict(auth(lab, MEMBER), engine="ocm", cluster_name=O_NAME, state="absent",
                                                   hub=auth(lab, "hub")))  # the registration controller removes its finalizers
        for sim in sims:
            sim.stop()
        delete_token(hub_api, join)
        delete_all([(hub_api, CSR, name, None) for name in agent_csrs(hub_api, O_NAME)]
                   + [(hub_api, NAMESPACE, O_NAME, None)]
                   + [(hub_api, resources.CLUSTER_ROLE, role, None) for role in manager_roles]
                   + [(member, NAMESPACE, ns, None) for ns in (ocm.AGENT_NAMESPACE, ocm.OPERATOR_NAMESPACE) if ns not in had]
                   + ([] if had_crd else [(member, resources.CRD, crd, None)]))
    assert gone["rc"] == 0, gone.get("msg")
    assert resources.get(hub_api, ocm.MANAGED_CLUSTER, O_NAME) is None
