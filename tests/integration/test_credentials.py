"""The credential rule (docs/architecture.md section 3) against the lab's real API servers.

AWX's built-in "OpenShift or Kubernetes API Bearer Token" credential puts the hub into the job's
environment (K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_VERIFY_SSL, K8S_AUTH_SSL_CA_CERT). With those
variables set, every module given member1's kubeconfig reads or writes member1, never the hub; with
only the variables and no kubeconfig anywhere, hub tasks and the hub play of site.yml reach the hub.

Then every module against an unreachable and a forbidden server, given as the hub (by host, by a
kubeconfig context) and as a named member: each message names that cluster and its URL.
"""

import base64
import json
import os
import stat
import sys
import tempfile

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, hub as hub_setup
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import WaitTimeout
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from runner import ROOT, run_module, run_playbook
from labstate import admin_token, changes, closed_port, snapshot

PREFIX = "fleet-creds"  # names (and token descriptions) of everything these tests create
SERVICE_ACCOUNT = "fleet-test-awx"  # kube-system ServiceAccount on the hub whose token the AWX credential holds
MEMBER = "member1"
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": PREFIX, "namespace": "default"},
              "data": {"written": "by the credentials test"}}


def module_exists(name):
    return os.path.isfile(os.path.join(ROOT, "plugins", "modules", name + ".py"))


def needs_module(name):
    """Skip a test of module ``name`` (with the reason) while the collection does not have it."""
    return pytest.mark.skipif(not module_exists(name), reason="module %s does not exist yet" % name)


def awx_bearer_token_environment(host, token, ca_pem, private_data_dir):
    """What AWX's "OpenShift or Kubernetes API Bearer Token" credential injects into a job's environment.

    As its injector (``kubernetes_bearer_token``) does with verify_ssl set and a CA given: the CA text
    goes to a private file (mode 0600) under the job's ``env`` directory, and VERIFY_SSL is the string
    ``True`` (``False``, and no CA file, without them).
    """
    env_dir = os.path.join(private_data_dir, "env")
    os.makedirs(env_dir, exist_ok=True)
    handle, path = tempfile.mkstemp(dir=env_dir)
    with os.fdopen(handle, "w") as stream:
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
        stream.write(ca_pem)
    return {"K8S_AUTH_HOST": host, "K8S_AUTH_API_KEY": token, "K8S_AUTH_VERIFY_SSL": "True", "K8S_AUTH_SSL_CA_CERT": path}


@pytest.fixture(scope="module")
def awx_env(lab, tmp_path_factory):
    """The job environment: the four variables for the hub (a cluster-admin ServiceAccount token, the hub CA),
    and no kubeconfig anywhere (an empty HOME, no KUBECONFIG)."""
    info = lab.clusters[lab.hub]
    api = lab.api(lab.hub)
    job = tmp_path_factory.mktemp("awx-job")
    (job / "home").mkdir()
    with open(info["ca_cert"]) as handle:
        variables = awx_bearer_token_environment(info["server"], admin_token(api, SERVICE_ACCOUNT), handle.read(), str(job))
    yield dict(variables, HOME=str(job / "home"), KUBECONFIG="")
    api.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" + SERVICE_ACCOUNT)
    api.delete("/api/v1/namespaces/kube-system/serviceaccounts/" + SERVICE_ACCOUNT)


def auth(lab, name):
    """A lab cluster's admin kubeconfig and context."""
    return {"kubeconfig": lab.clusters[name]["kubeconfig"], "context": name}


def admin(lab, name):
    """An in-process connection to a lab cluster, for setup and for looking at what the modules did."""
    return client.get_cluster(auth(lab, name), name)


def ok(result):
    assert result["rc"] == 0, result.get("msg")
    return result


def failed_naming(result, *fragments):
    """Assert a clean failure (no traceback, no unnamed cluster) whose message contains each fragment."""
    msg = result.get("msg", "")
    assert result["rc"] == 1 and result.get("failed") is True, result
    assert "exception" not in result and "Traceback" not in msg and "unexpected error" not in msg, msg
    assert "cluster 'cluster'" not in msg, msg
    for fragment in fragments:
        assert fragment in msg, msg


def token_secret(token_id):
    return bootstrap.SECRET_NAME_PREFIX + token_id


