"""cluster_label against the lab hub: a real API server with the Karmada and OCM CRDs.

Setup, playing the registration side: Karmada Clusters ``lbk-1``/``lbk-2`` and OCM ManagedClusters ``lbo-1``/``lbo-2``,
each already labelled ``team=blue`` by someone else (and, for OCM, put in cluster set ``default`` as the hub does).
site.yml's use of the module, on members registered by push and pull, is tested in test_site.py.
"""

import time

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER
from ocm_fleet import OcmFleet
from runner import run_module

SET_LABEL = "cluster.open-cluster-management.io/clusterset"
ENGINES = {
    "karmada": (CLUSTER, ["lbk-1", "lbk-2"], {"team": "blue"}, {"spec": {"syncMode": "Push"}}),
    "ocm": (MANAGED_CLUSTER, ["lbo-1", "lbo-2"], {"team": "blue", SET_LABEL: "default"}, {"spec": {"hubAcceptsClient": True}}),
}
MANAGED = "multicluster.fleet/managed-labels"


@pytest.fixture(scope="module")
def hub(lab):
    auth = {"kubeconfig": lab.clusters["hub"]["kubeconfig"], "context": "hub"}
    connection = client.get_cluster(auth, "hub")
    for kind, names, labels, spec in ENGINES.values():
        for name in names:
            resources.ensure(connection, kind, dict(spec, metadata={"name": name, "labels": labels}))
    yield auth, connection
    for kind, names, _labels, _spec in ENGINES.values():
        for name in names:
            resources.delete(connection, kind, name, wait=resources.Wait())


def metadata(hub, engine, name):
    kind = ENGINES[engine][0]
    return resources.get(hub[1], kind, name)["metadata"]


def versions(hub):
    return dict((name, metadata(hub, engine, name)["resourceVersion"]) for engine in ENGINES for name in ENGINES[engine][1])


def label(hub, engine, check_mode=False, diff=False, **args):
    """cluster_label on the engine's clusters, or on those ``clusters`` names (None: none, for per_cluster)."""
    args.setdefault("clusters", ENGINES[engine][1])
    if args["clusters"] is None:
        del args["clusters"]
    return run_module("cluster_label", dict(hub[0], engine=engine, **args), check_mode=check_mode, diff=diff)


def ok(result):
    assert result["rc"] == 0, result.get("msg")
    return result


def warnings(result):
    """The warning messages of a module result (ansible-core 2.19 and later return each as a WarningSummary)."""
    return [w["event"]["msg"] if isinstance(w, dict) else w for w in result.get("warnings") or []]


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_labels_many_clusters_changes_and_removes_only_its_own(hub, engine):
    names, others = ENGINES[engine][1], ENGINES[engine][2]
    wanted = dict(labels={"env": "prod", "tier": "web"}, annotations={"example.com/owner": "platform"}, purge=True)

    planned = ok(label(hub, engine, check_mode=True, diff=True, **wanted))
    assert planned["changed"] is True and planned["clusters"][names[0]]["labels"] == dict(others, env="prod", tier="web")
    assert [d["before_header"] for d in planned["diff"]] == ["%s/%s" % (ENGINES[engine][0].kind, n) for n in names]
    assert planned["diff"][0]["before"]["labels"] == others
    assert planned["diff"][0]["after"]["annotations"] == {
        "example.com/owner": "platform", MANAGED: "env=cluster_label,tier=cluster_label",
        "multicluster.fleet/managed-annotations": "example.com/owner=cluster_label"}
    assert all(metadata(hub, engine, n).get("labels") == others for n in names)

    done = ok(label(hub, engine, **wanted))
    assert done["changed"] is True and "diff" not in done  # diff only in diff mode
    for name in names:
        assert metadata(hub, engine, name)["labels"] == dict(others, env="prod", tier="web")
        assert done["clusters"][name] == {"action": "updated", "labels": dict(others, env="prod", tier="web"),
                                          "annotations": {"example.com/owner": "platform"},
                                          "managed_labels": ["env", "tier"], "managed_annotations": ["example.com/owner"],
                                          "owners": {"labels": {"env": ["cluster_label"], "tier": ["cluster_label"]},
                                                     "annotations": {"example.com/owner": ["cluster_label"]}},
                                          "taken_over": []}
    before = versions(hub)
    again = ok(label(hub, engine, **wanted))
    assert again["changed"] is False and {c["action"] for c in again["clusters"].values()} == {"unchanged"}
    assert versions(hub) == before

    # env changes, tier and the annotation are no longer listed: removed; team (and OCM's cluster set) stay.
    changed = ok(label(hub, engine, diff=True, labels={"env": "stage"}, annotations={}, purge=True))
    assert changed["changed"] is True
    assert changed["diff"][0]["after"]["labels"] == dict(others, env="stage")
    for name in names:
        meta = metadata(hub, engine, name)
        assert meta["labels"] == dict(others, env="stage")
        assert meta["annotations"] == {MANAGED: "env=cluster_label"}
    cleared = ok(label(hub, engine, labels={}, annotations={}, purge=True))
    assert cleared["changed"] is True and all(metadata(hub, engine, n)["labels"] == others for n in names)
    assert all(not metadata(hub, engine, n).get("annotations") for n in names)


