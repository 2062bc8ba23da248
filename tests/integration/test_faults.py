"""Fault tests on the lab: the hub's API server stopped in the middle of a task, a member that stops
answering, a token that expires half-way, and two site.yml runs at once.

"In the middle" is reached deterministically, never by sleeping: a module runs in a subprocess and
the hub is stopped once something the module wrote can be seen (its CSR), or the module talks to
the hub through a proxy (apiproxy.py) that lets the test act right before a given request. The
stopped API server is started again on the same port with the same data (``Lab.start_apiserver``).
Each task is then run again and must converge: one registration, no duplicate objects, no second
approved CSR. Every subprocess and every wait is bounded; the lab's simulations play the agents.

Karmada: member1 joins by push and member2 registers by pull; OCM: member1 joins and is accepted.
Every test removes what it created.
"""

import base64
import contextlib
import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, csr as csrs, lease_lock, registrar
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import registration as karmada_registration
from apiproxy import ApiProxy
from runner import COLLECTIONS, ROOT, recap_of

import lab as fleet_lab  # tests/lab, on sys.path through conftest.py

TASK_TIMEOUT = 300  # seconds any one module run may take
PLAYBOOK_TIMEOUT = 1200  # seconds a playbook run may take (site.yml on a busy machine)
WAIT = 120  # seconds any awaited condition may take
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
MANAGED_CLUSTERS = "/apis/cluster.open-cluster-management.io/v1/managedclusters"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
PULL, PUSH = "member2", "member1"


# --- running modules and playbooks, bounded ---------------------------------------------------------------


class Task:
    """A module or playbook running in a subprocess; :meth:`output` waits for it, at most ``timeout`` seconds."""

    def __init__(self, command, env=None, cleanup=None, timeout=TASK_TIMEOUT):
        self.command = command
        self.timeout = timeout
        self._cleanup = cleanup
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=dict(os.environ, **(env or {})))

    def output(self):
        try:
            stdout, stderr = self.process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            stdout, stderr = self.process.communicate()
            raise AssertionError("%s did not end within %ss:\n%s\n%s" % (self.command[1], self.timeout, stdout[-3000:], stderr[-3000:]))
        finally:
            if self._cleanup:
                self._cleanup()
        return self.process.returncode, stdout, stderr

    def kill(self):
        """Kill the process (SIGKILL), as a runner that dies."""
        self.process.kill()
        self.output()

    def result(self):
        """The module's JSON result, with ``rc``."""
        code, stdout, stderr = self.output()
        try:
            result = json.loads(stdout)
        except ValueError:
            raise AssertionError("%s printed no JSON (rc %s):\n%s\n%s" % (self.command[1], code, stdout, stderr))
        result["rc"] = code
        return result


def start_module(name, args):
    """Start ``plugins/modules/<name>.py`` with ``args`` as Ansible runs a module."""
    handle, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(handle, "w") as stream:
        json.dump({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=False, _ansible_diff=False)}, stream)
    return Task([sys.executable, os.path.join(ROOT, "plugins", "modules", name + ".py"), path],
                env={"PYTHONPATH": COLLECTIONS}, cleanup=lambda: os.unlink(path))


def run(name, args):
    return start_module(name, args).result()


