"""addon and addon_deployment_config against the lab: a real hub API server with the OCM CRDs and garbage collector,
the simulated placement controller and add-on manager (tests/lab/sim_addon.py).

The fleet (ocm_fleet.py): accepted ManagedClusters aon-1, aon-2 (environment=dev) and aon-3 (environment=prod) in
cluster set aon-fleet; namespace aon-apps holds the placements and the AddOnDeploymentConfigs.
"""

import os
import re

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ocm_fleet import OcmFleet, fails, ok
from runner import ROOT, run_playbook
from sim_addon import AddOnManager

DEV = [{"label_selector": {"match_labels": {"environment": "dev"}}}]


@pytest.fixture(scope="module")
def fleet(lab):
    fleet = OcmFleet(lab, "aon").up()
    ok(fleet.run("placement", name="dev", namespace=fleet.namespace, cluster_sets=[fleet.cluster_set], bind_cluster_sets=True,
                 predicates=DEV, wait=True, wait_timeout=30))
    yield fleet
    fleet.down()


def deploy_config(fleet, name, check_mode=False, **variables):
    return fleet.run("addon_deployment_config", check_mode=check_mode, name=name, namespace=fleet.namespace,
                     customized_variables=variables)


def ref(fleet, name):
    return {"name": name, "namespace": fleet.namespace}


def enable(fleet, name, check_mode=False, diff=False, **args):
    fleet.addons.add(name)
    return fleet.run("addon", check_mode=check_mode, diff=diff, name=name, **args)


def effective(result):
    """``{cluster: [(config name, spec hash, applied)]}`` from the module's result."""
    return dict((c, [(r["name"], r["spec_hash"], r["applied"]) for r in s["configs"]]) for c, s in result["clusters"].items())


def test_helloworld_on_the_dev_clusters_with_override_order_rerun_and_uninstall(fleet):
    hashes = {}
    planned = ok(deploy_config(fleet, "default-config", check_mode=True, WHO="default"))
    assert planned["changed"] is True and resources.get(fleet.hub, ocm.ADDON_DEPLOYMENT_CONFIG, "default-config", fleet.namespace) is None
    for name in ("default-config", "placement-config", "cluster-config"):
        created = ok(deploy_config(fleet, name, WHO=name))
        assert created["action"] == "created"
        hashes[name] = created["spec_hash"]
        assert ok(deploy_config(fleet, name, WHO=name))["changed"] is False
    args = dict(
        display_name="helloworld",
        supported_configs=[{"default_config": ref(fleet, "default-config")}],
        install_strategy={"type": "Placements", "placements": [{
            "name": "dev", "namespace": fleet.namespace, "configs": [ref(fleet, "placement-config")],
            "rollout_strategy": {"type": "Progressive", "max_concurrency": "50%"}}]},
        clusters=[{"name": fleet.dev[1], "configs": [ref(fleet, "cluster-config")]}],
        wait=True, wait_timeout=120)

    planned = ok(enable(fleet, "helloworld", check_mode=True, diff=True, **args))
    assert planned["changed"] is True
    assert planned["objects"] == ["ClusterManagementAddOn/helloworld: created", "ManagedClusterAddOn/aon-2/helloworld: created"]
    assert planned["diff"][0]["after"]["spec"]["installStrategy"]["placements"][0]["rolloutStrategy"] == {
        "type": "Progressive", "progressive": {"maxConcurrency": "50%", "maxFailures": 0, "minSuccessTime": "0", "progressDeadline": "None"}}
    assert resources.get(fleet.hub, ocm.CLUSTER_MANAGEMENT_ADDON, "helloworld") is None and fleet.addon_clusters("helloworld") == []

    first = ok(enable(fleet, "helloworld", **args))
    assert first["changed"] is True
    assert first["addon"]["object"]["metadata"]["annotations"] == {"addon.open-cluster-management.io/lifecycle": "addon-manager"}
    assert fleet.addon_clusters("helloworld") == fleet.dev  # the add-on manager installed it where the placement decided
    # Per cluster over per placement over default.
    assert effective(first) == {fleet.dev[0]: [("placement-config", hashes["placement-config"], True)],
                                fleet.dev[1]: [("cluster-config", hashes["cluster-config"], True)]}
    for cluster in fleet.dev:
        summary = first["clusters"][cluster]
        assert (summary["available"], summary["progressing"], summary["configured"], summary["degraded"]) == ("True", "False", "True", None)
        available = [c for c in summary["conditions"] if c["type"] == "Available"][0]
        assert (available["reason"], available["message"]) == ("ManagedClusterAddOnLeaseUpdated", "helloworld add-on is available.")
        owners = fleet.addon(cluster, "helloworld")["metadata"]["ownerReferences"]
        assert [(o["kind"], o["name"], o["controller"]) for o in owners] == [("ClusterManagementAddOn", "helloworld", True)]

    again = ok(enable(fleet, "helloworld", **args))
    assert again["changed"] is False and again["objects"] == ["ClusterManagementAddOn/helloworld: unchanged",
                                                              "ManagedClusterAddOn/aon-2/helloworld: unchanged"]

    # The placement's config dropped: its clusters fall back to the default, the per-cluster config still wins.
    args["install_strategy"]["placements"][0]["configs"] = None
    fallback = ok(enable(fleet, "helloworld", **args))
    assert fallback["changed"] is True and fallback["addon"]["action"] == "updated"
    assert effective(fallback) == {fleet.dev[0]: [("default-config", hashes["default-config"], True)],
                                   fleet.dev[1]: [("cluster-config", hashes["cluster-config"], True)]}

    planned_removal = ok(enable(fleet, "helloworld", state="absent", check_mode=True))
    assert planned_removal["changed"] is True and resources.get(fleet.hub, ocm.CLUSTER_MANAGEMENT_ADDON, "helloworld") is not None
    removed = ok(enable(fleet, "helloworld", state="absent", wait=True, wait_timeout=180))
    assert (removed["changed"], removed["addon"]["action"], removed["clusters"]) == (True, "deleted", {})
    assert fleet.addon_clusters("helloworld") == [] and resources.get(fleet.hub, ocm.CLUSTER_MANAGEMENT_ADDON, "helloworld") is None
    assert ok(enable(fleet, "helloworld", state="absent"))["changed"] is False