def listed_token_ids(result):
    return [token["token_id"] for token in ok(result)["tokens"]]


# --- 1. the AWX credential for the hub, a member given by its kubeconfig ------------------------------------


class TestMemberKubeconfigWithHubCredential:
    """Every module given member1's kubeconfig while the variables point at the hub: it acts on member1."""

    @pytest.fixture(autouse=True)
    def setup(self, lab, awx_env):
        self.env = awx_env
        self.member = auth(lab, MEMBER)
        self.label = "cluster '%s' (%s)" % (MEMBER, lab.clusters[MEMBER]["server"])
        self.member_api = admin(lab, MEMBER)
        self.hub_api = admin(lab, lab.hub)

    def run(self, name, args, check_mode=False):
        return run_module(name, args, check_mode=check_mode, env=self.env)

    def delete_everywhere(self, kind, name, namespace):
        """Clean up what a module was asked to write on member1, on the hub too should it have landed there."""
        for cluster in (self.member_api, self.hub_api):
            resources.delete(cluster, kind, name, namespace)

    def test_bootstrap_token(self, lab):
        created = ok(self.run("bootstrap_token", dict(self.member, engine="karmada", description=PREFIX, ttl="1h")))
        secret = token_secret(created["token_id"])
        try:
            assert created["changed"] is True and created["hub_apiserver"] == lab.clusters[MEMBER]["server"]
            assert resources.get(self.member_api, resources.SECRET, secret, "kube-system") is not None
            assert resources.get(self.hub_api, resources.SECRET, secret, "kube-system") is None
            removed = ok(self.run("bootstrap_token", dict(self.member, engine="karmada", token_id=created["token_id"], state="absent")))
            assert removed["changed"] is True
            assert resources.get(self.member_api, resources.SECRET, secret, "kube-system") is None
        finally:
            self.delete_everywhere(resources.SECRET, secret, "kube-system")

    def test_bootstrap_token_info(self):
        token_id, secret = bootstrap.generate_token().split(".")
        resources.ensure(self.member_api, resources.SECRET, bootstrap.token_secret(token_id, secret, ttl_seconds=3600, description=PREFIX))
        try:
            assert token_id in listed_token_ids(self.run("bootstrap_token_info", self.member))
            assert token_id not in listed_token_ids(self.run("bootstrap_token_info", {}))
        finally:
            resources.delete(self.member_api, resources.SECRET, token_secret(token_id), "kube-system")

    def test_cluster_info(self):
        # The hub has Karmada's Cluster CRD and would answer; member1 has none.
        ok(self.run("cluster_info", {"engine": "karmada"}))
        failed_naming(self.run("cluster_info", dict(self.member, engine="karmada")),
                      self.label + ": GET /apis/cluster.karmada.io/v1alpha1/clusters failed: 404")

    def test_cluster_label(self):
        # member1 serves no Karmada Cluster: "not registered", on member1.
        result = self.run("cluster_label", dict(self.member, engine="karmada", clusters=[PREFIX], labels={"env": "prod"}))
        failed_naming(result, self.label + ": cannot label every cluster, nothing was written")

    def test_cluster_taint(self):
        # member1 serves no Karmada Cluster: "not registered", on member1.
        result = self.run("cluster_taint", dict(self.member, engine="karmada", clusters=[PREFIX], cordon=True))
        failed_naming(result, self.label, "nothing was written: cluster '%s' is not registered on the hub" % PREFIX)

    def test_cluster_prune(self):
        # member1 serves no Karmada Cluster: the list fails there, naming member1; the hub would answer (nothing to
        # prune: no cluster is silent for a day).
        ok(self.run("cluster_prune", {"engine": "karmada", "unreachable_after": 86400}, check_mode=True))
        failed_naming(self.run("cluster_prune", dict(self.member, engine="karmada", listed=[PREFIX]), check_mode=True),
                      self.label + ": GET /apis/cluster.karmada.io/v1alpha1/clusters failed: 404")

    def test_cluster_diagnose(self, lab):
        # member1 serves no Karmada Cluster: the cluster is not registered there (the diagnosis only reads).
        diagnosed = ok(self.run("cluster_diagnose", dict(self.member, engine="karmada", clusters=[PREFIX])))
        assert (diagnosed["hub_server"], diagnosed["verdicts"]) == (lab.clusters[MEMBER]["server"], {PREFIX: "not_registered"})

    @pytest.mark.parametrize("hub_given", ["by kubeconfig", "by the variables"])
    def test_cluster_join(self, lab, hub_given):
        hub = auth(lab, lab.hub) if hub_given == "by kubeconfig" else {}
        name = PREFIX + "-join"
        planned = ok(self.run("cluster_join", dict(hub, cluster_name=name, member=self.member), check_mode=True))
        assert planned["changed"] is True
        assert planned["cluster_id"] == planned["cluster"]["spec"]["id"] == lab.clusters[MEMBER]["kube_system_uid"]
        assert planned["cluster"]["spec"]["apiEndpoint"] == lab.clusters[MEMBER]["server"]
        assert resources.get(self.hub_api, CLUSTER, name) is None

    def test_cluster_join_member_never_reads_the_variables(self):
        result = self.run("cluster_join", dict(cluster_name="edge7", member={}), check_mode=True)
        failed_naming(result, "cluster 'edge7': no kubeconfig or host given, and no default kubeconfig at "
                      + os.path.join(self.env["HOME"], ".kube", "config"))

    def test_cluster_register(self, lab, hub_join_token):
        name = PREFIX + "-reg"
        planned = ok(self.run("cluster_register", dict(self.member, engine="karmada", cluster_name=name, **hub_join_token),
                              check_mode=True))
        assert planned["changed"] is True and planned["api_endpoint"] == lab.clusters[MEMBER]["server"]
        assert planned["hub_server"] == lab.clusters[lab.hub]["server"]
        assert "member Namespace/karmada-system: created" in planned["changes"]
        assert resources.get(self.member_api, resources.NAMESPACE, "karmada-system") is None
        assert resources.get(self.hub_api, resources.CSR, planned["csr_name"]) is None

    def test_cluster_register_member_never_reads_the_variables(self, hub_join_token):
        result = self.run("cluster_register", dict(engine="karmada", cluster_name="edge7", **hub_join_token), check_mode=True)
        failed_naming(result, "cluster 'edge7': no kubeconfig or host given, and no default kubeconfig at "
                      + os.path.join(self.env["HOME"], ".kube", "config"))

    def test_csr_accept(self):
        failed_naming(self.run("csr_accept", dict(self.member, engine="karmada", clusters=[PREFIX])), self.label + ": not accepted")

    def test_hub_registration(self):
        registration = [(kind, desired["metadata"]) for kind, desired in hub_setup.registration_objects("karmada")[0]
                        if kind not in (resources.NAMESPACE, resources.CONFIG_MAP)]

        def present_on(cluster):
            return [resources.get(cluster, kind, meta["name"], meta.get("namespace")) is not None for kind, meta in registration]

        on_hub = present_on(self.hub_api)
        assert not any(present_on(self.member_api))
        try:
            done = ok(self.run("hub_registration", dict(self.member, engine="karmada")))
            assert done["changed"] is True and done["cluster_info"]["server"] == self.member_api.server
            assert all(present_on(self.member_api)) and present_on(self.hub_api) == on_hub
        finally:
            removed = ok(self.run("hub_registration", dict(self.member, engine="karmada", state="absent")))
        assert removed["changed"] is True
        assert not any(present_on(self.member_api)) and present_on(self.hub_api) == on_hub

    def test_k8s_objects(self):
        try:
            ok(self.run("k8s_objects", dict(self.member, objects=[CONFIG_MAP])))
            assert resources.get(self.member_api, resources.CONFIG_MAP, PREFIX, "default")["data"] == CONFIG_MAP["data"]
            assert resources.get(self.hub_api, resources.CONFIG_MAP, PREFIX, "default") is None
            ok(self.run("k8s_objects", dict(self.member, objects=[CONFIG_MAP], state="absent")))
            assert resources.get(self.member_api, resources.CONFIG_MAP, PREFIX, "default") is None
        finally:
            self.delete_everywhere(resources.CONFIG_MAP, PREFIX, "default")

    @pytest.mark.parametrize("engine", ["karmada", "ocm"])
    def test_manifest_work(self, engine):
        result = self.run("manifest_work", dict(self.member, engine=engine, name=PREFIX, clusters=[PREFIX], manifests=[CONFIG_MAP]),
                          check_mode=True)
        failed_naming(result, self.label)

    @needs_module("placement")
    def test_placement(self):
        failed_naming(self.run("placement", dict(self.member, name=PREFIX), check_mode=True), self.label, "404")

    def test_cluster_set(self):
        failed_naming(self.run("cluster_set", dict(self.member, engine="ocm", name=PREFIX), check_mode=True), self.label, "404")

    @needs_module("addon")
    def test_addon(self):
        failed_naming(self.run("addon", dict(self.member, name=PREFIX), check_mode=True), self.label, "404")

    @needs_module("addon_deployment_config")
    def test_addon_deployment_config(self):
        # member1 has no AddOnDeploymentConfig CRD (the hub has): the write is refused there, naming member1.
        failed_naming(self.run("addon_deployment_config", dict(self.member, name=PREFIX, namespace="default")), self.label, "404")