def start_playbook(playbook, inventory, **extra_vars):
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), os.path.join(ROOT, "playbooks", playbook),
               "-i", inventory] + (["-e", json.dumps(extra_vars)] if extra_vars else [])
    return Task(command, env={"ANSIBLE_COLLECTIONS_PATH": COLLECTIONS, "ANSIBLE_NOCOLOR": "1",
                              "ANSIBLE_LOCALHOST_WARNING": "false", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false"},
                timeout=PLAYBOOK_TIMEOUT)


# --- the lab ------------------------------------------------------------------------------------------------


def auth(lab, name):
    return {"kubeconfig": lab.clusters[name]["kubeconfig"], "context": name}


def wait_for(check, what, timeout=WAIT):
    return fleet_lab.wait_for(check, timeout, what)


def agent_csrs(lab, engine, cluster):
    """The CSRs on the hub of ``cluster``'s agent: by common name (Karmada) or by cluster label (OCM)."""
    items = lab.api(lab.hub).get(CSRS)["items"]
    if engine == "ocm":
        return [c for c in items if (c["metadata"].get("labels") or {}).get(ocm.CLUSTER_NAME_LABEL) == cluster
                and ocm.ADDON_NAME_LABEL not in (c["metadata"].get("labels") or {})]
    return [c for c in items if csrs.common_name(c) == karmada.agent_user(cluster)]


def new_csrs(lab, engine, cluster, known):
    """``{name: state}`` of the agent CSRs created since ``known`` (names) was taken."""
    return dict((c["metadata"]["name"], csrs.state(c)) for c in agent_csrs(lab, engine, cluster)
                if c["metadata"]["name"] not in known)


def known_csrs(lab, engine, cluster):
    return {c["metadata"]["name"] for c in agent_csrs(lab, engine, cluster)}


@pytest.fixture
def restarts(lab):
    """``stop(name)`` stops a lab cluster's API server (default: the hub's); ``start()``, or the end of the test, starts
    every stopped one again."""
    stopped = []

    class Restarts:
        @staticmethod
        def stop(name=lab.hub):
            stopped.append(name)
            lab.stop_apiserver(name, grace=2)

        @staticmethod
        def start():
            while stopped:
                lab.start_apiserver(stopped.pop())
    yield Restarts
    Restarts.start()


def new_token(lab, engine):
    """A bootstrap token of the engine's group on the hub, valid for an hour."""
    token_id, secret = bootstrap.generate_token().split(".")
    group = bootstrap.KARMADA_DEFAULT_GROUP if engine == "karmada" else bootstrap.OCM_DEFAULT_GROUP
    lab.api(lab.hub).post("/api/v1/namespaces/kube-system/secrets",
                          bootstrap.token_secret(token_id, secret, ttl_seconds=3600, groups=[group]))
    with open(lab.clusters[lab.hub]["ca_cert"]) as handle:
        pins = bootstrap.pins_of_bundle(handle.read())
    return {"token": "%s.%s" % (token_id, secret), "token_id": token_id, "hub_apiserver": lab.clusters[lab.hub]["server"],
            "ca_cert_hashes": pins}


@pytest.fixture
def tokens(lab):
    """``tokens("karmada")`` makes a join token; all are deleted after the test."""
    made = []

    def make(engine):
        made.append(new_token(lab, engine))
        return made[-1]
    yield make
    for join in made:
        try:
            lab.api(lab.hub).delete("/api/v1/namespaces/kube-system/secrets/bootstrap-token-" + join["token_id"])
        except fleet_lab.ApiError as exc:
            if exc.status != 404:  # the token cleaner removes expired ones
                raise


def pull_args(lab, join, csr_wait_timeout=None, **extra):
    """member2's registration with the module, as karmadactl register: the karmada-agent's Deployment too, which starts
    the agent (simulated) that creates its Cluster."""
    return dict(auth(lab, PULL), engine="karmada", cluster_name=PULL, hub_apiserver=join["hub_apiserver"], token=join["token"],
                ca_cert_hashes=join["ca_cert_hashes"], hub=auth(lab, lab.hub),
                karmada=dict({"deploy_agent": True}, **({"csr_wait_timeout": csr_wait_timeout} if csr_wait_timeout else {})),
                **extra)


def member_bookkeeping(lab, member):
    """What a Karmada registration keeps on the member besides the agent kubeconfig: the Lease and the CSR in flight."""
    api = lab.api(member)
    return {"lease": api.exists("%s/%s" % (LEASES, lease_lock.REGISTRATION_LEASE)),
            "in_flight": api.exists("/api/v1/namespaces/kube-system/secrets/" + registrar.in_flight_name(member))}


def agent_kubeconfig_path():
    return "/api/v1/namespaces/%s/secrets/%s" % (karmada.AGENT_NAMESPACE, karmada.AGENT_KUBECONFIG_SECRET)


@pytest.fixture
def unregistered_pull_member(lab, simulations, bootstrap_rbac):
    """member2 not registered when the test starts (checked) and unregistered again afterwards, hub side included."""
    hub = lab.api(lab.hub)
    assert not lab.api(PULL).exists(agent_kubeconfig_path()), "member2 is registered already: the lab is not clean"
    assert not hub.exists("%s/%s" % (CLUSTERS, PULL)), "the hub lists member2 already: the lab is not clean"
    # Without Karmada's automatic approval the CSR waits for csr_accept: the test decides when it is approved.
    assert not hub.exists("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:karmada:agent-autoapprove-bootstrap")
    yield
    done = run("cluster_register", dict(auth(lab, PULL), engine="karmada", cluster_name=PULL, state="absent",
                                        hub=auth(lab, lab.hub)))
    assert done["rc"] == 0, done.get("msg")


def approve(lab, engine, cluster, wait=False):
    accepted = run("csr_accept", dict(auth(lab, lab.hub), engine=engine, clusters=[cluster], wait=wait, timeout=WAIT))
    assert accepted["rc"] == 0, accepted.get("msg")
    return accepted


def register_pull_member(lab, join):
    """Register member2 with the module while csr_accept approves its CSR; wait until the agent's Cluster is Ready."""
    known = known_csrs(lab, "karmada", PULL)
    task = start_module("cluster_register", pull_args(lab, join, csr_wait_timeout=WAIT))
    wait_for(lambda: new_csrs(lab, "karmada", PULL, known), "the CSR of member2")
    approve(lab, "karmada", PULL)
    result = task.result()
    assert result["rc"] == 0, result.get("msg")
    wait_for(lambda: cluster_ready(lab, PULL), "Cluster member2 Ready (the simulated karmada-agent)")
    return result


def cluster_ready(lab, name):
    hub = lab.api(lab.hub)
    if not hub.exists("%s/%s" % (CLUSTERS, name)):
        return False
    cluster = hub.get("%s/%s" % (CLUSTERS, name))
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (cluster.get("status") or {}).get("conditions") or [])


# --- the hub stopped in the middle of a task ----------------------------------------------------------------


def test_hub_stopped_while_a_pull_registration_waits_for_its_certificate(lab, unregistered_pull_member, tokens, restarts):
    args = pull_args(lab, tokens("karmada"), csr_wait_timeout=TASK_TIMEOUT - 60)
    known = known_csrs(lab, "karmada", PULL)
    task = start_module("cluster_register", args)
    # The module has posted its CSR, which nothing approves yet: it is waiting for the certificate.
    (posted,) = wait_for(lambda: new_csrs(lab, "karmada", PULL, known), "the CSR of member2")
    restarts.stop()
    restarts.start()
    approve(lab, "karmada", PULL)
    result = task.result()  # it waited through the outage, with the same CSR
    assert result["rc"] == 0, result.get("msg")
    assert result["changed"] is True and result["csr_name"] == posted
    assert new_csrs(lab, "karmada", PULL, known) == {posted: csrs.APPROVED}
    assert member_bookkeeping(lab, PULL) == {"lease": False, "in_flight": False}
    wait_for(lambda: cluster_ready(lab, PULL), "Cluster member2 Ready (the simulated karmada-agent)")
    again = run("cluster_register", args)
    assert again["rc"] == 0 and again["changed"] is False and again["csr_name"] is None
    assert new_csrs(lab, "karmada", PULL, known) == {posted: csrs.APPROVED}


