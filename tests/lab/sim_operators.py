#!/usr/bin/env python
"""SIMULATIONS of what makes operator bundles come alive on a lab cluster: Deployments that run,
OCM's cluster-manager operator and OCM's klusterlet operator.

The lab has no kubelet and no deployment controller, and cannot run the operators' images. These
simulations play their parts through the Kubernetes API, faithful to docs/architecture.md 4.5 and 4.6, and
to the real controllers (OCM ``pkg/operator/operators/clustermanager`` and ``.../klusterlet``):

``DeploymentSimulation`` - kube-controller-manager's deployment controller plus kubelets running the
pods. Every Deployment (optionally only in some namespaces) gets the status the real pair writes
once all pods run: ``observedGeneration``, ``replicas``, ``updatedReplicas``, ``readyReplicas``,
``availableReplicas``, conditions ``Available`` (``MinimumReplicasAvailable``) and ``Progressing``
(``NewReplicaSetAvailable``). Images are never pulled, so any image "runs".

``ClusterManagerOperatorSimulation`` - the registration-operator in hub mode. Acts only while its
Deployment ``open-cluster-management/cluster-manager`` exists and is Available (no operator, no
reconciliation: a ClusterManager created before the operator just waits). For each ClusterManager:

- adds finalizer ``operator.open-cluster-management.io/cluster-manager-cleanup``;
- creates namespace ``open-cluster-management-hub`` and the hub Deployments
  ``<name>-registration-controller``, ``-registration-webhook``, ``-work-webhook``,
  ``-placement-controller``, ``-addon-manager-controller`` and, with a grpc registration driver,
  ``-grpc-server``, with the images of the spec and its resource requirements; with the gRPC server
  also ConfigMap ``ca-bundle-configmap`` holding the CA of its certificate (``ca-bundle.crt``);
- writes ``Applied=True`` (``ClusterManagerApplied``), ``HubRegistrationDegraded`` and
  ``HubPlacementDegraded`` (``False``/``RegistrationFunctional``, ``PlacementFunctional`` once those
  Deployments are available, else ``True``/``UnavailableRegistrationPod``, ``UnavailablePlacementPod``),
  ``Progressing`` and ``observedGeneration``, with the real reasons and messages;
- on deletion removes those Deployments and the namespace, then its finalizer.

``KlusterletOperatorSimulation`` - the registration-operator in klusterlet mode on the cluster that
runs it (the managed cluster, or the hosting cluster in Hosted mode). Acts only while Deployment
``open-cluster-management/klusterlet`` exists and is Available. For each Klusterlet:

- adds finalizer ``operator.open-cluster-management.io/klusterlet-cleanup`` (Hosted:
  ``klusterlet-hosted-cleanup``);
- Hosted and SingletonHosted: ``ReadyToApply`` from Secret ``external-managed-kubeconfig`` in the
  agent namespace (``KlusterletPrepared`` when it holds a kubeconfig, else ``KlusterletPrepareFailed``)
  and nothing more until it is prepared;
- creates the agent namespace (``spec.namespace`` or ``open-cluster-management-agent``; Hosted: the
  Klusterlet's name) and Deployments ``<name>-registration-agent`` and ``<name>-work-agent``
  (Singleton: ``<name>-agent``), with the grpc driver's arguments (``--registration-auth=grpc``,
  ``--grpc-bootstrap-config``, ``--grpc-config``, ``--workload-source-driver=grpc``) when the
  Klusterlet's ``registrationConfiguration.registrationDriver.authType`` is ``grpc``;
- writes ``Applied`` (``KlusterletApplied``), ``Available`` (``KlusterletAvailable`` or
  ``NoAvailablePods``), ``RegistrationDesiredDegraded`` and ``WorkDesiredDegraded``
  (``DeploymentsFunctional`` or ``UnavailablePods``) and ``HubConnectionDegraded``: ``True`` with
  ``BootstrapSecretFunctional,HubKubeConfigSecretMissing`` (or ``BootstrapSecretMissing,...``) until
  the registration agent has written Secret ``hub-kubeconfig-secret`` into the agent namespace, then
  ``False``/``HubConnectionFunctional``;
- on deletion removes the Deployments and the agent namespace, then its finalizer.

``KarmadaAgentCsrApproverSimulation`` - karmada-controller-manager's agent CSR approver on the hub
(docs/architecture.md 4.4): a pending CSR for ``system:karmada:agent:<cluster>`` (O ``system:karmada:agents``,
signer ``kubernetes.io/kube-apiserver-client``, usages digital signature, key encipherment, client
auth) is approved with reason ``AutoApproved`` only when a SubjectAccessReview lets its requester
``create`` ``certificatesigningrequests/clusteragent`` (``selfclusteragent`` for the agent's own
renewals) - that is, when hub_init created Karmada's auto-approval RBAC. Otherwise it stays pending
for csr_accept. The kube-controller-manager then signs it as it would any approved CSR.

Left out, because nothing in the lab needs them: the hub CRDs, webhooks, RBAC and ServiceAccounts
the real operators install (the lab's hub serves the CRDs already), checking the hub kubeconfig with
SelfSubjectAccessReviews (existence of the Secrets is checked instead) and the objects the Hosted
klusterlet creates on the managed cluster. The klusterlet's registration and work agents themselves
are other simulations (sim_klusterlet.py, sim_work_agent.py).

Command line (runs until interrupted)::

    python tests/lab/sim_operators.py --lab-dir DIR [--interval 0.5]

Python::

    sims = [s.start() for s in simulations_for(Lab.load(DIR))]
    ...
    for s in sims: s.stop()
"""

