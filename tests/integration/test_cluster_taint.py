"""cluster_taint and playbooks/cordon.yml against the lab: a real hub API server with the engines' CRDs.

Setup, playing the engines' registration side: Karmada Clusters ``ctk-1``..``ctk-3`` or OCM ManagedClusters
``cto-1``..``cto-3``; the first carries taints others set (the engine's own not-ready / unreachable taint and a
user's ``example.com/team``). For the placement test, the OCM fleet of ocm_fleet.py (prefix ``ctp``) with the
simulated placement controller (tests/lab/sim_addon.py).
"""

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.placement import decided_clusters, decisions
from ocm_fleet import OcmFleet, fails, ok
from runner import ROOT, recap_of, run_module, run_playbook

STAMP = "2026-11-22T03:25:40Z"
OTHERS = {
    "karmada": [{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule", "timeAdded": STAMP},
                {"key": "example.com/team", "value": "blue", "effect": "NoExecute", "timeAdded": STAMP}],
    "ocm": [{"key": "cluster.open-cluster-management.io/unreachable", "effect": "NoSelect", "timeAdded": STAMP},
            {"key": "example.com/team", "value": "blue", "effect": "PreferNoSelect", "timeAdded": STAMP}],
}
SPEC = {"karmada": {"syncMode": "Push"}, "ocm": {"hubAcceptsClient": True}}
EFFECT = {"karmada": "NoSchedule", "ocm": "NoSelect"}
DEV = [{"label_selector": {"match_labels": {"environment": "dev"}}}]


class Fleet:
    def __init__(self, lab, engine):
        self.engine = engines.get(engine)
        self.kind = self.engine.member_kind
        self.auth = {"kubeconfig": lab.clusters[lab.hub]["kubeconfig"], "context": lab.hub}
        self.hub = client.get_cluster(self.auth, "hub")
        self.clusters = ["ct%s-%d" % (engine[0], n) for n in (1, 2, 3)]

    def up(self):
        for name in self.clusters:
            spec = dict(SPEC[self.engine.name], taints=OTHERS[self.engine.name] if name == self.clusters[0] else None)
            resources.ensure(self.hub, self.kind, {"metadata": {"name": name}, "spec": spec})
        return self

    def down(self):
        for name in self.clusters:
            resources.delete(self.hub, self.kind, name)

    def run(self, check_mode=False, diff=False, **args):
        args = dict(self.auth, engine=self.engine.name, **args)
        args.setdefault("clusters", self.clusters)
        if args["clusters"] is None:  # per_cluster instead
            del args["clusters"]
        return run_module("cluster_taint", args, check_mode=check_mode, diff=diff)

    def taints(self, name=None):
        if name is None:
            return dict((n, self.taints(n)) for n in self.clusters)
        return (resources.get(self.hub, self.kind, name).get("spec") or {}).get("taints") or []


@pytest.fixture(scope="module", params=["karmada", "ocm"])
def fleet(lab, request):
    fleet = Fleet(lab, request.param).up()
    yield fleet
    fleet.down()


def test_cordon_several_clusters_check_diff_idempotent_uncordon(fleet):
    cordon = dict(fleet.engine.cordon_taint)
    before = fleet.taints()
    planned = ok(fleet.run(check_mode=True, diff=True, cordon=True))
    assert planned["changed"] is True and fleet.taints() == before
    assert len(planned["diff"]) == 3
    assert planned["diff"][0]["before"] == {"taints": OTHERS[fleet.engine.name]}
    assert planned["diff"][0]["after"]["taints"][:2] == OTHERS[fleet.engine.name]
    assert all(c["cordoned"] for c in planned["clusters"].values())

    done = ok(fleet.run(diff=True, cordon=True))
    assert done["changed"] is True
    for name in fleet.clusters:
        added = fleet.taints(name)[-1]
        assert dict((k, added[k]) for k in ("key", "effect")) == cordon and added["timeAdded"].endswith("Z")
        assert done["clusters"][name] == {"action": "updated", "taints": fleet.taints(name), "cordoned": True,
                                          "added": ["%(key)s:%(effect)s" % cordon], "removed": []}
    assert fleet.taints(fleet.clusters[0])[:2] == OTHERS[fleet.engine.name]
    cordoned = fleet.taints()

    again = ok(fleet.run(diff=True, cordon=True))
    assert again["changed"] is False and again["diff"] == [] and fleet.taints() == cordoned  # timeAdded kept
    assert set(c["action"] for c in again["clusters"].values()) == {"unchanged"}

    planned = ok(fleet.run(check_mode=True, cordon=False))
    assert planned["changed"] is True and fleet.taints() == cordoned
    undone = ok(fleet.run(cordon=False))
    assert undone["changed"] is True and fleet.taints() == before
    assert ok(fleet.run(cordon=False))["changed"] is False


def test_taints_added_changed_removed_others_kept(fleet):
    effect = EFFECT[fleet.engine.name]
    maintenance = {"key": "example.com/maintenance", "value": "window-1", "effect": effect}
    clusters = fleet.clusters[:2]
    added = ok(fleet.run(clusters=clusters, taints=[maintenance]))
    assert added["changed"] is True and set(added["clusters"]) == set(clusters)
    assert fleet.taints(fleet.clusters[2]) == []
    first = fleet.taints(fleet.clusters[0])
    assert first[:2] == OTHERS[fleet.engine.name] and dict((k, first[2][k]) for k in maintenance) == maintenance
    assert ok(fleet.run(clusters=clusters, taints=[maintenance]))["changed"] is False

    changed = ok(fleet.run(clusters=clusters, diff=True, taints=[dict(maintenance, value="window-2")]))
    assert changed["clusters"][clusters[0]]["added"] == ["example.com/maintenance=window-2:%s" % effect]
    assert changed["clusters"][clusters[0]]["removed"] == ["example.com/maintenance=window-1:%s" % effect]
    assert [t.get("value") for t in fleet.taints(clusters[1])] == ["window-2"]

    removed = ok(fleet.run(clusters=clusters, taints=[{"key": "example.com/maintenance"}], state="absent"))
    assert removed["changed"] is True
    assert fleet.taints(clusters[0]) == OTHERS[fleet.engine.name] and fleet.taints(clusters[1]) == []
    assert ok(fleet.run(clusters=clusters, taints=[{"key": "example.com/maintenance"}], state="absent"))["changed"] is False


def test_per_cluster_taints_check_mode_idempotence_and_a_refused_cluster(fleet):
    """per_cluster (what site.yml's hub step uses): each cluster its own taints in one task; check mode writes nothing, a
    re-run changes nothing; a cluster whose taint is refused fails alone."""
    effect = EFFECT[fleet.engine.name]
    _first, second, third = fleet.clusters
    per_cluster = [{"name": second, "taints": [{"key": "example.com/a", "value": "x", "effect": effect}]},
                   {"name": third, "taints": [{"key": "example.com/b", "effect": effect}]}]
    before = fleet.taints()
    planned = fleet.run(check_mode=True, clusters=None, per_cluster=per_cluster)
    assert planned["rc"] == 0 and planned["changed"] is True and fleet.taints() == before, planned
    done = fleet.run(clusters=None, per_cluster=per_cluster)
    assert done["rc"] == 0 and done["changed"] is True, done
    assert [t["key"] for t in fleet.taints(second)] == ["example.com/a"] and [t["key"] for t in fleet.taints(third)] == ["example.com/b"]
    again = fleet.run(clusters=None, per_cluster=per_cluster)
    assert again["rc"] == 0 and again["changed"] is False, again
    refused = fleet.run(clusters=None, state="absent", per_cluster=[
        {"name": second, "taints": [{"key": "example.com/a"}]}, {"name": third, "taints": [{"key": "bad key"}]}])
    assert refused["rc"] != 0 and refused["clusters_failed"] == [third], refused
    assert "taint key 'bad key' is not a qualified name" in refused["cluster_errors"][third]
    assert fleet.taints(second) == [] and [t["key"] for t in fleet.taints(third)] == ["example.com/b"]
    assert fleet.run(clusters=[third], state="absent", taints=[{"key": "example.com/b"}])["rc"] == 0


@pytest.mark.parametrize("args, message", [
    ({"taints": [{"key": "k", "effect": "Sometimes"}]}, "taints[0] (key k): effect 'Sometimes' is not a"),
    ({"taints": [{"key": "bad key", "effect": "{effect}"}]}, "taints[0]: taint key 'bad key' is not a qualified name"),
    ({"taints": [{"key": "k", "value": "-x", "effect": "{effect}"}]}, "taint value '-x' is not a valid label value"),
    ({"taints": [{"key": "k"}]}, "taints[0] (key k): a taint to add needs an effect"),
    ({"clusters": ["{first}", "not-registered"], "cordon": True},
     "nothing was written: cluster 'not-registered' is not registered on the hub"),
    ({"clusters": ["Bad_Name"], "cordon": True}, "Bad_Name"),
    ({}, "one of the following is required: taints, cordon"),
])
def test_bad_input_fails_before_writing(fleet, args, message):
    args = yaml.safe_load(yaml.safe_dump(args).replace("{effect}", EFFECT[fleet.engine.name])
                          .replace("{first}", fleet.clusters[0]))
    before = fleet.taints()
    failed = fails(fleet.run(**args), message)
    assert failed.get("changed") in (None, False)
    assert fleet.taints() == before


def test_the_other_engines_effect_is_refused(fleet):
    other = "NoSelect" if fleet.engine.name == "karmada" else "NoSchedule"
    fails(fleet.run(taints=[{"key": "k", "effect": other}]), "effect '%s' is not a %s taint effect; the effects are %s"
          % (other, fleet.engine.name, ", ".join(fleet.engine.taint_effects)))


def test_cordon_playbook_acts_on_the_members_of_the_run(fleet, tmp_path):
    hosts = dict((name, {"cluster_name": name}) for name in fleet.clusters)
    hosts["edge"] = hosts.pop(fleet.clusters[1])  # a host named otherwise than its cluster
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                 "fleet_engine": fleet.engine.name},
        "children": {"hub": {"hosts": {"hub-cluster": dict(fleet.auth)}}, "members": {"hosts": hosts}}}}))
    playbook = [{"import_playbook": "%s/playbooks/cordon.yml" % ROOT}]
    limit = "%s,edge" % fleet.clusters[0]
    before = fleet.taints()

    checked = run_playbook(playbook, inventory=str(inventory), limit=limit, check=True, diff=True)
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert "spec.taints" in checked.stdout and fleet.taints() == before

    done = run_playbook(playbook, inventory=str(inventory), limit=limit)
    assert done.returncode == 0, done.stdout[-3000:]
    assert set(recap_of(done.stdout)) == {fleet.clusters[0]}  # one task for the run (run_once) on the first host
    assert "%s: cordoned" % fleet.clusters[1] in done.stdout
    key = fleet.engine.cordon_taint["key"]
    assert [key in [t["key"] for t in fleet.taints(n)] for n in fleet.clusters] == [True, True, False]

    again = run_playbook(playbook, inventory=str(inventory), limit=limit)
    assert recap_of(again.stdout)[fleet.clusters[0]]["changed"] == 0, again.stdout[-3000:]

    undone = run_playbook(playbook, inventory=str(inventory), limit=limit, extra_vars={"fleet_cordon": "false"})
    assert undone.returncode == 0, undone.stdout[-3000:]
    assert fleet.taints() == before

    wrong = run_playbook(playbook, inventory=str(inventory), limit=limit, extra_vars={"fleet_cordon": "maybe"})
    assert wrong.returncode != 0 and "fleet_cordon must be true or false, not maybe" in wrong.stdout


