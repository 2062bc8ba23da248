import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import taints
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER

STAMP = "2026-11-22T03:25:40Z"
CORDON = {"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule", "timeAdded": STAMP}
GPU = {"key": "example.com/gpu", "value": "a100", "effect": "NoSchedule", "timeAdded": STAMP}
NOT_READY = {"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule", "timeAdded": STAMP}


def taint(key, value="", effect=None):
    return {"key": key, "value": value, "effect": effect}


@pytest.fixture
def hub(fake_cluster):
    fake_cluster.add(CLUSTER, {"metadata": {"name": "m1"}, "spec": {"syncMode": "Push", "taints": [NOT_READY, GPU]}})
    fake_cluster.add(CLUSTER, {"metadata": {"name": "m2"}, "spec": {"syncMode": "Push"}})
    return fake_cluster


def stored(hub, name, kind=CLUSTER):
    return hub.objects[kind.path(name=name)]["spec"].get("taints")


# --- the cordon taint is an engine fact -----------------------------------------------------------------

def test_cordon_taints_of_the_engines():
    assert engines.get("karmada").cordon_taint == {"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule"}
    assert engines.get("ocm").cordon_taint == {"key": "multicluster.fleet/cordoned", "effect": "NoSelect"}
    for engine in engines.NAMES:
        assert engines.get(engine).cordon_taint["effect"] in engines.get(engine).taint_effects


# --- checking the input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["dedicated", "example.com/maintenance", "a", "A_b.c-D", "x" * 63, "a.b/" + "x" * 63])
def test_qualified_keys_pass(key):
    assert taints.check_taint(engines.get("karmada"), taint(key, effect="NoSchedule"), "taints[0]")["key"] == key


@pytest.mark.parametrize("key, problem", [
    ("-bad", "its name '-bad' must be 1 to 63"),
    ("x" * 64, "must be 1 to 63"),
    ("Example.com/x", "its prefix 'Example.com' must be a DNS subdomain"),
    ("/x", "its prefix '' must be a DNS subdomain"),
    ("a/b/c", "its prefix 'a/b' must be a DNS subdomain"),
    ("example.com/", "its name '' must be"),
    ("has space", "its name 'has space'"),
    ("gpu\n", "its name 'gpu\\n'"),  # "$" matches before a final newline: not the end of the key (issue 46)
    ("example.com\n/gpu", "its prefix 'example.com\\n'"),
])
def test_keys_that_are_not_qualified_names_are_refused(key, problem):
    with pytest.raises(FleetError) as error:
        taints.check_taint(engines.get("ocm"), taint(key, effect="NoSelect"), "taints[2]")
    assert error.value.msg.startswith("taints[2]: taint key %r is not a qualified name" % key)
    assert problem in error.value.msg


@pytest.mark.parametrize("value", ["-x", "x" * 64, "a b", "é"])
def test_values_that_are_not_label_values_are_refused(value):
    with pytest.raises(FleetError, match="taints\\[0\\] \\(key k\\): taint value .* is not a valid label value"):
        taints.check_taint(engines.get("karmada"), taint("k", value, "NoSchedule"), "taints[0]")


@pytest.mark.parametrize("engine, effect", [("karmada", "NoSelect"), ("karmada", "PreferNoSchedule"), ("ocm", "NoSchedule")])
def test_effects_of_the_other_engine_are_refused(engine, effect):
    with pytest.raises(FleetError) as error:
        taints.check_taint(engines.get(engine), taint("k", effect=effect), "taints[0]")
    assert "effect %r is not a %s taint effect; the effects are %s" % (
        effect, engine, ", ".join(engines.get(engine).taint_effects)) in error.value.msg


def test_effect_required_to_add_not_to_remove():
    with pytest.raises(FleetError, match="a taint to add needs an effect, one of NoSelect, PreferNoSelect, NoSelectIfNew"):
        taints.plan("ocm", [taint("k")])
    assert taints.plan("ocm", [taint("k")], state="absent") == ([], [taint("k")])


@pytest.mark.parametrize("key", ["cluster.karmada.io/not-ready", "cluster.karmada.io/unreachable"])
def test_the_engines_own_taints_are_refused(key):
    with pytest.raises(FleetError, match="taint key %s is the engine's own" % key):
        taints.plan("karmada", [taint(key, effect="NoSchedule")], state="absent")


def test_plan_refuses_nothing_two_values_and_contradictions():
    with pytest.raises(FleetError, match="nothing to do"):
        taints.plan("karmada", [])
    with pytest.raises(FleetError, match="taints k=a:NoSchedule and k=b:NoSchedule have the same key and effect"):
        taints.plan("karmada", [taint("k", "a", "NoSchedule"), taint("k", "b", "NoSchedule")])
    with pytest.raises(FleetError, match="taint cluster.karmada.io/unschedulable:NoSchedule is to be both added and removed"):
        taints.plan("karmada", [taint("cluster.karmada.io/unschedulable", effect="NoSchedule")], cordon=False)
    add, remove = taints.plan("karmada", [taint("k", "a", "NoSchedule"), taint("k", "a", "NoExecute")], cordon=True)
    assert add[-1] == {"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule", "value": ""} and remove == []


