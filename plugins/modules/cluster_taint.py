#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cluster_taint
short_description: Cordon, uncordon and taint member clusters on a Karmada or OCM hub
version_added: 1.0.0
description:
  - Adds, changes or removes taints (C(spec.taints)) of member clusters on the hub, on many clusters in one task, as
    C(karmadactl cordon), C(karmadactl uncordon) and C(karmadactl taint) do for one; the engines' schedulers then
    keep new workloads off a tainted cluster unless they tolerate the taint.
  - Karmada (O(engine=karmada)) - the C(Cluster) (C(clusters.cluster.karmada.io/v1alpha1)); effects V(NoSchedule) and
    V(NoExecute) (which evicts the cluster's workloads when Karmada's failover is on). Cordoning adds the taint
    C(cluster.karmada.io/unschedulable:NoSchedule), as C(karmadactl cordon) does.
  - OCM (O(engine=ocm)) - the C(ManagedCluster) (C(managedclusters.cluster.open-cluster-management.io/v1)); effects
    V(NoSelect) (placements that do not tolerate it do not select the cluster, and drop it from their decisions),
    V(PreferNoSelect) and V(NoSelectIfNew) (placements keep it where they had selected it already). OCM has no cordon
    of its own; cordoning adds the taint C(multicluster.fleet/cordoned:NoSelect), or with effect V(NoSelectIfNew) (see
    O(ocm.cordon_effect)).
  - A cluster has at most one taint per key and effect. A task changes only the taints it names - a taint with that
    key and effect gets the value the task gives - and keeps every other taint as it is, whoever set it. A taint added
    gets C(timeAdded), the time of the task; a taint already there keeps its own.
  - Before reading any cluster, the module checks every taint (the key a qualified name, the value a label value, the
    effect one of the engine's); before writing anything, that every cluster is registered on the hub (see
    O(unregistered)). The errors name the value or the clusters.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  clusters:
    description:
      - The member clusters (Karmada Cluster or OCM ManagedCluster names), each given O(taints).
      - One of O(clusters) and O(per_cluster) is required.
    type: list
    elements: str
  per_cluster:
    description:
      - Member clusters that each get taints of their own, in one task - C(site.yml) gives every member of the run its
        inventory's this way. O(state), O(cordon), O(ocm) and O(unregistered) apply to each.
      - Each cluster stands alone - its taints are checked on their own, and a cluster whose taints are refused, that is
        not registered (with O(unregistered=fail)) or being deleted fails alone, named in RV(clusters_failed) with its
        message in RV(cluster_errors), while the others are written.
    type: list
    elements: dict
    version_added: 1.1.0
    suboptions:
      name:
        description: The member cluster.
        type: str
        required: true
      taints:
        description: Its taints, as O(taints).
        type: list
        elements: dict
        required: true
        suboptions:
          key:
            description:
              - Taint key, a qualified name such as V(dedicated) or V(example.com/maintenance) (an optional DNS subdomain
                prefix and C(/), then at most 63 letters, digits, C(-), C(_) or C(.)).
            type: str
            required: true
          value:
            description:
              - Taint value, a label value (at most 63 characters); ignored by O(state=absent).
            type: str
            default: ""
          effect:
            description:
              - Karmada V(NoSchedule) or V(NoExecute); OCM V(NoSelect), V(PreferNoSelect) or V(NoSelectIfNew).
              - Required with O(state=present). With O(state=absent), unset removes the key's taints of every effect.
            type: str
  taints:
    description:
      - The taints to add or change (O(state=present)) or to remove (O(state=absent)).
      - The taints the engines' controllers set and remove by themselves (Karmada C(cluster.karmada.io/not-ready) and
        C(cluster.karmada.io/unreachable), OCM C(cluster.open-cluster-management.io/unavailable) and
        C(cluster.open-cluster-management.io/unreachable)) are refused.
    type: list
    elements: dict
    suboptions:
      key:
        description:
          - Taint key, a qualified name such as V(dedicated) or V(example.com/maintenance) (an optional DNS subdomain
            prefix and C(/), then at most 63 letters, digits, C(-), C(_) or C(.)).
        type: str
        required: true
      value:
        description:
          - Taint value, a label value (at most 63 characters); ignored by O(state=absent).
        type: str
        default: ""
      effect:
        description:
          - Karmada V(NoSchedule) or V(NoExecute); OCM V(NoSelect), V(PreferNoSelect) or V(NoSelectIfNew).
          - Required with O(state=present). With O(state=absent), unset removes the key's taints of every effect.
        type: str
  state:
    description:
      - Whether the taints of O(taints) are present or absent. O(cordon) is not affected.
    type: str
    choices: [present, absent]
    default: present
  cordon:
    description:
      - V(true) cordons the clusters (adds the engine's cordon taint), V(false) uncordons them (removes it, whatever its
        O(ocm.cordon_effect)); unset leaves the cordon as it is.
    type: bool
  ocm:
    description:
      - Settings for O(engine=ocm) only; given with another engine, the task fails before anything is read.
    type: dict
    version_added: 1.1.0
    suboptions:
      cordon_effect:
        description:
          - The effect of the cordon taint O(cordon=true) adds. V(NoSelect) (the default) keeps new placements off the
            cluster and drops it from the decisions placements already made, so its workloads move elsewhere.
            V(NoSelectIfNew) only keeps new placements off it, as a Karmada or Kubernetes cordon does, and leaves the
            workloads placed there where they are.
          - Cordoning again with the other effect replaces the cordon taint; O(cordon=false) removes either.
        type: str
        choices: [NoSelect, NoSelectIfNew]
  unregistered:
    description:
      - What to do when a cluster of O(clusters) is not registered on the hub.
      - V(fail) fails the task before anything is written, naming the clusters.
      - V(skip) taints the others and reports the missing ones in RV(clusters) with action V(unregistered) (for example
        in a check-mode run that only plans the registration).
    type: str
    choices: [fail, skip]
    default: fail
