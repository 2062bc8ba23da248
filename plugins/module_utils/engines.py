# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engines, Karmada and OCM, as objects: one per engine, chosen once from the ``engine`` option.

An :class:`Engine` holds what the operations need to know of an engine and the rules that differ between them: the
hub kind of a member cluster, its names and readiness, the identity its agents ask a certificate for (docs/architecture.md
4.4, 4.6), which agent CSRs are a cluster's and what accepting it takes, its hub objects' names, how a member registers
with it and which registration options are its own. The kinds, names and object builders themselves are in the fact
modules ``karmada.py`` and ``ocm.py``; the operations with much per-engine code keep one class per engine, chosen by
the engine's name (``work.WORKS``, ``register.FLOWS``, ``hub.REGISTRATION_OBJECTS``).

``get(name)`` returns the engine of a name (or the engine given); :data:`NAMES` are the choices of every module's
``engine`` option.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.multicluster.fleet.plugins.module_utils import agents, bootstrap, client, karmada, ocm, resources, versions
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# The agent part of an OCM agent's common name: one name, no colon.
OCM_AGENT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}\Z")
# karmadactl register labels its agent CSRs so, and names them <cluster>-<5 random characters>.
KARMADA_SYSTEM_LABEL = "karmada.io/system"


def _spec(obj):
    return (obj or {}).get("spec") or {}