def bootstrap_user_may_read_csrs(lab, join):
    """What the hub's RBAC authorizer says now of a GET of a CSR by the join token's user (a SubjectAccessReview)."""
    review = lab.api(lab.hub).post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": karmada_registration.BOOTSTRAP_USER % join["token_id"],
                 "groups": ["system:bootstrappers", bootstrap.KARMADA_DEFAULT_GROUP, "system:authenticated"],
                 "resourceAttributes": {"verb": "get", "group": "certificates.k8s.io",
                                        "resource": "certificatesigningrequests", "name": "any"}}})
    return review["status"]["allowed"]


def test_a_hub_that_forbids_the_token_for_a_while_is_waited_for(lab, unregistered_pull_member, tokens):
    """An API server just started forbids requests (403) for about a second, until its RBAC authorizer has read the
    roles. Played for real: the bootstrap group's right to read CSRs is taken away before the registration's first
    two reads of its CSR and given back before the third; the registration waits through it, with the same CSR."""
    join, hub = tokens("karmada"), lab.api(lab.hub)
    binding = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/fleet-test:node-bootstrapper"
    kept = hub.get(binding)
    reads = []

    def restore():
        hub.post(binding.rsplit("/", 1)[0], dict(((key, kept[key]) for key in ("apiVersion", "kind", "roleRef", "subjects")),
                                                 metadata={"name": kept["metadata"]["name"]}))

    def before(method, path, client):
        if method != "GET" or not path.startswith(CSRS + "/"):
            return
        reads.append(path)
        if len(reads) == 1:
            hub.delete(binding)
            wait_for(lambda: not bootstrap_user_may_read_csrs(lab, join), "the hub to forbid the token reading CSRs")
        elif len(reads) == 3:
            restore()
            wait_for(lambda: bootstrap_user_may_read_csrs(lab, join), "the hub to let the token read CSRs again")
    known = known_csrs(lab, "karmada", PULL)
    try:
        with ApiProxy(lab.clusters[lab.hub], before) as proxy:
            task = start_module("cluster_register", pull_args(lab, dict(join, hub_apiserver=proxy.url), csr_wait_timeout=WAIT))
            (posted,) = wait_for(lambda: new_csrs(lab, "karmada", PULL, known), "the CSR of member2")
            approve(lab, "karmada", PULL)
            result = task.result()
    finally:
        if not hub.exists(binding):
            restore()
    assert len(reads) >= 3, reads
    assert result["rc"] == 0, result.get("msg")
    assert result["changed"] is True and result["csr_name"] == posted
    assert new_csrs(lab, "karmada", PULL, known) == {posted: csrs.APPROVED}


def test_a_pull_registration_whose_runner_was_killed_is_resumed_with_its_csr(lab, unregistered_pull_member, tokens):
    args = pull_args(lab, tokens("karmada"), csr_wait_timeout=TASK_TIMEOUT - 60)
    known = known_csrs(lab, "karmada", PULL)
    task = start_module("cluster_register", args)
    (posted,) = wait_for(lambda: new_csrs(lab, "karmada", PULL, known), "the CSR of member2")
    task.kill()  # the runner dies while it waits: its Lease and its CSR in flight stay on the member
    assert member_bookkeeping(lab, PULL) == {"lease": True, "in_flight": True}
    approve(lab, "karmada", PULL)
    # The same task again: it takes over the Lease once it has expired and resumes the CSR
    resumed = run("cluster_register", args)
    assert resumed["rc"] == 0, resumed.get("msg")
    assert resumed["changed"] is True and resumed["csr_name"] == posted
    assert "hub CertificateSigningRequest/%s: unchanged" % posted in resumed["changes"]
    assert resumed["waited_for"]["lease"] == "Lease/kube-system/" + lease_lock.REGISTRATION_LEASE
    assert new_csrs(lab, "karmada", PULL, known) == {posted: csrs.APPROVED}  # one CSR, no second approved one
    assert member_bookkeeping(lab, PULL) == {"lease": False, "in_flight": False}
    wait_for(lambda: cluster_ready(lab, PULL), "Cluster member2 Ready (the simulated karmada-agent)")
    assert [c["metadata"]["name"] for c in lab.api(lab.hub).get(CLUSTERS)["items"]].count(PULL) == 1


