"""Labels and annotations of member clusters: Kubernetes' key and value rules, which keys the collection manages, the
merge patch it plans, the module's run over several clusters (against the fake API server), and what a member object
says about taints, cordon and cluster set."""

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import cluster_label, cluster_set, engines, labels, work
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER

MANAGED = labels.MANAGED_LABELS


def member(name="m1", labels_=None, annotations=None, taints=None):
    return {"metadata": {"name": name, "labels": labels_ or {}, "annotations": annotations or {}, "resourceVersion": "1"},
            "spec": {"taints": taints} if taints else {}}


class TestValidation:
    @pytest.mark.parametrize("key", ["env", "a.b-c_d", "example.com/tier", "x" * 63, "a.b/" + "x" * 63,
                                     "sub.example.com/A_b"])
    def test_qualified_names(self, key):
        assert labels.key_problem(key) is None

    @pytest.mark.parametrize("key, problem", [
        ("", "non-empty"), ("-env", "name must be"), ("env-", "name must be"), ("x" * 64, "name must be"),
        ("Example.com/env", "prefix"), ("/env", "prefix"), ("a/b/c", "prefix"), ("example.com/", "name (after '/')"),
        ("a b", "name must be"),
    ])
    def test_keys_that_are_refused(self, key, problem):
        assert problem in labels.key_problem(key)

    def test_values_as_text(self):
        assert labels.validate({"a": "x", "n": 3, "t": True, "f": False, "e": "", "gone": None}, None) == (
            {"a": "x", "n": "3", "t": "true", "f": "false", "e": "", "gone": None}, None)

    def test_every_bad_key_and_value_is_named(self):
        with pytest.raises(FleetError) as info:
            labels.validate({"env": "prod west", "Bad/key": "x", "tier": ["a"], "ok": "fine"})
        assert info.value.msg == (
            "invalid labels: labels['env'] = 'prod west': a label value must be empty or at most 63 letters, digits, '-', "
            "'_' or '.', starting and ending with a letter or digit; labels key 'Bad/key': its prefix (before '/') must be "
            "a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', at most 253 characters; labels['tier'] = ['a']: "
            "must be a string, got list")

    def test_long_label_value_refused_long_annotation_value_kept(self):
        with pytest.raises(FleetError, match=r"labels\['env'\] = 'xxx"):
            labels.validate({"env": "x" * 64})
        assert labels.validate(None, {"note": "free text, any length " * 100})[1]["note"].startswith("free text")

    def test_annotations_size_and_bookkeeping_keys(self):
        with pytest.raises(FleetError, match="262145 bytes together, Kubernetes allows at most 262144"):
            labels.validate(None, {"a": "x" * (256 * 1024)})
        with pytest.raises(FleetError, match="annotations key 'multicluster.fleet/managed-labels': this collection records"):
            labels.validate(None, {MANAGED: "env"})


ANNOTATIONS = labels.MANAGED_ANNOTATIONS


class TestPlan:
    """The default owner (cluster_label), as the tests before owners; TestOwners has several."""

    def test_new_labels_are_set_and_recorded(self):
        patch = labels.plan("karmada", member(labels_={"team": "a"}), {"env": "prod", "tier": "web"}, {"owner": "me"})
        assert patch == {"labels": {"env": "prod", "tier": "web"},
                         "annotations": {"owner": "me", MANAGED: "env=cluster_label,tier=cluster_label",
                                         ANNOTATIONS: "owner=cluster_label"}}

    def test_nothing_to_do(self):
        obj = member(labels_={"env": "prod"}, annotations={MANAGED: "env=cluster_label"})
        assert labels.plan("karmada", obj, {"env": "prod"}, {}, purge=True) == {}

    def test_a_value_someone_else_set_stays_theirs(self):
        assert labels.plan("ocm", member(labels_={"team": "a"}), {"team": "a"}, None, purge=True) == {}

    def test_purge_removes_only_what_the_owner_set(self):
        obj = member(labels_={"env": "prod", "tier": "web", "team": "a"}, annotations={MANAGED: "env=cluster_label,tier=cluster_label"})
        assert labels.plan("karmada", obj, {"env": "stage"}, None, purge=True) == {
            "labels": {"env": "stage", "tier": None}, "annotations": {MANAGED: "env=cluster_label"}}
        assert labels.plan("karmada", obj, {}, None, purge=True) == {
            "labels": {"env": None, "tier": None}, "annotations": {MANAGED: None}}
        assert labels.plan("karmada", obj, {"env": "stage"}, None, purge=False) == {"labels": {"env": "stage"}}

    def test_labels_not_given_are_not_purged(self):
        obj = member(labels_={"env": "prod"}, annotations={MANAGED: "env=cluster_label"})
        assert labels.plan("karmada", obj, None, {"owner": "me"}, purge=True) == {
            "annotations": {"owner": "me", ANNOTATIONS: "owner=cluster_label"}}

    def test_null_removes_whoever_set_it(self):
        obj = member(labels_={"env": "prod", "team": "a"}, annotations={MANAGED: "env=inventory+cluster_label"})
        assert labels.plan("ocm", obj, {"team": None, "env": None, "absent": None}) == {
            "labels": {"team": None, "env": None}, "annotations": {MANAGED: None}}

    def test_engine_labels_are_written_but_never_recorded_nor_purged(self):
        set_label = "cluster.open-cluster-management.io/clusterset"
        obj = member(labels_={set_label: "default"})
        assert labels.plan("ocm", obj, {set_label: "blue", "env": "prod"}) == {
            "labels": {set_label: "blue", "env": "prod"}, "annotations": {MANAGED: "env=cluster_label"}}
        assert labels.plan("ocm", member(labels_={set_label: "blue", "env": "prod"}, annotations={MANAGED: "env=cluster_label"}),
                           {}, purge=True) == {"labels": {"env": None}, "annotations": {MANAGED: None}}
        assert labels.plan("karmada", member(), {"karmada.io/x": "y"}) == {"labels": {"karmada.io/x": "y"}}

    def test_a_recorded_key_someone_removed_leaves_the_record(self):
        obj = member(labels_={"env": "prod"}, annotations={MANAGED: "env=cluster_label,gone=inventory"})
        assert labels.plan("karmada", obj, {"env": "prod"}) == {"annotations": {MANAGED: "env=cluster_label"}}


