#!/usr/bin/env python
"""SIMULATIONS of OCM's hub placement controller and add-on manager, for the lab, which cannot run either
(docs/architecture.md 5.2). Both act through the hub API with admin credentials and encode OCM's behaviour on
their own (``pkg/placement`` and ``pkg/addon`` of open-cluster-management-io/ocm, the addon-framework and the
sdk-go rollout helpers), importing nothing from the collection.

``PlacementController`` - the placement controller plus the hub registration controllers that keep cluster
sets and their bindings current:

- ManagedClusterSet status: ``ClusterSetEmpty`` (``ClustersSelected`` "N ManagedClusters selected" /
  ``NoClusterMatched`` "No ManagedCluster selected"); members by the exclusive label
  ``cluster.open-cluster-management.io/clusterset`` or, for ``selectorType: LabelSelector``, by its selector;
- ManagedClusterSetBinding status: ``Bound`` (``ClusterSetBound``, or ``False``/``ClusterSetNotFound``);
- for every Placement (not being deleted, without ``cluster.open-cluster-management.io/experimental-scheduling-
  disable: "true"``): the clusters of the sets bound to its namespace (a binding counts when its set exists)
  and named in ``spec.clusterSets`` (all bound sets when it names none), not being deleted; kept when a predicate
  matches (labels and cluster claims; predicates are ORed) and every ``NoSelect`` / ``NoSelectIfNew`` (for
  clusters not decided yet) taint is tolerated (``tolerationSeconds`` counted from the taint's ``timeAdded``);
  ``numberOfClusters`` of them, clusters already decided first (the steady prioritizer), then by name (the
  real scheduler's balance and resource prioritizers are left out); grouped by ``decisionStrategy.groupStrategy``
  (decision groups by selector, then the rest, each cut to ``clustersPerDecisionGroup``);
- PlacementDecisions ``<placement>-decision-<n>`` (one per group, at most 100 clusters each) owned by the
  Placement and labelled ``cluster.open-cluster-management.io/placement``, ``.../decision-group-index`` and
  ``.../decision-group-name``; redundant ones are deleted;
- Placement status: ``numberOfSelectedClusters``, ``decisionGroups`` and the conditions ``PlacementMisconfigured``
  (``Succeedconfigured`` or ``Misconfigured`` "<plugin>:<message>") and ``PlacementSatisfied`` with the real
  reasons (``NoManagedClusterSetBindings``, ``NoIntersection``, ``AllManagedClusterSetsEmpty``,
  ``NoManagedClusterMatched``, ``AllDecisionsScheduled``, ``NotAllDecisionsScheduled``) and messages.

``AddOnManager`` - the add-on manager (for ClusterManagementAddOns it manages: lifecycle annotation
``addon.open-cluster-management.io/lifecycle`` absent or ``addon-manager``), the simulated add-on's own manager
(addon-framework) and the registration agents' add-on lease check, per ClusterManagementAddOn:

- status ``defaultconfigReferences`` and, for install strategy Placements, ``installProgressions`` with the
  configs' spec hashes (SHA-256 of the config's JSON without apiVersion, kind, metadata and status; an
  AddOnDeploymentConfig that does not exist, or a config kind the lab does not serve, hashes to ``""``) and the
  ``Progressing`` condition per placement (``Progressing`` / ``Completed`` with upstream's messages;
  ``lastAppliedConfig`` and ``lastKnownGoodConfig`` once completed);
- install strategy Placements: a ManagedClusterAddOn in every cluster namespace the placements decide, owned by
  the ClusterManagementAddOn and carrying the cluster's ``addon.open-cluster-management.io`` annotations; the
  add-on's ManagedClusterAddOns in other namespaces are deleted. Manual: it only looks after the ones users create;
- the owner reference (controller) from every ManagedClusterAddOn to its ClusterManagementAddOn, so that
  deleting the ClusterManagementAddOn lets the garbage collector remove them (the lab's kube-controller-manager
  runs the real one) - the neat uninstallation;
- configs by the override order: the defaults of ``supportedConfigs``, overridden per group and resource by the
  configs of the install strategy's placement that selects the cluster (the last one listed when several do),
  overridden by the ManagedClusterAddOn's ``spec.configs``; rolled out as each placement's ``rolloutStrategy``
  says - ``All``, ``Progressive`` (mandatory decision groups first, then ``maxConcurrency`` clusters at a time in
  name order, ``maxFailures``, ``minSuccessTime``, ``progressDeadline``) or ``ProgressivePerGroup`` (group by
  group) - into ``status.configReferences`` (``desiredConfig`` with the spec hash; ``lastObservedGeneration``)
  and the condition ``Configured`` (``ConfigurationsConfigured`` / ``ConfigurationsNotConfigured``);
- the simulated add-on's manager: ``status.supportedConfigs`` (the ClusterManagementAddOn's supported config
  kinds) once the owner reference is set, ``status.namespace`` (the install namespace), ``ManifestApplied``
  (``AddonManifestApplied`` "manifests of addon are applied successfully"); the add-on's ManifestWork is not
  written (no agent image could run), its readiness is simulated: the agent runs with the configs of the
  desired spec hashes one round after they changed;
- ``Progressing`` as the add-on manager sets it: ``ConfigurationUnsupported`` for a config kind the add-on does
  not support, ``WaitingForManifestApplied`` before the manifests are applied, ``Progressing`` ("progressing...
  work is not ready") while the agent rolls out, then ``Completed`` ("completed with no errors.") with
  ``lastAppliedConfig`` set to ``desiredConfig``;
- ``Available`` as the registration agent's lease check sets it: ``ManagedClusterAddOnLeaseUpdated`` "<name>
  add-on is available." once the agent runs on an available cluster, ``ManagedClusterAddOnLeaseNotFound``
  "The status of <name> add-on is unknown." before (also for add-ons no ClusterManagementAddOn registers), and
  the cluster's own condition when the cluster's availability is ``Unknown``. ``Degraded`` is never set (the
  framework leaves it to the add-on's agent).

The lab's API server (its 1.20 build) refuses empty strings in custom resources, so where upstream writes one
the simulations leave the field out when it is optional (``decisionGroupName`` of the rest group, an unknown
``specHash``) and write a short text when it is required (the ``Bound`` condition's message, a decision's
``reason``: "selected by Placement <name>").

Left out: the add-on's agent itself (its ManifestWork, registration CSRs and RBAC), hosted-mode add-ons,
pre-delete hooks, AddOnTemplates (not served by the lab) and the v1beta1 API (the lab serves v1alpha1, so
owner references name ``addon.open-cluster-management.io/v1alpha1``).

Command line (both until interrupted)::

    python tests/lab/sim_addon.py --lab-dir DIR [--interval 0.5]

Python::

    sims = [PlacementController(hub_api).start(), AddOnManager(hub_api).start()]
    ...
    for s in sims: s.stop()
"""

