"""module_in_worker: where a module's logic runs on the controller, and that it gives what a module process gives.

``run_in_child`` is exercised with real forks. :class:`ControllerModule` is compared with ``FleetModule`` (an
``AnsibleModule``) run in a Python process of its own, as ansible-core runs a module: same arguments, same internal
arguments, same result - check mode, diff, warnings, no_log masking, validation failures, error tracebacks.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import types

import pytest

from ansible.module_utils.common.parameters import remove_values
from ansible.release import __version__ as ansible_version

from ansible_collections.multicluster.fleet.plugins.plugin_utils import module_in_worker
from ansible_collections.multicluster.fleet.plugins.plugin_utils.module_in_worker import (
    ModuleInWorkerAction, run_in_child, run_module)

COLLECTIONS = os.path.join(os.path.dirname(__file__), *[os.pardir] * 4, "output", "collections")

# A module of the collection's shape: module_spec and run; warnings, check mode, diff, no_log, aliases, a failure.
PROBE = textwrap.dedent('''
    from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
    from ansible_collections.multicluster.fleet.plugins.module_utils.module import FleetModule


    def module_spec():
        return dict(argument_spec=dict(
            name=dict(type="str", required=True),
            token=dict(type="str", no_log=True),
            count=dict(type="int", default=1, aliases=["number"]),
            fail=dict(type="str", choices=["none", "fleet", "bug", "direct"], default="none"),
            settings=dict(type="dict", options=dict(secret=dict(type="str", no_log=True), size=dict(type="int"))),
            token_id=dict(type="str"),
        ), mutually_exclusive=[("token", "token_id")])


    def run(module):
        params = module.params
        module.warn("probe %s warns" % params["name"])
        module.warn("probe %s warns" % params["name"])
        if params["fail"] == "fleet":
            raise FleetError("cannot reach %s with %s" % (params["name"], params["token"]), reason="Probe", changed=True,
                             diff=dict(before="", after=params["name"]), warnings=["probe failed after a write"])
        if params["fail"] == "bug":
            raise KeyError("missing")
        if params["fail"] == "direct":
            module.fail_json(msg="failed directly", detail=params["count"])
        return dict(changed=not module.check_mode, diff=dict(before="", after=params["name"]),
                    warnings=["probe %s returns a warning" % params["name"]],
                    echo=dict(token=params["token"], settings=params["settings"]), count=params["count"])


    if __name__ == "__main__":
        FleetModule(**module_spec()).run(run)
''')

INTERNAL = {"_ansible_check_mode": False, "_ansible_diff": False, "_ansible_module_name": "multicluster.fleet.probe"}
# ansible-core 2.21 and later pass whether the result is to carry the module's arguments (earlier ones always do)
INJECTS = tuple(int(part) for part in ansible_version.split(".")[:2]) >= (2, 21)
if INJECTS:
    INTERNAL["_ansible_inject_invocation"] = True


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    directory = tmp_path_factory.mktemp("probe")
    path = directory / "fleet_probe.py"
    path.write_text(PROBE)
    sys.path.insert(0, str(directory))
    try:
        import fleet_probe
        yield path, fleet_probe
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop("fleet_probe", None)


def module_process(path, args):
    """The probe's result from a Python process of its own, as ansible-core's module process gives it."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.abspath(COLLECTIONS)] + sys.path))
    done = subprocess.run([sys.executable, str(path)], input=json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode(),
                          capture_output=True, env=env, check=False, timeout=120)
    assert done.stdout, done.stderr.decode()
    result = json.loads(done.stdout)
    # ansible-core 2.22 and later: the module process leaves no_log values in its result and lists them for ansible-core
    # to mask; the controller-side module masks them itself, as the module process did before
    secrets = result.pop("_ansible_new_secrets", None)
    if secrets:
        result = remove_values(result, set(secrets))
    # warnings as ansible-core 2.19 and later serialize them (an event with its message), else plain strings
    if result.get("warnings"):
        result["warnings"] = [w["event"]["msg"] if isinstance(w, dict) else w for w in result["warnings"]]
    return result


