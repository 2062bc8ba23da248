#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: manifest_work
short_description: Deliver Kubernetes manifests to member clusters through an OCM or Karmada hub
version_added: 1.0.0
description:
  - Writes one work object per member cluster on the hub, carrying the same manifests; the engine's agent applies
    them to the member and reports status back. One task addresses one or many clusters.
  - OCM (O(engine=ocm)) - a C(ManifestWork) (C(manifestworks.work.open-cluster-management.io/v1)) in the hub namespace
    named after the cluster, as C(kubectl apply -f manifest-work.yaml) in the OCM documentation does. The klusterlet's
    work agent applies it.
  - Karmada (O(engine=karmada)) - a C(Work) (C(works.work.karmada.io/v1alpha1)) in the namespace C(karmada-es-<cluster>),
    shaped as Karmada's own controllers shape theirs - finalizer C(karmada.io/execution-controller), and on every
    manifest the label C(karmada.io/managed) and the annotations C(work.karmada.io/name) and C(work.karmada.io/namespace),
    so that the execution controller removes the objects with the Work and the status controller reports their status
    and health.
  - Before writing anything the module checks that every manifest has C(apiVersion), C(kind) and C(metadata.name),
    that every cluster is registered (OCM - and accepted) and that its namespace exists on the hub. Errors name the
    manifest index and the clusters.
  - A work that already holds these manifests and options is left unchanged; a changed manifest updates the works
    whose content changed. The writes to many clusters run in parallel.
  - With O(wait), waits for all targeted works at once (one list request per poll) and returns, per cluster, the
    conditions, per-manifest status (conditions, status feedback values, reflected status, health) and the work.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  name:
    description:
      - Name of the work object, the same in every cluster namespace.
    type: str
    required: true
  clusters:
    description:
      - The member clusters to deliver to (OCM ManagedCluster or Karmada Cluster names).
    type: list
    elements: str
    required: true
  state:
    description:
      - V(present) writes the works; V(absent) deletes them, and the agents then delete or keep the applied objects
        as O(delete_option) said when the works were written.
    type: str
    choices: [present, absent]
    default: present
  manifests:
    description:
      - The Kubernetes objects to deliver, in order. Each needs C(apiVersion), C(kind) and C(metadata.name).
      - Combined with O(src); the manifests of O(manifests) come first.
      - One of O(manifests) and O(src) is required with O(state=present).
    type: list
    elements: dict
  src:
    description:
      - Files or directories with the manifests as YAML or JSON, several documents per file allowed.
      - A directory contributes its C(*.yaml), C(*.yml) and C(*.json) files in name order (not its subdirectories).
    type: list
    elements: path
  labels:
    description:
      - Labels of the work objects (merged with labels others set).
    type: dict
  annotations:
    description:
      - Annotations of the work objects (merged with annotations others set).
    type: dict
  delete_option:
    description:
      - What the agent does with the applied objects when the work is deleted (OCM - also when a manifest is
        removed from the work).
      - Karmada supports V(Foreground) and V(Orphan) (written as C(spec.preserveResourcesOnDeletion)).
    type: dict
    suboptions:
      propagation_policy:
        description:
          - V(Foreground) deletes the applied objects (the default of both engines); V(Orphan) leaves them on the
            member; V(SelectivelyOrphan) (only for O(engine=ocm)) leaves those matching
            O(delete_option.orphaning_rules).
        type: str
        choices: [Foreground, Orphan, SelectivelyOrphan]
        default: Foreground
      orphaning_rules:
        description:
          - The objects V(SelectivelyOrphan) leaves on the member.
        type: list
        elements: dict
        suboptions: &object_identifier  # also the suboptions of manifest_configs[].resource_identifier
          group:
            description: API group of the object, empty for the core group.
            type: str
            default: ""
          resource:
            description: Resource (plural) of the object, for example V(deployments) or V(configmaps).
            type: str
            required: true
          name:
            description: Name of the object.
            type: str
            required: true
          namespace:
            description: Namespace of the object, empty for cluster-scoped objects.
            type: str
            default: ""
  manifest_configs:
    description:
      - Only for O(engine=ocm) - per-object settings of the work agent (C(spec.manifestConfigs)).
    type: list
    elements: dict
    suboptions:
      resource_identifier:
        description: The object the settings apply to.
        type: dict
        required: true
        suboptions: *object_identifier
      feedback_rules:
        description:
          - Status fields the agent reports back in C(statusFeedback).
          - V(WellKnownStatus) reports the engine's fixed fields for common kinds (Deployment C(ReadyReplicas),
            C(Replicas), C(AvailableReplicas); Job; Pod); V(JSONPaths) reports the fields of O(manifest_configs[].feedback_rules[].json_paths).
        type: list
        elements: dict
        suboptions:
          type:
            description: The kind of rule.
            type: str
            required: true
            choices: [WellKnownStatus, JSONPaths]
          json_paths:
            description: With V(JSONPaths), the fields to report.
            type: list
            elements: dict
            suboptions:
              name:
                description: Name of the value in the feedback.
                type: str
                required: true
              path:
                description: JSON path under C(status), for example V(.status.readyReplicas).
                type: str
                required: true
              version:
                description: API version to read the object at; the preferred version when unset.
                type: str
      update_strategy:
        description:
          - How the agent updates the object. Without it the agent uses V(Update).
        type: dict
        suboptions:
          type:
            description:
              - V(Update) replaces the object's content; V(CreateOnly) creates it and never updates it;
                V(ServerSideApply) applies it as field manager O(manifest_configs[].update_strategy.server_side_apply.field_manager);
                V(ReadOnly) only reads it (for status feedback) and never creates or deletes it.
            type: str
            required: true
            choices: [Update, CreateOnly, ServerSideApply, ReadOnly]
          server_side_apply:
            description: Settings of V(ServerSideApply).
            type: dict
            suboptions:
              force:
                description: Take over fields other field managers own instead of failing with a conflict.
                type: bool
                default: false
              field_manager:
                description: The field manager name; must start with V(work-agent).
                type: str
                default: work-agent
  wait_condition:
    description:
      - What O(wait) waits for on every targeted work, as the C(wait_condition) of M(kubernetes.core.k8s) - a dict with
        C(type), C(status) (V(True), V(False) or V(Unknown); default V(True)) and optionally C(reason).
      - C(type=Applied) - the agent applied every manifest (OCM condition C(Applied) for the current generation;
        Karmada condition C(Applied)).
      - C(type=Available) - additionally every object exists and is up (OCM condition C(Available); Karmada, whose
        controllers write no such condition, every manifest's reported health C(Healthy), so only with status V(True)
        and no reason).
      - "A string is taken as the C(type) (the form of earlier releases): V(Available) stands for C({type: Available})."
      - "Default C({type: Applied, status: 'True'})."
    type: raw
