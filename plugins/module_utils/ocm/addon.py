# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OCM add-ons: the ClusterManagementAddOn, per-cluster ManagedClusterAddOns and AddOnDeploymentConfigs.

An add-on is registered on the hub by a cluster-scoped ClusterManagementAddOn (``addon.open-cluster-management.io/
v1alpha1``) with its supported configs (and their defaults) and an install strategy: ``Manual`` (users create a
ManagedClusterAddOn of the same name in each cluster namespace) or ``Placements`` (the add-on manager creates them
in the namespaces of the clusters the named Placements decide, rolling configuration changes out as each
placement's rollout strategy says; the lifecycle annotation ``addon.open-cluster-management.io/lifecycle:
addon-manager`` hands the add-on to the add-on manager).

Configs override by group and resource: a ManagedClusterAddOn's ``spec.configs`` win over the configs of the
placement that selects the cluster, which win over the supported configs' defaults. The add-on manager records
the result in the ManagedClusterAddOn's ``status.configReferences`` (``desiredConfig`` with the config's spec
hash, ``lastAppliedConfig`` once the agent runs with it). Deleting the ClusterManagementAddOn uninstalls the
add-on everywhere: its ManagedClusterAddOns are owned by it and go with it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import re

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import placement
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout

LIFECYCLE_ANNOTATION = "addon.open-cluster-management.io/lifecycle"
ADDON_MANAGER = "addon-manager"
MANUAL = "Manual"
PLACEMENTS = "Placements"
INSTALL_TYPES = (MANUAL, PLACEMENTS)
# Rollout type -> the field holding its settings.
ROLLOUT_TYPES = {"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}
DEFAULT_INSTALL_NAMESPACE = "open-cluster-management-agent-addon"
CONFIG_GROUP = "addon.open-cluster-management.io"
DEPLOYMENT_CONFIGS = "addondeploymentconfigs"
AVAILABLE = "Available"
DEGRADED = "Degraded"
PROGRESSING = "Progressing"
CONFIGURED = "Configured"
HEALTH = (AVAILABLE, DEGRADED, PROGRESSING)
ROLLOUT_SIZE_RE = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)\Z")
DURATION_RE = re.compile(r"^(0|([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+)\Z")  # Go's time.ParseDuration, as minSuccessTime
DEADLINE_RE = re.compile(r"^([0-9]+[hms]|None)\Z")
VARIABLE_RE = re.compile(r"^[a-zA-Z_][_a-zA-Z0-9]*\Z")
CONTAINER_ID_RE = re.compile(r"^(deployments|daemonsets|statefulsets|replicasets|jobs|cronjobs|pods|\*):.+:.+\Z")
NAMESPACE_RE = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?\Z")


# --- configs ----------------------------------------------------------------------------------------

def config_ref(option):
    """An add-on config reference (group, resource, name, namespace) from the module's config option.

    Like every list item this collection writes, it carries all its fields, ``None`` when unset: list items are
    compared field by field, so a field left out would let a stored value pass for the desired one.
    """
    return {"group": option.get("group", CONFIG_GROUP), "resource": option.get("resource") or DEPLOYMENT_CONFIGS,
            "name": option["name"], "namespace": option.get("namespace") or None}


def _group_resource(ref):
    return (ref.get("group") or "", ref["resource"])


def _describe(group_resource):
    group, resource = group_resource
    return "%s.%s" % (resource, group) if group else resource


def _check_supported(refs, supported, where):
    for ref in refs:
        if _group_resource(ref) not in supported:
            raise FleetError("%s: config %s %s is of a kind the add-on does not support; add %s to supported_configs"
                             % (where, _describe(_group_resource(ref)), _referent(ref), _describe(_group_resource(ref))))


def _referent(ref):
    return "%s/%s" % (ref["namespace"], ref["name"]) if ref.get("namespace") else ref["name"]


def override(configs, overrides):
    """``configs`` with every group/resource that ``overrides`` names replaced by the overriding configs."""
    replaced = set(_group_resource(ref) for ref in overrides)
    return [ref for ref in configs if _group_resource(ref) not in replaced] + list(overrides)


