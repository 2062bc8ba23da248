"""No secret in what Ansible prints or returns, with -vvv and every task's arguments in its result (ansible-core's
``INJECT_INVOCATION``, 2.21), for every module and for site.yml and detach.yml.

The secrets are read from the lab once the runs made them: bootstrap token secrets, the ServiceAccount
tokens cluster_join stores on the hub, the private key of the agent certificate cluster_register stores
on the member, and the client keys of the lab's own kubeconfigs (every run authenticates with them, one
tasks pass a kubeconfig inline, two of them inside a list of connections). Only a value a module is documented to return may appear, and only in
that module's result: the join token of bootstrap_token (``token``, ``cli_command``).
"""

import base64
import os
import re

import yaml

from lab import wait_for
from runner import ROOT, run_playbook


VERBOSE = {"ANSIBLE_VERBOSITY": "3", "ANSIBLE_INJECT_INVOCATION": "1"}
OCM_NAMESPACE = "/api/v1/namespaces/open-cluster-management"  # hub_registration (ocm) makes it and keeps it
SECRET_VALUE = "s3cr3t-in-a-manifest-4f7c"
# The task whose result holds what bootstrap_token is documented to return.
TOKEN_TASK = "Create a join token (its result holds the token)"
DOCUMENTED = re.compile(r'^\s*"(token|cli_command)": ".*",?$')


def key_lines(pem):
    """The base64 lines of a PEM private key: any of them in the output would leak part of the key."""
    return [line for line in pem.splitlines() if line and not line.startswith("-----") and len(line) >= 40]


def kubeconfig_secrets(text):
    """Client keys and tokens of every user of a kubeconfig (YAML text)."""
    found = []
    for user in (yaml.safe_load(text) or {}).get("users") or []:
        user = user.get("user") or {}
        if user.get("client-key-data"):
            found.append(user["client-key-data"])
            found += key_lines(base64.b64decode(user["client-key-data"]).decode())
        if user.get("token"):
            found.append(user["token"])
    return found


def lab_secrets(lab):
    """Every secret the runs made or used, read from the lab (values of at least 16 characters)."""
    found = []
    for info in lab.clusters.values():
        with open(info["kubeconfig"]) as handle:
            found += kubeconfig_secrets(handle.read())
    hub = lab.api(lab.hub)
    for secret in hub.get("/api/v1/namespaces/kube-system/secrets")["items"]:
        if secret.get("type") == "bootstrap.kubernetes.io/token":
            data = dict((k, base64.b64decode(v).decode()) for k, v in secret["data"].items())
            found += [data["token-secret"], "%s.%s" % (data["token-id"], data["token-secret"]), secret["data"]["token-secret"]]
    for secret in hub.get("/api/v1/namespaces/karmada-cluster/secrets")["items"] if hub.exists(
            "/api/v1/namespaces/karmada-cluster") else []:
        if (secret.get("data") or {}).get("token"):  # the member ServiceAccount tokens cluster_join stored
            token = base64.b64decode(secret["data"]["token"]).decode()
            found += [secret["data"]["token"], token.rsplit(".", 1)[-1]]
    for name in lab.clusters:
        path = "/api/v1/namespaces/karmada-system/secrets/karmada-kubeconfig"
        if lab.api(name).exists(path):  # the agent certificate's key cluster_register generated
            stored = lab.api(name).get(path)
            found += kubeconfig_secrets(base64.b64decode(stored["data"]["karmada-kubeconfig"]).decode())
    found.append(SECRET_VALUE)
    return sorted(set(value for value in found if len(value) >= 16))


def tasks_of(stdout):
    """``[(task name, text)]``: the output cut at each ``TASK [...]`` header (the text before the first, named '')."""
    parts = re.split(r"^TASK \[(.*)\] \**$", stdout, flags=re.MULTILINE)
    return [("", parts[0])] + list(zip(parts[1::2], parts[2::2]))


def leaks(done, secrets):
    """``{secret (shortened): [where]}`` for every secret in the output of a run, outside the documented returns."""
    found = {}
    for name, text in tasks_of(done.stdout) + [("stderr", done.stderr)]:
        if name.endswith(TOKEN_TASK):
            text = "\n".join(line for line in text.splitlines() if not DOCUMENTED.match(line))
        for secret in secrets:
            if secret in text:
                found.setdefault(secret[:8] + "...", []).append(name)
    return found


