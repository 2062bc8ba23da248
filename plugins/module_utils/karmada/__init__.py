# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Karmada facts: kinds, names, the normalized view of a member Cluster, pull-registration and push-join objects."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import re
from urllib.parse import urlsplit

from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import DNS1123_LABEL_RE, Kind, condition_is, conditions_of
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.hub_record import CLUSTER_ID_ANNOTATION

CLUSTER = Kind("cluster.karmada.io/v1alpha1", "Cluster", "clusters", False)
WORK = Kind("work.karmada.io/v1alpha1", "Work", "works", True)
# The taint karmadactl cordon adds to a Cluster's spec.taints (and uncordon removes): the scheduler places nothing new
# there (pkg/apis/cluster/v1alpha1/well_known_constants.go TaintClusterUnscheduler).
CORDON_TAINT = {"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule"}
# The labels karmadactl init gives the hub objects members need to register.
HUB_LABELS = {"karmada.io/bootstrapping": "rbac-defaults"}


# --- Pull registration (karmadactl register / unregister), docs/architecture.md 4.4 -------------------

# The agent's identity on the hub: its client certificate's subject.
AGENT_USER_PREFIX = "system:karmada:agent:"
AGENTS_GROUP = "system:karmada:agents"
# The identity karmadactl register gives its short-lived, all-powerful RBAC helper certificate: never an agent's.
RBAC_GENERATOR = AGENT_USER_PREFIX + "rbac-generator"
DEFAULT_CERT_EXPIRATION_SECONDS = 365 * 24 * 3600
# Where the agent runs on the member, and the kubeconfig it reads (karmadactl register's names).
AGENT_NAMESPACE = "karmada-system"
AGENT_NAME = "karmada-agent"  # Deployment, ClusterRole and ClusterRoleBinding
AGENT_SERVICE_ACCOUNT = "karmada-agent-sa"
AGENT_KUBECONFIG_SECRET = "karmada-kubeconfig"  # also the key inside the Secret
AGENT_KUBECONFIG_CLUSTER = "karmada-apiserver"
# Hub-side permissions of an agent (docs/architecture.md, "Least privilege"): karmadactl register's rules, every verb
# that can name an object limited to the agent's own (its Cluster, its Secrets, its Lease); ``create``, ``list`` and
# ``watch``, which cannot be limited by name, only where the agent needs them. Secrets and Works only in its own
# namespaces. An agent can neither read nor change another member's objects.