def test_a_rerun_after_a_run_stopped_between_approval_and_storing_does_not_wait_for_a_new_csr(
        lab, unregistered_pull_member, tokens, tmp_path):
    """Without automatic approval agent_install approves the agent CSR while the registration waits for it. A run that
    stopped after the approval, before it stored the certificate, leaves an approved CSR that the next run resumes:
    that run must not wait for a CSR that will never come (it found the resumed CSR approved, and went on)."""
    join = tokens("karmada")
    known = known_csrs(lab, "karmada", PULL)
    task = start_module("cluster_register", pull_args(lab, join, csr_wait_timeout=TASK_TIMEOUT - 60))
    (posted,) = wait_for(lambda: new_csrs(lab, "karmada", PULL, known), "the CSR of member2")
    task.kill()
    approve(lab, "karmada", PULL)  # now as if the run had stopped between the approval and storing the certificate
    lab.api(PULL).delete("%s/%s" % (LEASES, lease_lock.REGISTRATION_LEASE))  # as if its Lease had run out since
    variables = {"agent_install_engine": "karmada", "agent_install_cluster_name": PULL,
                 "agent_install_connection": auth(lab, PULL), "agent_install_hub": auth(lab, lab.hub),
                 "agent_install_hub_apiserver": join["hub_apiserver"], "agent_install_token": join["token"],
                 "agent_install_ca_cert_hashes": join["ca_cert_hashes"], "agent_install_karmada_approve_csr": True,
                 "agent_install_wait_timeout": 60, "agent_install_wait_step": 5}
    playbook = tmp_path / "resume.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "vars": variables, "roles": [
        "multicluster.fleet.agent_install"]}]))
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(playbook)]
    done = Task(command, env={"ANSIBLE_COLLECTIONS_PATH": COLLECTIONS, "ANSIBLE_NOCOLOR": "1",
                              "ANSIBLE_LOCALHOST_WARNING": "false"}, timeout=PLAYBOOK_TIMEOUT)
    code, stdout, _stderr = done.output()
    assert code == 0, stdout[-4000:]
    # the approval task found the resumed CSR approved at once: no retry waiting for a new one
    assert "FAILED - RETRYING: [localhost]: Approve on the hub" not in stdout, stdout[-4000:]
    assert new_csrs(lab, "karmada", PULL, known) == {posted: csrs.APPROVED}
    assert member_bookkeeping(lab, PULL) == {"lease": False, "in_flight": False}


def test_hub_stopped_in_the_middle_of_a_push_join(lab, simulations, restarts, tmp_path):
    hub = lab.api(lab.hub)
    assert not hub.exists("%s/%s" % (CLUSTERS, PUSH)), "the hub lists member1 already: the lab is not clean"
    secrets_path = "/api/v1/namespaces/karmada-cluster/secrets"

    stopped_at = []

    def before(method, path, client):  # the Cluster is created; stop the hub before its first Secret is
        if method == "POST" and path == secrets_path and not stopped_at:
            stopped_at.append(path)
            restarts.stop()
    args = dict(cluster_name=PUSH, member=auth(lab, PUSH), context=lab.hub)
    try:
        with ApiProxy(lab.clusters[lab.hub], before) as proxy:
            kubeconfig = proxy.kubeconfig(str(tmp_path / "hub.kubeconfig"), lab.clusters[lab.hub]["kubeconfig"])
            stopped = run("cluster_join", dict(args, kubeconfig=kubeconfig))
        restarts.start()
        assert stopped_at, "the join never posted a hub Secret"
        assert stopped["rc"] == 1 and "is unreachable" in stopped["msg"] and proxy.url in stopped["msg"], stopped
        cluster = hub.get("%s/%s" % (CLUSTERS, PUSH))  # written before the hub went away ...
        hub_secrets = sorted(s["metadata"]["name"] for s in hub.get(secrets_path)["items"] if s["metadata"]["name"].startswith(PUSH))
        assert hub_secrets == []  # ... its Secrets not yet
        # The same task again converges: the same Cluster, its two Secrets, no second member token.
        joined = run("cluster_join", dict(args, kubeconfig=lab.clusters[lab.hub]["kubeconfig"], wait=True))
        assert joined["rc"] == 0, joined.get("msg")
        assert joined["changed"] is True
        after = hub.get("%s/%s" % (CLUSTERS, PUSH))
        assert after["metadata"]["uid"] == cluster["metadata"]["uid"]
        assert [c for c in hub.get(CLUSTERS)["items"] if c["spec"].get("id") == lab.clusters[PUSH]["kube_system_uid"]] == [after]
        hub_secrets = sorted(s["metadata"]["name"] for s in hub.get(secrets_path)["items"] if s["metadata"]["name"].startswith(PUSH))
        assert hub_secrets == [PUSH, karmada.impersonator_secret_name(PUSH)]
        # one token Secret of the join per ServiceAccount (besides those Kubernetes 1.20 adds by itself, <account>-token-<id>)
        accounts = sorted([karmada.service_account_name(PUSH), karmada.IMPERSONATOR_SERVICE_ACCOUNT])
        tokens_on_member = [s["metadata"]["annotations"]["kubernetes.io/service-account.name"]
                            for s in lab.api(PUSH).get("/api/v1/namespaces/karmada-cluster/secrets")["items"]
                            if s.get("type") == "kubernetes.io/service-account-token" and s["metadata"]["name"] in accounts]
        assert sorted(tokens_on_member) == accounts
        again = run("cluster_join", dict(args, kubeconfig=lab.clusters[lab.hub]["kubeconfig"]))
        assert again["rc"] == 0 and again["changed"] is False
    finally:
        restarts.start()
        done = run("cluster_join", dict(args, kubeconfig=lab.clusters[lab.hub]["kubeconfig"], state="absent"))
        assert done["rc"] == 0, done.get("msg")


