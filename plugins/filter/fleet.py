# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the playbooks use to read the inventory, check a member's settings, record failures and summarize the fleet.

``connection`` turns a host's inventory variables into the authentication options of its cluster, and
``fleet_member_settings`` gives a member's cluster name, registration mode and connection; ``fleet_settings_problem``
is the check of a member's settings that the member plays of site.yml, detach.yml and upgrade.yml start with (the
playbooks' own variables, ``fleet_variables_problem``, which every play checks, then ``fleet_member_problem``);
``fleet_failure_record`` is what their rescues record of a failed task; ``fleet_members``, ``fleet_report``,
``fleet_table`` and ``fleet_markdown`` make the summary at the end of site.yml, detach.yml and upgrade.yml;
``fleet_upgrade_stop`` is upgrade.yml's failure budget; ``fleet_evidence`` writes a piece of evidence of cluster_diagnose as
a line; ``fleet_engine_facts`` is what an engine does, which the roles and playbooks ask instead of its name. Their
documentation is in the ``<name>.yml`` files next to this one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import versions
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.auth_options import AUTH_OPTIONS
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

REASON_WIDTH = 60
COLUMNS = {
    "karmada": (("NAME", "name"), ("VERSION", "version"), ("MODE", "mode"), ("READY", "ready"), ("AGE", "age"),
                ("AGENT", "agent")),
    "ocm": (("NAME", "name"), ("HUB ACCEPTED", "accepted"), ("JOINED", "joined"), ("AVAILABLE", "ready"),
            ("AGE", "age"), ("AGENT", "agent")),
}
ACTIONS = {"register": "registered", "detach": "detached", "upgrade": "upgraded"}
DIAGNOSIS = ("verdict", "next_step", "evidence")  # what a failure record keeps of multicluster.fleet.cluster_diagnose
TAINT_FIELDS = ("key", "value", "effect")  # a taint of the inventory variable taints (module cluster_taint)


def _given(value):
    return value is not None and value != "" and value != [] and value != {}


def connection(variables, kubeconfig=None, context=None):
    """The authentication options of a cluster, from its inventory variables (a host's, or the fleet_hub dict).

    Only the options that are set are returned, so the result can be passed as a module's connection
    (``member: ...``, or ``module_defaults``). A cluster that names neither a kubeconfig nor a host
    uses ``kubeconfig`` (the fleet's multi-context kubeconfig, ``fleet_kubeconfig``) with its own
    ``context``, else with ``context`` (a member's cluster name); without a context it stays unnamed
    (the hub is then reached through the ``K8S_AUTH_*`` environment).
    """
    if not hasattr(variables, "get"):
        raise AnsibleFilterError("connection expects a mapping of inventory variables, got %s" % type(variables).__name__)
    found = dict((option, variables.get(option)) for option in AUTH_OPTIONS if _given(variables.get(option)))
    wanted = found.get("context") or context
    if _given(kubeconfig) and _given(wanted) and not found.get("kubeconfig") and not found.get("host"):
        found.update(kubeconfig=kubeconfig, context=wanted)
    return found


def _action(action, filter_name):
    if action not in ACTIONS:
        raise AnsibleFilterError("%s: action must be one of %s, not %r" % (filter_name, ", ".join(ACTIONS), action))
    return ACTIONS[action]


def _cluster_set_label_problem(engine, labels, cluster_set):
    """Inventory ``labels`` that set the engine's own cluster set label: cluster_label would put the member in one set,
    cluster_set (or, for a label removed, the hub's default set) in another, on every run. The set is cluster_set's;
    the label is let pass only with the value cluster_set names (an inventory the fleet inventory plugin built)."""
    if not labels or not hasattr(labels, "keys"):
        return ""
    # Imported here, not with this plugin: every task's worker that templates a filter of this file imports it, and
    # most of them (connection) need no engine.
    from ansible_collections.multicluster.fleet.plugins.module_utils import engines

    label = engines.get(engine).cluster_set_label if engine in engines.NAMES else None
    if not label or label not in labels:
        return ""
    value = labels[label]
    given = "labels sets %s=%s, the label that puts a cluster in a cluster set" % (label, value)
    if cluster_set is None or cluster_set == "":
        return "%s: name the member's set with cluster_set instead (cluster_set: %s) and leave %s out of labels" % (
            given, value, label)
    if value != cluster_set:
        return ("%s, and cluster_set names %s: each run would move the member from one set to the other; name its set"
                " with cluster_set alone and leave %s out of labels" % (given, cluster_set, label))
    return ""


# The facts of fleet_engine_facts that are Engine attributes of the same name (plugins/module_utils/engines.py).
ENGINE_FACTS = ("default_mode", "pull_only", "accepts_clients", "csr_auto_approval_setting", "cluster_set_label",
                "self_registration", "installs_control_plane", "grpc_registration", "service_account_join")


