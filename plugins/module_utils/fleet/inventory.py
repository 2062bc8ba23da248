# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet as an Ansible inventory: what the ``multicluster.fleet.fleet`` inventory plugin builds.

Every member cluster registered on the hub becomes a host named after the cluster, the hub one more
host; each host carries the variables the playbooks read (``cluster_name``, ``registration_mode``,
``provider``, ``region``, ``zones``, ``labels``, ``annotations``, ``cluster_set``, and where known the
connection settings ``kubeconfig`` and ``context``) and what the hub reports about the cluster (``fleet_*``,
``cordoned``); cordoned members are also in group ``cordoned``, members of a cluster set in ``cluster_set_<set>``.
Members' credentials are not on the hub: :class:`MemberMapping` says which kubeconfig and context reach each of them.

No secret ever becomes an inventory variable (AWX shows them): the hub's bearer token and a
kubeconfig given as a dictionary stay with the connection that reads the hub.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import versions
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import hub_members
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.auth_options import AUTH_OPTIONS
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

HUB_GROUP = "hub"
MEMBERS_GROUP = "members"
MODES = ("push", "pull")
# The hub's connection settings an inventory may show: every authentication option except the bearer token.
SHOWN_CONNECTION = tuple(option for option in AUTH_OPTIONS if option != "api_key")
# What the hub reports about a member that the inventory keeps (and caches): the summary without the object.
OBSERVED = ("name", "mode", "id", "api_endpoint", "kubernetes_version", "ready", "joined", "accepted",
            "provider", "region", "zones", "labels", "annotations", "taints", "cordoned", "cluster_set")
# Host variable -> summary key of the facts the hub reports.
FACTS = (("fleet_mode", "mode"), ("fleet_cluster_id", "id"), ("fleet_api_endpoint", "api_endpoint"),
         ("fleet_kubernetes_version", "kubernetes_version"), ("fleet_joined", "joined"),
         ("fleet_accepted", "accepted"), ("fleet_taints", "taints"))
# Summary keys that are also inputs of the playbooks (site.yml passes them on when it registers the member). Not the
# taints (fact fleet_taints): they hold the hub's own (unreachable, not-ready), which no inventory may set.
PLACEMENT = ("provider", "region", "zones", "labels", "annotations", "cluster_set")
CORDONED_GROUP = "cordoned"
OUTDATED_GROUP = "agent_outdated"
CLUSTER_SET_PREFIX = "cluster_set_"
ENTRY_KEYS = ("name", "pattern", "kubeconfig", "context", "vars")


def observe(hub, engine):
    """What ``hub`` reports about its member clusters, as plain data fit for an inventory cache."""
    return [dict((key, summary[key]) for key in OBSERVED) for summary in hub_members.member_clusters(hub, engine)]


def observe_agents(engine, clusters, mapping):
    """Add ``agent_version`` to each of ``clusters`` (what :func:`observe` returned) that runs an agent (not a Karmada
    Push member) and that ``mapping`` gives a kubeconfig: its agent's version as the member shows it
    (:meth:`engines.Engine.read_agent`), None when it cannot be read. Returns the warnings, one per member not read."""
    engine = engines.get(engine)
    warnings = []
    for cluster in clusters:
        settings = mapping.connection(cluster["name"])
        if (cluster.get("mode") or "").lower() == "push" or "kubeconfig" not in settings:
            continue
        try:
            member = client.get_cluster(client.connection_options(settings, environment=False), cluster["name"], "member")
            agent = engine.read_agent(member)
        except FleetError as exc:
            agent = {"version": None, "problem": exc.msg}
        cluster["agent_version"] = agent["version"]
        if agent["version"] is None:
            warnings.append("the agent version of cluster %s is unknown: %s" % (cluster["name"], agent["problem"]))
    return warnings


def engine_group(engine):
    return "engine_%s" % engine


def mode_group(mode):
    return "mode_%s" % mode


def ready_group(ready):
    return "ready" if ready else "not_ready"


def cluster_set_group(name):
    """``cluster_set_<name>``, the characters a group name cannot hold as ``_``."""
    return CLUSTER_SET_PREFIX + re.sub(r"[^A-Za-z0-9_]", "_", name)


class Host:
    """One inventory host: its ``name``, its variables and the groups it belongs to."""

    def __init__(self, name, variables, groups):
        self.name = name
        self.vars = variables
        self.groups = groups