class TestOwners:
    """Issue 46, item 3: a labelling job and site.yml (owner inventory) each purge only their own keys."""

    def test_the_record_format(self):
        obj = member(annotations={MANAGED: "env=inventory+batch,tier=batch,old,bare="})
        assert labels.owners(obj, MANAGED) == {"env": {"inventory", "batch"}, "tier": {"batch"}, "old": None, "bare": None}
        assert labels.record_text(labels.owners(obj, MANAGED)) == "bare,env=batch+inventory,old,tier=batch"
        assert labels.managed_keys(obj, MANAGED, "batch") == {"env", "tier"}
        assert labels.managed_keys(obj, MANAGED) == {"env", "tier", "old", "bare"}
        assert labels.record_text({}) is None

    def test_purge_leaves_another_owners_keys(self):
        obj = member(labels_={"env": "prod", "rollout": "wave-1"}, annotations={MANAGED: "env=inventory,rollout=batch"})
        assert labels.plan("ocm", obj, {"env": "prod"}, None, purge=True, owner="inventory") == {}
        assert labels.plan("ocm", obj, {}, None, purge=True, owner="inventory") == {
            "labels": {"env": None}, "annotations": {MANAGED: "rollout=batch"}}
        assert labels.plan("ocm", obj, {}, None, purge=True, owner="batch") == {
            "labels": {"rollout": None}, "annotations": {MANAGED: "env=inventory"}}

    def test_the_same_value_is_shared_and_stays_while_an_owner_lists_it(self):
        obj = member(labels_={"env": "prod"}, annotations={MANAGED: "env=inventory"})
        planned = labels.plan_changes("ocm", obj, {"env": "prod"}, owner="batch")
        assert planned == {"patch": {"annotations": {MANAGED: "env=batch+inventory"}}, "taken_over": [], "unowned": []}
        shared = member(labels_={"env": "prod"}, annotations={MANAGED: "env=batch+inventory"})
        assert labels.plan("ocm", shared, {}, purge=True, owner="inventory") == {"annotations": {MANAGED: "env=batch"}}
        assert labels.plan("ocm", shared, {"env": "prod"}, purge=True, owner="batch") == {}

    def test_taking_over_says_from_whom(self):
        obj = member(labels_={"env": "prod", "team": "a", "tier": "web"}, annotations={MANAGED: "env=inventory+x,tier=batch"})
        planned = labels.plan_changes("karmada", obj, {"env": "canary", "team": "b", "tier": "api", "new": "1"}, owner="batch")
        assert planned["patch"] == {"labels": {"env": "canary", "team": "b", "tier": "api", "new": "1"},
                                    "annotations": {MANAGED: "env=batch,new=batch,team=batch,tier=batch"}}
        # from other owners (env), from outside the collection (team: no owner recorded); tier was the task's own
        assert planned["taken_over"] == [("labels", "env", ["inventory", "x"], "prod"), ("labels", "team", [], "a")]

    def test_annotations_have_owners_too(self):
        obj = member(annotations={"note": "a", ANNOTATIONS: "note=inventory"})
        planned = labels.plan_changes("ocm", obj, None, {"note": "b"}, owner="batch")
        assert planned["patch"] == {"annotations": {"note": "b", ANNOTATIONS: "note=batch"}}
        assert planned["taken_over"] == [("annotations", "note", ["inventory"], "a")]

    def test_keys_of_an_earlier_version_are_taken_by_the_first_owner_listing_them_and_never_purged_before(self):
        obj = member(labels_={"env": "prod", "tier": "web", "rollout": "w1"}, annotations={MANAGED: "env,rollout,tier"})
        planned = labels.plan_changes("ocm", obj, {"env": "prod", "tier": "api"}, purge=True, owner="inventory")
        assert planned == {"patch": {"labels": {"tier": "api"}, "annotations": {MANAGED: "env=inventory,rollout,tier=inventory"}},
                           "taken_over": [], "unowned": [("labels", "rollout")]}
        assert labels.plan("ocm", obj, {}, purge=True, owner="inventory") == {}
        assert labels.plan_changes("ocm", obj, {}, purge=True, owner="inventory")["unowned"] == [
            ("labels", "env"), ("labels", "rollout"), ("labels", "tier")]

    @pytest.mark.parametrize("owner", ["", "a,b", "a=b", "a+b", "-x", "x" * 64, "gpu\n", None])
    def test_owners_that_cannot_be_recorded(self, owner):
        assert "must be at most 63 letters" in labels.owner_problem(owner)

    @pytest.mark.parametrize("owner", ["inventory", "cluster_label", "gpu-inventory", "Team.A", "x" * 63])
    def test_owners(self, owner):
        assert labels.owner_problem(owner) is None


