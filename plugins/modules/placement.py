#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: placement
short_description: Select OCM managed clusters with a Placement
version_added: 1.0.0
description:
  - Creates, updates or deletes an Open Cluster Management C(Placement) (C(placements.cluster.open-cluster-management.io/v1beta1))
    on the hub. The hub's placement controller selects managed clusters for it and writes them into
    C(PlacementDecisions); add-ons (M(multicluster.fleet.addon)) and other consumers install on those clusters.
  - A Placement selects only from the C(ManagedClusterSets) bound to its namespace by a C(ManagedClusterSetBinding)
    (C(cluster.open-cluster-management.io/v1beta2), named after the set). Before writing anything the module checks that
    the namespace exists, that the sets named in O(cluster_sets) exist and are bound to the namespace - with
    O(bind_cluster_sets=true) it creates the missing bindings, as C(clusteradm clusterset bind) does - and, when
    O(cluster_sets) is empty, that the namespace has at least one binding.
  - The module owns the fields it sets - O(cluster_sets), O(number_of_clusters), O(predicates), O(tolerations) and the
    decision strategy; leaving one out of the task removes it from the Placement. Prioritizers, spread policy and sort
    order are left as they are.
  - With O(wait), waits until the placement controller has decided, then returns the selected clusters and decision groups.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  name:
    description: Name of the Placement.
    type: str
    required: true
  namespace:
    description: Namespace of the Placement on the hub; it must exist.
    type: str
    default: default
  state:
    description:
      - V(present) creates or updates the Placement (and the bindings O(bind_cluster_sets) asks for).
      - V(absent) deletes it; the controller's PlacementDecisions go with it. ManagedClusterSetBindings stay, other
        placements of the namespace may use them.
    type: str
    choices: [present, absent]
    default: present
  cluster_sets:
    description:
      - The C(ManagedClusterSets) to select from (C(spec.clusterSets)). Empty selects from every set bound to the namespace.
    type: list
    elements: str
  bind_cluster_sets:
    description:
      - Create a C(ManagedClusterSetBinding) in O(namespace) for every set of O(cluster_sets) that has none.
      - Without it a set that is not bound to the namespace fails the task, since the placement could never select its clusters.
    type: bool
    default: false
  number_of_clusters:
    description:
      - How many clusters to select at most (C(spec.numberOfClusters)). Unset selects every matching cluster.
    type: int
  predicates:
    description:
      - Cluster selectors (C(spec.predicates[].requiredClusterSelector)). A cluster is selected when it matches any of them;
        within one, the label and claim selectors must both match.
      - Keys of label and claim selectors must be qualified names and their values label values (as for
        M(multicluster.fleet.cluster_label)), which the placement controller can parse; the task is refused otherwise,
        naming the key or value, before anything is written. Numbers and booleans in C(match_labels) are written as text.
    type: list
    elements: dict
    suboptions:
      label_selector: &label_selector
        description: Selects by the C(ManagedCluster)'s labels.
        type: dict
        suboptions:
          match_labels:
            description: Labels that must all be present with these values.
            type: dict
          match_expressions: &expressions
            description: Requirements that must all hold.
            type: list
            elements: dict
            suboptions:
              key:
                description: Label (or claim) name.
                type: str
                required: true
              operator:
                description: V(In) and V(NotIn) need values; V(Exists) and V(DoesNotExist) take none.
                type: str
                required: true
                choices: [In, NotIn, Exists, DoesNotExist]
              values:
                description: The values for V(In) and V(NotIn).
                type: list
                elements: str
      claim_selector: &claim_selector
        description: Selects by the cluster claims the klusterlet reports (C(status.clusterClaims)), for example C(platform.open-cluster-management.io).
        type: dict
        suboptions:
          match_expressions: *expressions
  tolerations:
    description:
      - Taints of C(ManagedClusters) to tolerate (C(spec.tolerations)). The hub taints unavailable and unreachable
        clusters with C(cluster.open-cluster-management.io/unavailable) and C(cluster.open-cluster-management.io/unreachable).
    type: list
    elements: dict
    suboptions:
      key:
        description: Taint key; empty tolerates every taint and needs O(tolerations[].operator=Exists).
        type: str
      operator:
        description: V(Equal) matches O(tolerations[].value); V(Exists) any value.
        type: str
        choices: [Equal, Exists]
        default: Equal
      value:
        description: Taint value for V(Equal).
        type: str
      effect:
        description: Taint effect to tolerate; unset tolerates every effect.
        type: str
        choices: [NoSelect, PreferNoSelect, NoSelectIfNew]
      toleration_seconds:
        description: How long after the taint was added it is tolerated; unset tolerates it forever.
        type: int
  decision_groups:
    description:
      - Decision groups (C(spec.decisionStrategy.groupStrategy.decisionGroups)), for example canary clusters that
        add-on rollouts update first. Clusters matching no group form further groups.
    type: list
    elements: dict
    suboptions:
      group_name:
        description: Name of the group, as rollout strategies' C(mandatory_decision_groups) refer to it.
        type: str
        required: true
      label_selector: *label_selector
      claim_selector: *claim_selector
  clusters_per_decision_group:
    description:
      - Most clusters per decision group, a number or a percentage of the selected clusters such as V(25%); larger
        groups are split (C(clustersPerDecisionGroup), default V(100%)).
    type: raw