@pytest.fixture
def ocm_member(lab, simulations, bootstrap_rbac, tokens):
    """member1 joined to the hub as OCM cluster member1 (its simulated klusterlet has posted its CSR), not accepted.

    Afterwards it is unjoined, and the namespaces and the Klusterlet API the join needed removed again.
    """
    member, hub = lab.api(PUSH), lab.api(lab.hub)
    crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/klusterlets.operator.open-cluster-management.io"
    had_crd = member.exists(crd)
    namespaces = [ns for ns in (ocm.OPERATOR_NAMESPACE, ocm.AGENT_NAMESPACE) if not member.exists("/api/v1/namespaces/" + ns)]
    assert not hub.exists("%s/%s" % (MANAGED_CLUSTERS, PUSH)), "the hub lists ManagedCluster member1 already"
    fleet_lab.install_crds(lab.clusters[PUSH], ["klusterlets.operator.open-cluster-management.io"])
    join = tokens("ocm")
    known = known_csrs(lab, "ocm", PUSH)
    joined = run("cluster_register", dict(auth(lab, PUSH), engine="ocm", cluster_name=PUSH, hub_apiserver=join["hub_apiserver"],
                                          token=join["token"], ca_cert_hashes=join["ca_cert_hashes"]))
    assert joined["rc"] == 0, joined.get("msg")
    wait_for(lambda: new_csrs(lab, "ocm", PUSH, known) and hub.exists("%s/%s" % (MANAGED_CLUSTERS, PUSH)),
             "the klusterlet's CSR and ManagedCluster")
    yield known
    done = run("cluster_register", dict(auth(lab, PUSH), engine="ocm", cluster_name=PUSH, state="absent", hub=auth(lab, lab.hub)))
    assert done["rc"] == 0, done.get("msg")
    for namespace in namespaces:
        member.delete("/api/v1/namespaces/" + namespace)
    wait_for(lambda: not any(member.exists("/api/v1/namespaces/" + ns) for ns in namespaces), "the join's namespaces to go")
    if not had_crd:
        member.delete(crd)
        wait_for(lambda: not member.exists(crd), "the Klusterlet CRD to go")


def test_hub_stopped_in_the_middle_of_an_accept(lab, ocm_member, restarts, tmp_path):
    hub, known = lab.api(lab.hub), ocm_member
    accepting = []

    def before(method, path, client):  # the CSR is approved; stop the hub before the ManagedCluster is accepted
        if method == "PATCH" and path == "%s/%s" % (MANAGED_CLUSTERS, PUSH) and not accepting:
            accepting.append(path)
            restarts.stop()
    with ApiProxy(lab.clusters[lab.hub], before) as proxy:
        kubeconfig = proxy.kubeconfig(str(tmp_path / "hub.kubeconfig"), lab.clusters[lab.hub]["kubeconfig"])
        stopped = run("csr_accept", dict(kubeconfig=kubeconfig, context=lab.hub, engine="ocm", clusters=[PUSH]))
    restarts.start()
    assert accepting, "csr_accept never accepted the ManagedCluster"
    assert stopped["rc"] == 1 and "is unreachable" in stopped["msg"] and proxy.url in stopped["msg"], stopped
    (csr_name, state), = new_csrs(lab, "ocm", PUSH, known).items()
    assert state == csrs.APPROVED  # half-way: approved ...
    assert hub.get("%s/%s" % (MANAGED_CLUSTERS, PUSH))["spec"]["hubAcceptsClient"] is False  # ... not accepted
    accepted = approve(lab, "ocm", PUSH, wait=True)
    assert accepted["changed"] is True and accepted["clusters"][0]["approved"] == []  # nothing approved a second time
    assert hub.get("%s/%s" % (MANAGED_CLUSTERS, PUSH))["spec"]["hubAcceptsClient"] is True
    assert new_csrs(lab, "ocm", PUSH, known) == {csr_name: csrs.APPROVED}
    wait_for(lambda: any(c["type"] == ocm.JOINED and c["status"] == "True" for c in
                         (hub.get("%s/%s" % (MANAGED_CLUSTERS, PUSH)).get("status") or {}).get("conditions") or []),
             "ManagedCluster member1 joined (the simulated klusterlet)")
    assert approve(lab, "ocm", PUSH)["changed"] is False


# --- a member that stops answering, a token that expires half-way -------------------------------------------


def test_unregistering_an_unreachable_member_fails_naming_it_and_force_cleans_the_hub(
        lab, unregistered_pull_member, tokens, restarts):
    register_pull_member(lab, tokens("karmada"))
    hub = lab.api(lab.hub)
    args = dict(auth(lab, PULL), engine="karmada", cluster_name=PULL, state="absent", hub=auth(lab, lab.hub))
    restarts.stop(PULL)
    refused = run("cluster_register", args)
    assert refused["rc"] == 1
    assert refused["msg"].startswith("cluster 'member2' (%s) is unreachable" % lab.clusters[PULL]["server"]), refused["msg"]
    assert refused["msg"].endswith("cluster member2 cannot be unregistered without reaching it: run again once it answers, or "
                                   "with force=true and hub credentials to remove it from the hub only"), refused["msg"]
    assert hub.exists("%s/%s" % (CLUSTERS, PULL))
    forced = run("cluster_register", dict(args, force=True))
    assert forced["rc"] == 0, forced.get("msg")
    assert forced["changed"] and not [c for c in forced["changes"] if c.startswith("member ")]
    assert "force=true: removed cluster member2 from the hub only" in json.dumps(forced["warnings"])
    for path in ("%s/%s" % (CLUSTERS, PULL), "/api/v1/namespaces/" + karmada.execution_namespace(PULL),
                 "/apis/rbac.authorization.k8s.io/v1/clusterroles/" + karmada.agent_role_name(PULL)):
        assert not hub.exists(path), path
    restarts.start()
    assert lab.api(PULL).exists(agent_kubeconfig_path())  # left on the member, as the warning says
    # unregistered_pull_member then removes the member side, now that it answers


