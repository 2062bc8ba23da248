"""The collection as AWX runs it, on the lab, for both engines.

Each job is an ansible-runner job in an AWX-shaped private data directory (tests/awx_job.py replicates what AWX
writes there): the credential of extensions/awx/credential_type.yml holding one kubeconfig for the hub and both
members (rendered as AWX renders injectors: the file, K8S_AUTH_KUBECONFIG, the extra variable fleet_kubeconfig),
env/envvars, env/extravars, env/cmdline, inventory/ with a *.fleet.yml source of the inventory plugin
multicluster.fleet.fleet (no connection settings of its own: the hub from the credential's environment, the
members declared by name and reached through fleet_kubeconfig with their names as contexts), and project/ with a
copy of playbooks/. The collection comes from ANSIBLE_COLLECTIONS_PATH in env/envvars, where an AWX project
installs it from collections/requirements.yml. site.yml runs, runs again (changed=0 in the runner's stats), then
detach.yml, each through ansible_runner.run, asserted on status, events, stats and the fleet_summary artifact
(set_stats). Between them, ansible-inventory --graph lists the registered members the way an AWX inventory update
runs the plugin (credential environment, no extra variables), and a second listing with the cache on makes no
request to the hub.
"""

import json
import os
import re
import socket
import subprocess
import sys
import threading

import ansible_runner
import pytest
import yaml

from awx_job import inject_credential, new_private_data_dir, write_private_data_dir
from runner import COLLECTIONS, ROOT
from labstate import changes, snapshot

MEMBERS = ("member1", "member2")
MODES = {"karmada": {"member1": "push", "member2": "pull"}, "ocm": {"member1": "pull", "member2": "pull"}}
HUB_KINDS = {"karmada": "/apis/cluster.karmada.io/v1alpha1/clusters",
             "ocm": "/apis/cluster.open-cluster-management.io/v1/managedclusters"}


@pytest.fixture(scope="module")
def credential_type():
    with open(os.path.join(ROOT, "extensions", "awx", "credential_type.yml")) as handle:
        return yaml.safe_load(handle)


def merged_kubeconfig(lab, server=None):
    """One kubeconfig with a context per lab cluster, named after it; the hub's is the current context.
    ``server`` replaces the hub's API server URL."""
    merged = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": [],
              "current-context": lab.hub, "preferences": {}}
    for name, info in lab.clusters.items():
        with open(info["kubeconfig"]) as handle:
            config = yaml.safe_load(handle)
        for key in ("clusters", "users", "contexts"):
            merged[key].extend(config[key])
        if server and name == lab.hub:
            merged["clusters"][-1]["cluster"]["server"] = server
    return yaml.safe_dump(merged)


@pytest.fixture(scope="module")
def fleet_kubeconfig(lab):
    return merged_kubeconfig(lab)


@pytest.fixture(scope="module")
def secrets(lab):
    """Text of every lab cluster's admin private key: none may appear in a job's events."""
    found = []
    for info in lab.clusters.values():
        with open(info["kubeconfig"]) as handle:
            config = yaml.safe_load(handle)
        found += [user["user"]["client-key-data"] for user in config["users"]]
    return found


@pytest.fixture(scope="module")
def starting_state(lab, simulations):
    return snapshot(lab)


@pytest.fixture
def clean_environment(monkeypatch, tmp_path):
    """No K8S_AUTH_* or KUBECONFIG of the test's own, and a HOME without ~/.kube/config: every cluster a job
    reaches comes from its credential."""
    for name in list(os.environ):
        if name.startswith("K8S_AUTH_") or name == "KUBECONFIG":
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))


def fleet_source(lab, engine, declared=True, **options):
    """A *.fleet.yml inventory source as a project would hold it: no connection settings."""
    # hub_vars.context: the playbooks reach the hub through fleet_kubeconfig with that context, also from member
    # plays (hub-side work of pull members); the plugin itself reaches it through K8S_AUTH_KUBECONFIG
    source = {"plugin": "multicluster.fleet.fleet", "engine": engine, "hub_host": "hub-cluster",
              "hub_apiserver": lab.clusters[lab.hub]["server"], "hub_vars": {"context": lab.hub}}
    if declared:
        source["members"] = [{"name": name, "vars": {"registration_mode": MODES[engine][name]}} for name in MEMBERS]
    source.update(options)
    return yaml.safe_dump(source)