def fleet_engine_facts(engine):
    """What engine ``engine`` (its name) does, as the roles and playbooks ask it instead of comparing its name: ``name``,
    ``member_kind`` (the hub kind of a member cluster) and the :data:`ENGINE_FACTS` of its :class:`engines.Engine`.
    An unknown name fails with the message of :func:`engines.get`."""
    # Imported here, as in _cluster_set_label_problem: most tasks that template a filter of this file need no engine.
    from ansible_collections.multicluster.fleet.plugins.module_utils import engines

    try:
        found = engines.get(engine)
    except FleetError as exc:
        raise AnsibleFilterError(exc.msg)
    facts = {"name": found.name, "member_kind": found.member_kind.kind}
    facts.update((fact, getattr(found, fact)) for fact in ENGINE_FACTS)
    return facts


def fleet_member_problem(name, action, member, hub_host, hub):
    """The first problem with the settings of member ``name`` that stops the member play from ``action`` (register or
    detach) it, ``''`` when there is none.

    ``member`` holds its settings: ``mode``, its registration mode; ``connection``, its authentication options (the
    ``connection`` filter); ``twins``, the other hosts of the inventory that give its cluster the same name; and, checked
    for a registration, ``engine``, ``labels`` and ``cluster_set``. ``hub_host`` is the hub host (``''`` when the
    inventory has none) and ``hub`` the hub's variables - the hub host's, else the group variable ``fleet_hub`` -, None
    when there is neither. A registration also needs the join token of a hub play that started, and its inventory
    ``labels`` must not set the ``engine``'s own cluster set label (that is ``cluster_set``'s).
    """
    mode, connection, twins = member.get("mode"), member.get("connection") or {}, member.get("twins")
    done = _action(action, "fleet_member_problem")
    if mode not in ("push", "pull"):
        return "registration_mode must be push or pull, not %s" % mode
    if twins:
        return ("cluster_name %s is also the cluster name of %s in the inventory: a name stands for one cluster, so none"
                " of them is %s" % (name, ", ".join(twins), done))
    if "kubeconfig" not in connection and "host" not in connection:
        return ("no connection to the member: set its kubeconfig (and context) or host in the inventory, or"
                " fleet_kubeconfig with a context named %s" % name)
    if hub is None:
        return "no hub: the inventory has no hub host and no fleet_hub variable"
    if action != "detach" and "fleet_hub_started" in hub and "hub_init_join" not in hub:
        return "the hub play failed on %s (see its error above), so there is no join token" % hub_host
    if action == "register":
        return _inventory_values_problem(member) or _cluster_set_label_problem(
            member.get("engine"), member.get("labels"), member.get("cluster_set"))
    return ""


WAITS = ("fleet_wait_timeout", "fleet_wait_step", "fleet_hub_wait_timeout")  # whole numbers of seconds, at least 1


def fleet_variables_problem(variables, action=None, batches=None):
    """The first problem with the playbooks' own variables among ``variables`` (a host's), by their own names, ``''`` when
    none: ``fleet_engine`` names an engine, the waits of :data:`WAITS` are whole numbers of seconds, at least 1. For a run
    that installs (``action`` register or upgrade), then what it writes into image references
    (:func:`fleet_image_settings_problem`), and for an upgrade its ``batches`` (fleet_upgrade_batches, None when unset)."""
    if not hasattr(variables, "get"):
        raise AnsibleFilterError("fleet_variables_problem expects a mapping of variables, got %s" % type(variables).__name__)
    engine = variables["fleet_engine"] if "fleet_engine" in variables else "(not set)"
    if not _is_engine(engine):
        return "fleet_engine must be karmada or ocm, not %s" % (engine,)
    for name in WAITS:
        if name in variables:
            value = variables[name]
            if not re.match("[0-9]+$", str(value)) or int(str(value)) < 1:
                return "%s must be a whole number of seconds, at least 1, not %s" % (name, value)
    if action in ("register", "upgrade"):
        return fleet_image_settings_problem(variables) or (
            fleet_upgrade_batches_problem(batches) if action == "upgrade" else "")
    return ""


def fleet_member_settings(host, hostvars):
    """What the plays call a member host's ``name`` (its ``cluster_name``, else the host's name), ``mode`` (its
    ``registration_mode``, else the engine's default; the default for an engine that registers only by pull; None for an
    unknown ``fleet_engine``) and ``connection`` (its authentication variables, else ``fleet_kubeconfig`` with a context
    named after its cluster: :func:`connection`), from its variables in ``hostvars``."""
    variables = hostvars[host]
    name = variables["cluster_name"] if "cluster_name" in variables else host
    engine, mode = variables.get("fleet_engine"), None
    if _is_engine(engine):
        facts = fleet_engine_facts(engine)
        mode = facts["default_mode"] if facts["pull_only"] else variables.get("registration_mode", facts["default_mode"])
    return {"name": name, "mode": mode, "connection": connection(variables, variables.get("fleet_kubeconfig"), name)}