import base64
import datetime
import hashlib
import sys
import time

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from lab import ApiClient, ApiError
from sim_base import Simulation, get_or_none, now, run_lab_cli, set_condition

DEPLOYMENTS = "/apis/apps/v1/deployments"
CLUSTER_MANAGERS = "/apis/operator.open-cluster-management.io/v1/clustermanagers"
KLUSTERLETS = "/apis/operator.open-cluster-management.io/v1/klusterlets"
OPERATOR_NAMESPACE = "open-cluster-management"
HUB_NAMESPACE = "open-cluster-management-hub"
AGENT_NAMESPACE = "open-cluster-management-agent"
CLUSTER_MANAGER_FINALIZER = "operator.open-cluster-management.io/cluster-manager-cleanup"
KLUSTERLET_FINALIZER = "operator.open-cluster-management.io/klusterlet-cleanup"
KLUSTERLET_HOSTED_FINALIZER = "operator.open-cluster-management.io/klusterlet-hosted-cleanup"
HOSTED_MODES = ("Hosted", "SingletonHosted")
SINGLETON_MODES = ("Singleton", "SingletonHosted")
# Characters Kubernetes' rand.SafeEncodeString uses for pod-template hashes.
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _log(name, message):
    print(f"[sim-{name}] {message}", file=sys.stderr, flush=True)


def ns_path(namespace, plural, name=None, group="/api/v1"):
    """REST path of a namespaced collection or object."""
    return f"{group}/namespaces/{namespace}/{plural}" + (f"/{name}" if name else "")


def create_if_missing(api, collection, body):
    try:
        api.post(collection, body)
    except ApiError as e:
        if e.status != 409:
            raise


def delete_if_present(api, path):
    try:
        api.delete(path)
    except ApiError as e:
        if e.status != 404:
            raise


def deployment_available(deployment):
    """True when the Deployment's Available condition is True for its current generation."""
    if deployment is None:
        return False
    status = deployment.get("status") or {}
    if status.get("observedGeneration", 0) < deployment["metadata"].get("generation", 0):
        return False
    return any(c.get("type") == "Available" and c.get("status") == "True" for c in status.get("conditions") or [])