import copy
import hashlib
import json
import math
import re
import sys

from lab import ApiClient, ApiError
from sim_base import Simulation, now, parse_time, run_lab_cli, set_condition

CLUSTER_API = "/apis/cluster.open-cluster-management.io"
ADDON_API = "/apis/addon.open-cluster-management.io/v1alpha1"
MANAGED_CLUSTERS = CLUSTER_API + "/v1/managedclusters"
CLUSTER_SETS = CLUSTER_API + "/v1beta2/managedclustersets"
CLUSTER_SET_BINDINGS = CLUSTER_API + "/v1beta2/managedclustersetbindings"
PLACEMENTS = CLUSTER_API + "/v1beta1/placements"
PLACEMENT_DECISIONS = CLUSTER_API + "/v1beta1/placementdecisions"
CLUSTER_MANAGEMENT_ADDONS = ADDON_API + "/clustermanagementaddons"
MANAGED_CLUSTER_ADDONS = ADDON_API + "/managedclusteraddons"
DEPLOYMENT_CONFIGS = "addondeploymentconfigs"

CLUSTER_SET_LABEL = "cluster.open-cluster-management.io/clusterset"
PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"
GROUP_INDEX_LABEL = "cluster.open-cluster-management.io/decision-group-index"
GROUP_NAME_LABEL = "cluster.open-cluster-management.io/decision-group-name"
DISABLE_ANNOTATION = "cluster.open-cluster-management.io/experimental-scheduling-disable"
LIFECYCLE_ANNOTATION = "addon.open-cluster-management.io/lifecycle"
ADDON_GROUP = "addon.open-cluster-management.io"
MAX_DECISIONS = 100
FOREVER = float("inf")


def _log(name, message):
    print(f"[sim-{name}] {message}", file=sys.stderr, flush=True)


def namespaced(collection, namespace, name=None):
    """``/apis/<group>/<version>/namespaces/<ns>/<plural>[/<name>]`` from the all-namespaces collection path."""
    base, plural = collection.rsplit("/", 1)
    return f"{base}/namespaces/{namespace}/{plural}" + (f"/{name}" if name else "")


def items(api, path, label_selector=None):
    query = f"?labelSelector={label_selector}" if label_selector else ""
    return api.get(path + query).get("items") or []


def labels_of(obj):
    return obj["metadata"].get("labels") or {}


def claims_of(cluster):
    return dict((c.get("name"), c.get("value")) for c in (cluster.get("status") or {}).get("clusterClaims") or [])


class Misconfigured(Exception):
    """The placement cannot be scheduled as written; ``plugin`` names the scheduler plugin that says so."""

    def __init__(self, plugin, message):
        super().__init__(f"{plugin}:{message}")


def expressions_match(expressions, values, plugin):
    for expression in expressions or []:
        key, operator, wanted = expression.get("key"), expression.get("operator"), expression.get("values") or []
        if operator in ("In", "NotIn") and not wanted:
            raise Misconfigured(plugin, "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty")
        if operator in ("Exists", "DoesNotExist") and wanted:
            raise Misconfigured(plugin, f"values: Invalid value: {wanted}: values set must be empty for exists and does not exist")
        present = key in values
        if operator == "In" and not (present and values[key] in wanted):
            return False
        if operator == "NotIn" and present and values[key] in wanted:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise Misconfigured(plugin, f"{operator!r} is not a valid label selector operator")
    return True


def selector_matches(selector, cluster, plugin="Predicate"):
    """A ClusterSelector / GroupClusterSelector: label selector on the labels, claim selector on the claims."""
    label_selector = (selector or {}).get("labelSelector") or {}
    labels = labels_of(cluster)
    if any(labels.get(k) != v for k, v in (label_selector.get("matchLabels") or {}).items()):
        return False
    if not expressions_match(label_selector.get("matchExpressions"), labels, plugin):
        return False
    return expressions_match(((selector or {}).get("claimSelector") or {}).get("matchExpressions"), claims_of(cluster), plugin)


def set_members(cluster_set, clusters):
    """Clusters of a ManagedClusterSet: by the exclusive clusterset label or by its label selector."""
    selector = (cluster_set.get("spec") or {}).get("clusterSelector") or {}
    name = cluster_set["metadata"]["name"]
    if selector.get("selectorType") == "LabelSelector":
        return [c for c in clusters if selector_matches({"labelSelector": selector.get("labelSelector") or {}}, c)]
    return [c for c in clusters if labels_of(c).get(CLUSTER_SET_LABEL) == name]


