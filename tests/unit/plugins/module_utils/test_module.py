"""module: the result contract every module's ``run`` keeps in ``FleetModuleBase.run``.

The modules return plain results (or raise FleetError); ``run`` reports their ``warnings``, keeps their ``diff`` in
diff mode only, and a failure after writes keeps ``changed`` and what was written. Exercised on the controller-side
module object (``ControllerModule``, the same ``run``), as the action plugin runs it.
"""

import importlib

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.doc_fragments.wait import ModuleDocFragment as WaitFragment
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.module import (
    WAIT_ARG_SPEC, WAIT_CONDITION_ARG_SPEC, cluster_argument_spec, fleet_argument_spec)
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
    (dict(ocm=dict(registration_driver="grpc", grpc_server="grpc.hub.example:443")),
     "registration_driver is grpc but all of the following are missing: grpc_ca_pem found in ocm"),
    (dict(proxy_ca_cert="/etc/fleet/proxy-ca.pem"), "missing parameter(s) required by 'proxy_ca_cert': proxy_url"),
])
def test_option_rules_of_cluster_register_are_in_its_argument_spec(options, message):
    """Refused by the argument validation (what ansible-doc and validate-modules read), before any connection."""
    done = run_module(cluster_register, dict(REGISTER, **options), {"_ansible_module_name": "cluster_register"})
    assert done["failed"] and done["msg"] == message


@pytest.mark.parametrize("options, message", [
    (dict(ocm=dict(klusterlet_mode="Hosted"), unsafe_skip_ca_verification=True),
     "ocm.klusterlet_mode Hosted needs the hosting cluster's connection (hosting)"),
    (dict(klusterlet_mode="SingletonHosted", state="absent"),
     "ocm.klusterlet_mode SingletonHosted needs the hosting cluster's connection (hosting)"),
    (dict(engine="karmada", klusterlet_mode="Hosted", karmada=dict(deploy_agent=True)),
     "the ocm options (klusterlet_mode) apply to engine ocm only; engine is karmada"),
    (dict(klusterlet_mode="Hosted", ocm=dict(klusterlet_mode="Default")),
     "klusterlet_mode and ocm.klusterlet_mode are one setting, given different values ('Hosted' and 'Default'): give "
     "ocm.klusterlet_mode only, klusterlet_mode is deprecated"),
])
def test_option_rules_across_levels_are_the_modules_before_any_request(options, message):
    """What the argument spec cannot state - a suboption and a top-level option, the deprecated flat names - the module
    checks before it sends a request (the member of REGISTER does not answer)."""
    args = dict(REGISTER, host="https://east.invalid:6443", **options)
    done = run_module(cluster_register, args, {"_ansible_module_name": "cluster_register"})
    assert done["failed"] and done["msg"] == message


# --- the wait options -----------------------------------------------------------------------------

def _documented(options):
    """The argument spec a documentation's options stand for: type, default, choices (and suboptions) of each."""
    spec = {}
    for name, doc in options.items():
        option = dict((key, doc[key]) for key in ("type", "default", "choices", "required") if key in doc)
        if "suboptions" in doc:
            option["options"] = _documented(doc["suboptions"])
        spec[name] = option
    return spec


def _spec(arg_spec):
    """``arg_spec`` without what documentation does not show (aliases are checked by validate-modules)."""
    return dict((name, dict((k, _spec(v) if k == "options" else v) for k, v in option.items() if k != "aliases"))
                for name, option in arg_spec.items())


def test_wait_arg_spec_is_what_the_doc_fragment_documents():
    assert WAIT_ARG_SPEC == _documented(yaml.safe_load(WaitFragment.DOCUMENTATION)["options"])
    assert WAIT_CONDITION_ARG_SPEC == _documented(yaml.safe_load(WaitFragment.CONDITION)["options"])
    assert WAIT_ARG_SPEC["wait_sleep"] == {"type": "int", "default": 5}  # kubernetes.core's k8s module


@pytest.mark.parametrize("name", ["addon", "cluster_info", "cluster_join", "csr_accept", "k8s_objects", "manifest_work",
                                  "placement"])
def test_modules_of_the_wait_fragment_take_its_options(name):
    spec = importlib.import_module("ansible_collections.multicluster.fleet.plugins.modules." + name).module_spec()
    arguments = _spec(spec["argument_spec"])
    assert dict((option, arguments[option]) for option in WAIT_ARG_SPEC) == WAIT_ARG_SPEC


def test_modules_waiting_their_own_way_share_the_option_definitions():
    arguments = cluster_register.module_spec()["argument_spec"]
    assert arguments["wait_timeout"] == {"type": "int", "default": 60}
    assert (arguments["wait"], arguments["wait_sleep"]) == (WAIT_ARG_SPEC["wait"], WAIT_ARG_SPEC["wait_sleep"])


def test_a_modules_spec_is_a_copy_so_the_shared_parts_stay_as_they_are():
    spec = fleet_argument_spec(dict(WAIT_ARG_SPEC, **WAIT_CONDITION_ARG_SPEC))
    spec["wait_sleep"]["default"] = 1
    spec["wait_condition"]["options"]["status"]["choices"].append("Maybe")
    assert WAIT_ARG_SPEC["wait_sleep"]["default"] == 5
    assert WAIT_CONDITION_ARG_SPEC["wait_condition"]["options"]["status"]["choices"] == ["True", "False", "Unknown"]


class Echo:
    """A module with a list of connections (as ``per_cluster``) that returns what it was given."""

    @staticmethod
    def module_spec():
        return dict(argument_spec=dict(per_cluster=dict(type="list", elements="dict", options=dict(
            name=dict(type="str"), member=cluster_argument_spec()))))

    @staticmethod
    def run(module):
        return dict(changed=False, given=module.params["per_cluster"])


def test_an_inline_kubeconfig_in_a_list_of_connections_is_masked():
    kubeconfig = {"clusters": [{"name": "c", "cluster": {"server": "https://m1:6443"}}],
                  "users": [{"name": "u", "user": {"token": "tok-of-member-one"}}]}
    internal = {"_ansible_check_mode": False, "_ansible_diff": False, "_ansible_module_name": "multicluster.fleet.probe",
                "_ansible_inject_invocation": False}
    done = run_module(Echo, {"per_cluster": [{"name": "m1", "member": {"kubeconfig": kubeconfig}}]}, internal)
    assert "tok-of-member-one" not in repr(done)
    assert done["given"][0]["member"]["kubeconfig"]["clusters"][0]["cluster"]["server"] == "https://m1:6443"
