# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OCM Placements: the Placement, the ManagedClusterSetBindings it needs, and the decisions made for it.

A Placement (``cluster.open-cluster-management.io/v1beta1``) selects managed clusters from the cluster sets
bound to its namespace by a ManagedClusterSetBinding (``v1beta2``, named after the set). The hub's placement
controller writes the chosen clusters into PlacementDecisions labelled
``cluster.open-cluster-management.io/placement=<name>`` and ``.../decision-group-index`` /
``.../decision-group-name``, and reports ``PlacementSatisfied`` and ``PlacementMisconfigured`` on the Placement.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import labels as fleet_labels
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout

PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"
DECISION_GROUP_INDEX_LABEL = "cluster.open-cluster-management.io/decision-group-index"
DECISION_GROUP_NAME_LABEL = "cluster.open-cluster-management.io/decision-group-name"
SATISFIED = "PlacementSatisfied"
MISCONFIGURED = "PlacementMisconfigured"
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSelect", "PreferNoSelect", "NoSelectIfNew")
ALL_CLUSTERS_PER_GROUP = "100%"  # the API's default of clustersPerDecisionGroup
GROUP_SIZE_RE = re.compile(r"\A((100|[1-9][0-9]?)%|[1-9][0-9]*)\Z")
GROUP_NAME_RE = re.compile(r"\A[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]\Z")


# --- building the Placement -------------------------------------------------------------------------

def _expressions(items, where):
    """``matchExpressions`` from the module's ``match_expressions``: In/NotIn need values, Exists/DoesNotExist none; keys
    and values by Kubernetes' label rules (:func:`labels.selector`), as the placement controller parses them."""
    result = []
    for index, item in enumerate(items or []):
        values = list(item.get("values") or [])
        if (item["operator"] in ("In", "NotIn")) != bool(values):
            raise FleetError("%s.match_expressions[%d] (key %s): operator %s %s values" % (
                where, index, item["key"], item["operator"], "needs" if item["operator"] in ("In", "NotIn") else "takes no"))
        result.append({"key": item["key"], "operator": item["operator"], "values": values or None})
    return fleet_labels.selector(where, None, result)[1]


def cluster_selector(option, where):
    """``{labelSelector, claimSelector}`` from ``{label_selector, claim_selector}``; an unset part is ``None``.

    Every field is written, ``None`` when unset: list items are compared field by field, so a field left out would
    let a stored value pass for the desired one.
    """
    claims = _expressions((option.get("claim_selector") or {}).get("match_expressions"), where + ".claim_selector")
    return {"labelSelector": label_selector(option.get("label_selector"), where + ".label_selector"),
            "claimSelector": {"matchExpressions": claims} if claims else None}


def label_selector(option, where):
    """``{matchLabels, matchExpressions}`` from ``{match_labels, match_expressions}``; None when it selects by nothing.
    Keys and values are checked by Kubernetes' label rules (:func:`labels.selector`): FleetError naming the bad key."""
    match_labels = fleet_labels.selector(where, (option or {}).get("match_labels"))[0] or None
    expressions = _expressions((option or {}).get("match_expressions"), where) or None
    return {"matchLabels": match_labels, "matchExpressions": expressions} if match_labels or expressions else None


def expressions_argument_spec():
    """The module option ``match_expressions`` of a label or claim selector."""
    return dict(type="list", elements="dict", options=dict(
        key=dict(type="str", required=True, no_log=False),
        operator=dict(type="str", required=True, choices=list(SELECTOR_OPERATORS)),
        values=dict(type="list", elements="str"),
    ))


def label_selector_argument_spec():
    """The module option ``label_selector``: ``match_labels`` and ``match_expressions``."""
    return dict(type="dict", options=dict(match_labels=dict(type="dict"), match_expressions=expressions_argument_spec()))


def _selects(selector):
    return bool(selector["labelSelector"] or selector["claimSelector"])