class Fleet:
    """The inventory of one hub: ``hub`` and ``members`` (:class:`Host`), ``groups`` (every group name,
    whether it holds a host or not), ``group_vars`` (group name -> variables) and ``warnings`` (clusters left out)."""

    def __init__(self, hub, members, groups, group_vars, warnings=()):
        self.hub = hub
        self.members = members
        self.groups = groups
        self.group_vars = group_vars
        self.warnings = list(warnings)


class MemberMapping:
    """Which kubeconfig and context reach each member cluster, and which members are declared.

    ``entries`` are dicts with ``name`` (one cluster) or ``pattern`` (an fnmatch pattern of cluster
    names), and any of ``kubeconfig``, ``context`` and ``vars`` (host variables). Every entry that
    matches a cluster contributes; where two set the same setting or variable, the earlier one wins.
    Without a kubeconfig from an entry, ``members_kubeconfig`` (a kubeconfig whose contexts are named
    after the clusters) applies. The context defaults to the cluster's name when the kubeconfig is
    shared - ``members_kubeconfig`` or a pattern entry's - and to the kubeconfig's current context
    when a name entry gives it. A cluster nothing maps gets no connection settings: the playbooks then
    reach it through ``fleet_kubeconfig`` (the AWX credential) with its name as the context.

    Clusters named by a ``name`` entry are declared: they become hosts even before they register.
    """

    def __init__(self, entries=None, members_kubeconfig=None):
        self.entries = [self._checked(index, entry) for index, entry in enumerate(entries or [])]
        self.members_kubeconfig = members_kubeconfig or None

    @staticmethod
    def _checked(index, entry):
        where = "members[%d]" % index
        if not isinstance(entry, dict):
            raise FleetError("%s must be a dictionary with name or pattern, and kubeconfig, context or vars; got %r"
                             % (where, entry))
        unknown = sorted(set(entry) - set(ENTRY_KEYS))
        if unknown:
            raise FleetError("%s: unknown key(s) %s; an entry takes %s" % (where, ", ".join(unknown), ", ".join(ENTRY_KEYS)))
        given = [key for key in ("name", "pattern") if entry.get(key)]
        if len(given) != 1:
            raise FleetError("%s needs exactly one of name (a cluster) or pattern (cluster names, fnmatch style), got %s"
                             % (where, " and ".join(given) or "neither"))
        for key in ("name", "pattern", "kubeconfig", "context"):
            if entry.get(key) is not None and not isinstance(entry[key], str):
                raise FleetError("%s: %s must be a string, got %r" % (where, key, entry[key]))
        if not isinstance(entry.get("vars") or {}, dict):
            raise FleetError("%s: vars must be a dictionary of host variables, got %r" % (where, entry["vars"]))
        mode = (entry.get("vars") or {}).get("registration_mode")
        if mode is not None and mode not in MODES:
            raise FleetError("%s: vars.registration_mode must be push or pull, got %r" % (where, mode))
        return entry

    def declared(self):
        """The cluster names the entries name, in their order."""
        return [entry["name"] for entry in self.entries if entry.get("name")]

    def _matching(self, name):
        for entry in self.entries:
            if entry.get("name") == name or entry.get("pattern") and fnmatch.fnmatchcase(name, entry["pattern"]):
                yield entry

    def connection(self, name):
        """The ``kubeconfig`` and ``context`` host variables of cluster ``name`` (only those that are set)."""
        settings = {}
        for entry in self._matching(name):
            if entry.get("kubeconfig") and "kubeconfig" not in settings:
                settings["kubeconfig"] = entry["kubeconfig"]
                if entry.get("pattern") and not entry.get("context"):
                    settings.setdefault("context", name)
            if entry.get("context"):
                settings.setdefault("context", entry["context"])
        if "kubeconfig" not in settings and self.members_kubeconfig:
            settings["kubeconfig"] = self.members_kubeconfig
            settings.setdefault("context", name)
        return settings

    def variables(self, name):
        """The host variables the entries matching ``name`` give (``vars``), earlier entries first."""
        merged = {}
        for entry in reversed(list(self._matching(name))):
            merged.update(entry.get("vars") or {})
        return merged


def hub_settings(options):
    """The hub connection settings of ``options`` that may become inventory variables: given, and no secret.

    The bearer token never does, nor a kubeconfig given as a dictionary (it holds the user's credentials).
    """
    return dict((option, options[option]) for option in SHOWN_CONNECTION
                if options.get(option) not in (None, "", []) and not isinstance(options[option], dict))


