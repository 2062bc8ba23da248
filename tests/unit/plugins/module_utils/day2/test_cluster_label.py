"""Labels and annotations on many member clusters in one task (module cluster_label), against the fake API server."""

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import cluster_label, labels
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER

MANAGED = labels.MANAGED_LABELS


def fleet(fake_cluster, kind=CLUSTER, names=("m1", "m2")):
    for name in names:
        fake_cluster.add(kind, {"metadata": {"name": name, "labels": {"team": "a"}, "annotations": {}}, "spec": {}})
    return fake_cluster


class TestApply:
    def test_labels_many_clusters_then_changes_nothing(self, fake_cluster):
        hub = fleet(fake_cluster)
        result = cluster_label.apply(hub, "karmada", ["m1", "m2", "m1"], dict(labels={"env": "prod"}, annotations={"owner": "me"}))
        assert result["changed"] is True and sorted(result["clusters"]) == ["m1", "m2"]
        assert result["clusters"]["m1"] == {"action": "updated", "labels": {"team": "a", "env": "prod"},
                                            "annotations": {"owner": "me"}, "managed_labels": ["env"],
                                            "managed_annotations": ["owner"],
                                            "owners": {"labels": {"env": ["cluster_label"]}, "annotations": {"owner": ["cluster_label"]}},
                                            "taken_over": []}
        assert result["diff"][0]["before"] == {"labels": {"team": "a"}, "annotations": {}}
        assert result["diff"][0]["after"]["annotations"] == {"owner": "me", MANAGED: "env=cluster_label",
                                                             labels.MANAGED_ANNOTATIONS: "owner=cluster_label"}
        assert "warnings" not in result
        again = cluster_label.apply(hub, "karmada", ["m1", "m2"], dict(labels={"env": "prod"}, annotations={"owner": "me"}, purge=True))
        assert again["changed"] is False and again["diff"] == []
        assert {c["action"] for c in again["clusters"].values()} == {"unchanged"}

    def test_check_mode_writes_nothing(self, fake_cluster):
        hub = fleet(fake_cluster, MANAGED_CLUSTER, ["c1"])
        result = cluster_label.apply(hub, "ocm", ["c1"], dict(labels={"env": "prod"}), check_mode=True)
        assert result["changed"] is True and result["clusters"]["c1"]["labels"] == {"team": "a", "env": "prod"}
        assert hub.objects[MANAGED_CLUSTER.path(name="c1")]["metadata"]["labels"] == {"team": "a"}
        assert [c[2] for c in hub.calls if c[0] == "PATCH"] == [{"dryRun": "All"}]

    def test_an_unregistered_cluster_fails_before_any_write_or_is_skipped(self, fake_cluster):
        hub = fleet(fake_cluster, names=["m1"])
        with pytest.raises(FleetError) as info:
            cluster_label.apply(hub, "karmada", ["m1", "m9"], dict(labels={"env": "prod"}))
        assert info.value.msg == ("cluster 'hub' (https://fake): cannot label every cluster, nothing was written: "
                                  "cluster 'm9' is not registered on the hub (no Cluster named m9)")
        assert not [c for c in hub.calls if c[0] == "PATCH"]
        skipped = cluster_label.apply(hub, "karmada", ["m1", "m9"], dict(labels={"env": "prod"}), unregistered="skip")
        assert skipped["clusters"]["m9"]["action"] == "unregistered" and skipped["clusters"]["m1"]["action"] == "updated"

    def test_bad_input_before_any_request(self, fake_cluster):
        with pytest.raises(FleetError, match="invalid cluster name 'M1'"):
            cluster_label.apply(fake_cluster, "karmada", ["M1"], dict(labels={"env": "prod"}))
        with pytest.raises(FleetError, match="clusters is empty"):
            cluster_label.apply(fake_cluster, "karmada", [], dict(labels={"env": "prod"}))
        with pytest.raises(FleetError, match=r"labels\['env'\] = 'a/b'"):
            cluster_label.apply(fake_cluster, "karmada", ["m1"], dict(labels={"env": "a/b"}))
        assert fake_cluster.calls == []

    def test_a_conflict_is_planned_again(self, fake_cluster):
        hub = fleet(fake_cluster, names=["m1"])
        hub.conflicts = 1
        result = cluster_label.apply(hub, "karmada", ["m1"], dict(labels={"env": "prod"}))
        assert result["clusters"]["m1"]["labels"] == {"team": "a", "env": "prod"}
        assert [c[0] for c in hub.calls] == ["GET", "PATCH", "GET", "PATCH"]

    def test_two_owners_keep_their_labels_and_a_takeover_is_a_warning(self, fake_cluster):
        hub = fleet(fake_cluster, names=["m1"])
        cluster_label.apply(hub, "karmada", ["m1"], dict(labels={"env": "prod"}, purge=True, owner="inventory"))
        batch = cluster_label.apply(hub, "karmada", ["m1"], dict(labels={"rollout": "wave-1", "env": "prod"}, owner="batch"))
        assert batch["clusters"]["m1"]["owners"]["labels"] == {"env": ["batch", "inventory"], "rollout": ["batch"]}
        assert batch["clusters"]["m1"]["managed_labels"] == ["env", "rollout"]
        again = cluster_label.apply(hub, "karmada", ["m1"], dict(labels={}, purge=True, owner="inventory"))
        assert again["clusters"]["m1"]["labels"] == {"team": "a", "env": "prod", "rollout": "wave-1"}
        assert again["clusters"]["m1"]["managed_labels"] == []
        planned = cluster_label.apply(hub, "karmada", ["m1"], dict(labels={"team": "b", "rollout": "wave-2"}, owner="inventory"), check_mode=True)
        assert planned["warnings"] == [
            "cluster 'm1': label rollout was set to 'wave-1' by owner batch; owner inventory would take it over (its purge "
            "may remove it)",
            "cluster 'm1': label team was set to 'a' by someone outside this collection; owner inventory would take it over "
            "(its purge may remove it)"]
        assert planned["clusters"]["m1"]["taken_over"] == [{"kind": "label", "key": "rollout", "from": ["batch"]},
                                                           {"kind": "label", "key": "team", "from": []}]

    def test_per_cluster_each_its_own_values_and_a_bad_one_fails_alone(self, fake_cluster):
        hub = fleet(fake_cluster, names=["m1", "m2", "m3"])
        per_cluster = [{"name": "m1", "labels": {"env": "prod"}, "annotations": {"owner": "me"}},
                       {"name": "m2", "labels": {"env": "a/b"}}, {"name": "m3", "labels": {"env": "stage"}}]
        wanted = dict(purge=True, owner="inventory")
        planned = cluster_label.apply(hub, "karmada", per_cluster[::2], wanted, check_mode=True)
        assert planned["changed"] is True and [c[2] for c in hub.calls if c[0] == "PATCH"] == [{"dryRun": "All"}] * 2
        assert hub.objects[CLUSTER.path(name="m1")]["metadata"]["labels"] == {"team": "a"}
        with pytest.raises(FleetError) as info:
            cluster_label.apply(hub, "karmada", per_cluster, wanted)
        assert info.value.details["clusters_failed"] == ["m2"] and info.value.details["changed"] is True
        assert info.value.details["cluster_errors"]["m2"].startswith(
            "cluster 'hub' (https://fake): labelling failed on cluster 'm2': invalid labels: labels['env'] = 'a/b'")
        stored = dict((name, hub.objects[CLUSTER.path(name=name)]["metadata"]) for name in ("m1", "m2", "m3"))
        assert stored["m1"]["labels"] == {"team": "a", "env": "prod"} and stored["m1"]["annotations"]["owner"] == "me"
        assert stored["m2"]["labels"] == {"team": "a"} and stored["m3"]["labels"] == {"team": "a", "env": "stage"}
        again = cluster_label.apply(hub, "karmada", per_cluster[::2], wanted)
        assert again["changed"] is False and {c["action"] for c in again["clusters"].values()} == {"unchanged"}

    def test_a_bad_owner_before_any_request(self, fake_cluster):
        with pytest.raises(FleetError, match="invalid owner 'a,b' must be at most 63"):
            cluster_label.apply(fake_cluster, "karmada", ["m1"], dict(labels={"env": "prod"}, owner="a,b"))
        assert fake_cluster.calls == []