def fleet_settings_problem(host, hostvars, groups, action, batches=None):
    """The first problem with the settings of member host ``host`` for what the member play does to it (``action``,
    register, detach or upgrade, whose ``batches`` are checked too), ``''`` when none: the playbooks' own variables
    (:func:`fleet_variables_problem`), then :func:`fleet_member_problem` with the member's settings as the plays read them
    (:func:`fleet_member_settings`), the other hosts that give its cluster the same name (the hub's fact
    ``fleet_hosts_by_cluster_name`` when the hub play set it, else the members of ``groups``; the hub too when it
    registers with itself under that name) and the hub - the host of group hub, else the group variable ``fleet_hub``."""
    variables = hostvars[host]
    problem = fleet_variables_problem(variables, action if action in ("register", "upgrade") else None, batches)
    if problem:
        return problem
    member = fleet_member_settings(host, hostvars)
    hub_host = (list(groups.get("hub") or []) or [""])[0]
    hub = hostvars[hub_host] if hub_host else variables["fleet_hub"] if "fleet_hub" in variables else None
    by_name = (hub["fleet_hosts_by_cluster_name"] if hub_host and "fleet_hosts_by_cluster_name" in hub
               else fleet_cluster_hosts(groups.get("members"), hostvars))
    twins = [other for other in by_name.get(member["name"]) or [] if other != host]
    # As fleet_hub_registers_self and fleet_hub_self_name in playbooks/vars/fleet.yml.
    if boolean((hub or {}).get("hub_init_ocm_register_self", False), strict=False) and (
            (hub or {}).get("hub_init_ocm_self_name", "local-cluster") == member["name"]):
        twins.append(hub_host)
    settings = dict(member, twins=twins, engine=variables.get("fleet_engine"))
    settings.update((key, variables.get(key)) for key in ("labels", "annotations", "taints", "cluster_set"))
    return fleet_member_problem(member["name"], action, settings, hub_host, hub)


def _is_engine(value):
    """The test ``multicluster.fleet.engine`` (plugins/test/fleet.py): whether ``value`` names an engine."""
    # Imported here, as in _cluster_set_label_problem.
    from ansible_collections.multicluster.fleet.plugins.module_utils import engines

    return isinstance(value, str) and value in engines.NAMES


def _inventory_values_problem(member):
    """Inventory ``labels``, ``annotations`` or ``taints`` of a shape the hub step of site.yml cannot take (it passes
    every member's to one task, which would fail for all of them): the first such problem, ``''`` when none."""
    for option in ("labels", "annotations"):
        value = member.get(option)
        if value is not None and not hasattr(value, "keys"):
            return "%s must be a dict of keys and values, not %s" % (option, type(value).__name__)
    taints = member.get("taints")
    if taints is not None and not isinstance(taints, (list, tuple)):
        return "taints must be a list of taints (key, value, effect), not %s" % type(taints).__name__
    for index, taint in enumerate(taints or []):
        if not hasattr(taint, "keys") or "key" not in taint:
            return "taints[%d] must be a dict with a key (and value, effect), not %r" % (index, taint)
        unknown = sorted(set(taint) - set(TAINT_FIELDS))
        if unknown:
            return "taints[%d] has %s; a taint has only %s" % (index, ", ".join(unknown), ", ".join(TAINT_FIELDS))
    return ""


def fleet_failure_record(result, task, diagnosis=None):
    """What a rescue records of the task that failed: ``task``, its name (with the attempts of a task retried with
    ``until``), ``message``, the failure's message (``failed`` when it has none), and from ``diagnosis`` (a cluster of
    multicluster.fleet.cluster_diagnose's result, if any) its ``verdict``, ``next_step`` and ``evidence``."""
    attempts = result.get("attempts", 1)
    record = {"task": "%s%s" % (task, " (%s attempts)" % attempts if attempts > 1 else ""),
              "message": result.get("msg", "failed")}
    if result.get("downgrade"):  # the downgrade rule refused it (cluster_register): the member is not the problem
        record["downgrade"] = dict(result["downgrade"])
    elif (diagnosis or {}).get("verdict"):
        record.update((key, diagnosis.get(key)) for key in DIAGNOSIS)
    return record