def module_plays(lab, state):
    """Every module on the lab, as a fleet operator's play would run them: Karmada, member1 by push as ``member1``,
    member2 by pull as ``member2`` (the simulated approver and agent do their parts), and OCM's join token."""
    hub = {"kubeconfig": lab.clusters["hub"]["kubeconfig"], "context": "hub"}
    member1 = {"kubeconfig": lab.clusters["member1"]["kubeconfig"], "context": "member1"}
    member2 = {"kubeconfig": lab.clusters["member2"]["kubeconfig"], "context": "member2"}
    with open(lab.clusters["member1"]["kubeconfig"]) as handle:
        inline = yaml.safe_load(handle)  # a kubeconfig given as a dict: its client key is an option value
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "secrets-test", "namespace": "default"},
              "stringData": {"password": SECRET_VALUE}}
    execution_space = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "karmada-es-member1"}}
    work = dict(hub, engine="karmada", name="secrets-test", clusters=["member1"], manifests=[secret])
    if state == "present":
        tasks = [
            {"name": "Prepare the hub", "multicluster.fleet.hub_registration": dict(hub, engine="karmada")},
            {"name": "Prepare the hub for OCM's bootstrap ServiceAccount", "multicluster.fleet.hub_registration": dict(hub, engine="ocm")},
            {"name": TOKEN_TASK, "multicluster.fleet.bootstrap_token": dict(hub, engine="karmada", description="secrets test"),
             "register": "join"},
            {"name": "Issue an OCM ServiceAccount join token", "multicluster.fleet.bootstrap_token": dict(
                hub, engine="ocm", token_type="service_account", ttl="10m"), "no_log": True},
            {"name": "List the tokens", "multicluster.fleet.bootstrap_token_info": hub},
            {"name": "Join member1, given by an inline kubeconfig in per_cluster", "multicluster.fleet.cluster_join": dict(
                hub, per_cluster=[{"name": "member1", "member": {"kubeconfig": inline, "context": "member1"}}])},
            {"name": "Register member2", "multicluster.fleet.cluster_register": dict(
                member2, engine="karmada", cluster_name="member2", hub_apiserver="{{ join.hub_apiserver }}",
                token="{{ join.token }}", ca_cert_hashes="{{ join.ca_cert_hashes }}", hub=hub, karmada={"csr_wait_timeout": 60})},
            {"name": "Accept member2", "multicluster.fleet.csr_accept": dict(hub, engine="karmada", clusters=["member2"])},
            {"name": "Wait for the members", "multicluster.fleet.cluster_info": dict(
                hub, engine="karmada", wait=True, wait_sleep=1, wait_timeout=60)},
            {"name": "Read the members' agents, member1 given by an inline kubeconfig", "multicluster.fleet.cluster_info": dict(
                hub, engine="karmada", members=[dict(member2, name="member2"), {"name": "member1", "kubeconfig": inline,
                                                                                "context": "member1"}])},
            {"name": "A Secret and its namespace, with an inline kubeconfig", "multicluster.fleet.k8s_objects": dict(
                kubeconfig=inline, context="member1", objects=[secret])},
            {"name": "Karmada's execution space of member1", "multicluster.fleet.k8s_objects": dict(hub, objects=[execution_space])},
            {"name": "Deliver the Secret", "multicluster.fleet.manifest_work": work},
        ]
    else:
        tasks = [
            {"name": "Remove the work", "multicluster.fleet.manifest_work": dict(work, state="absent", manifests=None)},
            {"name": "Remove the execution space",
             "multicluster.fleet.k8s_objects": dict(hub, objects=[execution_space], state="absent")},
            {"name": "Remove the Secret", "multicluster.fleet.k8s_objects": dict(member1, objects=[secret], state="absent")},
            {"name": "Unregister member2", "multicluster.fleet.cluster_register": dict(
                member2, engine="karmada", cluster_name="member2", state="absent", hub=hub)},
            {"name": "Unjoin member1",
             "multicluster.fleet.cluster_join": dict(hub, cluster_name="member1", member=member1, state="absent")},
            {"name": "Find the join token", "multicluster.fleet.bootstrap_token_info": hub, "register": "listed"},
            {"name": "Delete the join token",
             "multicluster.fleet.bootstrap_token": dict(hub, engine="karmada", state="absent", token_id="{{ item.token_id }}"),
             "loop": "{{ listed.tokens | selectattr('description', 'equalto', 'secrets test') | list }}"},
            {"name": "Stop OCM registration", "multicluster.fleet.hub_registration": dict(hub, engine="ocm", state="absent")},
            {"name": "Stop Karmada registration",
             "multicluster.fleet.hub_registration": dict(hub, engine="karmada", state="absent")},
        ]
    return [{"hosts": "localhost", "gather_facts": False, "connection": "local", "tasks": tasks}]


