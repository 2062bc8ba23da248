"""An OCM fleet on the lab hub for the placement and add-on tests.

Plays the registration side as the hub and the klusterlets would leave it: three accepted ManagedClusters
``<prefix>-1`` and ``<prefix>-2`` (label ``environment=dev``) and ``<prefix>-3`` (``environment=prod``), with the
conditions the hub registration controller and the registration agent write, their hub namespaces, the cluster
set ``<prefix>-fleet`` holding them (exclusive clusterset label) and a namespace ``<prefix>-apps`` for placements.
The simulated placement controller and add-on manager (tests/lab/sim_addon.py) run while the fleet is up.
"""

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from runner import run_module
from sim_addon import AddOnManager, PlacementController

STAMP = "2026-11-22T03:25:40Z"
READY = [("HubAcceptedManagedCluster", "HubClusterAdminAccepted", "Accepted by hub cluster admin"),
         ("ManagedClusterJoined", "ManagedClusterJoined", "Managed cluster joined"),
         ("ManagedClusterConditionAvailable", "ManagedClusterAvailable", "Managed cluster is available")]
CLUSTER_SET_LABEL = "cluster.open-cluster-management.io/clusterset"


class OcmFleet:
    def __init__(self, lab, prefix):
        self.lab = lab
        self.auth = {"kubeconfig": lab.clusters[lab.hub]["kubeconfig"], "context": lab.hub}
        self.hub = client.get_cluster(self.auth, "hub")
        self.clusters = ["%s-%d" % (prefix, n) for n in (1, 2, 3)]
        self.dev, self.prod = self.clusters[:2], self.clusters[2:]
        self.cluster_set = prefix + "-fleet"
        self.namespace = prefix + "-apps"
        self.addons = set()  # ClusterManagementAddOns the tests create, removed at the end
        self.placement_controller = self.addon_manager = None

    def run(self, module, check_mode=False, diff=False, **args):
        if args.get("wait"):
            args.setdefault("wait_sleep", 1)
        return run_module(module, dict(self.auth, **args), check_mode=check_mode, diff=diff)

    def start_addon_manager(self):
        self.addon_manager = AddOnManager(self.lab.api(self.lab.hub), interval=0.3).start()

    def stop_addon_manager(self):
        self.addon_manager.stop()

    def up(self):
        for namespace in self.clusters + [self.namespace]:
            left = resources.get(self.hub, resources.NAMESPACE, namespace)
            if left and left["metadata"].get("deletionTimestamp"):  # still terminating after a previous run
                resources.wait_until_gone(self.hub, resources.NAMESPACE, namespace)
        resources.ensure(self.hub, ocm.MANAGED_CLUSTER_SET, {"metadata": {"name": self.cluster_set}, "spec": {}})
        for name in self.clusters:
            labels = {CLUSTER_SET_LABEL: self.cluster_set, "environment": "dev" if name in self.dev else "prod"}
            resources.ensure(self.hub, ocm.MANAGED_CLUSTER, {"metadata": {"name": name, "labels": labels},
                                                             "spec": {"hubAcceptsClient": True}})
            self.hub.request("PATCH", ocm.MANAGED_CLUSTER.path(name=name, subresource="status"), content_type=resources.MERGE_PATCH,
                             body={"status": {"conditions": [{"type": t, "status": "True", "reason": r, "message": m,
                                                              "lastTransitionTime": STAMP} for t, r, m in READY]}})
            resources.ensure(self.hub, resources.NAMESPACE, {"metadata": {"name": name}})
        resources.ensure(self.hub, resources.NAMESPACE, {"metadata": {"name": self.namespace}})
        self.placement_controller = PlacementController(self.lab.api(self.lab.hub), interval=0.3).start()
        self.start_addon_manager()
        return self

    def down(self):
        try:
            for name in self.addons:
                resources.delete(self.hub, ocm.CLUSTER_MANAGEMENT_ADDON, name)
            for name in self.clusters:  # the garbage collector removes owned add-ons; these are the others
                for mca in resources.list_objects(self.hub, ocm.MANAGED_CLUSTER_ADDON, name):
                    resources.delete(self.hub, ocm.MANAGED_CLUSTER_ADDON, mca["metadata"]["name"], name)
            errors = [s.error for s in (self.placement_controller, self.addon_manager) if s.error]
            assert not errors, errors
        finally:
            self.placement_controller.stop()
            self.addon_manager.stop()
            for namespace in self.clusters + [self.namespace]:
                resources.delete(self.hub, resources.NAMESPACE, namespace)
            for name in self.clusters:
                resources.delete(self.hub, ocm.MANAGED_CLUSTER, name)
            resources.delete(self.hub, ocm.MANAGED_CLUSTER_SET, self.cluster_set)
            for namespace in self.clusters + [self.namespace]:  # gone before the next test takes its snapshot
                resources.wait_until_gone(self.hub, resources.NAMESPACE, namespace)

    # -- reading the hub ------------------------------------------------------------------------------

    def addon(self, cluster, name):
        return resources.get(self.hub, ocm.MANAGED_CLUSTER_ADDON, name, cluster)

    def addon_clusters(self, name):
        """The clusters holding a ManagedClusterAddOn ``name`` (of this fleet), sorted."""
        return sorted(a["metadata"]["namespace"] for a in resources.list_objects(
            self.hub, ocm.MANAGED_CLUSTER_ADDON, field_selector="metadata.name=%s" % name) if a["metadata"]["namespace"] in self.clusters)


def ok(result):
    assert result["rc"] == 0, result.get("msg")
    assert "exception" not in result
    return result


def fails(result, *fragments):
    assert result["rc"] == 1 and result["failed"] is True, result
    for fragment in fragments:
        assert fragment in result["msg"], result["msg"]
    return result
