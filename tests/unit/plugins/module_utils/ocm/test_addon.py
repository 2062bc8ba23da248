import hashlib

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import addon, placement
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import (
    ADDON_DEPLOYMENT_CONFIG, CLUSTER_MANAGEMENT_ADDON, MANAGED_CLUSTER, MANAGED_CLUSTER_ADDON, MANAGED_CLUSTER_SET,
    MANAGED_CLUSTER_SET_BINDING, PLACEMENT, PLACEMENT_DECISION)
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import NAMESPACE

from ocm_fake import ocm_hub

GROUP = "addon.open-cluster-management.io"
ADC = "addondeploymentconfigs"
WHERE = "install_strategy.placements[0] (default/dev)"


def config(name, namespace="default", resource=ADC):
    return {"group": GROUP, "resource": resource, "name": name, "namespace": namespace}


def strategy_field(kind, settings=None):
    """A rolloutStrategy as built: the type's settings (or None), the other types' settings None."""
    built = {"all": None, "progressive": None, "progressivePerGroup": None, "type": kind}
    built[addon.ROLLOUT_TYPES[kind]] = settings
    return built


def ref(name, namespace="default", resource=ADC, spec_hash=None):
    return dict((k, v) for k, v in (("group", GROUP), ("resource", resource), ("name", name), ("namespace", namespace),
                                    ("specHash", spec_hash)) if v)


def strategy(rollout=None, configs=None, name="dev"):
    return {"name": name, "namespace": "default", "configs": configs, "rollout_strategy": rollout}


def rollout(kind="All", **settings):
    return dict(dict.fromkeys(("max_concurrency", "mandatory_decision_groups", "min_success_time", "progress_deadline",
                               "max_failures")), type=kind, **settings)


def params(**overrides):
    base = dict(name="helloworld", display_name="helloworld", description=None,
                supported_configs=[{"group": GROUP, "resource": ADC, "default_config": {"name": "default-config", "namespace": "default"}}],
                install_strategy={"type": "Placements", "placements": [
                    strategy(rollout("Progressive", max_concurrency="50%"), [config("placement-config")])]},
                clusters=[{"name": "cluster1", "install_namespace": None, "configs": [config("cluster1-config")]}])
    base.update(overrides)
    return base


@pytest.fixture
def hub(fake_cluster):
    """Clusters cluster1..3 accepted with namespaces; placement default/dev bound to set fleet, deciding cluster1 and 2."""
    fake = ocm_hub(fake_cluster)
    fake.add(NAMESPACE, {"metadata": {"name": "default"}})
    for name in ("cluster1", "cluster2", "cluster3"):
        fake.add(MANAGED_CLUSTER, {"metadata": {"name": name}, "spec": {"hubAcceptsClient": True}})
        fake.add(NAMESPACE, {"metadata": {"name": name}})
    fake.add(MANAGED_CLUSTER_SET, {"metadata": {"name": "fleet"}, "spec": {}})
    fake.add(MANAGED_CLUSTER_SET_BINDING, placement.binding("default", "fleet"))
    fake.add(PLACEMENT, {"metadata": {"name": "dev", "namespace": "default"}, "spec": {"clusterSets": ["fleet"]},
                         "status": {"numberOfSelectedClusters": 2, "conditions": [{"type": "PlacementSatisfied", "status": "True"}]}})
    fake.add(PLACEMENT_DECISION, decision("dev", ["cluster1", "cluster2"]))
    return fake