def test_null_removes_a_label_whoever_set_it_and_unregistered_clusters_can_be_skipped(hub):
    done = ok(label(hub, "karmada", clusters=["lbk-1", "lbk-9"], labels={"team": None}, unregistered="skip"))
    assert done["clusters"]["lbk-9"]["action"] == "unregistered" and done["clusters"]["lbk-1"]["labels"] == {}
    ok(label(hub, "karmada", clusters=["lbk-1"], labels={"team": "blue"}))
    assert metadata(hub, "karmada", "lbk-1")["labels"] == {"team": "blue"}
    assert metadata(hub, "karmada", "lbk-1")["annotations"] == {MANAGED: "team=cluster_label"}  # set by the collection now
    ok(label(hub, "karmada", clusters=["lbk-1"], labels={}, purge=True))
    assert not metadata(hub, "karmada", "lbk-1").get("labels")


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_per_cluster_values_check_mode_idempotence_and_a_refused_cluster(hub, engine):
    """per_cluster (what site.yml's hub step uses): each cluster its own labels in one task; check mode writes nothing, a
    re-run changes nothing; a cluster whose value is refused, or that is not registered, fails alone."""
    first, second = ENGINES[engine][1]
    others = metadata(hub, engine, first).get("labels") or {}, metadata(hub, engine, second).get("labels") or {}
    per_cluster = [{"name": first, "labels": {"region": "eu"}, "annotations": {"example.com/owner": "a"}},
                   {"name": second, "labels": {"region": "us"}}]
    wanted = dict(clusters=None, per_cluster=per_cluster, owner="inventory", purge=True)
    before = versions(hub)
    planned = ok(label(hub, engine, check_mode=True, **wanted))
    assert planned["changed"] is True and planned["clusters"][second]["labels"] == dict(others[1], region="us")
    assert versions(hub) == before
    done = ok(label(hub, engine, **wanted))
    assert done["changed"] is True
    assert (metadata(hub, engine, first)["labels"], metadata(hub, engine, second)["labels"]) == (
        dict(others[0], region="eu"), dict(others[1], region="us"))
    assert metadata(hub, engine, first)["annotations"]["example.com/owner"] == "a"
    before = versions(hub)
    again = ok(label(hub, engine, **wanted))
    assert again["changed"] is False and versions(hub) == before

    refused = label(hub, engine, clusters=None, owner="inventory", purge=True, per_cluster=[
        {"name": first, "labels": {"region": "eu west"}}, {"name": second, "labels": {}}, {"name": "lb-gone", "labels": {}}])
    assert refused["rc"] != 0 and refused["clusters_failed"] == sorted([first, "lb-gone"]), refused
    assert "invalid labels: labels['region'] = 'eu west'" in refused["cluster_errors"][first]
    assert refused["cluster_errors"]["lb-gone"].endswith("cluster 'lb-gone' is not registered on the hub (no %s named lb-gone)"
                                                         % ENGINES[engine][0].kind)
    assert metadata(hub, engine, first)["labels"] == dict(others[0], region="eu")  # not written
    assert (metadata(hub, engine, second).get("labels") or {}) == others[1]  # written: the inventory no longer lists region
    ok(label(hub, engine, clusters=[first], owner="inventory", labels={}, annotations={}, purge=True))
    assert (metadata(hub, engine, first).get("labels") or {}) == others[0]


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_each_owner_purges_only_its_own_labels(hub, engine):
    """Issue 46, item 3: site.yml (owner inventory) and a labelling job (cluster_label's default owner) each purge only
    the keys they set; a value both set is shared; taking a key over from another owner warns; keys an earlier version
    recorded without owner are purged by nobody until an owner takes them."""
    name = ENGINES[engine][1][0]
    others = dict(metadata(hub, engine, name).get("labels") or {})  # what earlier tests of this file left there
    site = dict(clusters=[name], purge=True, owner="inventory")
    try:
        ok(label(hub, engine, labels={"env": "prod"}, **site))
        job = ok(label(hub, engine, clusters=[name], labels={"rollout": "wave-1", "env": "prod"}))  # the docs' batch recipe
        assert job["clusters"][name]["owners"]["labels"] == {"env": ["cluster_label", "inventory"], "rollout": ["cluster_label"]}
        assert warnings(job) == []
        again = ok(label(hub, engine, labels={"env": "prod"}, **site))
        assert again["changed"] is False and metadata(hub, engine, name)["labels"] == dict(others, env="prod", rollout="wave-1")
        # the inventory drops env: the job still sets it, so it stays (the job's alone now)
        dropped = ok(label(hub, engine, labels={}, **site))
        assert dropped["changed"] is True and metadata(hub, engine, name)["labels"] == dict(others, env="prod", rollout="wave-1")
        assert metadata(hub, engine, name)["annotations"][MANAGED] == "env=cluster_label,rollout=cluster_label"
        # the inventory sets rollout to another value: it takes it over from the job, and says so (check mode too)
        previewed = ok(label(hub, engine, check_mode=True, labels={"rollout": "wave-2"}, **site))
        message = ("cluster '%s': label rollout was set to 'wave-1' by owner cluster_label; owner inventory %s it over (its "
                   "purge may remove it)")
        assert warnings(previewed) == [message % (name, "would take")]
        taken = ok(label(hub, engine, labels={"rollout": "wave-2"}, **site))
        assert warnings(taken) == [message % (name, "took")]
        assert taken["clusters"][name]["taken_over"] == [{"kind": "label", "key": "rollout", "from": ["cluster_label"]}]
        ok(label(hub, engine, clusters=[name], labels={"env": None, "rollout": None}))

        # an object an earlier version labelled: bare keys; purge leaves them (with a warning) until an owner lists them
        hub[1].request("PATCH", ENGINES[engine][0].path(name=name), content_type=resources.MERGE_PATCH, body={"metadata": {
            "labels": {"env": "prod", "tier": "web"}, "annotations": {MANAGED: "env,tier"}}})
        kept = ok(label(hub, engine, labels={"env": "prod"}, **site))
        assert metadata(hub, engine, name)["labels"] == dict(others, env="prod", tier="web")
        assert metadata(hub, engine, name)["annotations"][MANAGED] == "env=inventory,tier"
        assert warnings(kept) == ["cluster '%s': label tier recorded by an earlier version of this collection without an "
                                  "owner; purge keeps them until a task lists them (then they are its owner's) or removes "
                                  "them (value null)" % name]
        ok(label(hub, engine, clusters=[name], labels={"tier": "web"}))  # now the job's
        assert warnings(ok(label(hub, engine, labels={"env": "prod"}, **site))) == []
        ok(label(hub, engine, clusters=[name], labels={}, purge=True))
        ok(label(hub, engine, labels={}, **site))
        assert (metadata(hub, engine, name).get("labels") or {}) == others and not metadata(hub, engine, name).get("annotations")
    finally:
        ok(label(hub, engine, clusters=[name], labels={"env": None, "rollout": None, "tier": None}))


