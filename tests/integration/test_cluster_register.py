"""cluster_register against the lab: real discovery, real JWS, real CSR signing, real RBAC.

Karmada registers lab member2 as ``reg-k1`` (csr_accept approves, the simulated karmada-agent then
creates its Cluster with the issued certificate); OCM joins lab member1 as ``reg-o1`` (the simulated
klusterlet does its CSR, csr_accept approves). Every object created here is removed again.
"""

import base64
import datetime
import http.server
import json
import os
import re
import ssl
import tempfile
import threading

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, hub
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import join
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CSR, NAMESPACE, SECRET
from agents import agent_csrs, approve_when_posted, auth, connection, delete_all, delete_token, join_credentials
from runner import recap_of, run_module, run_playbook

import lab as fleet_lab
import labstate
from sim_karmada_agent import SimulatedKarmadaAgent
from sim_klusterlet import SimulatedKlusterlet, SimulatedRegistrationController

K_NAME, K_MEMBER = "reg-k1", "member2"
O_NAME, O_MEMBER = "reg-o1", "member1"
H_NAME, H_MEMBER, H_HOSTING = "reg-h1", "member2", "hub"  # OCM Hosted: member2's klusterlet runs on the hub cluster


def no_secret_in(result, *values):
    text = json.dumps(result)
    return all(value not in text for value in values) and "PRIVATE KEY" not in text


@pytest.fixture(scope="module")
def hub_api(lab):
    return connection(auth(lab, "hub"), "hub")


@pytest.fixture(scope="module")
def hub_prepared(lab, hub_api):
    """What hub_registration sets up, for both engines (test setup, in-process; undone if this module added it)."""
    had_ocm_namespace = resources.get(hub_api, NAMESPACE, ocm.OPERATOR_NAMESPACE) is not None
    added = [engine for engine in ("karmada", "ocm") if hub.ensure_registration(hub_api, engine)["changed"]]
    yield
    for engine in added:
        hub.remove_registration(hub_api, engine)
    if not had_ocm_namespace:
        delete_all([(hub_api, NAMESPACE, ocm.OPERATOR_NAMESPACE, None)])


@pytest.fixture(scope="module")
def karmada_env(lab, hub_prepared, hub_api):
    """Two Karmada join tokens; hub namespace karmada-cluster and the CSRs are cleaned up afterwards."""
    existing = resources.get(hub_api, NAMESPACE, karmada.DEFAULT_CLUSTER_NAMESPACE)
    if existing and existing["metadata"].get("deletionTimestamp"):  # an earlier test's cleanup, still terminating
        # Kubernetes' namespace controller empties and removes it: it has taken more than a minute in full runs.
        resources.wait_until_gone(hub_api, NAMESPACE, karmada.DEFAULT_CLUSTER_NAMESPACE, timeout=300)
        existing = None
    had_cluster_namespace = existing is not None
    joins = [join_credentials(lab, hub_api, "karmada") for dummy in range(2)]
    yield joins
    for credentials in joins:
        delete_token(hub_api, credentials)
    member = connection(auth(lab, K_MEMBER), K_MEMBER)
    delete_all([(hub_api, CSR, name, None) for name in agent_csrs(hub_api, K_NAME)]
               + [(member, NAMESPACE, karmada.AGENT_NAMESPACE, None),
                  (hub_api, NAMESPACE, karmada.execution_namespace(K_NAME), None)]
               + ([] if had_cluster_namespace else [(hub_api, NAMESPACE, karmada.DEFAULT_CLUSTER_NAMESPACE, None)]))


def karmada_args(lab, join, karmada_options=None, **extra):
    args = dict(auth(lab, K_MEMBER), engine="karmada", cluster_name=K_NAME, hub_apiserver=join["hub_apiserver"],
                token=join["token"], ca_cert_hashes=join["ca_cert_hashes"], hub=auth(lab, "hub"),
                karmada=dict(csr_wait_timeout=60, **(karmada_options or {})))
    args.update(extra)
    return args


def assert_nothing_written(lab, hub_api, engine):
    if engine == "karmada":
        member = connection(auth(lab, K_MEMBER), K_MEMBER)
        assert resources.get(member, NAMESPACE, karmada.AGENT_NAMESPACE) is None
        assert resources.get(hub_api, resources.CLUSTER_ROLE, karmada.agent_role_name(K_NAME)) is None
        assert agent_csrs(hub_api, K_NAME) == []
    else:
        member = connection(auth(lab, O_MEMBER), O_MEMBER)
        assert resources.get(member, SECRET, ocm.BOOTSTRAP_SECRET, ocm.AGENT_NAMESPACE) is None
        assert resources.get(member, ocm.KLUSTERLET, ocm.KLUSTERLET_NAME) is None


# --- Karmada: refusals before anything is written ---------------------------------------------------------


