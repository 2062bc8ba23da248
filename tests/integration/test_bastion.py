"""A task delegated to a bastion host: the need for the module-process path (docs/architecture.md 2.6, "Where a module
runs").

The hub's API server is private here: it answers at https://127.0.0.1:<port> inside the bastion's network namespace only
(bastion.py). A play on the hub host delegates its tasks to the bastion (``delegate_to: bastion``, connection ssh, the
bastion's Python): the modules run there as module processes, reach the hub, read it (the kubeconfig a path) and write
labels (changed, then not; the kubeconfig a dict read on the controller). The same read run on the controller, where the
address is private, fails to connect.
"""

import json
import sys

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from bastion import Bastion, missing
from runner import run_playbook

NAME = "behind-bastion"
LABELS = {"reached": "through-bastion"}


@pytest.fixture(scope="module")
def bastion(tmp_path_factory):
    lacking = missing()
    if lacking:
        pytest.fail(lacking, pytrace=False)  # never skipped: tests/setup.sh installs what it needs
    with Bastion(tmp_path_factory.mktemp("bastion")) as started:
        yield started


@pytest.fixture(scope="module")
def hub(lab, bastion, tmp_path_factory):
    """The hub's kubeconfig naming the private address, and a Karmada Cluster on the hub to read and label."""
    info = lab.clusters["hub"]
    private = str(tmp_path_factory.mktemp("private") / "hub.kubeconfig")
    with open(info["kubeconfig"]) as handle:
        text = handle.read()
    with open(private, "w") as handle:
        handle.write(text.replace(info["server"], bastion.private_url(info)))
    connection = client.get_cluster({"kubeconfig": info["kubeconfig"], "context": "hub"}, "hub")
    resources.ensure(connection, CLUSTER, {"metadata": {"name": NAME}, "spec": {"syncMode": "Push"}})
    yield private, connection
    resources.delete(connection, CLUSTER, NAME, wait=resources.Wait())


def inventory(bastion, path):
    path.write_text(yaml.safe_dump({"all": {"hosts": {
        "hub": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "bastion": {"ansible_connection": "ssh", "ansible_host": bastion.address, "ansible_user": "root",
                    "ansible_ssh_private_key_file": bastion.key,
                    # no ControlPersist master left behind; the bastion's own host key, checked
                    "ansible_ssh_args": "-o ControlMaster=no -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes"
                                        % bastion.known_hosts,
                    # the bastion's Python: another host's, which happens to share this machine's filesystem
                    "ansible_python_interpreter": sys.executable}}}}))
    return str(path)


def test_a_task_delegated_to_a_bastion_reaches_a_private_api_server(bastion, hub, tmp_path):
    private, connection = hub
    read = {"engine": "karmada", "kubeconfig": private, "name": NAME}
    # the kubeconfig as a dict, read on the controller: the bastion needs no file of it
    label = {"engine": "karmada", "kubeconfig": "{{ lookup('ansible.builtin.file', '%s') | ansible.builtin.from_yaml }}"
             % private, "clusters": [NAME], "labels": LABELS}
    output = str(tmp_path / "results.json")
    done = run_playbook([{"hosts": "hub", "gather_facts": False, "tasks": [
        {"name": "Read the hub", "multicluster.fleet.cluster_info": read, "delegate_to": "bastion", "register": "read"},
        {"name": "Label", "multicluster.fleet.cluster_label": label, "delegate_to": "bastion", "register": "labelled"},
        {"name": "Label again", "multicluster.fleet.cluster_label": label, "delegate_to": "bastion", "register": "again"},
        {"name": "Read on the controller", "multicluster.fleet.cluster_info": read, "register": "local",
         "ignore_errors": True},
        {"name": "Write the results", "ansible.builtin.copy": {
            "content": "{{ {'read': read, 'labelled': labelled, 'again': again, 'local': local} | to_json }}",
            "dest": output}},
    ]}], inventory=inventory(bastion, tmp_path / "hosts.yml"), env={"ANSIBLE_VERBOSITY": "3"})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    with open(output) as handle:
        results = json.load(handle)

    delegated = "running multicluster.fleet.%s as a module process: the connection is ssh, not local"
    assert done.stdout.count(delegated % "cluster_info") == 1 and done.stdout.count(delegated % "cluster_label") == 2
    assert "ESTABLISH SSH CONNECTION FOR USER: root" in done.stdout
    assert done.stdout.count("running multicluster.fleet.cluster_info on the controller, in a child of the worker") == 1

    assert [cluster["name"] for cluster in results["read"]["clusters"]] == [NAME], results["read"]
    assert results["labelled"]["changed"] is True, results["labelled"]
    assert results["again"]["changed"] is False, results["again"]
    assert resources.get(connection, CLUSTER, NAME)["metadata"]["labels"] == LABELS

    local = results["local"]
    assert local["failed"] and "is unreachable: failed to connect" in local["msg"], local
    assert "Connection refused" in local["msg"], local