CASES = {
    "plain": dict(name="east"),
    "check-mode-diff": dict(name="east", _ansible_check_mode=True, _ansible_diff=True),
    "no-log": dict(name="east", token="s3cret-token", settings=dict(secret="hush-hush", size=2)),
    "alias": dict(name="east", number=3),
    "option-and-alias": dict(name="east", count=2, number=3),
    "fleet-error": dict(name="east", token="s3cret-token", fail="fleet"),
    "fleet-error-traceback": dict(name="east", fail="fleet", _ansible_tracebacks_for=["error"]),
    "bug": dict(name="east", fail="bug"),
    "direct-failure": dict(name="east", fail="direct"),
    "unsupported": dict(name="east", colour="blue"),
    "mutually-exclusive": dict(name="east", token="s3cret-token", token_id="abcdef"),
    "missing-required": dict(token="s3cret-token"),
    "wrong-type": dict(name="east", count="many"),
    "bad-choice": dict(name="east", fail="sometimes"),
}
if INJECTS:
    CASES["no-invocation"] = dict(name="east", _ansible_inject_invocation=False)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_controller_module_gives_what_the_module_process_gives(probe, case):
    path, module = probe
    args = dict(INTERNAL, **CASES[case])
    expected = module_process(path, args)
    internal = dict((key, value) for key, value in args.items() if key.startswith("_ansible_"))
    params = dict((key, value) for key, value in args.items() if not key.startswith("_ansible_"))
    result = run_in_child(lambda: run_module(module, params, internal))
    if "exception" in expected:  # the same traceback but for the frames of the two ways of calling the module
        assert expected["exception"].splitlines()[-1] == result["exception"].splitlines()[-1]
        expected["exception"] = result["exception"] = "traceback"
    assert result == expected


@pytest.mark.parametrize("diff", [False, True])
def test_the_module_process_keeps_the_result_contract(probe, diff):
    """FleetModule's run (AnsibleModule's exit_json and fail_json): returned warnings reported, diff in diff mode only."""
    path, _module = probe
    done = module_process(path, dict(INTERNAL, name="east", _ansible_diff=diff))
    assert done["warnings"] == ["probe east warns", "probe east returns a warning"]
    assert done.get("diff") == (dict(before="", after="east") if diff else None) and ("diff" in done) is diff
    failed = module_process(path, dict(INTERNAL, name="east", fail="fleet", _ansible_diff=diff))
    assert failed["failed"] and failed["changed"] and failed["warnings"] == ["probe east warns", "probe failed after a write"]
    assert ("diff" in failed) is diff


def test_no_log_values_are_masked(probe):
    _path, module = probe
    result = run_in_child(lambda: run_module(module, dict(name="east", token="s3cret-token", fail="fleet"), INTERNAL))
    assert "s3cret-token" not in json.dumps(result)
    assert result["msg"] == "cannot reach east with ********"


def test_an_exception_in_the_child_fails_with_its_traceback():
    def broken():
        raise ValueError("broken module")

    result = run_in_child(broken)
    assert result["failed"] is True and "broken module" in result["msg"]
    assert "ValueError: broken module" in result["exception"]


def test_a_child_that_dies_without_a_result_fails():
    result = run_in_child(lambda: os._exit(7))
    assert result["failed"] is True and result["rc"] == 7


def test_the_environment_is_set_for_the_child_alone():
    os.environ.pop("FLEET_TEST_IN_WORKER", None)
    result = run_in_child(lambda: {"seen": os.environ.get("FLEET_TEST_IN_WORKER")}, {"FLEET_TEST_IN_WORKER": "child"})
    assert result == {"seen": "child"}
    assert "FLEET_TEST_IN_WORKER" not in os.environ


