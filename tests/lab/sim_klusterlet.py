"""Simulation of OCM's klusterlet registration agent (member side) and of the hub's registration
controller, for the lab, which cannot run either (docs/architecture.md 4.6 and 5.2).

``SimulatedKlusterlet`` does what the registration agent does from the member's
``open-cluster-management-agent/bootstrap-hub-kubeconfig``: with those bootstrap credentials it
creates the ManagedCluster (``hubAcceptsClient: false``, the member's URL and CA) and a CSR exactly as
the agent does (generateName ``<cluster>-``, label ``open-cluster-management.io/cluster-name``, an
ECDSA P-256 key, CN ``system:open-cluster-management:<cluster>:<agent>``, O the cluster's group and
``system:open-cluster-management:managed-clusters``, signer ``kubernetes.io/kube-apiserver-client``,
usages digital signature / key encipherment / client auth; ``expirationSeconds`` from the Klusterlet's
``registrationConfiguration.clientCertExpirationSeconds`` when set, as the operator passes it to the agent's
``--client-cert-expiration-seconds``; API servers from 1.22 on sign for it, capped by the signer, while the lab's 1.20
build drops the field and signs for its default duration, as servers older than 1.22 do), waits until the CSR is approved and
signed, and writes ``open-cluster-management-agent/hub-kubeconfig-secret`` (``tls.crt``, ``tls.key``,
``kubeconfig``, ``cluster-name``, ``agent-name``; the hub kubeconfig keeps the bootstrap one's server,
CA and ``proxy-url``, and both are used through that proxy). From then on it speaks to the hub with that
certificate only: once the hub accepted the cluster it sets ``ManagedClusterJoined``,
``ManagedClusterConditionAvailable`` and ``ManagedClusterConditionClockSynced`` and the Kubernetes
version, and renews the lease ``managed-cluster-lease``. A bootstrap kubeconfig that changes while its CSR waits
makes it start again with the new one (the agent restarts); once joined, one that names another server or CA makes
it bootstrap again (the operator's bootstrap controller deletes ``hub-kubeconfig-secret``) - a new token alone does
not - and so does Klusterlet status condition ``RebootstrapProgressing=True``, the operator's own rebootstrap request.
A hub-side removal of its ManagedCluster is not noticed: the joined agent goes on with its certificate, which the hub
no longer authorizes, and does not create the ManagedCluster again.

In Hosted mode (``hosting`` given) the agent runs on the hosting cluster: it works in namespace
``klusterlet-<cluster>`` there (the Klusterlet ``klusterlet-<cluster>`` names it, as the operator
does), acts only once that Klusterlet and Secret ``external-managed-kubeconfig`` exist, and reaches
the managed cluster only through that kubeconfig - so a kubeconfig that does not work is noticed.
With the ``grpc`` registration driver the agent would talk to the hub's gRPC server, which the lab
cannot run: the simulation then says so in its status and does nothing.

``SimulatedRegistrationController`` is the hub side, run with the hub's admin credentials: it keeps
the finalizers on the ManagedCluster, and on ``hubAcceptsClient: true`` creates namespace
``<cluster>``, the cluster's ClusterRole/ClusterRoleBinding and RoleBindings, the lease, and sets
``HubAcceptedManagedCluster``; when the lease is not renewed for five lease durations it sets
``ManagedClusterConditionAvailable`` to Unknown. Unlike the real controller it only looks after the
clusters it is given, so that tests sharing a hub do not see each other's objects changed, and after
the clusters the Klusterlets ``klusterlet`` of the lab clusters in ``learn_from`` name (a hub registered
with itself, ``local-cluster``; a member registered under another name) from when it first sees them. On deletion of a ManagedCluster it removes
the cluster's RBAC, then its finalizers; like the real controller it leaves the Lease ``<cluster>/managed-cluster-lease``
(it has no ownerReference, and no hub controller deletes it).

Command line (both parts for one member until interrupted)::

    python tests/lab/sim_klusterlet.py --lab-dir DIR --cluster member1 [--cluster-name NAME]
"""