def effective_configs(addon_spec, placement_ref, cluster_configs):
    """The configs an add-on on one cluster uses: per cluster over per placement over the supported configs' defaults.

    ``placement_ref`` is ``(namespace, name)`` of the install strategy's placement that selects the cluster (the
    last one in the list when several do), or None.
    """
    defaults = [dict(c["defaultConfig"], group=c.get("group") or "", resource=c["resource"])
                for c in addon_spec.get("supportedConfigs") or [] if (c.get("defaultConfig") or {}).get("name")]
    configs = defaults
    for strategy in (addon_spec.get("installStrategy") or {}).get("placements") or []:
        if (strategy["namespace"], strategy["name"]) == placement_ref:
            configs = override(configs, strategy.get("configs") or [])
    return sorted(override(configs, cluster_configs or []), key=_config_key)


def _config_key(ref):
    return (ref.get("group") or "", ref["resource"], ref.get("namespace") or "", ref["name"])


def config_spec_hash(obj):
    """The spec hash OCM records for a config: SHA-256 of the JSON of every field but apiVersion, kind, metadata
    and status, with sorted keys and HTML characters escaped as Go's encoding/json writes it."""
    fields = dict((k, v) for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status"))
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), (u"\u2028", "\\u2028"), (u"\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- rollout strategies -----------------------------------------------------------------------------

def rollout_size(value, where):
    """``maxConcurrency`` / ``maxFailures``: a number of clusters or a percentage up to 100%."""
    text = str(value).strip()
    if isinstance(value, bool) or not ROLLOUT_SIZE_RE.match(text):
        if re.match(r"^[0-9]+(\.[0-9]+)?%\Z", text):
            raise FleetError("%s %s is above 100%%: give a percentage of the placement's clusters up to 100%%" % (where, text))
        raise FleetError("%s %r must be a number of clusters (such as 2) or a percentage up to 100%% (such as 25%%)"
                         % (where, value))
    return text if text.endswith("%") else int(text)


def _mandatory_groups(groups, where):
    result = []
    for index, group in enumerate(groups or []):
        name, number = group.get("group_name"), group.get("group_index")
        if (name is None) == (number is None):
            raise FleetError("%s.mandatory_decision_groups[%d]: give either group_name or group_index" % (where, index))
        result.append({"groupName": name, "groupIndex": number})
    return result


def rollout_strategy(option, where):
    """``rolloutStrategy`` from the module's ``rollout_strategy``; settings that do not apply to the type fail.

    The settings of the type are written when any is given, with the API's defaults for the others
    (``minSuccessTime`` 0, ``progressDeadline`` None, ``maxFailures`` 0); the other types' settings are ``None``.
    """
    option = option or {}
    kind = option.get("type") or "All"
    if kind not in ROLLOUT_TYPES:
        raise FleetError("%s: unknown rollout_strategy.type %r; use one of %s" % (where, kind, ", ".join(ROLLOUT_TYPES)))
    where = "%s rollout_strategy" % where
    for option_name, allowed in (("max_concurrency", ("Progressive",)),
                                 ("mandatory_decision_groups", ("Progressive", "ProgressivePerGroup"))):
        if option.get(option_name) and kind not in allowed:
            raise FleetError("%s: %s applies to type %s, not %s" % (where, option_name, " and ".join(allowed), kind))
    min_success_time = option.get("min_success_time")
    if min_success_time is not None and not DURATION_RE.match(str(min_success_time)):
        raise FleetError("%s: min_success_time %r must be a duration such as 5m, 1h30m or 0" % (where, min_success_time))
    deadline = option.get("progress_deadline")
    if deadline is not None and not DEADLINE_RE.match(str(deadline)):
        raise FleetError("%s: progress_deadline %r must be a number with a unit h, m or s (such as 10m), or None" % (where, deadline))
    settings = {
        "minSuccessTime": "0" if min_success_time is None else str(min_success_time),
        "progressDeadline": "None" if deadline is None else str(deadline),
        "maxFailures": 0 if option.get("max_failures") is None else rollout_size(option["max_failures"], where + ": max_failures"),
    }
    if kind != "All":
        settings["mandatoryDecisionGroups"] = _mandatory_groups(option.get("mandatory_decision_groups"), where) or None
    if kind == "Progressive":
        settings["maxConcurrency"] = (None if option.get("max_concurrency") is None
                                      else rollout_size(option["max_concurrency"], where + ": max_concurrency"))
    given = any(option.get(k) is not None for k in ("min_success_time", "progress_deadline", "max_failures",
                                                    "max_concurrency", "mandatory_decision_groups"))
    strategy = dict((field, None) for field in ROLLOUT_TYPES.values())
    strategy.update(type=kind, **{ROLLOUT_TYPES[kind]: settings if given else None})
    return strategy


# --- building the objects ---------------------------------------------------------------------------

def _supported_configs(options):
    supported, seen = [], {}
    for index, option in enumerate(options or []):
        item = {"group": option.get("group", CONFIG_GROUP), "resource": option.get("resource") or DEPLOYMENT_CONFIGS,
                "defaultConfig": None}
        key = _group_resource(item)
        if key in seen:
            raise FleetError("supported_configs[%d]: %s is already supported_configs[%d]; each group and resource once "
                             "(one default config each)" % (index, _describe(key), seen[key]))
        seen[key] = index
        default = option.get("default_config")
        if default:
            item["defaultConfig"] = {"name": default["name"], "namespace": default.get("namespace") or None}
        supported.append(item)
    return supported


def _placement_strategies(options, supported):
    strategies, seen = [], set()
    for index, option in enumerate(options or []):
        ref = (option["namespace"], option["name"])
        where = "install_strategy.placements[%d] (%s/%s)" % (index, ref[0], ref[1])
        if ref in seen:
            raise FleetError("%s: the placement is listed twice" % where)
        seen.add(ref)
        configs = [config_ref(c) for c in option.get("configs") or []]
        _check_supported(configs, supported, where)
        strategies.append({"name": option["name"], "namespace": option["namespace"], "configs": configs or None,
                           "rolloutStrategy": rollout_strategy(option.get("rollout_strategy"), where)})
    return strategies


def cluster_management_addon(name, display_name=None, description=None, supported_configs=None, install_strategy=None):
    """The ClusterManagementAddOn; with install strategy Placements it carries the add-on manager's lifecycle annotation."""
    install_strategy = install_strategy or {}
    kind = install_strategy.get("type") or MANUAL
    options = install_strategy.get("placements") or []
    if kind == MANUAL and options:
        raise FleetError("install_strategy.placements apply to type Placements, not Manual")
    if kind == PLACEMENTS and not options:
        raise FleetError("install_strategy type Placements needs at least one entry in install_strategy.placements")
    supported = _supported_configs(supported_configs)
    strategies = _placement_strategies(options, set(_group_resource(c) for c in supported))
    metadata = {"name": name}
    if kind == PLACEMENTS:
        metadata["annotations"] = {LIFECYCLE_ANNOTATION: ADDON_MANAGER}
    return {"metadata": metadata, "spec": {
        "addOnMeta": {"displayName": display_name, "description": description},
        "supportedConfigs": supported or None,
        "installStrategy": {"type": kind, "placements": strategies or None},
    }}


def managed_cluster_addon(name, option, supported):
    """The ManagedClusterAddOn of one ``clusters`` entry, in the cluster's namespace."""
    configs = [config_ref(c) for c in option.get("configs") or []]
    _check_supported(configs, supported, "clusters entry %s" % option["name"])
    return {"metadata": {"name": name, "namespace": option["name"]}, "spec": {
        "installNamespace": option.get("install_namespace") or DEFAULT_INSTALL_NAMESPACE,
        "configs": configs or None,
    }}


def deployment_config(name, namespace, customized_variables=None, node_placement=None, registries=None,
                      proxy_config=None, agent_install_namespace=None, resource_requirements=None):
    """An AddOnDeploymentConfig; unset fields are ``None`` so an update removes them."""
    variables = []
    for key, value in (customized_variables or {}).items():
        if not VARIABLE_RE.match(key) or len(key) > 255:
            raise FleetError("customized_variables: %r is not a valid variable name (letters, digits and _, not starting "
                             "with a digit, at most 255 characters)" % key)
        text = "" if value is None else (json.dumps(value) if isinstance(value, bool) else str(value))
        if len(text) > 1024:
            raise FleetError("customized_variables: the value of %s is longer than 1024 characters" % key)
        variables.append({"name": key, "value": text})
    namespace_option = DEFAULT_INSTALL_NAMESPACE if agent_install_namespace is None else agent_install_namespace
    if len(namespace_option) > 63 or not NAMESPACE_RE.match(namespace_option):
        raise FleetError("agent_install_namespace %r is not a valid namespace name (or empty)" % namespace_option)
    requirements = []
    for index, item in enumerate(resource_requirements or []):
        if not CONTAINER_ID_RE.match(item["container_id"]):
            raise FleetError("resource_requirements[%d]: container_id %r must be <resource type>:<name>:<container>, "
                             "for example deployments:*:* or *:*:*" % (index, item["container_id"]))
        resources.check_requests_within_limits(item.get("requests"), item.get("limits"), "resource_requirements[%d]" % index)
        requirements.append({"containerID": item["container_id"],
                             "resources": {"requests": item.get("requests") or None, "limits": item.get("limits") or None}})
    placement_option = node_placement or {}
    proxy = proxy_config or {}
    ca_bundle = proxy.get("ca_bundle")
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {
        "customizedVariables": variables or None,
        "nodePlacement": {"nodeSelector": placement_option.get("node_selector") or None,
                          "tolerations": placement_option.get("tolerations") or None} if node_placement else None,
        "registries": [{"source": r.get("source") or None, "mirror": r["mirror"]} for r in registries or []] or None,
        "proxyConfig": {"httpProxy": proxy.get("http_proxy"), "httpsProxy": proxy.get("https_proxy"),
                        "noProxy": proxy.get("no_proxy"),
                        "caBundle": base64.b64encode(ca_bundle.encode("utf-8")).decode("ascii") if ca_bundle else None}
        if proxy_config else None,
        "agentInstallNamespace": namespace_option,
        "resourceRequirements": requirements or None,
    }}