def fleet_day2(hosts, hostvars):
    """What the inventory asks on the hub for the members of ``hosts`` that registered in this run (the fact
    ``fleet_done``, no ``fleet_failure``), one list per hub step of site.yml, each for one task: ``labels`` (per member
    ``name``, ``labels``, ``annotations``: cluster_label's ``per_cluster``), ``taints`` (``name`` and ``taints`` of the
    members that have taints: cluster_taint's ``per_cluster``), ``cluster_sets`` (per set named by a member's
    ``cluster_set``, its ``name`` and ``clusters``), and ``hosts``, ``{cluster name: host}``."""
    labels, taints, sets, names = [], [], {}, {}
    for host in hosts or []:
        facts = hostvars[host]
        if not facts.get("fleet_done") or facts.get("fleet_failure"):
            continue
        name = facts.get("cluster_name") or host
        names[name] = host
        labels.append({"name": name, "labels": facts.get("labels") or {}, "annotations": facts.get("annotations") or {}})
        if facts.get("taints"):
            taints.append({"name": name, "taints": facts["taints"]})
        if "cluster_set" in facts:
            sets.setdefault(facts["cluster_set"], []).append(name)
    return {"labels": labels, "taints": taints, "cluster_sets": [{"name": k, "clusters": v} for k, v in sets.items()],
            "hosts": names}


def fleet_day2_failures(day2, steps):
    """The members a hub step of site.yml failed: ``{host, name, task, message}`` each, in the order of ``steps``, a
    member once (its first failure). ``day2`` is what :func:`fleet_day2` gave the steps; ``steps`` are ``[part, task,
    result]``: the part of ``day2`` a task was given (``labels``, ``taints``, ``cluster_sets``, whose task loops over the
    sets), the task's name and its registered result. A failed result names its failed clusters (``clusters_failed``,
    with each one's message in ``cluster_errors``), else every cluster it was given failed with its message."""
    failures, seen = [], set()
    for part, task, result in steps:
        if "results" in result:  # a loop (cluster_sets): an item per set, with its clusters
            runs = [(one, (one.get("item") or {}).get("clusters") or []) for one in result["results"]]
        else:
            runs = [(result, [item["name"] for item in day2.get(part) or []])]
        for one, given in runs:
            if not one.get("failed"):
                continue
            errors = one.get("cluster_errors") or {}
            for name in one.get("clusters_failed") or given:
                if name not in seen and name in day2["hosts"]:
                    seen.add(name)
                    failures.append({"host": day2["hosts"][name], "name": name, "task": task,
                                     "message": errors.get(name) or one.get("msg") or "failed"})
    return failures


def fleet_member_connections(hosts, hostvars, kubeconfig=None, hubs=None):
    """The connections of member hosts ``hosts``, ``{name, <authentication options>}`` each (the ``connection`` filter
    with the member's cluster name as context), for those that have one of their own (a kubeconfig or host), as
    cluster_info's ``members`` takes them; first that of each hub of ``hubs`` registered with itself in this run (the
    fact ``fleet_member_name``, the name of its own cluster), whose connection is the hub's."""
    found = []
    for host in [h for h in hubs or [] if hostvars[h].get("fleet_member_name")] + list(hosts or []):
        facts = hostvars[host]
        name = facts.get("fleet_member_name") or facts.get("cluster_name") or host
        options = connection(facts, kubeconfig, None if facts.get("fleet_member_name") else name)
        if "kubeconfig" in options or "host" in options:
            found.append(dict(options, name=name))
    return found


def fleet_cluster_hosts(hosts, hostvars):
    """``{cluster name: [hosts]}``: the member ``hosts`` by the name each gives its cluster (``cluster_name``, else the
    host's name), in inventory order; a name with more than one host is given twice."""
    found = {}
    for host in hosts or []:
        found.setdefault(hostvars[host].get("cluster_name") or host, []).append(host)
    return found


