"""cluster_label against the lab hub: a real API server with the Karmada and OCM CRDs.

Setup, playing the registration side: Karmada Clusters ``lbk-1``/``lbk-2`` and OCM ManagedClusters ``lbo-1``/``lbo-2``,
each already labelled ``team=blue`` by someone else (and, for OCM, put in cluster set ``default`` as the hub does).
site.yml's use of the module, on members registered by push and pull, is tested in test_site.py.
"""

import time

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import client, resources
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
            resources.delete(connection, kind, name, wait=True)


def metadata(hub, engine, name):
    kind = ENGINES[engine][0]
    return resources.get(hub[1], kind, name)["metadata"]


def versions(hub):
    return dict((name, metadata(hub, engine, name)["resourceVersion"]) for engine in ENGINES for name in ENGINES[engine][1])


def label(hub, engine, check_mode=False, diff=False, **args):
    args.setdefault("clusters", ENGINES[engine][1])
    return run_module("cluster_label", dict(hub[0], engine=engine, **args), check_mode=check_mode, diff=diff)


def ok(result):
    assert result["rc"] == 0, result.get("msg")
    return result


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_labels_many_clusters_changes_and_removes_only_its_own(hub, engine):
    names, others = ENGINES[engine][1], ENGINES[engine][2]
    wanted = dict(labels={"env": "prod", "tier": "web"}, annotations={"example.com/owner": "platform"}, purge=True)

    planned = ok(label(hub, engine, check_mode=True, diff=True, **wanted))
    assert planned["changed"] is True and planned["clusters"][names[0]]["labels"] == dict(others, env="prod", tier="web")
    assert [d["before_header"] for d in planned["diff"]] == ["%s/%s" % (ENGINES[engine][0].kind, n) for n in names]
    assert planned["diff"][0]["before"]["labels"] == others
    assert planned["diff"][0]["after"]["annotations"] == {"example.com/owner": "platform", MANAGED: "env,tier",
                                                          "multicluster.fleet/managed-annotations": "example.com/owner"}
    assert all(metadata(hub, engine, n).get("labels") == others for n in names)

    done = ok(label(hub, engine, **wanted))
    assert done["changed"] is True and "diff" not in done  # diff only in diff mode
    for name in names:
        assert metadata(hub, engine, name)["labels"] == dict(others, env="prod", tier="web")
        assert done["clusters"][name] == {"action": "updated", "labels": dict(others, env="prod", tier="web"),
                                          "annotations": {"example.com/owner": "platform"},
                                          "managed_labels": ["env", "tier"], "managed_annotations": ["example.com/owner"]}
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
        assert meta["annotations"] == {MANAGED: "env"}
    cleared = ok(label(hub, engine, labels={}, annotations={}, purge=True))
    assert cleared["changed"] is True and all(metadata(hub, engine, n)["labels"] == others for n in names)
    assert all(not metadata(hub, engine, n).get("annotations") for n in names)


def test_null_removes_a_label_whoever_set_it_and_unregistered_clusters_can_be_skipped(hub):
    done = ok(label(hub, "karmada", clusters=["lbk-1", "lbk-9"], labels={"team": None}, unregistered="skip"))
    assert done["clusters"]["lbk-9"]["action"] == "unregistered" and done["clusters"]["lbk-1"]["labels"] == {}
    ok(label(hub, "karmada", clusters=["lbk-1"], labels={"team": "blue"}))
    assert metadata(hub, "karmada", "lbk-1")["labels"] == {"team": "blue"}
    assert metadata(hub, "karmada", "lbk-1")["annotations"] == {MANAGED: "team"}  # set by the collection now
    ok(label(hub, "karmada", clusters=["lbk-1"], labels={}, purge=True))
    assert not metadata(hub, "karmada", "lbk-1").get("labels")


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