def tolerated(cluster, tolerations, decided):
    """The taint-toleration filter (ocm ``pkg/placement/plugins/tainttoleration``, ``isClusterTolerated``): every
    taint is tolerated, but for ``PreferNoSelect`` (never filters) and ``NoSelectIfNew`` on a cluster the placement
    decided already (``decided``)."""
    for taint in (cluster.get("spec") or {}).get("taints") or []:
        effect = taint.get("effect")
        if effect == "PreferNoSelect" or (effect == "NoSelectIfNew" and decided):
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return False
    return True


def _tolerates(toleration, taint):
    """``isTolerated``: effect and key match when the toleration names them; ``Equal`` (or no operator) also the value,
    ``Exists`` any value, another operator nothing; ``tolerationSeconds`` counted from the taint's ``timeAdded`` (a
    taint without one counts from the zero time, so a toleration with seconds has expired)."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        if (toleration.get("value") or "") != (taint.get("value") or ""):
            return False
    elif operator != "Exists":
        return False
    seconds = toleration.get("tolerationSeconds")
    if seconds is None:
        return True
    if not taint.get("timeAdded"):
        return False
    return (parse_time(now()) - parse_time(taint["timeAdded"])).total_seconds() < seconds


def size_of(value, total, plugin="", default=None):
    """A number or percentage of ``total`` (rounded up), as the scheduler and the rollout helpers compute it."""
    if value is None or value == 0 or value == "":
        return default
    if isinstance(value, int):
        length = value
    elif str(value).endswith("%"):
        try:
            length = math.ceil(float(value[:-1]) / 100 * total)
        except ValueError:
            raise Misconfigured(plugin, f"{value} invalid type: string is not a percentage")
    else:
        raise Misconfigured(plugin, f"{value} invalid type: string is not a percentage")
    return default if length <= 0 or length > total else length


# --- the placement controller -------------------------------------------------------------------------

class PlacementController(Simulation):
    """The hub's placement controller, cluster set and cluster set binding controllers."""

    name = "placement-controller"

    def __init__(self, hub, interval=0.5):
        super().__init__(interval)
        self.hub = hub

    def sync(self):
        clusters = items(self.hub, MANAGED_CLUSTERS)
        sets = dict((s["metadata"]["name"], s) for s in items(self.hub, CLUSTER_SETS))
        bindings = items(self.hub, CLUSTER_SET_BINDINGS)
        for cluster_set in sets.values():
            count = len(set_members(cluster_set, clusters))
            condition = (("False", "ClustersSelected", f"{count} ManagedClusters selected") if count
                         else ("True", "NoClusterMatched", "No ManagedCluster selected"))
            self._set_conditions(CLUSTER_SETS, cluster_set, [("ClusterSetEmpty",) + condition])
        for binding in bindings:
            found = binding["spec"].get("clusterSet") in sets
            path = namespaced(CLUSTER_SET_BINDINGS, binding["metadata"]["namespace"])
            self._set_conditions(path, binding, [
                ("Bound", "True", "ClusterSetBound", f"ManagedClusterSet {binding['spec'].get('clusterSet')} is bound") if found
                else ("Bound", "False", "ClusterSetNotFound", f"ManagedClusterSet {binding['spec'].get('clusterSet')} not found")])
        placements = items(self.hub, PLACEMENTS)
        for placement in placements:
            if placement["metadata"].get("deletionTimestamp"):
                continue
            if (placement["metadata"].get("annotations") or {}).get(DISABLE_ANNOTATION) == "true":
                continue
            self._schedule(placement, clusters, sets, [b for b in bindings
                                                       if b["metadata"]["namespace"] == placement["metadata"]["namespace"]])
        self.status = f"scheduled {len(placements)} placement(s) at {now()}"

    def _set_conditions(self, collection, obj, updates):
        conditions = (obj.get("status") or {}).get("conditions") or []
        changed = False
        for update in updates:
            conditions, one = set_condition(conditions, *update)
            changed = changed or one
        if changed:
            self.hub.patch(f"{collection}/{obj['metadata']['name']}/status", {"status": {"conditions": conditions}})

    def _schedule(self, placement, clusters, sets, bindings):
        spec = placement.get("spec") or {}
        namespace, name = placement["metadata"]["namespace"], placement["metadata"]["name"]
        valid = sorted(b["metadata"]["name"] for b in bindings if b["metadata"]["name"] in sets)
        eligible = sorted(set(valid) & set(spec["clusterSets"])) if spec.get("clusterSets") else valid
        available = {}
        for set_name in eligible:
            for cluster in set_members(sets[set_name], clusters):
                if not cluster["metadata"].get("deletionTimestamp"):
                    available[cluster["metadata"]["name"]] = cluster
        existing = items(self.hub, namespaced(PLACEMENT_DECISIONS, namespace), f"{PLACEMENT_LABEL}={name}")
        decided = set(d["clusterName"] for obj in existing for d in (obj.get("status") or {}).get("decisions") or [])
        misconfigured = None
        try:
            chosen, unscheduled = self._select(spec, available, decided)
            groups = self._groups(spec, chosen, available)
        except Misconfigured as problem:
            misconfigured, chosen, unscheduled, groups = str(problem), [], 0, [("", [])]
        group_status = self._bind(placement, groups, existing)
        if misconfigured:
            misconfigured_condition = ("PlacementMisconfigured", "True", "Misconfigured", misconfigured)
        else:
            misconfigured_condition = ("PlacementMisconfigured", "False", "Succeedconfigured", "Placement configurations check pass")
        if not valid:
            satisfied = ("False", "NoManagedClusterSetBindings", "No valid ManagedClusterSetBindings found in placement namespace")
        elif not eligible:
            satisfied = ("False", "NoIntersection",
                         f"None of ManagedClusterSets [{','.join(spec.get('clusterSets') or [])}] is bound to placement namespace")
        elif not available:
            satisfied = ("False", "AllManagedClusterSetsEmpty", f"All ManagedClusterSets [{','.join(eligible)}] have no member ManagedCluster")
        elif not chosen:
            satisfied = ("False", "NoManagedClusterMatched", "No ManagedCluster matches any of the cluster predicate")
        elif not unscheduled:
            satisfied = ("True", "AllDecisionsScheduled", "All cluster decisions scheduled")
        else:
            satisfied = ("False", "NotAllDecisionsScheduled", f"{unscheduled} cluster decisions unscheduled")
        status = dict(placement.get("status") or {})
        conditions = status.get("conditions") or []
        for update in (misconfigured_condition, ("PlacementSatisfied",) + satisfied):
            conditions, _changed = set_condition(conditions, *update)
        wanted = dict(status, numberOfSelectedClusters=len(chosen), decisionGroups=group_status, conditions=conditions)
        if wanted != placement.get("status"):
            self.hub.patch(f"{namespaced(PLACEMENTS, namespace, name)}/status",
                           {"metadata": {"resourceVersion": placement["metadata"]["resourceVersion"]}, "status": wanted})

    @staticmethod
    def _select(spec, available, decided):
        """``(chosen cluster names, number of unscheduled decisions)``: filters, then the steady prioritizer."""
        for toleration in spec.get("tolerations") or []:
            if not toleration.get("key") and toleration.get("operator") != "Exists":
                raise Misconfigured("TaintToleration", "If the key is empty, operator must be Exists.")
            if toleration.get("operator") == "Exists" and toleration.get("value"):
                raise Misconfigured("TaintToleration", "If the operator is Exists, the value should be empty.")
        predicates = spec.get("predicates") or []
        feasible = [name for name, cluster in sorted(available.items())
                    if (not predicates or any(selector_matches(p.get("requiredClusterSelector"), cluster) for p in predicates))
                    and tolerated(cluster, spec.get("tolerations") or [], name in decided)]
        wanted = spec.get("numberOfClusters")
        ranked = sorted(feasible, key=lambda c: (c not in decided, c))
        if wanted is None:
            return ranked, 0
        return ranked[:wanted], max(0, wanted - len(feasible))

    @staticmethod
    def _groups(spec, chosen, clusters):
        """``[(group name, [clusters])]`` by the decision strategy."""
        strategy = (spec.get("decisionStrategy") or {}).get("groupStrategy") or {}
        length = size_of(strategy.get("clustersPerDecisionGroup"), len(chosen), "", default=len(chosen))
        remaining, groups = set(chosen), []
        for group in strategy.get("decisionGroups") or []:
            matched = sorted(c for c in remaining if selector_matches(group.get("groupClusterSelector"), clusters[c], "DecisionGroups"))
            remaining -= set(matched)
            groups += _divide(group.get("groupName") or "", matched, length)
        groups += _divide("", sorted(remaining), length)
        return groups or [("", [])]

    def _bind(self, placement, groups, existing):
        """Create or update the PlacementDecisions of the groups, delete the rest; return ``status.decisionGroups``."""
        namespace, name = placement["metadata"]["namespace"], placement["metadata"]["name"]
        collection = namespaced(PLACEMENT_DECISIONS, namespace)
        by_name = dict((d["metadata"]["name"], d) for d in existing)
        owner = {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement", "name": name,
                 "uid": placement["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        status, number, written = [], 1, set()
        for index, (group_name, clusters) in enumerate(groups):
            slices = [clusters[i:i + MAX_DECISIONS] for i in range(0, len(clusters), MAX_DECISIONS)] or [[]]
            names = []
            for chunk in slices:
                decision_name = f"{name}-decision-{number}"
                number += 1
                names.append(decision_name)
                written.add(decision_name)
                labels = {PLACEMENT_LABEL: name, GROUP_NAME_LABEL: group_name, GROUP_INDEX_LABEL: str(index)}
                decisions = [{"clusterName": c, "reason": f"selected by Placement {name}"} for c in chunk]
                current = by_name.get(decision_name)
                if current is None:
                    current = self.hub.post(collection, {
                        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
                        "metadata": {"name": decision_name, "namespace": namespace, "labels": labels, "ownerReferences": [owner]}})
                # Labels first: a write to the status subresource leaves them as they were.
                if labels_of(current) != labels:
                    current = self.hub.patch(f"{collection}/{decision_name}", {"metadata": {"labels": labels}})
                if (current.get("status") or {}).get("decisions") != decisions:
                    self.hub.put(f"{collection}/{decision_name}/status", dict(current, status={"decisions": decisions}))
            group_status = {"decisionGroupIndex": index, "decisions": names, "clusterCount": len(clusters)}
            if group_name:
                group_status["decisionGroupName"] = group_name
            status.append(group_status)
        for decision_name in sorted(set(by_name) - written):
            try:
                self.hub.delete(f"{collection}/{decision_name}")
            except ApiError as e:
                if e.status != 404:
                    raise
        return status


def _divide(group_name, clusters, length):
    return [(group_name, clusters[i:i + length]) for i in range(0, len(clusters), max(length or 1, 1))]


# --- the add-on manager -------------------------------------------------------------------------------

def spec_hash(obj):
    """OCM's config spec hash: SHA-256 of Go's JSON of every field but apiVersion, kind, metadata and status."""
    fields = dict((k, v) for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status"))
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return hashlib.sha256(text.encode()).hexdigest()


def group_resource(config):
    return (config.get("group") or "", config.get("resource"))


def referent(config):
    return (config.get("namespace") or "", config.get("name"))


def managed_by_addon_manager(cma):
    """addon-framework's ManagedByAddonManager: no lifecycle annotation, or ``addon-manager``."""
    return (cma["metadata"].get("annotations") or {}).get(LIFECYCLE_ANNOTATION, "addon-manager") == "addon-manager"


def override(configs, overrides):
    """Per group and resource, ``overrides`` replace ``configs``: ``{(group, resource): [(namespace, name)]}``."""
    result = dict((gr, list(refs)) for gr, refs in configs.items())
    for gr in set(group_resource(c) for c in overrides):
        result[gr] = []
    for config in overrides:
        refs = result[group_resource(config)]
        if referent(config) not in refs:
            refs.append(referent(config))
    return result


class AddOnManager(Simulation):
    """The hub's add-on manager, the simulated add-on's own manager and the add-on lease check."""

    name = "addon-manager"

    def __init__(self, hub, interval=0.5):
        super().__init__(interval)
        self.hub = hub
        self.round = 0
        self.agents = {}  # (cluster, add-on) -> (spec hashes the agent runs with, round its ManifestWork was written)
        self._configs = {}  # (group, resource, namespace, name) -> (spec hash, generation), read once per round

    def sync(self):
        self.round += 1
        self._configs = {}
        clusters = dict((c["metadata"]["name"], c) for c in items(self.hub, MANAGED_CLUSTERS))
        addons = dict((a["metadata"]["name"], a) for a in items(self.hub, CLUSTER_MANAGEMENT_ADDONS))
        per_addon = {}
        for mca in items(self.hub, MANAGED_CLUSTER_ADDONS):
            per_addon.setdefault(mca["metadata"]["name"], []).append(mca)
        for name, cma in sorted(addons.items()):
            if not cma["metadata"].get("deletionTimestamp"):
                self._reconcile(cma, per_addon.get(name, []), clusters)
        for name, mcas in per_addon.items():
            if name not in addons:
                for mca in mcas:
                    self._write_status(mca, self._health(mca, (mca.get("status") or {}), clusters, deployed=False))
        self.status = f"reconciled {len(addons)} add-on(s) at {now()}"

    # -- hub side ------------------------------------------------------------------------------------

    def _config(self, gr, ref):
        """``(spec hash, generation)`` of a config; ``("", 0)`` when missing or of a kind the lab does not serve."""
        key = gr + ref
        if key not in self._configs:
            found = ("", 0)
            if gr == (ADDON_GROUP, DEPLOYMENT_CONFIGS) and ref[0]:
                try:
                    config = self.hub.get(namespaced(f"{ADDON_API}/{DEPLOYMENT_CONFIGS}", ref[0], ref[1]))
                    found = (spec_hash(config), config["metadata"].get("generation") or 0)
                except ApiError as e:
                    if e.status != 404:
                        raise
            self._configs[key] = found
        return self._configs[key]

    def _desired(self, configs):
        """``[configReference]`` (sorted by group and resource) with ``desiredConfig`` and its current spec hash."""
        references = []
        for gr in sorted(configs):
            for namespace, name in configs[gr]:
                spec_hash_, generation = self._config(gr, (namespace, name))
                desired = dict((k, v) for k, v in (("name", name), ("namespace", namespace), ("specHash", spec_hash_)) if v)
                references.append({"group": gr[0], "resource": gr[1], "desiredConfig": desired,
                                   "lastObservedGeneration": generation})
        return references

    def _reconcile(self, cma, mcas, clusters):
        spec = cma.get("spec") or {}
        managed = managed_by_addon_manager(cma)
        defaults = override({}, [dict(c["defaultConfig"], group=c.get("group"), resource=c["resource"])
                                 for c in spec.get("supportedConfigs") or [] if (c.get("defaultConfig") or {}).get("name")])
        nodes = []  # one per existing placement of the install strategy, in order: strategy, groups, configs, children
        placements_strategy = managed and (spec.get("installStrategy") or {}).get("type") == "Placements"
        if placements_strategy:
            for strategy in spec["installStrategy"].get("placements") or []:
                groups = self._decision_groups(strategy["namespace"], strategy["name"])
                if groups is not None:
                    nodes.append({"strategy": strategy, "groups": groups, "children": {},
                                  "configs": override(defaults, strategy.get("configs") or [])})
            mcas = self._install(cma, mcas, clusters, set(c for n in nodes for cs in n["groups"].values() for c in cs))
        mcas = [self._own(cma, mca) for mca in mcas]
        statuses = dict((mca["metadata"]["namespace"], copy.deepcopy(mca.get("status") or {})) for mca in mcas)
        if managed:
            default_node = {"strategy": None, "groups": {}, "children": {}, "configs": defaults}
            for mca in mcas:
                cluster = mca["metadata"]["namespace"]
                node = next((n for n in reversed(nodes) if any(cluster in cs for cs in n["groups"].values())), default_node)
                configs = override(node["configs"], (mca.get("spec") or {}).get("configs") or [])
                node["children"][cluster] = {"mca": mca, "desired": self._desired(configs)}
            for node in nodes + [default_node]:
                self._rollout(node, statuses)
        for mca in mcas:
            status = statuses[mca["metadata"]["namespace"]]
            if managed:
                self._progress(mca, status)
            self._write_status(mca, self._agent(cma, mca, status, clusters))
        if managed:
            self._write_addon_status(cma, defaults, nodes, statuses)

    def _decision_groups(self, namespace, name):
        """``{(group index, group name): [clusters]}`` of a placement, or None when the Placement does not exist."""
        try:
            self.hub.get(namespaced(PLACEMENTS, namespace, name))
        except ApiError as e:
            if e.status == 404:
                return None
            raise
        groups = {}
        for decision in items(self.hub, namespaced(PLACEMENT_DECISIONS, namespace), f"{PLACEMENT_LABEL}={name}"):
            labels = labels_of(decision)
            key = (int(labels.get(GROUP_INDEX_LABEL) or 0), labels.get(GROUP_NAME_LABEL) or "")
            groups.setdefault(key, []).extend(d["clusterName"] for d in (decision.get("status") or {}).get("decisions") or [])
        return groups

    def _install(self, cma, mcas, clusters, required):
        """The install reconciler: add-ons in every decided cluster namespace, none elsewhere."""
        name = cma["metadata"]["name"]
        existing = dict((m["metadata"]["namespace"], m) for m in mcas)
        for cluster in sorted(required - set(existing)):
            annotations = dict((k, v) for k, v in (clusters.get(cluster, {}).get("metadata", {}).get("annotations") or {}).items()
                               if k.startswith(ADDON_GROUP))
            metadata = {"name": name, "namespace": cluster, "ownerReferences": [self._owner(cma)]}
            if annotations:
                metadata["annotations"] = annotations
            try:
                existing[cluster] = self.hub.post(namespaced(MANAGED_CLUSTER_ADDONS, cluster), {
                    "apiVersion": f"{ADDON_GROUP}/v1alpha1", "kind": "ManagedClusterAddOn", "metadata": metadata, "spec": {}})
                _log(self.name, f"installed add-on {name} on cluster {cluster}")
            except ApiError as e:
                if e.status not in (404, 409):  # no cluster namespace yet; created concurrently
                    raise
        for cluster in sorted(set(existing) - required):
            try:
                self.hub.delete(namespaced(MANAGED_CLUSTER_ADDONS, cluster, name))
                _log(self.name, f"removed add-on {name} from cluster {cluster}: no placement selects it")
            except ApiError as e:
                if e.status != 404:
                    raise
            del existing[cluster]
        return list(existing.values())

    @staticmethod
    def _owner(cma):
        return {"apiVersion": f"{ADDON_GROUP}/v1alpha1", "kind": "ClusterManagementAddOn", "name": cma["metadata"]["name"],
                "uid": cma["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}

    def _own(self, cma, mca):
        """The owner controller: the ClusterManagementAddOn owns (controls) each of its add-ons."""
        owners = mca["metadata"].get("ownerReferences") or []
        if any(o.get("uid") == cma["metadata"]["uid"] for o in owners):
            return mca
        owners = [dict(o, controller=False) for o in owners]
        return self.hub.patch(namespaced(MANAGED_CLUSTER_ADDONS, mca["metadata"]["namespace"], mca["metadata"]["name"]),
                              {"metadata": {"ownerReferences": owners + [self._owner(cma)],
                                            "resourceVersion": mca["metadata"]["resourceVersion"]}})

    def _rollout(self, node, statuses):
        """Update ``status.configReferences`` and ``Configured`` of the add-ons the rollout strategy lets go now."""
        states = dict((c, self._rollout_state(child["desired"], statuses[c])) for c, child in node["children"].items())
        if node["strategy"] is None:
            batch = [c for c, (state, _since) in states.items() if state != "Succeeded"]
        else:
            batch = rollout_clusters(node["strategy"].get("rolloutStrategy") or {"type": "All"}, node["groups"], states)
        node["batch"], node["states"] = batch, states
        for cluster, child in node["children"].items():
            status = statuses[cluster]
            state = states[cluster][0]
            if cluster in batch:
                status["configReferences"] = self._merge_references(status.get("configReferences") or [], child["desired"])
                status["conditions"] = set_condition(status.get("conditions"), "Configured", "True", "ConfigurationsConfigured",
                                                     "Configurations configured")[0]
            elif state == "ToApply":
                status["conditions"] = set_condition(status.get("conditions"), "Configured", "False", "ConfigurationsNotConfigured",
                                                     "Configurations updated and not configured yet")[0]
            elif state == "Succeeded":
                status["conditions"] = set_condition(status.get("conditions"), "Configured", "True", "ConfigurationsConfigured",
                                                     "Configurations configured")[0]

    @staticmethod
    def _rollout_state(wanted, status):
        """``(ToApply | Progressing | Failed | Succeeded, since)`` as the graph's setRolloutStatus decides."""
        references = status.get("configReferences") or []
        progressing = next((c for c in status.get("conditions") or [] if c.get("type") == "Progressing"), {})
        since = parse_time(progressing["lastTransitionTime"]) if progressing.get("lastTransitionTime") else None
        if len(references) != len(wanted):
            return "ToApply", None
        for ref in references:
            match = next((w for w in wanted if group_resource(w) == group_resource(ref)
                          and referent(w["desiredConfig"]) == referent(ref.get("desiredConfig") or {})), None)
            if match is None or _hash_ref(match["desiredConfig"]) != _hash_ref(ref.get("desiredConfig")):
                return "ToApply", None
            if _hash_ref(ref.get("lastAppliedConfig")) != _hash_ref(ref.get("desiredConfig")):
                return ("Failed" if progressing.get("reason") == "Failed" else "Progressing"), since
        return "Succeeded", since if progressing.get("reason") == "Completed" else None

    @staticmethod
    def _merge_references(current, desired):
        """mergeAddonConfig: keep ``lastAppliedConfig`` of the configs still desired, take the new desired configs."""
        merged = []
        for ref in desired:
            old = next((c for c in current if group_resource(c) == group_resource(ref)
                        and referent(c.get("desiredConfig") or {}) == referent(ref["desiredConfig"])), {})
            entry = dict(old, **ref)
            entry.update((k, ref["desiredConfig"][k]) for k in ("name", "namespace") if k in ref["desiredConfig"])
            merged.append(entry)
        return merged

    def _progress(self, mca, status):
        """The add-on progressing controller (with the add-on's ManifestWork simulated)."""
        key = (mca["metadata"]["namespace"], mca["metadata"]["name"])
        supported = set(group_resource(c) for c in status.get("supportedConfigs") or [])
        unsupported = [c for c in (mca.get("spec") or {}).get("configs") or [] if group_resource(c) not in supported]
        if unsupported and status.get("supportedConfigs") is not None:
            gr = group_resource(unsupported[0])
            status["conditions"] = set_condition(status.get("conditions"), "Progressing", "False", "ConfigurationUnsupported",
                                                 f"Configuration with gvr {gr[0]}/{gr[1]} is not supported for this addon")[0]
            return
        if not any(c.get("type") == "ManifestApplied" for c in status.get("conditions") or []):
            status["conditions"] = set_condition(status.get("conditions"), "Progressing", "False", "WaitingForManifestApplied",
                                                 "Waiting for ManagedClusterAddOn ManifestApplied condition")[0]
            return
        hashes = tuple(sorted(_hash_ref(r.get("desiredConfig")) for r in status.get("configReferences") or []))
        written = self.agents.get(key)
        if written is None or written[0] != hashes:
            self.agents[key] = written = (hashes, self.round)
        if written[1] == self.round:
            status["conditions"] = set_condition(status.get("conditions"), "Progressing", "True", "Progressing",
                                                 "progressing... work is not ready")[0]
            return
        for ref in status.get("configReferences") or []:
            ref["lastAppliedConfig"] = copy.deepcopy(ref.get("desiredConfig"))
        status["conditions"] = set_condition(status.get("conditions"), "Progressing", "False", "Completed",
                                             "completed with no errors.")[0]

    # -- the add-on's own manager and the lease check -------------------------------------------------

    def _agent(self, cma, mca, status, clusters):
        """The add-on's manager (supported configs, namespace, manifests) once the owner reference is set."""
        if any(o.get("uid") == cma["metadata"]["uid"] for o in mca["metadata"].get("ownerReferences") or []):
            status["supportedConfigs"] = [{"group": c.get("group") or "", "resource": c["resource"]}
                                          for c in (cma.get("spec") or {}).get("supportedConfigs") or []]
            status["namespace"] = (mca.get("spec") or {}).get("installNamespace") or "open-cluster-management-agent-addon"
            cluster = clusters.get(mca["metadata"]["namespace"])
            if cluster is not None and (cluster.get("spec") or {}).get("hubAcceptsClient"):
                status["conditions"] = set_condition(status.get("conditions"), "ManifestApplied", "True", "AddonManifestApplied",
                                                     "manifests of addon are applied successfully")[0]
        deployed = any(c.get("type") == "ManifestApplied" and c.get("status") == "True" for c in status.get("conditions") or [])
        return self._health(mca, status, clusters, deployed)

    @staticmethod
    def _health(mca, status, clusters, deployed):
        """``Available`` from the add-on's lease (the agent runs once deployed) or the cluster's own availability."""
        name = mca["metadata"]["name"]
        cluster = clusters.get(mca["metadata"]["namespace"])
        available = next((c for c in ((cluster or {}).get("status") or {}).get("conditions") or []
                          if c.get("type") == "ManagedClusterConditionAvailable"), None)
        status = dict(status)
        if available is None:
            return status
        if available.get("status") == "Unknown":
            update = ("Available", "Unknown", available.get("reason"), available.get("message"))
        elif not deployed:
            update = ("Available", "Unknown", "ManagedClusterAddOnLeaseNotFound", f"The status of {name} add-on is unknown.")
        elif available.get("status") == "True":
            update = ("Available", "True", "ManagedClusterAddOnLeaseUpdated", f"{name} add-on is available.")
        else:
            return status
        status["conditions"] = set_condition(status.get("conditions"), *update)[0]
        return status

    def _write_status(self, mca, status):
        status = dict((k, v) for k, v in status.items() if v is not None)
        if status != (mca.get("status") or {}):
            self.hub.patch(f"{namespaced(MANAGED_CLUSTER_ADDONS, mca['metadata']['namespace'], mca['metadata']['name'])}/status",
                           {"metadata": {"resourceVersion": mca["metadata"]["resourceVersion"]}, "status": status})

    def _write_addon_status(self, cma, defaults, nodes, statuses):
        """cmainstallprogression and the cma progressing reconciler: default configs and progress per placement."""
        status = copy.deepcopy(cma.get("status") or {})
        status["defaultconfigReferences"] = [dict((k, r[k]) for k in ("group", "resource", "desiredConfig"))
                                             for r in self._desired(defaults)] or None
        old = dict(((p.get("namespace"), p.get("name")), p) for p in status.get("installProgressions") or [])
        progressions = []
        for node in nodes:
            ref = (node["strategy"]["namespace"], node["strategy"]["name"])
            previous = old.get(ref, {})
            references = []
            for entry in self._desired(node["configs"]):
                before = next((r for r in previous.get("configReferences") or [] if group_resource(r) == group_resource(entry)
                               and referent(r.get("desiredConfig") or {}) == referent(entry["desiredConfig"])), {})
                references.append(dict(before, **dict((k, entry[k]) for k in ("group", "resource", "desiredConfig"))))
            total = len(set(c for cs in node["groups"].values() for c in cs))
            configured = len(node["children"])
            done = sum(1 for c in node["children"] if c not in node["batch"] and node["states"][c][0] == "Succeeded")
            failed = sum(1 for c in node["children"] if node["states"][c][0] == "Failed")
            if (configured == 0 and done == 0) or done != configured:
                condition = ("Progressing", "True", "Progressing",
                             f"selected clusters {total}. configured addons {len(node['batch']) + done}/{configured} "
                             f"progressing..., {failed} failed 0 timeout.")
            else:
                for entry in references:
                    entry["lastAppliedConfig"] = entry["lastKnownGoodConfig"] = copy.deepcopy(entry["desiredConfig"])
                condition = ("Progressing", "False", "Completed",
                             f"selected clusters {total}. configured addons {done}/{configured} completed with no errors, "
                             f"{failed} failed 0 timeout.")
            progressions.append({"name": ref[1], "namespace": ref[0], "configReferences": references or None,
                                 "conditions": set_condition(previous.get("conditions"), *condition)[0]})
        status["installProgressions"] = progressions or None
        status = dict((k, v) for k, v in status.items() if v is not None)
        if status != (cma.get("status") or {}):
            self.hub.patch(f"{CLUSTER_MANAGEMENT_ADDONS}/{cma['metadata']['name']}/status",
                           {"metadata": {"resourceVersion": cma["metadata"]["resourceVersion"]}, "status": status})


def _hash_ref(ref):
    ref = ref or {}
    return (ref.get("namespace") or "", ref.get("name"), ref.get("specHash") or "")


def _duration(text):
    """Seconds of a Go duration (minSuccessTime) or progressDeadline; ``None``/empty means forever for deadlines."""
    if text in (None, "", "None"):
        return FOREVER
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6, "ns": 1e-9}
    return sum(float(n) * units[u] for n, u in re.findall(r"([0-9.]+)(ns|us|ms|h|m|s)", str(text)))


def rollout_clusters(strategy, groups, states):
    """The clusters whose configs may change now (sdk-go's RolloutHandler.GetRolloutCluster).

    ``groups``: ``{(index, name): [clusters]}`` from the decisions; ``states``: ``{cluster: (state, since)}`` for
    the clusters that have an add-on (the others count as ToApply).
    """
    kind = strategy.get("type") or "All"
    settings = strategy.get({"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}.get(kind)) or {}
    min_success = _duration(settings.get("minSuccessTime") or "0")
    deadline = _duration(settings.get("progressDeadline"))
    everyone = sorted(set(c for cs in groups.values() for c in cs))
    current = dict((c, s) for c, s in states.items() if c in everyone)
    if kind == "All":
        return _per_cluster(everyone, len(everyone), len(everyone), 0, deadline, current)
    keys = [k for k in sorted(groups) if any(_names_group(m, k) for m in settings.get("mandatoryDecisionGroups") or [])]
    if keys:
        batch = _per_group([(k, groups[k]) for k in keys], 0, min_success, deadline, current)
        if batch:
            return batch
    rest = [(k, groups[k]) for k in sorted(groups) if k not in keys]
    if kind == "ProgressivePerGroup":
        return _per_group(rest, settings.get("maxFailures") or 0, min_success, deadline, current)
    rest_clusters = sorted(set(c for _k, cs in rest for c in cs))
    max_failures = size_of(settings.get("maxFailures"), len(everyone), default=0)
    size = size_of(settings.get("maxConcurrency"), len(rest_clusters), default=len(rest_clusters))
    return _per_cluster(rest_clusters, size, max_failures, min_success, deadline, current)


def _names_group(mandatory, key):
    """Whether a mandatory decision group (by name, else by index) is the group ``(index, name)``."""
    if mandatory.get("groupName"):
        return mandatory["groupName"] == key[1]
    return int(mandatory.get("groupIndex") or 0) == key[0]


def _still_rolling(state, since, min_success, deadline):
    """determineRolloutStatus: whether a cluster in this state still counts as part of the current batch."""
    elapsed = (parse_time(now()) - since).total_seconds() if since else 0
    if state == "ToApply":
        return True
    if state == "Succeeded":
        return since is not None and elapsed < min_success
    return elapsed < deadline  # Progressing or Failed, until the progress deadline


def _per_cluster(clusters, size, max_failures, min_success, deadline, states):
    batch, failures = [], 0
    for cluster in sorted(states):
        state, since = states[cluster]
        if failures <= max_failures or state != "ToApply":
            if _still_rolling(state, since, min_success, deadline):
                batch.append(cluster)
        if state == "Failed" or (state == "Progressing" and not _still_rolling(state, since, min_success, deadline)):
            failures += 1
        if len(batch) >= size:
            return batch
    if failures > max_failures:
        return batch
    for cluster in clusters:
        if cluster not in states:
            batch.append(cluster)
            if len(batch) >= size:
                break
    return batch


def _per_group(groups, max_failures, min_success, deadline, states):
    batch = [c for c, (state, since) in sorted(states.items()) if state != "ToApply"
             and _still_rolling(state, since, min_success, deadline)]
    settled = set(c for c, (state, _since) in states.items() if state != "ToApply")
    total_failures = 0
    for _key, clusters in groups:
        failures = sum(1 for c in clusters if c in states and states[c][0] == "Failed")
        allowed = size_of(max_failures, len(clusters), default=0)
        batch += [c for c in sorted(clusters) if c not in settled]
        total_failures += failures
        if len(batch) - total_failures > 0 or failures > allowed:
            return batch
    return batch


def _build(lab, interval):
    hub = ApiClient.for_cluster(lab.clusters[lab.hub])
    return [PlacementController(hub, interval), AddOnManager(hub, interval)], lambda: _log(
        "addon", f"simulating OCM's placement controller and add-on manager on {lab.hub}; Ctrl-C stops")


def main(argv=None):
    return run_lab_cli(__doc__.split("\n\n", 1)[0], _build, default_interval=0.5, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