# --- an OCM Placement drops a cordoned cluster and takes it back --------------------------------------------

@pytest.fixture(scope="module")
def ocm_fleet(lab):
    fleet = OcmFleet(lab, "ctp").up()
    yield fleet
    fleet.down()


def decided(fleet, name):
    return decided_clusters(decisions(fleet.hub, name, fleet.namespace))


def wait_decided(fleet, name, wanted):
    resources.wait_until(lambda: (decided(fleet, name) == wanted, decided(fleet, name)), 30,
                         "the placement controller to decide %s on %s" % (wanted, name), interval=0.3)


def test_cordoned_cluster_leaves_placement_decisions_and_comes_back(ocm_fleet):
    fleet = ocm_fleet
    cordoned, other = fleet.dev
    args = dict(namespace=fleet.namespace, cluster_sets=[fleet.cluster_set], bind_cluster_sets=True, predicates=DEV,
                wait=True, wait_timeout=60)
    assert ok(fleet.run("placement", name="dev", **args))["clusters"] == fleet.dev
    tolerating = [{"key": "multicluster.fleet/cordoned", "operator": "Exists"}]
    assert ok(fleet.run("placement", name="tolerating", tolerations=tolerating, **args))["clusters"] == fleet.dev

    ok(fleet.run("cluster_taint", engine="ocm", clusters=[cordoned], cordon=True))
    wait_decided(fleet, "dev", [other])
    assert decided(fleet, "tolerating") == fleet.dev

    ok(fleet.run("cluster_taint", engine="ocm", clusters=[cordoned], cordon=False))
    wait_decided(fleet, "dev", fleet.dev)

    # NoSelectIfNew: kept by the placement that has the cluster, not given to a new one; PreferNoSelect filters nothing.
    ok(fleet.run("cluster_taint", engine="ocm", clusters=[cordoned], taints=[
        {"key": "example.com/draining", "effect": "NoSelectIfNew"}, {"key": "example.com/busy", "effect": "PreferNoSelect"}]))
    assert ok(fleet.run("placement", name="newcomer", **args))["clusters"] == [other]
    assert decided(fleet, "dev") == fleet.dev
    ok(fleet.run("cluster_taint", engine="ocm", clusters=[cordoned], state="absent",
                 taints=[{"key": "example.com/draining"}, {"key": "example.com/busy"}]))
    wait_decided(fleet, "newcomer", fleet.dev)
    assert resources.get(fleet.hub, ocm.MANAGED_CLUSTER, cordoned)["spec"].get("taints") is None