extends_documentation_fragment:
  - multicluster.fleet.engine
  - multicluster.fleet.auth
  - multicluster.fleet.wait
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports which works would be created, updated or deleted, using the hub's dry run; writes nothing and does not wait.
  diff_mode:
    support: full
    details:
      - Shows each changed work before and after, one diff per cluster. Values of Secret manifests are masked.
  idempotent:
    support: full
notes:
  - Karmada conditions carry no C(observedGeneration), so right after a Work is updated its C(Applied) condition may
    still describe the previous content; OCM conditions for an older generation are not taken as current.
  - The hub credentials need C(list) on the work resource across namespaces when O(wait) is used.
seealso:
  - name: OCM - Apply a ManifestWork
    description: The OCM documentation this module follows.
    link: https://open-cluster-management.io/docs/getting-started/installation/register-a-cluster/
"""

EXAMPLES = r"""
- name: Run the hello Pod on two OCM managed clusters and wait until it is applied
  multicluster.fleet.manifest_work:
    engine: ocm
    kubeconfig: /etc/fleet/hub.kubeconfig
    name: mw-01
    clusters: [cluster1, cluster2]
    manifests:
      - apiVersion: v1
        kind: Pod
        metadata:
          name: hello
          namespace: default
        spec:
          containers:
            - name: hello
              image: busybox
              command: ["sh", "-c", 'echo "Hello, Kubernetes!" && sleep 3600']
          restartPolicy: OnFailure
    wait: true
  register: delivered

- name: Show where the work is applied
  ansible.builtin.debug:
    msg: "{{ delivered.clusters | dict2items | selectattr('value.applied') | map(attribute='key') | list }}"

- name: Deliver a directory of manifests to every member of the inventory, through Karmada
  multicluster.fleet.manifest_work:
    engine: karmada
    name: web
    clusters: "{{ groups['members'] | map('extract', hostvars, 'cluster_name') | list }}"
    src:
      - files/web/
    delete_option:
      propagation_policy: Orphan
    wait: true
    wait_condition:
      type: Available
    wait_timeout: 300
    wait_sleep: 10

- name: A Deployment with status feedback, applied server side (OCM)
  multicluster.fleet.manifest_work:
    engine: ocm
    name: web
    clusters: [cluster1]
    src: [files/web-deployment.yaml]
    manifest_configs:
      - resource_identifier: {group: apps, resource: deployments, namespace: web, name: web}
        feedback_rules:
          - type: WellKnownStatus
        update_strategy:
          type: ServerSideApply
          server_side_apply: {force: true}
    wait: true
    wait_condition: Available
  register: web

- name: Ready replicas per cluster
  ansible.builtin.debug:
    msg: "{{ web.clusters.cluster1.manifests[0].feedback.ReadyReplicas }}"

- name: Remove the work; the agents delete the Pod (Foreground) unless the work said Orphan
  multicluster.fleet.manifest_work:
    engine: ocm
    name: mw-01
    clusters: [cluster1, cluster2]
    state: absent
    wait: true