def test_a_cordon_effect_is_one_of_the_engines_and_needs_cordon_true():
    cordon = "multicluster.fleet/cordoned"
    add, remove = taints.plan("ocm", cordon=True, cordon_effect="NoSelectIfNew")
    assert add == [taint(cordon, "", "NoSelectIfNew")] and remove == [taint(cordon, "", "NoSelect")]
    assert taints.plan("ocm", cordon=True) == ([taint(cordon, "", "NoSelect")], [taint(cordon, "", "NoSelectIfNew")])
    assert taints.plan("ocm", cordon=False) == ([], [taint(cordon, "", "NoSelect"), taint(cordon, "", "NoSelectIfNew")])
    assert taints.plan("karmada", cordon=True, cordon_effect="NoSchedule") == taints.plan("karmada", cordon=True)
    with pytest.raises(FleetError, match="cordon_effect NoExecute is not a karmada cordon effect; the cordon effects are NoSchedule"):
        taints.plan("karmada", cordon=True, cordon_effect="NoExecute")
    with pytest.raises(FleetError, match="cordon_effect NoSelectIfNew says how to cordon: it needs cordon true"):
        taints.plan("ocm", [taint("k", "v", "NoSelect")], cordon=False, cordon_effect="NoSelectIfNew")


def test_either_cordon_effect_counts_as_cordoned():
    ocm = engines.get("ocm")
    assert ocm.is_cordoned([taint("multicluster.fleet/cordoned", "", "NoSelectIfNew")])
    assert ocm.is_cordoned([taint("multicluster.fleet/cordoned", "", "NoSelect")])
    assert not ocm.is_cordoned([taint("multicluster.fleet/cordoned", "", "PreferNoSelect"), taint("k", "", "NoSelect")])
    assert not engines.get("karmada").is_cordoned([taint("cluster.karmada.io/unschedulable", "", "NoExecute")])


# --- reconciling ----------------------------------------------------------------------------------------

def test_reconcile_keeps_others_and_time_added():
    now = "2026-11-29T06:00:00Z"
    add = [taint("example.com/gpu", "a100", "NoSchedule"), taint("cluster.karmada.io/unschedulable", "", "NoSchedule")]
    result = taints.reconcile([NOT_READY, GPU], add, [], now)
    assert result == [NOT_READY, GPU, {"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule", "timeAdded": now}]
    assert taints.reconcile(result, add, [], "later") == result
    changed = taints.reconcile(result, [taint("example.com/gpu", "h100", "NoSchedule")], [], "later")
    assert changed[1] == {"key": "example.com/gpu", "value": "h100", "effect": "NoSchedule", "timeAdded": "later"}
    assert taints.reconcile(result, [], [taint("example.com/gpu")], now) == [NOT_READY, result[2]]
    assert taints.reconcile(result, [], [taint("example.com/gpu", effect="NoExecute")], now) == result


# --- apply against a fake hub ---------------------------------------------------------------------------

def test_cordon_many_clusters_then_rerun_unchanged_then_uncordon(hub):
    planned = taints.apply(hub, "karmada", ["m1", "m2"], dict(cordon=True), check_mode=True)
    assert planned["changed"] is True and stored(hub, "m2") is None
    assert planned["clusters"]["m2"]["cordoned"] is True
    assert [d["before_header"] for d in planned["diff"]] == ["Cluster/m1 (cluster m1): spec.taints",
                                                             "Cluster/m2 (cluster m2): spec.taints"]
    done = taints.apply(hub, "karmada", ["m1", "m2", "m1"], dict(cordon=True))
    assert done["changed"] is True and done["clusters"]["m1"]["added"] == ["cluster.karmada.io/unschedulable:NoSchedule"]
    assert stored(hub, "m1")[:2] == [NOT_READY, GPU] and stored(hub, "m1")[2]["key"] == "cluster.karmada.io/unschedulable"
    again = taints.apply(hub, "karmada", ["m1", "m2"], dict(cordon=True))
    assert again["changed"] is False and again["diff"] == []
    assert again["clusters"]["m2"] == dict(done["clusters"]["m2"], action="unchanged", added=[])
    undone = taints.apply(hub, "karmada", ["m1", "m2"], dict(cordon=False))
    assert undone["changed"] is True and stored(hub, "m1") == [NOT_READY, GPU] and stored(hub, "m2") is None
    assert undone["clusters"]["m1"]["removed"] == ["cluster.karmada.io/unschedulable:NoSchedule"]


def test_conflict_is_retried_on_what_is_there_now(hub):
    hub.conflicts = 1
    done = taints.apply(hub, "karmada", ["m2"], dict(taints=[taint("k", "v", "NoExecute")]))
    assert done["changed"] is True and stored(hub, "m2")[0]["key"] == "k"


def test_unregistered_cluster_fails_before_any_write(hub):
    with pytest.raises(FleetError) as error:
        taints.apply(hub, "karmada", ["m1", "ghost"], dict(cordon=True))
    assert "cannot taint every cluster, nothing was written: cluster 'ghost' is not registered on the hub (no Cluster named ghost)" \
        in error.value.msg
    assert error.value.details["clusters_failed"] == ["ghost"]
    assert not [c for c in hub.calls if c[0] == "PATCH"]


