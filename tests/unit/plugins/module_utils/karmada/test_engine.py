import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.engine import KarmadaEngine
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

ENGINE = KarmadaEngine()


def test_push_and_pull_members():
    push, pull = {"spec": {"syncMode": "Push"}}, {"spec": {"syncMode": "Pull"}}
    assert ENGINE.is_push(push) and not ENGINE.is_push(pull) and not ENGINE.is_push(None)
    assert ENGINE.joined(pull) and not ENGINE.joined(push)
    ENGINE.check_pull_registration(push, "m1", allow_mode_change=True)
    ENGINE.check_pull_registration(pull, "m1", allow_mode_change=False)
    with pytest.raises(FleetError, match="registered on the hub in Push mode"):
        ENGINE.check_pull_registration(push, "m1", allow_mode_change=False)


def test_the_agent_identity_of_a_cluster():
    assert ENGINE.agent_organizations("m1") == [karmada.AGENTS_GROUP]
    assert ENGINE.common_name_problem("m1", "system:karmada:agent:m1") is None
    assert ENGINE.common_name_problem("m1", "system:karmada:agent:m2") == (
        "CN system:karmada:agent:m2 is not system:karmada:agent:m1, the agent identity of cluster m1")


def test_the_join_command_names_the_pins_and_cluster_sets_are_refused():
    assert ENGINE.cli_command("abc.def", "https://hub:6443", ["sha256:1", "sha256:2"]) == (
        "karmadactl register hub:6443 --token abc.def --discovery-token-ca-cert-hash sha256:1,sha256:2")
    assert ENGINE.cli_command("abc.def", "https://hub:6443", []) == "karmadactl register hub:6443 --token abc.def"
    with pytest.raises(FleetError, match="cluster sets are an OCM concept"):
        ENGINE.check_cluster_sets()