@pytest.fixture(scope="class")
def hub_join_token(lab, awx_env):
    """A Karmada join token on the hub, made with only the variables (hub_registration and bootstrap_token
    as hub tasks); both taken back afterwards."""
    prepared = ok(run_module("hub_registration", {"engine": "karmada"}, env=awx_env))
    created = ok(run_module("bootstrap_token", {"engine": "karmada", "description": PREFIX, "ttl": "1h"}, env=awx_env))
    assert created["hub_apiserver"] == lab.clusters[lab.hub]["server"]
    yield {"hub_apiserver": created["hub_apiserver"], "token": created["token"], "ca_cert_hashes": created["ca_cert_hashes"]}
    ok(run_module("bootstrap_token", {"engine": "karmada", "token_id": created["token_id"], "state": "absent"}, env=awx_env))
    if prepared["changed"]:
        ok(run_module("hub_registration", {"engine": "karmada", "state": "absent"}, env=awx_env))


# --- 1. only the variables, no kubeconfig: the hub -------------------------------------------------------


class TestOnlyTheVariables:
    def test_cluster_info_reaches_the_hub(self, lab, awx_env):
        hub_api = admin(lab, lab.hub)
        name = PREFIX + "-probe"
        resources.ensure(hub_api, CLUSTER, {"metadata": {"name": name}, "spec": {"syncMode": "Pull", "id": "probe"}})
        try:
            found = ok(run_module("cluster_info", {"engine": "karmada", "name": name}, env=awx_env))["clusters"]
            assert [(c["name"], c["id"]) for c in found] == [(name, "probe")]
        finally:
            resources.delete(hub_api, CLUSTER, name, wait=resources.Wait())

    def test_bootstrap_token_info_reaches_the_hub(self, lab, awx_env):
        hub_api = admin(lab, lab.hub)
        created = ok(run_module("bootstrap_token", {"engine": "karmada", "description": PREFIX, "ttl": "1h"}, env=awx_env))
        try:
            assert resources.get(hub_api, resources.SECRET, token_secret(created["token_id"]), "kube-system") is not None
            tokens = ok(run_module("bootstrap_token_info", {"token_id": created["token_id"]}, env=awx_env))["tokens"]
            assert [(t["token_id"], t["description"]) for t in tokens] == [(created["token_id"], PREFIX)]
        finally:
            resources.delete(hub_api, resources.SECRET, token_secret(created["token_id"]), "kube-system")

    def test_hub_play_of_site_yml(self, lab, awx_env, tmp_path):
        """site.yml for a hub host with no connection variables at all, and no members: the hub play and the summary."""
        hub_api = admin(lab, lab.hub)
        with open(os.path.join(ROOT, "roles", "hub_init", "defaults", "main.yml")) as handle:
            join_token_description = yaml.safe_load(handle)["hub_init_token_description"]
        inventory = tmp_path / "hub-only.yml"
        inventory.write_text(yaml.safe_dump({"all": {"vars": {"fleet_engine": "karmada"}, "children": {"hub": {"hosts": {
            "hub-cluster": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                            "hub_apiserver": lab.clusters[lab.hub]["server"]}}}}}}))
        before = snapshot(lab)
        done = run_playbook([{"import_playbook": os.path.join(ROOT, "playbooks", "site.yml")}], inventory=str(inventory), env=awx_env)
        try:
            assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
            assert "TASK [Print the fleet summary]" in done.stdout and "the summary lists only the members" not in done.stdout, done.stdout[-4000:]
            descriptions = [(secret.get("data") or {}).get("description") for secret in
                            resources.list_objects(hub_api, resources.SECRET, "kube-system", field_selector="type=" + bootstrap.SECRET_TYPE)]
            assert base64.b64encode(join_token_description.encode()).decode() in descriptions
            assert resources.get(hub_api, resources.NAMESPACE, "karmada-cluster") is not None
        finally:
            # hub_init's uninstall, as another hub task with only the variables, restores the hub.
            undone = run_playbook([{"hosts": "hub", "gather_facts": False, "connection": "local", "roles": [
                {"role": "multicluster.fleet.hub_init", "hub_init_state": "absent"}]}], inventory=str(inventory), env=awx_env)
        assert undone.returncode == 0, undone.stdout[-4000:]
        namespace = resources.get(hub_api, resources.NAMESPACE, "karmada-cluster")
        if "Namespace/karmada-cluster" in before[lab.hub]:
            # made before by another test's cluster_join, as karmadactl join does: hub_init did not create it, and its
            # uninstall keeps it
            assert namespace is not None and not namespace["metadata"].get("deletionTimestamp"), \
                "the uninstall deleted karmada-cluster, which it had not created"
        else:
            assert namespace is None or namespace["metadata"].get("deletionTimestamp"), "the uninstall kept karmada-cluster"
            # Kubernetes' namespace controller empties and removes it; if it does not, its conditions say why.
            try:
                resources.wait_until_gone(hub_api, resources.NAMESPACE, "karmada-cluster", timeout=300)
            except WaitTimeout:
                namespace = resources.get(hub_api, resources.NAMESPACE, "karmada-cluster") or {}
                pytest.fail("namespace karmada-cluster is still being deleted after 300 s: %s"
                            % json.dumps((namespace.get("status") or {}).get("conditions")))
        assert changes(before, snapshot(lab)) == {}


