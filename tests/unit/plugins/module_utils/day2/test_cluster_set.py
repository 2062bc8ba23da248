import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import cluster_set
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import placement
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import (
    CLUSTER_SET_LABEL, MANAGED_CLUSTER, MANAGED_CLUSTER_SET, MANAGED_CLUSTER_SET_BINDING, PLACEMENT)
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import NAMESPACE

from ocm_fake import ocm_hub


def managed(name, **labels):
    return {"metadata": {"name": name, "labels": labels}, "spec": {"hubAcceptsClient": True}}


@pytest.fixture
def hub(fake_cluster):
    fake = ocm_hub(fake_cluster)
    for namespace in ("default", "apps"):
        fake.add(NAMESPACE, {"metadata": {"name": namespace}})
    fake.add(MANAGED_CLUSTER_SET, {"metadata": {"name": "default"}, "spec": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}})
    fake.add(MANAGED_CLUSTER_SET, {"metadata": {"name": "other"}, "spec": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}})
    fake.add(MANAGED_CLUSTER, managed("c1", environment="dev", **{CLUSTER_SET_LABEL: "default"}))
    fake.add(MANAGED_CLUSTER, managed("c2", environment="dev"))
    fake.add(MANAGED_CLUSTER, managed("c3", environment="prod", **{CLUSTER_SET_LABEL: "other"}))
    return fake


def params(**overrides):
    base = dict(name="prod", selector_type=None, label_selector=None, clusters=None, remove_clusters=None, move=False,
                bind_namespaces=None, unbind_namespaces=None)
    base.update(overrides)
    return base


def set_label(hub, cluster):
    return (hub.objects[MANAGED_CLUSTER.path(name=cluster)]["metadata"].get("labels") or {}).get(CLUSTER_SET_LABEL)


def writes(hub):
    return [(method, path) for method, path, query in hub.calls if method != "GET" and query.get("dryRun") != "All"]


