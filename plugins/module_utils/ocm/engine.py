# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Open Cluster Management engine: ``ManagedCluster`` objects, pull registration by the klusterlet
(docs/architecture.md 4.5, 4.6)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import versions
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import agents, bootstrap
from ansible_collections.multicluster.fleet.plugins.module_utils.engine import Engine, spec_of
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# The agent part of an OCM agent's common name: one name, no colon.
OCM_AGENT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}\Z")


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
    # NoSelect drops the cluster from the placements' decisions; NoSelectIfNew only keeps new placements off it
    cordon_effects = (ocm.CORDON_TAINT["effect"], "NoSelectIfNew")
    # the hub registration's taint controller (pkg/registration/hub/taint)
    hub_taint_keys = ("cluster.open-cluster-management.io/unavailable", "cluster.open-cluster-management.io/unreachable")

    def validate_cluster_name(self, name):
        if not isinstance(name, str) or not name or len(name) > ocm.CLUSTER_NAME_MAX_LENGTH \
                or not resources.DNS1123_LABEL_RE.match(name):
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
            raise FleetError("ocm.klusterlet_mode must be one of %s, got %r" % (", ".join(ocm.KLUSTERLET_MODES), mode))
        if driver not in ocm.REGISTRATION_DRIVERS:
            raise FleetError("ocm.registration_driver must be one of %s, got %r" % (", ".join(ocm.REGISTRATION_DRIVERS), driver))
        placement = ocm.Placement(cluster_name, mode)
        if placement.hosted and len(cluster_name) > ocm.HOSTED_CLUSTER_NAME_MAX_LENGTH:
            raise FleetError("cluster name %r is too long for ocm.klusterlet_mode %s: the Klusterlet and its namespace on the "
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

    agent_status = (ocm.KLUSTERLET, ocm.KLUSTERLET_NAME)

    def agent_lease(self, cluster):
        return cluster, ocm.CLUSTER_LEASE

    def lease_grace_seconds(self, member, lease):
        return ocm.LEASE_GRACE_TIMES * (spec_of(member).get("leaseDurationSeconds") or ocm.LEASE_DURATION_SECONDS)

    def agent_access(self, cluster):
        return ocm.agent_common_name(cluster, "agent"), self.agent_organizations(cluster), [
            {"group": "cluster.open-cluster-management.io", "resource": "managedclusters", "subresource": "status",
             "name": cluster, "verb": "update"},
            {"group": "coordination.k8s.io", "resource": "leases", "namespace": cluster, "name": ocm.CLUSTER_LEASE,
             "verb": "update"}]

    def works_of(self, cluster):
        return ocm.MANIFEST_WORK, cluster

    def agent_layout(self, status_object):
        spec = spec_of(status_object)
        mode = (spec.get("deployOption") or {}).get("mode") or "Default"
        if mode in ocm.HOSTED_MODES:
            return None
        namespace = spec.get("namespace") or ocm.AGENT_NAMESPACE
        agent = "%s-%s" % (ocm.KLUSTERLET_NAME, "agent" if mode == "Singleton" else "registration-agent")
        return {"deployments": [(namespace, agent)],
                "kubeconfigs": [(namespace, ocm.BOOTSTRAP_SECRET, ocm.KUBECONFIG_KEY),
                                (namespace, ocm.HUB_KUBECONFIG_SECRET, ocm.KUBECONFIG_KEY)],
                "certificate": (namespace, ocm.HUB_KUBECONFIG_SECRET, "tls.crt")}

    @property
    def registration(self):
        from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.registration import OcmRegistration
        return OcmRegistration

    @property
    def works(self):
        from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.works import OcmWorks
        return OcmWorks

    @property
    def hub_objects(self):
        from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import hub_objects
        return hub_objects

    @property
    def removal(self):
        from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import removal
        return removal
