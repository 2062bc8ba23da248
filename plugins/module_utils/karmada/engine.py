# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Karmada engine: ``Cluster`` objects, push join or pull registration with the karmada-agent (docs/architecture.md
4.3, 4.4)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import agents, bootstrap
from ansible_collections.multicluster.fleet.plugins.module_utils.engine import Engine, spec_of
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# karmadactl register labels its agent CSRs so, and names them <cluster>-<5 random characters>.
KARMADA_SYSTEM_LABEL = "karmada.io/system"


class KarmadaEngine(Engine):
    """Karmada: ``Cluster`` objects, push join or pull registration with the karmada-agent (4.3, 4.4)."""

    name = "karmada"
    member_kind = karmada.CLUSTER
    ready_condition = resources.wanted_condition("Ready")
    default_mode = "push"
    bootstrap_group = bootstrap.KARMADA_DEFAULT_GROUP
    cluster_info_reader = "system:karmada:bootstrap-signer-clusterinfo"
    hub_labels = karmada.HUB_LABELS
    bootstrap_token_only = True
    cli_pins = True
    csr_auto_approval_setting = True
    label_domains = ("karmada.io",)
    taint_effects = ("NoSchedule", "NoExecute")  # NoExecute evicts the cluster's workloads when failover is on
    cordon_taint = karmada.CORDON_TAINT
    cordon_effects = (karmada.CORDON_TAINT["effect"],)  # karmadactl cordon's only
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
                             "Pull member: set karmada.allow_mode_change=true to do so, or keep joining it with "
                             "multicluster.fleet.cluster_join" % cluster_name)

    def is_push(self, member):
        return karmada.is_push(member)

    def joined(self, member):
        return spec_of(member).get("syncMode") == "Pull"

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

    def agent_lease(self, cluster):
        return karmada.DEFAULT_CLUSTER_NAMESPACE, cluster

    def lease_grace_seconds(self, member, lease):
        return spec_of(lease).get("leaseDurationSeconds") or karmada.LEASE_DURATION_SECONDS

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

    @property
    def registration(self):
        from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.registration import KarmadaRegistration
        return KarmadaRegistration

    @property
    def works(self):
        from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.works import KarmadaWorks
        return KarmadaWorks

    @property
    def hub_objects(self):
        from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import hub_objects
        return hub_objects

    @property
    def removal(self):
        from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import removal
        return removal