def test_karmada_check_mode_writes_nothing(lab, hub_api, karmada_env):
    result = run_module("cluster_register", karmada_args(lab, karmada_env[0]), check_mode=True, diff=True)
    assert result["rc"] == 0, result.get("msg")
    assert result["changed"] is True and result["csr_name"].startswith(K_NAME + "-")
    assert "hub CertificateSigningRequest/%s: created" % result["csr_name"] in result["changes"]
    assert "member Secret/karmada-system/karmada-kubeconfig: created" in result["changes"]
    assert any(d["after_header"] == "hub ClusterRole/system:karmada:reg-k1:agent" for d in result["diff"])
    assert no_secret_in(result, karmada_env[0]["token"].split(".")[1])
    assert_nothing_written(lab, hub_api, "karmada")


def test_karmada_refuses_a_wrong_pin(lab, hub_api, karmada_env):
    wrong = bootstrap.ca_pin(open(lab.clusters[K_MEMBER]["ca_cert"]).read())
    result = run_module("cluster_register", karmada_args(lab, karmada_env[0], ca_cert_hashes=[wrong]))
    assert result["rc"] == 1 and "refusing to trust" in result["msg"] and wrong in result["msg"]
    assert result["actual_ca_pins"] == karmada_env[0]["ca_cert_hashes"]
    assert no_secret_in(result, karmada_env[0]["token"].split(".")[1])
    assert_nothing_written(lab, hub_api, "karmada")


@pytest.fixture
def tampering_proxy(lab, hub_api):
    """An HTTPS server that serves the hub's real cluster-info, signatures included, with its server rewritten.

    It uses member1's serving key pair: the first, unverified fetch accepts any certificate.
    """
    real = hub_api.request("GET", bootstrap.CLUSTER_INFO_PATH)
    pki_dir = os.path.join(lab.clusters["member1"]["dir"], "pki")
    cert_file, key_file = os.path.join(pki_dir, "apiserver.crt"), os.path.join(pki_dir, "apiserver.key")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server API
            body = json.dumps(tampered).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    url = "https://127.0.0.1:%d" % server.server_address[1]
    tampered = json.loads(json.dumps(real))
    tampered["data"]["kubeconfig"] = real["data"]["kubeconfig"].replace(lab.clusters["hub"]["server"], url)
    assert tampered["data"]["kubeconfig"] != real["data"]["kubeconfig"]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield url
    server.shutdown()
    server.server_close()


def test_karmada_refuses_a_tampered_cluster_info(lab, hub_api, karmada_env, tampering_proxy):
    result = run_module("cluster_register", karmada_args(lab, karmada_env[0], hub_apiserver=tampering_proxy))
    assert result["rc"] == 1 and "does not verify: wrong token secret or tampered cluster-info" in result["msg"]
    assert no_secret_in(result, karmada_env[0]["token"].split(".")[1])
    assert_nothing_written(lab, hub_api, "karmada")


def test_karmada_refuses_an_expired_token(lab, hub_api, karmada_env):
    token_id, secret = bootstrap.generate_token().split(".")
    an_hour_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    expired = bootstrap.token_secret(token_id, secret, ttl_seconds=60, now=an_hour_ago, groups=[bootstrap.KARMADA_DEFAULT_GROUP])
    resources.ensure(hub_api, SECRET, expired)
    try:
        result = run_module("cluster_register", karmada_args(lab, karmada_env[0], token="%s.%s" % (token_id, secret),
                                                             discovery_timeout=1))
        assert result["rc"] == 1, result
        assert "no signature for token id %s" % token_id in result["msg"]
        assert "unknown, expired or not allowed to sign (checked for 1s" in result["msg"]
        assert no_secret_in(result, secret)
        assert_nothing_written(lab, hub_api, "karmada")
    finally:
        resources.delete(hub_api, SECRET, expired["metadata"]["name"], "kube-system")


# --- Karmada: register, accept, the agent's identity, re-runs, renewal, unregister ------------------------------


@pytest.fixture(scope="module")
def karmada_registered(lab, karmada_env):
    result = approve_when_posted(lab, "karmada", K_NAME, [],
                                 lambda: run_module("cluster_register", karmada_args(lab, karmada_env[0]), diff=True))
    assert result["rc"] == 0, result.get("msg")
    return result


def agent_connection(lab):
    """A hub connection with the credentials the member now holds for the agent."""
    member = connection(auth(lab, K_MEMBER), K_MEMBER)
    secret = resources.get(member, SECRET, karmada.AGENT_KUBECONFIG_SECRET, karmada.AGENT_NAMESPACE)
    kubeconfig = yaml.safe_load(base64.b64decode(secret["data"]["karmada-kubeconfig"]))
    return client.Cluster("agent", client.build_configuration({"kubeconfig": kubeconfig}, "agent")), secret


def status_of(call):
    try:
        call()
    except client.ClusterError as exc:
        return exc.status, exc.msg
    return 200, None


