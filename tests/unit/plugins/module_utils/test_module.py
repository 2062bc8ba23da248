"""module: the result contract every module's ``run`` keeps in ``FleetModuleBase.run``.

The modules return plain results (or raise FleetError); ``run`` reports their ``warnings``, keeps their ``diff`` in
diff mode only, and a failure after writes keeps ``changed`` and what was written. Exercised on the controller-side
module object (``ControllerModule``, the same ``run``), as the action plugin runs it.
"""

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.modules import cluster_register
from ansible_collections.multicluster.fleet.plugins.plugin_utils.module_in_worker import run_module

DIFF = [{"before": {}, "after": {"data": {"a": "1"}}, "before_header": "ConfigMap/default/x",
         "after_header": "ConfigMap/default/x"}]


class Logic:
    """A module of the collection's shape (``module_spec`` and ``run``) whose ``run`` returns or raises ``outcome``."""

    def __init__(self, outcome, warn=()):
        self.outcome, self.warn = outcome, warn

    @staticmethod
    def module_spec():
        return dict(argument_spec=dict(name=dict(type="str")))

    def run(self, module):
        for warning in self.warn:
            module.warn(warning)
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return dict(self.outcome)


def result_of(outcome, diff=False, warn=()):
    internal = {"_ansible_check_mode": False, "_ansible_diff": diff, "_ansible_module_name": "multicluster.fleet.probe",
                "_ansible_inject_invocation": False}
    return run_module(Logic(outcome, warn), {"name": "x"}, internal)


def test_warnings_of_the_result_become_the_module_warnings():
    done = result_of(dict(changed=False, warnings=["first", "second", "first"]))
    assert done["warnings"] == ["first", "second"]


def test_no_warnings_no_warnings_key():
    assert "warnings" not in result_of(dict(changed=False, warnings=[]))


def test_warnings_of_the_result_join_those_given_to_warn():
    done = result_of(dict(changed=False, warnings=["returned"]), warn=["warned"])
    assert done["warnings"] == ["warned", "returned"]


def test_warnings_of_a_failure_are_reported_too():
    done = result_of(FleetError("broken", warnings=["seen before the failure"]), warn=["warned"])
    assert done["failed"] and done["warnings"] == ["warned", "seen before the failure"]


@pytest.mark.parametrize("diff", [False, True])
def test_diff_is_returned_in_diff_mode_only(diff):
    done = result_of(dict(changed=True, diff=DIFF, objects=["ConfigMap/default/x: created"]), diff=diff)
    assert done["objects"] == ["ConfigMap/default/x: created"]
    assert done.get("diff") == (DIFF if diff else None) and ("diff" in done) is diff


def test_an_empty_diff_stays_in_diff_mode():
    assert result_of(dict(changed=False, diff=[]), diff=True)["diff"] == []


@pytest.mark.parametrize("diff", [False, True])
def test_diff_of_a_failure_is_returned_in_diff_mode_only(diff):
    done = result_of(FleetError("not accepted", changed=True, diff=DIFF), diff=diff)
    assert done["failed"] and done["changed"] and ("diff" in done) is diff


def test_a_failure_after_writes_reports_changed_and_what_was_written():
    error = resources.failed_after(FleetError("timed out", last_seen="Ready=False"), ["ConfigMap/default/x: created"],
                                   "written", objects=["ConfigMap/default/x: created", "Secret/default/y: unchanged"])
    done = result_of(error)
    assert done["failed"] and done["changed"] is True
    assert done["msg"] == "timed out; written before the failure: ConfigMap/default/x: created"
    assert done["objects"] == ["ConfigMap/default/x: created", "Secret/default/y: unchanged"]
    assert done["last_seen"] == "Ready=False"


def test_a_failure_before_any_write_reports_no_change():
    done = result_of(resources.failed_after(FleetError("refused"), [], "written", objects=[]))
    assert done["failed"] and done["changed"] is False and done["msg"] == "refused"


def test_the_logic_result_is_not_changed_in_place():
    returned = dict(changed=True, diff=DIFF, warnings=["w"])

    class Keeps(Logic):
        def run(self, module):
            return returned

    run_module(Keeps(None), {"name": "x"}, {"_ansible_diff": False})
    assert returned == dict(changed=True, diff=DIFF, warnings=["w"])


REGISTER = dict(engine="ocm", cluster_name="east", hub_apiserver="https://hub.example:6443", token="abcdef.0123456789abcdef")


@pytest.mark.parametrize("options, message", [
    (dict(klusterlet_mode="Hosted"), "klusterlet_mode is Hosted but all of the following are missing: hosting"),
    (dict(klusterlet_mode="SingletonHosted", state="absent"),
     "klusterlet_mode is SingletonHosted but all of the following are missing: hosting"),
    (dict(proxy_ca_cert="/etc/fleet/proxy-ca.pem"), "missing parameter(s) required by 'proxy_ca_cert': proxy_url"),
])
def test_option_rules_of_cluster_register_are_in_its_argument_spec(options, message):
    """Refused by the argument validation (what ansible-doc and validate-modules read), before any connection."""
    done = run_module(cluster_register, dict(REGISTER, **options), {"_ansible_module_name": "cluster_register"})
    assert done["failed"] and done["msg"] == message