def member_vars(engine, name, observed, mapping):
    """The host variables of member ``name``: what the hub reports (``observed``, None when it has not
    registered), the connection settings ``mapping`` gives, then the declared variables, which win."""
    variables = {"ansible_connection": "local", "cluster_name": name}
    if observed is None:
        variables.update(registration_mode=engines.get(engine).default_mode, fleet_registered=False, fleet_ready=False,
                         cordoned=False)
        variables.update((var, None) for var, _key in FACTS)
    else:
        variables["registration_mode"] = (observed.get("mode") or engines.get(engine).default_mode).lower()
        variables.update((key, observed[key]) for key in PLACEMENT if observed.get(key) not in (None, "", [], {}))
        variables.update(fleet_registered=True, fleet_ready=bool(observed.get("ready")), cordoned=bool(observed.get("cordoned")))
        variables.update((var, observed.get(key)) for var, key in FACTS)
        if "agent_version" in observed:
            variables["agent_version"] = observed["agent_version"]
    variables.update(mapping.connection(name))
    variables.update(mapping.variables(name))
    return variables


def build(engine, clusters, mapping, hub_host, hub_options, hub_apiserver=None, hub_vars=None, target_agent_version=None):
    """The inventory of the hub whose members are ``clusters`` (what :func:`observe` returned).

    With ``target_agent_version``, group ``agent_outdated`` holds the members whose ``agent_version`` (see
    :func:`observe_agents`) is an older release.

    ``hub_options`` are the hub's authentication options as the inventory source gives them; the
    non-secret ones (:func:`hub_settings`) become the hub host's variables and, with ``hub_apiserver``
    (the URL members reach the hub at), ``hub_vars`` (more variables of the hub, such as ``hub_init_*``
    settings) and the hub's host name, the group variable ``fleet_hub`` of ``members``: a member's play
    finds the hub there when the hub is not in its inventory (AWX job slicing).
    """
    engines.get(engine)  # a known engine
    if not isinstance(hub_vars or {}, dict):
        raise FleetError("hub_vars must be a dictionary of variables, got %r" % (hub_vars,))
    all_groups = ([HUB_GROUP, MEMBERS_GROUP, engine_group(engine)] + [mode_group(m) for m in MODES]
                  + [ready_group(True), ready_group(False), CORDONED_GROUP]
                  + ([OUTDATED_GROUP] if target_agent_version else []))
    if hub_host in all_groups:
        raise FleetError("hub_host %r is the name of a group of this inventory; set hub_host to another name" % hub_host)
    if hub_host in mapping.declared():
        raise FleetError("the hub's host name %r is also the name of a member cluster; set hub_host to another name"
                         % hub_host)
    reserved = set([hub_host] + all_groups)
    clashing = sorted(reserved & set(mapping.declared()))
    if clashing:
        raise FleetError("members declares %s, the name of a group of this inventory; a member cluster cannot be named so"
                         % ", ".join(clashing))
    # A cluster on the hub may be named by anyone who can create one (a pull agent, a join token holder): one named
    # like the hub host or a group is left out, never allowed to replace the hub or fail the whole inventory.
    observed, warnings = {}, []
    for cluster in clusters:
        if cluster["name"] in reserved:
            warnings.append("cluster %r on the hub is left out: %s" % (cluster["name"], (
                "the inventory's hub host has that name (rename the cluster, or set hub_host to another name)"
                if cluster["name"] == hub_host else "a group of the inventory has that name (rename the cluster)")))
        else:
            observed[cluster["name"]] = cluster
    settings = hub_settings(hub_options)
    if hub_apiserver:
        settings["hub_apiserver"] = hub_apiserver
    settings.update(hub_vars or {})
    hub = Host(hub_host, dict(settings, ansible_connection="local"), [HUB_GROUP, engine_group(engine)])
    members = []
    for name in sorted(set(observed) | set(mapping.declared())):
        variables = member_vars(engine, name, observed.get(name), mapping)
        groups = [MEMBERS_GROUP, engine_group(engine), mode_group(variables["registration_mode"]),
                  ready_group(variables["fleet_ready"])]
        groups += [CORDONED_GROUP] if variables["cordoned"] else []
        groups += [cluster_set_group(variables["cluster_set"])] if variables.get("cluster_set") else []
        if target_agent_version and versions.outdated(variables.get("agent_version"), target_agent_version):
            groups.append(OUTDATED_GROUP)
        members.append(Host(name, variables, groups))
    group_vars = {engine_group(engine): {"fleet_engine": engine},
                  MEMBERS_GROUP: {"fleet_hub": dict(settings, name=hub_host)}}
    set_groups = sorted(set(group for member in members for group in member.groups if group.startswith(CLUSTER_SET_PREFIX)))
    return Fleet(hub, members, all_groups + set_groups, group_vars, warnings)
