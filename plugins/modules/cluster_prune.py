#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cluster_prune
short_description: Remove stale member clusters from a Karmada or OCM hub
version_added: 1.0.0
description:
  - Removes from the hub, hub side only, the member clusters the inventory no longer lists (O(listed)) and those the
    hub has not heard from for longer than O(unreachable_after) seconds; in check mode it lists them and removes
    nothing. Every other cluster is kept, and the result says why for each.
  - A cluster whose agent renews a Lease on the hub (Karmada Pull, OCM) is silent since its last renewal once the
    engine's grace has passed (Karmada the Lease's C(leaseDurationSeconds), OCM five lease durations); a cluster without
    one (Karmada Push) is silent since its readiness condition (C(Ready), OCM C(ManagedClusterConditionAvailable)) last
    changed when it is not C(True).
  - A candidate is kept when this collection did not register it - the hub has no record of it, ConfigMap
    C(kube-system/multicluster-fleet.<engine>.<cluster>), which M(multicluster.fleet.cluster_join) and
    M(multicluster.fleet.cluster_register) write and no member's agent can write, or a record of another cluster id -
    unless O(unmarked=true). The C(multicluster.fleet/cluster-id) annotation on the member object does not count, since an
    agent can create member objects with any annotation. A candidate is kept, too, when the hub still counts it as
    answering (Lease renewed, or ready) unless O(force=true), since its agent would go on running.
  - Removal is what unregistering does on the hub, without reaching the member - Karmada Push (C(karmadactl unjoin)) -
    the Cluster and its credential Secrets; Karmada Pull (C(karmadactl unregister)) - the Works in
    C(karmada-es-<cluster>), the Cluster, the agent's RBAC and that namespace; OCM (C(clusteradm unjoin)) - the
    ManagedCluster (the hub's registration controller then removes the cluster's RBAC) and the registration agent's
    Lease C(<cluster>/managed-cluster-lease), which has no owner and which no hub controller removes. Then, for every
    engine, the hub record and the certificate signing requests of the cluster's agent. An OCM cluster's namespace on
    the hub stays, and so does whatever the member holds (its agent, the Push ServiceAccounts).
  - What a removal deletes is named from the cluster's name by the collection's own rules, never read from the member
    object, and each cluster to remove lists it (RV(clusters[].deletes)). A Karmada Push Cluster whose C(secretRef) or
    C(impersonatorSecretRef) names another Secret than C(<namespace>/<cluster>) or C(<namespace>/<cluster>-impersonator)
    (the namespace it was joined with, else C(karmada-cluster)), or whose Secrets are not owned by it, is kept, saying
    why; the other clusters are decided as usual.
  - For a cluster the hub already counts as silent, a deleted Work's C(karmada.io/execution-controller) finalizer is
    removed at once, as C(karmadactl unjoin --force) does, since only the member's agent (a Pull member's karmada-agent)
    would remove it.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  listed:
    description:
      - The cluster names the inventory lists (the hub's own cluster included, where it is registered with itself).
        Every cluster on the hub that is not among them is a candidate.
      - Unset, no cluster is a candidate for that reason. An empty list makes every cluster a candidate.
    type: list
    elements: str
  unreachable_after:
    description:
      - Seconds; a cluster the hub has not heard from for longer is a candidate. Unset, no cluster is a candidate for
        that reason.
    type: int
  confirmed:
    description:
      - The clusters confirmed for removal, typically the RV(removed) of a listing in check mode. A candidate outside
        this list is kept, so that a cluster that became a candidate after the listing is not removed without having
        been listed.
      - Unset, every candidate that is not kept for another reason is removed.
    type: list
    elements: str
  force:
    description:
      - Also remove candidates the hub still counts as answering, and remove the finalizers of objects that are not
        released within O(wait_timeout) (an agent that will never answer never removes them).
    type: bool
    default: false
  unmarked:
    description:
      - Also remove candidates this collection did not register (no hub record of them). What their removal deletes
        follows the same rules as for any other cluster.
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds to wait for each object to be gone.
    type: int
    default: 120
  wait_sleep:
    description:
      - Seconds between two checks while waiting (at least V(1)).
    type: int
    default: 5
extends_documentation_fragment:
  - multicluster.fleet.engine
  - multicluster.fleet.auth
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Decides as a run would and lists the clusters it would remove, with what would be deleted; writes nothing.
  diff_mode:
    support: full
    details:
      - Shows each deleted object before and after.
  idempotent:
    support: full
notes:
  - At least one of O(listed) and O(unreachable_after) is required.
  - The hub credentials need C(list) of the engine's clusters, of CSRs and of ConfigMaps in C(kube-system), C(get) of
    Leases and Secrets and C(delete) of what removal deletes.
  - Playbook C(multicluster.fleet.prune) (C(playbooks/prune.yml)) lists the candidates first and removes them only
    when asked to.
seealso:
  - module: multicluster.fleet.cluster_register
  - module: multicluster.fleet.cluster_join
  - module: multicluster.fleet.cluster_diagnose
"""

EXAMPLES = r"""
- name: List the clusters the inventory no longer lists, or silent for a day
  multicluster.fleet.cluster_prune:
    kubeconfig: /etc/fleet/hub.kubeconfig
    engine: ocm
    listed: "{{ groups['members'] | map('extract', hostvars, 'cluster_name') | list }}"
    unreachable_after: 86400
  check_mode: true
  register: candidates

- name: Remove them, but none that became a candidate after the listing
  multicluster.fleet.cluster_prune:
    kubeconfig: /etc/fleet/hub.kubeconfig
    engine: ocm
    listed: "{{ groups['members'] | map('extract', hostvars, 'cluster_name') | list }}"
    unreachable_after: 86400
    confirmed: "{{ candidates.removed }}"

- name: Remove a decommissioned cluster that will never answer again
  multicluster.fleet.cluster_prune:
    kubeconfig: /etc/fleet/hub.kubeconfig
    engine: karmada
    listed: [member1, member2]
    force: true
"""

RETURN = r"""
clusters:
  description: Every member cluster on the hub, by name, with the decision on it.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The cluster's name on the hub.
      type: str
      sample: member3
    action:
      description: V(removed) (in check mode, would be removed), V(kept) or V(failed).
      type: str
      sample: removed
    reasons:
      description: Why it is a candidate - V(not_listed), V(unreachable); empty when it is none.
      type: list
      elements: str
      sample: [not_listed]
    why:
      description: The decision in words, with what the hub shows of the cluster.
      type: str
      sample: "not listed in the inventory; the hub has reported it not ready since 2026-12-01T10:00:00Z"
    silent_seconds:
      description: Seconds the hub has not heard from the cluster; null while it counts it as answering.
      type: int
      sample: 3600
    deletes:
      description: What its removal deletes (in check mode, would delete) on the hub, one C(Kind/namespace/name) each.
      type: list
      elements: str
      returned: when action is removed or failed
      sample: [Cluster/member3, Secret/karmada-cluster/member3, Secret/karmada-cluster/member3-impersonator]
    error:
      description: Why its removal failed.
      type: str
      returned: when action is failed
removed:
  description: The names of the clusters removed (in check mode, that would be).
  returned: always
  type: list
  elements: str
  sample: [member3]
kept:
  description: The names of the clusters kept.
  returned: always
  type: list
  elements: str
  sample: [member1, member2]
changes:
  description: What was deleted on the hub, one line per object, such as C(hub Cluster/member3 deleted).
  returned: always
  type: list
  elements: str
clusters_failed:
  description: The clusters whose removal failed.
  returned: failure
  type: list
  elements: str
"""

from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import prune
from ansible_collections.multicluster.fleet.plugins.module_utils.engines import NAMES
from ansible_collections.multicluster.fleet.plugins.module_utils.module import WAIT_ARG_SPEC, FleetModule


def run(module):
    return prune.prune(module.cluster(), module.params["engine"], module.params, check_mode=module.check_mode)


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(
        argument_spec=dict(
            engine=dict(type="str", required=True, choices=list(NAMES)),
            listed=dict(type="list", elements="str"),
            confirmed=dict(type="list", elements="str"),
            unreachable_after=dict(type="int"),
            force=dict(type="bool", default=False),
            unmarked=dict(type="bool", default=False),
            wait_timeout=WAIT_ARG_SPEC["wait_timeout"],
            wait_sleep=WAIT_ARG_SPEC["wait_sleep"],
        ),
        required_one_of=[("listed", "unreachable_after")],
    )


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