def test_token_expired_between_discovery_and_csr_leaves_the_member_untouched(lab, unregistered_pull_member, tokens):
    join = tokens("karmada")
    token_path = "/api/v1/namespaces/kube-system/secrets/bootstrap-token-" + join["token_id"]
    hub, member = lab.api(lab.hub), lab.api(PULL)
    expired = []

    def before(method, path, client):  # discovery is done; expire the token before the CSR is posted
        if method == "POST" and path == CSRS and not expired:
            an_hour_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
            hub.patch(token_path, {"data": {"expiration": pki.b64(pki.rfc3339(an_hour_ago))}})
            wait_for(lambda: token_refused(lab, join["token"]), "the hub to refuse the expired token")
            expired.append(path)

    def member_state():
        return dict((path, sorted(o["metadata"]["name"] for o in member.get(path)["items"]))
                    for path in ("/api/v1/namespaces", "/api/v1/namespaces/kube-system/secrets", LEASES))
    before_run, known = member_state(), known_csrs(lab, "karmada", PULL)
    with ApiProxy(lab.clusters[lab.hub], before) as proxy:
        refused = run("cluster_register", pull_args(lab, dict(join, hub_apiserver=proxy.url)))
    assert expired, "the module never posted its CSR"
    assert refused["rc"] == 1 and refused["status"] == 401
    assert refused["msg"].startswith("posting CSR member2-"), refused["msg"]
    assert "refused the credentials (401 Unauthorized)" in refused["msg"]
    # the hub-side agent RBAC was written before the CSR was refused: the failure says so, and the next run keeps it
    written = [line for line in refused["changes"] if line.endswith(": created")]
    assert refused["changed"] is True and "hub ClusterRole/system:karmada:member2:agent: created" in written
    assert refused["msg"].endswith(
        "(the bootstrap token expired or was deleted since discovery: create a fresh one with multicluster.fleet."
        "bootstrap_token and run again; that run keeps what this one wrote on the hub); the member was not changed; "
        "written before the failure: " + ", ".join(written))
    assert join["token"].split(".")[1] not in json.dumps(refused)
    assert member_state() == before_run and new_csrs(lab, "karmada", PULL, known) == {}
    # a fresh token: the registration succeeds
    result = register_pull_member(lab, tokens("karmada"))
    assert result["changed"] and len(new_csrs(lab, "karmada", PULL, known)) == 1


def token_refused(lab, token):
    """True once the hub's API server answers 401 to requests with ``token``."""
    api = fleet_lab.ApiClient(lab.clusters[lab.hub]["server"], lab.clusters[lab.hub]["ca_cert"])
    try:
        api.get("/api/v1/namespaces/kube-public/configmaps/cluster-info", headers={"Authorization": "Bearer " + token})
    except fleet_lab.ApiError as exc:
        return exc.status == 401
    return False


# --- two site.yml runs at once -----------------------------------------------------------------------------


class SecondRunGate:
    """Holds the first ``write`` (method, path) until another process has made a ``read`` (method, path).

    That other process is the second site.yml run, starting while the first one is about to write what
    both runs decide on (member2's agent kubeconfig, its bootstrap kubeconfig, the hub's join token): the
    two runs overlap instead of passing each other by chance. Paths are compared without their query. The
    hold lasts at most ``timeout`` seconds, less than the module's read timeout, so that a second run far
    behind does not fail the first; ``overlapped`` says whether they overlapped. Each run reaches the cluster
    through a proxy of its own, whose ``before`` is :meth:`of` the run: a run that opens a new connection is
    still the same run.
    """

    def __init__(self, timeout, read, write):
        self.timeout = timeout
        self.read, self.write = read, write
        self.readers = set()
        self.overlapped = None
        self._condition = threading.Condition()

    def __call__(self, method, path, client):
        request = (method, path.split("?", 1)[0])
        with self._condition:
            if request == self.read:
                self.readers.add(client)
                self._condition.notify_all()
            elif request == self.write and self.overlapped is None:
                self.overlapped = self._condition.wait_for(lambda: self.readers - {client}, self.timeout)

    def of(self, run):
        """The ``before`` of the proxy of ``run`` (any label)."""
        return lambda method, path, client: self(method, path, run)


def unregistered_fleet(lab, tmp_path, engine, members_path):
    """The lab's inventory for ``engine`` (a dict, and written to a file: its path), once the hub is seen to list
    neither member at ``members_path``."""
    hub = lab.api(lab.hub)
    for name in (PUSH, PULL):
        assert not hub.exists("%s/%s" % (members_path, name)), "the hub lists %s already: the lab is not clean" % name
    with open(lab.inventory) as handle:
        inventory = yaml.safe_load(handle)
    inventory["all"]["vars"]["fleet_engine"] = engine
    direct = tmp_path / ("%s.yml" % engine)
    direct.write_text(yaml.safe_dump(inventory))
    return inventory, direct