extends_documentation_fragment:
  - multicluster.fleet.auth
  - multicluster.fleet.wait
  - multicluster.fleet.attributes
  - multicluster.fleet.attributes.hub_objects
notes:
  - The placement controller records no generation, so right after an update O(wait) may return the decisions made for
    the previous spec while the controller has not yet processed the new one.
  - The hub credentials need C(create) on C(managedclustersets/bind) to create bindings.
seealso:
  - module: multicluster.fleet.addon
  - name: OCM - Placement
    description: How the placement controller selects clusters.
    link: https://open-cluster-management.io/docs/concepts/content-placement/placement/
"""

EXAMPLES = r"""
- name: Select the development clusters of the fleet set, binding the set to the namespace
  multicluster.fleet.placement:
    kubeconfig: /etc/fleet/hub.kubeconfig
    name: dev-clusters
    namespace: default
    cluster_sets: [fleet]
    bind_cluster_sets: true
    predicates:
      - label_selector:
          match_labels:
            environment: dev
    wait: true
  register: dev

- name: Show the decided clusters
  ansible.builtin.debug:
    msg: "{{ dev.clusters }}"

- name: AWS clusters, a canary group first, also when they are unreachable
  multicluster.fleet.placement:
    name: placement-aws
    cluster_sets: [global]
    bind_cluster_sets: true
    predicates:
      - claim_selector:
          match_expressions:
            - key: platform.open-cluster-management.io
              operator: In
              values: [aws]
    tolerations:
      - key: cluster.open-cluster-management.io/unreachable
        operator: Exists
    decision_groups:
      - group_name: prod-canary-west
        label_selector:
          match_labels:
            canary: west
    clusters_per_decision_group: 25%

- name: Remove the placement
  multicluster.fleet.placement:
    name: dev-clusters
    state: absent
"""

RETURN = r"""
action:
  description: What happened to the Placement, V(created), V(updated), V(unchanged), V(deleted) or V(absent).
  returned: always
  type: str
  sample: created
clusters:
  description: The clusters the PlacementDecisions name, sorted (empty in check mode for a new Placement).
  returned: always
  type: list
  elements: str
  sample: [cluster1, cluster2]
decision_groups:
  description: The decision groups, by index, with their clusters.
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: Decision group index (label C(cluster.open-cluster-management.io/decision-group-index)).
      type: int
      sample: 0
    name:
      description: Decision group name, empty for clusters of no named group.
      type: str
      sample: prod-canary-west
    clusters:
      description: Clusters of the group.
      type: list
      elements: str
number_of_selected_clusters:
  description: C(status.numberOfSelectedClusters) as the placement controller reported it; null before it did.
  returned: always
  type: int
  sample: 2
satisfied:
  description: Condition C(PlacementSatisfied) is true (every requested decision scheduled).
  returned: always
  type: bool
misconfigured:
  description: Condition C(PlacementMisconfigured) is true.
  returned: always
  type: bool
conditions:
  description: Status conditions of the Placement with C(type), C(status), C(reason), C(message), C(lastTransitionTime).
  returned: always
  type: list
  elements: dict
object:
  description: The Placement as the hub stores it, without server-owned metadata.
  returned: always
  type: dict
objects:
  description: Every object the task wrote or deleted, as C(Kind/namespace/name) followed by the action.
  returned: always
  type: list
  elements: str
  sample: ["ManagedClusterSetBinding/default/fleet: created", "Placement/default/dev-clusters: created"]
"""

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import placement
from ansible_collections.multicluster.fleet.plugins.module_utils.module import WAIT_ARG_SPEC, FleetModule


def _selector_spec():
    return dict(
        label_selector=placement.label_selector_argument_spec(),
        claim_selector=dict(type="dict", options=dict(match_expressions=placement.expressions_argument_spec())),
    )


def run(module):
    params = module.params
    resources.check_wait_options(params)
    hub = module.cluster()
    if params["state"] == "absent":
        return placement.absent(hub, params["name"], params["namespace"], module.check_mode, params["wait"],
                                params["wait_timeout"], params["wait_sleep"])
    return placement.present(hub, params, module.check_mode, params["wait"], params["wait_timeout"], params["wait_sleep"])


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(
        argument_spec=dict(
            name=dict(type="str", required=True),
            namespace=dict(type="str", default="default"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            cluster_sets=dict(type="list", elements="str"),
            bind_cluster_sets=dict(type="bool", default=False),
            number_of_clusters=dict(type="int"),
            predicates=dict(type="list", elements="dict", options=_selector_spec()),
            tolerations=dict(type="list", elements="dict", options=dict(
                key=dict(type="str", no_log=False),
                operator=dict(type="str", choices=list(placement.TOLERATION_OPERATORS), default="Equal"),
                value=dict(type="str"),
                effect=dict(type="str", choices=list(placement.TAINT_EFFECTS)),
                toleration_seconds=dict(type="int"),
            )),
            decision_groups=dict(type="list", elements="dict", options=dict(group_name=dict(type="str", required=True),
                                                                            **_selector_spec())),
            clusters_per_decision_group=dict(type="raw"),
            **WAIT_ARG_SPEC
        ),
    )


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