def test_the_cordon_effect_is_an_ocm_setting(fleet):
    """ocm.cordon_effect NoSelectIfNew cordons an OCM member softly (what its placements chose stays); another engine
    refuses the ocm options before reading anything."""
    name = fleet.clusters[1]
    before = fleet.taints()
    soft = fleet.run(clusters=[name], cordon=True, ocm={"cordon_effect": "NoSelectIfNew"})
    if "NoSelectIfNew" not in fleet.engine.cordon_effects:
        fails(soft, "the ocm options (cordon_effect) apply to engine ocm only; engine is %s" % fleet.engine.name)
        assert fleet.taints() == before
        return
    soft = ok(soft)
    assert soft["changed"] is True and soft["clusters"][name]["cordoned"] is True
    assert [(t["key"], t["effect"]) for t in fleet.taints(name)] == [("multicluster.fleet/cordoned", "NoSelectIfNew")]
    assert ok(fleet.run(clusters=[name], cordon=True, ocm={"cordon_effect": "NoSelectIfNew"}))["changed"] is False
    planned = ok(fleet.run(clusters=[name], check_mode=True, cordon=True))
    assert planned["changed"] is True and planned["clusters"][name]["removed"] == ["multicluster.fleet/cordoned:NoSelectIfNew"]
    assert [t["effect"] for t in fleet.taints(name)] == ["NoSelectIfNew"]
    undone = ok(fleet.run(clusters=[name], cordon=False))
    assert undone["changed"] is True and undone["clusters"][name]["cordoned"] is False and fleet.taints() == before
