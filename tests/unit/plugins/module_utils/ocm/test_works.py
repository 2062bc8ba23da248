import re

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import works as ocm_works
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


class TestOcmOptions:
    def test_delete_options(self):
        assert ocm_works.delete_option(None) is None
        assert ocm_works.delete_option({"propagation_policy": "Orphan", "orphaning_rules": None}) == {"propagationPolicy": "Orphan"}
        rules = [{"group": "", "resource": "configmaps", "name": "keep", "namespace": "default"},
                 {"group": "apps", "resource": "deployments", "name": "web", "namespace": None}]
        assert ocm_works.delete_option({"propagation_policy": "SelectivelyOrphan", "orphaning_rules": rules}) == {
            "propagationPolicy": "SelectivelyOrphan", "selectivelyOrphans": {"orphaningRules": [
                {"resource": "configmaps", "name": "keep", "namespace": "default"},
                {"group": "apps", "resource": "deployments", "name": "web"}]}}
        with pytest.raises(FleetError, match="orphaning_rules only apply with propagation_policy SelectivelyOrphan, not Foreground"):
            ocm_works.delete_option({"propagation_policy": "Foreground", "orphaning_rules": rules})

    def test_manifest_configs(self):
        configs = [{"resource_identifier": {"group": "apps", "resource": "deployments", "name": "web", "namespace": "default"},
                    "feedback_rules": [{"type": "WellKnownStatus", "json_paths": None},
                                       {"type": "JSONPaths", "json_paths": [{"name": "ready", "path": ".readyReplicas", "version": None},
                                                                            {"name": "x", "path": ".x", "version": "v1"}]}],
                    "update_strategy": {"type": "ServerSideApply", "server_side_apply": {"force": True, "field_manager": "work-agent-x"}}},
                   {"resource_identifier": {"resource": "configmaps", "name": "cm"}, "feedback_rules": None,
                    "update_strategy": {"type": "CreateOnly", "server_side_apply": None}},
                   {"resource_identifier": {"resource": "secrets", "name": "s"}}]
        assert ocm_works.manifest_configs(configs) == [
            {"resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "web", "namespace": "default"},
             "feedbackRules": [{"type": "WellKnownStatus"},
                               {"type": "JSONPaths", "jsonPaths": [{"name": "ready", "path": ".readyReplicas"},
                                                                   {"name": "x", "path": ".x", "version": "v1"}]}],
             "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {"force": True, "fieldManager": "work-agent-x"}}},
            {"resourceIdentifier": {"resource": "configmaps", "name": "cm"}, "updateStrategy": {"type": "CreateOnly"}},
            {"resourceIdentifier": {"resource": "secrets", "name": "s"}}]
        assert ocm_works.manifest_configs(None) == []

    @pytest.mark.parametrize("config,message", [
        ({"feedback_rules": [{"type": "JSONPaths", "json_paths": []}]}, "manifest_configs[0]: feedback rule type JSONPaths needs json_paths"),
        ({"feedback_rules": [{"type": "WellKnownStatus", "json_paths": [{"name": "a", "path": ".a"}]}]},
         "feedback rule type WellKnownStatus takes no json_paths"),
        ({"update_strategy": {"type": "Update", "server_side_apply": {"force": False}}},
         "server_side_apply only applies to update strategy ServerSideApply"),
        ({"update_strategy": {"type": "ServerSideApply", "server_side_apply": {"field_manager": "kubectl"}}},
         "field_manager must start with work-agent, got kubectl"),
    ])
    def test_bad_manifest_configs(self, config, message):
        with pytest.raises(FleetError, match=re.escape(message)):
            ocm_works.manifest_configs([dict(config, resource_identifier={"resource": "r", "name": "n"})])
