"""The collection's action plugin against the lab, through ansible-playbook: on the controller with its Python (a host
variable or ANSIBLE_PYTHON_INTERPRETER) a module's logic runs in a child of the task's worker; with the off switch
(MULTICLUSTER_FLEET_MODULE_PROCESS, the variable multicluster_fleet_module_process), ANSIBLE_KEEP_REMOTE_FILES, or
any other connection, interpreter, become or async, as a module process. Both give the same results, check mode,
diff, warnings, no_log masking, validation failures and failures included, and a task retried with ``until`` reports
the change of its first attempt either way; the task's ``environment`` reaches the module and no further; a task
timeout leaves no module running.
"""

import json
import os
import re
import sys

import pytest

from runner import run_playbook

NAME = "in-worker-probe"
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME, "namespace": "default"},
              "data": {"key": "value"}}
# A bootstrap token Secret named for another token id: bootstrap_token_info skips it with a warning.
BROKEN_TOKEN = {"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
                "metadata": {"name": "bootstrap-token-inwrkr", "namespace": "kube-system"},
                "stringData": {"token-id": "other1", "token-secret": "0123456789abcdef"}}


def plays(member, output):
    objects = {"kubeconfig": member["kubeconfig"], "namespace": "default", "objects": [CONFIG_MAP]}
    retried = dict(objects, objects=[dict(CONFIG_MAP, metadata=dict(CONFIG_MAP["metadata"], name=NAME + "-retried"))])
    token = {"kubeconfig": member["kubeconfig"], "objects": [BROKEN_TOKEN]}
    return [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Preview", "multicluster.fleet.k8s_objects": objects, "check_mode": True, "diff": True,
         "register": "preview"},
        {"name": "Create", "multicluster.fleet.k8s_objects": objects, "register": "created"},
        {"name": "Again", "multicluster.fleet.k8s_objects": objects, "register": "again"},
        # The process environment names the hub (as an AWX credential does); the first item's task environment
        # names a kubeconfig that does not exist, the second's nothing: the first fails on it, the second reads the hub.
        {"name": "Read the hub", "multicluster.fleet.cluster_info": {"engine": "karmada"},
         "environment": "{{ {'K8S_AUTH_KUBECONFIG': '/nonexistent/kubeconfig'} if item == 'elsewhere' else {} }}",
         "loop": ["elsewhere", "process"], "register": "reads", "ignore_errors": True},
        {"name": "Remove", "multicluster.fleet.k8s_objects": dict(objects, state="absent"), "register": "removed"},
        # the first attempt creates, the second finds nothing to change: the task reports the change
        {"name": "Retried", "multicluster.fleet.k8s_objects": retried, "register": "retried",
         "until": "retried.attempts | default(1) >= 2", "retries": 2, "delay": 0},
        {"name": "Remove the retried", "multicluster.fleet.k8s_objects": dict(retried, state="absent")},
        {"name": "Unknown option", "multicluster.fleet.cluster_info": {"engine": "karmada", "colour": "blue"},
         "register": "unknown", "ignore_errors": True},
        {"name": "Exclusive options", "multicluster.fleet.k8s_objects": dict(objects, src="/nonexistent.yml"),
         "register": "exclusive", "ignore_errors": True},
        {"name": "A secret", "multicluster.fleet.cluster_info": {
            "engine": "karmada", "host": member["server"], "api_key": SECRET, "validate_certs": False},
         "register": "secret", "ignore_errors": True},
        {"name": "Store a broken token", "multicluster.fleet.k8s_objects": token},
        {"name": "List the tokens", "multicluster.fleet.bootstrap_token_info": {"kubeconfig": member["kubeconfig"]},
         "register": "tokens"},
        {"name": "Remove the broken token", "multicluster.fleet.k8s_objects": dict(token, state="absent")},
        {"name": "Write the results", "ansible.builtin.copy": {
            "content": "{{ {'preview': preview, 'created': created, 'again': again, 'removed': removed,"
                       " 'reads': reads.results, 'tokens': tokens, 'retried': retried, 'unknown': unknown,"
                       " 'exclusive': exclusive, 'secret': secret} | to_json }}",
            "dest": output}},
    ]}]


SECRET = "in-worker-s3cret-api-key"