def unavailable_pods(deployment):
    """Desired replicas minus available ones (helpers.NumOfUnavailablePod); all of them when absent."""
    if deployment is None:
        return 1
    desired = (deployment.get("spec") or {}).get("replicas", 1)
    return max(desired - ((deployment.get("status") or {}).get("availableReplicas") or 0), 0)


class ApiSimulation(Simulation):
    """A :class:`sim_base.Simulation` that works on one cluster through ``api`` (admin credentials)."""

    def __init__(self, api, interval=0.5):
        super().__init__(interval)
        self.api = api

    def patch_status(self, path, obj, status):
        """Merge-patch ``status`` through the status subresource, guarded by the resourceVersion read."""
        try:
            self.api.patch(path + "/status", {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
                                              "status": status})
        except ApiError as e:
            if e.status not in (404, 409):  # deleted or changed meanwhile: the next round sees it
                raise

    def set_finalizers(self, path, obj, finalizers):
        try:
            self.api.patch(path, {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"],
                                               "finalizers": finalizers}})
        except ApiError as e:
            if e.status not in (404, 409):
                raise


# --- Deployments ----------------------------------------------------------------------------------

def template_hash(deployment):
    """A pod-template-hash of the template, encoded like Kubernetes' SafeEncodeString (10 characters)."""
    digest = hashlib.sha256(repr(sorted((deployment.get("spec") or {}).get("template", {}).items())).encode()).digest()
    return "".join(SAFE_ALPHABET[b % len(SAFE_ALPHABET)] for b in digest[:10])


# Registries the lab's kubelets cannot pull from: a Deployment with an image there never becomes available, as
# on a real cluster whose nodes cannot reach the registry (ImagePullBackOff), so tests can make an agent that
# never comes up.
UNPULLABLE_REGISTRY = "unreachable.invalid"


def unpullable_images(deployment):
    """The images of a Deployment that no lab node can pull (registry ``UNPULLABLE_REGISTRY``)."""
    template = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [c.get("image") for c in template.get("containers") or []
            if (c.get("image") or "").split("/", 1)[0] == UNPULLABLE_REGISTRY]


def stuck_status(deployment):
    """The status the deployment controller writes while no replica can start (image pull failures)."""
    replicas = (deployment.get("spec") or {}).get("replicas", 1)
    current = deployment.get("status") or {}
    conditions, _changed = set_condition(current.get("conditions"), "Available", "False", "MinimumReplicasUnavailable",
                                         "Deployment does not have minimum availability.")
    for condition in conditions:
        condition.setdefault("lastUpdateTime", condition["lastTransitionTime"])
    return {"observedGeneration": deployment["metadata"].get("generation", 1), "conditions": conditions,
            "replicas": replicas, "updatedReplicas": replicas, "unavailableReplicas": replicas}


def rolled_out_status(deployment):
    """The status the deployment controller and kubelets write once every replica runs."""
    name = deployment["metadata"]["name"]
    replicas = (deployment.get("spec") or {}).get("replicas", 1)
    current = deployment.get("status") or {}
    conditions, _changed = set_condition(current.get("conditions"), "Progressing", "True", "NewReplicaSetAvailable",
                                         f'ReplicaSet "{name}-{template_hash(deployment)}" has successfully progressed.')
    conditions, _changed = set_condition(conditions, "Available", "True", "MinimumReplicasAvailable",
                                         "Deployment has minimum availability.")
    for condition in conditions:
        condition.setdefault("lastUpdateTime", condition["lastTransitionTime"])
    status = {"observedGeneration": deployment["metadata"].get("generation", 1), "conditions": conditions}
    if replicas:
        status.update(replicas=replicas, updatedReplicas=replicas, readyReplicas=replicas, availableReplicas=replicas)
    return status