# --- 2. unreachable and forbidden servers, as the hub and as a named member ---------------------------------

# Every module, with its arguments besides the connections; all run in check mode. cluster_join and
# cluster_register also reach a member (edge7, member1's kubeconfig unless the member is the server under
# test); cluster_register's hub is its hub option, and its member the top-level connection.
FAILURE_ARGS = {
    "addon": dict(name=PREFIX),
    "addon_deployment_config": dict(name=PREFIX, namespace="default"),
    "bootstrap_token": dict(engine="karmada", description=PREFIX),
    "bootstrap_token_info": {},
    "cluster_info": dict(engine="karmada"),
    "cluster_join": dict(cluster_name="edge7"),
    "cluster_label": dict(engine="karmada", clusters=["edge7"], labels={"env": "prod"}),
    "cluster_register": dict(engine="karmada", cluster_name="edge7", state="absent"),
    "csr_accept": dict(engine="karmada", clusters=["edge7"]),
    "hub_registration": dict(engine="karmada"),
    "k8s_objects": dict(objects=[CONFIG_MAP]),
    "manifest_work": dict(engine="ocm", name=PREFIX, clusters=["edge7"], manifests=[CONFIG_MAP]),
    "placement": dict(name=PREFIX),
    "cluster_set": dict(engine="ocm", name=PREFIX),
    "cluster_taint": dict(engine="karmada", clusters=["edge7"], cordon=True),
    "cluster_diagnose": dict(engine="karmada", clusters=["edge7"]),
    "cluster_prune": dict(engine="karmada", listed=["edge7"]),
}
# How messages call each module's top-level cluster when only its URL is known (client.describe).
ROLES = {"k8s_objects": "cluster"}
HUB_CASES = ("hub unreachable by host", "hub unreachable by context", "hub forbidden")
MEMBER_CASES = ("member unreachable", "member forbidden")
MEMBER_MODULES = ("cluster_join", "cluster_register")


