import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.multicluster.fleet.plugins.test import fleet


@pytest.mark.parametrize("result, waiting", [
    # a module wait that timed out: run the task again
    ({"failed": True, "msg": "timed out after 10s", "last_seen": "Ready=False"}, True),
    # csr_accept: the CSRs have not come (also where failed_when: false made it a success)
    ({"failed": True, "msg": "timed out", "waiting": ["member1"]}, True),
    ({"failed": False, "msg": "timed out", "waiting": ["member1"]}, True),
    # bootstrap_token create=false: the hub play has not made the join token yet
    ({"failed": True, "msg": "no join token", "missing": True}, True),
    # done, or failed for another reason: stop
    ({"changed": True}, False),
    ({"failed": True, "msg": "Forbidden"}, False),
    ({"failed": False, "last_seen": "Ready=True"}, False),
])
def test_waiting(result, waiting):
    assert fleet.waiting(result) is waiting


def test_refuses_what_is_not_a_result():
    with pytest.raises(AnsibleFilterError, match="waiting expects a task result"):
        fleet.waiting("failed")


@pytest.mark.parametrize("value, named", [
    ("karmada", True), ("ocm", True),
    ("Karmada", False), ("", False), ("ocm ", False), (None, False), (["ocm"], False), ({"ocm": 1}, False),
])
def test_engine(value, named):
    assert fleet.engine(value) is named


def test_the_plugin_offers_them():
    assert fleet.TestModule().tests() == {"waiting": fleet.waiting, "engine": fleet.engine}
