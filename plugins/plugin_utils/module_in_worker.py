# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action plugin of every module of the collection: on the controller, the module's logic runs in a child of the
task's worker instead of a module process; a task retried with ``until`` reports the change of an earlier attempt.

The collection's tasks run on the controller (``connection: local``) and reach clusters through their API. There,
ansible-core would build the module's payload (a zip of the module and its module_utils), start a Python
interpreter on it, and that interpreter would compile ``ansible.module_utils.basic`` and ours from source (the
payload carries no bytecode) before the module's first request - about 0.2 s of CPU per task before any work,
the largest share of what a member costs the controller.

When the module would run on the controller with the controller's own Python, :class:`ModuleInWorkerAction` runs the
module's logic (its ``run`` function) in a child forked from the worker, with :class:`ControllerModule` in place of
``AnsibleModule``: the module's own arguments (``module_spec``) validated by ansible-core's public
``ArgumentSpecValidator``, the internal arguments ansible-core would pass the module process (check mode, diff, ...)
read from the same place (``ActionBase._update_module_args``), and the result formed as ``AnsibleModule`` forms it
(``invocation``, warnings, no_log values masked with the public ``remove_values``). The fork keeps what a module
process gives: whatever the module changes in its process (environment, connection caches) goes with the child, and a
task timeout kills it. Only public ansible-core APIs are used; nothing private of ansible-core is imported or patched.

