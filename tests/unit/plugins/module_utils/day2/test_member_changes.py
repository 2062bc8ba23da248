import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.day2.member_changes import MemberChanges


@pytest.fixture
def hub(fake_cluster):
    for name in ("m1", "m2", "m3"):
        fake_cluster.add(CLUSTER, {"metadata": {"name": name, "labels": {"team": "a"}}, "spec": {"syncMode": "Push"}})
    return fake_cluster


def labels_of(hub, name):
    return hub.objects[CLUSTER.path(name=name)]["metadata"].get("labels")


def patches(hub):
    return [(path.rsplit("/", 1)[-1], query) for method, path, query in hub.calls if method == "PATCH"]


def env(value):
    """A plan giving every cluster label env=value, nothing when it has it."""
    def plan(_cluster, obj):
        return None if obj["metadata"]["labels"].get("env") == value else {"metadata": {"labels": {"env": value}}}
    return plan


def summary(outcome, info):
    return {"action": outcome.action if outcome else "unregistered", "info": info}


def diff(outcome):
    return {"before": outcome.before["metadata"]["labels"], "after": outcome.after["metadata"]["labels"]}


def run(hub, clusters, plan, check_mode=False, unregistered="fail"):
    changes = MemberChanges(hub, "karmada", clusters, check_mode)
    changes.read(unregistered, "label")
    changes.write(plan)
    return changes


def test_every_cluster_written_once_then_unchanged(hub):
    result = run(hub, ["m1", "m2", "m1"], env("prod")).result(summary, diff, "labelling failed")
    assert result == {"changed": True, "clusters": {"m1": {"action": "updated", "info": None},
                                                    "m2": {"action": "updated", "info": None}},
                      "diff": [{"before": {"team": "a"}, "after": {"team": "a", "env": "prod"}}] * 2}
    assert labels_of(hub, "m1") == labels_of(hub, "m2") == {"team": "a", "env": "prod"} and labels_of(hub, "m3") == {"team": "a"}
    hub.calls.clear()
    again = run(hub, ["m1", "m2"], env("prod")).result(summary, diff, "labelling failed")
    assert again == {"changed": False, "clusters": {"m1": {"action": "unchanged", "info": None},
                                                    "m2": {"action": "unchanged", "info": None}}, "diff": []}
    assert patches(hub) == []


def test_each_write_is_guarded_by_the_resource_version_it_was_planned_from(hub):
    seen = []
    original = hub.request

    def request(method, path, body=None, **kwargs):
        if method == "PATCH":
            seen.append(body["metadata"]["resourceVersion"])
        return original(method, path, body=body, **kwargs)
    hub.request = request
    run(hub, ["m2"], env("prod"))
    assert seen == ["2"]


def test_a_conflict_reads_again_and_plans_again_on_what_is_there_now(hub):
    planned_from = []

    def plan(cluster, obj):
        planned_from.append(dict(obj["metadata"]["labels"]))
        if len(planned_from) == 1:  # someone else writes the cluster between this read and the patch
            hub.add(CLUSTER, {"metadata": {"name": cluster, "labels": {"team": "b"}}, "spec": {"syncMode": "Push"}})
        return {"metadata": {"labels": {"owner": obj["metadata"]["labels"]["team"]}}}
    changes = run(hub, ["m1"], plan)
    assert planned_from == [{"team": "a"}, {"team": "b"}]
    assert labels_of(hub, "m1") == {"team": "b", "owner": "b"}
    assert changes.outcomes["m1"].before["metadata"]["labels"] == {"team": "b"}
    assert [c[0] for c in hub.calls] == ["GET", "PATCH", "GET", "PATCH"]


def test_a_cluster_that_keeps_changing_fails_alone(hub):
    hub.conflicts = resources.CONFLICT_RETRIES
    changes = MemberChanges(hub, "karmada", ["m1"])
    changes.read()
    changes.write(env("prod"), "its labels were being written")
    assert changes.errors == {"m1": "Cluster/m1 kept changing while its labels were being written (5 conflicts); try again"}


def test_a_cluster_deleted_meanwhile_is_no_longer_registered(hub):
    def plan(cluster, _obj):
        del hub.objects[CLUSTER.path(name=cluster)]
        return {"metadata": {"labels": {"env": "prod"}}}
    assert run(hub, ["m1"], plan).errors == {"m1": "is no longer registered (its Cluster was deleted meanwhile)"}


def test_a_failure_on_one_member_leaves_the_others_written(hub):
    original = hub.request

    def request(method, path, **kwargs):
        if method == "PATCH" and path == CLUSTER.path(name="m2"):
            raise ClusterError("forbidden: cannot patch clusters m2", 403)
        return original(method, path, **kwargs)
    hub.request = request
    changes = run(hub, ["m1", "m2", "m3"], env("prod"))
    with pytest.raises(FleetError) as error:
        changes.result(summary, diff, "labelling failed", warnings=["a note"])
    assert error.value.msg == "labelling failed on 1 of 3 clusters: cluster 'm2': forbidden: cannot patch clusters m2"
    assert error.value.details == {"changed": True, "clusters_failed": ["m2"], "warnings": ["a note"], "clusters": {
        "m1": {"action": "updated", "info": None}, "m3": {"action": "updated", "info": None}},
        "cluster_errors": {"m2": "labelling failed on cluster 'm2': forbidden: cannot patch clusters m2"}}
    assert labels_of(hub, "m1") == labels_of(hub, "m3") == {"team": "a", "env": "prod"}
    assert labels_of(hub, "m2") == {"team": "a"}