def agent_cluster_rules(cluster_name):
    """The agent's cluster-wide rules: its own Cluster and its status, and what every agent reads."""
    own = [cluster_name]
    return [
        {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "resourceNames": own,
         "verbs": ["get", "update", "patch", "delete"]},
        {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["create", "list", "watch"]},
        {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/status"], "resourceNames": own,
         "verbs": ["update", "patch"]},
        {"apiGroups": ["config.karmada.io"],
         "resources": ["resourceinterpreterwebhookconfigurations", "resourceinterpretercustomizations"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
        {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["get", "create"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
    ]


def agent_secret_rules(cluster_name):
    """The agent's rules in the credential namespace: its own Secrets and Lease (the Cluster's heartbeat)."""
    return [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [cluster_name, impersonator_secret_name(cluster_name)],
         "verbs": ["get", "patch", "update"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [cluster_name],
         "verbs": ["get", "update"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
    ]


AGENT_WORK_RULES = [
    {"apiGroups": ["work.karmada.io"], "resources": ["works"],
     "verbs": ["get", "create", "list", "watch", "update", "delete"]},
    {"apiGroups": ["work.karmada.io"], "resources": ["works/status"], "verbs": ["patch", "update"]},
]


def agent_user(cluster_name):
    """The user name of a cluster's agent (its certificate's common name)."""
    return AGENT_USER_PREFIX + cluster_name


def agent_role_name(cluster_name, suffix=""):
    """``system:karmada:<cluster>:agent`` and its ``-secret`` / ``-work`` variants."""
    return "system:karmada:%s:agent%s" % (cluster_name, suffix)


def _role_and_binding(name, namespace, rules, subject):
    """A Role and RoleBinding (ClusterRole and ClusterRoleBinding without namespace) of one name."""
    if namespace:
        role_kind, binding_kind, metadata = resources.ROLE, resources.ROLE_BINDING, {"name": name, "namespace": namespace}
    else:
        role_kind, binding_kind, metadata = resources.CLUSTER_ROLE, resources.CLUSTER_ROLE_BINDING, {"name": name}
    return [
        (role_kind, {"metadata": dict(metadata), "rules": copy.deepcopy(rules)}),
        (binding_kind, {"metadata": dict(metadata), "subjects": [dict(subject)],
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind.kind, "name": name}}),
    ]


def agent_hub_objects(cluster_name):
    """``(Kind, manifest)`` pairs of the hub-side agent RBAC and namespaces, in creation order."""
    user = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": agent_user(cluster_name)}
    es_namespace = execution_namespace(cluster_name)
    return ([(resources.NAMESPACE, system_namespace(DEFAULT_CLUSTER_NAMESPACE)),
             (resources.NAMESPACE, {"metadata": {"name": es_namespace}})]
            + _role_and_binding(agent_role_name(cluster_name), None, agent_cluster_rules(cluster_name), user)
            + _role_and_binding(agent_role_name(cluster_name, "-secret"), DEFAULT_CLUSTER_NAMESPACE,
                                agent_secret_rules(cluster_name), user)
            + _role_and_binding(agent_role_name(cluster_name, "-work"), es_namespace, AGENT_WORK_RULES, user))


def agent_csr(name, request_pem, expiration_seconds):
    """The CertificateSigningRequest karmadactl register posts with the bootstrap token."""
    return {
        "apiVersion": resources.CSR.api_version, "kind": resources.CSR.kind,
        "metadata": {"name": name, "labels": dict(SYSTEM_LABELS)},
        "spec": {
            "request": pki.b64(request_pem),
            "signerName": resources.CSR_SIGNER,
            "usages": list(resources.CSR_USAGES),
            "expirationSeconds": expiration_seconds,
        },
    }


def agent_kubeconfig(server, ca_pem, cluster_name, cert_pem, key_pem, proxy_url=None):
    """The kubeconfig karmada-agent uses: cluster ``karmada-apiserver`` (through ``proxy_url`` when given), user ``<cluster>``."""
    parts = dict(server=server, ca_pem=ca_pem, client_cert_pem=cert_pem, client_key_pem=key_pem, proxy_url=proxy_url)
    return pki.kubeconfig(parts, AGENT_KUBECONFIG_CLUSTER, cluster_name, "%s@%s" % (cluster_name, AGENT_KUBECONFIG_CLUSTER))


def agent_kubeconfig_secret(kubeconfig_text):
    """Secret ``karmada-system/karmada-kubeconfig`` holding the agent kubeconfig."""
    return {"metadata": {"name": AGENT_KUBECONFIG_SECRET, "namespace": AGENT_NAMESPACE, "labels": dict(SYSTEM_LABELS)},
            "type": "Opaque", "data": {AGENT_KUBECONFIG_SECRET: pki.b64(kubeconfig_text)}}


# karmadactl register defaults the agent image to its own release; this is the latest v1.18 patch release
# (karmada-io/karmada docs/CHANGELOG/CHANGELOG-1.18.md). Role agent_install's karmada_version sets it from the inventory.
DEFAULT_AGENT_IMAGE = "docker.io/karmada/karmada-agent:v1.18.2"
# The agent's built-in certificate rotation (cmd/agent/app/options): its controller, flags and their defaults.
CERT_ROTATION_CONTROLLER = "certRotation"
CERT_ROTATION_CHECKING_INTERVAL = "5m"
CERT_ROTATION_REMAINING_TIME_THRESHOLD = 0.2
# The pod-template annotations with the fingerprints of what the agent reads only at start, from its kubeconfig: its
# certificate, and the hub it reaches (URL, proxy, CA bundle). A new certificate or a moved hub rolls the agent.
CERTIFICATE_ANNOTATION = "multicluster.fleet/agent-certificate-sha256"
HUB_ANNOTATION = "multicluster.fleet/agent-hub-sha256"


def hub_fingerprint(server, ca_pem, proxy_url=None):
    """SHA-256 (lowercase hex) of how an agent kubeconfig reaches the hub: its URL, ``proxy-url`` and the pins of its CA
    bundle (:data:`HUB_ANNOTATION`)."""
    text = "\n".join([server or "", proxy_url or ""] + sorted(bootstrap.pins_of_bundle(ca_pem)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def agent_objects(reg, api_endpoint, certificate_sha256=None, hub_sha256=None):
    """The karmada-agent as ``karmadactl register`` deploys it, as manifests in the order they are applied.

    Namespace ``karmada-system``, ServiceAccount ``karmada-agent-sa``, ClusterRole and ClusterRoleBinding
    ``karmada-agent`` and Deployment ``karmada-agent`` reading the hub kubeconfig of Secret
    ``karmada-system/karmada-kubeconfig``, with karmadactl's arguments. The agent creates the Cluster.

    The agent's settings are those of the registration ``reg`` (a :class:`registrar.Registration`): its
    ``cluster_name``, ``agent_image``, ``agent_replicas``, ``provider``, ``region``, ``zones``,
    ``proxy_server_address`` and ``cert_rotation``, a ``(checking interval, remaining time threshold)`` pair that
    turns on the agent's certificate rotation as ``karmadactl register --enable-cert-rotation`` does (None: off).
    ``api_endpoint`` is the member's API server URL the agent reports. ``certificate_sha256``, the fingerprint of the
    agent's certificate, is a pod-template annotation (:data:`CERTIFICATE_ANNOTATION`), so a new one rolls the agent; so is
    ``hub_sha256`` (:data:`HUB_ANNOTATION`, :func:`hub_fingerprint`), so a kubeconfig rewritten for a moved hub or a new
    hub CA rolls it too (the agent reads its kubeconfig only at start).
    """
    labels = dict(SYSTEM_LABELS)
    meta = {"name": AGENT_NAME, "labels": labels}
    cert_rotation = reg.cert_rotation
    controllers = ["*", CERT_ROTATION_CONTROLLER] if cert_rotation else ["*"]
    rotation = ["--cert-rotation-checking-interval=%s" % cert_rotation[0],
                "--cert-rotation-remaining-time-threshold=%s" % cert_rotation[1]] if cert_rotation else []
    template_meta = {"labels": {"app": AGENT_NAME}}
    fingerprints = ((CERTIFICATE_ANNOTATION, certificate_sha256), (HUB_ANNOTATION, hub_sha256))
    annotations = dict((key, value) for key, value in fingerprints if value)
    if annotations:
        template_meta["annotations"] = annotations
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": AGENT_NAMESPACE, "labels": dict(labels)}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": AGENT_SERVICE_ACCOUNT, "namespace": AGENT_NAMESPACE, "labels": dict(labels)}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": copy.deepcopy(meta),
         "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": copy.deepcopy(meta),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AGENT_NAME},
         "subjects": [{"kind": "ServiceAccount", "name": AGENT_SERVICE_ACCOUNT, "namespace": AGENT_NAMESPACE}]},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": AGENT_NAME, "namespace": AGENT_NAMESPACE, "labels": {"app": AGENT_NAME}},
         "spec": {
             "replicas": reg.agent_replicas,
             "selector": {"matchLabels": {"app": AGENT_NAME}},
             "template": {
                 "metadata": template_meta,
                 "spec": {
                     "serviceAccountName": AGENT_SERVICE_ACCOUNT,
                     "containers": [{
                         "name": AGENT_NAME,
                         "image": reg.agent_image,
                         "imagePullPolicy": "IfNotPresent",
                         "command": [
                             "/bin/karmada-agent",
                             "--karmada-kubeconfig=/etc/kubeconfig/%s" % AGENT_KUBECONFIG_SECRET,
                             "--cluster-name=%s" % reg.cluster_name,
                             "--cluster-api-endpoint=%s" % api_endpoint,
                             "--cluster-provider=%s" % (reg.provider or ""),
                             "--cluster-region=%s" % (reg.region or ""),
                             "--cluster-zones=%s" % ",".join(reg.zones or ()),
                             "--controllers=%s" % ",".join(controllers),
                             "--proxy-server-address=%s" % (reg.proxy_server_address or ""),
                             "--leader-elect-resource-namespace=%s" % AGENT_NAMESPACE,
                             "--cluster-namespace=%s" % DEFAULT_CLUSTER_NAMESPACE,
                             "--cluster-status-update-frequency=10s",
                             "--metrics-bind-address=:8080",
                             "--health-probe-bind-address=0.0.0.0:10357",
                             "--v=2",
                         ] + rotation,
                         "ports": [{"containerPort": 8080, "name": "metrics", "protocol": "TCP"}],
                         "volumeMounts": [{"name": "kubeconfig", "mountPath": "/etc/kubeconfig"}],
                     }],
                     "tolerations": [{"key": "node-role.kubernetes.io/master", "operator": "Exists"}],
                     "volumes": [{"name": "kubeconfig", "secret": {"secretName": AGENT_KUBECONFIG_SECRET}}],
                 },
             },
         }},
    ]


def agent_member_objects():
    """``(Kind, name, namespace)`` of the agent's member objects, in the order unregister deletes them."""
    return [
        (resources.DEPLOYMENT, AGENT_NAME, AGENT_NAMESPACE),
        (resources.CLUSTER_ROLE_BINDING, AGENT_NAME, None),
        (resources.CLUSTER_ROLE, AGENT_NAME, None),
        (resources.SERVICE_ACCOUNT, AGENT_SERVICE_ACCOUNT, AGENT_NAMESPACE),
        (resources.SECRET, AGENT_KUBECONFIG_SECRET, AGENT_NAMESPACE),
    ]


def is_push(obj):
    """Cluster ``obj`` (or None) is a Push member: karmadactl join made it, and no agent runs for it."""
    return ((obj or {}).get("spec") or {}).get("syncMode") == "Push"


def summarize_cluster(obj):
    """The engine-neutral summary :func:`hub_members.summarize` returns for a Karmada ``Cluster``."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    zones = spec.get("zones") or ([spec["zone"]] if spec.get("zone") else [])
    return {
        "name": obj["metadata"]["name"],
        "engine": "karmada",
        "mode": spec.get("syncMode"),
        "id": spec.get("id"),
        "api_endpoint": spec.get("apiEndpoint"),
        "kubernetes_version": status.get("kubernetesVersion"),
        "ready": condition_is(obj, "Ready"),
        "joined": None,
        "accepted": None,
        "provider": spec.get("provider"),
        "region": spec.get("region"),
        "zones": zones,
        "labels": obj["metadata"].get("labels") or {},
        "conditions": conditions_of(obj),
    }


# --- Push registration (karmadactl join / unjoin), docs/architecture.md 4.3 --------------------------

DEFAULT_CLUSTER_NAMESPACE = "karmada-cluster"
LEASE_DURATION_SECONDS = 40  # the agent's Lease karmada-cluster/<cluster>, renewed every quarter of it
SYSTEM_LABEL = "karmada.io/system"
SYSTEM_LABELS = {SYSTEM_LABEL: "true"}
IMPERSONATOR_SERVICE_ACCOUNT = "karmada-impersonator"
CLUSTER_FINALIZER = "karmada.io/cluster-controller"
EXECUTION_FINALIZER = "karmada.io/execution-controller"
SERVICE_ACCOUNT_NAME_ANNOTATION = "kubernetes.io/service-account.name"
SERVICE_ACCOUNT_UID_ANNOTATION = "kubernetes.io/service-account.uid"
SERVICE_ACCOUNT_TOKEN_TYPE = "kubernetes.io/service-account-token"
# Keys of the hub Secret the controllers read (cluster.karmada.io SecretTokenKey / SecretCADataKey).
TOKEN_KEY = "token"
CA_KEY = "caBundle"
# What karmadactl grants the member ServiceAccount: everything, and GET on every non-resource URL.
CLUSTER_ROLE_RULES = [
    {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
    {"nonResourceURLs": ["*"], "verbs": ["get"]},
]
CLUSTER_NAME_MAX_LENGTH = 48  # "karmada-es-" + name must stay a valid namespace name
# Namespaces that unjoin must never delete on a member.
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
PROXY_SCHEMES = ("http", "https", "socks5")


def service_account_name(cluster_name):
    """The member ServiceAccount whose token the hub uses (``karmada-<cluster>``)."""
    return "karmada-" + cluster_name


def cluster_role_name(cluster_name):
    """ClusterRole and ClusterRoleBinding name on the member."""
    return "karmada-controller-manager:" + service_account_name(cluster_name)


def impersonator_secret_name(cluster_name):
    """The hub Secret holding the impersonator token."""
    return cluster_name + "-impersonator"


def execution_namespace(cluster_name):
    """The hub namespace Karmada keeps a cluster's Works in."""
    return "karmada-es-" + cluster_name


def validate_cluster_name(name):
    """Raise :class:`FleetError` unless ``name`` is a DNS-1123 label of 1 to 48 characters (Karmada's rule) whose agent
    identity is an agent's: ``rbac-generator`` would be karmadactl's all-powerful helper (:data:`RBAC_GENERATOR`)."""
    if not isinstance(name, str) or not name or len(name) > CLUSTER_NAME_MAX_LENGTH or not DNS1123_LABEL_RE.match(name):
        raise FleetError("invalid cluster name %r: Karmada cluster names are DNS-1123 labels (lowercase letters, "
                         "digits and '-', starting and ending with a letter or digit) of 1 to %d characters"
                         % (name, CLUSTER_NAME_MAX_LENGTH))
    if agent_user(name) == RBAC_GENERATOR:
        raise FleetError("refusing cluster name %r: %s is karmadactl's all-powerful helper identity, not an agent's"
                         % (name, RBAC_GENERATOR))


def validate_cluster_namespace(namespace):
    """The namespace holding the credentials: a DNS-1123 label that is not one of Kubernetes' own."""
    if not namespace or len(namespace) > 63 or not DNS1123_LABEL_RE.match(namespace):
        raise FleetError("invalid cluster_namespace %r: it must be a DNS-1123 label of at most 63 characters" % namespace)
    if namespace in RESERVED_NAMESPACES:
        raise FleetError("cluster_namespace %r is reserved by Kubernetes: unjoin deletes this namespace on the "
                         "member, so use a namespace of its own (default %s)" % (namespace, DEFAULT_CLUSTER_NAMESPACE))


def validate_zones(zones):
    """Zones are non-empty, distinct and free of whitespace and commas (Karmada passes them as a comma list)."""
    for zone in zones:
        if not zone or re.search(r"[\s,]", zone):
            raise FleetError("invalid zone %r in zones: each zone is a non-empty name without spaces or commas" % zone)
    duplicates = sorted(set(z for z in zones if zones.count(z) > 1))
    if duplicates:
        raise FleetError("zones lists %s more than once" % ", ".join(duplicates))


def validate_api_endpoint(url, option="api_endpoint"):
    """An http(s) URL with a host and no user info, query or fragment (Karmada's apiEndpoint rules).

    ``option`` names the option the URL came from in the message.
    """
    parts = urlsplit(url)
    problem = None
    if parts.scheme not in ("https", "http"):
        problem = "the scheme must be https (or http)"
    elif not parts.hostname:
        problem = "it has no host"
    elif parts.username is not None:
        problem = "user information is not permitted"
    elif parts.query or parts.fragment:
        problem = "query parameters and fragments are not permitted"
    elif not _valid_port(parts):
        problem = "the port is not a number between 1 and 65535"
    if problem:
        raise FleetError("invalid %s %r: %s; expected a URL such as https://10.0.0.7:6443" % (option, url, problem))


def _valid_port(parts):
    try:
        return parts.port is None or parts.port > 0
    except ValueError:
        return False


def validate_proxy_url(url, option="proxy_url", schemes=PROXY_SCHEMES):
    """A proxy URL with one of ``schemes`` (default http, https or socks5) and a host; ``option`` names it in the message."""
    parts = urlsplit(url)
    if parts.scheme not in schemes or not parts.hostname or not _valid_port(parts):
        raise FleetError("invalid %s %r: expected %s://host:port" % (option, url, "|".join(schemes)))


def system_namespace(name):
    """A namespace labelled as Karmada's (the credential namespace on the hub and on the member)."""
    return {"metadata": {"name": name, "labels": dict(SYSTEM_LABELS)}}


def member_service_account(name, namespace):
    return {"metadata": {"name": name, "namespace": namespace, "labels": dict(SYSTEM_LABELS)}}


def service_account_token_secret(service_account, namespace):
    """The token Secret karmadactl creates for a ServiceAccount (clusters >= 1.24 create none themselves).

    Kubernetes' token controller fills in ``token``, ``ca.crt`` and ``namespace``.
    """
    return {"metadata": {"name": service_account, "namespace": namespace,
                         "annotations": {SERVICE_ACCOUNT_NAME_ANNOTATION: service_account}},
            "type": SERVICE_ACCOUNT_TOKEN_TYPE}


def member_cluster_role(cluster_name):
    return {"metadata": {"name": cluster_role_name(cluster_name), "labels": dict(SYSTEM_LABELS)},
            "rules": copy.deepcopy(CLUSTER_ROLE_RULES)}


def member_cluster_role_binding(cluster_name, namespace):
    name = cluster_role_name(cluster_name)
    return {"metadata": {"name": name, "labels": dict(SYSTEM_LABELS)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": service_account_name(cluster_name), "namespace": namespace}]}


def recorded_cluster_id(obj):
    """The cluster id a Cluster stands for (``spec.id``), or None."""
    return (obj.get("spec") or {}).get("id")


def endpoints_of(obj):
    """The API server URLs a Cluster records."""
    return [url for url in [(obj.get("spec") or {}).get("apiEndpoint")] if url]


def owner_reference(cluster_obj):
    """The controller reference from the hub Secrets to their Cluster (garbage collected with it)."""
    return {"apiVersion": CLUSTER.api_version, "kind": CLUSTER.kind, "name": cluster_obj["metadata"]["name"],
            "uid": cluster_obj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def hub_secret(name, namespace, data, owner):
    """A hub Secret of base64 ``data`` owned by the Cluster object ``owner``."""
    return {"metadata": {"name": name, "namespace": namespace, "labels": dict(SYSTEM_LABELS),
                         "ownerReferences": [owner_reference(owner)]},
            "type": "Opaque", "data": dict(data)}


def push_cluster(options, cluster_id):
    """The ``Cluster`` karmadactl join creates, with ``syncMode: Push``, for the cluster with that id.

    ``options`` are those of module cluster_join: ``cluster_name``, ``cluster_namespace`` (of its Secrets),
    ``api_endpoint`` and, optional, ``insecure_skip_tls_verification``, ``proxy_url``, ``provider``, ``region``
    and ``zones``. Optional settings that are None or missing are left out (not managed); an empty string or list
    asks for the field to be removed and stays in the spec as None (a JSON merge patch deletes it). A false
    ``insecureSkipTLSVerification`` is None for the same reason: Karmada omits false.
    """
    name, namespace = options["cluster_name"], options["cluster_namespace"]
    spec = {
        "syncMode": "Push",
        "apiEndpoint": options["api_endpoint"],
        "id": cluster_id,
        "secretRef": {"namespace": namespace, "name": name},
        "impersonatorSecretRef": {"namespace": namespace, "name": impersonator_secret_name(name)},
        "insecureSkipTLSVerification": True if options.get("insecure_skip_tls_verification") else None,
    }
    for key, option in (("proxyURL", "proxy_url"), ("provider", "provider"), ("region", "region"), ("zones", "zones")):
        value = options.get(option)
        if value is not None:
            spec[key] = value or None
    return {"metadata": {"name": name, "annotations": {CLUSTER_ID_ANNOTATION: cluster_id}}, "spec": spec}
