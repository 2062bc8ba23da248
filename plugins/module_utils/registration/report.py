# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a registration run wrote, in order, and the module result made of it (``changes``, ``diff``, ``warnings``).

A failure after a write names what the run wrote before it (:meth:`Report.failures_name_writes`,
:func:`failed_after`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout


class Report:
    """The outcomes of one run, in order, and what the module returns about them."""

    def __init__(self):
        self.outcomes = []  # (cluster role: hub, member or hosting; Outcome)
        self.warnings = []

    def add(self, cluster, outcome):
        self.outcomes.append((cluster.role, outcome))
        return outcome

    @contextlib.contextmanager
    def failures_name_writes(self, verb):
        """A FleetError raised inside after a change fails with ``changed`` and ``changes`` saying what the run did,
        its message naming what was ``verb`` (``written``, ``deleted``) before it."""
        try:
            yield
        except FleetError as exc:
            done = self.result()
            written = [line for line, (_cluster, outcome) in zip(done["changes"], self.outcomes) if outcome.changed]
            raise resources.failed_after(exc, written, verb, changes=done["changes"])

    def result(self, **extra):
        """``changes`` name the cluster of each object, as cluster_join's do: ``hub Cluster/member1: deleted``."""
        diffs = []
        for cluster, outcome in self.outcomes:
            if outcome.changed:
                header = "%s %s" % (cluster, outcome.ref)
                diffs.append(dict(outcome.diff(), before_header=header, after_header=header))
        return dict(changed=bool(diffs), changes=["%s %s" % (cluster, o.summary()) for cluster, o in self.outcomes],
                    diff=diffs, warnings=self.warnings, **extra)


def merge_written(registered, report):
    """``registered`` (a module result) with the outcomes of ``report``, written after it, added."""
    done = report.result()
    registered.update(changed=registered["changed"] or done["changed"], changes=registered["changes"] + done["changes"],
                      diff=registered["diff"] + done["diff"], warnings=registered["warnings"] + done["warnings"])
    return registered


def failed_after(exc, registered, report):
    """``exc`` raised after ``registered`` and ``report`` were written: the same error, naming everything written."""
    details = dict(exc.details)
    applied, written = details.pop("changed", False), details.pop("objects", [])
    for key in ("clusters", "diff", "waiting", "warnings"):
        details.pop(key, None)
    merged = merge_written(registered, report)
    error = WaitTimeout if isinstance(exc, WaitTimeout) else FleetError
    return error(exc.msg, changed=bool(merged["changed"] or applied),
                 changes=merged["changes"] + ["member %s" % summary for summary in written], **details)


class Accepted:
    """An acceptance step (a CSR approved, hubAcceptsClient set) as a :class:`Report` outcome."""

    changed = True

    def __init__(self, ref, verb, diff):
        self.ref, self.verb, self._diff = ref, verb, diff

    def summary(self):
        return "%s: %s" % (self.ref, self.verb)

    def diff(self):
        return {"before": self._diff["before"], "after": self._diff["after"]}
