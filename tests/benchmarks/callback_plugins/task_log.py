# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark helper: write one JSON line per task result, retry and loop item to ``$FLEET_BENCH_TASK_LOG``.

Enabled by tests/benchmarks/fleet.py (ANSIBLE_CALLBACK_PLUGINS pointing here, ANSIBLE_CALLBACKS_ENABLED=task_log)
to count, per host, the tasks that ran and the module processes they started. Each line holds ``host``,
``task`` (its name), ``uuid`` (the task's), ``action`` (fully qualified when Ansible resolved it), ``path``
(file:line), ``event`` (ok, changed, failed, skipped, unreachable, retry, item, include) and ``seconds`` since the
task started on that host. The last line, event ``playbook``, holds ``process_cpu``: the user + system CPU seconds of
the ansible-playbook process itself (its strategy, variables and callbacks; not its workers or module processes).

Each worker process (one per task and host) appends a line to ``$FLEET_BENCH_TASK_LOG.workers`` as it ends:
``host``, ``task``, ``uuid``, ``action``, ``worker_cpu`` (the CPU seconds of the worker itself: templating, the action
plugin, building the module's payload) and ``module_cpu`` (of the processes it waited for: the module process and
the commands the connection runs). The callback wraps ansible-core's ``WorkerProcess.run`` for that, in this process
before any worker is forked; where a release of ansible-core has no such method, the file stays empty.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import resource
import time

from ansible.executor.process import worker
from ansible.plugins.callback import CallbackBase


def _cpu(usage):
    return round(usage.ru_utime + usage.ru_stime, 4)


def _log_worker_cpu(path):
    """Make every worker append its own CPU and that of its children to ``path`` when it ends."""
    run = getattr(worker.WorkerProcess, "run", None)
    if run is None or getattr(run, "fleet_bench", False):
        return

    def measured_run(self):
        try:
            return run(self)
        finally:
            line = json.dumps({
                "host": self._host.get_name(), "task": self._task.get_name(), "uuid": self._task._uuid,
                "action": getattr(self._task, "resolved_action", None) or self._task.action,
                "worker_cpu": _cpu(resource.getrusage(resource.RUSAGE_SELF)),
                "module_cpu": _cpu(resource.getrusage(resource.RUSAGE_CHILDREN))}) + "\n"
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(descriptor, line.encode())  # one write per line: workers end concurrently
            finally:
                os.close(descriptor)

    measured_run.fleet_bench = True
    worker.WorkerProcess.run = measured_run


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_log"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._path = os.environ.get("FLEET_BENCH_TASK_LOG")
        self._started = {}
        self._lines = []
        if self._path:
            _log_worker_cpu(self._path + ".workers")

    def _record(self, host, task, event):
        started = self._started.get((host, task._uuid))
        self._lines.append({
            "host": host, "task": task.get_name(), "uuid": task._uuid,
            "action": getattr(task, "resolved_action", None) or task.action,
            "path": task.get_path(), "event": event,
            "seconds": None if started is None else round(time.monotonic() - started, 4)})

    def _result(self, result, event):
        self._record(result._host.get_name(), result._task, event)

    def v2_runner_on_start(self, host, task):
        self._started[(host.get_name(), task._uuid)] = time.monotonic()

    def v2_runner_on_ok(self, result):
        self._result(result, "changed" if result._result.get("changed") else "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._result(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._result(result, "unreachable")

    def v2_runner_retry(self, result):
        self._result(result, "retry")

    def v2_runner_item_on_ok(self, result):
        self._result(result, "item")

    def v2_runner_item_on_failed(self, result):
        self._result(result, "item")

    def v2_playbook_on_stats(self, stats):
        if self._path:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            self._lines.append({"event": "playbook", "process_cpu": round(usage.ru_utime + usage.ru_stime, 3)})
            with open(self._path, "w") as handle:
                for line in self._lines:
                    handle.write(json.dumps(line) + "\n")