# --- reading status ---------------------------------------------------------------------------------

def _condition_status(obj, condition_type):
    item = resources.condition(obj, condition_type)
    return item.get("status") if item else None


def _spec_hash(ref):
    return (ref or {}).get("specHash") or None


def summarize(mca, action=None):
    """One cluster's add-on as ``kubectl get managedclusteraddon -A`` shows it, plus its effective configs."""
    if mca is None:
        return {"action": action, "namespace": None, "available": None, "degraded": None, "progressing": None,
                "configured": None, "install_namespace": None, "configs": [], "conditions": [], "object": {}}
    configs = []
    for ref in (mca.get("status") or {}).get("configReferences") or []:
        desired = ref.get("desiredConfig") or {}
        configs.append({"group": ref.get("group") or "", "resource": ref.get("resource"),
                        "namespace": desired.get("namespace") or ref.get("namespace") or None,
                        "name": desired.get("name") or ref.get("name"), "spec_hash": _spec_hash(desired),
                        "applied": bool(desired) and ref.get("lastAppliedConfig") == desired})
    return {
        "action": action,
        "namespace": mca["metadata"].get("namespace"),
        "available": _condition_status(mca, AVAILABLE),
        "degraded": _condition_status(mca, DEGRADED),
        "progressing": _condition_status(mca, PROGRESSING),
        "configured": _condition_status(mca, CONFIGURED),
        "install_namespace": (mca.get("spec") or {}).get("installNamespace"),
        "configs": configs,
        "conditions": resources.conditions_of(mca),
        "object": resources.presentable(mca),
    }


