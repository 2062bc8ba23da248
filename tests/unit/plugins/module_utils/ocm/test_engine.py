import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.engine import OcmEngine
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

ENGINE = OcmEngine()


def test_members_register_by_pull_and_join_with_a_condition():
    joined = {"status": {"conditions": [{"type": ocm.JOINED, "status": "True"}]}}
    assert not ENGINE.is_push(joined) and ENGINE.joined(joined) and not ENGINE.joined({"status": {}})
    ENGINE.check_cluster_sets()  # OCM has them


def test_the_agent_identities_of_a_cluster():
    assert ENGINE.agent_organizations("east") == ["system:open-cluster-management:east",
                                                  "system:open-cluster-management:managed-clusters"]
    assert ENGINE.common_name_problem("east", "system:open-cluster-management:east:agent1") is None
    assert "is not system:open-cluster-management:east:<agent-name>" in ENGINE.common_name_problem(
        "east", "system:open-cluster-management:west:agent1")


def test_the_join_command_and_the_klusterlet_modes():
    assert ENGINE.cli_command("t", "https://hub:6443", ["sha256:1"]) == "clusteradm join --hub-token t --hub-apiserver https://hub:6443"
    with pytest.raises(FleetError, match="klusterlet_mode must be one of Default, Singleton, Hosted, SingletonHosted"):
        ENGINE.klusterlet_placement("east", "Remote", "csr")