def run(lab, tmp_path, label, env=None):
    output = str(tmp_path / ("%s.json" % label))
    done = run_playbook(plays(lab.clusters["member1"], output),
                        env=dict(env or {}, K8S_AUTH_KUBECONFIG=lab.clusters["hub"]["kubeconfig"], ANSIBLE_VERBOSITY="3"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    with open(output) as handle:
        return json.load(handle), done.stdout + done.stderr  # warnings go to the error output


def essentials(result):
    """What a task's result says, without what differs from run to run (object identities, times)."""
    kept = dict((key, result.get(key)) for key in ("changed", "failed", "msg", "changes", "diff"))
    # ansible-core's own record that it parsed a module process's output: _ansible_parsed, ansible_parsed from 2.22 on
    kept["keys"] = sorted(key for key in result if not key.startswith("_") and key != "ansible_parsed")
    return kept


@pytest.fixture(scope="module")
def both(lab, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("in-worker")
    in_worker = run(lab, tmp_path, "in-worker")
    module_process = run(lab, tmp_path, "module-process", env={"MULTICLUSTER_FLEET_MODULE_PROCESS": "1"})
    return in_worker, module_process


def test_on_the_controller_modules_run_in_the_worker(both):
    (_results, output), (_other, other_output) = both
    ours = re.compile(r"^Using module file \S+/multicluster/fleet/plugins/modules/", re.MULTILINE)
    # 13 tasks, one of them a loop of 2, another retried once
    assert output.count("in a child of the worker (no module process)") == 15
    assert not ours.findall(output)
    assert "in a child of the worker" not in other_output
    assert len(ours.findall(other_output)) == 15
    assert other_output.count("as a module process: multicluster_fleet_module_process or"
                              " MULTICLUSTER_FLEET_MODULE_PROCESS is set") == 15


def test_results_are_those_of_module_processes(both):
    (results, _output), (other, _other_output) = both
    assert results["preview"]["changed"] and results["created"]["changed"] and results["removed"]["changed"]
    assert not results["again"]["changed"]
    assert results["preview"]["diff"]
    for task in ("preview", "created", "again", "removed", "tokens", "retried", "unknown", "exclusive", "secret"):
        assert essentials(results[task]) == essentials(other[task]), task
    for mine, theirs in zip(results["reads"], other["reads"]):
        assert essentials(mine) == essentials(theirs)


def test_failures_are_those_of_module_processes(both):
    (results, _output), (other, _other_output) = both
    assert results["unknown"]["failed"] and "Unsupported parameters" in results["unknown"]["msg"]
    assert results["exclusive"]["failed"] and "mutually exclusive" in results["exclusive"]["msg"]
    assert results["secret"]["failed"]
    for task in ("unknown", "exclusive", "secret"):
        assert results[task]["msg"] == other[task]["msg"]


def test_no_log_values_are_masked_as_by_module_processes(both):
    (results, output), (other, other_output) = both
    for text in (json.dumps(results), output, json.dumps(other), other_output):
        assert SECRET not in text
    assert results["secret"].get("invocation") == other["secret"].get("invocation")


def test_a_retried_task_reports_the_change_of_its_first_attempt(both):
    (results, _output), (other, _other_output) = both
    for result in (results["retried"], other["retried"]):
        assert result["attempts"] == 2 and result["changed"] is True, result


def test_the_variable_switches_the_controller_side_run_off(lab, tmp_path):
    read = {"name": "Read the hub", "multicluster.fleet.cluster_info": {
        "engine": "karmada", "kubeconfig": lab.clusters["hub"]["kubeconfig"]}}
    done = run_playbook([{"hosts": "localhost", "gather_facts": False,
                          "vars": {"multicluster_fleet_module_process": True}, "tasks": [read]}],
                        env={"ANSIBLE_VERBOSITY": "3"})
    assert done.returncode == 0, done.stdout[-3000:]
    assert "running multicluster.fleet.cluster_info as a module process: multicluster_fleet_module_process" in done.stdout
    assert "in a child of the worker" not in done.stdout


def test_warnings_come_with_the_result(both):
    """As from a module process: in the registered result, and displayed."""
    warning = "skipped Secret kube-system/bootstrap-token-inwrkr does not match its token-id other1"
    (results, output), (other, other_output) = both
    assert [text for text in results["tokens"]["warnings"] if warning in text], results["tokens"]
    assert results["tokens"]["warnings"] == other["tokens"]["warnings"]
    for text in (output, other_output):
        assert len(re.findall(r"^\[WARNING\]: .*%s" % re.escape(warning), text, re.MULTILINE)) == 1, text[-3000:]


def test_the_task_environment_reaches_the_module_and_no_further(both):
    (results, _output), _other = both
    elsewhere, process = results["reads"]
    assert elsewhere["failed"] and "/nonexistent/kubeconfig" in elsewhere["msg"]
    assert not process.get("failed"), process.get("msg")
    assert isinstance(process["clusters"], list)


def test_an_interpreter_set_in_the_environment_runs_modules_in_the_worker(lab, tmp_path):
    """A host without ansible_python_interpreter, the controller's Python named by ANSIBLE_PYTHON_INTERPRETER."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {"hub": {"ansible_connection": "local"}}}}))
    done = run_playbook([{"hosts": "hub", "gather_facts": False, "tasks": [
        {"name": "Read the hub", "multicluster.fleet.cluster_info": {
            "engine": "karmada", "kubeconfig": lab.clusters["hub"]["kubeconfig"]}}]}],
        inventory=str(inventory), env={"ANSIBLE_PYTHON_INTERPRETER": sys.executable, "ANSIBLE_VERBOSITY": "3"})
    assert done.returncode == 0, done.stdout[-3000:]
    assert "running multicluster.fleet.cluster_info on the controller, in a child of the worker" in done.stdout


def test_a_task_timeout_leaves_no_module_running(lab, tmp_path):
    mark = "in-worker-timeout-%d" % os.getpid()
    done = run_playbook([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Wait for a cluster that never registers", "timeout": 2,
         "multicluster.fleet.cluster_info": {"engine": "karmada", "kubeconfig": lab.clusters["hub"]["kubeconfig"],
                                             "name": "never-registers", "wait": True, "wait_timeout": 600,
                                             "wait_sleep": 1}}]}],
        env={"FLEET_TEST_MARK": mark})
    assert done.returncode == 2 and "Timed out after 2 second(s)" in done.stdout, done.stdout[-2000:]
    assert _processes_marked(mark) == []


def _processes_marked(mark):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/environ" % pid, "rb") as handle:
                if ("FLEET_TEST_MARK=%s" % mark).encode() in handle.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found