def run_job(lab, tmp_path, credential_type, kubeconfig, engine, playbook, job_id):
    """Run ``playbook`` as an AWX job of a job template with the fleet credential; return the runner."""
    private_data_dir = new_private_data_dir(str(tmp_path))
    env = {"JOB_ID": str(job_id), "INVENTORY_ID": "1", "AWX_PRIVATE_DATA_DIR": private_data_dir,
           "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS, "ANSIBLE_RETRY_FILES_ENABLED": "False",
           "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_NOCOLOR": "True", "HOME": str(tmp_path),
           # what the execution environment has: ansible-playbook on PATH, the Python with the collection's requirements
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    safe_env, args = {}, []
    inject_credential(credential_type, {"kubeconfig": kubeconfig}, env, safe_env, args, private_data_dir)
    template_vars = {"fleet_wait_timeout": 240}
    extra_vars = dict(template_vars, awx_job_id=job_id, tower_job_id=job_id, awx_job_template_name="fleet " + playbook,
                      awx_inventory_name="fleet", awx_execution_node="localhost")
    write_private_data_dir(private_data_dir, os.path.join(ROOT, "playbooks"), {"lab.fleet.yml": fleet_source(lab, engine)},
                           env, args, extra_vars, template_vars)
    return ansible_runner.run(private_data_dir=private_data_dir, playbook=playbook, ident=str(job_id), quiet=True)


def events(runner, kind):
    return [event for event in runner.events if event.get("event") == kind]


def summary_artifact(runner):
    """The fleet_summary set_stats published, as the runner hands it to AWX (job artifacts)."""
    [stats] = events(runner, "playbook_on_stats")
    return dict((row["name"], row) for row in stats["event_data"]["artifact_data"]["fleet_summary"])


def assert_successful(runner, secrets):
    failed = [(e["event_data"].get("host"), e["event_data"].get("task"), e["event_data"].get("res", {}).get("msg"))
              for e in events(runner, "runner_on_failed")]
    assert (runner.status, runner.rc, failed) == ("successful", 0, []), runner.stdout.read()[-4000:]
    assert set(runner.stats["ok"]) == {"hub-cluster"} | set(MEMBERS), runner.stats
    assert not any(runner.stats[key] for key in ("failures", "dark", "rescued")), runner.stats
    text = json.dumps(list(runner.events))
    assert not [secret for secret in secrets if secret in text]


def ansible_inventory(tmp_path, source, env, *args):
    path = tmp_path / "lab.fleet.yml"
    path.write_text(source)
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1",
                       ANSIBLE_INVENTORY_UNPARSED_FAILED="1", **env)
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-inventory"), "-i", str(path)] + list(args)
    return subprocess.run(command, capture_output=True, text=True, env=environment, check=False)


def graph(text):
    """``ansible-inventory --graph`` output as {group: [hosts]}."""
    groups, current = {}, None
    for line in text.splitlines():
        name = re.sub(r"^[\s|]*-*", "", line).strip()
        if name.startswith("@"):
            current = groups.setdefault(name[1:].rstrip(":"), [])
        elif current is not None and name:
            current.append(name)
    return groups


def inventory_update_env(credential_type, kubeconfig, private_data_dir):
    """The environment of an AWX inventory update with the fleet credential: its env injectors, no extra vars."""
    env, safe_env, args = {"INVENTORY_UPDATE_ID": "1"}, {}, []
    os.makedirs(os.path.join(private_data_dir, "env"), exist_ok=True)
    inject_credential(credential_type, {"kubeconfig": kubeconfig}, env, safe_env, args, private_data_dir)
    assert args == []
    return env


