#!/usr/bin/env python
"""SIMULATION of Karmada's cluster-status controller, for Push clusters on a lab hub.

The lab cannot run karmada-controller-manager, so this plays the part of its cluster-status
controller for every Cluster with ``spec.syncMode: Push``, the way the real one does it
(karmada ``pkg/controllers/status/cluster_status_controller.go``, ``pkg/util/membercluster_client.go``):

- build a client from the Cluster: ``spec.apiEndpoint``, the ``token`` and ``caBundle`` of the
  ``spec.secretRef`` Secret on the hub, and ``spec.insecureSkipTLSVerification``;
- ask the member for ``/readyz`` (``/healthz`` when ``/readyz`` is not served) and ``/version``,
  authenticated with that token;
- write ``status.kubernetesVersion`` and the ``Ready`` condition through the status subresource:

  ======  ========================  ==============================================================
  Ready   reason                    when
  ======  ========================  ==============================================================
  True    ClusterReady              the health endpoint answered 200
  False   ClusterNotReady           it answered another 2xx status
  False   ClusterNotReachable       no answer, TLS failure, refused token, any error status
  False   StatusCollectionFailed    no endpoint, Secret, token or CA to build the client from
  ======  ========================  ==============================================================

Readiness is never assumed: it comes only from the member answering the stored credentials.
Like the real controller, ``kubernetesVersion`` is only written while the member is ready, and
``lastTransitionTime`` only changes when the condition's status does.

Left out, because nothing in the lab needs them: waiting for the cluster controller's finalizer
(no cluster controller runs here), the success/failure thresholds, API enablements and node or
resource summaries. A Cluster with ``spec.proxyURL`` gets ``StatusCollectionFailed`` (proxies are
not simulated) rather than a readiness nobody checked.

Command line (runs until interrupted)::

    python tests/lab/sim_karmada.py --lab-dir DIR [--interval 1]

Python::

    sim = ClusterStatusSimulation(ApiClient.for_cluster(lab.clusters[lab.hub]))
    sim.start()
    ...
    sim.stop()
"""

import base64
import binascii
import http.client
import json
import ssl
import sys
from urllib.parse import urlsplit

from lab import ApiClient, ApiError
from sim_base import Simulation, get_or_none, run_lab_cli, set_condition

CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
READY = "Ready"
# Karmada's reasons and messages (cluster_status_controller.go).
CLUSTER_READY = ("True", "ClusterReady", "cluster is healthy and ready to accept workloads")
CLUSTER_NOT_READY = ("False", "ClusterNotReady", "cluster is reachable but health endpoint responded without ok")
CLUSTER_NOT_REACHABLE = ("False", "ClusterNotReachable", "cluster is not reachable")
STATUS_COLLECTION_FAILED = "StatusCollectionFailed"


class ClientUnavailable(Exception):
    """No client can be built for the Cluster (Karmada: "failed to create a ClusterClient")."""


def _log(message):
    print(f"[sim-karmada] {message}", file=sys.stderr, flush=True)


