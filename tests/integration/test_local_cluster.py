"""The OCM hub as its own member (hub_init_ocm_register_self), on the lab: site.yml registers member1,
member2 and the hub itself as ``local-cluster`` - the klusterlet on the hub cluster, accepted and
available - shows it in the summary and changes nothing the second time; check mode previews or says what
it cannot; hub_init refuses to uninstall while the hub is still its own member unless told that it is;
detach.yml unregisters local-cluster with the members and returns every cluster to its starting state.
A Karmada hub refuses the option before writing anything. The hub's klusterlet is the lab's simulated
registration agent, run on the hub cluster like on any member (tests/lab/simulate.py).
"""

import pytest

from labstate import changes, snapshot
from playbooks import check_play, play, write_inventory
from runner import failures, run_playbook, summary

SELF = {"hub_init_ocm_register_self": True}
MANAGED_CLUSTERS = "/apis/cluster.open-cluster-management.io/v1/managedclusters"
KLUSTERLET = "/apis/operator.open-cluster-management.io/v1/klusterlets/klusterlet"
OCM_COLUMNS = ("HUB ACCEPTED", "JOINED", "AVAILABLE", "RESULT")


@pytest.fixture(scope="module")
def starting_state(lab, simulations):
    """The lab before the playbooks ran, and (as the detach test checks) after."""
    assert not lab.api(lab.hub).exists(MANAGED_CLUSTERS + "/local-cluster")
    return snapshot(lab)


@pytest.fixture(scope="module")
def inventory(lab, tmp_path_factory):
    return write_inventory(lab, tmp_path_factory.mktemp("local-cluster"), "ocm")


def conditions(obj):
    return dict((c["type"], c["status"]) for c in (obj.get("status") or {}).get("conditions") or [])


class TestLocalCluster:
    def test_a_karmada_hub_refuses_to_register_with_itself(self, lab, simulations, starting_state, tmp_path_factory):
        inventory = write_inventory(lab, tmp_path_factory.mktemp("local-cluster"), "karmada")
        done, recap = play("site.yml", inventory, **SELF)
        assert done.returncode != 0 and recap["hub-cluster"]["failed"] == 1, recap
        assert "hub_init_ocm_register_self registers an OCM hub with itself (clusteradm join on the hub); a Karmada hub " \
               "is not a member of itself" in done.stdout, done.stdout[-4000:]
        assert changes(starting_state, snapshot(lab)) == {}

    def test_check_mode_on_the_starting_state_says_what_it_cannot_preview(self, lab, simulations, starting_state, inventory):
        done, recap = check_play(lab, "site.yml", inventory, **SELF)
        assert all(r["changed"] > 0 for r in recap.values()), recap
        assert "check mode: the registration of local-cluster with the hub is not previewed: the hub has no join token " \
               "yet" in done.stdout, done.stdout[-4000:]
        assert "(a real run creates it first); nor is its acceptance by the hub" in done.stdout, done.stdout[-4000:]
        assert summary(done.stdout)["local-cluster"]["RESULT"] == "registered"
        assert changes(starting_state, snapshot(lab)) == {}

    def test_site_registers_the_hub_as_local_cluster_and_a_second_run_changes_nothing(self, lab, simulations, inventory):
        done, recap = play("site.yml", inventory, **SELF)
        assert done.returncode == 0, done.stdout[-4000:]
        assert all(r["changed"] > 0 and r["failed"] == 0 and r["rescued"] == 0 for r in recap.values()), recap
        rows = summary(done.stdout)
        for name in ("local-cluster", "member1", "member2"):
            assert [rows[name][c] for c in OCM_COLUMNS] == ["True", "True", "True", "registered"], rows
        hub = lab.api(lab.hub)
        managed = hub.get(MANAGED_CLUSTERS + "/local-cluster")
        assert managed["spec"]["hubAcceptsClient"] is True
        assert managed["spec"]["managedClusterClientConfigs"][0]["url"] == lab.clusters[lab.hub]["server"]
        assert conditions(managed)["ManagedClusterConditionAvailable"] == "True"
        # the klusterlet runs on the hub cluster, next to the cluster manager, and joined as local-cluster
        klusterlet = hub.get(KLUSTERLET)
        assert klusterlet["spec"]["clusterName"] == "local-cluster"
        assert conditions(klusterlet)["HubConnectionDegraded"] == "False"
        for deployment in ("klusterlet", "cluster-manager"):
            assert hub.exists("/apis/apps/v1/namespaces/open-cluster-management/deployments/" + deployment)
        again, recap = play("site.yml", inventory, **SELF)
        assert again.returncode == 0 and all(r["changed"] == 0 for r in recap.values()), recap
        assert summary(again.stdout)["local-cluster"]["RESULT"] == "registered"

    def test_check_mode_on_the_registered_fleet_changes_nothing(self, lab, simulations, inventory):
        done, recap = check_play(lab, "site.yml", inventory, diff=True, **SELF)
        assert all(r["changed"] == 0 for r in recap.values()), recap
        assert "+++ after" not in done.stdout, done.stdout[-4000:]
        assert summary(done.stdout)["local-cluster"]["RESULT"] == "registered"

    def test_hub_init_refuses_to_uninstall_while_the_hub_is_its_own_member(self, lab, simulations, inventory):
        """Without hub_init_ocm_register_self, hub_init does not know local-cluster is the hub: it refuses and says so."""
        uninstall = {"hosts": "hub", "gather_facts": False, "connection": "local",
                     "roles": [{"role": "multicluster.fleet.hub_init", "vars": {"hub_init_state": "absent"}}]}
        done = run_playbook([uninstall], inventory=inventory)
        assert done.returncode != 0
        message = failures(done.stdout, after="PLAY [hub]")["hub-cluster"]
        assert message.startswith("the hub still has accepted member clusters: ") and "local-cluster" in message, message
        assert message.endswith("; if local-cluster is the hub registered with itself, set hub_init_ocm_register_self=true "
                                "to unregister it first"), message
        assert conditions(lab.api(lab.hub).get(MANAGED_CLUSTERS + "/local-cluster"))["ManagedClusterConditionAvailable"] == "True"

    def test_check_mode_detach_previews_and_removes_nothing(self, lab, simulations, inventory):
        done, recap = check_play(lab, "detach.yml", inventory, **SELF)
        assert all(r["changed"] > 0 for r in recap.values()), recap
        rows = summary(done.stdout)
        assert rows["local-cluster"]["RESULT"] == rows["member1"]["RESULT"] == rows["member2"]["RESULT"] == "detached"
        assert lab.api(lab.hub).get(MANAGED_CLUSTERS + "/local-cluster")["spec"]["hubAcceptsClient"] is True

    def test_detach_removes_local_cluster_and_restores_the_starting_state(self, lab, simulations, starting_state, inventory):
        done, recap = play("detach.yml", inventory, **SELF)
        assert done.returncode == 0, done.stdout[-4000:]
        assert all(r["failed"] == 0 and r["rescued"] == 0 for r in recap.values()), recap
        rows = summary(done.stdout)
        assert rows["local-cluster"]["RESULT"] == rows["member1"]["RESULT"] == rows["member2"]["RESULT"] == "detached"
        assert rows["local-cluster"]["HUB ACCEPTED"] == "-"  # no longer on the hub
        hub = lab.api(lab.hub)
        assert not hub.exists(MANAGED_CLUSTERS + "/local-cluster") and not hub.exists(KLUSTERLET)
        assert changes(starting_state, snapshot(lab)) == {}
