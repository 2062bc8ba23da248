"""cluster_set against the lab: a real hub API server with the OCM CRDs, the simulated placement controller.

The fleet (ocm_fleet.py): accepted ManagedClusters cls-1, cls-2 (environment=dev) and cls-3 (environment=prod) in the
exclusive cluster set cls-fleet, and namespace cls-apps. The tests create sets cls-prod (exclusive) and cls-dev
(label selector) and remove them.
"""

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.placement import decided_clusters, decisions
from ocm_fleet import OcmFleet, fails, ok

PROD, DEV = "cls-prod", "cls-dev"


@pytest.fixture(scope="module")
def fleet(lab):
    fleet = OcmFleet(lab, "cls").up()
    yield fleet
    for name in (PROD, DEV):
        ok(fleet.run("cluster_set", engine="ocm", name=name, state="absent", force=True))
    fleet.down()


def hub_state(fleet):
    """What cluster_set writes, as it is on the hub: the sets, the bindings and the ManagedClusters' labels."""
    return [[(o["metadata"].get("namespace"), o["metadata"]["name"], o["metadata"]["uid"], o.get("spec"),
              o["metadata"].get("labels")) for o in resources.list_objects(fleet.hub, kind)]
            for kind in (ocm.MANAGED_CLUSTER_SET, ocm.MANAGED_CLUSTER_SET_BINDING, ocm.MANAGED_CLUSTER)]


def cluster_set(fleet, name, check_mode=False, diff=False, **args):
    return fleet.run("cluster_set", check_mode=check_mode, diff=diff, engine="ocm", name=name, **args)


def set_of(fleet, cluster):
    return resources.get(fleet.hub, ocm.MANAGED_CLUSTER, cluster)["metadata"]["labels"].get(ocm.CLUSTER_SET_LABEL)


def wait_decided(fleet, name, cluster_sets, wanted):
    """Apply Placement ``name`` (of ``cluster_sets``) and wait until it decides the clusters ``wanted``: after a
    cluster's labels change, the placement controller decides again on its next pass, which may come after the
    module has read the decisions."""
    ok(fleet.run("placement", name=name, namespace=fleet.namespace, cluster_sets=cluster_sets, wait=True, wait_timeout=60))

    def check():
        clusters = decided_clusters(decisions(fleet.hub, name, fleet.namespace))
        return clusters == wanted, clusters
    resources.wait_until(check, 30, "Placement %s to decide %s" % (name, wanted), interval=0.3)


def test_exclusive_set_membership_move_and_binding(fleet):
    first_cluster, second_cluster = fleet.dev
    args = dict(clusters=[first_cluster], move=True, bind_namespaces=[fleet.namespace])
    before = hub_state(fleet)
    planned = ok(cluster_set(fleet, PROD, check_mode=True, diff=True, **args))
    assert (planned["changed"], planned["action"], planned["clusters"], planned["bound_namespaces"]) == (
        True, "created", [first_cluster], [fleet.namespace])
    assert planned["objects"] == ["ManagedClusterSet/%s: created" % PROD, "ManagedCluster/%s: updated" % first_cluster,
                                  "ManagedClusterSetBinding/%s/%s: created" % (fleet.namespace, PROD)]
    assert planned["diff"][1]["before"]["metadata"]["labels"][ocm.CLUSTER_SET_LABEL] == fleet.cluster_set
    assert planned["diff"][1]["after"]["metadata"]["labels"][ocm.CLUSTER_SET_LABEL] == PROD
    assert hub_state(fleet) == before

    # A cluster in another exclusive set moves only with move=true; nothing is written before that check.
    refused = fails(cluster_set(fleet, PROD, clusters=[first_cluster]),
                    "cluster set %s: a cluster is in at most one exclusive cluster set, and these are in another: %s (in set %s); "
                    "set move=true" % (PROD, first_cluster, fleet.cluster_set))
    assert refused.get("changed") is not True and resources.get(fleet.hub, ocm.MANAGED_CLUSTER_SET, PROD) is None

    created = ok(cluster_set(fleet, PROD, **args))
    assert (created["changed"], created["action"], created["selector_type"], created["clusters"]) == (
        True, "created", "ExclusiveClusterSetLabel", [first_cluster])
    assert set_of(fleet, first_cluster) == PROD
    assert resources.get(fleet.hub, ocm.MANAGED_CLUSTER_SET_BINDING, PROD, fleet.namespace)["spec"] == {"clusterSet": PROD}
    again = ok(cluster_set(fleet, PROD, **args))
    assert (again["changed"], again["action"], again["clusters"]) == (False, "unchanged", [first_cluster])

    # A Placement of the bound namespace chooses from the set.
    wait_decided(fleet, "from-prod", [PROD], [first_cluster])

    grown = ok(cluster_set(fleet, PROD, clusters=[second_cluster], move=True))
    assert grown["clusters"] == fleet.dev and grown["objects"][1:] == ["ManagedCluster/%s: updated" % second_cluster]
    wait_decided(fleet, "from-prod", [PROD], fleet.dev)

    shrunk = ok(cluster_set(fleet, PROD, remove_clusters=[second_cluster], unbind_namespaces=[fleet.namespace]))
    assert (shrunk["clusters"], shrunk["bound_namespaces"]) == ([first_cluster], [])
    assert set_of(fleet, second_cluster) is None
    assert resources.get(fleet.hub, ocm.MANAGED_CLUSTER_SET_BINDING, PROD, fleet.namespace) is None
    assert ok(cluster_set(fleet, PROD, remove_clusters=[second_cluster], unbind_namespaces=[fleet.namespace]))["changed"] is False
    # back where the fleet had it, for the other tests
    ok(cluster_set(fleet, fleet.cluster_set, clusters=fleet.dev, move=True))
    ok(fleet.run("placement", name="from-prod", namespace=fleet.namespace, state="absent"))


