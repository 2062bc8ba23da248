# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Karmada workloads: a ``Work`` in ``karmada-es-<cluster>``; its execution controller applies the manifests, its work
status controller reflects each object's status and health into ``status.manifestStatuses``. What the engines share is
in ``work.py`` (module manifest_work)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.work import APPLIED, AVAILABLE, condition_progress, manifest_name
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# What Karmada's own Work creators set, so that its execution
# controller deletes the applied objects with the Work and its status controller reflects their status.
MANAGED_LABEL = "karmada.io/managed"
WORK_NAME_ANNOTATION = "work.karmada.io/name"
WORK_NAMESPACE_ANNOTATION = "work.karmada.io/namespace"
HEALTHY = "Healthy"


class KarmadaWorks:
    """Karmada ``Work`` in namespace ``karmada-es-<cluster>``, applied by the execution controller."""

    kind = karmada.WORK

    namespace = staticmethod(karmada.execution_namespace)

    @staticmethod
    def cluster_problem(obj):
        return None

    @staticmethod
    def build(name, namespace, manifests, options):
        policy = (options.get("delete_option") or {}).get("propagation_policy") or "Foreground"
        if policy == "SelectivelyOrphan":
            raise FleetError("Karmada Works are deleted with all their objects or orphan all of them: "
                             "delete_option.propagation_policy SelectivelyOrphan is OCM only")
        if options.get("manifest_configs"):
            raise FleetError("manifest_configs (feedback rules, update strategies) are OCM only; "
                             "Karmada reflects status and health of every manifest without them")
        marked = []
        for manifest in manifests:
            manifest = copy.deepcopy(manifest)
            metadata = manifest.setdefault("metadata", {})
            metadata.setdefault("labels", {})[MANAGED_LABEL] = "true"
            metadata.setdefault("annotations", {}).update({WORK_NAME_ANNOTATION: name,
                                                           WORK_NAMESPACE_ANNOTATION: namespace})
            marked.append(manifest)
        spec = {"workload": {"manifests": marked}}
        if policy == "Orphan":
            spec["preserveResourcesOnDeletion"] = True
        return {"metadata": {"name": name, "namespace": namespace, "finalizers": [karmada.EXECUTION_FINALIZER]}, "spec": spec}

    @staticmethod
    def manifest_statuses(work):
        """``{ordinal: summary}`` from ``status.manifestStatuses`` (reflected status and health)."""
        found = {}
        for item in (work.get("status") or {}).get("manifestStatuses") or []:
            health = item.get("health")
            found[(item.get("identifier") or {}).get("ordinal", 0)] = {
                "status": item.get("status"),
                "health": health,
                "available": health == HEALTHY if health else None,
            }
        return found

    @staticmethod
    def check_condition(wanted):
        """FleetError for a wanted condition Karmada cannot report: Available is derived, so only Available=True."""
        if wanted["type"] == AVAILABLE and (wanted["status"] != "True" or wanted.get("reason")):
            raise FleetError("Karmada writes no Available condition on a Work (it is derived from the health of every "
                             "manifest): wait_condition Available takes neither a status other than True nor a reason")

    @classmethod
    def progress(cls, work, wanted):
        """``(done, detail)``: Applied is the Work's condition; Available means Applied and every manifest Healthy.

        Karmada's controllers write no Available condition on a Work; the health of each applied object
        (``status.manifestStatuses[].health``) is what says the workload is up.
        """
        if wanted["type"] == APPLIED:
            return condition_progress(work, wanted)
        done, detail = condition_progress(work, resources.wanted_condition(APPLIED))
        if not done:
            return done, detail
        statuses = cls.manifest_statuses(work)
        for ordinal in range(len(work["spec"]["workload"].get("manifests") or [])):
            health = (statuses.get(ordinal) or {}).get("health")
            if health != HEALTHY:
                return False, "manifests[%d] %s health %s" % (ordinal, manifest_name(work, ordinal), health or "not reported yet")
        return True, None