class DeploymentSimulation(ApiSimulation):
    """Rolls out every Deployment of a cluster (or of ``namespaces``) as if its pods ran; one whose image comes
    from ``UNPULLABLE_REGISTRY`` stays unavailable, as if its pods could not pull it."""

    name = "deployments"

    def __init__(self, api, namespaces=None, interval=0.5):
        super().__init__(api, interval)
        self.namespaces = list(namespaces or [])

    def sync(self):
        paths = [ns_path(ns, "deployments", group="/apis/apps/v1") for ns in self.namespaces] or [DEPLOYMENTS]
        for path in paths:
            for deployment in self.api.get(path).get("items") or []:
                self.roll_out(deployment)

    def roll_out(self, deployment):
        metadata = deployment["metadata"]
        if metadata.get("deletionTimestamp"):
            return
        current = deployment.get("status") or {}
        desired = stuck_status(deployment) if unpullable_images(deployment) else rolled_out_status(deployment)
        if desired == current:
            return
        path = ns_path(metadata["namespace"], "deployments", metadata["name"], group="/apis/apps/v1")
        # A merge patch: counts the desired status leaves out (zero, as the controller omits them) are removed.
        self.patch_status(path, deployment, dict(desired, **dict((key, None) for key in current if key not in desired)))


# --- shared operator behaviour --------------------------------------------------------------------