def decision(placement_name, clusters, index=0):
    return {"metadata": {"name": "%s-decision-%d" % (placement_name, index + 1), "namespace": "default",
                         "labels": {placement.PLACEMENT_LABEL: placement_name, placement.DECISION_GROUP_INDEX_LABEL: str(index)}},
            "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]}}


def reported(hub, cluster, configs, available="True", progressing="False", applied=True):
    """Status as the add-on manager writes it: configReferences with desired (and applied) configs, conditions."""
    stored = hub.objects.get(MANAGED_CLUSTER_ADDON.path(cluster, "helloworld"))
    if stored is None:
        stored = hub.add(MANAGED_CLUSTER_ADDON, {"metadata": {"name": "helloworld", "namespace": cluster}, "spec": {}})
    references = []
    for item in configs:
        desired = dict((k, item[k]) for k in ("name", "namespace", "specHash") if item.get(k))
        entry = {"group": item["group"], "resource": item["resource"], "desiredConfig": desired}
        if applied:
            entry["lastAppliedConfig"] = dict(desired)
        references.append(entry)
    stored["status"] = {"configReferences": references, "conditions": [
        {"type": "Available", "status": available, "reason": "ManagedClusterAddOnLeaseUpdated", "message": "helloworld add-on is available."},
        {"type": "Progressing", "status": progressing, "reason": "Completed", "message": "completed with no errors."}]}


class TestRolloutStrategy:
    def test_documented_progressive_strategy(self):
        built = addon.rollout_strategy(rollout("Progressive", mandatory_decision_groups=[
            {"group_name": "prod-canary-west", "group_index": None}, {"group_name": None, "group_index": 1}],
            max_concurrency="25%", min_success_time="5m", progress_deadline="10m", max_failures=2), WHERE)
        assert built == strategy_field("Progressive", {
            "mandatoryDecisionGroups": [{"groupName": "prod-canary-west", "groupIndex": None}, {"groupName": None, "groupIndex": 1}],
            "maxConcurrency": "25%", "minSuccessTime": "5m", "progressDeadline": "10m", "maxFailures": 2})

    def test_defaults_and_numbers(self):
        assert addon.rollout_strategy(None, WHERE) == strategy_field("All")
        assert addon.rollout_strategy(rollout("Progressive"), WHERE) == strategy_field("Progressive")
        # Given settings come with the API's defaults for the others, so that removing one is noticed.
        assert addon.rollout_strategy(rollout("Progressive", max_concurrency="2"), WHERE) == strategy_field("Progressive", {
            "maxConcurrency": 2, "mandatoryDecisionGroups": None, "minSuccessTime": "0", "progressDeadline": "None", "maxFailures": 0})
        assert addon.rollout_strategy(rollout("ProgressivePerGroup", max_failures="10%", progress_deadline="None"), WHERE) == strategy_field(
            "ProgressivePerGroup", {"maxFailures": "10%", "progressDeadline": "None", "minSuccessTime": "0", "mandatoryDecisionGroups": None})
        assert addon.rollout_strategy(rollout("All", progress_deadline="10m"), WHERE) == strategy_field(
            "All", {"maxFailures": 0, "progressDeadline": "10m", "minSuccessTime": "0"})

    def test_unknown_type_names_the_placement_and_the_types(self):
        with pytest.raises(FleetError) as error:
            addon.rollout_strategy(rollout("Canary"), WHERE)
        assert error.value.msg == ("install_strategy.placements[0] (default/dev): unknown rollout_strategy.type 'Canary'; "
                                   "use one of All, Progressive, ProgressivePerGroup")

    @pytest.mark.parametrize("value, message", [
        ("150%", "max_concurrency 150% is above 100%"),
        ("100.5%", "max_concurrency 100.5% is above 100%"),
        ("many", "max_concurrency 'many' must be a number of clusters"),
        (-1, "max_concurrency -1 must be a number of clusters"),
        (True, "max_concurrency True must be a number"),
    ])
    def test_bad_max_concurrency(self, value, message):
        with pytest.raises(FleetError, match=r"^install_strategy.placements\[0\] \(default/dev\) rollout_strategy: " + message):
            addon.rollout_strategy(rollout("Progressive", max_concurrency=value), WHERE)

    @pytest.mark.parametrize("settings, message", [
        ({"max_concurrency": 1}, "max_concurrency applies to type Progressive, not All"),
        ({"mandatory_decision_groups": [{"group_name": "a", "group_index": None}]},
         "mandatory_decision_groups applies to type Progressive and ProgressivePerGroup, not All"),
        ({"min_success_time": "five minutes"}, "min_success_time 'five minutes' must be a duration"),
        ({"progress_deadline": "1d"}, "progress_deadline '1d' must be a number with a unit"),
        ({"max_failures": "200%"}, "max_failures 200% is above 100%"),
    ])
    def test_settings_are_checked(self, settings, message):
        with pytest.raises(FleetError, match=message):
            addon.rollout_strategy(rollout("All", **settings), WHERE)

    def test_mandatory_group_needs_a_name_or_an_index(self):
        with pytest.raises(FleetError, match=r"mandatory_decision_groups\[0\]: give either group_name or group_index"):
            addon.rollout_strategy(rollout("Progressive", mandatory_decision_groups=[{"group_name": "a", "group_index": 0}]), WHERE)


class TestBuild:
    def test_placements_strategy_carries_the_lifecycle_annotation(self):
        built = addon.cluster_management_addon("helloworld", "helloworld", None, params()["supported_configs"],
                                               params()["install_strategy"])
        assert built["metadata"] == {"name": "helloworld", "annotations": {addon.LIFECYCLE_ANNOTATION: "addon-manager"}}
        assert built["spec"] == {
            "addOnMeta": {"displayName": "helloworld", "description": None},
            "supportedConfigs": [{"group": GROUP, "resource": ADC, "defaultConfig": {"name": "default-config", "namespace": "default"}}],
            "installStrategy": {"type": "Placements", "placements": [{
                "name": "dev", "namespace": "default", "configs": [config("placement-config")],
                "rolloutStrategy": strategy_field("Progressive", {
                    "maxConcurrency": "50%", "mandatoryDecisionGroups": None, "minSuccessTime": "0", "progressDeadline": "None",
                    "maxFailures": 0})}]}}

    def test_manual_strategy(self):
        built = addon.cluster_management_addon("helloworld", "helloworld")
        assert built["metadata"] == {"name": "helloworld"}
        assert built["spec"]["installStrategy"] == {"type": "Manual", "placements": None}
        assert built["spec"]["supportedConfigs"] is None

    @pytest.mark.parametrize("strategy_option, message", [
        ({"type": "Manual", "placements": [strategy()]}, "install_strategy.placements apply to type Placements, not Manual"),
        ({"type": "Placements", "placements": []}, "type Placements needs at least one entry"),
        ({"type": "Placements", "placements": [strategy(), strategy()]}, r"placements\[1\] \(default/dev\): the placement is listed twice"),
        ({"type": "Placements", "placements": [strategy(configs=[config("t", resource="addontemplates")])]},
         "config addontemplates.addon.open-cluster-management.io default/t is of a kind the add-on does not support"),
    ])
    def test_bad_install_strategies(self, strategy_option, message):
        with pytest.raises(FleetError, match=message):
            addon.cluster_management_addon("helloworld", supported_configs=params()["supported_configs"],
                                           install_strategy=strategy_option)

    def test_supported_configs_once_each(self):
        with pytest.raises(FleetError, match=r"supported_configs\[1\]: addondeploymentconfigs.addon.open-cluster-management.io is "
                                             r"already supported_configs\[0\]"):
            addon.cluster_management_addon("helloworld", supported_configs=[{"group": GROUP, "resource": ADC}] * 2)

    def test_managed_cluster_addon(self):
        built = addon.managed_cluster_addon("helloworld", {"name": "cluster1", "install_namespace": None,
                                                           "configs": [config("c1")]}, {(GROUP, ADC)})
        assert built == {"metadata": {"name": "helloworld", "namespace": "cluster1"},
                         "spec": {"installNamespace": "open-cluster-management-agent-addon", "configs": [config("c1")]}}
        with pytest.raises(FleetError, match="clusters entry cluster1: config addondeploymentconfigs.addon.open-cluster-management.io"):
            addon.managed_cluster_addon("helloworld", {"name": "cluster1", "configs": [config("c1")]}, set())


class TestEffectiveConfigs:
    SPEC = addon.cluster_management_addon("helloworld", supported_configs=[
        {"group": GROUP, "resource": ADC, "default_config": {"name": "default-config", "namespace": "default"}},
        {"group": GROUP, "resource": "addontemplates", "default_config": {"name": "default-template"}}],
        install_strategy={"type": "Placements", "placements": [strategy(configs=[config("placement-config")])]})["spec"]

    def test_cluster_over_placement_over_default(self):
        assert addon.effective_configs(self.SPEC, None, None) == [
            {"group": GROUP, "resource": ADC, "name": "default-config", "namespace": "default"},
            {"group": GROUP, "resource": "addontemplates", "name": "default-template", "namespace": None}]
        by_placement = addon.effective_configs(self.SPEC, ("default", "dev"), None)
        assert [c["name"] for c in by_placement] == ["placement-config", "default-template"]
        by_cluster = addon.effective_configs(self.SPEC, ("default", "dev"), [config("cluster1-config")])
        assert [c["name"] for c in by_cluster] == ["cluster1-config", "default-template"]

    def test_last_placement_selecting_a_cluster_wins(self, hub):
        hub.add(PLACEMENT, {"metadata": {"name": "canary", "namespace": "default"}, "spec": {},
                            "status": {"numberOfSelectedClusters": 1, "conditions": [{"type": "PlacementSatisfied", "status": "True"}]}})
        hub.add(PLACEMENT_DECISION, decision("canary", ["cluster2"]))
        spec = {"installStrategy": {"placements": [strategy(), strategy(name="canary"), strategy(name="later")]}}
        assert addon.placement_of_clusters(hub, spec) == (
            {"cluster1": ("default", "dev"), "cluster2": ("default", "canary")}, ["default/later"])

    def test_spec_hash_as_go_encodes_it(self):
        obj = {"apiVersion": "v", "kind": "AddOnDeploymentConfig", "metadata": {"name": "x"}, "status": {},
               "spec": {"customizedVariables": [{"name": "A", "value": "<b>&é"}], "agentInstallNamespace": "ns"}}
        text = '{"spec":{"agentInstallNamespace":"ns","customizedVariables":[{"name":"A","value":"\\u003cb\\u003e\\u0026\xc3\xa9"}]}}'
        assert addon.config_spec_hash(obj) == hashlib.sha256(text.encode("latin-1")).hexdigest()


class TestDeploymentConfig:
    def test_every_field(self):
        built = addon.deployment_config(
            "cfg", "default", {"LOG_LEVEL": 2, "DEBUG": True}, {"node_selector": {"infra": ""}, "tolerations": None},
            [{"source": "quay.io/ocm", "mirror": "registry.example.com/ocm"}, {"source": None, "mirror": "mirror.example.com"}],
            {"http_proxy": None, "https_proxy": "http://proxy:3128", "no_proxy": None, "ca_bundle": "PEM"}, None,
            [{"container_id": "deployments:*:*", "requests": {"cpu": "50m"}, "limits": None}])
        assert built["spec"] == {
            "customizedVariables": [{"name": "LOG_LEVEL", "value": "2"}, {"name": "DEBUG", "value": "true"}],
            "nodePlacement": {"nodeSelector": {"infra": ""}, "tolerations": None},
            "registries": [{"source": "quay.io/ocm", "mirror": "registry.example.com/ocm"}, {"source": None, "mirror": "mirror.example.com"}],
            "proxyConfig": {"httpProxy": None, "httpsProxy": "http://proxy:3128", "noProxy": None, "caBundle": "UEVN"},
            "agentInstallNamespace": "open-cluster-management-agent-addon",
            "resourceRequirements": [{"containerID": "deployments:*:*", "resources": {"requests": {"cpu": "50m"}, "limits": None}}]}

    def test_unset_fields_are_null_and_empty_namespace_is_kept(self):
        spec = addon.deployment_config("cfg", "default", agent_install_namespace="")["spec"]
        assert spec == {"customizedVariables": None, "nodePlacement": None, "registries": None, "proxyConfig": None,
                        "agentInstallNamespace": "", "resourceRequirements": None}

    @pytest.mark.parametrize("kwargs, message", [
        ({"customized_variables": {"1BAD": "x"}}, "'1BAD' is not a valid variable name"),
        ({"customized_variables": {"LONG": "x" * 1025}}, "the value of LONG is longer than 1024 characters"),
        ({"agent_install_namespace": "Bad_NS"}, "agent_install_namespace 'Bad_NS' is not a valid namespace name"),
        ({"resource_requirements": [{"container_id": "deployment:x"}]}, r"resource_requirements\[0\]: container_id 'deployment:x'"),
        # every Pod would be refused: a request above its limit, however the two are written
        ({"resource_requirements": [{"container_id": "*:*:*", "requests": {"cpu": "1.5"}, "limits": {"cpu": "1000m"}}]},
         r"resource_requirements\[0\]: the cpu request 1.5 exceeds its limit 1000m"),
        ({"resource_requirements": [{"container_id": "*:*:*", "requests": {"memory": "2Gi"}, "limits": {"memory": "2000Mi"}}]},
         r"the memory request 2Gi exceeds its limit 2000Mi"),
        ({"resource_requirements": [{"container_id": "*:*:*", "requests": {"memory": "lots"}, "limits": {"memory": "1Gi"}}]},
         r"resource_requirements\[0\] requests.memory: 'lots' is not a Kubernetes quantity"),
    ])
    def test_checks(self, kwargs, message):
        with pytest.raises(FleetError, match=message):
            addon.deployment_config("cfg", "default", **kwargs)

    def test_requests_up_to_their_limits_are_accepted(self):
        spec = addon.deployment_config("cfg", "default", resource_requirements=[
            {"container_id": "*:*:*", "requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "0.5", "memory": "1024Mi"}}])
        assert spec["spec"]["resourceRequirements"][0]["resources"]["limits"] == {"cpu": "0.5", "memory": "1024Mi"}

    def test_ensure_returns_the_spec_hash_and_reruns_unchanged(self, hub):
        options = dict(name="cfg", namespace="default", state="present", customized_variables={"A": "1"})
        first = addon.ensure_deployment_config(hub, options)
        stored = hub.objects[ADDON_DEPLOYMENT_CONFIG.path("default", "cfg")]
        assert (first["changed"], first["action"], first["spec_hash"]) == (True, "created", addon.config_spec_hash(stored))
        assert addon.ensure_deployment_config(hub, options)["changed"] is False
        removed = addon.ensure_deployment_config(hub, dict(options, state="absent"))
        assert (removed["action"], removed["spec_hash"]) == ("deleted", None)
        with pytest.raises(FleetError, match="namespace nowhere does not exist"):
            addon.ensure_deployment_config(hub, dict(options, namespace="nowhere"))


class TestStatus:
    def test_summary_like_kubectl_get_managedclusteraddon(self, hub):
        reported(hub, "cluster1", [ref("cluster1-config", spec_hash="abc")])
        summary = addon.summarize(hub.objects[MANAGED_CLUSTER_ADDON.path("cluster1", "helloworld")], "unchanged")
        assert (summary["available"], summary["degraded"], summary["progressing"], summary["configured"]) == ("True", None, "False", None)
        assert summary["configs"] == [{"group": GROUP, "resource": ADC, "namespace": "default", "name": "cluster1-config",
                                       "spec_hash": "abc", "applied": True}]
        assert addon.summarize(None, "absent")["available"] is None

    def test_rollout_progress(self, hub):
        expected = [config("cluster1-config")]
        path = MANAGED_CLUSTER_ADDON.path("cluster1", "helloworld")
        assert addon.rollout_progress(None, expected) == (False, "no ManagedClusterAddOn yet")
        reported(hub, "cluster1", [ref("placement-config")])
        assert addon.rollout_progress(hub.objects[path], expected) == (
            False, "configs addondeploymentconfigs default/placement-config, expected addondeploymentconfigs default/cluster1-config")
        reported(hub, "cluster1", [ref("cluster1-config")], applied=False)
        assert addon.rollout_progress(hub.objects[path], expected) == (
            False, "config addondeploymentconfigs default/cluster1-config not applied yet")
        reported(hub, "cluster1", [ref("cluster1-config")], available="Unknown")
        assert addon.rollout_progress(hub.objects[path], expected) == (
            False, "Available=Unknown (ManagedClusterAddOnLeaseUpdated: helloworld add-on is available.)")
        reported(hub, "cluster1", [ref("cluster1-config")])
        assert addon.rollout_progress(hub.objects[path], expected) == (True, None)


class TestChecks:
    def test_clusters_must_be_registered_and_accepted(self, hub):
        hub.add(MANAGED_CLUSTER, {"metadata": {"name": "pending"}, "spec": {"hubAcceptsClient": False}})
        hub.add(MANAGED_CLUSTER, {"metadata": {"name": "nonamespace"}, "spec": {"hubAcceptsClient": True}})
        with pytest.raises(FleetError) as error:
            addon.check_clusters(hub, ["cluster1", "ghost", "pending", "nonamespace"])
        assert error.value.msg == (
            "cluster 'hub' (https://fake): cannot enable the add-on per cluster: cluster 'ghost' is not registered (no "
            "ManagedCluster ghost); cluster 'nonamespace' has no namespace nonamespace on the hub yet (the hub creates it on "
            "acceptance); cluster 'pending' is not accepted (spec.hubAcceptsClient is false; accept it first)")
        assert error.value.details == {"clusters_failed": ["ghost", "nonamespace", "pending"]}

    def test_placements_must_exist_and_be_bound(self, hub):
        assert addon.placement_problems(hub, [{"name": "dev", "namespace": "default"}]) == []
        hub.add(NAMESPACE, {"metadata": {"name": "apps"}})
        hub.add(PLACEMENT, {"metadata": {"name": "apps", "namespace": "apps"}, "spec": {"clusterSets": ["fleet"]}})
        assert addon.placement_problems(hub, [{"name": "other", "namespace": "default"}, {"name": "apps", "namespace": "apps"}]) == [
            "cluster 'hub' (https://fake): the install strategy refers to Placement default/other, which does not exist; create "
            "it first (multicluster.fleet.placement)",
            "cluster 'hub' (https://fake): the install strategy refers to Placement apps/apps, which has no "
            "ManagedClusterSetBinding in namespace apps for cluster set(s) fleet, so it can select no cluster; bind the sets "
            "(multicluster.fleet.placement with bind_cluster_sets=true)"]


class TestPresent:
    def test_writes_the_addon_and_the_per_cluster_override_then_is_idempotent(self, hub):
        first = addon.present(hub, params())
        assert first["changed"] is True
        assert first["objects"] == ["ClusterManagementAddOn/helloworld: created", "ManagedClusterAddOn/cluster1/helloworld: created"]
        stored = hub.objects[CLUSTER_MANAGEMENT_ADDON.path(name="helloworld")]
        assert stored["metadata"]["annotations"] == {addon.LIFECYCLE_ANNOTATION: "addon-manager"}
        assert "description" not in stored["spec"]["addOnMeta"]
        mca = hub.objects[MANAGED_CLUSTER_ADDON.path("cluster1", "helloworld")]
        assert mca["spec"]["configs"] == [config("cluster1-config")]
        assert first["clusters"]["cluster1"]["action"] == "created"
        again = addon.present(hub, params())
        assert again["changed"] is False and again["diff"] == []

    def test_fields_removed_inside_list_items_are_updates(self, hub):
        addon.present(hub, params())
        without = params()
        without["install_strategy"]["placements"][0]["configs"] = None
        updated = addon.present(hub, without)
        assert updated["changed"] is True and updated["addon"]["action"] == "updated"
        stored = hub.objects[CLUSTER_MANAGEMENT_ADDON.path(name="helloworld")]["spec"]["installStrategy"]["placements"][0]
        assert "configs" not in stored
        all_at_once = params()
        all_at_once["install_strategy"]["placements"][0]["rollout_strategy"] = None
        assert addon.present(hub, all_at_once)["changed"] is True
        stored = hub.objects[CLUSTER_MANAGEMENT_ADDON.path(name="helloworld")]["spec"]["installStrategy"]["placements"][0]
        assert stored["rolloutStrategy"] == {"type": "All"}
        assert addon.present(hub, all_at_once)["changed"] is False

    def test_check_mode_writes_nothing(self, hub):
        result = addon.present(hub, params(), check_mode=True, wait=True)
        assert result["changed"] is True and result["warnings"] == []
        assert CLUSTER_MANAGEMENT_ADDON.path(name="helloworld") not in hub.objects
        assert all(query.get("dryRun") == "All" for method, _path, query in hub.calls if method != "GET")

    def test_bad_input_fails_before_any_write(self, hub):
        bad = [
            params(clusters=[{"name": "ghost", "configs": None}]),
            params(install_strategy={"type": "Placements", "placements": [strategy(rollout("Progressive", max_concurrency="150%"))]}),
            params(install_strategy={"type": "Placements", "placements": [strategy(rollout("Canary"))]}),
            params(install_strategy={"type": "Placements", "placements": [strategy(name="missing")]}),
            params(clusters=[{"name": "cluster1"}, {"name": "cluster1"}]),
        ]
        for options in bad:
            with pytest.raises(FleetError):
                addon.present(hub, options)
        assert [method for method, _path, _query in hub.calls if method != "GET"] == []

    def test_a_missing_placement_is_an_error_but_a_warning_in_check_mode(self, hub):
        missing = params(install_strategy={"type": "Placements", "placements": [strategy(name="planned")]})
        with pytest.raises(FleetError, match="refers to Placement default/planned, which does not exist"):
            addon.present(hub, missing)
        planned = addon.present(hub, missing, check_mode=True)
        assert planned["changed"] is True and len(planned["warnings"]) == 1 and "default/planned" in planned["warnings"][0]

    def test_wait_until_every_targeted_cluster_runs_its_configs(self, hub):
        addon.present(hub, params())
        reported(hub, "cluster1", [ref("cluster1-config")])
        with pytest.raises(FleetError) as error:
            addon.present(hub, params(), wait=True, timeout=0)
        assert "waiting for add-on helloworld to be available with its configs on cluster 'hub' (https://fake)" in error.value.msg
        assert "cluster2 (no ManagedClusterAddOn yet)" in error.value.msg
        reported(hub, "cluster2", [ref("placement-config")])
        result = addon.present(hub, params(), wait=True, timeout=0)
        assert sorted(result["clusters"]) == ["cluster1", "cluster2"]
        assert [c["name"] for c in result["clusters"]["cluster2"]["configs"]] == ["placement-config"]

    def test_wait_reports_an_undecided_placement(self, hub):
        hub.objects[PLACEMENT.path("default", "dev")]["status"] = {}
        with pytest.raises(FleetError, match="Placement default/dev not decided yet"):
            addon.present(hub, params(clusters=None), wait=True, timeout=0)


class TestAbsent:
    def test_remove_from_one_cluster(self, hub):
        addon.present(hub, params(install_strategy=None))
        removed = addon.absent(hub, "helloworld", ["cluster1"])
        assert (removed["changed"], removed["objects"]) == (True, ["ManagedClusterAddOn/cluster1/helloworld: deleted"])
        assert CLUSTER_MANAGEMENT_ADDON.path(name="helloworld") in hub.objects
        assert addon.absent(hub, "helloworld", ["cluster1"], wait=True, timeout=0)["changed"] is False

    def test_clusters_the_placements_select_are_refused(self, hub):
        addon.present(hub, params())
        with pytest.raises(FleetError, match="installed on cluster\\(s\\) cluster1 by its install strategy's placements"):
            addon.absent(hub, "helloworld", ["cluster1", "cluster3"])

    def test_uninstall_deletes_the_cluster_management_addon_and_waits_for_its_addons(self, hub):
        addon.present(hub, params())
        with pytest.raises(FleetError, match="still on cluster1 .*the garbage collector"):
            addon.absent(hub, "helloworld", wait=True, timeout=0)
        assert CLUSTER_MANAGEMENT_ADDON.path(name="helloworld") not in hub.objects
        del hub.objects[MANAGED_CLUSTER_ADDON.path("cluster1", "helloworld")]  # what the garbage collector does
        result = addon.absent(hub, "helloworld", wait=True, timeout=0)
        assert (result["changed"], result["addon"]["action"], result["clusters"]) == (False, "absent", {})