class Relay:
    """A TCP relay to the hub that counts the connections it passes on; stop() closes it for good."""

    def __init__(self, port):
        self.target = ("127.0.0.1", port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = "https://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _address = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.create_connection(self.target)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self):
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread; close() alone would leave it listening
        self.listener.close()


def check_engine(engine, lab, tmp_path, credential_type, fleet_kubeconfig, secrets, starting_state):
    hub = lab.api(lab.hub)

    # 1. site.yml registers the declared members
    first = run_job(lab, tmp_path, credential_type, fleet_kubeconfig, engine, "site.yml", 1)
    assert_successful(first, secrets)
    assert all(first.stats["changed"].get(host) for host in ("hub-cluster",) + MEMBERS), first.stats
    rows = summary_artifact(first)
    for name in MEMBERS:
        assert (rows[name]["result"], rows[name]["ready"], rows[name]["engine"], rows[name]["mode"].lower()) == (
            "registered", True, engine, MODES[engine][name]), rows
        assert hub.exists("%s/%s" % (HUB_KINDS[engine], name))
    assert [e["event_data"]["task"] for e in events(first, "runner_on_ok")
            if e["event_data"]["task"] == "Publish the fleet summary as job artifacts (AWX workflows and notifications)"]

    # 2. the second run changes nothing
    second = run_job(lab, tmp_path, credential_type, fleet_kubeconfig, engine, "site.yml", 2)
    assert_successful(second, secrets)
    assert not any(second.stats["changed"].values()), second.stats
    assert all(row["result"] == "registered" for name, row in summary_artifact(second).items() if name in MEMBERS)

    # 3. the inventory plugin lists the registered members, as an AWX inventory update runs it
    update_dir = new_private_data_dir(str(tmp_path))
    env = inventory_update_env(credential_type, fleet_kubeconfig, update_dir)
    done = ansible_inventory(tmp_path, fleet_source(lab, engine, declared=False), env, "--graph")
    assert done.returncode == 0, done.stderr
    groups = graph(done.stdout)
    assert groups["hub"] == ["hub-cluster"] and groups["members"] == list(MEMBERS)
    assert groups["engine_" + engine] == ["hub-cluster"] + list(MEMBERS)
    assert groups["ready"] == list(MEMBERS) and groups["not_ready"] == []
    for mode in ("push", "pull"):
        assert groups["mode_" + mode] == [n for n in MEMBERS if MODES[engine][n] == mode]
    listing = ansible_inventory(tmp_path, fleet_source(lab, engine, declared=False), env, "--list")
    assert listing.returncode == 0 and not [s for s in secrets if s in listing.stdout]
    assert env["K8S_AUTH_KUBECONFIG"] not in listing.stdout  # the file is the update's, not the inventory's

    # 4. with the cache on, a second listing makes no request to the hub: the hub is reached through a relay
    # that counts connections, and is closed before the second listing
    relay = Relay(int(lab.clusters[lab.hub]["server"].rsplit(":", 1)[1]))
    try:
        env = inventory_update_env(credential_type, merged_kubeconfig(lab, server=relay.url), update_dir)
        cached = fleet_source(lab, engine, declared=False, cache=True, cache_plugin="ansible.builtin.jsonfile",
                              cache_connection=str(tmp_path / "cache"), cache_timeout=3600)
        fresh = ansible_inventory(tmp_path, cached, env, "--graph")
        assert fresh.returncode == 0 and relay.connections > 0, fresh.stderr
        asked = relay.connections
    finally:
        relay.stop()
    again = ansible_inventory(tmp_path, cached, env, "--graph")
    assert again.returncode == 0, again.stderr
    assert graph(again.stdout) == graph(fresh.stdout) == groups and relay.connections == asked
    flushed = ansible_inventory(tmp_path, cached, env, "--graph", "--flush-cache")
    message = " ".join(flushed.stderr.split())
    assert flushed.returncode != 0 and "cluster '%s' (%s) is unreachable" % (lab.hub, relay.url) in message, message
    assert relay.connections == asked

    # 5. detach.yml takes the fleet apart again
    detach = run_job(lab, tmp_path, credential_type, fleet_kubeconfig, engine, "detach.yml", 3)
    assert_successful(detach, secrets)
    rows = summary_artifact(detach)
    assert rows["member1"]["result"] == rows["member2"]["result"] == "detached", rows
    assert changes(starting_state, snapshot(lab)) == {}


@pytest.mark.usefixtures("clean_environment")
class TestJobTemplates:
    def test_karmada(self, lab, simulations, starting_state, tmp_path, credential_type, fleet_kubeconfig, secrets):
        check_engine("karmada", lab, tmp_path, credential_type, fleet_kubeconfig, secrets, starting_state)

    def test_ocm(self, lab, simulations, starting_state, tmp_path, credential_type, fleet_kubeconfig, secrets):
        check_engine("ocm", lab, tmp_path, credential_type, fleet_kubeconfig, secrets, starting_state)