def test_karmada_registration_end_to_end(lab, hub_api, karmada_env, karmada_registered):
    result = karmada_registered
    assert result["changed"] is True and result["agent_user"] == "system:karmada:agent:reg-k1"
    assert result["csr_name"] in agent_csrs(hub_api, K_NAME)
    assert result["hub_server"] == lab.clusters["hub"]["server"] and result["ca_pins"] == karmada_env[0]["ca_cert_hashes"]
    assert result["api_endpoint"] == lab.clusters[K_MEMBER]["server"]
    assert "member Secret/karmada-system/karmada-kubeconfig: created" in result["changes"]
    assert no_secret_in(result, karmada_env[0]["token"].split(".")[1])
    csr = resources.get(hub_api, CSR, result["csr_name"])
    assert csr["spec"]["username"] == "system:bootstrap:" + karmada_env[0]["token"].split(".")[0]  # posted with the bootstrap token
    assert csr["metadata"]["labels"] == {"karmada.io/system": "true"}
    agent, secret = agent_connection(lab)
    assert secret["metadata"]["labels"] == {"karmada.io/system": "true"} and secret["type"] == "Opaque"
    # what the agent RBAC allows ...
    es = karmada.execution_namespace(K_NAME)
    work = {"apiVersion": karmada.WORK.api_version, "kind": "Work", "metadata": {"name": "probe", "namespace": es},
            "spec": {"workload": {"manifests": []}}}
    assert status_of(lambda: agent.request("GET", karmada.CLUSTER.path()))[0] == 200
    assert status_of(lambda: agent.request("POST", karmada.WORK.path(es), body=work))[0] == 200
    assert status_of(lambda: agent.request("GET", SECRET.path("karmada-cluster", K_NAME)))[0] == 404  # its own, none yet
    # ... and nothing more: the answers name the agent's identity
    for forbidden in (lambda: agent.request("GET", SECRET.path("kube-system", "bootstrap-token-" + karmada_env[0]["token"].split(".")[0])),
                      lambda: agent.request("GET", SECRET.path("karmada-cluster")),
                      lambda: agent.request("GET", SECRET.path("karmada-cluster", "absent-secret")),
                      lambda: agent.request("GET", karmada.WORK.path(karmada.execution_namespace("someone-else"))),
                      lambda: agent.request("POST", NAMESPACE.path(), body={"metadata": {"name": "reg-k1-probe"}})):
        status, message = status_of(forbidden)
        assert status == 403 and 'User "system:karmada:agent:reg-k1"' in message
    # the karmada-agent of a Deployment waits for it (its flags name the cluster): the Secret alone registers nothing
    pod = SimulatedKarmadaAgent(lab, K_MEMBER)
    pod.sync()
    assert pod.status == "waiting for Deployment karmada-system/karmada-agent"
    assert resources.get(hub_api, karmada.CLUSTER, K_MEMBER) is None
    # the simulated karmada-agent started by hand starts from the Secret and registers the Cluster in Pull mode
    with SimulatedKarmadaAgent(lab, K_MEMBER, cluster_name=K_NAME) as sim:
        cluster = sim.wait_for(lambda: resources.get(hub_api, karmada.CLUSTER, K_NAME), 30, "the Pull Cluster")
    assert cluster["spec"]["syncMode"] == "Pull" and cluster["spec"]["id"] == lab.clusters[K_MEMBER]["kube_system_uid"]


def test_karmada_rerun_keeps_the_certificate(lab, hub_api, karmada_env, karmada_registered):
    before = agent_csrs(hub_api, K_NAME)
    # a new token, and (in check mode) an unknown one: the stored certificate is good, so neither is used
    for token, check_mode in ((karmada_env[1]["token"], False), ("abcdef.0123456789abcdef", True)):
        result = run_module("cluster_register", karmada_args(lab, karmada_env[0], token=token), check_mode=check_mode)
        assert result["rc"] == 0, result.get("msg")
        assert result["changed"] is False and result["csr_name"] is None and result["reason"] is None
        assert result["certificate_expiration"] == karmada_registered["certificate_expiration"]
        assert "member Secret/karmada-system/karmada-kubeconfig: unchanged" in result["changes"]
    assert agent_csrs(hub_api, K_NAME) == before