extends_documentation_fragment:
  - multicluster.fleet.engine
  - multicluster.fleet.auth
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports the taints each cluster would have, using the hub's dry run; writes nothing.
  diff_mode:
    support: full
    details:
      - Shows the taints of each changed cluster before and after, one diff per cluster.
  idempotent:
    support: full
notes:
  - Removing a taint from the task does not remove it from the clusters; remove it with O(state=absent).
  - The hub credentials need C(get) and C(patch) on the engine's clusters (Karmada C(clusters), OCM C(managedclusters)).
seealso:
  - module: multicluster.fleet.placement
  - name: Karmada - cluster taints
    description: How Karmada's scheduler and failover treat tainted clusters.
    link: https://karmada.io/docs/userguide/scheduling/resource-propagating/
  - name: OCM - taints and tolerations
    description: How placements select tainted managed clusters.
    link: https://open-cluster-management.io/docs/concepts/content-placement/placement/
"""

EXAMPLES = r"""
- name: Cordon a batch of members before their maintenance (no new workloads are scheduled to them)
  multicluster.fleet.cluster_taint:
    kubeconfig: /etc/fleet/hub.kubeconfig
    engine: karmada
    clusters: [member1, member2]
    cordon: true

- name: Keep new OCM placements off member3 and leave what runs there in place
  multicluster.fleet.cluster_taint:
    kubeconfig: /etc/fleet/hub.kubeconfig
    engine: ocm
    clusters: [member3]
    cordon: true
    ocm:
      cordon_effect: NoSelectIfNew

- name: Uncordon them when the work is done
  multicluster.fleet.cluster_taint:
    kubeconfig: /etc/fleet/hub.kubeconfig
    engine: karmada
    clusters: [member1, member2]
    cordon: false

- name: Keep OCM placements off the GPU clusters unless they tolerate it
  multicluster.fleet.cluster_taint:
    engine: ocm
    clusters: [gpu-east, gpu-west]
    taints:
      - key: example.com/gpu
        value: a100
        effect: NoSelect