def addons_by_cluster(hub, name):
    """``{cluster: ManagedClusterAddOn}`` for every cluster namespace holding add-on ``name`` (one list request)."""
    items = resources.list_objects(hub, ocm.MANAGED_CLUSTER_ADDON, field_selector="metadata.name=%s" % name)
    return dict((item["metadata"]["namespace"], item) for item in items)


def placement_of_clusters(hub, addon_spec):
    """``({cluster: (namespace, name)}, [placements not decided yet])`` for the install strategy's placements.

    A cluster several placements select takes the last one in the install strategy, as the add-on manager does.
    """
    chosen, pending = {}, []
    for strategy in (addon_spec.get("installStrategy") or {}).get("placements") or []:
        ref = (strategy["namespace"], strategy["name"])
        obj = resources.get(hub, ocm.PLACEMENT, strategy["name"], strategy["namespace"])
        found = placement.decisions(hub, strategy["name"], strategy["namespace"])
        if not placement.scheduled(obj, found)[0]:
            pending.append("%s/%s" % ref)
        for cluster in placement.decided_clusters(found):
            chosen[cluster] = ref
    return chosen, pending


def _referents(refs):
    return set(_config_key(r) for r in refs)


def rollout_progress(mca, expected):
    """``(done, detail)``: the add-on is Available and runs with the ``expected`` configs (all applied)."""
    if mca is None:
        return False, "no ManagedClusterAddOn yet"
    if mca["metadata"].get("deletionTimestamp"):
        return False, "the ManagedClusterAddOn is being deleted"
    references = (mca.get("status") or {}).get("configReferences") or []
    desired = [dict(r.get("desiredConfig") or {}, group=r.get("group") or "", resource=r.get("resource"))
               for r in references if r.get("desiredConfig")]
    if _referents(desired) != _referents(expected):
        return False, "configs %s, expected %s" % (_names(desired) or "none", _names(expected) or "none")
    unapplied = [r for r in references if r.get("lastAppliedConfig") != r.get("desiredConfig")]
    if unapplied:
        return False, "config %s not applied yet" % _names([dict(r.get("desiredConfig") or {}, resource=r.get("resource"))
                                                            for r in unapplied])
    for condition_type, wanted in ((PROGRESSING, ("False", None)), (AVAILABLE, ("True",))):
        item = resources.condition(mca, condition_type)
        status = item.get("status") if item else None
        if status not in wanted:
            return False, "%s=%s%s" % (condition_type, status, " (%s: %s)" % (item.get("reason"), item.get("message")) if item else "")
    return True, None