def failure_rows():
    """The table's rows: (module, case), the reason in the id of a row skipped because the module does not exist yet."""
    rows = []
    for module in sorted(FAILURE_ARGS):
        for case in HUB_CASES + (MEMBER_CASES if module in MEMBER_MODULES else ()):
            missing = not module_exists(module)
            rows.append(pytest.param(module, case, marks=[needs_module(module)] if missing else [],
                                     id="%s: %s%s" % (module, case, " (module does not exist yet)" if missing else "")))
    return rows


def test_every_module_is_covered():
    """Every module of plugins/modules has a row in the failure table and a test with the hub credential set."""
    modules = {name[:-3] for name in os.listdir(os.path.join(ROOT, "plugins", "modules")) if name.endswith(".py") and name != "__init__.py"}
    assert modules <= set(FAILURE_ARGS), "add to FAILURE_ARGS: %s" % sorted(modules - set(FAILURE_ARGS))
    tested = {name[len("test_"):] for name in dir(TestMemberKubeconfigWithHubCredential) if name.startswith("test_")}
    assert modules <= tested, "add to TestMemberKubeconfigWithHubCredential: %s" % ", ".join("test_" + m for m in sorted(modules - tested))


@pytest.fixture(scope="module")
def bad_servers(lab, tmp_path_factory):
    """``{case: (connection, what the message must contain)}``: a closed port given by host and by a kubeconfig
    context (a copy of the hub's, context renamed hub-offline), and the hub and member1 as a user RBAC allows nothing."""
    port = closed_port()
    offline = "https://127.0.0.1:%d" % port
    with open(lab.clusters[lab.hub]["kubeconfig"]) as handle:
        config = yaml.safe_load(handle)
    config["clusters"][0]["cluster"]["server"] = offline
    config["contexts"][0]["name"] = config["current-context"] = "hub-offline"
    kubeconfig = tmp_path_factory.mktemp("offline") / "hub-offline.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    hub, member = lab.clusters[lab.hub], lab.clusters[MEMBER]
    return {
        "hub unreachable by host": ({"host": offline, "ca_cert": hub["ca_cert"]}, ["{who} (%s) is unreachable" % offline]),
        "hub unreachable by context": ({"kubeconfig": str(kubeconfig), "context": "hub-offline"},
                                       ["cluster 'hub-offline' (%s) is unreachable" % offline]),
        "hub forbidden": (dict(auth(lab, lab.hub), impersonate_user="nobody"), ["cluster 'hub' (%s)" % hub["server"], "403"]),
        "member unreachable": ({"host": offline, "ca_cert": member["ca_cert"]}, ["cluster 'edge7' (%s) is unreachable" % offline]),
        "member forbidden": (dict(auth(lab, MEMBER), impersonate_user="nobody"), ["cluster 'edge7' (%s)" % member["server"], "403"]),
    }