class Engine:
    """What every engine has; see :class:`KarmadaEngine` and :class:`OcmEngine`."""

    name = None
    member_kind = None  # the hub kind that stands for a member cluster
    ready_condition = None  # what "ready" means for a member cluster (a resources.wanted_condition)
    default_mode = None  # the registration_mode site.yml uses for a member that names none (inventory)
    bootstrap_group = None  # the group of its join tokens
    cluster_info_reader = None  # the Role and RoleBinding letting anyone read kube-public/cluster-info
    hub_labels = None  # the labels of its hub objects
    grpc_registration = False  # its hub may offer the grpc registration driver
    accepts_clients = False  # accepting a cluster also sets hubAcceptsClient on its member object
    unsigned_discovery = False  # a member may discover the hub from an unsigned cluster-info (clusteradm join)
    bootstrap_token_only = False  # a member registers with a bootstrap token only, not a ServiceAccount token
    cli_pins = False  # its join command line names the hub CA pins (cli_command)
    service_account_join = False  # a member may join with a ServiceAccount token (bootstrap_token token_type)
    csr_auto_approval_setting = False  # hub_registration sets whether agent CSRs are approved automatically
    pull_only = False  # a member registers only by pull: no Push mode, whatever its registration_mode
    self_registration = False  # the hub may register with itself as a member (hub_init_ocm_register_self)
    installs_control_plane = False  # role hub_init installs (and upgrade.yml upgrades) its control plane on the hub
    # Day 2 (labels.py, taints.py): the label that names a member's cluster set (None: the engine has none), the label
    # domains its own controllers own, the taint effects it knows, the taint ({key, effect}) that cordons a member -
    # new placements leave it out - and the keys of the taints its own controllers set and remove.
    cluster_set_label = None
    label_domains = ()
    taint_effects = ()
    cordon_taint = None
    hub_taint_keys = ()

    def __repr__(self):
        return "<engine %s>" % self.name

    # --- member clusters on the hub -------------------------------------------------------------

    def validate_cluster_name(self, name):
        """FleetError unless ``name`` can name a member cluster."""
        raise NotImplementedError

    def summarize(self, obj):
        """The engine-neutral summary of a member object (see :func:`fleet.summarize`)."""
        raise NotImplementedError

    def recorded_cluster_id(self, obj):
        raise NotImplementedError

    def endpoints_of(self, obj):
        raise NotImplementedError

    def check_pull_registration(self, existing, cluster_name, allow_mode_change):
        """FleetError when member object ``existing`` (or None) may not be registered by pull as it is."""

    def is_push(self, member):
        """The hub has ``member`` (its member object, or None) as a Push member: no agent runs for it."""
        return False

    def joined(self, member):
        """The member object says the cluster's agent joined with a certificate."""
        raise NotImplementedError

    def check_cluster_sets(self):
        """FleetError unless the engine groups its member clusters in cluster sets (module cluster_set)."""

    # --- agent certificates (csr.py, accept.py) -------------------------------------------------

    def agent_organizations(self, cluster):
        """The O of the subject of ``cluster``'s agent certificate, sorted."""
        raise NotImplementedError

    def common_name_problem(self, cluster, cn):
        """Why ``cn`` is not an agent identity of ``cluster``, or None."""
        raise NotImplementedError

    def bootstrap_identities(self):
        """The requesters besides bootstrap token users that may ask for an agent certificate, for messages."""
        return "a bootstrap token user"

    def is_bootstrap_identity(self, user):
        """``user`` is one of the engine's bootstrap identities other than a bootstrap token user."""
        return False

    def renews_itself(self, cluster, user, cn):
        """``user`` asking for ``cn`` is the agent of ``cluster`` renewing its own certificate."""
        raise NotImplementedError

    def csr_selector(self, clusters):
        """The label selector of the agent CSRs of ``clusters``, or None to read every CSR."""
        return None

    def claims_csr(self, cluster, csr, common_name):
        """``csr`` (asking for ``common_name``) claims to be the agent CSR of ``cluster``."""
        raise NotImplementedError

    # --- join tokens -------------------------------------------------------------------------------

    def cli_command(self, token, server, pins):
        """The command line a member would run to register with this token."""
        raise NotImplementedError

    # --- registration options (cluster_register) ------------------------------------------------

    def check_registration_options(self, params):
        """FleetError for a registration option (the module's parameters) that is another engine's."""
        raise NotImplementedError

    def klusterlet_placement(self, cluster_name, mode, driver):
        """The :class:`ocm.Placement` of the cluster's Klusterlet (OCM), None without one."""
        return None

    # --- diagnosis (diagnose.py) ----------------------------------------------------------------

    def agent_lease(self, cluster):
        """``(namespace, name)`` of the Lease on the hub that ``cluster``'s agent renews."""
        raise NotImplementedError

    def lease_grace_seconds(self, member, lease):
        """How long after its Lease's renewTime the hub counts the agent of ``member`` (its member object) as gone."""
        raise NotImplementedError

    def agent_access(self, cluster):
        """``(user, groups, [resourceAttributes])``: what ``cluster``'s agent must be allowed on the hub."""
        raise NotImplementedError

    def works_of(self, cluster):
        """``(Kind, namespace)`` of the workloads the hub holds for ``cluster``; the namespace is its execution or
        cluster namespace."""
        raise NotImplementedError

    def agent_layout(self, status_object):
        """Where the agent lives on the member, from the object of :attr:`agent_status`: ``dict(deployments=[(namespace,
        name)], kubeconfigs=[(namespace, secret, key)], certificate=(namespace, secret, key))``, the certificate in one
        of the kubeconfig Secrets (key None: the kubeconfig's own); None when the member does not run it (Hosted)."""
        raise NotImplementedError

    agent_status = None  # (Kind, name) of the member object that reports on the agent (OCM's Klusterlet), or None

    # --- versions and agents (versions.py) --------------------------------------------------------

    def agent_image(self, reg):
        """The agent image registration ``reg`` installs, None when it installs none."""
        return None

    def hub_release(self, hub):
        """The engine release the hub shows (with admin credentials), None where it shows none."""
        return None

    def running_agent_image(self, reg, member, runtime):
        """The agent image the member runs now (read on ``runtime``: the member, or a Hosted klusterlet's hosting
        cluster), None when it runs none yet."""
        return None

    def read_agent(self, member):
        """The agent of the member cluster reached at ``member``, as :func:`agents.agent_report` reports it."""
        raise NotImplementedError