def _names(refs):
    return ", ".join("%s %s" % (r["resource"], _referent(r)) for r in sorted(refs, key=_config_key))


# --- checks before writing ----------------------------------------------------------------------------

def check_clusters(hub, clusters):
    """Fail unless every cluster is a registered, accepted ManagedCluster with its namespace on the hub."""
    problems = {}
    for cluster in clusters:
        managed = resources.get(hub, ocm.MANAGED_CLUSTER, cluster)
        if managed is None:
            problems[cluster] = "is not registered (no ManagedCluster %s)" % cluster
        elif not (managed.get("spec") or {}).get("hubAcceptsClient"):
            problems[cluster] = "is not accepted (spec.hubAcceptsClient is false; accept it first)"
        elif resources.get(hub, resources.NAMESPACE, cluster) is None:
            problems[cluster] = "has no namespace %s on the hub yet (the hub creates it on acceptance)" % cluster
    if problems:
        raise FleetError("%s: cannot enable the add-on per cluster: %s" % (
            hub.label, "; ".join("cluster '%s' %s" % item for item in sorted(problems.items()))),
            clusters_failed=sorted(problems))


def placement_problems(hub, strategies):
    """What keeps the install strategy's placements from selecting clusters: missing, or unbound namespace."""
    problems = []
    for strategy in strategies or []:
        ref = "Placement %s/%s" % (strategy["namespace"], strategy["name"])
        obj = resources.get(hub, ocm.PLACEMENT, strategy["name"], strategy["namespace"])
        if obj is None:
            problems.append("%s: the install strategy refers to %s, which does not exist; create it first "
                            "(multicluster.fleet.placement)" % (hub.label, ref))
            continue
        sets = (obj.get("spec") or {}).get("clusterSets") or []
        missing, unbound = placement.missing_bindings(hub, strategy["namespace"], sets)
        if missing or unbound:
            what = ("names missing ManagedClusterSet(s) %s" % ", ".join(missing) if missing else
                    "has no ManagedClusterSetBinding in namespace %s%s" % (
                        strategy["namespace"], " for cluster set(s) %s" % ", ".join(unbound) if unbound != [None] else ""))
            problems.append("%s: the install strategy refers to %s, which %s, so it can select no cluster; bind the "
                            "sets (multicluster.fleet.placement with bind_cluster_sets=true)" % (hub.label, ref, what))
    return problems