def test_what_the_child_prints_goes_nowhere(capfd):
    def noisy():
        print("to stdout")
        sys.stderr.write("to stderr\n")
        return {"changed": False}

    assert run_in_child(noisy) == {"changed": False}
    out, err = capfd.readouterr()
    assert "to stdout" not in out and "to stderr" not in err


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

    main_thread = threading.get_ident()

    def interrupt_once_started():
        while not pid_file.exists() or not pid_file.read_text():
            threading.Event().wait(0.01)
        # to the waiting thread itself: a signal sent to the process may be handled by another thread, and the wait
        # would not be interrupted
        signal.pthread_kill(main_thread, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, interrupt)
    watcher = threading.Thread(target=interrupt_once_started)
    watcher.start()
    try:
        with pytest.raises(Interrupted):
            run_in_child(main)
    finally:
        watcher.join()
        signal.signal(signal.SIGUSR1, previous)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)  # killed and reaped


class Templar:
    """Resolves the one template the inventories use for the interpreter."""

    def template(self, value):
        return sys.executable if value == "{{ ansible_playbook_python }}" else value


def action(transport="local", become=False, async_val=0, delegate_to=None, environment=None, args=None,
           internal=None):
    task = types.SimpleNamespace(async_val=async_val, delegate_to=delegate_to, action="multicluster.fleet.cluster_info",
                                 environment=environment or [], args=args or {"engine": "karmada"})
    connection = types.SimpleNamespace(transport=transport, _shell=types.SimpleNamespace(env_prefix=lambda **kw: ""))
    made = ModuleInWorkerAction(task, connection, types.SimpleNamespace(become=become), None, Templar())
    made.__class__ = type("ActionModule", (ModuleInWorkerAction,),
                          {"__module__": "ansible_collections.multicluster.fleet.plugins.action.cluster_info"})
    made._update_module_args = lambda name, args, task_vars: args.update(dict(INTERNAL, **(internal or {})))
    return made


IN_WORKER = {"ansible_python_interpreter": "{{ ansible_playbook_python }}"}


@pytest.mark.parametrize("made, task_vars, wrap_async, expected", [
    (action(), IN_WORKER, False, None),
    (action(), {"ansible_python_interpreter": sys.executable}, False, None),
    (action(), {"ansible_python_interpreter": "/usr/bin/python3-elsewhere"}, False, "the interpreter is"),
    (action(), {}, False, "the interpreter is auto"),  # interpreter discovery decides: a module process
    (action(transport="ssh"), IN_WORKER, False, "the connection is ssh"),
    (action(become=True), IN_WORKER, False, "become"),
    (action(async_val=30), IN_WORKER, False, "async"),
    (action(), IN_WORKER, True, "async"),
    (action(delegate_to="localhost"), {"ansible_delegated_vars": {"localhost": IN_WORKER}}, False, None),
    (action(delegate_to="bastion"), dict(IN_WORKER, ansible_delegated_vars={"bastion": {}}), False, "interpreter"),
    (action(), dict(IN_WORKER, multicluster_fleet_module_process=True), False, "multicluster_fleet_module_process"),
    (action(), dict(IN_WORKER, multicluster_fleet_module_process="yes"), False, "module_process"),
    (action(), dict(IN_WORKER, multicluster_fleet_module_process=False), False, None),
], ids=["playbook-python", "same-path", "other-python", "discovered", "ssh", "become", "async", "wrapped-async",
        "delegated-here", "delegated-elsewhere", "switched-off", "switched-off-yes", "switch-false"])
def test_where_the_module_runs(made, task_vars, wrap_async, expected):
    reason = made._module_process_reason(task_vars, wrap_async)
    if expected is None:
        assert reason is None
    else:
        assert expected in reason


def test_the_environment_variable_switches_the_controller_side_run_off(monkeypatch):
    monkeypatch.setenv("MULTICLUSTER_FLEET_MODULE_PROCESS", "1")
    assert "MULTICLUSTER_FLEET_MODULE_PROCESS" in action()._module_process_reason(IN_WORKER, False)
    monkeypatch.setenv("MULTICLUSTER_FLEET_MODULE_PROCESS", "false")
    assert action()._module_process_reason(IN_WORKER, False) is None
    # the variable, where set, decides
    assert action()._module_process_reason(dict(IN_WORKER, multicluster_fleet_module_process=True), False)