def _toleration(option, where):
    """One toleration, checked as the placement controller does (it reports the same as misconfigured)."""
    operator = option.get("operator") or "Equal"
    if not option.get("key") and operator != "Exists":
        raise FleetError("%s: a toleration without key must use operator Exists" % where)
    if operator == "Exists" and option.get("value"):
        raise FleetError("%s: operator Exists takes no value (got %r)" % (where, option["value"]))
    return {"key": option.get("key") or None, "operator": operator, "value": option.get("value") or None,
            "effect": option.get("effect") or None, "tolerationSeconds": option.get("toleration_seconds")}


def _group_size(value):
    """``clustersPerDecisionGroup``: a number of clusters (at least 1) or a percentage of 1-100%."""
    if value is None:
        return ALL_CLUSTERS_PER_GROUP
    text = str(value).strip()
    if not GROUP_SIZE_RE.match(text):
        raise FleetError("clusters_per_decision_group %r must be a number of clusters (1 or more) or a percentage "
                         "from 1%% to 100%%, for example 25%%" % (value,))
    return text if text.endswith("%") else int(text)


def _decision_strategy(groups, group_size):
    if not groups and group_size is None:
        return None
    decision_groups = []
    for index, group in enumerate(groups or []):
        where = "decision_groups[%d]" % index
        if not GROUP_NAME_RE.match(group["group_name"]):
            raise FleetError("%s: group_name %r must be 2-63 letters, digits, '-', '_' or '.', starting and ending "
                             "with a letter or digit" % (where, group["group_name"]))
        selector = cluster_selector(group, where)
        if not _selects(selector):
            raise FleetError("%s (%s): give a label_selector or claim_selector" % (where, group["group_name"]))
        decision_groups.append({"groupName": group["group_name"], "groupClusterSelector": selector})
    return {"groupStrategy": {"decisionGroups": decision_groups or None, "clustersPerDecisionGroup": _group_size(group_size)}}


def build(name, namespace, cluster_sets=None, number_of_clusters=None, predicates=None, tolerations=None,
          decision_groups=None, clusters_per_decision_group=None):
    """The Placement with every field this collection manages; unset ones are ``None`` so an update removes them."""
    if number_of_clusters is not None and number_of_clusters < 0:
        raise FleetError("number_of_clusters must be 0 or more, got %d" % number_of_clusters)
    built_predicates = []
    for index, predicate in enumerate(predicates or []):
        selector = cluster_selector(predicate, "predicates[%d]" % index)
        if not _selects(selector):
            raise FleetError("predicates[%d] selects nothing: give a label_selector or claim_selector" % index)
        built_predicates.append({"requiredClusterSelector": selector})
    spec = {
        "clusterSets": list(cluster_sets or []) or None,
        "numberOfClusters": number_of_clusters,
        "predicates": built_predicates or None,
        "tolerations": [_toleration(t, "tolerations[%d]" % i) for i, t in enumerate(tolerations or [])] or None,
        "decisionStrategy": _decision_strategy(decision_groups, clusters_per_decision_group),
    }
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def binding(namespace, cluster_set):
    """The ManagedClusterSetBinding that makes ``cluster_set`` available in ``namespace`` (named after the set)."""
    return {"metadata": {"name": cluster_set, "namespace": namespace}, "spec": {"clusterSet": cluster_set}}


# --- cluster sets and bindings ----------------------------------------------------------------------

def missing_bindings(hub, namespace, cluster_sets):
    """``(missing_sets, unbound_sets)`` for a Placement in ``namespace`` naming ``cluster_sets``.

    ``missing_sets``: named sets that do not exist on the hub. ``unbound_sets``: named sets with no
    ManagedClusterSetBinding in the namespace. A Placement naming no set selects from every set bound to
    its namespace; then ``unbound_sets`` is ``[None]`` when the namespace has no binding to an existing set.
    """
    existing = set(s["metadata"]["name"] for s in resources.list_objects(hub, ocm.MANAGED_CLUSTER_SET))
    bound = set(b["spec"].get("clusterSet") for b in resources.list_objects(hub, ocm.MANAGED_CLUSTER_SET_BINDING, namespace))
    if not cluster_sets:
        return [], [] if bound & existing else [None]
    return [s for s in cluster_sets if s not in existing], [s for s in cluster_sets if s not in bound]