def fleet_members(hosts, hostvars, hubs=None):
    """The members of the inventory and what this run did with each (facts the member plays set).

    ``ran`` is true for members this run's member play started (``fleet_started``, the result its first task
    registers, or a fact); members left out by ``--limit`` or another job slice did not run. ``failure`` is why
    the member failed and ``failed_task`` the task that failed (the fact ``fleet_failure``, a
    :func:`fleet_failure_record`); both ``''`` when it succeeded or did not run. A record with a verdict adds
    ``diagnosis``, its verdict, next step and evidence.

    ``hubs`` are the hub hosts: a hub whose play registered it with itself, or detached it, in this
    run is a member too, named ``fleet_member_name`` (the hub plays set it with the same facts).

    ``agent``, where the summary read it, is the member's agent (``fleet_agent``, a cluster_info result with member
    access: ``agent`` of its cluster). An upgrade (upgrade.yml) adds ``agent_before``, the agent before it
    (``fleet_agent_before``, read the same way), ``writes``, what the member's upgrade wrote or, in check mode, would write
    (``fleet_upgrade_writes``), and ``not_attempted``, why a member was left out of the rollout (``fleet_not_attempted``).
    The downgrade rule adds ``downgrade_refused`` (its failure record's ``downgrade``) or, when allowed, ``downgraded``
    (the registration's ``downgrade``): ``from`` and ``to``, the releases.
    """
    members = []
    hub_members = [host for host in hubs or [] if hostvars[host].get("fleet_member_name")]
    for host in hub_members + list(hosts or []):
        facts = hostvars[host]
        ran = bool(facts.get("fleet_started"))
        record = facts.get("fleet_failure") or {}
        failure, task = record.get("message") or "", record.get("task") or ""
        if ran and not failure and not facts.get("fleet_done"):
            failure = "did not finish (see the output above)"
        member = {"host": host, "name": facts.get("fleet_member_name") or facts.get("cluster_name") or host,
                  "ran": ran, "failure": failure, "failed_task": task}
        if record.get("verdict"):
            member["diagnosis"] = dict((key, record.get(key)) for key in DIAGNOSIS)
        if record.get("downgrade"):
            member["downgrade_refused"] = record["downgrade"]
        downgraded = (facts.get("agent_install_registration") or {}).get("downgrade")
        if downgraded and not failure:
            member["downgraded"] = downgraded
        for key, fact in (("agent", "fleet_agent"), ("agent_before", "fleet_agent_before")):
            agent = (((facts.get(fact) or {}).get("clusters") or [{}])[0]).get("agent")
            if agent:
                member[key] = agent
        hub_change = (facts.get("agent_install_registration") or {}).get("hub_change")
        if hub_change:
            member["hub_change"] = sorted(hub_change)
        if facts.get("fleet_upgrade_writes"):
            member["writes"] = list(facts["fleet_upgrade_writes"])
        if facts.get("fleet_not_attempted"):
            member["not_attempted"] = facts["fleet_not_attempted"]
        members.append(member)
    return members