Everything else runs as ansible-core runs any module, and a ``-vvv`` line says why: another connection, another
interpreter, become, async, ``ANSIBLE_KEEP_REMOTE_FILES``, the off switch (the variable
``multicluster_fleet_module_process`` or the environment variable ``MULTICLUSTER_FLEET_MODULE_PROCESS``), no
``os.fork``, or anything the controller-side run does not reproduce exactly: an internal argument it does not know
(a newer ansible-core's), ``ignore_unknown_opts``, deprecated options or aliases that the task gives, an option and its
alias both given inside a suboption (ansible-core would warn from inside its validator), a ``no_log`` option that is not
a string.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import io
import json
import os
import signal
import sys
import traceback

from ansible import constants as C
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.utils.display import Display

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client

try:  # ansible-core's module serialization API (2.19 and later)
    from ansible.module_utils.common.json import Direction, get_module_decoder, get_module_encoder
except ImportError:
    get_module_encoder = None
from ansible_collections.multicluster.fleet.plugins.module_utils.module import FleetModuleBase, fleet_argument_spec

display = Display()

# The off switch: true in either runs every module of the collection as a module process.
SWITCH_VARIABLE = "multicluster_fleet_module_process"
SWITCH_ENVIRONMENT = "MULTICLUSTER_FLEET_MODULE_PROCESS"

# The serialization profile ansible-core uses for a module that declares none (none of ours does).
PROFILE = "legacy"

# Set on a task by an attempt that changed something (see ModuleInWorkerAction.run).
CHANGED_EARLIER = "_multicluster_fleet_changed_earlier"

# The internal arguments of ansible-core's module protocol (what _update_module_args adds) that ControllerModule honours.
HONOURED = frozenset((
    "_ansible_check_mode", "_ansible_diff", "_ansible_module_name", "_ansible_inject_invocation",
    "_ansible_tracebacks_for", "_ansible_ignore_unknown_opts",
))
# Those that only concern what a module does on its host and AnsibleModule's logging (syslog, temporary directories,
# selinux, the persistent connection socket, the shell), none of which the collection's modules use.
UNUSED = frozenset((
    "_ansible_no_log", "_ansible_debug", "_ansible_verbosity", "_ansible_version", "_ansible_syslog_facility",
    "_ansible_selinux_special_fs", "_ansible_string_conversion_action", "_ansible_socket", "_ansible_shell_executable",
    "_ansible_keep_remote_files", "_ansible_tmpdir", "_ansible_remote_tmp", "_ansible_target_log_info",
))


def module_of(action):
    """The name of the module an action plugin of the collection runs: the plugin's name under plugins.modules."""
    return action.replace(".plugins.action.", ".plugins.modules.")


class ModuleInWorkerAction(NormalAction):
    """Runs the task's module in a child of the worker where it would run on the controller with its Python."""

    def __init_subclass__(cls, **kwargs):
        """Loads the module with its action plugin, once per process.

        The collection loader compiles a collection's Python from source in each process that imports it, and
        ansible-core forks a worker per task: a module first imported in the worker is compiled again for every task.
        ansible-core's strategies load an action plugin's class in the controller's main process before they fork the
        task's worker, so the worker starts with the module and its module_utils compiled. Where it cannot be loaded,
        ``_controller_plan`` says why on the task that needs it.
        """
        super(ModuleInWorkerAction, cls).__init_subclass__(**kwargs)
        try:
            importlib.import_module(module_of(cls.__module__))
        except ImportError:
            pass

    def run(self, tmp=None, task_vars=None):
        """The module's result; of a task retried with ``until``, changed when an earlier attempt changed something.

        ansible-core reports a retried task as its last attempt did: a registration whose wait timed out, run again,
        would report the second run's "no change". It runs every attempt on the same task object (each loop item on a
        copy of its own, made before the first attempt), which carries the change of an earlier attempt to the last.
        """
        result = super(ModuleInWorkerAction, self).run(tmp=tmp, task_vars=task_vars)
        if result.get("changed"):
            setattr(self._task, CHANGED_EARLIER, True)
        elif getattr(self._task, CHANGED_EARLIER, False):
            result["changed"] = True
        return result

    def _execute_module(self, module_name=None, module_args=None, tmp=None, task_vars=None, persist_files=False,
                        delete_remote_tmp=None, wrap_async=False, **kwargs):
        task_vars = {} if task_vars is None else task_vars
        host = task_vars.get("inventory_hostname")
        plan = None
        if module_name in (None, self._task.action):
            reason = self._module_process_reason(task_vars, wrap_async)
            if reason is None:
                plan, reason = self._controller_plan(module_args, task_vars)
            if plan is None:
                display.vvv("running %s as a module process: %s" % (self._task.action, reason), host=host)
        if plan is None:
            return super(ModuleInWorkerAction, self)._execute_module(
                module_name=module_name, module_args=module_args, tmp=tmp, task_vars=task_vars,
                persist_files=persist_files, delete_remote_tmp=delete_remote_tmp, wrap_async=wrap_async, **kwargs)
        display.vvv("running %s on the controller, in a child of the worker (no module process)" % self._task.action,
                    host=host)
        module, params, internal = plan
        return run_in_child(lambda: run_module(module, params, internal), self._task_environment())

    def _module_process_reason(self, task_vars, wrap_async):
        """Why the module must run as a module process, or None when it can run on the controller in this worker."""
        switch = task_vars.get(SWITCH_VARIABLE, os.environ.get(SWITCH_ENVIRONMENT, False))
        if boolean(self._templar.template(switch), strict=False):
            return "%s or %s is set" % (SWITCH_VARIABLE, SWITCH_ENVIRONMENT)
        if wrap_async or self._task.async_val:
            return "the task is async"
        if C.DEFAULT_KEEP_REMOTE_FILES:
            return "ANSIBLE_KEEP_REMOTE_FILES is set"
        if self._connection.transport != "local":
            return "the connection is %s, not local" % self._connection.transport
        if self._play_context.become:
            return "the task uses become"
        if not hasattr(os, "fork"):
            return "this system has no os.fork"
        host_vars = task_vars
        if self._task.delegate_to:
            host_vars = (task_vars.get("ansible_delegated_vars") or {}).get(self._task.delegate_to, {})
        # The host's ansible_python_interpreter, else ANSIBLE_PYTHON_INTERPRETER or ansible.cfg's interpreter_python,
        # else "auto": discovered on first use, whichever Python that finds is the one to run the module with.
        interpreter = self._templar.template(C.config.get_config_value("INTERPRETER_PYTHON", variables=host_vars))
        if interpreter != sys.executable:
            return "the interpreter is %s, not the controller's %s" % (interpreter, sys.executable)
        return None

    def _controller_plan(self, module_args, task_vars):
        """``((module, params, internal), None)`` to run on the controller, or ``(None, reason)``."""
        name = module_of(type(self).__module__)
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            return None, "its module %s cannot be imported here: %s" % (name, exc)
        if not callable(getattr(module, "module_spec", None)) or not callable(getattr(module, "run", None)):
            return None, "its module has no module_spec and run"
        if get_module_encoder is None:
            return None, "this ansible-core has no module serialization API (ansible.module_utils.common.json)"
        args = dict(self._task.args if module_args is None else module_args)
        self._update_module_args(self._task.action, args, task_vars)
        try:  # the arguments as the module process would decode them
            text = json.dumps({"ANSIBLE_MODULE_ARGS": args}, cls=get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE))
            args = json.loads(text, cls=get_module_decoder(PROFILE, Direction.CONTROLLER_TO_MODULE))["ANSIBLE_MODULE_ARGS"]
        except Exception as exc:  # pylint: disable=broad-except
            return None, "its arguments do not pass through the module serialization here: %s" % (exc,)
        internal = dict((key, args.pop(key)) for key in list(args) if key.startswith("_ansible_"))
        unknown = sorted(set(internal) - HONOURED - UNUSED)
        if unknown:
            return None, "ansible-core passes modules %s, which the controller-side run does not know" % ", ".join(unknown)
        if internal.get("_ansible_ignore_unknown_opts"):
            return None, "unknown options are to be ignored"
        problem = spec_problem(fleet_argument_spec(module.module_spec()["argument_spec"]), args)
        if module.module_spec().get("supports_check_mode") is False:
            problem = "the module does not support check mode"
        if problem:
            return None, problem
        return (module, args, internal), None

    def _task_environment(self):
        """The task's ``environment``, templated, its values strings (as a shell passes them to a module process)."""
        environment = {}
        self._compute_environment_string(environment)
        return dict((str(name), str(value)) for name, value in environment.items())