def test_label_selector_set(fleet):
    selector = {"match_labels": {"environment": "dev"}}
    dev = ok(cluster_set(fleet, DEV, selector_type="LabelSelector", label_selector=selector, bind_namespaces=[fleet.namespace]))
    assert (dev["action"], dev["selector_type"], dev["clusters"]) == ("created", "LabelSelector", fleet.dev)
    assert resources.get(fleet.hub, ocm.MANAGED_CLUSTER_SET, DEV)["spec"]["clusterSelector"] == {
        "selectorType": "LabelSelector", "labelSelector": {"matchLabels": {"environment": "dev"}}}
    wait_decided(fleet, "from-dev", [DEV], fleet.dev)
    assert ok(cluster_set(fleet, DEV, selector_type="LabelSelector", label_selector=selector))["changed"] is False
    every = ok(cluster_set(fleet, DEV, label_selector={}, diff=True))
    assert (every["action"], every["clusters"]) == ("updated", fleet.clusters)
    assert every["diff"][0]["after"]["spec"]["clusterSelector"]["labelSelector"] == {}
    assert ok(cluster_set(fleet, DEV, label_selector={}))["changed"] is False
    fails(cluster_set(fleet, DEV, clusters=fleet.prod), "cluster set %s selects its clusters with a label selector" % DEV)


def test_delete_is_refused_while_bound_then_forced(fleet):
    ok(cluster_set(fleet, "cls-doomed", bind_namespaces=[fleet.namespace]))
    ok(fleet.run("placement", name="doomed", namespace=fleet.namespace, cluster_sets=["cls-doomed"]))
    refused = fails(cluster_set(fleet, "cls-doomed", state="absent"),
                    "cluster set cls-doomed is still bound to namespace(s) %s and used by Placement(s) %s/doomed"
                    % (fleet.namespace, fleet.namespace), "set force=true")
    assert refused.get("changed") is not True
    assert resources.get(fleet.hub, ocm.MANAGED_CLUSTER_SET, "cls-doomed") is not None
    planned = ok(cluster_set(fleet, "cls-doomed", state="absent", force=True, check_mode=True))
    assert planned["changed"] is True and resources.get(fleet.hub, ocm.MANAGED_CLUSTER_SET, "cls-doomed") is not None
    assert resources.get(fleet.hub, ocm.MANAGED_CLUSTER_SET_BINDING, "cls-doomed", fleet.namespace) is not None
    forced = ok(cluster_set(fleet, "cls-doomed", state="absent", force=True))
    assert forced["objects"] == ["ManagedClusterSetBinding/%s/cls-doomed: deleted" % fleet.namespace,
                                 "ManagedClusterSet/cls-doomed: deleted"]
    assert resources.get(fleet.hub, ocm.MANAGED_CLUSTER_SET, "cls-doomed") is None
    assert ok(cluster_set(fleet, "cls-doomed", state="absent"))["changed"] is False
    ok(fleet.run("placement", name="doomed", namespace=fleet.namespace, state="absent"))


def test_the_hubs_sets_stay_and_karmada_has_none(fleet):
    fails(cluster_set(fleet, "global", state="absent", force=True), "cluster set global is the hub's own")
    fails(fleet.run("cluster_set", engine="karmada", name=PROD),
          "cluster sets are an OCM concept (ManagedClusterSet); a Karmada hub has none", "engine is karmada")


@pytest.mark.parametrize("args, message", [
    (dict(name="Prod"), "invalid cluster set name 'Prod'"),
    (dict(name=PROD, selector_type="Exclusive"), "value of selector_type must be one of: ExclusiveClusterSetLabel, LabelSelector, got: Exclusive"),
    (dict(name=PROD, clusters=["cls-1", "cls-nowhere"], move=True), "cluster(s) cls-nowhere not registered on the hub"),
    (dict(name=PROD, bind_namespaces=["cls-nowhere"]), "namespace cls-nowhere does not exist"),
    (dict(name=PROD, selector_type="LabelSelector"), "selector_type LabelSelector needs label_selector"),
])
def test_bad_input_fails_before_writing_naming_the_value(fleet, args, message):
    before = hub_state(fleet)
    fails(fleet.run("cluster_set", engine="ocm", **args), message)
    assert hub_state(fleet) == before
