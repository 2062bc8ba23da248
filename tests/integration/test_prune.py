"""prune.yml (module cluster_prune) on the lab, both engines: site.yml registers member1 and member2, the test adds a
cluster this collection did not register (``foreign-prune``), then

- the list (without fleet_prune_confirm, and with --check) names the candidates and writes nothing;
- member2, its agent paused and its Lease an hour old (as a stopped agent leaves it), is removed as unreachable while
  member1, listed and answering, and the foreign cluster are kept; the re-run changes nothing;
- member2's agent comes back with the certificate of the registration prune removed: site.yml registers it again;
- member1, dropped from the inventory but still answering, is kept without fleet_prune_force and removed with it;
- the foreign cluster is removed only with fleet_prune_unmarked.

Karmada: member1 joins by push, member2 registers by pull; OCM: both register by pull (klusterlet).
"""

import datetime
import re

import pytest

from labstate import changes, snapshot

import sim_karmada_agent
import sim_klusterlet
from test_site import play as site_play, write_inventory

FOREIGN = "foreign-prune"
KARMADA_CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
OCM_CLUSTERS = "/apis/cluster.open-cluster-management.io/v1/managedclusters"
ENGINES = {
    "karmada": dict(clusters=KARMADA_CLUSTERS, agent=sim_karmada_agent.SimulatedKarmadaAgent,
                    lease="/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/member2",
                    foreign={"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                             "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:9"}}),
    "ocm": dict(clusters=OCM_CLUSTERS, agent=sim_klusterlet.SimulatedKlusterlet,
                lease="/apis/coordination.k8s.io/v1/namespaces/member2/leases/managed-cluster-lease",
                foreign={"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                         "spec": {"hubAcceptsClient": False}}),
}


def play(name, inventory, check=False, limit=None, **extra_vars):
    """A playbook run that succeeds: its output and the number of changes over all hosts."""
    done, recap = site_play(name, inventory, check=check, limit=limit, **extra_vars)
    assert done.returncode == 0, done.stdout[-6000:]
    return done.stdout, sum(counts["changed"] for counts in recap.values())


def listed(stdout, name):
    """The line the list (or the summary) printed for cluster ``name``, from the last print of the run."""
    printed = [section for section in re.split(r"^TASK ", stdout, flags=re.MULTILINE)
               if section.startswith(("[Print the list]", "[Print what was removed and kept]")) and "ok: [" in section]
    return next(line.strip().strip('",') for line in printed[-1].splitlines() if line.strip().startswith('"%s: ' % name))


def names(lab, engine):
    return sorted(c["metadata"]["name"] for c in lab.api(lab.hub).get(ENGINES[engine]["clusters"])["items"])


@pytest.fixture(scope="class", params=sorted(ENGINES))
def fleet(request, lab, simulations, tmp_path_factory):
    """site.yml for the engine (member1 and member2 healthy) and the foreign cluster; detach.yml afterwards."""
    engine = request.param
    directory = tmp_path_factory.mktemp(engine)
    inventory = write_inventory(lab, directory, engine)
    play("site.yml", inventory)
    hub = lab.api(lab.hub)
    facts = ENGINES[engine]
    hub.post(facts["clusters"], dict(facts["foreign"], metadata={"name": FOREIGN}))
    agent = [s for s in simulations if isinstance(s, facts["agent"]) and s.info["name"] == "member2"
             and not getattr(s, "hosted", False)][0]
    yield dict(engine=engine, inventory=inventory, without_member1=write_inventory(lab, directory, engine, without=["member1"]),
               agent=agent)
    agent.resume()
    if FOREIGN in names(lab, engine):
        hub.delete("%s/%s" % (facts["clusters"], FOREIGN))
    play("detach.yml", inventory)


@pytest.mark.usefixtures("fleet")
class TestPrune:
    def test_the_list_writes_nothing(self, lab, fleet):
        before = snapshot(lab, contents=True)
        for check in (False, True):
            stdout, changed = play("prune.yml", fleet["without_member1"], check=check, fleet_prune_confirm=check)
            assert changed == 0
            assert listed(stdout, "member1").startswith("member1: kept: not listed in the inventory, but ")
            assert listed(stdout, "member1").endswith("or set force=true to remove it from the hub anyway")
            assert listed(stdout, FOREIGN).startswith(FOREIGN + ": kept: not listed in the inventory, but not registered by "
                                                      "this collection (no multicluster.fleet/cluster-id annotation)")
            assert listed(stdout, "member2").startswith("member2: kept: listed; ")
        assert changes(before, snapshot(lab, contents=True)) == {}
        assert {"member1", "member2", FOREIGN} <= set(names(lab, fleet["engine"]))

    def test_an_unreachable_member_is_removed_and_the_rerun_changes_nothing(self, lab, fleet):
        fleet["agent"].pause()
        hub = lab.api(lab.hub)
        lease = hub.get(ENGINES[fleet["engine"]]["lease"])
        an_hour_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
        lease["spec"]["renewTime"] = an_hour_ago.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        hub.put(ENGINES[fleet["engine"]]["lease"], lease)

        stdout, changed = play("prune.yml", fleet["inventory"], fleet_prune_unreachable_after=600)
        assert changed == 0 and "member2" in names(lab, fleet["engine"])
        assert "nothing removed: run again with -e fleet_prune_confirm=true to remove member2" in stdout

        stdout, changed = play("prune.yml", fleet["inventory"], fleet_prune_unreachable_after=600, fleet_prune_confirm=True)
        assert changed == 1
        assert listed(stdout, "member2").startswith("member2: removed: silent for ")
        assert listed(stdout, "member1").startswith("member1: kept: listed; ")
        assert listed(stdout, FOREIGN).startswith(FOREIGN + ": kept: not listed in the inventory")
        assert names(lab, fleet["engine"]) == sorted(["member1", FOREIGN])

        _stdout, changed = play("prune.yml", fleet["inventory"], fleet_prune_unreachable_after=600, fleet_prune_confirm=True)
        assert changed == 0

    def test_a_pruned_member_registers_again(self, lab, fleet):
        """The pruned member2's agent comes back, still holding the certificate of the registration prune removed:
        site.yml registers it afresh (a new certificate; OCM: the klusterlet bootstraps again) instead of waiting the
        whole fleet_wait_timeout for a cluster object or a CSR its agent never creates."""
        assert "member2" not in names(lab, fleet["engine"])
        fleet["agent"].resume()
        play("site.yml", fleet["inventory"], limit="hub-cluster,member2", fleet_wait_timeout=60)
        cluster = lab.api(lab.hub).get("%s/member2" % ENGINES[fleet["engine"]]["clusters"])
        ready = "Ready" if fleet["engine"] == "karmada" else "ManagedClusterConditionAvailable"
        assert any(c["type"] == ready and c["status"] == "True" for c in cluster["status"]["conditions"]), cluster

    def test_an_unlisted_member_that_answers_needs_force(self, lab, fleet):
        stdout, changed = play("prune.yml", fleet["without_member1"], fleet_prune_confirm=True)
        assert changed == 0 and "member1" in names(lab, fleet["engine"])
        assert "so it still answers" in listed(stdout, "member1")

        stdout, changed = play("prune.yml", fleet["without_member1"], fleet_prune_confirm=True, fleet_prune_force=True)
        assert changed == 1
        assert listed(stdout, "member1").startswith("member1: removed: not listed in the inventory")
        assert FOREIGN in names(lab, fleet["engine"])  # force does not reach a cluster the collection did not register

    def test_a_foreign_cluster_only_with_unmarked(self, lab, fleet):
        stdout, changed = play("prune.yml", fleet["inventory"], fleet_prune_confirm=True, fleet_prune_unmarked=True,
                               fleet_prune_force=True)
        assert changed == 1 and FOREIGN not in names(lab, fleet["engine"])
        assert listed(stdout, FOREIGN).startswith(FOREIGN + ": removed: not listed in the inventory")
        _stdout, changed = play("prune.yml", fleet["inventory"], fleet_prune_confirm=True, fleet_prune_unmarked=True)
        assert changed == 0
