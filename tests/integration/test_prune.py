"""prune.yml (module cluster_prune) on the lab, both engines: site.yml registers member1 and member2, the test adds a
cluster this collection did not register (``foreign-prune``), then

- the list (without fleet_prune_confirm, and with --check) names the candidates and writes nothing; a partial inventory
  (an empty group members, --limit) is refused before anything is read;
- clusters a member's agent creates with its own hub credentials (Karmada: member2's karmada-agent certificate; OCM:
  the join token, which the bootstrap identity holds) are never taken for clusters this collection registered, and
  what a removal deletes is never taken from them: a Cluster whose secretRef names a Secret elsewhere on the hub, or is
  named like a member's impersonator Secret, is kept saying why, and the listing goes on;
- member2, its agent paused and its Lease an hour old (as a stopped agent leaves it), is removed as unreachable while
  member1, listed and answering, and the foreign cluster are kept; the re-run changes nothing. Karmada: a Work of
  member2's, whose execution controller ran in the paused agent, is released as karmadactl unjoin --force releases
  it; OCM: the registration agent's Lease, which no hub controller removes, is removed;
- member2's agent comes back with the certificate of the registration prune removed: site.yml registers it again;
- member1, dropped from the inventory but still answering, is kept without fleet_prune_force and removed with it;
- the foreign cluster is removed only with fleet_prune_unmarked.

Karmada: member1 joins by push, member2 registers by pull; OCM: both register by pull (klusterlet).
"""

import datetime
import re

import pytest

from agents import can_i, join_token_client, karmada_agent, ocm_agent
from labstate import changes, snapshot
from playbooks import play as site_play, write_inventory

import lab as fleet_lab
import sim_karmada_agent
import sim_klusterlet