class TestBuild:
    def test_a_new_set_is_exclusive_and_an_existing_one_keeps_its_type(self):
        assert cluster_set.build("s") == {"metadata": {"name": "s"}, "spec": {"clusterSelector": {
            "selectorType": "ExclusiveClusterSetLabel", "labelSelector": None}}}
        stored = {"metadata": {"name": "s"}, "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}}}
        assert cluster_set.build("s", existing=stored)["spec"] == {"clusterSelector": {"selectorType": "LabelSelector"}}

    def test_label_selector_sets(self):
        built = cluster_set.build("dev", "LabelSelector", {"match_labels": {"environment": "dev"}, "match_expressions": [
            {"key": "region", "operator": "NotIn", "values": ["eu"]}]})
        assert built["spec"]["clusterSelector"] == {"selectorType": "LabelSelector", "labelSelector": {
            "matchLabels": {"environment": "dev"}, "matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["eu"]}]}}
        every = cluster_set.build("all", "LabelSelector", {"match_labels": None, "match_expressions": None})
        assert every["spec"]["clusterSelector"]["labelSelector"] == {"matchLabels": None, "matchExpressions": None}

    @pytest.mark.parametrize("args, message", [
        (("LabelSelector", None), "selector_type LabelSelector needs label_selector"),
        (("ExclusiveClusterSetLabel", {"match_labels": {"a": "b"}}), "label_selector is for selector_type LabelSelector"),
        (("Exclusive", None), "selector_type must be ExclusiveClusterSetLabel or LabelSelector, got 'Exclusive'"),
        (("LabelSelector", {"match_expressions": [{"key": "a", "operator": "In"}]}), "operator In needs values"),
        (("LabelSelector", {"match_labels": {"Bad Key!": "v"}}), "label_selector.match_labels key 'Bad Key!': its name must be"),
        (("LabelSelector", {"match_labels": {"env": "a,b"}}), r"label_selector.match_labels\['env'\] = 'a,b'"),
    ])
    def test_bad_selectors(self, args, message):
        with pytest.raises(FleetError, match=message):
            cluster_set.build("s", *args)

    @pytest.mark.parametrize("name", ["Prod", "p" * 64, "", "a.b", "-a", None])
    def test_names_are_dns_labels(self, name):
        with pytest.raises(FleetError, match="invalid cluster set name %r" % (name,)):
            cluster_set.validate_name(name)


class TestSelects:
    @pytest.mark.parametrize("selector, expected", [
        (None, False), ({}, True), ({"matchLabels": {"env": "dev"}}, True), ({"matchLabels": {"env": "prod"}}, False),
        ({"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev", "qa"]}]}, True),
        ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True),
        ({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}, False),
        ({"matchExpressions": [{"key": "env", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}, False),
    ])
    def test_kubernetes_label_selector_semantics(self, selector, expected):
        assert cluster_set.selects(selector, {"env": "dev"}) is expected


class TestMembership:
    def clusters(self, hub):
        return [o for p, o in sorted(hub.objects.items()) if p.startswith(MANAGED_CLUSTER.path() + "/")]

    def plan(self, hub, clusters=None, remove=None, move=False, kind="ExclusiveClusterSetLabel"):
        return cluster_set.plan_membership("prod", kind, clusters, remove, move, self.clusters(hub), {"default", "other", "prod"})

    def test_clusters_of_no_set_or_of_default_join_and_others_need_move(self, hub):
        assert self.plan(hub, ["c1", "c2"]) == {"c1": "prod", "c2": "prod"}
        with pytest.raises(FleetError, match=r"these are in another: c3 \(in set other\); set move=true"):
            self.plan(hub, ["c2", "c3"])
        assert self.plan(hub, ["c3"], move=True) == {"c3": "prod"}

    def test_a_label_naming_a_set_that_does_not_exist_is_no_set(self, hub):
        assert cluster_set.plan_membership("prod", "ExclusiveClusterSetLabel", ["c3"], None, False, self.clusters(hub),
                                           {"default", "prod"}) == {"c3": "prod"}

    def test_removal_only_of_members(self, hub):
        hub.objects[MANAGED_CLUSTER.path(name="c2")]["metadata"]["labels"][CLUSTER_SET_LABEL] = "prod"
        assert self.plan(hub, remove=["c2", "c3"]) == {"c2": None}

    def test_unregistered_clusters_overlaps_and_selector_sets_fail(self, hub):
        with pytest.raises(FleetError, match="cluster set prod: cluster\\(s\\) nowhere, gone not registered on the hub"):
            self.plan(hub, ["c1", "nowhere"], ["gone"])
        with pytest.raises(FleetError, match="c1 both in clusters and in remove_clusters"):
            self.plan(hub, ["c1"], ["c1"])
        with pytest.raises(FleetError, match="selects its clusters with a label selector"):
            self.plan(hub, ["c1"], kind="LabelSelector")
        assert self.plan(hub, kind="LabelSelector") == {}


class TestPresent:
    def test_unregistered_clusters_fail_or_are_skipped(self, hub):
        with pytest.raises(FleetError, match="cluster\\(s\\) nowhere not registered"):
            cluster_set.present(hub, "ocm", params(clusters=["c1", "nowhere"]))
        assert writes(hub) == []
        done = cluster_set.present(hub, "ocm", params(clusters=["c1", "nowhere"], remove_clusters=["gone"], unregistered="skip"))
        assert (done["clusters"], done["clusters_unregistered"]) == (["c1"], ["gone", "nowhere"])
        again = cluster_set.present(hub, "ocm", params(clusters=["c1"]))
        assert (again["changed"], again["clusters_unregistered"]) == (False, [])

    def test_create_with_members_and_binding_then_rerun_unchanged(self, hub):
        first = cluster_set.present(hub, "ocm", params(clusters=["c1", "c2"], bind_namespaces=["apps"]))
        assert (first["changed"], first["action"], first["clusters"], first["bound_namespaces"]) == (
            True, "created", ["c1", "c2"], ["apps"])
        assert first["objects"] == ["ManagedClusterSet/prod: created", "ManagedCluster/c1: updated", "ManagedCluster/c2: updated",
                                    "ManagedClusterSetBinding/apps/prod: created"]
        assert first["diff"][1] == {"before": {"metadata": {"labels": {"environment": "dev", CLUSTER_SET_LABEL: "default"}}},
                                    "after": {"metadata": {"labels": {"environment": "dev", CLUSTER_SET_LABEL: "prod"}}},
                                    "before_header": "ManagedCluster/c1", "after_header": "ManagedCluster/c1"}
        assert set_label(hub, "c1") == set_label(hub, "c2") == "prod"
        assert hub.objects[MANAGED_CLUSTER_SET_BINDING.path("apps", "prod")]["spec"] == {"clusterSet": "prod"}
        again = cluster_set.present(hub, "ocm", params(clusters=["c1", "c2"], bind_namespaces=["apps"]))
        assert (again["changed"], again["objects"], again["clusters"], again["bound_namespaces"]) == (
            False, ["ManagedClusterSet/prod: unchanged", "ManagedClusterSetBinding/apps/prod: unchanged"], ["c1", "c2"], ["apps"])

    def test_check_mode_writes_nothing_and_predicts_the_members(self, hub):
        planned = cluster_set.present(hub, "ocm", params(clusters=["c3"], move=True, bind_namespaces=["apps"]), check_mode=True)
        assert planned["changed"] is True and planned["clusters"] == ["c3"] and planned["bound_namespaces"] == ["apps"]
        assert writes(hub) == [] and set_label(hub, "c3") == "other"
        assert MANAGED_CLUSTER_SET.path(name="prod") not in hub.objects

    def test_nothing_is_written_when_a_check_fails(self, hub):
        for bad in (dict(clusters=["c3"]), dict(clusters=["missing"]), dict(bind_namespaces=["nowhere"]),
                    dict(bind_namespaces=["apps"], unbind_namespaces=["apps"]), dict(name="Bad")):
            with pytest.raises(FleetError):
                cluster_set.present(hub, "ocm", params(**bad))
        assert writes(hub) == []

    def test_remove_move_and_unbind(self, hub):
        cluster_set.present(hub, "ocm", params(clusters=["c1", "c2"], bind_namespaces=["apps", "default"]))
        result = cluster_set.present(hub, "ocm", params(remove_clusters=["c1"], unbind_namespaces=["default"]))
        assert (result["clusters"], result["bound_namespaces"]) == (["c2"], ["apps"])
        assert set_label(hub, "c1") is None and MANAGED_CLUSTER_SET_BINDING.path("default", "prod") not in hub.objects
        assert result["objects"] == ["ManagedClusterSet/prod: unchanged", "ManagedCluster/c1: updated",
                                     "ManagedClusterSetBinding/default/prod: deleted"]

    def test_label_selector_set_members_and_selector_update(self, hub):
        dev = cluster_set.present(hub, "ocm", params(name="dev", selector_type="LabelSelector",
                                                     label_selector={"match_labels": {"environment": "dev"}}))
        assert (dev["action"], dev["selector_type"], dev["clusters"]) == ("created", "LabelSelector", ["c1", "c2"])
        kept = cluster_set.present(hub, "ocm", params(name="dev"))
        assert (kept["action"], kept["clusters"]) == ("unchanged", ["c1", "c2"])
        every = cluster_set.present(hub, "ocm", params(name="dev", label_selector={"match_labels": None, "match_expressions": None}))
        assert (every["action"], every["clusters"]) == ("updated", ["c1", "c2", "c3"])
        assert hub.objects[MANAGED_CLUSTER_SET.path(name="dev")]["spec"]["clusterSelector"] == {"selectorType": "LabelSelector",
                                                                                                "labelSelector": {}}
        exclusive = cluster_set.present(hub, "ocm", params(name="dev", selector_type="ExclusiveClusterSetLabel"))
        assert exclusive["action"] == "updated" and exclusive["clusters"] == []
        assert "labelSelector" not in hub.objects[MANAGED_CLUSTER_SET.path(name="dev")]["spec"]["clusterSelector"]

    def test_karmada_has_no_cluster_sets(self, hub):
        for call in (lambda: cluster_set.present(hub, "karmada", params()), lambda: cluster_set.absent(hub, "karmada", "prod")):
            with pytest.raises(FleetError, match="cluster sets are an OCM concept .*engine is karmada"):
                call()
        assert engines.get("karmada").cluster_set_label is None
        assert engines.get("ocm").cluster_set_label == CLUSTER_SET_LABEL


class TestAbsent:
    def test_refused_while_bound_or_used_then_forced(self, hub):
        cluster_set.present(hub, "ocm", params(clusters=["c2"], bind_namespaces=["apps"]))
        hub.add(PLACEMENT, {"metadata": {"name": "p", "namespace": "default"}, "spec": {"clusterSets": ["prod"]}})
        hub.add(PLACEMENT, {"metadata": {"name": "all", "namespace": "apps"}, "spec": {}})
        with pytest.raises(FleetError) as error:
            cluster_set.absent(hub, "ocm", "prod")
        assert error.value.msg == ("cluster 'hub' (https://fake): cluster set prod is still bound to namespace(s) apps and "
                                   "used by Placement(s) apps/all, default/p; unbind it first (unbind_namespaces) and change "
                                   "those placements, or set force=true to delete it with its bindings")
        planned = cluster_set.absent(hub, "ocm", "prod", force=True, check_mode=True)
        assert planned["changed"] is True and writes(hub)[-1][0] != "DELETE"
        done = cluster_set.absent(hub, "ocm", "prod", force=True)
        assert (done["changed"], done["action"], done["objects"]) == (
            True, "deleted", ["ManagedClusterSetBinding/apps/prod: deleted", "ManagedClusterSet/prod: deleted"])
        assert set_label(hub, "c2") == "prod"  # as clusteradm leaves it
        again = cluster_set.absent(hub, "ocm", "prod")
        assert (again["changed"], again["action"]) == (False, "absent")

    def test_an_unused_set_is_deleted_and_the_hubs_own_never(self, hub):
        assert cluster_set.absent(hub, "ocm", "other")["action"] == "deleted"
        for name in ("default", "global"):
            with pytest.raises(FleetError, match="cluster set %s is the hub's own" % name):
                cluster_set.absent(hub, "ocm", name, force=True)


def test_placement_label_selector_is_shared():
    assert placement.label_selector({"match_labels": {"a": "b"}}, "x") == {"matchLabels": {"a": "b"}, "matchExpressions": None}
    assert placement.label_selector({}, "x") is None