import base64
import datetime
import secrets
import string
import sys

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import lab
from sim_base import AgentClient, Simulation, apply, condition_true, get_or_none, micro_now, now, parse_time, run_cli, set_condition

AGENT_NAMESPACE = "open-cluster-management-agent"
BOOTSTRAP_SECRET = "bootstrap-hub-kubeconfig"
HUB_SECRET = "hub-kubeconfig-secret"
CLUSTER_LABEL = "open-cluster-management.io/cluster-name"
SUBJECT_PREFIX = "system:open-cluster-management:"
MANAGED_CLUSTERS_GROUP = "system:open-cluster-management:managed-clusters"
SIGNER = "kubernetes.io/kube-apiserver-client"
LEASE = "managed-cluster-lease"
FINALIZERS = ["cluster.open-cluster-management.io/resource-cleanup",
              "cluster.open-cluster-management.io/api-resource-cleanup"]
MANAGED_CLUSTERS = "/apis/cluster.open-cluster-management.io/v1/managedclusters"
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
LEASE_RENEW_SECONDS = 10


KLUSTERLETS = "/apis/operator.open-cluster-management.io/v1/klusterlets"
REBOOTSTRAP_CONDITION = "RebootstrapProgressing"
EXTERNAL_SECRET = "external-managed-kubeconfig"


def secret_path(name, namespace=AGENT_NAMESPACE):
    return f"/api/v1/namespaces/{namespace}/secrets/{name}"


def lease_path(cluster):
    return f"/apis/coordination.k8s.io/v1/namespaces/{cluster}/leases/{LEASE}"


def _decode(secret, key):
    value = (secret.get("data") or {}).get(key)
    return base64.b64decode(value) if value else None


def _current_cluster(kubeconfig):
    """The ``clusters`` entry (``name``, ``cluster``) of a kubeconfig's current context."""
    config = yaml.safe_load(kubeconfig)
    context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
    return next(c for c in config["clusters"] if c["name"] == context["cluster"])


def _hub_of(kubeconfig):
    """(server, CA data) of a kubeconfig's current cluster, as the operator compares them."""
    cluster = _current_cluster(kubeconfig)["cluster"]
    return cluster.get("server"), cluster.get("certificate-authority-data")