def spec_problem(spec, params, prefix=""):
    """What in ``spec`` (with ``params``) ControllerModule would not reproduce as AnsibleModule does, or None."""
    params = params if isinstance(params, dict) else {}
    for name, option in spec.items():
        given = [key for key in [name] + list(option.get("aliases") or []) if key in params]
        deprecated = [alias["name"] for alias in option.get("deprecated_aliases") or []]
        if option.get("removed_in_version") or option.get("removed_at_date"):
            deprecated += [name] + list(option.get("aliases") or [])
        if set(given) & set(deprecated):  # ansible-core warns of a deprecated option only when it is given
            return "option %s%s is deprecated or has deprecated aliases" % (prefix, name)
        if option.get("no_log") and option.get("type", "str") != "str":
            return "no_log option %s%s is not a string" % (prefix, name)
        if option.get("fallback"):
            return "option %s%s has a fallback" % (prefix, name)
        value = params.get(name)
        for alias in option.get("aliases") or []:
            if value is None:
                value = params.get(alias)
            elif prefix and alias in params:
                return "option %s%s and its alias %s are both set" % (prefix, name, alias)
        if option.get("options"):
            for item in value if isinstance(value, list) else [value]:
                problem = spec_problem(option["options"], item, "%s%s." % (prefix, name))
                if problem:
                    return problem
    return None


def no_log_values(spec, params):
    """The values of ``spec``'s no_log options in ``params`` (validated), suboptions included, as AnsibleModule's."""
    found = set()
    for name, option in spec.items():
        value = params.get(name) if isinstance(params, dict) else None
        if option.get("no_log") and isinstance(value, str) and value:
            found.add(value)
        if option.get("options") and value is not None:
            for item in value if isinstance(value, list) else [value]:
                found |= no_log_values(option["options"], item)
    return found


class _Exit(BaseException):
    """Ends the module's run with its result, as ``exit_json``/``fail_json`` end a module process."""

    def __init__(self, result):
        super(_Exit, self).__init__()
        self.result = result