def test_unregistered_cluster_skipped_when_asked(hub):
    done = taints.apply(hub, "karmada", ["m1", "ghost"], dict(cordon=True), unregistered="skip")
    assert done["clusters"]["ghost"] == {"action": "unregistered", "taints": [], "cordoned": False, "added": [], "removed": []}
    assert done["clusters"]["m1"]["cordoned"] is True and done["changed"] is True
    assert [c[1] for c in hub.calls if c[0] == "PATCH"] == [CLUSTER.path(name="m1")]


def test_per_cluster_each_its_own_taints_and_a_bad_one_fails_alone(hub):
    per_cluster = [{"name": "m1", "taints": [taint("k", "a", "NoSchedule")]},
                   {"name": "m2", "taints": [taint("k", "b", "NoSelect")]},
                   {"name": "ghost", "taints": [taint("k", "c", "NoSchedule")]}]
    with pytest.raises(FleetError) as error:
        taints.apply(hub, "karmada", per_cluster, dict(state="present"))
    assert error.value.details["clusters_failed"] == ["ghost", "m2"]
    assert error.value.details["cluster_errors"] == {
        "ghost": "writing the taints failed on cluster 'ghost' is not registered on the hub (no Cluster named ghost)",
        "m2": "writing the taints failed on cluster 'm2': taints[0] (key k): effect 'NoSelect' is not a karmada taint "
              "effect; the effects are NoSchedule, NoExecute"}
    assert stored(hub, "m1")[2]["value"] == "a" and stored(hub, "m2") is None
    again = taints.apply(hub, "karmada", per_cluster[:1], dict(state="present"))
    assert again["changed"] is False and again["clusters"]["m1"]["action"] == "unchanged"
    planned = taints.apply(hub, "karmada", [{"name": "m1", "taints": [taint("k", "z", "NoSchedule")]},
                                            {"name": "m2", "taints": [taint("j", "", "NoExecute")]}],
                           dict(state="present"), check_mode=True)
    assert [c["added"] for c in planned["clusters"].values()] == [["k=z:NoSchedule"], ["j:NoExecute"]]
    assert stored(hub, "m1")[2]["value"] == "a" and stored(hub, "m2") is None


def test_ocm_taints_on_managed_clusters(fake_cluster):
    unreachable = {"key": "cluster.open-cluster-management.io/unreachable", "effect": "NoSelect", "timeAdded": STAMP}
    fake_cluster.add(MANAGED_CLUSTER, {"metadata": {"name": "c1"}, "spec": {"taints": [unreachable]}})
    done = taints.apply(fake_cluster, "ocm", ["c1"],
                        dict(taints=[taint("example.com/gpu", "a100", "PreferNoSelect")], cordon=True))
    assert [t["key"] for t in stored(fake_cluster, "c1", MANAGED_CLUSTER)] == [
        "cluster.open-cluster-management.io/unreachable", "example.com/gpu", "multicluster.fleet/cordoned"]
    assert done["clusters"]["c1"]["cordoned"] is True
    removed = taints.apply(fake_cluster, "ocm", ["c1"],
                           dict(taints=[taint("example.com/gpu")], state="absent", cordon=False))
    assert removed["clusters"]["c1"]["removed"] == ["example.com/gpu=a100:PreferNoSelect", "multicluster.fleet/cordoned:NoSelect"]
    assert stored(fake_cluster, "c1", MANAGED_CLUSTER) == [unreachable]


def test_ocm_cordon_effect_replaces_the_cordon_and_uncordon_removes_either(fake_cluster):
    fake_cluster.add(MANAGED_CLUSTER, {"metadata": {"name": "c1"}, "spec": {}})
    soft = taints.apply(fake_cluster, "ocm", ["c1"], dict(cordon=True, cordon_effect="NoSelectIfNew"))
    assert soft["clusters"]["c1"]["added"] == ["multicluster.fleet/cordoned:NoSelectIfNew"] and soft["clusters"]["c1"]["cordoned"]
    assert taints.apply(fake_cluster, "ocm", ["c1"], dict(cordon=True, cordon_effect="NoSelectIfNew"))["changed"] is False
    hard = taints.apply(fake_cluster, "ocm", ["c1"], dict(cordon=True))
    assert hard["clusters"]["c1"]["added"] == ["multicluster.fleet/cordoned:NoSelect"]
    assert hard["clusters"]["c1"]["removed"] == ["multicluster.fleet/cordoned:NoSelectIfNew"]
    taints.apply(fake_cluster, "ocm", ["c1"], dict(cordon=True, cordon_effect="NoSelectIfNew"))
    undone = taints.apply(fake_cluster, "ocm", ["c1"], dict(cordon=False))
    assert undone["clusters"]["c1"]["removed"] == ["multicluster.fleet/cordoned:NoSelectIfNew"]
    assert not stored(fake_cluster, "c1", MANAGED_CLUSTER) and not undone["clusters"]["c1"]["cordoned"]