class OperatorSimulation(ApiSimulation):
    """An operator that runs as Deployment ``open-cluster-management/<operator>`` and reconciles a kind."""

    operator = None
    collection = None
    finalizer = None

    def __init__(self, api, interval=0.5):
        super().__init__(api, interval)
        self.written = {}  # Deployment path -> the container last written

    def operator_running(self):
        return deployment_available(get_or_none(
            self.api, ns_path(OPERATOR_NAMESPACE, "deployments", self.operator, group="/apis/apps/v1")))

    def sync(self):
        if not self.operator_running():
            self.status = f"operator Deployment {OPERATOR_NAMESPACE}/{self.operator} is not running"
            return
        for obj in self.api.get(self.collection).get("items") or []:
            path = f"{self.collection}/{obj['metadata']['name']}"
            finalizers = obj["metadata"].get("finalizers") or []
            finalizer = self.finalizer_of(obj)
            if obj["metadata"].get("deletionTimestamp"):
                if finalizer in finalizers:
                    self.clean_up(obj)
                    self.set_finalizers(path, obj, [f for f in finalizers if f != finalizer])
                    _log(self.name, f"{obj['kind']} {obj['metadata']['name']}: cleaned up, finalizer removed")
                continue
            if finalizer not in finalizers:
                self.set_finalizers(path, obj, finalizers + [finalizer])
                continue  # the next round works on the new resourceVersion
            status = self.reconcile(obj)
            current = obj.get("status") or {}
            if status != current:
                self.patch_status(path, obj, status)

    def finalizer_of(self, obj):
        return self.finalizer

    def ensure_namespace(self, name):
        if get_or_none(self.api, f"/api/v1/namespaces/{name}") is None:
            create_if_missing(self.api, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                               "metadata": {"name": name}})

    def ensure_deployment(self, namespace, name, image, args, resources=None):
        """Create the operand Deployment, or update it when what this operator wants changed; return it as stored.

        The API server canonicalizes quantities (``1000m`` becomes ``1``), so the wanted container is
        compared with what this simulation last wrote, not with the stored object.
        """
        labels = {"app": name}
        container = {"name": name, "image": image, "args": args, "resources": resources or {}}
        path = ns_path(namespace, "deployments", name, group="/apis/apps/v1")
        current = get_or_none(self.api, path)
        if current is None:
            create_if_missing(self.api, ns_path(namespace, "deployments", group="/apis/apps/v1"), {
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                         "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}}})
        elif self.written.get(path) != container:
            self.api.patch(path, {"spec": {"template": {"spec": {"containers": [container]}}}})
        else:
            return current
        self.written[path] = container
        return get_or_none(self.api, path)

    def conditions(self, obj, *wanted):
        """The object's conditions with each ``(type, status, reason, message)`` set, observedGeneration added."""
        conditions = (obj.get("status") or {}).get("conditions")
        for condition_type, status, reason, message in wanted:
            conditions, _changed = set_condition(conditions, condition_type, status, reason, message)
        generation = obj["metadata"].get("generation", 1)
        for condition in conditions:
            if condition["type"] in [w[0] for w in wanted]:
                condition["observedGeneration"] = generation
        return conditions


def resource_requirements(spec):
    """Container resources from a ClusterManager/Klusterlet ``resourceRequirement`` (type ResourceRequirement)."""
    requirement = spec.get("resourceRequirement") or {}
    if requirement.get("type") == "ResourceRequirement":
        return dict(requirement.get("resourceRequirements") or {})
    if requirement.get("type") == "BestEffort":
        return {}
    return {"requests": {"cpu": "2m", "memory": "16Mi"}}  # the operators' Default class


# --- cluster-manager ------------------------------------------------------------------------------

class ClusterManagerOperatorSimulation(OperatorSimulation):
    """The hub operator: ClusterManager -> hub controllers in open-cluster-management-hub, conditions."""

    name = "cluster-manager-operator"
    operator = "cluster-manager"
    collection = CLUSTER_MANAGERS
    finalizer = CLUSTER_MANAGER_FINALIZER

    @staticmethod
    def components(cm):
        """{deployment name: (image, args)} of the hub controllers this ClusterManager asks for."""
        spec = cm.get("spec") or {}
        name = cm["metadata"]["name"]
        registration = spec.get("registrationImagePullSpec", "quay.io/open-cluster-management/registration")
        work = spec.get("workImagePullSpec", "quay.io/open-cluster-management/work")
        placement = spec.get("placementImagePullSpec", "quay.io/open-cluster-management/placement")
        addon = spec.get("addOnManagerImagePullSpec", "quay.io/open-cluster-management/addon-manager")
        result = {
            f"{name}-registration-controller": (registration, ["/registration", "controller"]),
            f"{name}-registration-webhook": (registration, ["/registration", "webhook-server"]),
            f"{name}-work-webhook": (work, ["/work", "webhook-server"]),
            f"{name}-placement-controller": (placement, ["/placement", "controller"]),
            f"{name}-addon-manager-controller": (addon, ["/addon", "manager"]),
        }
        drivers = ((spec.get("registrationConfiguration") or {}).get("registrationDrivers") or [])
        if any(d.get("authType") == "grpc" for d in drivers):
            result[f"{name}-grpc-server"] = (registration, ["/registration", "grpc"])
        return result

    def reconcile(self, cm):
        self.ensure_namespace(HUB_NAMESPACE)
        resources = resource_requirements(cm.get("spec") or {})
        deployments = {}
        for deployment, (image, args) in self.components(cm).items():
            deployments[deployment] = self.ensure_deployment(HUB_NAMESPACE, deployment, image, args, resources)
        name = cm["metadata"]["name"]
        if f"{name}-grpc-server" in deployments:
            self.publish_signer_ca()
        registration = deployments[f"{name}-registration-controller"]
        placement = deployments[f"{name}-placement-controller"]
        registration_condition = (
            ("HubRegistrationDegraded", "False", "RegistrationFunctional", "Registration is managing credentials")
            if not unavailable_pods(registration) else
            ("HubRegistrationDegraded", "True", "UnavailableRegistrationPod",
             f'{unavailable_pods(registration)} of requested instances are unavailable of registration deployment '
             f'"{HUB_NAMESPACE}" "{name}-registration-controller"'))
        placement_condition = (
            ("HubPlacementDegraded", "False", "PlacementFunctional", "Placement is scheduling placement decisions")
            if not unavailable_pods(placement) else
            ("HubPlacementDegraded", "True", "UnavailablePlacementPod",
             f'{unavailable_pods(placement)} of requested instances are unavailable of placement deployment '
             f'"{HUB_NAMESPACE}" "{name}-placement-controller"'))
        rolling = [d for d, obj in deployments.items() if not deployment_available(obj)]
        progressing = (("Progressing", "True", "ClusterManagerDeploymentRolling",
                        f"deployments are rolling: {', '.join(rolling)}") if rolling else
                       ("Progressing", "False", "ClusterManagerUpToDate", "Components of cluster manager are up to date"))
        applied = ("Applied", "True", "ClusterManagerApplied", "Components of cluster manager are applied")
        status = dict(cm.get("status") or {})
        status["conditions"] = self.conditions(cm, applied, registration_condition, placement_condition, progressing)
        status["observedGeneration"] = cm["metadata"].get("generation", 1)
        return status

    def publish_signer_ca(self):
        """The CA the operator signs its servers' certificates with (the gRPC server's among them), as
        ConfigMap ``open-cluster-management-hub/ca-bundle-configmap`` key ``ca-bundle.crt``."""
        if get_or_none(self.api, ns_path(HUB_NAMESPACE, "configmaps", "ca-bundle-configmap")) is not None:
            return
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"cluster-manager-signer@{int(time.time())}")])
        start = datetime.datetime.now(datetime.timezone.utc)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(start)
                .not_valid_after(start + datetime.timedelta(days=365))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
        create_if_missing(self.api, ns_path(HUB_NAMESPACE, "configmaps"), {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ca-bundle-configmap", "namespace": HUB_NAMESPACE},
            "data": {"ca-bundle.crt": cert.public_bytes(serialization.Encoding.PEM).decode()}})

    def clean_up(self, cm):
        for deployment in self.components(cm):
            delete_if_present(self.api, ns_path(HUB_NAMESPACE, "deployments", deployment, group="/apis/apps/v1"))
        delete_if_present(self.api, f"/api/v1/namespaces/{HUB_NAMESPACE}")