- name: Each member its own taints, in one task
  multicluster.fleet.cluster_taint:
    engine: karmada
    per_cluster:
      - name: member1
        taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
      - name: member2
        taints: [{key: example.com/maintenance, effect: NoExecute}]

- name: Remove that taint, whatever its effect
  multicluster.fleet.cluster_taint:
    engine: ocm
    clusters: [gpu-east, gpu-west]
    taints:
      - key: example.com/gpu
    state: absent
"""

RETURN = r"""
clusters:
  description: Per cluster name, what the task did to its taints.
  returned: always
  type: dict
  contains:
    action:
      description: V(updated), V(unchanged), or V(unregistered) (with O(unregistered=skip)).
      type: str
      sample: updated
    taints:
      description: The cluster's taints after the task (in check mode, as they would be), each with C(key), C(value)
        (when set), C(effect) and C(timeAdded).
      type: list
      elements: dict
      sample: [{key: cluster.karmada.io/unschedulable, effect: NoSchedule, timeAdded: "2026-11-29T05:45:12Z"}]
    cordoned:
      description: The cluster carries the engine's cordon taint.
      type: bool
      sample: true
    added:
      description: Taints added or given a new value, as C(key=value:effect).
      type: list
      elements: str
      sample: ["cluster.karmada.io/unschedulable:NoSchedule"]
    removed:
      description: Taints removed or replaced by a new value, as C(key=value:effect).
      type: list
      elements: str
      sample: []
clusters_failed:
  description: The clusters that are not registered, or whose write failed (the message says why).
  returned: failure
  type: list
  elements: str
  sample: [member3]
cluster_errors:
  description: Per cluster of RV(clusters_failed), why it failed, as a task for that cluster alone would say.
  returned: failure
  type: dict
  version_added: 1.1.0
  sample: {member3: "writing the taints failed on cluster 'member3' is not registered on the hub (no Cluster named member3)"}
diff:
  description: With C(--diff), the taints before and after of each changed cluster.
  returned: changed and diff mode
  type: list
  elements: dict
"""

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import taints
from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import hub_members
from ansible_collections.multicluster.fleet.plugins.module_utils.engines import NAMES
from ansible_collections.multicluster.fleet.plugins.module_utils.module import FleetModule

# The options of a taint, in taints and in per_cluster's taints.
TAINT_OPTIONS = dict(
    key=dict(type="str", required=True, no_log=False),
    value=dict(type="str", default=""),
    effect=dict(type="str"),
)


def run(module):
    params = module.params
    engines.check_scoped_options(params["engine"], params)
    wanted = dict(taints=params["taints"], state=params["state"], cordon=params["cordon"],
                  cordon_effect=(params["ocm"] or {}).get("cordon_effect"))
    return taints.apply(module.cluster(), params["engine"], params["clusters"] or params["per_cluster"], wanted,
                        params["unregistered"], module.check_mode)


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(
        argument_spec=dict(
            engine=dict(type="str", required=True, choices=list(NAMES)),
            clusters=dict(type="list", elements="str"),
            per_cluster=dict(type="list", elements="dict", options=dict(
                name=dict(type="str", required=True),
                taints=dict(type="list", elements="dict", required=True, options=TAINT_OPTIONS),
            )),
            taints=dict(type="list", elements="dict", options=TAINT_OPTIONS),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            cordon=dict(type="bool"),
            ocm=dict(type="dict", options=dict(
                cordon_effect=dict(type="str", choices=["NoSelect", "NoSelectIfNew"]),
            )),
            unregistered=dict(type="str", choices=list(hub_members.UNREGISTERED), default="fail"),
        ),
        required_one_of=[("taints", "cordon", "per_cluster"), ("clusters", "per_cluster")],
        mutually_exclusive=[("clusters", "per_cluster"), ("taints", "per_cluster")],
    )


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