def test_two_site_runs_at_once_register_each_member_once(lab, simulations, tmp_path):
    hub = lab.api(lab.hub)
    inventory, direct = unregistered_fleet(lab, tmp_path, "karmada", CLUSTERS)
    known = known_csrs(lab, "karmada", PULL)
    gate = SecondRunGate(45, ("GET", agent_kubeconfig_path()),
                         ("POST", "/api/v1/namespaces/%s/secrets" % karmada.AGENT_NAMESPACE))
    try:
        with contextlib.ExitStack() as proxies:
            runs = []
            for run in range(2):  # member2 is reached through the gate, by each run through a proxy of its own
                proxy = proxies.enter_context(ApiProxy(lab.clusters[PULL], gate.of(run)))
                inventory["all"]["children"]["members"]["hosts"][PULL]["kubeconfig"] = proxy.kubeconfig(
                    str(tmp_path / ("member2-%d.kubeconfig" % run)), lab.clusters[PULL]["kubeconfig"])
                gated = tmp_path / ("karmada-gated-%d.yml" % run)
                gated.write_text(yaml.safe_dump(inventory))
                runs.append(start_playbook("site.yml", str(gated)))
            outputs = [task.output() for task in runs]
        # Both succeed; or one gave up waiting for the other's registration, and says so.
        texts = [" ".join((stdout + stderr).split()) for code, stdout, stderr in outputs]  # warnings may be wrapped
        failed = [text for text, (code, _stdout, _stderr) in zip(texts, outputs) if code != 0]
        assert len(failed) < 2, "\n\n".join(text[-5000:] for text in texts)
        for text in failed:
            assert "another run (" in text and "has been registering cluster member2" in text, text[-5000:]
        if gate.overlapped and not failed:  # the second registration kept the first one's certificate, and said so
            kept = ["stored a valid certificate: kept it" in text for text in texts]
            assert kept.count(True) == 1, "\n\n".join(text[-6000:] for text in texts)
        ids = [c["spec"].get("id") for c in hub.get(CLUSTERS)["items"]]
        for name in (PUSH, PULL):
            assert ids.count(lab.clusters[name]["kube_system_uid"]) == 1, ids
        # one CSR, approved, for the pull member: one certificate, the one the member holds
        assert list(new_csrs(lab, "karmada", PULL, known).values()) == [csrs.APPROVED]
        assert member_bookkeeping(lab, PULL) == {"lease": False, "in_flight": False}
        secret = lab.api(PULL).get(agent_kubeconfig_path())
        config = yaml.safe_load(base64.b64decode(secret["data"][karmada.AGENT_KUBECONFIG_SECRET]))
        issued = [c for c in agent_csrs(lab, "karmada", PULL) if c["metadata"]["name"] not in known][0]["status"]["certificate"]
        assert config["users"][0]["user"]["client-certificate-data"] == issued
    finally:
        code, stdout, stderr = start_playbook("detach.yml", str(direct)).output()
        assert code == 0, stdout[-5000:] + stderr[-2000:]


# Per engine: the member read each registration makes before it takes the Lease, the first write under it, the hub's
# list of members, and what the second registration finds under the Lease: the member's agent registered as the
# winner, or (once the agent has registered) the hub's member of that name.
ON_THE_HUB = "is already registered on the hub as {kind} '{winner}': refusing to register it again as '{loser}'"
SAME_CLUSTER_TWICE = {
    "karmada": (("GET", agent_kubeconfig_path()), ("POST", "/api/v1/namespaces/%s/secrets" % karmada.AGENT_NAMESPACE),
                CLUSTERS, ("the member's agent kubeconfig belongs to system:karmada:agent:{winner}, not to cluster {loser}",
                           ON_THE_HUB.replace("{kind}", "Cluster"))),
    "ocm": (("GET", "/api/v1/namespaces/%s/secrets/%s" % (ocm.AGENT_NAMESPACE, ocm.HUB_KUBECONFIG_SECRET)),
            ("POST", "/api/v1/namespaces/%s/secrets" % ocm.AGENT_NAMESPACE), MANAGED_CLUSTERS,
            ("registers cluster {winner}, not {loser}: refusing to join as another cluster",
             ON_THE_HUB.replace("{kind}", "ManagedCluster"))),
}


