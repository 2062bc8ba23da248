import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import placement
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import (
    MANAGED_CLUSTER_SET, MANAGED_CLUSTER_SET_BINDING, PLACEMENT, PLACEMENT_DECISION)
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import NAMESPACE

from ocm_fake import ocm_hub


@pytest.fixture
def hub(fake_cluster):
    fake = ocm_hub(fake_cluster)
    fake.add(NAMESPACE, {"metadata": {"name": "default"}})
    fake.add(MANAGED_CLUSTER_SET, {"metadata": {"name": "fleet"}, "spec": {}})
    return fake


def params(**overrides):
    base = dict(name="dev", namespace="default", cluster_sets=["fleet"], bind_cluster_sets=True, number_of_clusters=None,
                predicates=[{"label_selector": {"match_labels": {"environment": "dev"}, "match_expressions": None},
                             "claim_selector": None}],
                tolerations=None, decision_groups=None, clusters_per_decision_group=None)
    base.update(overrides)
    return base


def decision(name, index, group, clusters, placement_name="dev"):
    return {"metadata": {"name": name, "namespace": "default", "labels": {
        placement.PLACEMENT_LABEL: placement_name, placement.DECISION_GROUP_INDEX_LABEL: str(index),
        placement.DECISION_GROUP_NAME_LABEL: group}},
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]}}


def scheduled(hub, selected=2):
    """What the placement controller writes for placement dev: status and one decision."""
    stored = hub.objects[PLACEMENT.path("default", "dev")]
    stored["status"] = {"numberOfSelectedClusters": selected, "conditions": [
        {"type": "PlacementSatisfied", "status": "True", "reason": "AllDecisionsScheduled", "message": "All cluster decisions scheduled"},
        {"type": "PlacementMisconfigured", "status": "False", "reason": "Succeedconfigured", "message": "ok"}]}
    hub.add(PLACEMENT_DECISION, decision("dev-decision-1", 0, "", ["cluster1", "cluster2"][:selected]))