class KarmadaEngine(Engine):
    """Karmada: ``Cluster`` objects, push join or pull registration with the karmada-agent (4.3, 4.4)."""

    name = "karmada"
    member_kind = karmada.CLUSTER
    ready_condition = resources.wanted_condition("Ready")
    default_mode = "push"
    bootstrap_group = bootstrap.KARMADA_DEFAULT_GROUP
    cluster_info_reader = "system:karmada:bootstrap-signer-clusterinfo"
    hub_labels = {"karmada.io/bootstrapping": "rbac-defaults"}
    bootstrap_token_only = True
    cli_pins = True
    csr_auto_approval_setting = True
    label_domains = ("karmada.io",)
    taint_effects = ("NoSchedule", "NoExecute")  # NoExecute evicts the cluster's workloads when failover is on
    cordon_taint = karmada.CORDON_TAINT
    hub_taint_keys = ("cluster.karmada.io/not-ready", "cluster.karmada.io/unreachable")  # the cluster controller's

    def check_cluster_sets(self):
        raise FleetError("cluster sets are an OCM concept (ManagedClusterSet); a Karmada hub has none: select Karmada "
                         "clusters by their labels in a PropagationPolicy's placement.clusterAffinity instead; engine is %s"
                         % self.name)

    def validate_cluster_name(self, name):
        karmada.validate_cluster_name(name)

    def summarize(self, obj):
        return karmada.summarize_cluster(obj)

    def recorded_cluster_id(self, obj):
        return karmada.recorded_cluster_id(obj)

    def endpoints_of(self, obj):
        return karmada.endpoints_of(obj)

    def check_pull_registration(self, existing, cluster_name, allow_mode_change):
        if self.is_push(existing) and not allow_mode_change:
            raise FleetError("Cluster '%s' is registered on the hub in Push mode; registering it by pull would make it a "
                             "Pull member: set allow_mode_change=true to do so, or keep joining it with "
                             "multicluster.fleet.cluster_join" % cluster_name)

    def is_push(self, member):
        return _spec(member).get("syncMode") == "Push"

    def joined(self, member):
        return _spec(member).get("syncMode") == "Pull"

    def agent_organizations(self, cluster):
        return [karmada.AGENTS_GROUP]

    def common_name_problem(self, cluster, cn):
        if cn != karmada.agent_user(cluster):
            return "CN %s is not %s, the agent identity of cluster %s" % (cn, karmada.agent_user(cluster), cluster)
        return None

    def renews_itself(self, cluster, user, cn):
        return user == karmada.agent_user(cluster)

    def claims_csr(self, cluster, csr, common_name):
        if common_name == karmada.agent_user(cluster):
            return True
        metadata = csr.get("metadata") or {}
        return ((metadata.get("labels") or {}).get(KARMADA_SYSTEM_LABEL) == "true"
                and re.match(r"^%s-[a-z0-9]{5}\Z" % re.escape(cluster), metadata.get("name") or "") is not None)

    def cli_command(self, token, server, pins):
        command = "karmadactl register %s --token %s" % (server.replace("https://", ""), token)
        return command + (" --discovery-token-ca-cert-hash %s" % ",".join(pins) if pins else "")

    def agent_image(self, reg):
        return reg.agent_image if reg.deploy_agent else None

    def read_agent(self, member):
        return agents.karmada_agent(member)

    def running_agent_image(self, reg, member, runtime):
        return agents.deployment_image(resources.get(member, resources.DEPLOYMENT, karmada.AGENT_NAME,
                                                     karmada.AGENT_NAMESPACE))

    def check_registration_options(self, params):
        if params.get("klusterlet_mode") or (params.get("registration_driver") or "csr") != "csr":
            raise FleetError("klusterlet_mode and registration_driver are OCM settings; engine is %s" % self.name)
        if params.get("accept"):
            raise FleetError("accept is an OCM setting (clusteradm accept); a Karmada hub approves agent CSRs itself, or "
                             "with multicluster.fleet.csr_accept; engine is %s" % self.name)
        if params.get("klusterlet_spec") is not None:
            raise FleetError("klusterlet_spec is an OCM setting (the Klusterlet's images and resources); engine is %s"
                             % self.name)
        if params.get("client_cert_expiration_seconds") is not None:
            raise FleetError("client_cert_expiration_seconds is an OCM setting (the Klusterlet's); a Karmada agent "
                             "certificate's lifetime is cert_expiration_seconds; engine is %s" % self.name)

    def agent_lease(self, cluster):
        return karmada.DEFAULT_CLUSTER_NAMESPACE, cluster

    def lease_grace_seconds(self, member, lease):
        return _spec(lease).get("leaseDurationSeconds") or karmada.LEASE_DURATION_SECONDS

    def agent_access(self, cluster):
        return karmada.agent_user(cluster), [karmada.AGENTS_GROUP], [
            {"group": "cluster.karmada.io", "resource": "clusters", "subresource": "status", "name": cluster,
             "verb": "update"},
            {"group": "coordination.k8s.io", "resource": "leases", "namespace": karmada.DEFAULT_CLUSTER_NAMESPACE,
             "name": cluster, "verb": "update"}]

    def works_of(self, cluster):
        return karmada.WORK, karmada.execution_namespace(cluster)

    def agent_layout(self, status_object):
        secret = (karmada.AGENT_NAMESPACE, karmada.AGENT_KUBECONFIG_SECRET)
        return {"deployments": [(karmada.AGENT_NAMESPACE, karmada.AGENT_NAME)],
                "kubeconfigs": [secret + (karmada.AGENT_KUBECONFIG_SECRET,)], "certificate": secret + (None,)}


