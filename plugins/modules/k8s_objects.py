#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: k8s_objects
short_description: Apply or remove a set of Kubernetes objects of known kinds, such as an operator bundle
version_added: 1.0.0
description:
  - Makes a list of manifests exist (O(state=present)) or not (O(state=absent)) on one cluster - namespaces,
    CRDs, ServiceAccounts, RBAC, Deployments, Secrets, ConfigMaps and the Karmada and OCM custom resources.
    The roles of this collection install the OCM cluster-manager and klusterlet operator bundles and the
    karmada-agent with it.
  - Objects are applied in the order given; an object that exists is merge-patched with the fields of its
    manifest only when one of them differs, so a second run reports no change. A CRD that was created or
    changed is waited for until it is C(Established) before the next object, which may be of its kind.
  - Before anything is written, every object is sent to the API server as a server-side dry run. When the server
    refuses one (an invalid name, a missing field, a failed admission check), the task fails naming each refused
    object and writes nothing. A failure once writes have begun reports C(changed) and names the objects written.
  - Objects are removed in reverse order, so a bundle that lists namespaces and CRDs first removes them last.
  - Only known kinds are accepted (the core kinds listed under O(objects), Karmada C(Cluster) and C(Work), OCM
    C(ManagedCluster), C(ManifestWork), C(ClusterManager) and C(Klusterlet)); their REST paths are known, so no
    API discovery is made. Other kinds fail with the list of known ones.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  objects:
    description:
      - The manifests, each with C(apiVersion), C(kind) and C(metadata.name). Documents of C(kind=List) are expanded.
      - "Known core kinds: C(v1) Namespace, Secret, ConfigMap, ServiceAccount; C(rbac.authorization.k8s.io/v1)
        ClusterRole, ClusterRoleBinding, Role, RoleBinding; C(apps/v1) Deployment; C(apiextensions.k8s.io/v1)
        CustomResourceDefinition; C(certificates.k8s.io/v1) CertificateSigningRequest."
      - To apply a Jinja2 template, render it on the controller and pass the result, for example
        C(lookup('ansible.builtin.template', 'bundle.yaml.j2') | ansible.builtin.from_yaml_all | list).
      - The values of Secret manifests (C(data), C(stringData)) are masked in every result.
      - Exactly one of O(objects) and O(src) is required.
    type: list
    elements: raw
  src:
    description:
      - Path of a YAML or JSON file with the manifests, one document each (separated by C(---)), or of a directory
        whose C(*.yaml), C(*.yml) and C(*.json) files are read in name order.
    type: path
  namespace:
    description:
      - Namespace for namespaced objects whose manifest has none.
    type: str
  state:
    description:
      - V(present) creates or updates the objects, V(absent) deletes them.
    type: str
    choices: [present, absent]
    default: present
  existing:
    description:
      - What O(state=present) does with an object that exists. V(update) merge-patches it to match the manifest.
      - V(keep) leaves it as it is and only creates missing objects, the way Helm treats the CRDs of a chart
        (an existing CRD may be newer, or owned by another installation).
      - V(keep_crds) does so for CustomResourceDefinitions only and updates the other objects - an operator bundle with
        its CRDs in one task.
    type: str
    choices: [update, keep, keep_crds]
    default: update
  keep_unlabeled:
    description:
      - With O(state=absent), leave in place an object that lacks a label its manifest sets; it was not created
        from this manifest (for example a CRD installed before). It is reported as unchanged.
    type: bool
    default: false
  wait:
    description:
      - With O(state=present), wait until every Deployment is C(Available) for its current generation, every CRD is
        C(Established) and every object of another kind has the O(wait_condition) (or each of the O(wait_conditions)).
      - With O(state=absent), wait until each object is gone (its finalizers done) before deleting the next one.
      - In check mode nothing is written, so nothing is waited for.
  wait_condition:
    description:
      - With O(wait), the status condition objects other than Deployments and CRDs must have, for example the
        C(Applied=True) of an OCM ClusterManager, as in M(kubernetes.core.k8s). Without it (or O(wait_conditions)) such
        objects are not waited for.
      - A C(status.observedGeneration) older than the object's generation means its controller has not seen the
        current spec yet; the wait goes on until it has.
      - Mutually exclusive with O(wait_conditions).
  wait_conditions:
    description:
      - With O(wait), several conditions that objects other than Deployments and CRDs must all have, each as
        O(wait_condition).
      - Mutually exclusive with O(wait_condition).
    type: list
    elements: dict
    default: []
    suboptions:
      type:
        description: The condition type.
        type: str
        required: true
      status:
        description: The condition status to wait for.
        type: str
        choices: ["True", "False", "Unknown"]
        default: "True"
      reason:
        description: The condition reason to wait for as well; any reason when unset.
        type: str
  wait_timeout:
    description:
      - How many seconds each wait may take (V(0) checks once).
extends_documentation_fragment:
  - multicluster.fleet.auth
  - multicluster.fleet.wait
  - multicluster.fleet.wait.condition
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Writes are server-side dry runs. Objects in a namespace or of a CRD that the same run would create are
        reported as created.
  diff_mode:
    support: full
    details:
      - One before/after per object that changes; Secret values are masked.
  idempotent:
    support: full
notes:
  - Merge patches set the fields of the manifest; fields that others (controllers, defaults) set are kept, and a
    field removed from the manifest is not removed from the object.
seealso:
  - module: multicluster.fleet.cluster_info