class TestBuild:
    def test_the_documented_placement_with_every_unset_field_null(self):
        built = placement.build("placement-aws", "default", predicates=[{"claim_selector": {"match_expressions": [
            {"key": "platform.open-cluster-management.io", "operator": "In", "values": ["aws"]}]}}])
        assert built["spec"] == {
            "clusterSets": None, "numberOfClusters": None, "tolerations": None, "decisionStrategy": None,
            "predicates": [{"requiredClusterSelector": {"labelSelector": None, "claimSelector": {"matchExpressions": [
                {"key": "platform.open-cluster-management.io", "operator": "In", "values": ["aws"]}]}}}]}

    def test_label_selector_tolerations_groups_and_number(self):
        built = placement.build("p", "ns", ["a", "b"], 3,
                                [{"label_selector": {"match_labels": {"env": "dev"},
                                                     "match_expressions": [{"key": "local-cluster", "operator": "DoesNotExist"}]}}],
                                [{"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists", "toleration_seconds": 300}],
                                [{"group_name": "canary", "label_selector": {"match_labels": {"canary": "true"}}}], "25%")
        spec = built["spec"]
        assert spec["clusterSets"] == ["a", "b"] and spec["numberOfClusters"] == 3
        assert spec["predicates"][0]["requiredClusterSelector"] == {"claimSelector": None, "labelSelector": {
            "matchLabels": {"env": "dev"}, "matchExpressions": [{"key": "local-cluster", "operator": "DoesNotExist", "values": None}]}}
        assert spec["tolerations"] == [{"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists",
                                        "value": None, "effect": None, "tolerationSeconds": 300}]
        assert spec["decisionStrategy"] == {"groupStrategy": {"clustersPerDecisionGroup": "25%", "decisionGroups": [
            {"groupName": "canary", "groupClusterSelector": {"labelSelector": {"matchLabels": {"canary": "true"}, "matchExpressions": None},
                                                             "claimSelector": None}}]}}

    def test_group_size_alone_and_as_number(self):
        assert placement.build("p", "ns", clusters_per_decision_group="2")["spec"]["decisionStrategy"] == {
            "groupStrategy": {"decisionGroups": None, "clustersPerDecisionGroup": 2}}
        groups = [{"group_name": "canary", "label_selector": {"match_labels": {"canary": "true"}}}]
        assert placement.build("p", "ns", decision_groups=groups)["spec"]["decisionStrategy"]["groupStrategy"][
            "clustersPerDecisionGroup"] == "100%"

    @pytest.mark.parametrize("size", ["0", "150%", "abc", "0%", "-1"])
    def test_bad_group_sizes(self, size):
        with pytest.raises(FleetError, match="clusters_per_decision_group"):
            placement.build("p", "ns", clusters_per_decision_group=size)

    @pytest.mark.parametrize("expression, message", [
        ({"key": "env", "operator": "In", "values": []}, "operator In needs values"),
        ({"key": "env", "operator": "Exists", "values": ["x"]}, "operator Exists takes no values"),
    ])
    def test_expressions_are_checked(self, expression, message):
        with pytest.raises(FleetError, match=r"predicates\[0\].label_selector.match_expressions\[0\] \(key env\): " + message):
            placement.build("p", "ns", predicates=[{"label_selector": {"match_expressions": [expression]}}])

    @pytest.mark.parametrize("selector, message", [
        ({"match_labels": {"Bad Key!": "v"}}, "predicates[0].label_selector.match_labels key 'Bad Key!': its name must be"),
        ({"match_labels": {"env": "a,b"}}, "predicates[0].label_selector.match_labels['env'] = 'a,b': a label value must be"),
        ({"match_expressions": [{"key": "env\n", "operator": "Exists"}]},
         "predicates[0].label_selector.match_expressions[0] key 'env\\n': its name must be"),
        ({"match_expressions": [{"key": "env", "operator": "In", "values": ["a", "b,c"]}]},
         "predicates[0].label_selector.match_expressions[0] (key env) values[1] = 'b,c': a label value must be"),
    ])
    def test_label_selectors_kubernetes_cannot_parse_are_refused(self, selector, message):
        """Issue 46, item 8: the placement controller parses them with metav1.LabelSelectorAsSelector."""
        with pytest.raises(FleetError) as info:
            placement.build("p", "ns", predicates=[{"label_selector": selector}])
        assert info.value.msg.startswith("invalid selector, Kubernetes cannot parse it: ") and message in info.value.msg
        with pytest.raises(FleetError, match="claim_selector.match_expressions.0. key 'Bad Key!'"):
            placement.build("p", "ns", predicates=[{"claim_selector": {"match_expressions": [
                {"key": "Bad Key!", "operator": "Exists"}]}}])
        with pytest.raises(FleetError, match=r"decision_groups\[0\].label_selector.match_labels key 'Bad Key!'"):
            placement.build("p", "ns", decision_groups=[{"group_name": "canary", "label_selector": {"match_labels": {"Bad Key!": "v"}}}])

    def test_selector_values_as_text(self):
        built = placement.build("p", "ns", predicates=[{"label_selector": {"match_labels": {"gpu": True, "n": 3}}}])
        assert built["spec"]["predicates"][0]["requiredClusterSelector"]["labelSelector"]["matchLabels"] == {"gpu": "true", "n": "3"}

    @pytest.mark.parametrize("toleration, message", [
        ({"operator": "Equal", "value": "x"}, "without key must use operator Exists"),
        ({"key": "k", "operator": "Exists", "value": "x"}, "operator Exists takes no value"),
    ])
    def test_tolerations_are_checked_as_the_controller_does(self, toleration, message):
        with pytest.raises(FleetError, match=r"tolerations\[0\]: .*" + message):
            placement.build("p", "ns", tolerations=[toleration])

    def test_empty_predicate_and_bad_groups(self):
        with pytest.raises(FleetError, match=r"predicates\[0\] selects nothing"):
            placement.build("p", "ns", predicates=[{"label_selector": None}])
        with pytest.raises(FleetError, match="group_name 'bad name'"):
            placement.build("p", "ns", decision_groups=[{"group_name": "bad name", "label_selector": {"match_labels": {"a": "b"}}}])
        with pytest.raises(FleetError, match=r"decision_groups\[0\] \(canary\): give a label_selector"):
            placement.build("p", "ns", decision_groups=[{"group_name": "canary"}])
        with pytest.raises(FleetError, match="number_of_clusters must be 0 or more"):
            placement.build("p", "ns", number_of_clusters=-1)