def test_progressive_rollout_updates_one_cluster_at_a_time(fleet):
    """The add-on manager is stepped by hand here, round by round, to see every intermediate state."""
    spec_hash = ok(deploy_config(fleet, "rollout-config", WHO="v1"))["spec_hash"]
    fleet.stop_addon_manager()
    manager = AddOnManager(fleet.lab.api(fleet.lab.hub))
    try:
        ok(enable(fleet, "rollout", supported_configs=[{"default_config": ref(fleet, "rollout-config")}],
                  install_strategy={"type": "Placements", "placements": [{
                      "name": "dev", "namespace": fleet.namespace, "rollout_strategy": {"type": "Progressive", "max_concurrency": 1}}]}))
        assert rounds_until_rolled_out(fleet, manager, spec_hash) == [
            {fleet.dev[0]: "configured"}, {fleet.dev[0]: "applied"}, {fleet.dev[1]: "configured"}, {fleet.dev[1]: "applied"}]

        # A config change rolls out the same way: the second cluster only once the first runs with it.
        spec_hash = ok(deploy_config(fleet, "rollout-config", WHO="v2"))["spec_hash"]
        assert rounds_until_rolled_out(fleet, manager, spec_hash) == [
            {fleet.dev[0]: "configured"}, {fleet.dev[0]: "applied"}, {fleet.dev[1]: "configured"}, {fleet.dev[1]: "applied"}]
    finally:
        manager.stop()
        fleet.start_addon_manager()
    done = ok(enable(fleet, "rollout", supported_configs=[{"default_config": ref(fleet, "rollout-config")}],
                     install_strategy={"type": "Placements", "placements": [{
                         "name": "dev", "namespace": fleet.namespace, "rollout_strategy": {"type": "Progressive", "max_concurrency": 1}}]},
                     wait=True, wait_timeout=120))
    assert done["changed"] is False
    assert effective(done) == dict((c, [("rollout-config", spec_hash, True)]) for c in fleet.dev)
    ok(enable(fleet, "rollout", state="absent", wait=True, wait_timeout=180))