class SimulatedKlusterlet(Simulation):
    """The klusterlet's registration agent for lab cluster ``member``, registering as ``cluster_name``.

    ``cluster_name`` defaults to the Klusterlet's ``spec.clusterName`` (as the operator passes it to
    the agent) or else the member's name; ``agent_name`` is random, or the one a previous run stored
    in ``hub-kubeconfig-secret``. With ``hosting`` (a lab cluster name) the agent is the Hosted one
    of Klusterlet ``klusterlet-<cluster_name or member>`` on that cluster. Like the operator's
    Deployment, it acts only while its Klusterlet exists, unless it was given ``cluster_name`` (an agent
    started by hand).
    """

    name = "klusterlet"

    def __init__(self, fleet, member, cluster_name=None, agent_name=None, interval=1.0, hosting=None):
        if hosting:
            self.name = f"klusterlet-{cluster_name or member}@{hosting}"
        super().__init__(interval)
        self.info = fleet.clusters[member]
        self.hosted = bool(hosting)
        # The agent's in-cluster ServiceAccount: on the member, or on the hosting cluster.
        self.runtime = lab.ApiClient.for_cluster(fleet.clusters[hosting or member])
        self.klusterlet = f"klusterlet-{cluster_name or member}" if hosting else "klusterlet"
        self.namespace = self.klusterlet if hosting else AGENT_NAMESPACE
        # How the agent reaches the managed cluster: in-cluster, or (Hosted) external-managed-kubeconfig.
        self.member = None if hosting else lab.ApiClient.for_cluster(self.info)
        self._managed_kubeconfig = None
        self.given_name = cluster_name
        self.cluster_name = cluster_name
        self.agent_name = agent_name
        self.csr_name = None
        self.expiration_seconds = None  # the Klusterlet's clientCertExpirationSeconds
        self._key_pem = None
        self._bootstrapped_with = None  # the bootstrap kubeconfig the pending CSR was made with
        self._renewed = None

    @property
    def identity(self):
        return f"{SUBJECT_PREFIX}{self.cluster_name}:{self.agent_name}"

    def sync(self):
        klusterlet = get_or_none(self.runtime, f"{KLUSTERLETS}/{self.klusterlet}")
        if klusterlet is None and (self.hosted or not self.given_name):
            # the operator runs the agent for a Klusterlet only, and stops it when it is deleted; an agent given
            # its cluster name (registration-agent --cluster-name) is one started by hand
            self.status = f"waiting for Klusterlet {self.klusterlet}"
            return
        spec = (klusterlet or {}).get("spec") or {}
        if self.hosted and not self._reach_managed_cluster():
            return
        if ((spec.get("registrationConfiguration") or {}).get("registrationDriver") or {}).get("authType") == "grpc":
            self.status = "the grpc registration driver needs the hub's gRPC server, which the lab cannot run: not simulated"
            return
        self.expiration_seconds = (spec.get("registrationConfiguration") or {}).get("clientCertExpirationSeconds")
        if klusterlet is not None and self._rebootstrap(klusterlet):
            return
        hub_secret = get_or_none(self.runtime, secret_path(HUB_SECRET, self.namespace))
        self._resolve_names(hub_secret, spec)
        if self._valid(hub_secret) and not self._hub_changed(hub_secret):
            self._run_as_agent(hub_secret)
        else:
            self._bootstrap()

    def _hub_changed(self, hub_secret):
        """The operator's bootstrap controller: a bootstrap kubeconfig whose server or CA differ from the hub
        kubeconfig's makes the klusterlet bootstrap again - it deletes ``hub-kubeconfig-secret``. A new token alone
        does not."""
        bootstrap = _decode(get_or_none(self.runtime, secret_path(BOOTSTRAP_SECRET, self.namespace)) or {}, "kubeconfig")
        if not bootstrap or _hub_of(bootstrap) == _hub_of(_decode(hub_secret, "kubeconfig")):
            return False
        self.runtime.delete(secret_path(HUB_SECRET, self.namespace))
        self.csr_name = self._key_pem = None
        self.status = f"the bootstrap kubeconfig names another hub: deleted {HUB_SECRET}, bootstrapping again"
        return True

    def _rebootstrap(self, klusterlet):
        """The operator's bootstrap controller on Klusterlet condition ``RebootstrapProgressing=True`` (whoever set it):
        it stops the registration agent, deletes ``hub-kubeconfig-secret`` and sets the condition False
        (``RebootstrapCompleted``); the agent starts again with the bootstrap kubeconfig, a new agent name and no CSR.
        The real controller acts on an event of the agent's Secrets or at its periodic resync; this one on its next round.
        True when it acted."""
        if not condition_true(klusterlet, REBOOTSTRAP_CONDITION):
            return False
        if get_or_none(self.runtime, secret_path(HUB_SECRET, self.namespace)) is not None:
            self.runtime.delete(secret_path(HUB_SECRET, self.namespace))
        self.csr_name = self._key_pem = self.agent_name = None
        conditions, _changed = set_condition((klusterlet.get("status") or {}).get("conditions"), REBOOTSTRAP_CONDITION,
                                             "False", "RebootstrapCompleted",
                                             f"Secret {self.namespace}/{HUB_SECRET} is deleted and bootstrap is triggered")
        self.runtime.patch(f"{KLUSTERLETS}/{self.klusterlet}/status", {
            "metadata": {"resourceVersion": klusterlet["metadata"]["resourceVersion"]}, "status": {"conditions": conditions}})
        self.status = f"rebootstrap requested on Klusterlet {self.klusterlet}: deleted {HUB_SECRET}, bootstrapping again"
        return True

    def _reach_managed_cluster(self):
        """Hosted: a client for the managed cluster from ``external-managed-kubeconfig``; False while there is none."""
        kubeconfig = _decode(get_or_none(self.runtime, secret_path(EXTERNAL_SECRET, self.namespace)) or {}, "kubeconfig")
        if not kubeconfig:
            self.status = f"waiting for Secret {self.namespace}/{EXTERNAL_SECRET}"
            return False
        if kubeconfig != self._managed_kubeconfig:
            self.member = AgentClient.from_kubeconfig(kubeconfig, f"{self.workdir}/managed")
            self._managed_kubeconfig = kubeconfig
        return True

    def _resolve_names(self, hub_secret, spec):
        if not self.given_name:  # the operator (re)starts the agent with the Klusterlet's clusterName
            name = spec.get("clusterName") or self.info["name"]
            if name != self.cluster_name:
                self.cluster_name, self.csr_name, self._key_pem = name, None, None
        if not self.agent_name:
            stored = _decode(hub_secret or {}, "agent-name")
            self.agent_name = stored.decode() if stored else "".join(
                secrets.choice(string.ascii_lowercase + string.digits) for _index in range(5))

    def _valid(self, secret):
        """The hub secret holds a current certificate for this identity, a key and a kubeconfig."""
        if not secret or not all(_decode(secret, k) for k in ("kubeconfig", "tls.key", "tls.crt")):
            return False
        cert = x509.load_pem_x509_certificate(_decode(secret, "tls.crt"))
        names = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        return names == [self.identity] and cert.not_valid_after_utc > datetime.datetime.now(datetime.timezone.utc)

    # -- bootstrap: ManagedCluster, CSR, hub kubeconfig ------------------------------------------------

    def _bootstrap(self):
        secret = get_or_none(self.runtime, secret_path(BOOTSTRAP_SECRET, self.namespace))
        kubeconfig = _decode(secret or {}, "kubeconfig")
        if not kubeconfig:
            self.status = f"waiting for Secret {self.namespace}/{BOOTSTRAP_SECRET}"
            return
        if self.csr_name is not None and kubeconfig != self._bootstrapped_with:
            # the agent restarts when its bootstrap kubeconfig changes, and asks again with the new one
            self.status = f"the bootstrap kubeconfig changed: CSR {self.csr_name} abandoned, bootstrapping again"
            self.csr_name = self._key_pem = None
        hub = AgentClient.from_kubeconfig(kubeconfig, f"{self.workdir}/bootstrap")
        self._create_managed_cluster(hub)
        if self.csr_name is None:
            self._create_csr(hub)
            self._bootstrapped_with = kubeconfig
            return
        csr = get_or_none(hub, f"{CSRS}/{self.csr_name}")
        if csr is None:
            self.csr_name = None  # deleted: ask again
            return
        types = {c["type"] for c in (csr.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
        if "Denied" in types or "Failed" in types:
            self.status = f"CSR {self.csr_name} was {'denied' if 'Denied' in types else 'failed'}; waiting"
            return
        certificate = base64.b64decode((csr.get("status") or {}).get("certificate") or "")
        if "Approved" not in types or not certificate:
            self.status = f"waiting for CSR {self.csr_name} to be approved and signed"
            return
        self._write_hub_secret(kubeconfig, certificate)
        self.status = f"hub kubeconfig written from CSR {self.csr_name}"
        self.csr_name = self._key_pem = None

    def _create_managed_cluster(self, hub):
        try:
            if get_or_none(hub, f"{MANAGED_CLUSTERS}/{self.cluster_name}") is None:
                with open(self.info["ca_cert"], "rb") as f:
                    ca_bundle = base64.b64encode(f.read()).decode()
                hub.post(MANAGED_CLUSTERS, {
                    "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                    "metadata": {"name": self.cluster_name},
                    "spec": {"hubAcceptsClient": False,
                             "managedClusterClientConfigs": [{"url": self.info["server"], "caBundle": ca_bundle}]},
                })
        except lab.ApiError as e:
            if e.status not in (401, 403, 409):  # the real agent skips unauthorized errors and goes on to its CSR
                raise

    def _create_csr(self, hub):
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, SUBJECT_PREFIX + self.cluster_name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, MANAGED_CLUSTERS_GROUP),
            x509.NameAttribute(NameOID.COMMON_NAME, self.identity),
        ])
        request = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
        spec = {"request": base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode(),
                "signerName": SIGNER, "usages": ["digital signature", "key encipherment", "client auth"]}
        if self.expiration_seconds:
            spec["expirationSeconds"] = self.expiration_seconds
        created = hub.post(CSRS, {
            "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"generateName": f"{self.cluster_name}-", "labels": {CLUSTER_LABEL: self.cluster_name}},
            "spec": spec,
        })
        self._key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                          serialization.NoEncryption())
        self.csr_name = created["metadata"]["name"]
        self.status = f"created CSR {self.csr_name}"

    def _write_hub_secret(self, bootstrap_kubeconfig, certificate):
        cert = x509.load_pem_x509_certificate(certificate)
        key = serialization.load_pem_private_key(self._key_pem, None)
        if cert.public_key().public_numbers() != key.public_key().public_numbers():
            raise lab.LabError(f"the certificate of CSR {self.csr_name} does not match its private key")
        cluster = _current_cluster(bootstrap_kubeconfig)
        # As the agent builds it: the bootstrap cluster (server, CA, proxy-url), and the key pair as files next to it.
        kubeconfig = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": cluster["name"], "cluster": {
                key: cluster["cluster"][key] for key in ("server", "certificate-authority-data", "proxy-url")
                if key in cluster["cluster"]}}],
            "users": [{"name": "default-auth", "user": {"client-certificate": "tls.crt", "client-key": "tls.key"}}],
            "contexts": [{"name": "default-context", "context": {
                "cluster": cluster["name"], "user": "default-auth", "namespace": "configuration"}}],
            "current-context": "default-context",
        }
        data = {"tls.crt": certificate, "tls.key": self._key_pem, "kubeconfig": yaml.safe_dump(kubeconfig).encode(),
                "cluster-name": self.cluster_name.encode(), "agent-name": self.agent_name.encode()}
        apply(self.runtime, f"/api/v1/namespaces/{self.namespace}/secrets", {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": HUB_SECRET, "namespace": self.namespace},
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
        })

    # -- after bootstrap: the agent's own certificate ---------------------------------------------------

    def hub_client(self, secret):
        """A hub client with the agent certificate of ``hub-kubeconfig-secret``."""
        kubeconfig = yaml.safe_load(_decode(secret, "kubeconfig"))
        cluster = kubeconfig["clusters"][0]["cluster"]
        return AgentClient(cluster["server"], base64.b64decode(cluster["certificate-authority-data"]),
                           f"{self.workdir}/hub", cert_pem=_decode(secret, "tls.crt"), key_pem=_decode(secret, "tls.key"),
                           proxy=cluster.get("proxy-url"))

    def _run_as_agent(self, secret):
        hub = self.hub_client(secret)
        managed = hub.get(f"{MANAGED_CLUSTERS}/{self.cluster_name}")
        if not condition_true(managed, "HubAcceptedManagedCluster"):
            self.status = f"ManagedCluster {self.cluster_name} is not accepted by the hub yet"
            return
        conditions = (managed.get("status") or {}).get("conditions") or []
        changed = False
        for args in (("ManagedClusterJoined", "True", "ManagedClusterJoined", "Managed cluster joined"),
                     ("ManagedClusterConditionAvailable", "True", "ManagedClusterAvailable", "Managed cluster is available"),
                     ("ManagedClusterConditionClockSynced", "True", "ManagedClusterClockSynced",
                      "The clock of the managed cluster is synced with the hub.")):
            conditions, one = set_condition(conditions, *args)
            changed = changed or one
        version = self.member.get("/version")["gitVersion"]
        if changed or ((managed.get("status") or {}).get("version") or {}).get("kubernetes") != version:
            hub.patch(f"{MANAGED_CLUSTERS}/{self.cluster_name}/status",
                      {"status": {"conditions": conditions, "version": {"kubernetes": version}}})
        self._renew_lease(hub)
        self.status = f"joined as {self.identity}"

    def _renew_lease(self, hub):
        if self._renewed and (datetime.datetime.now(datetime.timezone.utc) - self._renewed).total_seconds() < LEASE_RENEW_SECONDS:
            return
        lease = get_or_none(hub, lease_path(self.cluster_name))
        if lease is None:
            return  # the hub creates it on acceptance
        lease["spec"]["renewTime"] = micro_now()
        hub.put(lease_path(self.cluster_name), lease)
        self._renewed = datetime.datetime.now(datetime.timezone.utc)


