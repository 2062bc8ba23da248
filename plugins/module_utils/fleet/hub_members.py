# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The member clusters as the hub shows them, whichever engine runs it: read before a task writes them, listed, summarized and
waited for."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import labels
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import cluster_names, parallel
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout

# What a module acting on many clusters does with one the hub does not have (read_members).
UNREGISTERED = ("fail", "skip")


def read_each(hub, engine, clusters, unregistered="fail"):
    """The hub objects of ``clusters`` (names from :func:`cluster_names.cluster_names`), read in parallel before a task
    writes them: ``({cluster: object}, {cluster: problem})``. The objects are those of the clusters the hub has; the
    problems those of a cluster whose read failed, that is being deleted or, with ``unregistered`` V(fail), that is not
    registered."""
    engine = engines.get(engine)
    kind = engine.member_kind
    found, errors = parallel.fan_out(lambda c: resources.get(hub, kind, c), clusters)
    missing = [c for c in clusters if c not in errors and found.get(c) is None]
    deleting = [c for c in clusters if (found.get(c) or {}).get("metadata", {}).get("deletionTimestamp")]
    problems = dict(errors)
    problems.update((c, "is being deleted from the hub") for c in deleting)
    if unregistered == "fail":
        problems.update((c, "is not registered on the hub (no %s named %s)" % (kind.kind, c)) for c in missing)
    return dict((c, obj) for c, obj in found.items() if obj is not None and c not in problems), problems


def read_members(hub, engine, clusters, unregistered="fail", purpose="write to"):
    """The hub objects of ``clusters`` (names from :func:`cluster_names.cluster_names`), read in parallel before a task
    writes them.

    ``{cluster: object}`` of the clusters the hub has. One FleetError (``changed`` false, naming every cluster
    concerned) when a read fails, a cluster is being deleted, or, with ``unregistered`` V(fail), a cluster is not
    registered (:func:`read_each`); with V(skip) the task goes on without the missing ones (a check-mode run that only
    plans their registration).
    """
    found, problems = read_each(hub, engine, clusters, unregistered)
    if problems:
        raise FleetError("%s: cannot %s every cluster, nothing was written: %s"
                         % (hub.label, purpose, "; ".join(cluster_problem(c, problems[c]) for c in clusters if c in problems)),
                         changed=False, clusters_failed=sorted(problems))
    return found


def cluster_problem(cluster, problem):
    """``cluster 'name': <problem>``, or ``cluster 'name' <problem>`` for a problem that starts with a verb (is ...)."""
    return "cluster '%s'%s %s" % (cluster, "" if problem.startswith("is ") else ":", problem)


def member_kind(engine):
    """The hub kind that stands for a member cluster under ``engine``."""
    return engines.get(engine).member_kind


def summarize(engine, obj):
    """Engine-neutral summary of a member cluster object, with the object itself under ``object``."""
    summary = engines.get(engine).summarize(obj)
    summary.update(labels.observed(engine, obj))
    summary["created"] = obj["metadata"].get("creationTimestamp")
    summary["object"] = resources.presentable(obj)
    return summary


def member_clusters(hub, engine, name=None, label_selectors=None):
    """Summaries of the member clusters registered on ``hub``, sorted by name.

    ``name`` reads one cluster (an empty list when it does not exist); ``label_selectors`` are
    Kubernetes label selector expressions, all of which must match.
    """
    if name is not None:
        cluster_names.validate_cluster_name(engine, name)
    selector = ",".join(label_selectors or []) or None
    objs = resources.list_objects(hub, member_kind(engine), label_selector=selector,
                                  field_selector="metadata.name=%s" % name if name else None)
    return sorted((summarize(engine, o) for o in objs), key=lambda s: s["name"])


def add_agents(clusters, engine, member):
    """Add to each of ``clusters`` (summaries, in practice the one named cluster) ``agent``: its agent as ``member``
    shows it (:meth:`engines.Engine.read_agent`), None for a Karmada Push member, which runs no agent."""
    engine = engines.get(engine)
    for cluster in clusters:
        cluster["agent"] = None if engine.is_push(cluster["object"]) else engine.read_agent(member)
    return clusters


def add_agents_each(clusters, engine, connect, names):
    """Add to each of ``clusters`` (summaries) that ``names`` names its ``agent``, as :func:`add_agents` does, read in
    parallel with the connection ``connect(name)`` returns. A member whose agent cannot be read (a FleetError) gets no
    ``agent``: a summary still lists it, as one whose agent was not asked for."""
    engine = engines.get(engine)
    chosen = dict((c["name"], c) for c in clusters if c["name"] in names)

    def read(name):
        return None if engine.is_push(chosen[name]["object"]) else engine.read_agent(connect(name))
    agents, _unread = parallel.fan_out(read, list(chosen))
    for name, agent in agents.items():
        chosen[name]["agent"] = agent
    return clusters


def wait_for_clusters(hub, engine, name=None, label_selectors=None, condition=None, timeout=120,
                      interval=resources.WAIT_SLEEP, member=None):
    """Wait until every cluster :func:`member_clusters` lists has ``condition``; return their summaries.

    ``condition`` is a :func:`resources.wanted_condition` dict, by default the engine's readiness
    (:attr:`engines.Engine.ready_condition`). With ``name`` the cluster must also exist, and is followed with a watch
    (:func:`resources.watch_until`); with selectors only, the clusters that match are waited for (none: nothing to wait
    for). With ``member``, the connection to the named cluster, its agent (:func:`add_agents`) must also have rolled
    out its image (after an upgrade: run the new version). The timeout message names the clusters not there yet and
    what was last seen of each.
    """
    engine = engines.get(engine)
    wanted = condition or engine.ready_condition
    kind = engine.member_kind
    seen = {}

    def check(clusters):
        seen["clusters"] = clusters
        if name and not clusters:
            return False, "%s is not registered (no %s of that name)" % (name, kind.kind)
        pending = []
        if member is not None:
            add_agents(clusters, engine, member)
        for cluster in clusters:
            done, detail = resources.condition_met(cluster["object"], wanted)
            if not done:
                pending.append("%s: %s" % (cluster["name"], detail))
            agent = cluster.get("agent")
            if agent and agent["image"] and not agent["rolled_out"]:  # a Hosted klusterlet's agent is not on the member
                pending.append("%s: its agent has not rolled out image %s (%s)" % (
                    cluster["name"], agent["image"], agent["problem"] or "its Deployment's pods are not all updated "
                    "and available, or the operator has not yet given it the image it was asked for"))
        return not pending, "; ".join(pending)
    if name:
        subject = "member cluster %s on %s" % (name, hub.label)
    else:
        subject = "the member clusters on %s" % hub.label
    if label_selectors:
        subject += " matching %s" % ", ".join(label_selectors)
    what = resources.describe_condition(wanted) + (" and its agent to run its image" if member is not None else "")
    try:
        if name and member is None and not label_selectors:  # one object: followed with a watch
            cluster_names.validate_cluster_name(engine, name)
            resources.watch_until(hub, kind, name, lambda obj: check([summarize(engine, obj)] if obj else []),
                                  resources.Wait(timeout=timeout, interval=interval), "%s to have %s" % (subject, what))
        else:
            resources.wait_until(lambda: check(member_clusters(hub, engine, name, label_selectors)), timeout,
                                 "%s to have %s" % (subject, what), interval=interval)
    except WaitTimeout as exc:
        raise WaitTimeout(exc.msg, clusters=seen.get("clusters", []), **exc.details)
    return seen["clusters"]