def _placement_clusters(hub, addon):
    """The clusters the add-on manager installs the add-on on now (Placements strategy), or an empty set."""
    if ((addon or {}).get("spec") or {}).get("installStrategy", {}).get("type") != PLACEMENTS:
        return set()
    return set(placement_of_clusters(hub, addon["spec"])[0])


# --- the module's states ----------------------------------------------------------------------------

def _diffs(outcomes):
    return [dict(o.diff(), before_header=o.ref, after_header=o.ref) for o in outcomes if o.changed]


def present(hub, params, check_mode=False, wait=False, timeout=120, sleep=resources.WAIT_SLEEP):
    """state=present: validate, write the ClusterManagementAddOn and the per-cluster add-ons, optionally wait.

    A placement that does not exist or cannot select clusters fails the task, except in check mode, where it is
    returned in ``warnings``.
    """
    name = params["name"]
    desired = cluster_management_addon(name, params.get("display_name"), params.get("description"),
                                       params.get("supported_configs"), params.get("install_strategy"))
    supported = set(_group_resource(c) for c in desired["spec"]["supportedConfigs"] or [])
    entries = params.get("clusters") or []
    duplicates = sorted(set(e["name"] for e in entries if [x["name"] for x in entries].count(e["name"]) > 1))
    if duplicates:
        raise FleetError("clusters lists %s more than once" % ", ".join(duplicates))
    per_cluster = [managed_cluster_addon(name, entry, supported) for entry in entries]
    warnings = placement_problems(hub, desired["spec"]["installStrategy"]["placements"])
    if warnings and not check_mode:
        raise FleetError("; ".join(warnings))
    check_clusters(hub, [e["name"] for e in entries])
    outcomes = [resources.ensure(hub, ocm.CLUSTER_MANAGEMENT_ADDON, desired, check_mode)]
    outcomes += [resources.ensure(hub, ocm.MANAGED_CLUSTER_ADDON, mca, check_mode) for mca in per_cluster]
    changed = any(o.changed for o in outcomes)
    addons = addons_by_cluster(hub, name)
    addons.update((o.namespace, o.after) for o in outcomes[1:])
    actions = dict((o.namespace, o.action) for o in outcomes[1:])
    if wait and not check_mode:
        try:
            addons = wait_for_addons(hub, desired["spec"], name, [e["name"] for e in entries], timeout, sleep)
        except WaitTimeout as exc:
            raise FleetError(exc.msg, changed=changed, objects=[o.summary() for o in outcomes])
    # In check mode a placement problem is a warning: an earlier task of the same check run may plan the placement.
    return {"changed": changed, "addon": {"action": outcomes[0].action, "object": resources.presentable(outcomes[0].after)},
            "clusters": dict((c, summarize(mca, actions.get(c, "unchanged"))) for c, mca in sorted(addons.items())),
            "objects": [o.summary() for o in outcomes], "diff": _diffs(outcomes), "warnings": warnings}