# --- klusterlet -----------------------------------------------------------------------------------

class KlusterletOperatorSimulation(OperatorSimulation):
    """The member operator: Klusterlet -> agent Deployments in the agent namespace, conditions."""

    name = "klusterlet-operator"
    operator = "klusterlet"
    collection = KLUSTERLETS

    def finalizer_of(self, obj):
        return KLUSTERLET_HOSTED_FINALIZER if self.mode(obj) in HOSTED_MODES else KLUSTERLET_FINALIZER

    @staticmethod
    def mode(klusterlet):
        return ((klusterlet.get("spec") or {}).get("deployOption") or {}).get("mode") or "Default"

    def agent_namespace(self, klusterlet):
        """helpers.AgentNamespace: the Klusterlet's name in Hosted modes, else spec.namespace or the default."""
        if self.mode(klusterlet) in HOSTED_MODES:
            return klusterlet["metadata"]["name"]
        return (klusterlet.get("spec") or {}).get("namespace") or AGENT_NAMESPACE

    def agents(self, klusterlet):
        """{deployment name: (image, args)} of the agents."""
        spec = klusterlet.get("spec") or {}
        name = klusterlet["metadata"]["name"]
        registration = spec.get("registrationImagePullSpec", "quay.io/open-cluster-management/registration")
        work = spec.get("workImagePullSpec", "quay.io/open-cluster-management/work")
        cluster = f"--cluster-name={spec.get('clusterName', '')}"
        driver = ((spec.get("registrationConfiguration") or {}).get("registrationDriver") or {}).get("authType")
        # With the grpc driver the agents read the grpc configs of the bootstrap and hub kubeconfig Secrets.
        grpc = (["--registration-auth=grpc", "--grpc-bootstrap-config=/spoke/bootstrap/config.yaml",
                 "--grpc-config=/spoke/hub-kubeconfig/config.yaml"] if driver == "grpc" else [])
        work_grpc = ["--workload-source-driver=grpc", "--workload-source-config=/spoke/hub-kubeconfig/config.yaml"] if grpc else []
        if self.mode(klusterlet) in SINGLETON_MODES:
            return {f"{name}-agent": (spec.get("imagePullSpec", registration),
                                      ["/registration-operator", "agent", cluster] + grpc + work_grpc)}
        return {f"{name}-registration-agent": (registration, ["/registration", "agent", cluster] + grpc),
                f"{name}-work-agent": (work, ["/work", "agent", cluster] + work_grpc)}

    def secret(self, namespace, name):
        return get_or_none(self.api, ns_path(namespace, "secrets", name))

    def reconcile(self, klusterlet):
        namespace = self.agent_namespace(klusterlet)
        wanted = []
        if self.mode(klusterlet) in HOSTED_MODES:
            external = self.secret(namespace, "external-managed-kubeconfig")
            if not (external or {}).get("data", {}).get("kubeconfig"):
                wanted.append(("ReadyToApply", "False", "KlusterletPrepareFailed",
                               f'Failed to build managed cluster clients: secret "{namespace}/external-managed-kubeconfig" '
                               "has no kubeconfig"))
                status = dict(klusterlet.get("status") or {}, conditions=self.conditions(klusterlet, *wanted))
                return status
            wanted.append(("ReadyToApply", "True", "KlusterletPrepared", "Klusterlet is ready to apply"))
        self.ensure_namespace(namespace)
        resources = resource_requirements(klusterlet.get("spec") or {})
        deployments = {name: self.ensure_deployment(namespace, name, image, args, resources)
                       for name, (image, args) in self.agents(klusterlet).items()}
        wanted.append(("Applied", "True", "KlusterletApplied", "Klusterlet Component Applied"))
        missing = [d for d, obj in deployments.items() if not (obj and (obj.get("status") or {}).get("availableReplicas"))]
        if missing:
            obj = deployments[missing[0]]
            wanted.append(("Available", "False", "NoAvailablePods",
                           f'{(obj or {}).get("status", {}).get("availableReplicas", 0)} of requested instances are '
                           f'available of deployment "{namespace}" "{missing[0]}"'))
        else:
            wanted.append(("Available", "True", "KlusterletAvailable", f"deployments are ready: {','.join(deployments)}"))
        names = list(deployments)
        for condition_type, deployment in (("RegistrationDesiredDegraded", names[0]), ("WorkDesiredDegraded", names[-1])):
            obj = deployments[deployment]
            if unavailable_pods(obj):
                wanted.append((condition_type, "True", "UnavailablePods",
                               f'{unavailable_pods(obj)} of requested instances are unavailable of deployment '
                               f'"{namespace}" "{deployment}"'))
            else:
                wanted.append((condition_type, "False", "DeploymentsFunctional",
                               f"deployments replicas are desired: {obj['spec'].get('replicas', 1)}"))
        wanted.append(self.hub_connection(namespace))
        status = dict(klusterlet.get("status") or {})
        status["conditions"] = self.conditions(klusterlet, *wanted)
        status["observedGeneration"] = klusterlet["metadata"].get("generation", 1)
        return status

    def hub_connection(self, namespace):
        """HubConnectionDegraded from the bootstrap and hub kubeconfig Secrets of the agent namespace."""
        hub = self.secret(namespace, "hub-kubeconfig-secret")
        kubeconfig = (hub or {}).get("data", {}).get("kubeconfig")
        if kubeconfig:
            clusters = (yaml.safe_load(base64.b64decode(kubeconfig)) or {}).get("clusters") or [{}]
            server = (clusters[0].get("cluster") or {}).get("server", "")
            return ("HubConnectionDegraded", "False", "HubConnectionFunctional",
                    f"Hub kubeconfig secret {namespace}/hub-kubeconfig-secret to apiserver {server} is working")
        bootstrap = self.secret(namespace, "bootstrap-hub-kubeconfig")
        prefix = "BootstrapSecretFunctional" if (bootstrap or {}).get("data", {}).get("kubeconfig") else "BootstrapSecretMissing"
        return ("HubConnectionDegraded", "True", f"{prefix},HubKubeConfigSecretMissing",
                f'Failed to get hub kubeconfig secret "{namespace}/hub-kubeconfig-secret"')

    def clean_up(self, klusterlet):
        namespace = self.agent_namespace(klusterlet)
        for deployment in self.agents(klusterlet):
            delete_if_present(self.api, ns_path(namespace, "deployments", deployment, group="/apis/apps/v1"))
        delete_if_present(self.api, f"/api/v1/namespaces/{namespace}")


