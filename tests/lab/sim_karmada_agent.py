"""Simulation of Karmada's pull-mode agent (karmada-agent) for the lab, which cannot run it (docs/architecture.md 4.4 and 5.2).

``SimulatedKarmadaAgent`` starts as the real agent does from the member's
``karmada-system/karmada-kubeconfig`` (key ``karmada-kubeconfig``, the certificate ``karmadactl
register`` obtained by CSR), with the flags of the Deployment ``karmada-system/karmada-agent`` when
there is one (``--cluster-name``, ``--cluster-api-endpoint``, ``--cluster-provider``,
``--cluster-region``, ``--cluster-zones``, ``--proxy-server-address``; arguments given to the class
win, the defaults are the member's lab name and URL): with that certificate, through the
kubeconfig's ``proxy-url`` when it has one, it lists the hub's Clusters to make sure no other
Cluster has the member's id (the UID of its ``kube-system`` namespace), then creates Cluster
``<cluster>`` - or updates it, as the real agent's CreateOrUpdate does - with ``syncMode: Pull``,
``apiEndpoint``, ``proxyURL`` (``--proxy-server-address``; empty removes it) and ``id`` (and provider,
region, zones when given), and keeps its status: ``kubernetesVersion`` and condition ``Ready``
(reason ``ClusterReady``), and renews its Lease ``karmada-cluster/<cluster>`` (owned by the Cluster; created when
missing, renewed every ``LEASE_RENEW_SECONDS``) as the real agent's cluster lease controller does. Like the real
agent it reads its kubeconfig only at start: a changed Deployment restarts it (a new pod), with the kubeconfig the
Secret holds then; a Secret changed under a running Deployment is not noticed (``hub_server`` is the hub URL it
started with). Like the Deployment's pod, it does nothing while there is no Deployment (a registration writes the Secret
before it applies the Deployment, which names the cluster), unless it was given ``cluster_name`` (an agent started by
hand): then a changed Secret restarts it.

Without the hub-side agent RBAC (ClusterRole/Binding ``system:karmada:<cluster>:agent``) it fails as
the real agent does at start, on listing Clusters (``cannot list resource "clusters"``), and retries
like a restarted pod; ``error`` holds the message. It does not report the member's credentials to the
hub (the real agent's ``--report-secrets``): no Secrets under ``karmada-cluster``, no ``secretRef``.
Like a pod whose image cannot be pulled, it does nothing while its Deployment's image comes from the
lab's unpullable registry (``sim_operators.UNPULLABLE_REGISTRY``).

Command line (until interrupted)::

    python tests/lab/sim_karmada_agent.py --lab-dir DIR --cluster member2 [--cluster-name NAME]
"""

import base64
import datetime
import json
import sys

import yaml

import lab
from sim_base import AgentClient, Simulation, get_or_none, micro_now, parse_time, run_cli, set_condition
from sim_operators import unpullable_images

AGENT_NAMESPACE = "karmada-system"
KUBECONFIG_SECRET = "karmada-kubeconfig"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
LEASE_NAMESPACE = "karmada-cluster"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
LEASE_RENEW_SECONDS = 10  # a quarter of the Lease's 40 s, as the real agent renews it


