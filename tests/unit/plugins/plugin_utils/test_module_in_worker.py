"""module_in_worker: where a module runs in a child of the worker, and how that child runs it.

``run_in_child`` is exercised with real forks: small ``main`` functions standing for each way a module can end, and
the collection's cluster_info module itself, whose AnsibleModule reads the arguments encoded as ansible-core encodes
them and whose result ansible-core's decoder reads back.
"""

import atexit
import json
import os
import signal
import sys
import threading
import types

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.json import Direction, get_module_decoder, get_module_encoder

from ansible_collections.multicluster.fleet.plugins.modules import cluster_info
from ansible_collections.multicluster.fleet.plugins.plugin_utils import module_in_worker
from ansible_collections.multicluster.fleet.plugins.plugin_utils.module_in_worker import (
    PROFILE, ModuleInWorkerAction, run_in_child)


def encoded(args):
    return json.dumps({"ANSIBLE_MODULE_ARGS": args}, cls=get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)).encode()


def decoded(stdout):
    return json.loads(stdout, cls=get_module_decoder(PROFILE, Direction.MODULE_TO_CONTROLLER))


def test_a_module_that_exits_hands_back_its_output_and_exit_code():
    def main():
        print('{"changed": true}')
        sys.exit(3)

    assert run_in_child(main, b"", PROFILE) == {"rc": 3, "stdout": '{"changed": true}\n', "stderr": ""}


def test_a_module_that_raises_fails_with_its_traceback():
    def main():
        raise ValueError("broken module")

    report = run_in_child(main, b"", PROFILE)
    assert report["rc"] == 1 and report["stdout"] == ""
    assert "Traceback" in report["stderr"] and "ValueError: broken module" in report["stderr"]


def test_a_module_that_returns_without_exiting_fails():
    report = run_in_child(lambda: None, b"", PROFILE)
    assert report["rc"] == 1
    assert "returned without exit_json or fail_json" in report["stderr"]


def test_a_child_that_dies_without_a_report_gives_its_exit_status():
    report = run_in_child(lambda: os._exit(7), b"", PROFILE)
    assert report == {"rc": 7, "stdout": "", "stderr": "the module's process ended without a result"}


def test_the_environment_is_set_for_the_module_alone():
    os.environ.pop("FLEET_TEST_IN_WORKER", None)

    def main():
        print(os.environ.get("FLEET_TEST_IN_WORKER"))
        sys.exit(0)

    assert run_in_child(main, b"", PROFILE, {"FLEET_TEST_IN_WORKER": "child"})["stdout"] == "child\n"
    assert "FLEET_TEST_IN_WORKER" not in os.environ


def test_exit_handlers_of_the_module_run_and_those_of_the_worker_do_not(tmp_path):
    worker_mark, module_mark = tmp_path / "worker", tmp_path / "module"

    def in_worker():
        worker_mark.write_text("ran")

    def main():
        atexit.register(module_mark.write_text, "ran")
        sys.exit(0)

    atexit.register(in_worker)
    try:
        assert run_in_child(main, b"", PROFILE)["rc"] == 0
    finally:
        atexit.unregister(in_worker)
    assert module_mark.read_text() == "ran"
    assert not worker_mark.exists()


def test_a_child_still_running_when_the_wait_is_interrupted_is_killed(tmp_path):
    """As when ansible-core's task timeout interrupts the worker: the child must not outlive it."""
    pid_file = tmp_path / "pid"
    held, _unused = os.pipe()

    def main():
        pid_file.write_text(str(os.getpid()))
        os.read(held, 1)  # blocks: nothing is ever written

    class Interrupted(Exception):
        pass

    def interrupt(signum, frame):
        raise Interrupted()

    def interrupt_once_started():
        while not pid_file.exists() or not pid_file.read_text():
            threading.Event().wait(0.01)
        os.kill(os.getpid(), signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, interrupt)
    watcher = threading.Thread(target=interrupt_once_started)
    watcher.start()
    try:
        with pytest.raises(Interrupted):
            run_in_child(main, b"", PROFILE)
    finally:
        watcher.join()
        signal.signal(signal.SIGUSR1, previous)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)  # killed and reaped


def test_a_real_module_reads_its_arguments_and_reports_as_from_a_module_process(tmp_path):
    """cluster_info with a kubeconfig that does not exist: AnsibleModule parses the arguments and fails cleanly."""
    missing = str(tmp_path / "missing.kubeconfig")
    report = run_in_child(cluster_info.main, encoded({"engine": "karmada", "kubeconfig": missing,
                                                      "_ansible_check_mode": False}), PROFILE)
    result = decoded(report["stdout"])
    assert report["rc"] == 1 and report["stderr"] == ""
    assert result["failed"] is True
    assert missing in result["msg"]
    assert result["invocation"]["module_args"]["engine"] == "karmada"