class ControllerModule(FleetModuleBase):
    """What the collection's modules use of ``AnsibleModule`` (``params``, ``check_mode``, ``_diff``, ``warn``,
    ``no_log_values``, ``exit_json``, ``fail_json``), on the controller, giving the result a module process gives.

    It takes what :class:`FleetModule` takes (a module's ``module_spec()``); ``dependencies`` are the options'
    dependencies (``mutually_exclusive``, ``required_together``, ``required_one_of``, ``required_if``,
    ``required_by``), checked by ``ArgumentSpecValidator`` as ``AnsibleModule`` checks them."""

    def __init__(self, params, internal, argument_spec, role="hub", environment=True, supports_check_mode=True,
                 **dependencies):
        self._name = internal.get("_ansible_module_name")
        self._internal = internal
        self.check_mode = bool(internal.get("_ansible_check_mode", False))
        self._diff = bool(internal.get("_ansible_diff", False))
        self.supports_check_mode = supports_check_mode
        self._warnings = []
        spec = fleet_argument_spec(argument_spec)
        self.argument_spec = spec
        validation = ArgumentSpecValidator(spec, **dependencies).validate(params)
        self.params = validation.validated_parameters
        self.no_log_values = no_log_values(spec, self.params)
        for name, option in spec.items():
            for alias in option.get("aliases") or []:
                if name in params and alias in params:
                    self.warn("Both option %s and its alias %s are set." % (name, alias))
        if validation.error_messages:
            message = validation.errors.msg
            if isinstance(validation.errors[0], UnsupportedError):
                message = "Unsupported parameters for (%s) module: %s" % (self._name, message)
            self.fail_json(msg=message)
        self._start(role, environment)

    def warn(self, warning):
        if not isinstance(warning, str):
            raise TypeError("warn requires a string not a %s" % type(warning))
        if warning not in self._warnings:  # AnsibleModule keeps each warning once
            self._warnings.append(warning)

    def exit_json(self, **kwargs):
        self._exit(kwargs)

    def fail_json(self, msg, exception=None, **kwargs):
        kwargs.update(failed=True, msg=str(msg))
        if "error" in (self._internal.get("_ansible_tracebacks_for") or ()):
            if exception is None and sys.exc_info()[1] is not None:
                exception = traceback.format_exc()
            if isinstance(exception, BaseException):
                exception = "".join(traceback.format_exception(type(exception), exception, exception.__traceback__))
            if exception:
                kwargs.update(exception=exception)
        self._exit(kwargs)

    def _exit(self, result):
        if self._internal.get("_ansible_inject_invocation", True):
            result.setdefault("invocation", {"module_args": self.params})
        else:
            result.pop("invocation", None)
        if self._warnings:
            result["warnings"] = list(self._warnings)
        raise _Exit(remove_values(result, self.no_log_values))


def run_module(module, params, internal):
    """The result of the collection module ``module`` (its ``module_spec`` and ``run``) with ``params``."""
    try:
        ControllerModule(params, internal, **module.module_spec()).run(module.run)
    except _Exit as exc:
        return exc.result
    return {"failed": True, "msg": "the module returned without exit_json or fail_json"}


def run_in_child(function, environment=None):
    """``function()`` (a JSON-serializable dict) computed in a child forked from this process, with ``environment``
    (variables set for the child alone).

    The child's standard output and error output go nowhere (a library writing there must not reach the worker's).
    An exception in ``function`` fails the task with its traceback; a child that ends without a result, too. If this
    process is interrupted while it waits (a task timeout), the child is killed.
    """
    reader, writer = os.pipe()
    reaped = False
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe and never returns
        os.close(reader)
        _child(function, environment or {}, writer)
    try:  # from the fork on: an interruption anywhere kills the child
        os.close(writer)
        chunks = []
        while True:
            chunk = os.read(reader, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        status = os.waitpid(pid, 0)[1]
        reaped = True
    finally:
        os.close(reader)
        if not reaped:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    if chunks:
        return json.loads(b"".join(chunks).decode())
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    return {"failed": True, "rc": code, "msg": "MODULE FAILURE: the module's process ended without a result"}


def _child(function, environment, writer):  # pragma: no cover - runs in the forked child
    status = 70  # the report could not be written: the parent finds no result
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.environ.update(environment)
        sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
        try:
            report = json.dumps(function())
        except Exception:
            report = json.dumps({"failed": True, "msg": "MODULE FAILURE: %s" % (sys.exc_info()[1],),
                                 "exception": traceback.format_exc()})
        finally:
            client.release_data_files()
        report = report.encode()
        while report:
            report = report[os.write(writer, report):]
        status = 0
    finally:
        os._exit(status)