"""

RETURN = r"""
clusters:
  description: Per cluster name, what happened to its work and its status.
  returned: always
  type: dict
  contains:
    action:
      description: V(created), V(updated), V(unchanged), V(deleted) or V(absent).
      type: str
      sample: created
    namespace:
      description: The hub namespace of the work.
      type: str
      sample: cluster1
    applied:
      description: The engine applied every manifest (see O(wait_condition)).
      type: bool
      sample: true
    available:
      description: Every object is available (OCM condition C(Available); Karmada all manifests C(Healthy)).
      type: bool
      sample: true
    conditions:
      description: Status conditions of the work with C(type), C(status), C(reason), C(message), C(lastTransitionTime).
      type: list
      elements: dict
    manifests:
      description: One entry per manifest, in order.
      type: list
      elements: dict
      contains:
        ordinal:
          description: Index of the manifest in the work.
          type: int
          sample: 0
        api_version:
          description: The manifest's apiVersion.
          type: str
          sample: apps/v1
        kind:
          description: The manifest's kind.
          type: str
          sample: Deployment
        namespace:
          description: The manifest's namespace, if any.
          type: str
          sample: default
        name:
          description: The manifest's name.
          type: str
          sample: web
        applied:
          description: OCM manifest condition C(Applied) (null when not reported, or for Karmada).
          type: bool
        available:
          description: OCM manifest condition C(Available), or Karmada health C(Healthy) (null when not reported).
          type: bool
        conditions:
          description: OCM per-manifest conditions (C(Applied), C(Available), C(StatusFeedbackSynced)); empty for Karmada.
          type: list
          elements: dict
        feedback:
          description: OCM status feedback values by name, for example C(ReadyReplicas).
          type: dict
          sample: {ReadyReplicas: 2, Replicas: 2, AvailableReplicas: 2}
        status:
          description: Karmada's reflected status of the object; null for OCM.
          type: dict
        health:
          description: Karmada's health of the object, V(Healthy), V(Unhealthy) or V(Unknown); null for OCM.
          type: str
        resource:
          description: OCM's resource (plural) for the manifest, as the agent resolved it.
          type: str
          sample: deployments
    object:
      description: The work as the hub stores it (server-owned metadata left out, Secret manifest values masked).
      type: dict
clusters_failed:
  description: The clusters a check or a write failed for (the message says why); the other clusters are in RV(clusters).
  returned: failure
  type: list
  elements: str
  sample: [cluster3]
diff:
  description: With C(--diff), one before/after per changed work.
  returned: changed and diff mode
  type: list
  elements: dict
"""

from ansible_collections.multicluster.fleet.plugins.module_utils import work
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import works as ocm_works
from ansible_collections.multicluster.fleet.plugins.module_utils.engines import NAMES
from ansible_collections.multicluster.fleet.plugins.module_utils.module import WAIT_ARG_SPEC, FleetModule


def _identifier_spec():
    return dict(group=dict(type="str", default=""), resource=dict(type="str", required=True),
                name=dict(type="str", required=True), namespace=dict(type="str", default=""))


def run(module):
    params = module.params
    resources.check_wait_options(params)
    hub = module.cluster()
    if params["state"] == "absent":
        return work.remove(hub, params["engine"], params["name"], params["clusters"], module.check_mode,
                           resources.Wait.from_params(params))
    manifests = [(m, None) for m in params["manifests"] or []] + work.load_sources(params["src"])
    module.no_log_values.update(work.secret_values(m for m, _origin in manifests))
    options = dict((k, params[k]) for k in ("labels", "annotations", "delete_option", "manifest_configs"))
    return work.deliver(hub, params["engine"], params["name"], params["clusters"], manifests, options,
                        module.check_mode, resources.Wait.from_params(params))


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(
        argument_spec=dict(
            engine=dict(type="str", required=True, choices=list(NAMES)),
            name=dict(type="str", required=True),
            clusters=dict(type="list", elements="str", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            manifests=dict(type="list", elements="dict"),
            src=dict(type="list", elements="path"),
            labels=dict(type="dict"),
            annotations=dict(type="dict"),
            delete_option=dict(type="dict", options=dict(
                propagation_policy=dict(type="str", choices=list(ocm_works.PROPAGATION_POLICIES), default="Foreground"),
                orphaning_rules=dict(type="list", elements="dict", options=_identifier_spec()),
            )),
            manifest_configs=dict(type="list", elements="dict", options=dict(
                resource_identifier=dict(type="dict", required=True, options=_identifier_spec()),
                feedback_rules=dict(type="list", elements="dict", options=dict(
                    type=dict(type="str", required=True, choices=list(ocm_works.FEEDBACK_TYPES)),
                    json_paths=dict(type="list", elements="dict", options=dict(
                        name=dict(type="str", required=True), path=dict(type="str", required=True),
                        version=dict(type="str"))),
                )),
                update_strategy=dict(type="dict", options=dict(
                    type=dict(type="str", required=True, choices=list(ocm_works.UPDATE_STRATEGIES)),
                    server_side_apply=dict(type="dict", options=dict(
                        force=dict(type="bool", default=False),
                        field_manager=dict(type="str", default=ocm_works.FIELD_MANAGER))),
                )),
            )),
            wait_condition=dict(type="raw"),
            **WAIT_ARG_SPEC
        ),
        required_if=[("state", "present", ("manifests", "src"), True)],
    )


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
