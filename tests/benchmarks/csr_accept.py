"""Wall time and CPU time of one csr_accept task accepting 1 cluster and 200 clusters, per engine.

Before each run (untimed), the lab hub receives, for each cluster of a fresh set of names, what its
registering agent would have created with a bootstrap token: one pending CSR shaped like the agent's
(an ECDSA P-256 key; OCM: label ``open-cluster-management.io/cluster-name``, CN
``system:open-cluster-management:<cluster>:<agent>`` and the two OCM groups; Karmada: CN
``system:karmada:agent:<cluster>``, O ``system:karmada:agents``), posted with a real bootstrap
token of the engine's default group, and for OCM the ManagedCluster (``hubAcceptsClient: false``).
The task then runs exactly as Ansible runs a module (a fresh Python process) with ``wait: true``, as
site.yml and agent_install run it, and must accept every cluster: approve its CSR (and, OCM, set
``hubAcceptsClient``). Afterwards the CSRs, ManagedClusters, the token and its RBAC are removed.

Each figure is the median of ``--runs`` runs; CPU is user + system time of the module process, a
figure that does not depend on how busy the machine is; the ratios are to the one-cluster task.

    python tests/benchmarks/csr_accept.py [--csrs 200] [--runs 3] [--engines ocm,karmada] [--lab-dir DIR]

Uses the lab in ``--lab-dir`` (or ``FLEET_LAB_DIR``) when it runs; otherwise starts a hub-only lab
and stops it afterwards.
"""

import argparse
import base64
import os
import resource
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import benchlab
from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from runner import run_module

GROUPS = {"ocm": bootstrap.OCM_DEFAULT_GROUP, "karmada": bootstrap.KARMADA_DEFAULT_GROUP}
RBAC_NAME = "fleet-bench:csr-bootstrap"
AGENT_NAME = "benchagent"


def subject(engine, cluster):
    """The subject the engine's agent asks for."""
    if engine == "ocm":
        organizations = [ocm.agent_organization(cluster), ocm.MANAGED_CLUSTERS_GROUP]
        common_name = ocm.agent_common_name(cluster, AGENT_NAME)
    else:
        organizations, common_name = [karmada.AGENTS_GROUP], karmada.agent_user(cluster)
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
                     + [x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def request_csr(agent, engine, cluster):
    """Post the agent CSR of ``cluster`` as the bootstrap token user; return its name."""
    request = x509.CertificateSigningRequestBuilder().subject_name(subject(engine, cluster)).sign(
        ec.generate_private_key(ec.SECP256R1()), hashes.SHA256())
    metadata = {"generateName": cluster + "-"}
    if engine == "ocm":
        metadata["labels"] = {ocm.CLUSTER_NAME_LABEL: cluster}
    created = agent.request("POST", resources.CSR.path(), body={
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": metadata,
        "spec": {"request": base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode(),
                 "signerName": resources.CSR_SIGNER, "usages": list(resources.CSR_USAGES)}})
    return created["metadata"]["name"]


class Bootstrap:
    """A bootstrap token of ``engine``'s default group on the hub, allowed to create CSRs."""

    def __init__(self, lab, hub, engine):
        self.hub = hub
        self.token_id, secret = bootstrap.generate_token().split(".")
        resources.ensure(hub, resources.CLUSTER_ROLE_BINDING, {
            "metadata": {"name": RBAC_NAME},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group} for group in GROUPS.values()]})
        resources.ensure(hub, resources.SECRET, bootstrap.token_secret(self.token_id, secret, ttl_seconds=3600, groups=[GROUPS[engine]]))
        info = lab.clusters[lab.hub]
        self.agent = client.get_cluster({"host": info["server"], "ca_cert": info["ca_cert"], "api_key": "%s.%s" % (self.token_id, secret)},
                                        "hub as system:bootstrap:%s" % self.token_id)

    def remove(self):
        resources.delete(self.hub, resources.SECRET, bootstrap.SECRET_NAME_PREFIX + self.token_id, bootstrap.SECRET_NAMESPACE)
        resources.delete(self.hub, resources.CLUSTER_ROLE_BINDING, RBAC_NAME)


def registering(hub, agent, engine, cluster):
    """What a registering agent leaves on the hub for ``cluster``; returns the CSR name."""
    if engine == "ocm":
        resources.ensure(hub, ocm.MANAGED_CLUSTER, {"metadata": {"name": cluster}, "spec": {"hubAcceptsClient": False}})
    return request_csr(agent, engine, cluster)


def timed(hub, agent, auth, engine, clusters):
    """``(seconds, cpu_seconds)`` of one csr_accept run over ``clusters``, each with a fresh pending CSR."""
    with ThreadPoolExecutor(8) as pool:
        csrs = list(pool.map(lambda cluster: registering(hub, agent, engine, cluster), clusters))
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        result = run_module("csr_accept", dict(auth, engine=engine, clusters=clusters, wait=True, timeout=300))
        seconds = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if result["rc"] != 0 or not all(c["accepted"] for c in result["clusters"]):
            raise SystemExit("csr_accept failed: %s" % result.get("msg"))
    finally:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda name: resources.delete(hub, resources.CSR, name), csrs))
            if engine == "ocm":
                list(pool.map(lambda cluster: resources.delete(hub, ocm.MANAGED_CLUSTER, cluster), clusters))
    return seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--csrs", type=int, default=200, help="clusters (one pending CSR each) of the large task (default 200)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engines", default="ocm,karmada", help="comma-separated engines (default ocm,karmada)")
    benchlab.add_lab_argument(parser)
    args = parser.parse_args()

    with benchlab.lab(args.lab_dir, ["hub"]) as lab:
        auth = {"kubeconfig": lab.clusters[lab.hub]["kubeconfig"], "context": lab.hub}
        hub = client.get_cluster(auth, "hub")
        print("csr_accept with wait: true, median of %d runs (hub %s, %d CPUs, load %s)"
              % (args.runs, lab.clusters[lab.hub]["server"], os.cpu_count(), benchlab.load()))
        print("  %-8s %8s %10s %8s   %10s %8s" % ("", "clusters", "wall", "x 1", "CPU", "x 1"))
        for engine in [engine for engine in args.engines.split(",") if engine]:
            tokens = Bootstrap(lab, hub, engine)
            try:
                one = None
                for size in (1, args.csrs):
                    figures = [timed(hub, tokens.agent, auth, engine, ["bench-csr-%d-%03d" % (run, index) for index in range(size)])
                               for run in range(args.runs)]
                    figure = statistics.median(f[0] for f in figures), statistics.median(f[1] for f in figures)
                    one = one or figure
                    print("  %-8s %8d %8.2f s %6.1f x   CPU %6.2f s %6.1f x"
                          % (engine, size, figure[0], figure[0] / one[0], figure[1], figure[1] / one[1]), flush=True)
            finally:
                tokens.remove()
        print("  load now %s" % benchlab.load())


if __name__ == "__main__":
    main()