"""

EXAMPLES = r"""
- name: Install an operator bundle rendered from a template and wait for its Deployment
  multicluster.fleet.k8s_objects:
    kubeconfig: /etc/fleet/hub.kubeconfig
    objects: "{{ lookup('ansible.builtin.template', 'cluster-manager.yaml.j2') | ansible.builtin.from_yaml_all | list }}"
    wait: true

- name: Configure OCM's ClusterManager and wait until the operator applied it
  multicluster.fleet.k8s_objects:
    objects:
      - apiVersion: operator.open-cluster-management.io/v1
        kind: ClusterManager
        metadata:
          name: cluster-manager
        spec:
          registrationConfiguration:
            featureGates:
              - feature: ResourceCleanup
                mode: Enable
    wait: true
    wait_conditions:
      - type: Applied
      - type: HubRegistrationDegraded
        status: "False"

- name: Create a Karmada Cluster object and wait until Karmada reports it Ready, checking every 10 seconds
  multicluster.fleet.k8s_objects:
    objects:
      - apiVersion: cluster.karmada.io/v1alpha1
        kind: Cluster
        metadata:
          name: member1
        spec:
          syncMode: Pull
    wait: true
    wait_condition:
      type: Ready
    wait_sleep: 10
    wait_timeout: 300
  register: applied

- name: Show the stored Cluster, as kubernetes.core.k8s returns it
  ansible.builtin.debug:
    var: applied.result.status

- name: Create the CRDs of a bundle only where they are missing
  multicluster.fleet.k8s_objects:
    src: /opt/bundles/crds.yaml
    existing: keep

- name: A namespace and a ConfigMap in it
  multicluster.fleet.k8s_objects:
    context: member1
    objects:
      - apiVersion: v1
        kind: Namespace
        metadata:
          name: fleet-demo
      - apiVersion: v1
        kind: ConfigMap
        metadata:
          name: settings
        data:
          region: eu-west-1
    namespace: fleet-demo

- name: Remove them again, each deletion finished before the next
  multicluster.fleet.k8s_objects:
    context: member1
    src: /opt/bundles/demo.yaml
    state: absent
    wait: true
"""

RETURN = r"""
objects:
  description:
    - What happened to each object, C(Kind/namespace/name) (or C(Kind/name)) and one of V(created), V(updated),
      V(unchanged), V(deleted), V(absent). In the order applied (reverse order for O(state=absent)).
    - Also returned when the task fails after writes began, for the objects handled until then.
  returned: always
  type: list
  elements: str
  sample: ["Namespace/open-cluster-management: created", "Deployment/open-cluster-management/cluster-manager: unchanged"]
method:
  description:
    - With a single object, how it was handled, as M(kubernetes.core.k8s) says it - V(create), V(update) (also when
      nothing had to change) or V(delete).
  returned: success, when the task handles one object
  type: str
  sample: create
result:
  description:
    - The objects, as M(kubernetes.core.k8s) returns them. With a single object, the object itself. With several,
      C(results) - one entry per object, in the order of RV(objects).
    - An object is as the API server stored it (in check mode, as it would store it; with O(wait), as last read while
      waiting), without C(managedFields) and the other server-owned metadata, Secret values masked. A deleted or
      absent object is empty.
  returned: success
  type: dict
  sample:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings, namespace: fleet-demo}
    data: {region: eu-west-1}
  contains:
    results:
      description: With several objects, one entry per object.
      returned: when the task handles several objects
      type: list
      elements: dict
      contains:
        changed:
          description: Whether this object changed.
          type: bool
        method:
          description: V(create), V(update) or V(delete).
          type: str
        result:
          description: The object (empty once deleted).
          type: dict
"""

from ansible_collections.multicluster.fleet.plugins.module_utils import work
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import objects, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.module import WAIT_ARG_SPEC, WAIT_CONDITION_ARG_SPEC, FleetModule


def run(module):
    params = module.params
    manifests = params["objects"]
    if manifests is None:
        manifests = [manifest for manifest, _origin in work.load_sources([params["src"]])]
    module.no_log_values.update(work.secret_values(objects.expand(manifests)))
    items = objects.prepare(manifests, params["namespace"])
    resources.check_wait_options(params)
    cluster = module.cluster()
    if params["state"] == "present":
        conditions = [params["wait_condition"]] if params["wait_condition"] else params["wait_conditions"]
        outcomes = objects.apply(cluster, items, module.check_mode, params["existing"], params["wait"], params["wait_timeout"],
                                 conditions, params["wait_sleep"])
    else:
        outcomes = objects.remove(cluster, items, module.check_mode, params["keep_unlabeled"], params["wait"],
                                  params["wait_timeout"], params["wait_sleep"])
    return objects.result(outcomes, params["state"])


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(
        role="cluster",
        argument_spec=dict(
            objects=dict(type="list", elements="raw"),
            src=dict(type="path"),
            namespace=dict(type="str"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            existing=dict(type="str", choices=list(objects.EXISTING), default="update"),
            keep_unlabeled=dict(type="bool", default=False),
            wait_conditions=dict(type="list", elements="dict", default=[], options=dict(
                type=dict(type="str", required=True),
                status=dict(type="str", choices=list(resources.CONDITION_STATUSES), default="True"),
                reason=dict(type="str"),
            )),
            **WAIT_ARG_SPEC, **WAIT_CONDITION_ARG_SPEC
        ),
        mutually_exclusive=[("objects", "src"), ("wait_condition", "wait_conditions")],
        required_one_of=[("objects", "src")],
    )


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