def rounds_until_rolled_out(fleet, manager, spec_hash, most=20):
    """Run the add-on manager round by round until both dev clusters run ``spec_hash``; return what changed per round.

    Per round, each cluster whose state changed: ``configured`` (its desired config carries the hash) or ``applied``.
    """
    def state(cluster):
        references = ((fleet.addon(cluster, "rollout") or {}).get("status") or {}).get("configReferences") or []
        desired = [r for r in references if (r.get("desiredConfig") or {}).get("specHash") == spec_hash]
        if not desired:
            return "old"
        return "applied" if desired[0].get("lastAppliedConfig") == desired[0]["desiredConfig"] else "configured"

    changes, before = [], dict((c, state(c)) for c in fleet.dev)
    for _round in range(most):
        manager.sync()
        now = dict((c, state(c)) for c in fleet.dev)
        changed = dict((c, s) for c, s in now.items() if s != before[c])
        if changed:
            changes.append(changed)
        before = now
        if set(now.values()) == {"applied"}:
            return changes
    raise AssertionError("not rolled out after %d rounds: %s (changes %s)" % (most, before, changes))


def test_manual_install_per_cluster_and_removal_from_one_cluster(fleet):
    spec_hash = ok(deploy_config(fleet, "manual-config", WHO="manual"))["spec_hash"]
    args = dict(supported_configs=[{"default_config": ref(fleet, "manual-config")}],
                clusters=[{"name": fleet.prod[0], "install_namespace": "manual-demo"}])
    enabled = ok(enable(fleet, "manual-demo", wait=True, wait_timeout=120, **args))
    assert fleet.addon_clusters("manual-demo") == fleet.prod
    summary = enabled["clusters"][fleet.prod[0]]
    assert (summary["available"], summary["install_namespace"]) == ("True", "manual-demo")
    assert effective(enabled) == {fleet.prod[0]: [("manual-config", spec_hash, True)]}
    assert "annotations" not in enabled["addon"]["object"]["metadata"]
    assert ok(enable(fleet, "manual-demo", **args))["changed"] is False

    removed = ok(enable(fleet, "manual-demo", state="absent", clusters=[{"name": fleet.prod[0]}], wait=True, wait_timeout=30))
    assert removed["changed"] is True and removed["objects"] == ["ManagedClusterAddOn/aon-3/manual-demo: deleted"]
    assert fleet.addon_clusters("manual-demo") == []
    assert resources.get(fleet.hub, ocm.CLUSTER_MANAGEMENT_ADDON, "manual-demo") is not None
    assert ok(enable(fleet, "manual-demo", state="absent", clusters=[{"name": fleet.prod[0]}]))["changed"] is False
    ok(enable(fleet, "manual-demo", state="absent", wait=True, wait_timeout=30))