def _age(created, now):
    """kubectl's AGE column (HumanDuration) for an RFC 3339 timestamp, '-' when unknown."""
    if not created:
        return "-"
    try:
        then = datetime.datetime.strptime(str(created), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return "-"
    seconds = max(int((now - then).total_seconds()), 0)
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return "%ds" % seconds
    if minutes < 10:
        return "%dm%ds" % (minutes, seconds % 60) if seconds % 60 else "%dm" % minutes
    if hours < 3:
        return "%dm" % minutes
    if hours < 8:
        return "%dh%dm" % (hours, minutes % 60) if minutes % 60 else "%dh" % hours
    if hours < 48:
        return "%dh" % hours
    if days < 8:
        return "%dd%dh" % (days, hours % 24) if hours % 24 else "%dd" % days
    if days < 365 * 2:
        return "%dd" % days
    return "%dy" % (days // 365)


def _not_ready(cluster):
    messages = [c.get("message") for c in cluster.get("conditions") or [] if c.get("message")]
    return "not ready: %s" % ("; ".join(messages) or "no conditions reported")


def fleet_report(members, clusters, engine, action="register", check_mode=False, now=None, cert_warning_days=30):
    """The rows of the fleet summary: every member cluster on the hub and every member of this run.

    A member of this run is ``failed`` (with its ``reason``) when its tasks failed or, after a
    registration or upgrade outside check mode, when the hub does not report it ready; otherwise ``registered``
    or ``detached``, and after an upgrade the result of :func:`_upgrade` with its ``detail``. Clusters on the hub that
    were not in this run are listed as they are, result ``-``.
    A member whose agent was read has its ``agent`` version and ``certificate_expiration``, and ``warning`` when that
    certificate expires within ``cert_warning_days`` days (or has expired). In check mode a member that a real run would
    refuse to downgrade is ``would downgrade`` (with the refusal as ``reason``; it fails like a failed member); a member
    whose downgrade was allowed says so in its ``detail``.
    """
    _action(action, "fleet_report")
    now = now or datetime.datetime.now(datetime.timezone.utc)
    found = dict((c["name"], c) for c in clusters or [])
    ran = [m for m in members or [] if m.get("ran") or m.get("not_attempted")]
    rows = []
    agents = dict((m["name"], m["agent"]) for m in members or [] if m.get("agent"))  # read by the member plays
    agents.update((c["name"], c["agent"]) for c in clusters or [] if c.get("agent"))  # read with the clusters
    for name in sorted(set(found) | set(m["name"] for m in ran)):
        cluster = found.get(name)
        # a row per host of this run: two hosts giving a cluster the same name each keep their own result
        for member in [m for m in ran if m["name"] == name] or [None]:
            row = _row(name, cluster, member, engine, action, check_mode, now)
            row.update(_agent(agents.get(name) if cluster else None, now, cert_warning_days))
            if action == "upgrade" and member and row["result"] not in ("failed", "would downgrade"):
                row.update(_upgrade(member, cluster, agents.get(name), check_mode))
            rows.append(row)
    return rows


def _image_change(before, after):
    """How the agent changed, from its image ``before`` to ``after``: the versions when only they differ, else the
    images (a registry or repository moved too)."""
    old, new = _tag_of(before), _tag_of(after)
    if old and new and old != new and before.replace(old[1], "") == after.replace(new[1], ""):
        return "%s -> %s" % (old[0], new[0])
    return "%s -> %s" % (before or "no agent", after or "no agent")


def _tag_of(image):
    """(version, the tag that names it) of an image reference, None without a tag."""
    name = str(image or "").split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    tag = last.split(":", 1)[1]
    return tag, ":" + tag


def _upgrade(member, cluster, agent, check_mode):
    """The ``result`` and ``detail`` of a member of an upgrade that did not fail: ``not attempted`` (the rollout stopped
    before its batch), ``no agent`` (a Karmada Push member: the hub drives it, nothing runs on it to upgrade),
    ``upgraded`` when its agent's image changed - the whole image, so a new registry at the same tag counts - or the
    upgrade wrote something else (CRDs, the operator), ``would upgrade`` in check mode with what it would write, else
    ``up to date``."""
    if member.get("not_attempted"):
        return {"result": "not attempted", "detail": member["not_attempted"]}
    if (cluster or {}).get("mode") == "Push":
        return {"result": "no agent", "detail": "a Push member runs no agent: the hub drives it"}
    before = (member.get("agent_before") or {}).get("image")
    after = (agent or {}).get("image")
    writes = member.get("writes") or []
    if check_mode:
        if writes:
            return {"result": "would upgrade", "detail": "; ".join(writes)}
        return {"result": "up to date", "detail": (agent or {}).get("version") or ""}
    if before and after and before != after:
        return {"result": "upgraded", "detail": _image_change(before, after)}
    if writes:
        return {"result": "upgraded", "detail": "; ".join(writes)}
    return {"result": "up to date", "detail": (agent or {}).get("version") or ""}


def fleet_upgrade_stop(hosts, hostvars, batch, max_fail_percentage=0):
    """Why the member of the batch ``batch`` (``ansible_play_batch``) is left out of the rollout, ``''`` when it is not.

    The rollout stops after a batch in which more than ``max_fail_percentage`` percent of the members failed (the
    percentage Ansible's ``max_fail_percentage`` counts): each member records its batch (``fleet_upgrade_batch``) and,
    when it fails, ``fleet_failure``; a member that started (``fleet_started``) and neither finished (``fleet_done``)
    nor recorded a failure failed too. Every batch after that one is left out.
    """
    try:
        budget = float(max_fail_percentage)
    except (TypeError, ValueError):
        raise AnsibleFilterError("fleet_upgrade_max_fail_percentage must be a number from 0 to 100, not %r"
                                 % (max_fail_percentage,))
    if not 0 <= budget <= 100:
        raise AnsibleFilterError("fleet_upgrade_max_fail_percentage must be a number from 0 to 100, not %r"
                                 % (max_fail_percentage,))
    current = list(batch or [])
    batches = []
    for host in hosts or []:
        members = list(hostvars[host].get("fleet_upgrade_batch") or [])
        if members and members != current and members not in batches:
            batches.append(members)
    for members in batches:
        failed = []
        for host in members:
            facts = hostvars[host]
            if facts.get("fleet_failure") or facts.get("fleet_started") and not facts.get("fleet_done"):
                failed.append(facts.get("cluster_name") or host)
        if failed and 100.0 * len(failed) / len(members) > budget:
            return ("the rollout stopped after the batch of %s: %d of %d failed (%s), more than "
                    "fleet_upgrade_max_fail_percentage %g%%" % (", ".join(members), len(failed), len(members),
                                                                ", ".join(failed), budget))
    return ""


# The image settings of the playbooks and roles, in the order they are checked: the inventory's releases first (what
# people set), then the roles' own variables (the releases, registries, image names and tags they write).
IMAGE_SETTINGS = ("karmada_version", "ocm_version", "hub_init_ocm_version", "hub_init_ocm_registry", "hub_init_ocm_tag",
                  "agent_install_karmada_version", "agent_install_karmada_image", "agent_install_ocm_version",
                  "agent_install_ocm_registry", "agent_install_ocm_tag")


def fleet_image_settings_problem(variables, names=None):
    """The first problem with the image settings among ``variables`` (a host's variables, or a role's settings as a
    dict): each of ``names`` (default :data:`IMAGE_SETTINGS`) that is set must be a release (``*_version``), a registry
    (``*_registry``), an image name without tag (``*_image``) or a tag (``*_tag``); '' when there is none."""
    if not hasattr(variables, "get"):
        raise AnsibleFilterError("fleet_image_settings_problem expects a mapping of variables, got %s"
                                 % type(variables).__name__)
    settings = {}
    for name in names or IMAGE_SETTINGS:
        if name in variables:
            settings[name] = variables[name]
    try:
        return versions.settings_problem(settings)
    except FleetError as exc:
        raise AnsibleFilterError(exc.msg)


def fleet_upgrade_batches_problem(batches):
    """Why ``batches`` (fleet_upgrade_batches; None when unset) is not a list of batch sizes, '' when it is one."""
    return versions.upgrade_batches_problem(batches)


def fleet_upgrade_serial(batches):
    """upgrade.yml's ``serial`` for ``batches`` (fleet_upgrade_batches; None when unset): the default, one member at a
    time when they are invalid (the play's first task fails every member, naming the problem), else them."""
    return versions.upgrade_serial(batches)


def fleet_downgrade(running, wanted):
    """``{"from": <release running>, "to": <release wanted>}`` when ``wanted`` (a release, tag or image) is an older
    release than ``running`` (an image or release), ``{}`` when it is not or either names no release."""
    found = versions.downgrade(running, wanted)
    return {"from": found[0], "to": found[1]} if found else {}


WRITES = (": created", ": updated", ": deleted")


def fleet_upgrade_writes(results):
    """What the tasks of a member's upgrade wrote (in check mode, would write): the entries of the task ``results``
    - ``objects`` of multicluster.fleet.k8s_objects, ``changes`` of multicluster.fleet.cluster_register, each
    ``[member|hub ]Kind/name: action`` - whose action is created, updated or deleted, in order."""
    writes = []
    for result in results or []:
        if not hasattr(result, "get"):
            raise AnsibleFilterError("fleet_upgrade_writes expects task results, got %s" % type(result).__name__)
        for entry in list(result.get("objects") or []) + list(result.get("changes") or []):
            if isinstance(entry, str) and entry.endswith(WRITES) and entry not in writes:
                writes.append(entry)
    return writes


def _agent(agent, now, warning_days):
    """The agent columns of a row: ``agent`` (its version), ``certificate_expiration`` and ``warning``."""
    if not agent:
        return {"agent": "-", "certificate_expiration": None, "warning": ""}
    expiration, warning = agent.get("certificate_expiration"), ""
    try:
        expires = datetime.datetime.strptime(str(expiration), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        expires = None
    if expires is not None and expires - now <= datetime.timedelta(days=int(warning_days)):
        warning = ("the agent certificate %s at %s" % ("expired" if expires <= now else "expires", expiration))
    return {"agent": agent.get("version") or "-", "certificate_expiration": expiration, "warning": warning}


def _row(name, cluster, member, engine, action, check_mode, now):
    """The summary row of cluster ``name`` (as the hub reports it, or None) and of ``member``, the host of this run
    that registered or detached it (or None)."""
    row = {"name": name, "host": member["host"] if member else None, "engine": engine,
           "mode": "-", "version": "-", "ready": "-", "accepted": "-", "joined": "-", "age": "-",
           "result": "-", "reason": "", "failed_task": ""}
    if cluster:
        row.update(mode=cluster.get("mode") or "-", version=cluster.get("kubernetes_version") or "-",
                   ready=cluster.get("ready"), age=_age(cluster.get("created"), now),
                   accepted=cluster.get("accepted") if cluster.get("accepted") is not None else "-",
                   joined=cluster.get("joined") if cluster.get("joined") is not None else "-")
    if member:
        reason = member.get("failure") or ""
        if not reason and action != "detach" and not check_mode and not member.get("not_attempted"):
            reason = "not registered on the hub" if cluster is None else "" if cluster.get("ready") else _not_ready(cluster)
        row.update(result="failed" if reason else ACTIONS[action], reason=reason,
                   failed_task=member.get("failed_task") or "" if reason else "")
        if reason and member.get("diagnosis"):
            row.update(member["diagnosis"])
        refused, downgraded = member.get("downgrade_refused"), member.get("downgraded")
        if reason and refused and check_mode:  # what a real run refuses, previewed
            row.update(result="would downgrade", reason="%s -> %s, refused: %s" % (refused["from"], refused["to"], reason))
        if not reason and downgraded:
            row["detail"] = "%s the agent from %s to %s (fleet_allow_downgrade)" % (
                "would downgrade" if check_mode else "downgraded", downgraded["from"], downgraded["to"])
        if member.get("hub_change") and not reason:
            row["hub_change"] = "%s its hub kubeconfigs for the hub's new %s" % (
                "would rewrite" if check_mode else "rewrote", " and ".join(member["hub_change"]))
    return row


def _short(text, width=REASON_WIDTH):
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _cells(row, engine):
    said = row.get("reason") or row.get("detail") or row.get("hub_change")
    result = row["result"] + (" (%s)" % row["verdict"] if row.get("verdict") else "") + (": " + _short(said) if said else "")
    return [str(row.get(key, "-")) for _title, key in COLUMNS[engine]] + [result]


def _columns(engine):
    if engine not in COLUMNS:
        raise AnsibleFilterError("unknown engine %r (karmada or ocm)" % engine)
    return [title for title, _key in COLUMNS[engine]] + ["RESULT"]


def fleet_table(rows, engine):
    """The summary as aligned text lines, with the columns of ``kubectl get clusters`` (Karmada) or
    ``kubectl get managedclusters`` (OCM) and RESULT, where a failed member's reason is shortened."""
    table = [_columns(engine)] + [_cells(row, engine) for row in rows or []]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]) - 1)]
    return ["   ".join([cell.ljust(width) for cell, width in zip(line, widths)] + [line[-1]]).rstrip() for line in table]


