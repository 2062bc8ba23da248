"""placement against the lab: a real hub API server with the OCM CRDs, the simulated placement controller.

The fleet (ocm_fleet.py): accepted ManagedClusters plc-1, plc-2 (environment=dev) and plc-3 (environment=prod) in
cluster set plc-fleet, and namespace plc-apps for the placements.
"""

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ocm_fleet import OcmFleet, fails, ok

DEV = [{"label_selector": {"match_labels": {"environment": "dev"}}}]


@pytest.fixture(scope="module")
def fleet(lab):
    fleet = OcmFleet(lab, "plc").up()
    yield fleet
    fleet.down()


def place(fleet, name, check_mode=False, diff=False, **args):
    args.setdefault("namespace", fleet.namespace)
    return fleet.run("placement", check_mode=check_mode, diff=diff, name=name, **args)


def test_label_selected_clusters_decided_binding_created_rerun_unchanged(fleet):
    args = dict(cluster_sets=[fleet.cluster_set], bind_cluster_sets=True, predicates=DEV, wait=True, wait_timeout=60)
    planned = ok(place(fleet, "dev", check_mode=True, diff=True, **args))
    assert planned["changed"] is True and planned["clusters"] == []
    assert planned["objects"] == ["ManagedClusterSetBinding/plc-apps/plc-fleet: created", "Placement/plc-apps/dev: created"]
    assert planned["diff"][1]["after"]["spec"]["predicates"] == [
        {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"environment": "dev"}}}}]
    assert resources.get(fleet.hub, ocm.PLACEMENT, "dev", fleet.namespace) is None
    assert resources.get(fleet.hub, ocm.MANAGED_CLUSTER_SET_BINDING, fleet.cluster_set, fleet.namespace) is None

    first = ok(place(fleet, "dev", **args))
    assert (first["changed"], first["action"], first["clusters"]) == (True, "created", fleet.dev)
    assert (first["satisfied"], first["misconfigured"], first["number_of_selected_clusters"]) == (True, False, 2)
    satisfied = [c for c in first["conditions"] if c["type"] == "PlacementSatisfied"][0]
    assert (satisfied["reason"], satisfied["message"]) == ("AllDecisionsScheduled", "All cluster decisions scheduled")
    decisions = resources.list_objects(fleet.hub, ocm.PLACEMENT_DECISION, fleet.namespace,
                                       label_selector="cluster.open-cluster-management.io/placement=dev")
    assert [d["metadata"]["name"] for d in decisions] == ["dev-decision-1"]
    assert decisions[0]["metadata"]["labels"]["cluster.open-cluster-management.io/decision-group-index"] == "0"
    assert decisions[0]["metadata"]["ownerReferences"][0]["kind"] == "Placement"

    again = ok(place(fleet, "dev", **args))
    assert (again["changed"], again["action"], again["clusters"]) == (False, "unchanged", fleet.dev)
    assert again["objects"] == ["Placement/plc-apps/dev: unchanged"]


def test_groups_number_and_update(fleet):
    args = dict(cluster_sets=[fleet.cluster_set], bind_cluster_sets=True, wait=True, wait_timeout=60)
    grouped = ok(place(fleet, "grouped", decision_groups=[{"group_name": "prod", "label_selector": {"match_labels": {"environment": "prod"}}}],
                       clusters_per_decision_group=1, **args))
    assert grouped["clusters"] == fleet.clusters
    assert grouped["decision_groups"] == [{"index": 0, "name": "prod", "clusters": fleet.prod},
                                          {"index": 1, "name": "", "clusters": fleet.dev[:1]},
                                          {"index": 2, "name": "", "clusters": fleet.dev[1:]}]
    limited = ok(place(fleet, "grouped", number_of_clusters=1, predicates=DEV, **args))
    assert limited["action"] == "updated" and "decisionStrategy" not in limited["object"]["spec"]
    # The controller records no generation: wait until it reports the new spec's decision.
    ungrouped = [{"index": 0, "name": "", "clusters": fleet.dev[:1]}]
    resources.wait_until(lambda: (place(fleet, "grouped", number_of_clusters=1, predicates=DEV, **args)["decision_groups"] == ungrouped,
                                  "not yet"), 30, "the placement controller to decide the updated placement")
    final = ok(place(fleet, "grouped", number_of_clusters=1, predicates=DEV, **args))
    assert (final["changed"], final["clusters"], final["decision_groups"]) == (False, fleet.dev[:1], ungrouped)