@pytest.mark.parametrize("configured, expected", [(sys.executable, True), ("/usr/bin/python3-elsewhere", False)])
def test_an_interpreter_from_the_configuration_counts_as_a_host_variable(monkeypatch, configured, expected):
    """ANSIBLE_PYTHON_INTERPRETER (or interpreter_python in ansible.cfg) where the host sets none."""
    monkeypatch.setenv("ANSIBLE_PYTHON_INTERPRETER", configured)
    assert (action()._module_process_reason({}, False) is None) is expected
    assert action()._module_process_reason({"ansible_python_interpreter": "/usr/bin/python3-elsewhere"}, False)


def test_kept_remote_files_mean_a_module_process(monkeypatch):
    monkeypatch.setattr(module_in_worker.C, "DEFAULT_KEEP_REMOTE_FILES", True)
    assert "ANSIBLE_KEEP_REMOTE_FILES" in action()._module_process_reason(IN_WORKER, False)


def test_the_plan_holds_the_arguments_the_module_process_would_get():
    plan, reason = action(args={"engine": "ocm", "wait": True})._controller_plan(None, IN_WORKER)
    assert reason is None
    module, params, internal = plan
    assert module.__name__ == "ansible_collections.multicluster.fleet.plugins.modules.cluster_info"
    assert params == {"engine": "ocm", "wait": True}
    assert internal == INTERNAL


@pytest.mark.parametrize("made, expected", [
    (action(internal={"_ansible_new_in_next_release": 1}), "_ansible_new_in_next_release"),
    (action(internal={"_ansible_ignore_unknown_opts": True}), "unknown options are to be ignored"),
    (action(args={"engine": "karmada", "kubeconfig": "a", "verify_ssl": False, "validate_certs": True}), None),
], ids=["unknown-internal-argument", "ignore-unknown-opts", "top-level-alias"])
def test_what_the_controller_side_run_does_not_reproduce_runs_as_a_module_process(made, expected):
    plan, reason = made._controller_plan(None, IN_WORKER)
    if expected is None:
        assert plan is not None and reason is None
    else:
        assert plan is None and expected in reason


def test_a_suboption_given_with_its_alias_runs_as_a_module_process():
    """ansible-core warns of it from inside its validator, where the controller-side run cannot collect it."""
    spec = {"member": {"type": "dict", "options": {"ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"]}}}}
    assert "member.ca_cert" in module_in_worker.spec_problem(spec, {"member": {"ca_cert": "a", "ssl_ca_cert": "b"}})
    assert module_in_worker.spec_problem(spec, {"member": {"ssl_ca_cert": "b"}}) is None
    old = {"old": {"type": "str", "removed_in_version": "9.0.0"},
           "new": {"type": "str", "aliases": ["renamed"], "deprecated_aliases": [{"name": "renamed"}]}}
    assert "deprecated" in module_in_worker.spec_problem(old, {"old": "x"})
    assert "deprecated" in module_in_worker.spec_problem(old, {"renamed": "x"})
    assert module_in_worker.spec_problem(old, {"new": "x"}) is None  # ansible-core warns only of what is given


def test_every_module_of_the_collection_has_an_action_plugin_that_can_run_it_on_the_controller():
    root = os.path.join(os.path.dirname(module_in_worker.__file__), os.pardir)
    modules = sorted(name for name in os.listdir(os.path.join(root, "modules")) if name.endswith(".py"))
    assert sorted(name for name in os.listdir(os.path.join(root, "action")) if name.endswith(".py")) == modules
    for name in modules:
        module = __import__("ansible_collections.multicluster.fleet.plugins.modules.%s" % name[:-3], fromlist=["x"])
        spec = module.module_spec()
        assert callable(module.run) and module_in_worker.spec_problem(spec["argument_spec"], {}) is None, name


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
