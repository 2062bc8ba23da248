#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: addon_deployment_config
short_description: Manage an OCM AddOnDeploymentConfig, how add-on agents are deployed
version_added: 1.0.0
description:
  - Creates, updates or deletes an Open Cluster Management C(AddOnDeploymentConfig)
    (C(addondeploymentconfigs.addon.open-cluster-management.io/v1alpha1)) on the hub - customized variables, node
    placement, image registries, proxy, the agent's install namespace and resource requirements.
  - Add-ons use it as a config - the default of a supported config, a placement's config or one cluster's config of
    M(multicluster.fleet.addon). The add-on manager rolls a change out to the add-ons that use it.
  - The module owns the spec; leaving an option out of the task removes it from the config.
  - Returns the config's spec hash, the one OCM records in the C(desiredConfig) of the add-ons that use it.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  name:
    description: Name of the AddOnDeploymentConfig.
    type: str
    required: true
  namespace:
    description: Namespace of the AddOnDeploymentConfig on the hub; it must exist.
    type: str
    required: true
  state:
    description: V(present) creates or updates the config; V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  customized_variables:
    description:
      - Variables for the add-on's manifests (C(customizedVariables)), name to value. Names are letters, digits and C(_),
        not starting with a digit; values are written as strings.
    type: dict
  node_placement:
    description: Where the agent's pods run (C(nodePlacement)).
    type: dict
    suboptions:
      node_selector:
        description: Node labels the pods require.
        type: dict
      tolerations:
        description: Pod tolerations, as in a pod spec (C(key), C(operator), C(value), C(effect), C(tolerationSeconds)).
        type: list
        elements: dict
  registries:
    description: Image registry mirrors (C(registries)); an image starting with O(registries[].source) is pulled from O(registries[].mirror).
    type: list
    elements: dict
    suboptions:
      source:
        description: Image or registry prefix to replace.
        type: str
      mirror:
        description: Image or registry prefix to use instead.
        type: str
        required: true
  proxy_config:
    description: The proxy the agent uses to reach the hub (C(proxyConfig)).
    type: dict
    suboptions:
      http_proxy:
        description: URL of the HTTP proxy.
        type: str
      https_proxy:
        description: URL of the HTTPS proxy.
        type: str
      no_proxy:
        description: Comma-separated hosts reached without the proxy.
        type: str
      ca_bundle:
        description: PEM of the CA that verifies an HTTPS proxy.
        type: str
  agent_install_namespace:
    description:
      - Namespace of the add-on agent on the managed cluster (C(agentInstallNamespace)). Unset means
        C(open-cluster-management-agent-addon); an empty string keeps the namespace an C(AddOnTemplate) defines.
    type: str
  resource_requirements:
    description: Resource requests and limits of the agent's containers (C(resourceRequirements)).
    type: list
    elements: dict
    suboptions:
      container_id:
        description: Containers, as C(<resource type>:<name>:<container>) with C(*) as wildcard, for example V(deployments:*:*).
        type: str
        required: true
      requests:
        description: "Resource requests, for example C({cpu: 100m, memory: 128Mi})."
        type: dict
      limits:
        description: Resource limits.
        type: dict
extends_documentation_fragment:
  - multicluster.fleet.auth
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports what would be created, updated or deleted, using the hub's dry run; writes nothing.
  diff_mode:
    support: full
  idempotent:
    support: full
seealso:
  - module: multicluster.fleet.addon
  - name: OCM - AddOnDeploymentConfig
    description: The fields add-on agents honour.
    link: https://open-cluster-management.io/docs/developer-guides/addon/
"""

EXAMPLES = r"""
- name: The default deployment config of the helloworld add-on
  multicluster.fleet.addon_deployment_config:
    kubeconfig: /etc/fleet/hub.kubeconfig
    name: default-deploy-config
    namespace: open-cluster-management
    customized_variables:
      LOG_LEVEL: "2"
    node_placement:
      node_selector:
        node-role.kubernetes.io/infra: ""
      tolerations:
        - key: node-role.kubernetes.io/infra
          operator: Exists
          effect: NoSchedule
    registries:
      - source: quay.io/open-cluster-management
        mirror: registry.example.com/ocm
    resource_requirements:
      - container_id: "deployments:*:*"
        requests: {cpu: 50m, memory: 64Mi}
  register: deploy_config

- name: Behind a proxy
  multicluster.fleet.addon_deployment_config:
    name: proxied
    namespace: open-cluster-management
    proxy_config:
      https_proxy: http://proxy.example.com:3128
      no_proxy: .cluster.local,10.0.0.0/8
"""

RETURN = r"""
action:
  description: V(created), V(updated), V(unchanged), V(deleted) or V(absent).
  returned: always
  type: str
  sample: created
object:
  description: The AddOnDeploymentConfig as the hub stores it (server-owned metadata left out).
  returned: always
  type: dict
spec_hash:
  description: The config's spec hash as OCM computes it (C(desiredConfig.specHash) of the add-ons using it); null once deleted.
  returned: always
  type: str
  sample: 6d7257aad96a0dffdac96a92da3da2edc43e469556483546b06a622438515e9e
"""

from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import addon
from ansible_collections.multicluster.fleet.plugins.module_utils.module import FleetModule


def run(module):
    return addon.ensure_deployment_config(module.cluster(), module.params, module.check_mode)


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(
        argument_spec=dict(
            name=dict(type="str", required=True),
            namespace=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            customized_variables=dict(type="dict"),
            node_placement=dict(type="dict", options=dict(node_selector=dict(type="dict"),
                                                          tolerations=dict(type="list", elements="dict"))),
            registries=dict(type="list", elements="dict", options=dict(
                source=dict(type="str"), mirror=dict(type="str", required=True))),
            proxy_config=dict(type="dict", options=dict(http_proxy=dict(type="str"), https_proxy=dict(type="str"),
                                                        no_proxy=dict(type="str"), ca_bundle=dict(type="str"))),
            agent_install_namespace=dict(type="str"),
            resource_requirements=dict(type="list", elements="dict", options=dict(
                container_id=dict(type="str", required=True), requests=dict(type="dict"), limits=dict(type="dict"))),
        ),
    )


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