def test_warnings_and_deprecations_go_with_the_result():
    """As from a module process - not to the display of the controller process the child was forked from."""
    def main():
        module = AnsibleModule(argument_spec={})
        module.warn("a warning of the module")
        module.deprecate("a deprecation of the module", version="99.0.0", collection_name="multicluster.fleet")
        module.exit_json(changed=False)

    report = run_in_child(main, encoded({}), PROFILE)
    result = decoded(report["stdout"])
    assert report["rc"] == 0, report
    assert [warning.event.msg for warning in result["warnings"]] == ["a warning of the module"]
    assert [deprecation.event.msg for deprecation in result["deprecations"]] == ["a deprecation of the module"]


def test_a_real_module_rejects_an_unknown_option_as_it_would_in_its_own_process():
    report = run_in_child(cluster_info.main, encoded({"engine": "karmada", "colour": "blue"}), PROFILE)
    result = decoded(report["stdout"])
    assert report["rc"] == 1
    assert "Unsupported parameters" in result["msg"] and "colour" in result["msg"]


class Templar:
    """Resolves the one template the inventories use for the interpreter."""

    def template(self, value):
        return sys.executable if value == "{{ ansible_playbook_python }}" else value


def action(transport="local", become=False, async_val=0, delegate_to=None, environment=None):
    task = types.SimpleNamespace(async_val=async_val, delegate_to=delegate_to, action="multicluster.fleet.cluster_info",
                                 environment=environment or [])
    connection = types.SimpleNamespace(transport=transport, _shell=types.SimpleNamespace(env_prefix=lambda **kw: ""))
    return ModuleInWorkerAction(task, connection, types.SimpleNamespace(become=become), None, Templar())


IN_WORKER = {"ansible_python_interpreter": "{{ ansible_playbook_python }}"}


@pytest.mark.parametrize("made, task_vars, wrap_async, expected", [
    (action(), IN_WORKER, False, True),
    (action(), {"ansible_python_interpreter": sys.executable}, False, True),
    (action(), {"ansible_python_interpreter": "/usr/bin/python3-elsewhere"}, False, False),
    (action(), {}, False, False),  # interpreter discovery decides: a module process
    (action(transport="ssh"), IN_WORKER, False, False),
    (action(become=True), IN_WORKER, False, False),
    (action(async_val=30), IN_WORKER, False, False),
    (action(), IN_WORKER, True, False),
    (action(delegate_to="localhost"), {"ansible_delegated_vars": {"localhost": IN_WORKER}}, False, True),
    (action(delegate_to="bastion"), dict(IN_WORKER, ansible_delegated_vars={"bastion": {}}), False, False),
], ids=["playbook-python", "same-path", "other-python", "discovered", "ssh", "become", "async", "wrapped-async",
        "delegated-here", "delegated-elsewhere"])
def test_where_the_module_runs_in_the_worker(made, task_vars, wrap_async, expected):
    assert made._runs_in_worker(task_vars, wrap_async) is expected


@pytest.mark.parametrize("configured, expected", [(sys.executable, True), ("/usr/bin/python3-elsewhere", False)])
def test_an_interpreter_from_the_configuration_counts_as_a_host_variable(monkeypatch, configured, expected):
    """ANSIBLE_PYTHON_INTERPRETER (or interpreter_python in ansible.cfg) where the host sets none."""
    monkeypatch.setenv("ANSIBLE_PYTHON_INTERPRETER", configured)
    assert action()._runs_in_worker({}, False) is expected
    assert action()._runs_in_worker({"ansible_python_interpreter": "/usr/bin/python3-elsewhere"}, False) is False


def test_kept_remote_files_mean_a_module_process(monkeypatch):
    monkeypatch.setattr(module_in_worker.C, "DEFAULT_KEEP_REMOTE_FILES", True)
    assert action()._runs_in_worker(IN_WORKER, False) is False


def test_the_task_environment_reaches_the_module_as_strings_later_entries_winning():
    made = action(environment=[{"K8S_AUTH_CONTEXT": "hub", "FLEET_RETRIES": 3}, {"K8S_AUTH_CONTEXT": "other", "FLAG": True}])
    assert made._task_environment() == {"K8S_AUTH_CONTEXT": "other", "FLEET_RETRIES": "3", "FLAG": "True"}


def test_a_retried_task_reports_the_change_of_an_earlier_attempt(monkeypatch):
    """ansible-core runs the attempts of a task retried with until on one task object, each with a new action."""
    attempts = iter([{"changed": True, "failed": True, "last_seen": "Ready=False"}, {"changed": False, "failed": True},
                     {"changed": False}])
    monkeypatch.setattr(module_in_worker.NormalAction, "run", lambda self, tmp=None, task_vars=None: next(attempts))
    first = action()
    task = first._task
    assert first.run(task_vars={}) == {"changed": True, "failed": True, "last_seen": "Ready=False"}
    retry = ModuleInWorkerAction(task, first._connection, first._play_context, None, Templar())
    assert retry.run(task_vars={}) == {"changed": True, "failed": True}
    assert ModuleInWorkerAction(task, first._connection, first._play_context, None, Templar()).run(task_vars={}) == {
        "changed": True}
    # another task (or loop item: a copy of the task) starts unchanged
    monkeypatch.setattr(module_in_worker.NormalAction, "run", lambda self, tmp=None, task_vars=None: {"changed": False})
    assert action().run(task_vars={}) == {"changed": False}