class OcmEngine(Engine):
    """Open Cluster Management: ``ManagedCluster`` objects, pull registration by the klusterlet (4.5, 4.6)."""

    name = "ocm"
    member_kind = ocm.MANAGED_CLUSTER
    ready_condition = resources.wanted_condition(ocm.AVAILABLE)
    default_mode = "pull"  # OCM registers only by pull
    pull_only = True
    self_registration = True
    installs_control_plane = True
    bootstrap_group = bootstrap.OCM_DEFAULT_GROUP
    cluster_info_reader = "open-cluster-management:bootstrap-signer-clusterinfo"
    grpc_registration = True
    accepts_clients = True
    unsigned_discovery = True
    service_account_join = True
    cluster_set_label = ocm.CLUSTER_SET_LABEL
    label_domains = ("open-cluster-management.io",)
    taint_effects = ("NoSelect", "PreferNoSelect", "NoSelectIfNew")
    cordon_taint = ocm.CORDON_TAINT
    # the hub registration's taint controller (pkg/registration/hub/taint)
    hub_taint_keys = ("cluster.open-cluster-management.io/unavailable", "cluster.open-cluster-management.io/unreachable")

    def validate_cluster_name(self, name):
        if not isinstance(name, str) or not name or len(name) > ocm.CLUSTER_NAME_MAX_LENGTH \
                or not karmada.DNS1123_LABEL_RE.match(name):
            raise FleetError("invalid cluster name %r: OCM cluster names are DNS-1123 labels (lowercase letters, digits "
                             "and '-', starting and ending with a letter or digit) of 1 to %d characters"
                             % (name, ocm.CLUSTER_NAME_MAX_LENGTH))

    def summarize(self, obj):
        return ocm.summarize_managed_cluster(obj)

    def recorded_cluster_id(self, obj):
        return ocm.recorded_cluster_id(obj)

    def endpoints_of(self, obj):
        return ocm.endpoints_of(obj)

    def joined(self, member):
        return resources.condition_is(member, ocm.JOINED)

    @staticmethod
    def agent_name(cluster, cn):
        """The agent name in an OCM agent's CN for ``cluster``, or None if ``cn`` is not one for it."""
        prefix = ocm.agent_organization(cluster) + ":"
        if not (cn or "").startswith(prefix):
            return None
        agent = cn[len(prefix):]
        return agent if OCM_AGENT_NAME_RE.match(agent) else None

    def agent_organizations(self, cluster):
        return sorted([ocm.agent_organization(cluster), ocm.MANAGED_CLUSTERS_GROUP])

    def common_name_problem(self, cluster, cn):
        if self.agent_name(cluster, cn) is None:
            return "CN %s is not %s:<agent-name>, an agent identity of cluster %s" % (
                cn, ocm.agent_organization(cluster), cluster)
        return None

    def bootstrap_identities(self):
        return "a bootstrap token user or %s" % ocm.BOOTSTRAP_SERVICE_ACCOUNT_USER

    def is_bootstrap_identity(self, user):
        return user == ocm.BOOTSTRAP_SERVICE_ACCOUNT_USER

    def renews_itself(self, cluster, user, cn):
        return user == cn and self.agent_name(cluster, user) is not None

    def csr_selector(self, clusters):
        return "%s in (%s),!%s" % (ocm.CLUSTER_NAME_LABEL, ",".join(clusters), ocm.ADDON_NAME_LABEL)

    def claims_csr(self, cluster, csr, common_name):
        labels = (csr.get("metadata") or {}).get("labels") or {}
        return labels.get(ocm.CLUSTER_NAME_LABEL) == cluster and ocm.ADDON_NAME_LABEL not in labels

    def cli_command(self, token, server, pins):
        return "clusteradm join --hub-token %s --hub-apiserver %s" % (token, server)

    def klusterlet_placement(self, cluster_name, mode, driver):
        if mode is not None and mode not in ocm.KLUSTERLET_MODES:
            raise FleetError("klusterlet_mode must be one of %s, got %r" % (", ".join(ocm.KLUSTERLET_MODES), mode))
        if driver not in ocm.REGISTRATION_DRIVERS:
            raise FleetError("registration_driver must be one of %s, got %r" % (", ".join(ocm.REGISTRATION_DRIVERS), driver))
        placement = ocm.Placement(cluster_name, mode)
        if placement.hosted and len(cluster_name) > ocm.HOSTED_CLUSTER_NAME_MAX_LENGTH:
            raise FleetError("cluster name %r is too long for klusterlet_mode %s: the Klusterlet and its namespace on the "
                             "hosting cluster are named %s<cluster>, so the name may have at most %d characters"
                             % (cluster_name, mode, ocm.HOSTED_PREFIX, ocm.HOSTED_CLUSTER_NAME_MAX_LENGTH))
        return placement

    def agent_image(self, reg):
        return (reg.klusterlet_spec or {}).get("registrationImagePullSpec")

    def hub_release(self, hub):
        return versions.hub_release_of_cluster_manager(resources.get(hub, ocm.CLUSTER_MANAGER, ocm.CLUSTER_MANAGER_NAME))

    def read_agent(self, member):
        return agents.ocm_agent(member)

    def running_agent_image(self, reg, member, runtime):
        try:
            klusterlet = resources.get(runtime, ocm.KLUSTERLET, reg.placement.klusterlet)
        except client.NotFound:  # no Klusterlet API yet: nothing runs
            return None
        return ((klusterlet or {}).get("spec") or {}).get("registrationImagePullSpec")

    def check_registration_options(self, params):
        if params.get("deploy_agent") or params.get("provider") or params.get("region") or params.get("zones"):
            raise FleetError("deploy_agent, provider, region and zones are Karmada settings (the klusterlet is installed by "
                             "role multicluster.fleet.agent_install); engine is %s" % self.name)
        if params.get("enable_cert_rotation"):
            raise FleetError("enable_cert_rotation is a Karmada setting (the karmada-agent's); the OCM registration agent "
                             "renews its certificate itself (client_cert_expiration_seconds sets its lifetime); engine is %s"
                             % self.name)
        if params.get("allow_mode_change"):
            raise FleetError("allow_mode_change is a Karmada setting (an OCM cluster has no Push or Pull mode); engine is %s"
                             % self.name)
        if params.get("proxy_server_address"):
            raise FleetError("%s: proxy_server_address is a Karmada setting (the agent's --proxy-server-address, which sets "
                             "the Cluster's spec.proxyURL); engine is %s" % (client.describe(params["cluster_name"]), self.name))
        if params.get("klusterlet_spec") is not None:
            ocm.validate_klusterlet_spec(params["klusterlet_spec"])

    agent_status = (ocm.KLUSTERLET, ocm.KLUSTERLET_NAME)

    def agent_lease(self, cluster):
        return cluster, ocm.CLUSTER_LEASE

    def lease_grace_seconds(self, member, lease):
        return ocm.LEASE_GRACE_TIMES * (_spec(member).get("leaseDurationSeconds") or ocm.LEASE_DURATION_SECONDS)

    def agent_access(self, cluster):
        return ocm.agent_common_name(cluster, "agent"), self.agent_organizations(cluster), [
            {"group": "cluster.open-cluster-management.io", "resource": "managedclusters", "subresource": "status",
             "name": cluster, "verb": "update"},
            {"group": "coordination.k8s.io", "resource": "leases", "namespace": cluster, "name": ocm.CLUSTER_LEASE,
             "verb": "update"}]

    def works_of(self, cluster):
        return ocm.MANIFEST_WORK, cluster

    def agent_layout(self, status_object):
        spec = _spec(status_object)
        mode = (spec.get("deployOption") or {}).get("mode") or "Default"
        if mode in ocm.HOSTED_MODES:
            return None
        namespace = spec.get("namespace") or ocm.AGENT_NAMESPACE
        agent = "%s-%s" % (ocm.KLUSTERLET_NAME, "agent" if mode == "Singleton" else "registration-agent")
        return {"deployments": [(namespace, agent)],
                "kubeconfigs": [(namespace, ocm.BOOTSTRAP_SECRET, ocm.KUBECONFIG_KEY),
                                (namespace, ocm.HUB_KUBECONFIG_SECRET, ocm.KUBECONFIG_KEY)],
                "certificate": (namespace, ocm.HUB_KUBECONFIG_SECRET, "tls.crt")}


_BY_NAME = dict((engine.name, engine) for engine in (KarmadaEngine(), OcmEngine()))
NAMES = tuple(_BY_NAME)  # the choices of every engine option


def get(engine):
    """The :class:`Engine` of name ``engine`` (an Engine is returned as it is); FleetError for an unknown name."""
    if isinstance(engine, Engine):
        return engine
    try:
        return _BY_NAME[engine]
    except (KeyError, TypeError):
        raise FleetError("engine must be one of %s, got %r" % (", ".join(NAMES), engine))