class TestBindings:
    def test_an_unbound_set_fails_naming_the_hub_the_placement_and_the_fix(self, hub):
        with pytest.raises(FleetError) as error:
            placement.plan_bindings(hub, "dev", "default", ["fleet"], bind=False)
        assert error.value.msg.startswith("cluster 'hub' (https://fake): Placement default/dev: namespace default has no "
                                          "ManagedClusterSetBinding for cluster set(s) fleet")
        assert "bind_cluster_sets=true" in error.value.msg

    def test_binding_planned_when_asked_and_nothing_when_bound(self, hub):
        assert placement.plan_bindings(hub, "dev", "default", ["fleet"], bind=True) == [
            {"metadata": {"name": "fleet", "namespace": "default"}, "spec": {"clusterSet": "fleet"}}]
        hub.add(MANAGED_CLUSTER_SET_BINDING, placement.binding("default", "fleet"))
        assert placement.plan_bindings(hub, "dev", "default", ["fleet"], bind=False) == []

    def test_missing_set_namespace_and_no_binding_at_all(self, hub):
        with pytest.raises(FleetError, match="names ManagedClusterSet\\(s\\) global, which do not exist"):
            placement.plan_bindings(hub, "dev", "default", ["fleet", "global"], bind=True)
        with pytest.raises(FleetError, match="namespace apps does not exist"):
            placement.plan_bindings(hub, "dev", "apps", ["fleet"], bind=True)
        with pytest.raises(FleetError, match="names no cluster set and namespace default has no ManagedClusterSetBinding"):
            placement.plan_bindings(hub, "dev", "default", [], bind=True)
        hub.add(MANAGED_CLUSTER_SET_BINDING, placement.binding("default", "fleet"))
        assert placement.plan_bindings(hub, "dev", "default", [], bind=False) == []

    def test_a_binding_to_a_missing_set_does_not_count(self, hub):
        hub.add(MANAGED_CLUSTER_SET_BINDING, placement.binding("default", "gone"))
        assert placement.missing_bindings(hub, "default", []) == ([], [None])


class TestDecisions:
    def test_groups_and_clusters_from_the_decisions(self):
        found = [decision("dev-decision-2", 1, "", ["c3"]), decision("dev-decision-1", 0, "canary", ["c2", "c1"])]
        assert placement.decided_clusters(found) == ["c1", "c2", "c3"]
        assert placement.decision_groups(found) == [{"index": 0, "name": "canary", "clusters": ["c1", "c2"]},
                                                    {"index": 1, "name": "", "clusters": ["c3"]}]

    def test_scheduled_once_the_controller_reported_every_selected_cluster(self):
        obj = {"status": {"numberOfSelectedClusters": 2, "conditions": [{"type": "PlacementSatisfied", "status": "True"}]}}
        assert placement.scheduled(None, []) == (False, "the Placement does not exist")
        assert placement.scheduled({"status": {}}, [])[1].startswith("no PlacementSatisfied condition yet")
        assert placement.scheduled(obj, [decision("d", 0, "", ["c1"])]) == (False, "1 of 2 selected clusters in PlacementDecisions")
        assert placement.scheduled(obj, [decision("d", 0, "", ["c1", "c2"])]) == (True, None)
        misconfigured = {"status": {"conditions": [{"type": "PlacementMisconfigured", "status": "True"}]}}
        assert placement.scheduled(misconfigured, []) == (True, None)