@pytest.mark.parametrize("engine", sorted(SAME_CLUSTER_TWICE))
def test_two_hosts_reaching_one_cluster_under_two_names_register_it_once(lab, simulations, tmp_path, engine):
    """Host twin reaches member2's cluster as cluster twin, in the run that registers member2: both hosts read the member
    before either writes (the gate), and the member's registration Lease lets one of them register it; the other one
    waits, reads again and is refused, naming the winner, and the run fails."""
    read, write, members_path, refusals = SAME_CLUSTER_TWICE[engine]
    inventory, direct = unregistered_fleet(lab, tmp_path, engine, members_path)
    gate = SecondRunGate(50, read, write)  # below the modules' read timeout (60 s)
    try:
        with contextlib.ExitStack() as proxies:
            hosts = inventory["all"]["children"]["members"]["hosts"]
            hosts[PULL]["agent_install_api_endpoint"] = lab.clusters[PULL]["server"]
            hosts["twin"] = dict(hosts[PULL], cluster_name="twin")
            for host in (PULL, "twin"):  # each host reaches member2's cluster through a proxy of its own
                proxy = proxies.enter_context(ApiProxy(lab.clusters[PULL], gate.of(host)))
                hosts[host]["kubeconfig"] = proxy.kubeconfig(str(tmp_path / ("%s.kubeconfig" % host)),
                                                             lab.clusters[PULL]["kubeconfig"])
            twice = tmp_path / "twice.yml"
            twice.write_text(yaml.safe_dump(inventory))
            code, stdout, stderr = start_playbook("site.yml", str(twice)).output()
        text = " ".join((stdout + stderr).split())
        assert gate.overlapped, text[-5000:]
        assert code != 0, text[-5000:]
        (winner,) = registered_as(lab, members_path, (PULL, "twin"))
        loser = ({PULL, "twin"} - {winner}).pop()
        assert any(refusal.format(winner=winner, loser=loser) in text for refusal in refusals), text[-5000:]
        failed = {host: counts["failed"] for host, counts in recap_of(stdout).items() if counts["failed"]}
        assert failed == {loser: 1}, text[-5000:]
    finally:
        for name in registered_as(lab, members_path, (PULL, "twin")) or [PULL]:  # detach the cluster by its name
            with open(direct) as handle:
                inventory = yaml.safe_load(handle)
            inventory["all"]["children"]["members"]["hosts"][PULL]["cluster_name"] = name
            named = tmp_path / ("detach-%s.yml" % name)
            named.write_text(yaml.safe_dump(inventory))
            code, stdout, stderr = start_playbook("detach.yml", str(named)).output()
            assert code == 0, stdout[-5000:] + stderr[-2000:]


def registered_as(lab, members_path, names):
    """Which of ``names`` the hub lists as members."""
    listed = [m["metadata"]["name"] for m in lab.api(lab.hub).get(members_path)["items"]]
    return [name for name in names if name in listed]


def join_tokens(lab):
    """The ids of the hub's bootstrap tokens that hub_init made."""
    secrets = lab.api(lab.hub).get("/api/v1/namespaces/kube-system/secrets")["items"]
    return sorted(s["metadata"]["name"] for s in secrets if s.get("type") == bootstrap.SECRET_TYPE and base64.b64decode(
        (s.get("data") or {}).get("description", "")).decode() == "join token created by multicluster.fleet hub_init")


def test_two_ocm_site_runs_at_once_join_each_member_once(lab, simulations, tmp_path):
    """Both runs' hub plays look for the join token before either makes one, and both runs' joins of member2 read it
    before either writes its bootstrap kubeconfig: one token is made, member2's klusterlet bootstraps once (one CSR),
    and a third run changes nothing."""
    inventory, direct = unregistered_fleet(lab, tmp_path, "ocm", MANAGED_CLUSTERS)
    assert join_tokens(lab) == [], "hub_init's join token is on the hub already: the lab is not clean"
    known = known_csrs(lab, "ocm", PULL)
    token_gate = SecondRunGate(15, ("GET", "/api/v1/namespaces/kube-system/secrets"),
                               ("POST", "/api/v1/namespaces/kube-system/secrets"))
    join_gate = SecondRunGate(15, ("GET", "/api/v1/namespaces/%s/secrets/%s" % (ocm.AGENT_NAMESPACE, ocm.HUB_KUBECONFIG_SECRET)),
                              ("POST", "/api/v1/namespaces/%s/secrets" % ocm.AGENT_NAMESPACE))
    try:
        with contextlib.ExitStack() as proxies:
            runs = []
            for run in range(2):  # each run reaches the hub and member2 through proxies of its own
                hub_proxy = proxies.enter_context(ApiProxy(lab.clusters[lab.hub], token_gate.of(run)))
                member_proxy = proxies.enter_context(ApiProxy(lab.clusters[PULL], join_gate.of(run)))
                hosts = inventory["all"]["children"]
                hub_host = next(iter(hosts["hub"]["hosts"].values()))
                hub_host["kubeconfig"] = hub_proxy.kubeconfig(str(tmp_path / ("hub-%d.kubeconfig" % run)),
                                                              lab.clusters[lab.hub]["kubeconfig"])
                hosts["members"]["hosts"][PULL].update(  # reached through the gate; its klusterlet names its own address
                    kubeconfig=member_proxy.kubeconfig(str(tmp_path / ("member2-%d.kubeconfig" % run)),
                                                       lab.clusters[PULL]["kubeconfig"]),
                    agent_install_api_endpoint=lab.clusters[PULL]["server"])
                gated = tmp_path / ("ocm-gated-%d.yml" % run)
                gated.write_text(yaml.safe_dump(inventory))
                runs.append(start_playbook("site.yml", str(gated)))
            outputs = [task.output() for task in runs]
        for code, stdout, stderr in outputs:
            assert code == 0, stdout[-5000:] + stderr[-2000:]
        assert token_gate.overlapped and join_gate.overlapped, (token_gate.overlapped, join_gate.overlapped)
        assert len(join_tokens(lab)) == 1, join_tokens(lab)
        # member2's klusterlet asked once: one CSR, approved
        assert list(new_csrs(lab, "ocm", PULL, known).values()) == [csrs.APPROVED]
        code, stdout, stderr = start_playbook("site.yml", str(direct)).output()
        assert code == 0, stdout[-5000:] + stderr[-2000:]
        assert {host: counts["changed"] for host, counts in recap_of(stdout).items() if counts["changed"]} == {}, stdout[-5000:]
    finally:
        code, stdout, stderr = start_playbook("detach.yml", str(direct)).output()
        assert code == 0, stdout[-5000:] + stderr[-2000:]
