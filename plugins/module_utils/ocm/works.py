# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OCM workloads: a ``ManifestWork`` in the hub namespace named after the cluster; the klusterlet's work agent applies its
manifests and writes status back (conditions Applied/Available, per-manifest conditions and status feedback). What the
engines share is in ``work.py`` (module manifest_work)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.work import (
    APPLIED, AVAILABLE, condition_progress, condition_status, feedback_value, manifest_name,
)
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# work.open-cluster-management.io/v1
PROPAGATION_POLICIES = ("Foreground", "Orphan", "SelectivelyOrphan")
UPDATE_STRATEGIES = ("Update", "CreateOnly", "ServerSideApply", "ReadOnly")
FEEDBACK_TYPES = ("WellKnownStatus", "JSONPaths")
FIELD_MANAGER = "work-agent"


def _identifier(value):
    """An OCM resource identifier; the core group and cluster scope are written as absent keys (empty means that)."""
    return dict((k, value.get(k)) for k in ("group", "resource", "name", "namespace") if value.get(k))


def delete_option(option):
    """``spec.deleteOption`` from the module's ``delete_option`` (None: OCM's default, Foreground)."""
    if not option:
        return None
    policy = option.get("propagation_policy") or "Foreground"
    rules = option.get("orphaning_rules") or []
    if rules and policy != "SelectivelyOrphan":
        raise FleetError("delete_option.orphaning_rules only apply with propagation_policy SelectivelyOrphan, not %s" % policy)
    result = {"propagationPolicy": policy}
    if policy == "SelectivelyOrphan":
        result["selectivelyOrphans"] = {"orphaningRules": [_identifier(rule) for rule in rules]}
    return result


def manifest_configs(configs):
    """``spec.manifestConfigs`` from the module's ``manifest_configs``."""
    result = []
    for index, config in enumerate(configs or []):
        where = "manifest_configs[%d]" % index
        item = {"resourceIdentifier": _identifier(config["resource_identifier"])}
        rules = []
        for rule in config.get("feedback_rules") or []:
            paths = rule.get("json_paths") or []
            if (rule["type"] == "JSONPaths") != bool(paths):
                raise FleetError("%s: feedback rule type %s %s json_paths" % (
                    where, rule["type"], "needs" if rule["type"] == "JSONPaths" else "takes no"))
            converted = {"type": rule["type"]}
            if paths:
                converted["jsonPaths"] = [dict((k, v) for k, v in (("name", p["name"]), ("path", p["path"]),
                                                                   ("version", p.get("version"))) if v)
                                          for p in paths]
            rules.append(converted)
        if rules:
            item["feedbackRules"] = rules
        strategy = config.get("update_strategy")
        if strategy:
            item["updateStrategy"] = {"type": strategy["type"]}
            ssa = strategy.get("server_side_apply")
            if ssa:
                if strategy["type"] != "ServerSideApply":
                    raise FleetError("%s: server_side_apply only applies to update strategy ServerSideApply" % where)
                manager = ssa.get("field_manager") or FIELD_MANAGER
                if not manager.startswith(FIELD_MANAGER):
                    raise FleetError("%s: field_manager must start with %s, got %s" % (where, FIELD_MANAGER, manager))
                item["updateStrategy"]["serverSideApply"] = {"force": bool(ssa.get("force")), "fieldManager": manager}
        result.append(item)
    return result


class OcmWorks:
    """OCM ``ManifestWork`` in namespace ``<cluster>``, applied by the klusterlet's work agent."""

    kind = ocm.MANIFEST_WORK

    @staticmethod
    def namespace(cluster):
        return cluster

    @staticmethod
    def check_condition(wanted):
        """Every wanted condition is one the work agent writes."""

    @staticmethod
    def cluster_problem(obj):
        if not (obj.get("spec") or {}).get("hubAcceptsClient"):
            return ("is not accepted: ManagedCluster %s has spec.hubAcceptsClient false; accept it first "
                    "(clusteradm accept, or approve its CSR and set hubAcceptsClient)" % obj["metadata"]["name"])
        return None

    @staticmethod
    def build(name, namespace, manifests, options):
        spec = {"workload": {"manifests": manifests}}
        deletion = delete_option(options.get("delete_option"))
        if deletion:
            spec["deleteOption"] = deletion
        configs = manifest_configs(options.get("manifest_configs"))
        if configs:
            spec["manifestConfigs"] = configs
        return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}

    @staticmethod
    def manifest_statuses(work):
        """``{ordinal: summary}`` from ``status.resourceStatus.manifests``."""
        found = {}
        for item in (((work.get("status") or {}).get("resourceStatus") or {}).get("manifests")) or []:
            meta = item.get("resourceMeta") or {}
            conditions = item.get("conditions") or []
            found[meta.get("ordinal", 0)] = {
                "conditions": resources.conditions_of({"status": {"conditions": conditions}}),
                "applied": condition_status(conditions, APPLIED),
                "available": condition_status(conditions, AVAILABLE),
                "feedback": dict((v.get("name"), feedback_value(v.get("fieldValue") or {}))
                                 for v in (item.get("statusFeedback") or {}).get("values") or []),
                "resource": meta.get("resource"),
            }
        return found

    @classmethod
    def progress(cls, work, wanted):
        """``(done, detail)``: whether the work has the ``wanted`` condition for its current generation."""
        done, detail = condition_progress(work, wanted)
        if not done and work is not None:
            failed = [(ordinal, s) for ordinal, s in sorted(cls.manifest_statuses(work).items()) if s["applied"] is False]
            if failed:
                ordinal, summary = failed[0]
                message = [c["message"] for c in summary["conditions"] if c["type"] == APPLIED]
                detail += "; manifests[%d] %s: %s" % (ordinal, manifest_name(work, ordinal), message[0] if message else "")
        return done, detail