FOREIGN = "foreign-prune"
KARMADA_CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
WORKS = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-member2/works"
OCM_CLUSTERS = "/apis/cluster.open-cluster-management.io/v1/managedclusters"
ENGINES = {
    "karmada": dict(clusters=KARMADA_CLUSTERS, agent=sim_karmada_agent.SimulatedKarmadaAgent,
                    lease="/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/member2",
                    foreign={"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                             "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:9"}},
                    deletes=["Work/karmada-es-member2/prune-app", "Cluster/member2"]),
    "ocm": dict(clusters=OCM_CLUSTERS, agent=sim_klusterlet.SimulatedKlusterlet,
                lease="/apis/coordination.k8s.io/v1/namespaces/member2/leases/managed-cluster-lease",
                foreign={"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                         "spec": {"hubAcceptsClient": False}},
                deletes=["ManagedCluster/member2", "Lease/member2/managed-cluster-lease",
                         "ConfigMap/kube-system/multicluster-fleet.ocm.member2"]),
}


def play(name, inventory, check=False, limit=None, **extra_vars):
    """A playbook run that succeeds: its output and the number of changes over all hosts."""
    done, recap = site_play(name, inventory, check=check, limit=limit, **extra_vars)
    assert done.returncode == 0, done.stdout[-6000:]
    return done.stdout, sum(counts["changed"] for counts in recap.values())


def record(engine, name):
    """The hub record of a cluster this collection registered (plugins/module_utils/registration/hub_record.py)."""
    return "ConfigMap/kube-system/multicluster-fleet.%s.%s" % (engine, name)


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
               agent=agent, no_members=write_inventory(lab, directory, engine, without=["member1", "member2"]))
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
            assert listed(stdout, FOREIGN) == (FOREIGN + ": kept: not listed in the inventory, but not registered by this "
                                               "collection (no hub record %s): set unmarked=true to prune it too"
                                               % record(fleet["engine"], FOREIGN))
            assert listed(stdout, "member2").startswith("member2: kept: listed; ")
        # a partial inventory is refused: every cluster it does not list would be a candidate
        for inventory, limit, why in ((fleet["no_members"], None, "the group members of the inventory is empty"),
                                      (fleet["inventory"], "hub-cluster,member1", "the run is limited (--limit hub-cluster,member1)")):
            done, _recap = site_play("prune.yml", inventory, limit=limit, fleet_prune_confirm=True, fleet_prune_force=True)
            assert done.returncode == 2 and ("refusing to prune from a partial inventory: %s, so every cluster on the hub it "
                                             "does not list would be a candidate for removal" % why) in done.stdout, done.stdout[-3000:]
            assert "List the member clusters to remove" not in done.stdout
        stdout, changed = play("prune.yml", fleet["no_members"], check=True, fleet_prune_inventory_complete=True)
        assert listed(stdout, "member2").startswith("member2: kept: not listed in the inventory, but ")
        assert changes(before, snapshot(lab, contents=True)) == {}
        assert {"member1", "member2", FOREIGN} <= set(names(lab, fleet["engine"]))

    def test_what_an_agent_creates_on_the_hub_steers_no_removal(self, lab, fleet, tmp_path):
        """Member objects made with an agent's own hub credentials, annotated as this collection annotates its members:
        never taken for registered ones, never a source of what to delete; the rest of the listing goes on."""
        engine, hub = fleet["engine"], lab.api(lab.hub)
        forged = {"multicluster.fleet/cluster-id": "anything"}
        if engine == "karmada":
            agent = karmada_agent(lab, "member2", tmp_path)  # user system:karmada:agent:member2, as site.yml left it
            clients = [agent]
            if not hub.exists("/api/v1/namespaces/karmada-system"):
                hub.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "karmada-system"}})
            target = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "karmada-cert", "namespace": "karmada-system"},
                      "data": {"tls.key": "c2VjcmV0"}}
            hub.post("/api/v1/namespaces/karmada-system/secrets", target)
            rogues = {"karmada-cert": {"namespace": "karmada-system", "name": "karmada-cert"},
                      "member1-impersonator": {"namespace": "karmada-cluster", "name": "member1-impersonator"},
                      "rogue-kube-system": {"namespace": "kube-system", "name": "rogue-kube-system"}}
            for name, ref in rogues.items():
                agent.post(KARMADA_CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                              "metadata": {"name": name, "annotations": forged},
                                              "spec": {"syncMode": "Push", "id": "anything", "apiEndpoint": "https://127.0.0.1:9",
                                                       "secretRef": ref}})
            kept_secrets = ["/api/v1/namespaces/karmada-system/secrets/karmada-cert",
                            "/api/v1/namespaces/karmada-cluster/secrets/member1-impersonator"]
        else:
            bootstrap = join_token_client(lab, "system:bootstrappers:managedcluster", tmp_path)  # anyone with the join token
            clients = [bootstrap, ocm_agent(lab, "member2", tmp_path)]
            rogues = {"rogue-ocm": None}
            bootstrap.post(OCM_CLUSTERS, {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                                          "metadata": {"name": "rogue-ocm", "annotations": forged},
                                          "spec": {"hubAcceptsClient": False}})
            kept_secrets = []
        # the record this collection trusts is where none of these identities may write
        for client in clients:
            for verb in ("create", "update", "patch"):
                assert not can_i(client, verb, "", "configmaps", "multicluster-fleet.%s.member3" % engine, "kube-system")
        try:
            stdout, changed = play("prune.yml", fleet["inventory"], fleet_prune_confirm=True, fleet_prune_force=True)
            assert changed == 0 and set(rogues) <= set(names(lab, engine))
            for name in rogues:
                assert listed(stdout, name).startswith(
                    name + ": kept: not listed in the inventory, but not registered by this collection: there is no hub "
                    "record %s (its multicluster.fleet/cluster-id annotation does not count" % record(engine, name))
            assert listed(stdout, "member1").startswith("member1: kept: listed; ")
            if engine == "karmada":  # even told to remove unregistered clusters, it deletes nothing they name
                stdout, changed = play("prune.yml", fleet["inventory"], fleet_prune_confirm=True, fleet_prune_force=True,
                                       fleet_prune_unmarked=True)
                assert listed(stdout, "karmada-cert").endswith(
                    "not removed: its spec.secretRef names Secret karmada-system/karmada-cert, not "
                    "karmada-cluster/karmada-cert, the one this collection writes for it: prune deletes no Secret a member "
                    "object names; check the Cluster and remove it by hand")
                assert listed(stdout, "rogue-kube-system").endswith(
                    "not removed: its spec.secretRef names Secret kube-system/rogue-kube-system, not "
                    "karmada-cluster/rogue-kube-system, the one this collection writes for it: prune deletes no Secret a "
                    "member object names; check the Cluster and remove it by hand")
                assert "not removed: Secret karmada-cluster/member1-impersonator is not owned by this Cluster" in listed(
                    stdout, "member1-impersonator")
                assert listed(stdout, FOREIGN).startswith(FOREIGN + ": removed: not listed in the inventory")
                assert set(rogues) <= set(names(lab, engine))
                hub.post(KARMADA_CLUSTERS, dict(ENGINES[engine]["foreign"], metadata={"name": FOREIGN}))
            for path in kept_secrets:
                assert hub.exists(path), path
        finally:
            for path in ["%s/%s" % (ENGINES[engine]["clusters"], name) for name in rogues] + kept_secrets[:1]:
                try:
                    hub.delete(path)
                except fleet_lab.ApiError as exc:
                    if exc.status != 404:
                        raise

    def test_an_unreachable_member_is_removed_and_the_rerun_changes_nothing(self, lab, fleet):
        hub, engine = lab.api(lab.hub), fleet["engine"]
        if engine == "karmada":  # a Work for member2, as Karmada's controllers write it: its agent's execution controller applies it
            hub.post(WORKS, {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                             "metadata": {"name": "prune-app", "namespace": "karmada-es-member2",
                                          "finalizers": ["karmada.io/execution-controller"]},
                             "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                                  "metadata": {"name": "prune-app", "namespace": "default"}}]}}})
            fleet["agent"].wait_for(lambda: lab.api("member2").exists("/api/v1/namespaces/default/configmaps/prune-app"),
                                    30, "the Work applied to member2")
        fleet["agent"].pause()
        lease = hub.get(ENGINES[engine]["lease"])
        an_hour_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
        lease["spec"]["renewTime"] = an_hour_ago.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        hub.put(ENGINES[engine]["lease"], lease)

        listing, changed = play("prune.yml", fleet["inventory"], fleet_prune_unreachable_after=600)
        assert changed == 0 and "member2" in names(lab, engine)
        assert "nothing removed: run again with -e fleet_prune_confirm=true to remove member2" in listing

        # a short wait: the agent that would release member2's objects is gone, so nothing is waited for
        stdout, changed = play("prune.yml", fleet["inventory"], fleet_prune_unreachable_after=600, fleet_prune_confirm=True,
                               fleet_wait_timeout=15)
        assert changed == 1
        assert listed(stdout, "member2").startswith("member2: removed: silent for ")
        assert listed(stdout, "member1").startswith("member1: kept: listed; ")
        assert listed(stdout, FOREIGN).startswith(FOREIGN + ": kept: not listed in the inventory")
        assert names(lab, engine) == sorted(["member1", FOREIGN])
        if engine == "karmada":  # the agent's Lease is owned by the Cluster: Kubernetes' garbage collector removes it
            fleet_lab.wait_for(lambda: not hub.exists(ENGINES[engine]["lease"]), 60, "the garbage collector to delete "
                               "member2's Lease, owned by its deleted Cluster")
        else:  # no hub controller removes the registration agent's Lease: prune did
            assert not hub.exists(ENGINES[engine]["lease"])
        assert not hub.exists("/api/v1/namespaces/kube-system/configmaps/multicluster-fleet.%s.member2" % engine)
        # the listing named what the removal deleted
        assert "; deletes %s, " % ", ".join(ENGINES[engine]["deletes"]) in listed(listing, "member2") + ", "
        assert listed(listing, "member2").count(record(engine, "member2")) == 1

        _stdout, changed = play("prune.yml", fleet["inventory"], fleet_prune_unreachable_after=600, fleet_prune_confirm=True)
        assert changed == 0
        if engine == "karmada":  # what the gone agent applied stays on its cluster, as prune leaves the member alone
            lab.api("member2").delete("/api/v1/namespaces/default/configmaps/prune-app")

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