class TestRulesEndAtTheEnd:
    """Issue 46, item 8: "$" also matches before a final newline; the rules must not."""

    @pytest.mark.parametrize("key", ["env\n", "example.com\n/env", "example.com/env\n"])
    def test_keys(self, key):
        assert labels.key_problem(key) is not None
        with pytest.raises(FleetError, match="invalid labels: labels key"):
            labels.validate({key: "x"})

    def test_values(self):
        with pytest.raises(FleetError, match=r"invalid labels: labels\['env'\] = 'prod\\n'"):
            labels.validate({"env": "prod\n"})

    @pytest.mark.parametrize("check", [
        lambda name: engines.get("karmada").validate_cluster_name(name),
        lambda name: engines.get("ocm").validate_cluster_name(name),
        cluster_set.validate_name,
        work._check_name,
    ], ids=["karmada cluster", "ocm cluster", "cluster set", "work"])
    def test_names(self, check):
        check("member1")
        with pytest.raises(FleetError, match=r"'member1\\n'"):
            check("member1\n")


class TestSelector:
    """Issue 46, item 8: label selectors are checked by the rules Kubernetes parses them with."""

    def test_good_selectors_with_values_as_text(self):
        assert labels.selector("s", {"env": "prod", "gpu": True, "n": 3}, [
            {"key": "example.com/tier", "operator": "In", "values": ["gold", "silver"]},
            {"key": "canary", "operator": "Exists", "values": None}]) == (
            {"env": "prod", "gpu": "true", "n": "3"},
            [{"key": "example.com/tier", "operator": "In", "values": ["gold", "silver"]},
             {"key": "canary", "operator": "Exists", "values": None}])
        assert labels.selector("s") == (None, [])

    def test_every_bad_key_and_value_is_named(self):
        with pytest.raises(FleetError) as info:
            labels.selector("predicates[0].label_selector", {"Bad Key!": "v", "env": "a,b", "ok": None},
                            [{"key": "env\n", "operator": "Exists"}, {"key": "tier", "operator": "In", "values": ["a", "b c"]}])
        assert info.value.msg == (
            "invalid selector, Kubernetes cannot parse it: predicates[0].label_selector.match_labels key 'Bad Key!': its name "
            "must be %s; predicates[0].label_selector.match_labels['env'] = 'a,b': a label value must be empty or %s; "
            "predicates[0].label_selector.match_labels['ok'] = None: must be a string, got NoneType; "
            "predicates[0].label_selector.match_expressions[0] key 'env\\n': its name must be %s; "
            "predicates[0].label_selector.match_expressions[1] (key tier) values[1] = 'b c': a label value must be empty or %s"
            % ((labels.NAME_RULE,) * 4))


def fleet(fake_cluster, kind=CLUSTER, names=("m1", "m2")):
    for name in names:
        obj = member(name, labels_={"team": "a"})
        del obj["metadata"]["resourceVersion"]
        fake_cluster.add(kind, obj)
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


class TestObserved:
    def test_karmada_cordon(self):
        cordon = {"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-11-24T12:00:00Z"}
        obj = member(labels_={"env": "prod"}, annotations={MANAGED: "env", "owner": "me"}, taints=[cordon])
        assert labels.observed("karmada", obj) == {"annotations": {"owner": "me"}, "taints": [cordon], "cordoned": True,
                                                   "cluster_set": None}

    def test_ocm_cluster_set_and_cordon(self):
        obj = member(labels_={"cluster.open-cluster-management.io/clusterset": "blue"},
                     taints=[{"key": "multicluster.fleet/cordoned", "effect": "PreferNoSelect"}])
        assert labels.observed("ocm", obj)["cluster_set"] == "blue"
        assert labels.observed("ocm", obj)["cordoned"] is False  # the cordon is NoSelect
        obj["spec"]["taints"][0]["effect"] = "NoSelect"
        assert labels.cordoned("ocm", obj) is True