def fleet_evidence(item):
    """One piece of evidence of multicluster.fleet.cluster_diagnose as a line: object, field, value and age."""
    age = item.get("age")
    return "%s %s: %s%s" % (item.get("object"), item.get("field"), item.get("value"),
                            "" if not age else " (%s)" % age if age.startswith("in ") else " (%s ago)" % age)


# What Markdown (CommonMark, GitHub's tables and strikethrough) would read as markup in a line of text: code spans, emphasis,
# links and images, raw HTML and autolinks, entities, table cells; an underscore only where it can start or end emphasis
# (not inside a word, so that names such as fleet_wait_timeout stay as they are).
MARKDOWN_SPECIAL = re.compile(r"[\\`*\[\]<>|~&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def markdown_text(value):
    """``value`` as literal text on one line of a Markdown document: whitespace and newlines folded into single spaces
    (no new block - heading, list, table row - can start), every character Markdown reads as markup escaped with a
    backslash (no link, image, HTML, emphasis or code span). For text the hub or a member's agent supplied: its
    conditions, versions and messages."""
    return MARKDOWN_SPECIAL.sub(lambda found: "\\" + found.group(0), " ".join(str(value).split()))


def fleet_markdown(rows, engine, title="Fleet summary"):
    """The summary as a Markdown document: the table, then every failed member with its whole reason, then every
    member whose agent certificate expires soon. Every value from the rows is literal text (:func:`markdown_text`): a
    member's agent writes its cluster's conditions and version on the hub, and reasons quote them."""
    columns = _columns(engine)
    lines = ["# %s" % markdown_text(title), "", "| %s |" % " | ".join(columns), "|" + "---|" * len(columns)]
    for row in rows or []:
        lines.append("| %s |" % " | ".join(markdown_text(cell) for cell in _cells(row, engine)))
    failed = [row for row in rows or [] if row.get("reason")]
    if failed:
        lines += ["", "## Failed members", ""]
        for row in failed:
            verdict = " (%s)" % markdown_text(row["verdict"]) if row.get("verdict") else ""
            task = "%s: " % markdown_text(row["failed_task"]) if row.get("failed_task") else ""
            lines.append("- **%s**%s: %s%s" % (markdown_text(row["name"]), verdict, task, markdown_text(row["reason"])))
            lines += ["  - evidence: %s" % markdown_text(fleet_evidence(item)) for item in row.get("evidence") or []]
            if row.get("next_step"):
                lines.append("  - next step: %s" % markdown_text(row["next_step"]))
    expiring = [row for row in rows or [] if row.get("warning")]
    if expiring:
        lines += ["", "## Agent certificates expiring soon", ""]
        lines += ["- **%s**: %s" % (markdown_text(row["name"]), markdown_text(row["warning"])) for row in expiring]
    return "\n".join(lines) + "\n"


class FilterModule(object):
    def filters(self):
        return {
            "connection": connection,
            "fleet_member_problem": fleet_member_problem,
            "fleet_member_settings": fleet_member_settings,
            "fleet_settings_problem": fleet_settings_problem,
            "fleet_variables_problem": fleet_variables_problem,
            "fleet_failure_record": fleet_failure_record,
            "fleet_members": fleet_members,
            "fleet_cluster_hosts": fleet_cluster_hosts,
            "fleet_member_connections": fleet_member_connections,
            "fleet_day2": fleet_day2,
            "fleet_day2_failures": fleet_day2_failures,
            "fleet_report": fleet_report,
            "fleet_table": fleet_table,
            "fleet_markdown": fleet_markdown,
            "fleet_evidence": fleet_evidence,
            "fleet_upgrade_stop": fleet_upgrade_stop,
            "fleet_upgrade_writes": fleet_upgrade_writes,
            "fleet_image_settings_problem": fleet_image_settings_problem,
            "fleet_upgrade_batches_problem": fleet_upgrade_batches_problem,
            "fleet_upgrade_serial": fleet_upgrade_serial,
            "fleet_downgrade": fleet_downgrade,
            "fleet_engine_facts": fleet_engine_facts,
        }