class SimulatedKarmadaAgent(Simulation):
    """karmada-agent of lab cluster ``member``, registering it as ``cluster_name`` (started by hand), else as its
    Deployment's ``--cluster-name`` (default: the member's name)."""

    name = "karmada-agent"

    def __init__(self, fleet, member, cluster_name=None, api_endpoint=None, provider=None, region=None, zones=(),
                 interval=1.0):
        super().__init__(interval)
        self.info = fleet.clusters[member]
        self.member = lab.ApiClient.for_cluster(self.info)  # stands in for the agent's in-cluster ServiceAccount
        self.given = {"cluster-name": cluster_name, "cluster-api-endpoint": api_endpoint, "cluster-provider": provider,
                      "cluster-region": region, "cluster-zones": ",".join(zones)}
        self.cluster_name = cluster_name or member
        self.started_from = None  # the Deployment version (or, without one, the Secret version) the agent (re)started with
        self.hub = None  # the hub client of the kubeconfig it read at its start
        self.hub_server = None  # the hub URL of that kubeconfig

    def runs_as(self, cluster_name):
        """Whether this agent runs (started, not paused or stopped) registered as ``cluster_name``: the execution
        controller of a Pull cluster is part of its agent (sim_work_agent.WorkAgent asks)."""
        return (self._thread is not None and self._thread.is_alive() and not self._paused and not self._stop.is_set()
                and self.started_from is not None and self.cluster_name == cluster_name)

    def _flags(self):
        """The agent's settings: the given ones, else its Deployment's flags, else the lab member's name and URL."""
        flags = {"cluster-name": self.info["name"], "cluster-api-endpoint": self.info["server"]}
        deployment = get_or_none(self.member, f"/apis/apps/v1/namespaces/{AGENT_NAMESPACE}/deployments/karmada-agent")
        template = ((deployment or {}).get("spec") or {}).get("template") or {}
        for container in (template.get("spec") or {}).get("containers") or []:
            for flag in (container.get("command") or []) + (container.get("args") or []):
                key, sep, value = flag.lstrip("-").partition("=")
                if flag.startswith("--") and sep and value:
                    flags[key] = value
        flags.update((k, v) for k, v in self.given.items() if v)
        return flags

    def sync(self):
        secret = get_or_none(self.member, f"/api/v1/namespaces/{AGENT_NAMESPACE}/secrets/{KUBECONFIG_SECRET}")
        kubeconfig = ((secret or {}).get("data") or {}).get(KUBECONFIG_SECRET)
        if not kubeconfig:
            self.status = f"waiting for Secret {AGENT_NAMESPACE}/{KUBECONFIG_SECRET}"
            return
        deployment = get_or_none(self.member, f"/apis/apps/v1/namespaces/{AGENT_NAMESPACE}/deployments/karmada-agent")
        if deployment is None and not self.given["cluster-name"]:
            self.started_from = None  # no pod runs: a Deployment applied later starts the agent afresh
            self.status = f"waiting for Deployment {AGENT_NAMESPACE}/karmada-agent"
            return
        if deployment and unpullable_images(deployment):
            self.status = "the karmada-agent image cannot be pulled (%s): the agent does not run" % unpullable_images(deployment)[0]
            return
        version = ((deployment["metadata"]["uid"], deployment["metadata"].get("generation")) if deployment
                   else (secret["metadata"]["uid"], secret["metadata"]["resourceVersion"]))
        if self.started_from != version:  # a new or changed Deployment restarts the agent: it reads its kubeconfig again
            text = base64.b64decode(kubeconfig)
            self.hub = AgentClient.from_kubeconfig(text, f"{self.workdir}/hub")
            self.hub_server = yaml.safe_load(text)["clusters"][0]["cluster"]["server"]
            self._register(self.hub, self._flags())
            self.started_from = version
        self._report_status(self.hub)

    def _register(self, hub, flags):
        self.cluster_name = flags["cluster-name"]
        spec = {"syncMode": "Pull", "apiEndpoint": flags["cluster-api-endpoint"], "proxyURL": flags.get("proxy-server-address")}
        spec.update((field, flags[flag]) for field, flag in (("provider", "cluster-provider"), ("region", "cluster-region"))
                    if flags.get(flag))
        if flags.get("cluster-zones"):
            spec["zones"] = flags["cluster-zones"].split(",")
        cluster_id = self.member.get("/api/v1/namespaces/kube-system")["metadata"]["uid"]
        try:
            clusters = hub.get(CLUSTERS)["items"]
        except lab.ApiError as e:
            self.status = "failed to start"
            message = json.loads(e.body).get("message") if e.body.startswith("{") else e.body
            raise lab.LabError(f"failed to check whether cluster id {cluster_id} is unique: {message}") from None
        for cluster in clusters:
            if cluster["spec"].get("id") == cluster_id and cluster["metadata"]["name"] != self.cluster_name:
                self.status = "failed to start"
                raise lab.LabError(f"the same cluster has been registered with name {cluster['metadata']['name']}")
        spec["id"] = cluster_id
        existing = next((c for c in clusters if c["metadata"]["name"] == self.cluster_name), None)
        if existing is None:
            hub.post(CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                "metadata": {"name": self.cluster_name},
                                "spec": {field: value for field, value in spec.items() if value}})
        elif any(existing["spec"].get(field) != value for field, value in spec.items()):
            hub.patch(f"{CLUSTERS}/{self.cluster_name}", {"spec": spec})  # a None value removes the field

    def _report_status(self, hub):
        cluster = get_or_none(hub, f"{CLUSTERS}/{self.cluster_name}")
        if cluster is None:  # deleted on the hub: the running agent does not create it again
            self.status = f"Cluster {self.cluster_name} is gone from the hub"
            return
        status = cluster.get("status") or {}
        conditions, changed = set_condition(status.get("conditions"), "Ready", "True", "ClusterReady",
                                            "cluster is healthy and ready to accept workloads")
        version = self.member.get("/version")["gitVersion"]
        if changed or status.get("kubernetesVersion") != version:
            cluster["status"] = dict(status, conditions=conditions, kubernetesVersion=version)
            hub.put(f"{CLUSTERS}/{self.cluster_name}/status", cluster)
        self._renew_lease(hub, cluster)
        self.status = f"registered as Cluster {self.cluster_name} (Pull)"

    def _renew_lease(self, hub, cluster):
        """The cluster's heartbeat, Lease ``karmada-cluster/<cluster>`` (Karmada's NamespaceClusterLease)."""
        path = f"{LEASES}/{self.cluster_name}"
        lease = get_or_none(hub, path)
        now = datetime.datetime.now(datetime.timezone.utc)
        if lease is None:
            owner = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "name": self.cluster_name,
                     "uid": cluster["metadata"]["uid"]}
            hub.post(LEASES, {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.cluster_name, "namespace": LEASE_NAMESPACE, "ownerReferences": [owner]},
                "spec": {"holderIdentity": self.cluster_name, "leaseDurationSeconds": 40, "renewTime": micro_now()}})
        elif (now - parse_time(lease["spec"]["renewTime"])).total_seconds() >= LEASE_RENEW_SECONDS:
            lease["spec"]["renewTime"] = micro_now()
            hub.put(path, lease)


def _arguments(parser):
    parser.add_argument("--cluster-name", help="name to register as (default: --cluster)")
    parser.add_argument("--cluster-api-endpoint", help="the member's API server URL for the hub (default: the lab's)")


def _build(fleet, args):
    return [SimulatedKarmadaAgent(fleet, args.cluster, cluster_name=args.cluster_name, api_endpoint=args.cluster_api_endpoint)]


if __name__ == "__main__":
    sys.exit(run_cli(__doc__.split("\n\n", 1)[0], _arguments, _build))