class TestPresentAndAbsent:
    def test_create_binds_then_reruns_unchanged(self, hub):
        first = placement.present(hub, params())
        assert first["changed"] is True and first["action"] == "created"
        assert first["objects"] == ["ManagedClusterSetBinding/default/fleet: created", "Placement/default/dev: created"]
        assert hub.objects[MANAGED_CLUSTER_SET_BINDING.path("default", "fleet")]["spec"] == {"clusterSet": "fleet"}
        stored = hub.objects[PLACEMENT.path("default", "dev")]
        assert stored["spec"] == {"clusterSets": ["fleet"], "predicates": [
            {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"environment": "dev"}}}}]}
        assert [d["before_header"] for d in first["diff"]] == ["ManagedClusterSetBinding/default/fleet", "Placement/default/dev"]
        again = placement.present(hub, params())
        assert (again["changed"], again["action"], again["objects"]) == (False, "unchanged", ["Placement/default/dev: unchanged"])

    def test_check_mode_writes_nothing(self, hub):
        result = placement.present(hub, params(), check_mode=True, wait=True)
        assert result["changed"] is True and result["clusters"] == []
        assert PLACEMENT.path("default", "dev") not in hub.objects
        assert all(query.get("dryRun") == "All" for method, _path, query in hub.calls if method != "GET")

    def test_fields_left_out_are_removed(self, hub):
        placement.present(hub, params(tolerations=[{"key": "k", "operator": "Exists"}], number_of_clusters=1))
        updated = placement.present(hub, params())
        assert updated["action"] == "updated"
        spec = hub.objects[PLACEMENT.path("default", "dev")]["spec"]
        assert "tolerations" not in spec and "numberOfClusters" not in spec

    def test_a_selector_removed_from_a_predicate_is_an_update(self, hub):
        both = [{"label_selector": {"match_labels": {"environment": "dev"}},
                 "claim_selector": {"match_expressions": [{"key": "region", "operator": "Exists"}]}}]
        placement.present(hub, params(predicates=both))
        assert placement.present(hub, params())["action"] == "updated"
        assert hub.objects[PLACEMENT.path("default", "dev")]["spec"]["predicates"] == [
            {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"environment": "dev"}}}}]
        assert placement.present(hub, params())["action"] == "unchanged"

    def test_wait_returns_the_decided_clusters(self, hub):
        placement.present(hub, params())
        scheduled(hub)
        result = placement.present(hub, params(), wait=True, timeout=0)
        assert (result["clusters"], result["satisfied"], result["number_of_selected_clusters"]) == (["cluster1", "cluster2"], True, 2)
        assert result["decision_groups"] == [{"index": 0, "name": "", "clusters": ["cluster1", "cluster2"]}]

    def test_wait_timeout_says_what_was_last_seen(self, hub):
        with pytest.raises(FleetError) as error:
            placement.present(hub, params(), wait=True, timeout=0)
        assert "waiting for the placement controller to decide Placement default/dev on cluster 'hub' (https://fake)" in error.value.msg
        assert "no PlacementSatisfied condition yet" in error.value.msg
        assert error.value.details["changed"] is True

    def test_misconfigured_placement_fails_with_the_controller_message(self, hub):
        placement.present(hub, params())
        hub.objects[PLACEMENT.path("default", "dev")]["status"] = {"conditions": [
            {"type": "PlacementMisconfigured", "status": "True", "reason": "Misconfigured", "message": "Predicate:bad selector"}]}
        with pytest.raises(FleetError, match="reports Placement default/dev misconfigured: Predicate:bad selector"):
            placement.present(hub, params(), wait=True, timeout=0)

    def test_absent_deletes_the_placement_and_keeps_bindings(self, hub):
        placement.present(hub, params())
        removed = placement.absent(hub, "dev", "default")
        assert (removed["changed"], removed["action"]) == (True, "deleted")
        assert PLACEMENT.path("default", "dev") not in hub.objects
        assert MANAGED_CLUSTER_SET_BINDING.path("default", "fleet") in hub.objects
        assert placement.absent(hub, "dev", "default", wait=True)["action"] == "absent"