class TestEveryModule:
    """Each module once, on the lab, with -vvv; then the same modules remove what they made."""

    secrets = []
    had_ocm_namespace = True

    def test_present(self, lab, simulations):
        TestEveryModule.had_ocm_namespace = lab.api(lab.hub).exists(OCM_NAMESPACE)
        done = run_playbook(module_plays(lab, "present"), env=VERBOSE)
        assert done.returncode == 0, done.stdout[-4000:]
        TestEveryModule.secrets = lab_secrets(lab)
        assert len(TestEveryModule.secrets) > 8  # admin keys, the join token, member tokens, the agent key, ...
        assert leaks(done, TestEveryModule.secrets) == {}
        # the documented exception is real: the join token is in its task's result
        token_task = dict(tasks_of(done.stdout))[TOKEN_TASK]
        assert '"token": "' in token_task and '"cli_command": "karmadactl register' in token_task

    def test_absent(self, lab, simulations):
        assert TestEveryModule.secrets, "test_present must run first"
        done = run_playbook(module_plays(lab, "absent"), env=VERBOSE)
        assert done.returncode == 0, done.stdout[-4000:]
        assert leaks(done, TestEveryModule.secrets) == {}
        hub = lab.api(lab.hub)
        assert not hub.exists("/apis/cluster.karmada.io/v1alpha1/clusters/member1")
        if not TestEveryModule.had_ocm_namespace:  # leave the hub as the later tests expect it
            hub.delete(OCM_NAMESPACE)
            wait_for(lambda: not hub.exists(OCM_NAMESPACE), 60, "namespace open-cluster-management to be gone")


def play(lab, name):
    return run_playbook([{"import_playbook": os.path.join(ROOT, "playbooks", name)}], inventory=lab.inventory, env=VERBOSE)


class TestPlaybooks:
    """site.yml and detach.yml on the lab's inventory (Karmada: member1 by push, member2 by pull), with -vvv."""

    secrets = []

    def test_site(self, lab, simulations):
        done = play(lab, "site.yml")
        assert done.returncode == 0, done.stdout[-4000:]
        TestPlaybooks.secrets = lab_secrets(lab)
        assert len(TestPlaybooks.secrets) > 8
        assert leaks(done, TestPlaybooks.secrets) == {}

    def test_detach(self, lab, simulations):
        assert TestPlaybooks.secrets, "test_site must run first"
        done = play(lab, "detach.yml")
        assert done.returncode == 0, done.stdout[-4000:]
        assert leaks(done, TestPlaybooks.secrets) == {}


def test_leaks_finds_a_secret_outside_the_documented_returns():
    """The check itself can fail: a secret anywhere but in the token task's documented fields is found."""
    class Done:
        stdout = ('TASK [%s] ***\nok: [localhost] => {\n    "cli_command": "karmadactl register --token abc.%s",\n'
                  '    "token": "abc.%s",\n    "invocation": {"token": "abc.%s"}\n}\n' % (TOKEN_TASK, "x" * 16, "x" * 16, "x" * 16))
        stderr = ""
    assert leaks(Done, ["x" * 16]) == {"xxxxxxxx...": [TOKEN_TASK]}
    Done.stdout = Done.stdout.replace('    "invocation": {"token": "abc.%s"}\n' % ("x" * 16), "")
    assert leaks(Done, ["x" * 16]) == {}