# --- Karmada's agent CSR approver -----------------------------------------------------------------

KARMADA_AGENT_PREFIX = "system:karmada:agent:"
KARMADA_AGENTS_GROUP = "system:karmada:agents"
AGENT_USAGES = {"digital signature", "key encipherment", "client auth"}
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


class KarmadaAgentCsrApproverSimulation(ApiSimulation):
    """karmada-controller-manager's ``agentcsrapproving`` controller: approves pending Karmada agent CSRs
    whose requester may, by a SubjectAccessReview, ``create`` the subresource
    ``certificatesigningrequests/clusteragent`` (``selfclusteragent`` when the agent renews itself)."""

    name = "karmada-csr-approver"

    def sync(self):
        for csr in self.api.get(CSRS).get("items") or []:
            conditions = (csr.get("status") or {}).get("conditions") or []
            if any(c.get("type") in ("Approved", "Denied", "Failed") for c in conditions):
                continue
            subresource = self.recognize(csr)
            if subresource and self.allowed(csr["spec"], subresource):
                csr.setdefault("status", {})["conditions"] = conditions + [{
                    "type": "Approved", "status": "True", "reason": "AutoApproved",
                    "message": "Auto approving karmada agent certificate after SubjectAccessReview.",
                    "lastUpdateTime": now(), "lastTransitionTime": now()}]
                try:
                    self.api.put(f"{CSRS}/{csr['metadata']['name']}/approval", csr)
                except ApiError as e:
                    if e.status not in (404, 409):
                        raise
                    continue
                _log(self.name, f"approved CSR {csr['metadata']['name']} of {csr['spec'].get('username')}")

    @staticmethod
    def recognize(csr):
        """``clusteragent``/``selfclusteragent`` for a Karmada agent CSR (subject, signer, usages), else None."""
        spec = csr.get("spec") or {}
        if spec.get("signerName") != "kubernetes.io/kube-apiserver-client" or set(spec.get("usages") or []) != AGENT_USAGES:
            return None
        try:
            request = x509.load_pem_x509_csr(base64.b64decode(spec.get("request") or ""))
        except ValueError:
            return None
        names = [a.value for a in request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        groups = [a.value for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        if len(names) != 1 or not names[0].startswith(KARMADA_AGENT_PREFIX) or groups != [KARMADA_AGENTS_GROUP]:
            return None
        return "selfclusteragent" if spec.get("username") == names[0] else "clusteragent"

    def allowed(self, spec, subresource):
        review = self.api.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": spec.get("username"), "groups": spec.get("groups") or [], "uid": spec.get("uid"),
                     "extra": spec.get("extra") or {},
                     "resourceAttributes": {"group": "certificates.k8s.io", "resource": "certificatesigningrequests",
                                            "subresource": subresource, "verb": "create"}}})
        return bool((review.get("status") or {}).get("allowed"))


def simulations_for(lab, interval=0.5):
    """Every simulation of this module for a lab: deployments and the klusterlet operator on every
    cluster; the cluster-manager operator and Karmada's agent CSR approver on the hub."""
    sims = []
    for name, info in lab.clusters.items():
        api = ApiClient.for_cluster(info)
        sims += [DeploymentSimulation(api, interval=interval), KlusterletOperatorSimulation(api, interval=interval)]
        if name == lab.hub:
            sims += [ClusterManagerOperatorSimulation(api, interval=interval),
                     KarmadaAgentCsrApproverSimulation(api, interval=interval)]
    return sims


def _build(lab, interval):
    return simulations_for(lab, interval), lambda: _log(
        "operators", f"simulating deployments and OCM operators on {', '.join(lab.clusters)}; Ctrl-C stops")


def main(argv=None):
    return run_lab_cli(__doc__.split("\n\n", 1)[0], _build, default_interval=0.5, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