def test_a_user_whose_exec_plugin_returns_a_client_certificate(lab, tmp_path):
    """The hub's user as an exec plugin that returns the lab's client certificate and key (as Teleport's tsh does):
    cluster_info reads the hub over TLS with them, and writes nothing to the temporary directory."""
    with open(lab.clusters[lab.hub]["kubeconfig"]) as handle:
        config = yaml.safe_load(handle)
    user = config["users"][0]["user"]
    status = {"clientCertificateData": base64.b64decode(user["client-certificate-data"]).decode(),
              "clientKeyData": base64.b64decode(user["client-key-data"]).decode()}
    plugin = tmp_path / "credential.py"
    plugin.write_text("import json\nprint(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', "
                      "'kind': 'ExecCredential', 'status': %r}))\n" % status)
    config["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                                           "args": [str(plugin)], "interactiveMode": "Never"}}
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = ok(run_module("cluster_info", {"kubeconfig": config, "context": lab.hub, "engine": "karmada"},
                           env={"TMPDIR": str(scratch)}))
    assert isinstance(result["clusters"], list)
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("module, case", failure_rows())
def test_failure_names_the_cluster_and_its_url(lab, bad_servers, module, case):
    connection, fragments = bad_servers[case]
    who = client.describe(None, ROLES.get(module, "hub"))  # the unnamed cluster given by host
    args = dict(FAILURE_ARGS[module])
    hub, member = (connection, auth(lab, MEMBER)) if case in HUB_CASES else (auth(lab, lab.hub), connection)
    if module == "cluster_register":
        args.update(member)
        if case in HUB_CASES:
            args["hub"] = hub
    elif module == "cluster_join":
        args.update(hub, member=member)
    else:
        args.update(hub)
    failed_naming(run_module(module, args, check_mode=True), *[fragment.format(who=who) for fragment in fragments])