def test_claims_and_tolerations(fleet):
    tainted, claimed = fleet.dev
    resources.ensure(fleet.hub, ocm.MANAGED_CLUSTER, {"metadata": {"name": tainted}, "spec": {"taints": [
        {"key": "cluster.open-cluster-management.io/unreachable", "effect": "NoSelect", "timeAdded": "2026-11-22T03:25:40Z"}]}})
    fleet.hub.request("PATCH", ocm.MANAGED_CLUSTER.path(name=claimed, subresource="status"), content_type=resources.MERGE_PATCH,
                      body={"status": {"clusterClaims": [{"name": "platform.open-cluster-management.io", "value": "AWS"}]}})
    try:
        args = dict(cluster_sets=[fleet.cluster_set], bind_cluster_sets=True, wait=True, wait_timeout=60, predicates=DEV)
        assert ok(place(fleet, "untainted", **args))["clusters"] == [claimed]
        tolerating = ok(place(fleet, "tolerating", tolerations=[{"key": "cluster.open-cluster-management.io/unreachable",
                                                                 "operator": "Exists"}], **args))
        assert tolerating["clusters"] == fleet.dev
        aws = ok(place(fleet, "aws", cluster_sets=[fleet.cluster_set], bind_cluster_sets=True, wait=True, wait_timeout=60, predicates=[
            {"claim_selector": {"match_expressions": [{"key": "platform.open-cluster-management.io", "operator": "In", "values": ["AWS"]}]}}]))
        assert aws["clusters"] == [claimed]
    finally:
        resources.ensure(fleet.hub, ocm.MANAGED_CLUSTER, {"metadata": {"name": tainted}, "spec": {"taints": None}})


def test_namespace_without_binding_and_missing_sets_are_refused(fleet):
    unbound = fails(place(fleet, "dev", namespace="default", cluster_sets=[fleet.cluster_set]),
                    "cluster 'hub' (%s): Placement default/dev: namespace default has no ManagedClusterSetBinding for cluster set(s) plc-fleet"
                    % fleet.hub.server, "set bind_cluster_sets=true")
    assert "changed" not in unbound or unbound["changed"] is False
    assert resources.get(fleet.hub, ocm.PLACEMENT, "dev", "default") is None
    fails(place(fleet, "dev", cluster_sets=["no-such-set"], bind_cluster_sets=True),
          "Placement plc-apps/dev names ManagedClusterSet(s) no-such-set, which do not exist")
    fails(place(fleet, "dev", namespace="plc-missing", cluster_sets=[fleet.cluster_set]), "namespace plc-missing does not exist")
    fails(place(fleet, "bad", cluster_sets=[fleet.cluster_set], tolerations=[{"value": "x"}]),
          "tolerations[0]: a toleration without key must use operator Exists")
    fails(place(fleet, "bad", cluster_sets=[fleet.cluster_set], clusters_per_decision_group="150%"),
          "clusters_per_decision_group '150%' must be a number of clusters")
    assert resources.get(fleet.hub, ocm.PLACEMENT, "bad", fleet.namespace) is None


def test_absent_removes_placement_and_its_decisions(fleet):
    ok(place(fleet, "doomed", cluster_sets=[fleet.cluster_set], bind_cluster_sets=True, predicates=DEV, wait=True, wait_timeout=60))
    planned = ok(place(fleet, "doomed", state="absent", check_mode=True))
    assert planned["changed"] is True and resources.get(fleet.hub, ocm.PLACEMENT, "doomed", fleet.namespace) is not None
    removed = ok(place(fleet, "doomed", state="absent", wait=True, wait_timeout=60))
    assert (removed["changed"], removed["action"]) == (True, "deleted")
    resources.wait_until(lambda: (not resources.list_objects(fleet.hub, ocm.PLACEMENT_DECISION, fleet.namespace,
                                                             label_selector="cluster.open-cluster-management.io/placement=doomed"),
                                  "decisions left"), 60, "the garbage collector to remove the decisions")
    assert resources.get(fleet.hub, ocm.MANAGED_CLUSTER_SET_BINDING, fleet.cluster_set, fleet.namespace) is not None
    assert ok(place(fleet, "doomed", state="absent"))["changed"] is False