def check_namespace(hub, namespace):
    found = resources.get(hub, resources.NAMESPACE, namespace)
    if found is None:
        raise FleetError("%s: namespace %s does not exist; create it first (ManagedClusterSetBindings and the "
                         "Placements using them live there)" % (hub.label, namespace))


def plan_bindings(hub, name, namespace, cluster_sets, bind):
    """The bindings to create for the Placement, or a clear error when it could never select a cluster."""
    check_namespace(hub, namespace)
    missing, unbound = missing_bindings(hub, namespace, cluster_sets)
    where = "%s: Placement %s/%s" % (hub.label, namespace, name)
    if missing:
        raise FleetError("%s names ManagedClusterSet(s) %s, which do not exist; create them (clusteradm create clusterset) "
                         "or name existing ones in cluster_sets" % (where, ", ".join(missing)))
    if unbound == [None]:
        raise FleetError("%s names no cluster set and namespace %s has no ManagedClusterSetBinding, so it can select "
                         "no cluster: name the sets in cluster_sets with bind_cluster_sets=true (for example the hub's "
                         "global set), or bind a set to the namespace (clusteradm clusterset bind)" % (where, namespace))
    if unbound and not bind:
        raise FleetError("%s: namespace %s has no ManagedClusterSetBinding for cluster set(s) %s, so the placement "
                         "cannot select their clusters; set bind_cluster_sets=true to create the binding(s), or run "
                         "clusteradm clusterset bind %s --namespace %s"
                         % (where, namespace, ", ".join(unbound), unbound[0], namespace))
    return [binding(namespace, s) for s in unbound]


# --- decisions --------------------------------------------------------------------------------------

def decisions(hub, name, namespace):
    """The PlacementDecisions of a Placement (label ``cluster.open-cluster-management.io/placement``)."""
    return resources.list_objects(hub, ocm.PLACEMENT_DECISION, namespace, label_selector="%s=%s" % (PLACEMENT_LABEL, name))


def decided_clusters(decision_objects):
    """Sorted names of the clusters the decisions select."""
    return sorted(set(d.get("clusterName") for obj in decision_objects
                      for d in (obj.get("status") or {}).get("decisions") or [] if d.get("clusterName")))


def decision_groups(decision_objects):
    """``[{index, name, clusters}]`` from the decisions' group labels, by group index."""
    groups = {}
    for obj in decision_objects:
        labels = obj["metadata"].get("labels") or {}
        try:
            index = int(labels.get(DECISION_GROUP_INDEX_LABEL, "0"))
        except ValueError:
            index = 0
        group = groups.setdefault(index, {"index": index, "name": labels.get(DECISION_GROUP_NAME_LABEL) or "", "clusters": []})
        group["clusters"] = sorted(set(group["clusters"]) | set(decided_clusters([obj])))
    return [groups[i] for i in sorted(groups)]


def summarize(placement, decision_objects, action=None):
    """What the module returns: the decided clusters, groups, the controller's conditions and the Placement."""
    status = (placement or {}).get("status") or {}
    return {
        "action": action,
        "clusters": decided_clusters(decision_objects),
        "decision_groups": decision_groups(decision_objects),
        "number_of_selected_clusters": status.get("numberOfSelectedClusters"),
        "satisfied": resources.condition_is(placement, SATISFIED),
        "misconfigured": resources.condition_is(placement, MISCONFIGURED),
        "conditions": resources.conditions_of(placement),
        "object": resources.presentable(placement) or {},
    }


