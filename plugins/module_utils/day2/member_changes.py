# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Changing the hub objects of many member clusters in one task: the skeleton of the day-2 modules.

A module gives a plan function, ``plan(cluster, member_object)``, that returns the JSON merge patch the member object
needs (None or empty: nothing to change), or ``(patch, info)`` when it has more to say about that cluster (what it
takes over, its warnings). :class:`MemberChanges` does the rest:

- :meth:`MemberChanges.read` reads every member object first, in parallel (:func:`hub_members.read_members`: an unregistered
  cluster fails the task before any write, or is skipped; one being deleted fails it). A task whose clusters each get
  values of their own (the modules' ``per_cluster``) reads them ``isolated``: such a cluster fails alone, and so does
  one whose values the module refused (:meth:`MemberChanges.reject`);
- :meth:`MemberChanges.write` plans and writes each cluster in parallel (:func:`parallel.fan_out`), one merge patch guarded
  by the ``resourceVersion`` it was planned from; on a conflict the object is read again and planned again. In check
  mode the hub's dry run answers. A cluster whose write fails does not stop the others;
- :meth:`MemberChanges.result` assembles the module's result - ``changed``, ``clusters`` (one summary per cluster),
  ``diff`` - or raises one FleetError naming every cluster that failed, with ``clusters_failed`` and ``cluster_errors``
  (the message of each).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import cluster_names, hub_members, parallel
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import Conflict, NotFound
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


class MemberChanges:
    """The changes one task makes to the member objects of ``clusters`` (names, checked and without repeats on creation).

    After :meth:`write`: ``outcomes`` ``{cluster: resources.Outcome}`` (updated or unchanged), ``info`` ``{cluster: what
    the last plan said beside its patch}``, ``errors`` ``{cluster: message}`` of the clusters that failed; after
    :meth:`read`, ``skipped``: the clusters left out as not registered. Each in the order of ``clusters``.
    """

    def __init__(self, hub, engine, clusters, check_mode=False):
        self.hub = hub
        self.engine = engines.get(engine)
        self.check_mode = check_mode
        self.clusters = cluster_names.cluster_names(self.engine, clusters)
        self.members = {}
        self.skipped = []
        self.outcomes = {}
        self.info = {}
        self.errors = {}

    @classmethod
    def per_cluster(cls, hub, engine, items, check, check_mode=False):
        """``(changes, values)`` of a module's ``per_cluster`` ``items`` (dicts with the cluster's ``name``, each named
        once): ``values`` ``{cluster: check(item)}``; a cluster whose ``check`` raises a FleetError is rejected alone."""
        changes, values = cls(hub, engine, cluster_names.per_cluster_names(items), check_mode), {}
        for item in items:
            try:
                values[item["name"]] = check(item)
            except FleetError as exc:
                changes.reject(item["name"], exc.msg)
        return changes, values

    def reject(self, cluster, message):
        """Fail ``cluster`` alone, before it is read (its values are wrong): it is neither read nor written."""
        self.errors[cluster] = message

    def read(self, unregistered="fail", purpose="write to", isolated=False):
        """Read every member object before anything is written (:func:`hub_members.read_members`, whose message says
        ``cannot <purpose> every cluster``); with ``unregistered`` V(skip) the missing clusters go to ``skipped``. With
        ``isolated``, a cluster that cannot be read (not registered, with V(fail); being deleted) fails alone, in
        ``errors``, instead of the task."""
        wanted = [c for c in self.clusters if c not in self.errors]
        if isolated:
            self.members, problems = hub_members.read_each(self.hub, self.engine, wanted, unregistered)
            self.errors.update(problems)
        else:
            self.members = hub_members.read_members(self.hub, self.engine, wanted, unregistered, purpose)
        self.skipped = [c for c in wanted if c not in self.members and c not in self.errors]

    def write(self, plan, writing="it was being updated"):
        """Plan and write every cluster read, in parallel; ``writing`` completes the message of a cluster that keeps
        changing (``<Kind/name> kept changing while <writing>``)."""
        targets = [c for c in self.clusters if c in self.members]
        done, errors = parallel.fan_out(lambda cluster: self._write(cluster, plan, writing), targets)
        self.errors.update(errors)
        for cluster in done:
            self.outcomes[cluster], self.info[cluster] = done[cluster]

    def _write(self, cluster, plan, writing):
        """``(resources.Outcome, info)`` of one cluster: its patch written, planned again on what is there after a
        conflict."""
        kind = self.engine.member_kind
        obj = self.members[cluster]
        for _attempt in range(resources.CONFLICT_RETRIES):
            if obj is None:
                raise FleetError("is no longer registered (its %s was deleted meanwhile)" % kind.kind)
            patch, info = _planned(plan(cluster, obj))
            if not patch:
                return resources.Outcome(kind, cluster, None, "unchanged", obj, obj), info
            guarded = dict(patch, metadata=dict(patch.get("metadata") or {}, resourceVersion=obj["metadata"]["resourceVersion"]))
            try:
                updated = self.hub.request("PATCH", kind.path(name=cluster), body=guarded,
                                           query=resources.dry_run_query(self.check_mode), content_type=resources.MERGE_PATCH)
            except (Conflict, NotFound):  # written in between (or deleted): plan again on what is there now
                obj = resources.get(self.hub, kind, cluster)
                continue
            return resources.Outcome(kind, cluster, None, "updated", obj, updated), info
        raise FleetError("%s kept changing while %s (%d conflicts); try again"
                         % (kind.ref(cluster), writing, resources.CONFLICT_RETRIES))

    @property
    def changed(self):
        return any(outcome.changed for outcome in self.outcomes.values())

    def changed_outcomes(self):
        """The outcomes of the clusters written, in the order of ``clusters``."""
        return [self.outcomes[c] for c in self.clusters if c in self.outcomes and self.outcomes[c].changed]

    def raise_failures(self, failed, **details):
        """Raise one FleetError when a cluster failed: ``<failed> on N of M clusters: cluster 'a': why; ...``, with
        ``changed`` (what was written, never in check mode), ``clusters_failed``, ``cluster_errors`` (``{cluster:
        <failed> on cluster 'a': why}``, what a task for that cluster alone would say) and ``details``."""
        if not self.errors:
            return
        failures = [hub_members.cluster_problem(*item) for item in sorted(self.errors.items())]
        raise FleetError("%s on %d of %d clusters: %s" % (
            failed, len(self.errors), len(self.errors) + len(self.outcomes), "; ".join(failures)),
            changed=self.changed and not self.check_mode, clusters_failed=sorted(self.errors),
            cluster_errors=dict((c, "%s on %s" % (failed, text)) for c, text in zip(sorted(self.errors), failures)),
            **details)

    def result(self, summarize, diff, failed, **details):
        """The module's result: ``changed``; ``clusters``, ``{cluster: summarize(outcome, info)}`` of every cluster
        written, unchanged or skipped (outcome and info None); ``diff``, ``diff(outcome)`` of each cluster changed; and
        ``details``. When a write failed, :meth:`raise_failures` raises instead, with ``clusters`` and ``details``."""
        clusters = dict((c, summarize(self.outcomes.get(c), self.info.get(c))) for c in self.clusters if c not in self.errors)
        self.raise_failures(failed, clusters=clusters, **details)
        return dict(details, changed=self.changed, clusters=clusters, diff=[diff(o) for o in self.changed_outcomes()])


def _planned(answer):
    """``(patch, info)`` of what a plan function returned: a patch, or a ``(patch, info)`` pair."""
    return answer if isinstance(answer, tuple) else (answer, None)