def test_check_mode_asks_the_hubs_dry_run_and_stores_nothing(hub):
    changes = run(hub, ["m1", "m2"], env("prod"), check_mode=True)
    assert patches(hub) == [("m1", {"dryRun": "All"}), ("m2", {"dryRun": "All"})]
    assert labels_of(hub, "m1") == {"team": "a"}
    assert changes.changed is True and changes.outcomes["m1"].after["metadata"]["labels"] == {"team": "a", "env": "prod"}


def test_a_failure_in_check_mode_changed_nothing(hub):
    hub.conflicts = resources.CONFLICT_RETRIES
    changes = run(hub, ["m1", "m2"], env("prod"), check_mode=True)
    with pytest.raises(FleetError) as error:
        changes.raise_failures("labelling failed")
    assert error.value.details["changed"] is False and error.value.details["clusters_failed"] == ["m1"]
    assert changes.outcomes["m2"].changed


def test_different_values_per_cluster_and_what_the_plan_says_beside(hub):
    wanted = {"m1": "blue", "m2": "green", "m3": None}

    def plan(cluster, _obj):
        patch = {"metadata": {"labels": {"color": wanted[cluster]}}} if wanted[cluster] else {}
        return patch, "color %s" % wanted[cluster]
    result = run(hub, ["m1", "m2", "m3"], plan).result(summary, diff, "labelling failed")
    assert (labels_of(hub, "m1")["color"], labels_of(hub, "m2")["color"]) == ("blue", "green")
    assert result["clusters"] == {"m1": {"action": "updated", "info": "color blue"},
                                  "m2": {"action": "updated", "info": "color green"},
                                  "m3": {"action": "unchanged", "info": "color None"}}
    assert patches(hub) == [("m1", {}), ("m2", {})]


def test_unregistered_clusters_fail_before_any_write_or_are_skipped(hub):
    with pytest.raises(FleetError) as error:
        run(hub, ["m1", "ghost"], env("prod"))
    assert error.value.msg == ("cluster 'hub' (https://fake): cannot label every cluster, nothing was written: "
                               "cluster 'ghost' is not registered on the hub (no Cluster named ghost)")
    assert patches(hub) == []
    changes = run(hub, ["ghost", "m1"], env("prod"), unregistered="skip")
    assert changes.skipped == ["ghost"] and list(changes.outcomes) == ["m1"]
    assert changes.result(summary, diff, "labelling failed")["clusters"] == {
        "ghost": {"action": "unregistered", "info": None}, "m1": {"action": "updated", "info": None}}


def test_names_are_checked_before_any_request(hub):
    with pytest.raises(FleetError, match="clusters is empty"):
        MemberChanges(hub, "karmada", [])
    with pytest.raises(FleetError, match="invalid cluster name 'M1'"):
        MemberChanges(hub, "karmada", ["M1"])
    assert hub.calls == []


def test_per_cluster_a_rejected_or_unregistered_cluster_fails_alone(hub):
    def check(item):
        if item.get("bad"):
            raise FleetError("invalid labels: %s" % item["bad"])
        return item["name"]
    changes, values = MemberChanges.per_cluster(hub, "karmada", [{"name": "m1"}, {"name": "m2", "bad": "env"},
                                                                 {"name": "ghost"}], check)
    assert values == {"m1": "m1", "ghost": "ghost"}
    changes.read("fail", "label", isolated=True)
    assert sorted(changes.members) == ["m1"] and changes.skipped == []
    changes.write(env("prod"))
    with pytest.raises(FleetError) as error:
        changes.result(summary, diff, "labelling failed")
    assert error.value.msg == ("labelling failed on 2 of 3 clusters: cluster 'ghost' is not registered on the hub (no "
                               "Cluster named ghost); cluster 'm2': invalid labels: env")
    assert error.value.details["clusters_failed"] == ["ghost", "m2"]
    assert error.value.details["cluster_errors"] == {
        "ghost": "labelling failed on cluster 'ghost' is not registered on the hub (no Cluster named ghost)",
        "m2": "labelling failed on cluster 'm2': invalid labels: env"}
    assert error.value.details["clusters"] == {"m1": {"action": "updated", "info": None}}
    assert labels_of(hub, "m1") == {"team": "a", "env": "prod"} and labels_of(hub, "m2") == {"team": "a"}
    assert [path for method, path, _query in hub.calls if method == "GET"] == [CLUSTER.path(name="m1"), CLUSTER.path(name="ghost")]


def test_per_cluster_names_each_cluster_once(hub):
    with pytest.raises(FleetError, match=r"per_cluster names cluster\(s\) m1 more than once"):
        MemberChanges.per_cluster(hub, "karmada", [{"name": "m1"}, {"name": "m2"}, {"name": "m1"}], dict)
    assert hub.calls == []