class SimulatedRegistrationController(Simulation):
    """The hub's registration controller for the ManagedClusters named in ``clusters``."""

    name = "registration-controller"

    def __init__(self, fleet, clusters, interval=1.0, learn_from=()):
        super().__init__(interval)
        self.hub = fleet.api(fleet.hub)
        self.clusters = list(clusters)
        self.learn_from = [fleet.api(name) for name in learn_from]

    def _learn_clusters(self):
        """Add the clusters the Klusterlets of ``learn_from`` register as; kept after a Klusterlet is gone, for the cleanup."""
        for api in self.learn_from:
            name = ((get_or_none(api, f"{KLUSTERLETS}/klusterlet") or {}).get("spec") or {}).get("clusterName")
            if name and name not in self.clusters:
                self.clusters.append(name)

    def sync(self):
        self._install_cluster_manager_roles()
        self._learn_clusters()
        for name in self.clusters:
            managed = get_or_none(self.hub, f"{MANAGED_CLUSTERS}/{name}")
            if managed is None:
                continue
            if managed["metadata"].get("deletionTimestamp"):
                self._clean_up(managed)
                continue
            finalizers = managed["metadata"].get("finalizers") or []
            if any(f not in finalizers for f in FINALIZERS):
                self.hub.patch(f"{MANAGED_CLUSTERS}/{name}", {"metadata": {
                    "finalizers": finalizers + [f for f in FINALIZERS if f not in finalizers],
                    "resourceVersion": managed["metadata"]["resourceVersion"]}})
                continue  # look again with the new resourceVersion
            if (managed.get("spec") or {}).get("hubAcceptsClient"):
                self._accept(managed)
            elif condition_true(managed, "HubAcceptedManagedCluster"):
                self._remove_bindings(name)
                self._set_conditions(managed, [("HubAcceptedManagedCluster", "False", "HubClusterAdminDenied",
                                                "Denied by hub cluster admin")])
        self.status = f"reconciled {', '.join(self.clusters)}"

    def _install_cluster_manager_roles(self):
        """ClusterRoles the cluster-manager installs on the hub; the per-cluster RoleBindings refer to them."""
        for role, rules in (
            ("registration", [
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "watch", "update"]},
                {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["list", "watch", "create"]}]),
            ("work", [
                {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
                {"apiGroups": ["work.open-cluster-management.io"], "resources": ["manifestworks"],
                 "verbs": ["get", "list", "watch", "update", "patch", "delete"]},
                {"apiGroups": ["work.open-cluster-management.io"], "resources": ["manifestworks/status"],
                 "verbs": ["patch", "update"]}]),
        ):
            name = f"open-cluster-management:managedcluster:{role}"
            if get_or_none(self.hub, f"{RBAC}/clusterroles/{name}") is None:
                self.hub.post(f"{RBAC}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                                       "metadata": {"name": name, "labels": {CLUSTER_LABEL: ""}},
                                                       "rules": rules})

    @staticmethod
    def _subjects(name):
        return [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": f"{SUBJECT_PREFIX}{name}"},
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": f"open-cluster-management:{name}"}]

    def _accept(self, managed):
        name = managed["metadata"]["name"]
        labels = {CLUSTER_LABEL: name}
        apply(self.hub, "/api/v1/namespaces",
              {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
        role = f"open-cluster-management:managedcluster:{name}"
        apply(self.hub, f"{RBAC}/clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role, "labels": labels},
            "rules": [
                {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
                 "verbs": ["create", "get", "list", "watch"]},
                {"apiGroups": ["register.open-cluster-management.io"], "resources": ["managedclusters/clientcertificates"],
                 "verbs": ["renew"]},
                {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters"],
                 "resourceNames": [name], "verbs": ["get", "list", "update", "watch"]},
                {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters/status"],
                 "resourceNames": [name], "verbs": ["patch", "update"]}]})
        apply(self.hub, f"{RBAC}/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": labels}, "subjects": self._subjects(name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}})
        for agent in ("registration", "work"):
            apply(self.hub, f"{RBAC}/namespaces/{name}/rolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": f"{role}:{agent}", "namespace": name, "labels": labels},
                "subjects": self._subjects(name),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": f"open-cluster-management:managedcluster:{agent}"}})
        lease = get_or_none(self.hub, lease_path(name))
        if lease is None:
            lease = self.hub.post(f"/apis/coordination.k8s.io/v1/namespaces/{name}/leases", {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": LEASE, "namespace": name, "labels": labels},
                "spec": {"holderIdentity": LEASE, "renewTime": micro_now()}})
        updates = [("HubAcceptedManagedCluster", "True", "HubClusterAdminAccepted", "Accepted by hub cluster admin")]
        grace = 5 * ((managed.get("spec") or {}).get("leaseDurationSeconds") or 60)
        renewed = parse_time(lease["spec"]["renewTime"])
        if (condition_true(managed, "ManagedClusterJoined")
                and (datetime.datetime.now(datetime.timezone.utc) - renewed).total_seconds() > grace):
            updates.append(("ManagedClusterConditionAvailable", "Unknown", "ManagedClusterLeaseUpdateStopped",
                            "Registration agent stopped updating its lease."))
        self._set_conditions(managed, updates)

    def _set_conditions(self, managed, updates):
        conditions = (managed.get("status") or {}).get("conditions") or []
        changed = False
        for update in updates:
            conditions, one = set_condition(conditions, *update)
            changed = changed or one
        if changed:
            self.hub.patch(f"{MANAGED_CLUSTERS}/{managed['metadata']['name']}/status", {"status": {"conditions": conditions}})

    def _remove_bindings(self, name):
        role = f"open-cluster-management:managedcluster:{name}"
        for path in [f"{RBAC}/clusterrolebindings/{role}"] + [
                f"{RBAC}/namespaces/{name}/rolebindings/{role}:{agent}" for agent in ("registration", "work")]:
            if get_or_none(self.hub, path) is not None:
                self.hub.delete(path)

    def _clean_up(self, managed):
        name = managed["metadata"]["name"]
        self._remove_bindings(name)
        path = f"{RBAC}/clusterroles/open-cluster-management:managedcluster:{name}"
        if get_or_none(self.hub, path) is not None:
            self.hub.delete(path)
        finalizers = [f for f in managed["metadata"].get("finalizers") or [] if f not in FINALIZERS]
        self.hub.patch(f"{MANAGED_CLUSTERS}/{name}", {"metadata": {
            "finalizers": finalizers, "resourceVersion": managed["metadata"]["resourceVersion"]}})
        self.status = f"cleaned up after ManagedCluster {name} at {now()}"


def _arguments(parser):
    parser.add_argument("--cluster-name", help="name to register as (default: the Klusterlet's clusterName, else --cluster)")
    parser.add_argument("--agent-name", help="agent name (default: random, or the one stored in hub-kubeconfig-secret)")


def _build(fleet, args):
    klusterlet = SimulatedKlusterlet(fleet, args.cluster, cluster_name=args.cluster_name, agent_name=args.agent_name)
    return [klusterlet, SimulatedRegistrationController(fleet, [args.cluster_name or args.cluster])]


if __name__ == "__main__":
    sys.exit(run_cli(__doc__.split("\n\n", 1)[0], _arguments, _build))