def test_karmada_renewal(lab, hub_api, karmada_env, karmada_registered):
    dummy, old = agent_connection(lab)
    known = agent_csrs(hub_api, K_NAME)
    started = datetime.datetime.now(datetime.timezone.utc)
    result = approve_when_posted(lab, "karmada", K_NAME, known, lambda: run_module(
        "cluster_register", karmada_args(lab, karmada_env[1], {"cert_expiration_seconds": 7200}, renew_before=400)))
    finished = datetime.datetime.now(datetime.timezone.utc)
    assert result["rc"] == 0, result.get("msg")
    assert result["changed"] and "within the renewal window" in result["reason"] and result["csr_name"] not in known
    # Kubernetes 1.22 and newer sign for the CSR's expirationSeconds (two hours here); older ones for their own duration
    # (the lab's signer: one year). Either way this certificate is within renew_before already, and the run says so.
    lifetime = datetime.timedelta(seconds=7200) if labstate.version_info(lab) >= (1, 22, 0) else datetime.timedelta(days=365)
    expires = datetime.datetime.strptime(result["certificate_expiration"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    # (the signer backdates a certificate by up to five minutes)
    assert started + lifetime - datetime.timedelta(minutes=10) <= expires <= finished + lifetime, result["certificate_expiration"]
    # (ansible-core 2.19 and newer report each warning as a summary with the text under event.msg)
    warnings = [w if isinstance(w, str) else w["event"]["msg"] for w in result.get("warnings") or []]
    assert any("within renew_before (400 days) of its expiry already: every run will request a new certificate" in w
               for w in warnings), warnings
    assert "member Secret/karmada-system/karmada-kubeconfig: updated" in result["changes"]
    agent, new = agent_connection(lab)
    assert new["data"] != old["data"]
    assert status_of(lambda: agent.request("GET", karmada.CLUSTER.path(name=K_NAME)))[0] == 200


def test_karmada_unregister(lab, hub_api, karmada_env, karmada_registered):
    member = connection(auth(lab, K_MEMBER), K_MEMBER)
    es = karmada.execution_namespace(K_NAME)
    # what agent_install and the agent add: the member's agent objects, and a Work on the hub
    labels = {"karmada.io/system": "true"}
    resources.ensure(member, resources.SERVICE_ACCOUNT, {"metadata": {"name": "karmada-agent-sa", "namespace": "karmada-system"}})
    resources.ensure(member, resources.CLUSTER_ROLE, {"metadata": {"name": "karmada-agent", "labels": labels}, "rules": []})
    resources.ensure(member, resources.CLUSTER_ROLE_BINDING, {
        "metadata": {"name": "karmada-agent", "labels": labels},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "karmada-agent"},
        "subjects": [{"kind": "ServiceAccount", "name": "karmada-agent-sa", "namespace": "karmada-system"}]})
    assert resources.get(hub_api, karmada.WORK, "probe", es) is not None
    args = dict(auth(lab, K_MEMBER), engine="karmada", cluster_name=K_NAME, state="absent", hub=auth(lab, "hub"))
    checked = run_module("cluster_register", args, check_mode=True)
    assert checked["rc"] == 0 and checked["changed"] is True
    assert resources.get(hub_api, karmada.CLUSTER, K_NAME) is not None and resources.get(hub_api, karmada.WORK, "probe", es)
    # A Work whose finalizer nobody removes: the unregister times out after deleting it, and says what it deleted.
    held = "example.com/hold"
    probe = resources.get(hub_api, karmada.WORK, "probe", es)
    hub_api.request("PATCH", karmada.WORK.path(es, "probe"), content_type=resources.MERGE_PATCH,
                    body={"metadata": {"finalizers": (probe["metadata"].get("finalizers") or []) + [held]}})
    stuck = run_module("cluster_register", dict(args, wait_timeout=2))
    assert stuck["rc"] == 1 and stuck["changed"] is True and stuck["changes"] == ["hub Work/%s/probe: deleted" % es]
    assert stuck["last_seen"] == "finalizers: %s" % held, stuck["msg"]
    assert stuck["msg"].startswith("timed out after 2s waiting for Work/%s/probe to be deleted" % es)
    assert stuck["msg"].endswith("; deleted before the failure: hub Work/%s/probe: deleted" % es)
    assert resources.get(hub_api, karmada.CLUSTER, K_NAME) is not None  # nothing after the Work was touched
    join.remove_finalizers(hub_api, karmada.WORK, resources.get(hub_api, karmada.WORK, "probe", es), [held])
    result = run_module("cluster_register", args, diff=True)
    assert result["rc"] == 0, result.get("msg")
    assert result["changes"][0] == "hub Cluster/%s: deleted" % K_NAME  # the Work went once its finalizer did
    assert result["changes"][-1] == "member Namespace/karmada-system: deleted"
    assert resources.get(hub_api, karmada.CLUSTER, K_NAME) is None
    assert resources.get(hub_api, NAMESPACE, es) is None
    for kind, desired in karmada.agent_hub_objects(K_NAME)[2:]:
        assert resources.get(hub_api, kind, desired["metadata"]["name"], desired["metadata"].get("namespace")) is None
    assert resources.get(hub_api, NAMESPACE, karmada.DEFAULT_CLUSTER_NAMESPACE) is not None
    for kind, name, namespace in karmada.agent_member_objects():
        assert resources.get(member, kind, name, namespace) is None
    assert resources.get(member, NAMESPACE, karmada.AGENT_NAMESPACE) is None
    again = run_module("cluster_register", args)
    assert again["rc"] == 0 and again["changed"] is False


def test_karmada_refuses_to_unregister_a_push_cluster(lab, hub_api, karmada_env):
    resources.ensure(hub_api, karmada.CLUSTER, {"metadata": {"name": "reg-push"}, "spec": {"syncMode": "Push"}})
    try:
        args = dict(auth(lab, K_MEMBER), engine="karmada", cluster_name="reg-push", state="absent", hub=auth(lab, "hub"))
        result = run_module("cluster_register", args)
        assert result["rc"] == 1 and "Push mode" in result["msg"] and "multicluster.fleet.cluster_join" in result["msg"]
        assert resources.get(hub_api, karmada.CLUSTER, "reg-push") is not None
    finally:
        resources.delete(hub_api, karmada.CLUSTER, "reg-push", wait=resources.Wait())


# --- OCM ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ocm_env(lab, hub_prepared, hub_api):
    """The Klusterlet API on the member, a bootstrap token and a ServiceAccount token; cleanup afterwards."""
    fleet_lab.install_crds(lab.clusters[O_MEMBER], ["klusterlets.operator.open-cluster-management.io"])
    member = connection(auth(lab, O_MEMBER), O_MEMBER)
    existing = [ns for ns in (ocm.OPERATOR_NAMESPACE, ocm.AGENT_NAMESPACE) if resources.get(member, NAMESPACE, ns)]
    # the ClusterRoles the simulated registration controller installs, as the cluster-manager does
    manager_roles = ["open-cluster-management:managedcluster:" + agent for agent in ("registration", "work")]
    manager_roles = [role for role in manager_roles if resources.get(hub_api, resources.CLUSTER_ROLE, role) is None]
    joins = {"bootstrap": join_credentials(lab, hub_api, "ocm"),
             "service_account": join_credentials(lab, hub_api, "ocm", service_account=True)}
    sims = []
    yield joins, sims
    for sim in sims:
        sim.stop()
    delete_token(hub_api, joins["bootstrap"])
    delete_all([(member, ocm.KLUSTERLET, ocm.KLUSTERLET_NAME, None), (hub_api, NAMESPACE, O_NAME, None)]
               + [(hub_api, CSR, name, None) for name in agent_csrs(hub_api, O_NAME)]
               + [(hub_api, resources.CLUSTER_ROLE, role, None) for role in manager_roles]
               + [(member, NAMESPACE, ns, None) for ns in (ocm.AGENT_NAMESPACE, ocm.OPERATOR_NAMESPACE) if ns not in existing])


def ocm_args(lab, join, **extra):
    args = dict(auth(lab, O_MEMBER), engine="ocm", cluster_name=O_NAME, hub_apiserver=join["hub_apiserver"],
                token=join["token"], ca_cert_hashes=join["ca_cert_hashes"])
    args.update(extra)
    return args


def test_ocm_check_mode_and_wrong_pin_write_nothing(lab, hub_api, ocm_env):
    joins, dummy = ocm_env
    result = run_module("cluster_register", ocm_args(lab, joins["service_account"]), check_mode=True)
    assert result["rc"] == 0 and result["changed"] is True and result["joined"] is False
    wrong = bootstrap.ca_pin(open(lab.clusters[O_MEMBER]["ca_cert"]).read())
    refused = run_module("cluster_register", ocm_args(lab, joins["service_account"], ca_cert_hashes=[wrong]))
    assert refused["rc"] == 1 and "refusing to trust" in refused["msg"]
    for answer in (result, refused):
        assert no_secret_in(answer, joins["service_account"]["token"])
    assert_nothing_written(lab, hub_api, "ocm")


def test_ocm_join_accept_and_agent_identity(lab, hub_api, ocm_env):
    joins, sims = ocm_env
    result = run_module("cluster_register", ocm_args(lab, joins["service_account"], api_endpoint="https://10.0.0.7:6443"))
    assert result["rc"] == 0, result.get("msg")
    assert result["changed"] and result["joined"] is False and result["hub_server"] == lab.clusters["hub"]["server"]
    assert no_secret_in(result, joins["service_account"]["token"])
    member = connection(auth(lab, O_MEMBER), O_MEMBER)
    klusterlet = resources.get(member, ocm.KLUSTERLET, ocm.KLUSTERLET_NAME)
    assert klusterlet["spec"]["clusterName"] == O_NAME
    assert klusterlet["spec"]["externalServerURLs"] == [{"url": "https://10.0.0.7:6443"}]
    again = run_module("cluster_register", ocm_args(lab, joins["service_account"], api_endpoint="https://10.0.0.7:6443"))
    assert again["rc"] == 0 and again["changed"] is False
    # the klusterlet uses the bootstrap kubeconfig, the hub accepts it
    sims += [SimulatedKlusterlet(lab, O_MEMBER).start(), SimulatedRegistrationController(lab, [O_NAME]).start()]
    resources.wait_until(lambda: (bool(agent_csrs(hub_api, O_NAME)), sims[0].status), 30, "the klusterlet CSR")
    accepted = run_module("csr_accept", dict(auth(lab, "hub"), engine="ocm", clusters=[O_NAME], wait=True))
    assert accepted["rc"] == 0, accepted.get("msg")
    hub_secret = sims[0].wait_for(lambda: resources.get(member, SECRET, ocm.HUB_KUBECONFIG_SECRET, ocm.AGENT_NAMESPACE),
                                  30, "the hub kubeconfig Secret")
    identity = ocm.agent_common_name(O_NAME, base64.b64decode(hub_secret["data"]["agent-name"]).decode())
    assert sims[0].identity == identity
    data = dict((k, base64.b64decode(v).decode()) for k, v in hub_secret["data"].items())
    parts = pki.read_kubeconfig(data["kubeconfig"])
    with tempfile.TemporaryDirectory() as directory:
        files = {}
        for key, text in (("ca", parts["ca_pem"]), ("cert", data["tls.crt"]), ("key", data["tls.key"])):
            files[key] = os.path.join(directory, key)
            with open(files[key], "w") as handle:
                handle.write(text)
        agent = client.Cluster("ocm-agent", client.build_configuration(
            {"host": parts["server"], "ca_cert": files["ca"], "client_cert": files["cert"], "client_key": files["key"]}))
        sims[0].wait_for(lambda: status_of(lambda: agent.request("GET", ocm.MANAGED_CLUSTER.path(name=O_NAME)))[0] == 200,
                         30, "the agent's access to its ManagedCluster")
        for forbidden in (lambda: agent.request("GET", SECRET.path("kube-system", "anything")),
                          lambda: agent.request("GET", ocm.MANAGED_CLUSTER.path(name="someone-else"))):
            status, message = status_of(forbidden)
            assert status == 403 and 'User "%s"' % identity in message


def test_ocm_rerun_with_a_new_token_changes_nothing(lab, ocm_env):
    joins, dummy = ocm_env
    for check_mode in (True, False):
        result = run_module("cluster_register", ocm_args(lab, joins["bootstrap"], api_endpoint="https://10.0.0.7:6443"),
                            check_mode=check_mode)
        assert result["rc"] == 0, result.get("msg")
        assert result["changed"] is False and result["joined"] is True and result["certificate_expiration"]
    member = connection(auth(lab, O_MEMBER), O_MEMBER)
    stored = resources.get(member, SECRET, ocm.BOOTSTRAP_SECRET, ocm.AGENT_NAMESPACE)
    assert joins["service_account"]["token"] in base64.b64decode(stored["data"]["kubeconfig"]).decode()
    # no klusterlet operator here: wait times out saying what it saw of the Klusterlet, having written nothing
    waited = run_module("cluster_register", ocm_args(lab, joins["bootstrap"], api_endpoint="https://10.0.0.7:6443", wait=True,
                                                     wait_timeout=1, wait_sleep=1))
    assert waited["rc"] == 1 and waited["changed"] is False, waited
    assert waited["msg"].startswith("timed out after 1s waiting for Klusterlet/klusterlet on cluster '%s' " % O_NAME)
    assert waited["msg"].endswith(" to have Applied=True, Available=True; last seen: no Applied condition yet")
    assert waited["last_seen"] == "no Applied condition yet" and no_secret_in(waited, joins["bootstrap"]["token"])


def test_ocm_unjoin(lab, hub_api, ocm_env):
    args = dict(auth(lab, O_MEMBER), engine="ocm", cluster_name=O_NAME, state="absent", hub=auth(lab, "hub"))
    result = run_module("cluster_register", args)
    assert result["rc"] == 0, result.get("msg")
    assert result["changes"] == ["member Klusterlet/klusterlet: deleted",
                                 "member Secret/open-cluster-management-agent/bootstrap-hub-kubeconfig: deleted",
                                 "member Secret/open-cluster-management-agent/hub-kubeconfig-secret: deleted",
                                 "hub ManagedCluster/%s: deleted" % O_NAME,
                                 "hub Lease/%s/managed-cluster-lease: deleted" % O_NAME,
                                 "hub ConfigMap/kube-system/multicluster-fleet.ocm.%s: absent" % O_NAME]
    assert resources.get(hub_api, ocm.MANAGED_CLUSTER, O_NAME) is None
    assert_nothing_written(lab, hub_api, "ocm")
    again = run_module("cluster_register", args)
    assert again["rc"] == 0 and again["changed"] is False


def test_ocm_grpc_driver_writes_its_bootstrap_config(lab, hub_api, ocm_env):
    joins, sims = ocm_env
    member = connection(auth(lab, O_MEMBER), O_MEMBER)
    ca_pem = open(lab.clusters["hub"]["ca_cert"]).read()
    grpc = dict(registration_driver="grpc", grpc_server="grpc.hub.lab:443", grpc_ca_pem=ca_pem)
    args = ocm_args(lab, joins["service_account"], ocm=grpc)
    without = dict((key, value) for key, value in grpc.items() if key != "grpc_ca_pem")
    missing = run_module("cluster_register", dict(args, ocm=without))
    assert missing["rc"] == 1, missing
    assert missing["msg"] == "registration_driver is grpc but all of the following are missing: grpc_ca_pem found in ocm"
    null = run_module("cluster_register", dict(args, ocm=dict(without, grpc_ca_pem=None)))  # present for ansible-core
    assert null["rc"] == 1 and null["msg"] == "ocm.registration_driver is grpc but ocm.grpc_ca_pem missing", null
    planned = run_module("cluster_register", args, check_mode=True)
    assert planned["rc"] == 0 and planned["changed"] is True
    assert resources.get(member, ocm.KLUSTERLET, ocm.KLUSTERLET_NAME) is None
    result = run_module("cluster_register", args)
    assert result["rc"] == 0, result.get("msg")
    assert result["changed"] and no_secret_in(result, joins["service_account"]["token"])
    stored = resources.get(member, SECRET, ocm.BOOTSTRAP_SECRET, ocm.AGENT_NAMESPACE)
    config = yaml.safe_load(base64.b64decode(stored["data"]["config.yaml"]))
    assert config == {"url": "grpc.hub.lab:443", "caData": pki.b64(ca_pem), "token": joins["service_account"]["token"]}
    klusterlet = resources.get(member, ocm.KLUSTERLET, ocm.KLUSTERLET_NAME)
    assert klusterlet["spec"]["registrationConfiguration"]["registrationDriver"] == {"authType": "grpc"}
    for check_mode in (True, False):
        again = run_module("cluster_register", args, check_mode=check_mode)
        assert again["rc"] == 0 and again["changed"] is False
    if sims:  # the klusterlet simulation of the join test: it cannot speak grpc, and says so
        sims[0].wait_for(lambda: "grpc" in sims[0].status, 10, "the klusterlet noticing the grpc driver")
    gone = run_module("cluster_register", dict(auth(lab, O_MEMBER), engine="ocm", cluster_name=O_NAME, state="absent",
                                               hub=auth(lab, "hub")))
    assert gone["rc"] == 0 and resources.get(member, ocm.KLUSTERLET, ocm.KLUSTERLET_NAME) is None


def test_a_playbook_with_the_deprecated_flat_options_still_joins(lab, hub_api, ocm_env):
    """A task of version 1 - the OCM options by their flat names - joins, changed then unchanged, and ansible-core shows
    the deprecation of each flat name; the module runs as a module process then (ModuleInWorkerAction: its controller-side
    run cannot show deprecations). The grpc driver keeps the klusterlet simulation of the join test from joining."""
    joins, sims = ocm_env
    member = connection(auth(lab, O_MEMBER), O_MEMBER)
    ca_pem = open(lab.clusters["hub"]["ca_cert"]).read()
    flat = dict(registration_driver="grpc", grpc_server="grpc.hub.lab:443", grpc_ca_pem=ca_pem, klusterlet_mode="Default",
                client_cert_expiration_seconds=7200)
    task = {"name": "join with the flat options", "multicluster.fleet.cluster_register": ocm_args(
        lab, joins["service_account"], **flat)}
    playbook = [{"hosts": "localhost", "gather_facts": False, "tasks": [task]}]
    environment = {"ANSIBLE_DEPRECATION_WARNINGS": "true", "ANSIBLE_VERBOSITY": "3"}
    runs = [run_playbook(playbook, env=environment) for dummy in range(2)]
    for run, changed in zip(runs, (1, 0)):
        output = run.stdout + run.stderr
        assert run.returncode == 0, output[-3000:]
        assert recap_of(run.stdout)["localhost"]["changed"] == changed, output[-3000:]
        for name in flat:
            assert re.search(r"\[DEPRECATION WARNING\]: Param '%s' is deprecated\. See the module docs for more information\."
                             r"\s+This feature will be removed from collection 'multicluster\.fleet' version 3\.0\.0\." % name, output), name
        assert "running multicluster.fleet.cluster_register as a module process: option" in output
        assert joins["service_account"]["token"] not in output
    spec = resources.get(member, ocm.KLUSTERLET, ocm.KLUSTERLET_NAME)["spec"]
    assert spec["deployOption"] == {"mode": "Default"} and spec["registrationConfiguration"] == {
        "registrationDriver": {"authType": "grpc"}, "clientCertExpirationSeconds": 7200}
    gone = run_module("cluster_register", dict(auth(lab, O_MEMBER), engine="ocm", cluster_name=O_NAME, state="absent",
                                               hub=auth(lab, "hub")))
    assert gone["rc"] == 0 and resources.get(member, ocm.KLUSTERLET, ocm.KLUSTERLET_NAME) is None


# --- OCM Hosted ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hosted_env(lab, hub_prepared, hub_api, ocm_env):
    """The Klusterlet API on the hosting cluster and the simulated hosted klusterlet; cleanup afterwards."""
    fleet_lab.install_crds(lab.clusters[H_HOSTING], ["klusterlets.operator.open-cluster-management.io"])
    hosting = connection(auth(lab, H_HOSTING), H_HOSTING)
    member = connection(auth(lab, H_MEMBER), H_MEMBER)
    sims = [SimulatedKlusterlet(lab, H_MEMBER, cluster_name=H_NAME, hosting=H_HOSTING).start(),
            SimulatedRegistrationController(lab, [H_NAME]).start()]
    yield hosting, member, sims
    for sim in sims:
        sim.stop()
    namespace = ocm.HOSTED_PREFIX + H_NAME
    delete_all([(hosting, ocm.KLUSTERLET, namespace, None), (hosting, NAMESPACE, namespace, None), (hub_api, NAMESPACE, H_NAME, None)]
               + [(hub_api, CSR, name, None) for name in agent_csrs(hub_api, H_NAME)])


def hosted_args(lab, join, **extra):
    args = dict(auth(lab, H_MEMBER), engine="ocm", cluster_name=H_NAME, hub_apiserver=join["hub_apiserver"],
                token=join["token"], ca_cert_hashes=join["ca_cert_hashes"], ocm={"klusterlet_mode": "Hosted"},
                hosting=auth(lab, H_HOSTING))
    args.update(extra)
    return args


def test_ocm_hosted_join_accept_and_unjoin(lab, hub_api, ocm_env, hosted_env):
    joins, dummy = ocm_env
    hosting, member, sims = hosted_env
    namespace = ocm.HOSTED_PREFIX + H_NAME
    member_namespaces = sorted(n["metadata"]["name"] for n in resources.list_objects(member, NAMESPACE))
    planned = run_module("cluster_register", hosted_args(lab, joins["bootstrap"]), check_mode=True)
    assert planned["rc"] == 0 and planned["changed"] is True
    assert resources.get(hosting, NAMESPACE, namespace) is None
    result = run_module("cluster_register", hosted_args(lab, joins["bootstrap"]))
    assert result["rc"] == 0, result.get("msg")
    assert result["klusterlet"] == namespace and result["agent_namespace"] == namespace
    assert result["changes"] == ["hosting Namespace/%s: created" % namespace,
                                 "hosting Secret/%s/bootstrap-hub-kubeconfig: created" % namespace,
                                 "hosting Secret/%s/external-managed-kubeconfig: created" % namespace,
                                 "hosting Klusterlet/%s: created" % namespace]
    assert no_secret_in(result, joins["bootstrap"]["token"])
    klusterlet = resources.get(hosting, ocm.KLUSTERLET, namespace)
    assert klusterlet["spec"]["deployOption"] == {"mode": "Hosted"}
    assert klusterlet["spec"]["namespace"] == "open-cluster-management-" + namespace
    # the member is only read; the kubeconfig for the hosted agents embeds everything and works on its own
    assert sorted(n["metadata"]["name"] for n in resources.list_objects(member, NAMESPACE)) == member_namespaces
    external = resources.get(hosting, SECRET, ocm.EXTERNAL_MANAGED_KUBECONFIG_SECRET, namespace)
    parts = pki.read_kubeconfig(base64.b64decode(external["data"]["kubeconfig"]).decode())
    assert parts["server"] == lab.clusters[H_MEMBER]["server"] and parts["client_cert_pem"] and parts["client_key_pem"]
    # the hosted klusterlet registers through the bootstrap kubeconfig on the hosting cluster; the hub accepts it
    resources.wait_until(lambda: (bool(agent_csrs(hub_api, H_NAME)), sims[0].status), 30, "the hosted klusterlet's CSR")
    accepted = run_module("csr_accept", dict(auth(lab, "hub"), engine="ocm", clusters=[H_NAME], wait=True))
    assert accepted["rc"] == 0, accepted.get("msg")
    sims[0].wait_for(lambda: resources.condition_is(resources.get(hub_api, ocm.MANAGED_CLUSTER, H_NAME) or {}, ocm.JOINED),
                     30, "the hosted klusterlet to join")
    version = resources.get(hub_api, ocm.MANAGED_CLUSTER, H_NAME)["status"]["version"]["kubernetes"]
    assert version == member.request("GET", "/version")["gitVersion"]  # read through external-managed-kubeconfig
    for check_mode in (True, False):
        again = run_module("cluster_register", hosted_args(lab, joins["service_account"]), check_mode=check_mode)
        assert again["rc"] == 0 and again["changed"] is False and again["joined"] is True
    gone = run_module("cluster_register", dict(auth(lab, H_MEMBER), engine="ocm", cluster_name=H_NAME, state="absent",
                                               ocm={"klusterlet_mode": "Hosted"}, hosting=auth(lab, H_HOSTING),
                                               hub=auth(lab, "hub")))
    assert gone["rc"] == 0, gone.get("msg")
    assert gone["changes"] == ["hosting Klusterlet/%s: deleted" % namespace,
                               "hosting Secret/%s/bootstrap-hub-kubeconfig: deleted" % namespace,
                               "hosting Secret/%s/hub-kubeconfig-secret: deleted" % namespace,
                               "hosting Secret/%s/external-managed-kubeconfig: deleted" % namespace,
                               "hosting Namespace/%s: deleted" % namespace,
                               "hub ManagedCluster/%s: deleted" % H_NAME,
                               "hub Lease/%s/managed-cluster-lease: deleted" % H_NAME,
                               "hub ConfigMap/kube-system/multicluster-fleet.ocm.%s: absent" % H_NAME]
    assert resources.get(hub_api, ocm.MANAGED_CLUSTER, H_NAME) is None
