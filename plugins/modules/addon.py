#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: addon
short_description: Enable an OCM add-on on the fleet, by placement or per cluster
version_added: 1.0.0
description:
  - Registers an Open Cluster Management add-on on the hub with a C(ClusterManagementAddOn)
    (C(clustermanagementaddons.addon.open-cluster-management.io/v1alpha1)) - display name, supported configs with their
    defaults and the install strategy - and enables it on clusters.
  - Install strategy V(Manual) - the add-on runs on the clusters listed in O(clusters), one C(ManagedClusterAddOn) of the
    same name in each cluster's hub namespace, as C(clusteradm addon enable) does.
  - Install strategy V(Placements) - the hub's add-on manager installs it on every cluster the named placements
    (M(multicluster.fleet.placement)) decide, and rolls configuration changes out as each placement's rollout strategy
    says. The module sets the lifecycle annotation C(addon.open-cluster-management.io/lifecycle=addon-manager) that hands
    the add-on to the add-on manager.
  - Configs override per group and resource - a cluster's O(clusters[].configs) win over the configs of the placement that
    selects it (O(install_strategy.placements[].configs)), which win over the defaults of O(supported_configs). The result
    per cluster is in the C(configs) of RV(clusters), from the C(ManagedClusterAddOn)'s C(status.configReferences).
  - Before writing anything the module checks the rollout strategies (type, C(maxConcurrency) up to 100%, durations),
    that every placement exists and its namespace binds the cluster sets it selects from, that every config is of a
    supported kind and that every cluster of O(clusters) is a registered and accepted C(ManagedCluster). In check mode
    a placement problem is only a warning, since an earlier task of the same check run may plan the placement.
  - The module owns the C(ClusterManagementAddOn)'s spec and the spec of the C(ManagedClusterAddOns) of O(clusters); the
    add-on's other C(ManagedClusterAddOns) are left to the add-on manager.
  - With O(wait), waits until the add-on is C(Available) on every targeted cluster (those of O(clusters) and those the
    placements decide) and runs with its expected configs, all applied.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  name:
    description: Name of the add-on, the C(ClusterManagementAddOn) and every C(ManagedClusterAddOn) (for example V(helloworld)).
    type: str
    required: true
  state:
    description:
      - V(present) registers the add-on and enables it on O(clusters).
      - V(absent) with O(clusters) removes the add-on from those clusters (their C(ManagedClusterAddOns)). Clusters the
        install strategy's placements select are refused - the add-on manager would install it again.
      - V(absent) without O(clusters) uninstalls the add-on from the whole fleet by deleting the C(ClusterManagementAddOn),
        the neat uninstallation of the OCM documentation - its C(ManagedClusterAddOns) are owned by it and go with it.
    type: str
    choices: [present, absent]
    default: present
  display_name:
    description: Display name (C(spec.addOnMeta.displayName)).
    type: str
  description:
    description: Description (C(spec.addOnMeta.description)).
    type: str
  supported_configs:
    description:
      - The config kinds the add-on supports (C(spec.supportedConfigs)), each with an optional default config. Each group
        and resource once.
    type: list
    elements: dict
    suboptions:
      group:
        description: API group of the config kind.
        type: str
        default: addon.open-cluster-management.io
      resource:
        description: Resource (plural) of the config kind.
        type: str
        default: addondeploymentconfigs
      default_config:
        description: The config every cluster uses unless its placement or the cluster overrides it.
        type: dict
        suboptions:
          name:
            description: Name of the config.
            type: str
            required: true
          namespace:
            description: Namespace of the config; unset for cluster-scoped configs.
            type: str
  install_strategy:
    description: Where the add-on manager installs the add-on (C(spec.installStrategy)).
    type: dict
    suboptions:
      type:
        description:
          - V(Manual) installs nothing by itself (O(clusters) enables the add-on per cluster).
          - V(Placements) installs on the clusters of O(install_strategy.placements).
        type: str
        choices: [Manual, Placements]
        default: Manual
      placements:
        description: The placements whose clusters get the add-on, with their configs and rollout strategy.
        type: list
        elements: dict
        suboptions:
          name:
            description: Name of the Placement.
            type: str
            required: true
          namespace:
            description: Namespace of the Placement.
            type: str
            default: default
          configs: &configs
            description: Configs overriding the defaults, per group and resource.
            type: list
            elements: dict
            suboptions:
              group:
                description: API group of the config.
                type: str
                default: addon.open-cluster-management.io
              resource:
                description: Resource (plural) of the config.
                type: str
                default: addondeploymentconfigs
              name:
                description: Name of the config.
                type: str
                required: true
              namespace:
                description: Namespace of the config; unset for cluster-scoped configs.
                type: str
          rollout_strategy:
            description:
              - How a config change reaches the placement's clusters (C(rolloutStrategy)).
            type: dict
            suboptions:
              type:
                description:
                  - V(All) updates every cluster at once; V(Progressive) updates O(install_strategy.placements[].rollout_strategy.mandatory_decision_groups)
                    first, then O(install_strategy.placements[].rollout_strategy.max_concurrency) clusters at a time;
                    V(ProgressivePerGroup) updates one decision group after the other.
                  - Other values fail the task.
                type: str
                default: All
              max_concurrency:
                description:
                  - V(Progressive) only - how many clusters update at a time, a number or a percentage up to V(100%) of the
                    placement's clusters. Unset uses the placement's C(clustersPerDecisionGroup).
                type: raw
              mandatory_decision_groups:
                description: V(Progressive) and V(ProgressivePerGroup) - decision groups that update first, by name or index.
                type: list
                elements: dict
                suboptions:
                  group_name:
                    description: Name of the decision group.
                    type: str
                  group_index:
                    description: Index of the decision group.
                    type: int
              min_success_time:
                description: How long an updated cluster must stay successful before the next ones update, such as V(5m).
                type: str
              progress_deadline:
                description: How long a cluster may take to update before it counts as failed, such as V(10m), or V(None).
                type: str
              max_failures:
                description: How many failed clusters (a number or a percentage) stop the rollout.
                type: raw
  clusters:
    description:
      - Clusters to enable the add-on on (one C(ManagedClusterAddOn) each, in the cluster's hub namespace), or with
        O(state=absent) to remove it from. Each must be a registered and accepted C(ManagedCluster).
      - With install strategy V(Placements), list here only clusters the placements select that need their own
        O(clusters[].configs) or O(clusters[].install_namespace); the add-on manager removes the add-on from clusters no
        placement selects.
    type: list
    elements: dict
    suboptions:
      name:
        description: Name of the managed cluster.
        type: str
        required: true
      install_namespace:
        description: Namespace of the add-on agent on the cluster (C(spec.installNamespace), deprecated upstream in favour of
          the C(agentInstallNamespace) of an C(AddOnDeploymentConfig)). Unset means C(open-cluster-management-agent-addon).
        type: str
      configs: *configs
extends_documentation_fragment:
  - multicluster.fleet.auth
  - multicluster.fleet.wait
  - multicluster.fleet.attributes
  - multicluster.fleet.attributes.hub_objects
notes:
  - The hub credentials need C(list) on C(managedclusteraddons) across namespaces, to report the add-on on every cluster.
  - The install strategy's placements must exist before the add-on refers to them (M(multicluster.fleet.placement)).
seealso:
  - module: multicluster.fleet.placement
  - module: multicluster.fleet.addon_deployment_config
  - name: OCM - Add-on management
    description: Install strategies, rollout strategies and the config override order.
    link: https://open-cluster-management.io/docs/concepts/add-on-extensibility/addon/
"""

EXAMPLES = r"""
- name: Enable helloworld on the clusters of a placement, rolling config changes out one cluster at a time
  multicluster.fleet.addon:
    kubeconfig: /etc/fleet/hub.kubeconfig
    name: helloworld
    display_name: helloworld
    supported_configs:
      - default_config:
          name: default-deploy-config
          namespace: open-cluster-management
    install_strategy:
      type: Placements
      placements:
        - name: dev-clusters
          namespace: default
          configs:
            - name: dev-deploy-config
              namespace: open-cluster-management
          rollout_strategy:
            type: Progressive
            max_concurrency: 1
    clusters:
      - name: cluster1
        configs:
          - name: cluster1-deploy-config
            namespace: open-cluster-management
    wait: true
    wait_timeout: 300
  register: helloworld

- name: Show each cluster's health and the configs it runs with
  ansible.builtin.debug:
    msg: "{{ item.key }}: Available={{ item.value.available }} configs={{ item.value.configs | map(attribute='name') | list }}"
  loop: "{{ helloworld.clusters | dict2items }}"

- name: Enable an add-on by hand on one cluster
  multicluster.fleet.addon:
    name: helloworld
    clusters:
      - name: cluster1
        install_namespace: helloworld

- name: Remove the add-on from cluster1 only
  multicluster.fleet.addon:
    name: helloworld
    clusters:
      - name: cluster1
    state: absent

- name: Uninstall the add-on from the whole fleet
  multicluster.fleet.addon:
    name: helloworld
    state: absent
    wait: true
"""

RETURN = r"""
addon:
  description: The C(ClusterManagementAddOn).
  returned: always
  type: dict
  contains:
    action:
      description: V(created), V(updated), V(unchanged), V(deleted) or V(absent).
      type: str
      sample: created
    object:
      description: The object as the hub stores it (server-owned metadata left out); empty once deleted.
      type: dict
clusters:
  description:
    - Per cluster holding the add-on, its health as C(kubectl get managedclusteraddon -A) shows it and the configs it
      uses. Includes the clusters the add-on manager installed it on.
  returned: always
  type: dict
  contains:
    action:
      description: What the task did to the cluster's C(ManagedClusterAddOn) - V(created), V(updated), V(unchanged).
      type: str
      sample: unchanged
    namespace:
      description: The hub namespace of the C(ManagedClusterAddOn) (the cluster's name).
      type: str
    available:
      description: Status of condition C(Available) - V(True), V(False), V(Unknown), or null when not reported.
      type: str
      sample: "True"
    degraded:
      description: Status of condition C(Degraded), or null when not reported.
      type: str
    progressing:
      description: Status of condition C(Progressing), or null when not reported.
      type: str
      sample: "False"
    configured:
      description: Status of condition C(Configured), or null when not reported.
      type: str
      sample: "True"
    install_namespace:
      description: The agent's install namespace (C(spec.installNamespace)).
      type: str
      sample: open-cluster-management-agent-addon
    configs:
      description: The effective configs (C(status.configReferences)), one per config.
      type: list
      elements: dict
      contains:
        group:
          description: API group of the config.
          type: str
        resource:
          description: Resource of the config.
          type: str
          sample: addondeploymentconfigs
        namespace:
          description: Namespace of the config.
          type: str
        name:
          description: Name of the config.
          type: str
        spec_hash:
          description: Spec hash of the desired config (as M(multicluster.fleet.addon_deployment_config) returns it).
          type: str
        applied:
          description: The agent runs with this config (C(lastAppliedConfig) equals C(desiredConfig)).
          type: bool
    conditions:
      description: Status conditions with C(type), C(status), C(reason), C(message), C(lastTransitionTime).
      type: list
      elements: dict
    object:
      description: The C(ManagedClusterAddOn) as the hub stores it.
      type: dict
objects:
  description: Every object the task wrote or deleted, as C(Kind/namespace/name) followed by the action.
  returned: always
  type: list
  elements: str
  sample: ["ClusterManagementAddOn/helloworld: created", "ManagedClusterAddOn/cluster1/helloworld: created"]
clusters_failed:
  description: The clusters of O(clusters) that are not registered or accepted (the message says why).
  returned: failure
  type: list
  elements: str
"""

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import addon
from ansible_collections.multicluster.fleet.plugins.module_utils.module import WAIT_ARG_SPEC, FleetModule


def _configs_spec():
    return dict(type="list", elements="dict", options=dict(
        group=dict(type="str", default=addon.CONFIG_GROUP), resource=dict(type="str", default=addon.DEPLOYMENT_CONFIGS),
        name=dict(type="str", required=True), namespace=dict(type="str")))


def run(module):
    params = module.params
    resources.check_wait_options(params)
    hub = module.cluster()
    if params["state"] == "absent":
        return addon.absent(hub, params["name"], [c["name"] for c in params["clusters"] or []], module.check_mode,
                            params["wait"], params["wait_timeout"], params["wait_sleep"])
    return addon.present(hub, params, module.check_mode, params["wait"], params["wait_timeout"], params["wait_sleep"])


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(
        argument_spec=dict(
            name=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            display_name=dict(type="str"),
            description=dict(type="str"),
            supported_configs=dict(type="list", elements="dict", options=dict(
                group=dict(type="str", default=addon.CONFIG_GROUP),
                resource=dict(type="str", default=addon.DEPLOYMENT_CONFIGS),
                default_config=dict(type="dict", options=dict(name=dict(type="str", required=True), namespace=dict(type="str"))),
            )),
            install_strategy=dict(type="dict", options=dict(
                type=dict(type="str", choices=list(addon.INSTALL_TYPES), default=addon.MANUAL),
                placements=dict(type="list", elements="dict", options=dict(
                    name=dict(type="str", required=True),
                    namespace=dict(type="str", default="default"),
                    configs=_configs_spec(),
                    rollout_strategy=dict(type="dict", options=dict(
                        type=dict(type="str", default="All"),
                        max_concurrency=dict(type="raw"),
                        mandatory_decision_groups=dict(type="list", elements="dict", options=dict(
                            group_name=dict(type="str"), group_index=dict(type="int"))),
                        min_success_time=dict(type="str"),
                        progress_deadline=dict(type="str"),
                        max_failures=dict(type="raw"),
                    )),
                )),
            )),
            clusters=dict(type="list", elements="dict", options=dict(
                name=dict(type="str", required=True), install_namespace=dict(type="str"), configs=_configs_spec())),
            **WAIT_ARG_SPEC
        ),
    )


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