def wait_for_addons(hub, addon_spec, name, clusters, timeout, sleep):
    """Wait until the add-on is Available with its expected configs applied on every targeted cluster.

    Targeted: the ``clusters`` given and, with install strategy Placements, the clusters its placements decide
    (read on every poll). Each poll lists the add-ons of every cluster at once. Returns ``{cluster: add-on}``.
    """
    latest = {}

    def check():
        chosen, undecided = placement_of_clusters(hub, addon_spec)
        latest.clear()
        latest.update(addons_by_cluster(hub, name))
        pending = ["Placement %s not decided yet" % ref for ref in undecided]
        for cluster in sorted(set(clusters) | set(chosen)):
            mca = latest.get(cluster)
            expected = effective_configs(addon_spec, chosen.get(cluster), ((mca or {}).get("spec") or {}).get("configs"))
            done, detail = rollout_progress(mca, expected)
            if not done:
                pending.append("%s (%s)" % (cluster, detail))
        if not pending:
            return True, None
        return False, resources.shown_pending(pending)

    resources.wait_until(check, timeout, "add-on %s to be available with its configs on %s" % (name, hub.label),
                         interval=sleep)
    return latest


def absent(hub, name, clusters=None, check_mode=False, wait=False, timeout=120, sleep=resources.WAIT_SLEEP):
    """state=absent: remove the add-on from ``clusters``, or (no clusters) uninstall it by deleting the
    ClusterManagementAddOn, whose ManagedClusterAddOns go with it."""
    addon = resources.get(hub, ocm.CLUSTER_MANAGEMENT_ADDON, name)
    if clusters:
        managed = sorted(set(clusters) & _placement_clusters(hub, addon))
        if managed:
            raise FleetError("%s: add-on %s is installed on cluster(s) %s by its install strategy's placements; the add-on "
                             "manager would install it again: change the placements instead, or remove the whole add-on "
                             "(state=absent without clusters)" % (hub.label, name, ", ".join(managed)))
        outcomes = [resources.delete(hub, ocm.MANAGED_CLUSTER_ADDON, name, cluster, check_mode=check_mode) for cluster in clusters]
    else:
        outcomes = [resources.delete(hub, ocm.CLUSTER_MANAGEMENT_ADDON, name, check_mode=check_mode)]
    changed = any(o.changed for o in outcomes)
    if wait and not check_mode:
        targets = set(clusters or [])

        def gone():
            left = addons_by_cluster(hub, name)
            if clusters:
                left = dict((c, a) for c, a in left.items() if c in targets)
            elif resources.get(hub, ocm.CLUSTER_MANAGEMENT_ADDON, name) is not None:
                return False, "the ClusterManagementAddOn is still present"
            return not left, "still on %s" % ", ".join(sorted(left))
        try:
            resources.wait_until(gone, timeout, "add-on %s to be removed on %s" % (name, hub.label), interval=sleep)
        except WaitTimeout as exc:
            raise FleetError(exc.msg + " (the ManagedClusterAddOns go once the add-on manager and the garbage collector "
                             "have removed them)", changed=changed)
    remaining = addons_by_cluster(hub, name) if not check_mode else {}
    return {"changed": changed, "addon": {"action": "unchanged" if clusters else outcomes[0].action,
                                          "object": resources.presentable(addon) if clusters else {}},
            "clusters": dict((c, summarize(mca)) for c, mca in sorted(remaining.items())),
            "objects": [o.summary() for o in outcomes], "diff": _diffs(outcomes), "warnings": []}


def ensure_deployment_config(hub, params, check_mode=False):
    """The addon_deployment_config module: write or delete the AddOnDeploymentConfig; report its spec hash."""
    name, namespace = params["name"], params["namespace"]
    if params.get("state") == "absent":
        outcome = resources.delete(hub, ocm.ADDON_DEPLOYMENT_CONFIG, name, namespace, check_mode=check_mode)
    else:
        placement.check_namespace(hub, namespace)
        desired = deployment_config(name, namespace, params.get("customized_variables"), params.get("node_placement"),
                                    params.get("registries"), params.get("proxy_config"),
                                    params.get("agent_install_namespace"), params.get("resource_requirements"))
        outcome = resources.ensure(hub, ocm.ADDON_DEPLOYMENT_CONFIG, desired, check_mode)
    stored = outcome.after
    return {"changed": outcome.changed, "action": outcome.action, "object": resources.presentable(stored) or {},
            "spec_hash": config_spec_hash(stored) if stored else None, "diff": _diffs([outcome])}