def scheduled(placement, decision_objects):
    """``(done, detail)``: the placement controller has reported on the Placement and written its decisions."""
    if placement is None:
        return False, "the Placement does not exist"
    misconfigured = resources.condition(placement, MISCONFIGURED)
    if misconfigured is not None and misconfigured.get("status") == "True":
        return True, None  # nothing more will come; the caller reports it
    satisfied = resources.condition(placement, SATISFIED)
    if satisfied is None:
        return False, "no %s condition yet (is the placement controller running?)" % SATISFIED
    selected = (placement.get("status") or {}).get("numberOfSelectedClusters") or 0
    found = len(decided_clusters(decision_objects))
    if not decision_objects or found != selected:
        return False, "%d of %d selected clusters in PlacementDecisions" % (found, selected)
    return True, None


def wait_for_decisions(hub, name, namespace, timeout, sleep):
    """Wait until the placement controller scheduled the Placement; return ``(placement, decisions)``."""
    seen = {}

    def check():
        seen["placement"] = resources.get(hub, ocm.PLACEMENT, name, namespace)
        seen["decisions"] = decisions(hub, name, namespace)
        return scheduled(seen["placement"], seen["decisions"])

    resources.wait_until(check, timeout, "the placement controller to decide Placement %s/%s on %s" % (namespace, name, hub.label),
                         interval=sleep)
    return seen["placement"], seen["decisions"]


# --- the module's two states ------------------------------------------------------------------------

def present(hub, params, check_mode=False, wait=False, timeout=120, sleep=resources.WAIT_SLEEP):
    """state=present: check cluster sets and bindings, write bindings and the Placement, optionally wait."""
    name, namespace = params["name"], params["namespace"]
    desired = build(name, namespace, params.get("cluster_sets"), params.get("number_of_clusters"), params.get("predicates"),
                    params.get("tolerations"), params.get("decision_groups"), params.get("clusters_per_decision_group"))
    planned = plan_bindings(hub, name, namespace, params.get("cluster_sets"), params.get("bind_cluster_sets"))
    outcomes = [resources.ensure(hub, ocm.MANAGED_CLUSTER_SET_BINDING, b, check_mode) for b in planned]
    placement = resources.ensure(hub, ocm.PLACEMENT, desired, check_mode)
    outcomes.append(placement)
    changed = any(o.changed for o in outcomes)
    obj, found = placement.after, decisions(hub, name, namespace) if placement.action != "created" else []
    if wait and not check_mode:
        try:
            obj, found = wait_for_decisions(hub, name, namespace, timeout, sleep)
        except WaitTimeout as exc:
            raise FleetError(exc.msg, changed=changed, objects=[o.summary() for o in outcomes])
        if resources.condition_is(obj, MISCONFIGURED):
            item = resources.condition(obj, MISCONFIGURED)
            raise FleetError("%s: the placement controller reports Placement %s/%s misconfigured: %s"
                             % (hub.label, namespace, name, item.get("message")), changed=changed,
                             objects=[o.summary() for o in outcomes])
    result = summarize(obj, found, placement.action)
    result.update(changed=changed, objects=[o.summary() for o in outcomes],
                  diff=[dict(o.diff(), before_header=o.ref, after_header=o.ref) for o in outcomes if o.changed])
    return result


def absent(hub, name, namespace, check_mode=False, wait=False, timeout=120, sleep=resources.WAIT_SLEEP):
    """state=absent: delete the Placement (its decisions go with it); bindings stay, other placements may use them."""
    outcome = resources.delete(hub, ocm.PLACEMENT, name, namespace, check_mode=check_mode)
    if wait and outcome.changed and not check_mode:
        resources.wait_until(lambda: (resources.get(hub, ocm.PLACEMENT, name, namespace) is None, "still present"), timeout,
                             "Placement %s/%s to be deleted on %s" % (namespace, name, hub.label), interval=sleep)
    result = summarize(None, [], outcome.action)
    result.update(changed=outcome.changed, objects=[outcome.summary()],
                  diff=[dict(outcome.diff(), before_header=outcome.ref, after_header=outcome.ref)] if outcome.changed else [])
    return result
