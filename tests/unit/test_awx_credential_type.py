"""The AWX credential type extensions/awx/credential_type.yml: AWX would accept it, and a job receives from it
what the playbooks and the inventory plugin read - rendered the way AWX renders injectors (tests/awx_job.py)."""

import os
import stat

import pytest
import yaml

from awx_job import CredentialTypeError, inject_credential, validate_credential_type
from source_tree import ROOT

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: admin, user: {token: s3cr3t-token}}]
contexts: [{name: hub, context: {cluster: hub, user: admin}}]
current-context: hub
"""


@pytest.fixture(scope="module")
def credential_type():
    with open(os.path.join(ROOT, "extensions", "awx", "credential_type.yml")) as handle:
        return yaml.safe_load(handle)


@pytest.fixture
def private_data_dir(tmp_path):
    (tmp_path / "env").mkdir(mode=0o700)
    return str(tmp_path)


def inject(credential_type, inputs, private_data_dir, env=None):
    env = dict(env or {})
    safe_env, args = {}, []
    inject_credential(credential_type, inputs, env, safe_env, args, private_data_dir)
    return env, safe_env, args


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_awx_accepts_the_credential_type(credential_type):
    validate_credential_type(credential_type)
    assert set(credential_type) == {"name", "description", "kind", "inputs", "injectors"}  # awx.awx.credential_type's
    assert credential_type["kind"] == "cloud"  # custom types are cloud or net; cloud ones attach to inventory sources
    [secret] = [f["id"] for f in credential_type["inputs"]["fields"] if f.get("secret")]
    assert secret == "kubeconfig"


@pytest.mark.parametrize("injectors, message", [
    ({"file": {"template": "{{ kubeconfig }}"}, "env": {"KUBECONFIG": "{{ tower.filename.kubeconfig }}"}},
     "uses an undefined field"),
    ({"file": {"template.kubeconfig": "{{ kubeconfig }}"}, "env": {"KUBECONFIG": "{{ tower.filename }}"}},
     "uses an undefined field"),
    ({"env": {"ANSIBLE_COLLECTIONS_PATH": "/tmp"}}, "not allowed"),
    ({"extra_vars": {"fleet_kubeconfig": "{{ hub_token }}"}}, "uses an undefined field"),
])
def test_the_replica_of_awx_validation_refuses_what_awx_refuses(credential_type, injectors, message):
    with pytest.raises(CredentialTypeError, match=message):
        validate_credential_type(dict(credential_type, injectors=injectors))


def test_one_kubeconfig_file_for_the_environment_and_the_extra_variable(credential_type, private_data_dir):
    env, safe_env, args = inject(credential_type, {"kubeconfig": KUBECONFIG}, private_data_dir)
    path = env["K8S_AUTH_KUBECONFIG"]
    assert os.path.dirname(path) == os.path.join(private_data_dir, "env") and mode(path) == 0o600
    with open(path) as handle:
        assert handle.read() == KUBECONFIG
    assert safe_env == {"K8S_AUTH_KUBECONFIG": path}  # what AWX stores with the job: a path, no secret
    assert args[0] == "-e" and args[1].startswith("@")
    extra_vars_file = args[1][1:]
    assert mode(extra_vars_file) == 0o400
    with open(extra_vars_file) as handle:
        text = handle.read()
    assert text == "!unsafe 'fleet_kubeconfig': !unsafe '%s'\n" % path  # AWX marks credential extra vars as data


def test_members_only_leaves_the_hub_to_another_credential(credential_type, private_data_dir):
    env, _safe_env, args = inject(credential_type, {"kubeconfig": KUBECONFIG, "members_only": True}, private_data_dir,
                                  env={"K8S_AUTH_HOST": "https://hub:6443", "K8S_AUTH_API_KEY": "hub-token"})
    assert env == {"K8S_AUTH_KUBECONFIG": "", "K8S_AUTH_HOST": "https://hub:6443", "K8S_AUTH_API_KEY": "hub-token"}
    with open(args[1][1:]) as handle:
        fleet_kubeconfig = yaml.safe_load(handle.read().replace("!unsafe ", ""))["fleet_kubeconfig"]
    with open(fleet_kubeconfig) as handle:
        assert handle.read() == KUBECONFIG


def test_inventory_update_gets_the_environment_only(credential_type, private_data_dir):
    env, _safe_env, args = inject(credential_type, {"kubeconfig": KUBECONFIG}, private_data_dir,
                                  env={"INVENTORY_UPDATE_ID": "7"})
    assert os.path.isfile(env["K8S_AUTH_KUBECONFIG"]) and args == []
