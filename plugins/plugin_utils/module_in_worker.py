# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action plugin of every module of the collection: on the controller, the module runs in the task's worker;
a task retried with ``until`` reports the change of an earlier attempt.

The collection's tasks run on the controller (``connection: local``) and reach clusters through their API. There,
ansible-core would build the module's payload (a zip of the module and its module_utils), start a Python
interpreter on it, and that interpreter would compile ``ansible.module_utils.basic`` and ours from source (the
payload carries no bytecode) before the module's first request - about 0.2 s of CPU per task before any work,
the largest share of what a member costs the controller.

When the module would run on the controller with the controller's own Python, :class:`ModuleInWorkerAction` runs it
in a child forked from the worker instead (:func:`run_in_child`): the module is imported in the worker, where
ansible-core's module_utils load from their compiled files (or are loaded already); the child runs the module's
``main()`` with the arguments ansible-core would have passed it (the same encoding and internal ``_ansible_*``
arguments) and hands back its exit code, output and error output, which ansible-core reads as a module process's.
The fork keeps what a module process gives: whatever the module changes in its process (environment, global state,
exit) goes with the child, and a crash fails the task, not the worker.

Everywhere else the module runs as ansible-core runs any module: another connection, another interpreter, become,
async, ``ANSIBLE_KEEP_REMOTE_FILES`` (to look at the payload), or an ansible-core without the module serialization
API of 2.19 (``ansible.module_utils.common.json``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import atexit
import importlib
import io
import json
import os
import signal
import sys
import traceback

from ansible import constants as C
from ansible.module_utils import basic
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.utils.collection_loader import AnsibleCollectionRef
from ansible.utils.display import Display
from ansible.vars.clean import remove_internal_keys

try:
    from ansible.module_utils import _internal as module_utils_internal
    from ansible.module_utils.common.json import Direction, get_module_encoder
except ImportError:  # ansible-core before 2.19: modules run as module processes
    get_module_encoder = None

display = Display()

# The serialization profile ansible-core uses for a module that declares no metadata (none of ours does).
PROFILE = "legacy"

# Set on a task by an attempt that changed something (see ModuleInWorkerAction.run).
CHANGED_EARLIER = "_multicluster_fleet_changed_earlier"


class ModuleInWorkerAction(NormalAction):
    """Runs the task's module in a child of the worker where it would run on the controller with its Python."""

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
        if module_name not in (None, self._task.action) or not self._runs_in_worker(task_vars, wrap_async):
            return super(ModuleInWorkerAction, self)._execute_module(
                module_name=module_name, module_args=module_args, tmp=tmp, task_vars=task_vars,
                persist_files=persist_files, delete_remote_tmp=delete_remote_tmp, wrap_async=wrap_async, **kwargs)
        module_name = self._task.action
        module_args = self._task.args if module_args is None else module_args
        self._update_module_args(module_name, module_args, task_vars)
        reference = AnsibleCollectionRef.from_fqcr(self._task.resolved_action or module_name, "modules")
        module = importlib.import_module("%s.%s" % (reference.n_python_package_name, reference.resource))
        display.vvv("running %s in a child of the worker (no module process)" % module_name,
                    host=task_vars.get("inventory_hostname"))
        params = json.dumps({"ANSIBLE_MODULE_ARGS": module_args},
                            cls=get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)).encode()
        data = self._parse_returned_data(run_in_child(module.main, params, PROFILE, self._task_environment()), PROFILE)
        remove_internal_keys(data)
        return data

    def _task_environment(self):
        """The task's ``environment``, templated, its values strings (as a shell passes them to a module process)."""
        environment = {}
        self._compute_environment_string(environment)
        return dict((str(name), str(value)) for name, value in environment.items())

    def _runs_in_worker(self, task_vars, wrap_async):
        """Whether the module would run on the controller with the Python that runs this worker."""
        if get_module_encoder is None or wrap_async or self._task.async_val or C.DEFAULT_KEEP_REMOTE_FILES:
            return False
        if self._connection.transport != "local" or self._play_context.become:
            return False
        host_vars = task_vars
        if self._task.delegate_to:
            host_vars = (task_vars.get("ansible_delegated_vars") or {}).get(self._task.delegate_to, {})
        # The host's ansible_python_interpreter, else ANSIBLE_PYTHON_INTERPRETER or ansible.cfg's interpreter_python,
        # else "auto": discovered on first use, whichever Python that finds is the one to run the module with.
        interpreter = C.config.get_config_value("INTERPRETER_PYTHON", variables=host_vars)
        return self._templar.template(interpreter) == sys.executable


def run_in_child(main, params, profile, environment=None):
    """Run a module's ``main`` in a child forked from this process, with ``params`` (the encoded module arguments)
    and ``environment`` (variables set for the module alone); ``{'rc', 'stdout', 'stderr'}`` as from a module process.

    The child exits however the module ends: SystemExit (the module's exit_json / fail_json), an exception (its
    traceback on the error output, rc 1) or returning (an error: a module exits itself). Exit handlers the module
    registers run in the child; those inherited from the worker do not. If this process is interrupted while it waits
    (a task timeout), the child is killed.
    """
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe and never returns
        os.close(reader)
        _child(main, params, profile, environment or {}, writer)
    os.close(writer)
    reaped = False
    try:
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
    return {"rc": -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status),
            "stdout": "", "stderr": "the module's process ended without a result"}


def _child(main, params, profile, environment, writer):  # pragma: no cover - runs in the forked child
    status = 70  # the report could not be written: the parent finds no result
    try:
        atexit._clear()  # the worker's exit handlers and signal handlers are the worker's
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # ansible.module_utils as in a module process: warnings and deprecations go with the result (on the controller
        # they would go to the worker's display, from a process it does not wait for).
        module_utils_internal.is_controller = False
        stdout, stderr = io.StringIO(), io.StringIO()
        rc = 1
        os.environ.update(environment)
        sys.stdout, sys.stderr = stdout, stderr
        basic._ANSIBLE_ARGS = params
        basic._ANSIBLE_PROFILE = profile
        try:
            main()
            stderr.write("the module returned without exit_json or fail_json\n")
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except BaseException:
            traceback.print_exc(file=stderr)
        atexit._run_exitfuncs()
        report = json.dumps({"rc": rc, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}).encode()
        while report:
            report = report[os.write(writer, report):]
        status = 0
    finally:
        os._exit(status)