class TestBadInput:
    """Each is refused with a clear message before anything is written."""

    def refused(self, fleet, *fragments, **args):
        args.setdefault("supported_configs", [{"default_config": ref(fleet, "default-config")}])
        result = fails(enable(fleet, "refused", **args), *fragments)
        assert resources.get(fleet.hub, ocm.CLUSTER_MANAGEMENT_ADDON, "refused") is None
        assert fleet.addon_clusters("refused") == []
        return result

    @staticmethod
    def placements(fleet, rollout=None, name="dev", namespace=None):
        return {"type": "Placements", "placements": [{"name": name, "namespace": namespace or fleet.namespace, "rollout_strategy": rollout}]}

    def test_unknown_rollout_type(self, fleet):
        self.refused(fleet, "install_strategy.placements[0] (aon-apps/dev): unknown rollout_strategy.type 'Canary'; "
                            "use one of All, Progressive, ProgressivePerGroup",
                     install_strategy=self.placements(fleet, {"type": "Canary"}))

    def test_max_concurrency_above_100_percent(self, fleet):
        self.refused(fleet, "install_strategy.placements[0] (aon-apps/dev) rollout_strategy: max_concurrency 150% is above 100%",
                     install_strategy=self.placements(fleet, {"type": "Progressive", "max_concurrency": "150%"}))
        self.refused(fleet, "max_concurrency 'all' must be a number of clusters",
                     install_strategy=self.placements(fleet, {"type": "Progressive", "max_concurrency": "all"}))

    def test_placement_in_a_namespace_without_binding(self, fleet):
        namespace = "aon-unbound"
        resources.ensure(fleet.hub, resources.NAMESPACE, {"metadata": {"name": namespace}})
        try:
            resources.ensure(fleet.hub, ocm.PLACEMENT, {"metadata": {"name": "lonely", "namespace": namespace},
                                                        "spec": {"clusterSets": [fleet.cluster_set]}})
            self.refused(fleet, "cluster 'hub' (%s): the install strategy refers to Placement aon-unbound/lonely, which has no "
                                "ManagedClusterSetBinding in namespace aon-unbound for cluster set(s) aon-fleet" % fleet.hub.server,
                         install_strategy=self.placements(fleet, name="lonely", namespace=namespace))
            self.refused(fleet, "refers to Placement aon-apps/nowhere, which does not exist",
                         install_strategy=self.placements(fleet, name="nowhere"))
        finally:
            resources.delete(fleet.hub, resources.NAMESPACE, namespace)

    def test_per_cluster_config_for_a_cluster_not_registered_or_accepted(self, fleet):
        resources.ensure(fleet.hub, ocm.MANAGED_CLUSTER, {"metadata": {"name": "aon-pending"}, "spec": {"hubAcceptsClient": False}})
        try:
            result = self.refused(fleet, "cannot enable the add-on per cluster: cluster 'aon-ghost' is not registered (no "
                                         "ManagedCluster aon-ghost); cluster 'aon-pending' is not accepted",
                                  clusters=[{"name": "aon-ghost", "configs": [ref(fleet, "cluster-config")]}, {"name": "aon-pending"}])
            assert result["clusters_failed"] == ["aon-ghost", "aon-pending"]
        finally:
            resources.delete(fleet.hub, ocm.MANAGED_CLUSTER, "aon-pending")

    def test_config_of_an_unsupported_kind(self, fleet):
        self.refused(fleet, "clusters entry aon-1: config addontemplates.addon.open-cluster-management.io aon-apps/t is of a kind "
                            "the add-on does not support",
                     clusters=[{"name": "aon-1", "configs": [{"resource": "addontemplates", "name": "t", "namespace": "aon-apps"}]}])

    def test_removing_a_placement_selected_cluster(self, fleet):
        ok(enable(fleet, "selected", install_strategy=self.placements(fleet), wait=True, wait_timeout=120))
        fails(enable(fleet, "selected", state="absent", clusters=[{"name": fleet.dev[0]}]),
              "add-on selected is installed on cluster(s) aon-1 by its install strategy's placements")
        assert fleet.addon_clusters("selected") == fleet.dev
        ok(enable(fleet, "selected", state="absent", wait=True, wait_timeout=180))


def test_the_playbooks_of_docs_addons_md_run(fleet):
    with open(os.path.join(ROOT, "docs", "addons.md")) as handle:
        enable, uninstall = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", handle.read(), re.S)]
    fleet.addons.add("helloworld")
    canary, other = fleet.dev[1], fleet.dev[0]
    options = dict(inventory=fleet.lab.inventory,
                   extra_vars={"cluster_set": fleet.cluster_set, "config_namespace": fleet.namespace, "canary_cluster": canary})

    def recap(done):
        assert done.returncode == 0, done.stdout + done.stderr
        return re.search(r"hub-cluster\s*: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0", done.stdout).group(1)

    assert recap(run_playbook(enable, check=True, **options)) != "0"
    assert resources.get(fleet.hub, ocm.CLUSTER_MANAGEMENT_ADDON, "helloworld") is None
    assert recap(run_playbook(enable, **options)) != "0"
    applied = dict((c, [(r["desiredConfig"]["name"], r.get("lastAppliedConfig") == r["desiredConfig"])
                        for r in fleet.addon(c, "helloworld")["status"]["configReferences"]]) for c in fleet.dev)
    assert applied == {other: [("helloworld-dev", True)], canary: [("helloworld-canary", True)]}
    assert recap(run_playbook(enable, **options)) == "0"
    assert recap(run_playbook(uninstall, **options)) == "1"
    assert fleet.addon_clusters("helloworld") == []