@pytest.mark.parametrize("args, fragments", [
    (dict(labels={"env": "prod west"}), ["invalid labels: labels['env'] = 'prod west': a label value must be empty or at most "
                                         "63 letters, digits, '-', '_' or '.'"]),
    (dict(labels={"env": "x" * 64}), ["labels['env'] = '%s'" % ("x" * 64)]),
    (dict(labels={"Example.com/env": "prod"}), ["labels key 'Example.com/env': its prefix (before '/') must be a DNS-1123 subdomain"]),
    (dict(annotations={"owner/": "me"}), ["annotations key 'owner/': its name (after '/') must be"]),
    (dict(annotations={MANAGED: "env"}), ["annotations key '%s': this collection records the keys it manages there" % MANAGED]),
    # "$" matches before a final newline: the module's own check must refuse these, not the API server (issue 46)
    (dict(labels={"env\n": "prod"}), ["invalid labels: labels key 'env\\n': its name must be"]),
    (dict(labels={"env": "prod\n"}), ["invalid labels: labels['env'] = 'prod\\n': a label value must be"]),
    (dict(labels={"env": "prod"}, owner="a,b"), ["invalid owner 'a,b' must be at most 63 letters"]),
    (dict(labels={"env": {"nested": 1}}), ["labels['env'] = {'nested': 1}: must be a string, got dict"]),
    (dict(clusters=["lbo-1", "lbo-9", "lbo-8"], labels={"env": "prod"}),
     ["cannot label every cluster, nothing was written: cluster 'lbo-9' is not registered on the hub (no ManagedCluster "
      "named lbo-9); cluster 'lbo-8' is not registered"]),
    (dict(clusters=["Lbo_1"], labels={"env": "prod"}), ["invalid cluster name 'Lbo_1'"]),
    (dict(unregistered="ignore"), ["value of unregistered must be one of: fail, skip, got: ignore"]),
])
def test_bad_input_fails_before_writing_naming_the_value(hub, args, fragments):
    before = versions(hub)
    result = label(hub, "ocm", **args)
    assert result["rc"] == 1 and result["failed"] is True and not result.get("changed"), result
    assert "exception" not in result
    for fragment in fragments:
        assert fragment in result["msg"], result["msg"]
    assert versions(hub) == before


def test_labels_select_the_clusters_of_an_ocm_placement(lab):
    """docs/labels.md's OCM recipe: labels set with cluster_label select clusters through a Placement predicate (the
    simulated placement controller), and removing them takes the clusters out of its decisions."""
    fleet = OcmFleet(lab, "lbp").up()
    try:
        prod = fleet.clusters[:2]
        ok(fleet.run("cluster_label", engine="ocm", clusters=prod, labels={"tier": "gold"}))
        args = dict(name="gold", namespace=fleet.namespace, cluster_sets=[fleet.cluster_set], bind_cluster_sets=True,
                    predicates=[{"label_selector": {"match_labels": {"tier": "gold"}}}], wait=True, wait_timeout=60)
        assert ok(fleet.run("placement", **args))["clusters"] == prod
        ok(fleet.run("cluster_label", engine="ocm", clusters=prod[:1], labels={}, purge=True))
        for _attempt in range(30):  # the controller decides again on its next pass
            decided = ok(fleet.run("placement", **args))["clusters"]
            if decided == prod[1:]:
                break
            time.sleep(1)
        assert decided == prod[1:]
    finally:
        fleet.down()