class MemberClient:
    """What Karmada's BuildClusterConfig builds for a Push Cluster: endpoint, bearer token, TLS."""

    def __init__(self, hub, cluster, timeout):
        name, spec = cluster["metadata"]["name"], cluster.get("spec") or {}
        self.endpoint = spec.get("apiEndpoint")
        if not self.endpoint:
            raise ClientUnavailable(f"the api endpoint of cluster {name} is empty")
        ref = spec.get("secretRef")
        if not ref:
            raise ClientUnavailable(f"cluster {name} does not have a secret")
        secret = get_or_none(hub, f"/api/v1/namespaces/{ref['namespace']}/secrets/{ref['name']}")
        if secret is None:
            raise ClientUnavailable(f'secrets "{ref["name"]}" not found')
        data = secret.get("data") or {}
        self.token = _decode(data.get("token"))
        if not self.token:
            raise ClientUnavailable(f'the secret for cluster {name} is missing a non-empty value for "token"')
        if spec.get("proxyURL"):
            raise ClientUnavailable("proxyURL is not supported by the lab simulation")
        if spec.get("insecureSkipTLSVerification"):
            self.context = ssl.create_default_context()
            self.context.check_hostname = False
            self.context.verify_mode = ssl.CERT_NONE
        elif "caBundle" not in data:
            raise ClientUnavailable(f'the secret for cluster {name} is missing the CA data key "caBundle"')
        else:
            try:
                self.context = ssl.create_default_context(cadata=_decode(data["caBundle"]))
            except (ssl.SSLError, ValueError) as e:
                raise ClientUnavailable(f"unable to load the CA bundle of cluster {name}: {e}") from None
        self.timeout = timeout

    def get(self, path):
        """(HTTP status, body text); raises OSError or HTTPException when nothing usable answers."""
        parts = urlsplit(self.endpoint)
        if parts.scheme == "https":
            conn = http.client.HTTPSConnection(parts.hostname, parts.port or 443, context=self.context,
                                               timeout=self.timeout)
        else:
            conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=self.timeout)
        try:
            conn.request("GET", parts.path.rstrip("/") + path,
                         headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json"})
            response = conn.getresponse()
            return response.status, response.read().decode("utf-8", "replace")
        finally:
            conn.close()


def _decode(value):
    try:
        return base64.b64decode(value or "").decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""


class ClusterStatusSimulation(Simulation):
    """Every ``interval`` seconds, writes the status of every Push Cluster on the hub (``start``/``stop``)."""

    name = "sim-karmada-cluster-status"

    def __init__(self, hub, interval=1.0, timeout=5.0):
        super().__init__(interval)
        self.hub = hub
        self.timeout = timeout

    def sync(self):
        """One round over every Push Cluster."""
        pushed = [c for c in self.hub.get(CLUSTERS).get("items") or [] if (c.get("spec") or {}).get("syncMode") == "Push"]
        for cluster in pushed:
            self.sync_cluster(cluster)
        self.status = f"{len(pushed)} Push cluster(s)"

    def observe(self, cluster):
        """((status, reason, message), kubernetesVersion or None) as Karmada would see them now."""
        try:
            client = MemberClient(self.hub, cluster, self.timeout)
        except ClientUnavailable as e:
            return ("False", STATUS_COLLECTION_FAILED, f"failed to create a ClusterClient: {e}"), None
        try:
            status, _body = client.get("/readyz")
            if status == 404:
                status, _body = client.get("/healthz")
        except (OSError, http.client.HTTPException):
            return CLUSTER_NOT_REACHABLE, None
        if not 200 <= status < 300:  # client-go reports every other status as an error
            return CLUSTER_NOT_REACHABLE, None
        if status != 200:
            return CLUSTER_NOT_READY, None
        try:
            status, body = client.get("/version")
            version = json.loads(body).get("gitVersion", "") if status == 200 else ""
        except (OSError, http.client.HTTPException, ValueError):
            version = ""  # Karmada logs the error and writes an empty version
        return CLUSTER_READY, version

    def sync_cluster(self, cluster):
        """Observe one Cluster and write its status through the status subresource if it changed."""
        name = cluster["metadata"]["name"]
        (status, reason, message), version = self.observe(cluster)
        current = cluster.get("status") or {}
        conditions, changed = set_condition(current.get("conditions"), READY, status, reason, message)
        new = dict(current, conditions=conditions)
        if version is not None:
            new["kubernetesVersion"] = version
        if new == current:
            return
        try:
            self.hub.patch(f"{CLUSTERS}/{name}/status",
                           {"metadata": {"resourceVersion": cluster["metadata"]["resourceVersion"]}, "status": new})
        except ApiError as e:
            if e.status in (404, 409):  # deleted or changed meanwhile: the next round sees the new state
                return
            raise
        if changed:
            _log(f"Cluster {name}: Ready={status} ({reason}: {message})")


def _build(lab, interval):
    simulation = ClusterStatusSimulation(ApiClient.for_cluster(lab.clusters[lab.hub]), interval=interval)
    return [simulation], lambda: _log(
        f"simulating Karmada's cluster-status controller on {lab.hub} ({lab.clusters[lab.hub]['server']}); Ctrl-C stops")


def main(argv=None):
    return run_lab_cli(__doc__.split("\n\n", 1)[0], _build, default_interval=1.0, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
