"""bootstrap_token and bootstrap_token_info against the lab hub, with the real bootstrapsigner,
tokencleaner, bootstrap-token authenticator and RBAC of kube-controller-manager / kube-apiserver 1.20."""

import base64
import json
import re
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import lab as fleet_lab
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, tokens
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import ClusterError
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from runner import run_module, run_playbook

PREFIX = "itest-bt"  # descriptions of every token these tests create; removed at the end
CSR_USAGES = ["digital signature", "key encipherment", "client auth"]


@pytest.fixture(scope="module")
def hub(lab):
    return {"kubeconfig": lab.clusters["hub"]["kubeconfig"], "context": "hub"}


@pytest.fixture(scope="module")
def admin(hub):
    return client.get_cluster(hub, "hub")


@pytest.fixture(scope="module")
def prepared(hub, admin):
    """The hub as hub_registration leaves it for both engines; afterwards, everything removed again."""
    had_namespace = resources.get(admin, resources.NAMESPACE, "open-cluster-management") is not None
    for engine in ("karmada", "ocm"):
        done = run_module("hub_registration", dict(hub, engine=engine))
        assert done["rc"] == 0, done.get("msg")
    yield admin
    for token in resources.list_objects(admin, resources.SECRET, "kube-system", field_selector="type=" + bootstrap.SECRET_TYPE):
        if base64.b64decode(token["data"].get("description", "")).decode().startswith(PREFIX):
            resources.delete(admin, resources.SECRET, token["metadata"]["name"], "kube-system")
    for csr in resources.list_objects(admin, resources.CSR):
        if csr["metadata"]["name"].startswith(PREFIX):
            resources.delete(admin, resources.CSR, csr["metadata"]["name"])
    for engine in ("karmada", "ocm"):
        run_module("hub_registration", dict(hub, engine=engine, state="absent"))
    if not had_namespace:  # hub_registration keeps it (the OCM operator lives there); these tests made it
        resources.delete(admin, resources.NAMESPACE, "open-cluster-management", wait=resources.Wait())


def token_module(hub, args, check_mode=False, diff=False):
    result = run_module("bootstrap_token", dict(hub, **args), check_mode=check_mode, diff=diff)
    assert result["rc"] == 0, result.get("msg")
    return result


def listed(hub, token_id=None):
    result = run_module("bootstrap_token_info", dict(hub, token_id=token_id) if token_id else hub)
    assert result["rc"] == 0 and result["changed"] is False, result.get("msg")
    return result


def stored(admin, token_id):
    """The token's description read directly from the hub (no module run), or None."""
    found = tokens.list_tokens(admin, token_id)[0]
    return found[0] if found else None


def wait_for(check, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out after %ss waiting for %s" % (timeout, what)
        time.sleep(0.25)


def anonymous_cluster_info(lab, name="hub"):
    return fleet_lab.ApiClient.for_cluster(lab.clusters[name], anonymous=True).get(bootstrap.CLUSTER_INFO_PATH)["data"]


def as_token(lab, token, name="hub"):
    info = lab.clusters[name]
    return client.get_cluster({"host": info["server"], "ca_cert": info["ca_cert"], "api_key": token}, "token-" + token[:6])


def csr_manifest(name, common_name, labels=None):
    key = ec.generate_private_key(ec.SECP256R1())
    request = (x509.CertificateSigningRequestBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
               .sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"request": base64.b64encode(request).decode(), "signerName": "kubernetes.io/kube-apiserver-client",
                     "usages": CSR_USAGES}}


def test_karmada_token_is_signed_discoverable_and_authenticates(lab, hub, prepared):
    description = PREFIX + "-karmada"
    checked = token_module(hub, dict(engine="karmada", description=description), check_mode=True)
    assert checked["changed"] and checked["token"] is None and checked["cli_command"] is None
    assert description not in [t["description"] for t in tokens.list_tokens(prepared)[0]]

    created = token_module(hub, dict(engine="karmada", description=description, ttl="2h"), diff=True)
    token, token_id = created["token"], created["token_id"]
    secret = bootstrap.parse_token(token)[1]
    server, pin = lab.clusters["hub"]["server"], bootstrap.ca_pin(open(lab.clusters["hub"]["ca_cert"]).read())
    assert created["changed"] and created["objects"] == ["Secret/kube-system/bootstrap-token-%s: created" % token_id]
    assert (created["hub_apiserver"], created["ca_cert_hashes"]) == (server, [pin])
    assert created["groups"] == [bootstrap.KARMADA_DEFAULT_GROUP] and created["usages"] == ["authentication", "signing"]
    assert created["cli_command"] == "karmadactl register %s --token %s --discovery-token-ca-cert-hash %s" % (
        server[len("https://"):], token, pin)
    assert created["diff"]["after"]["description"] == description and secret not in json.dumps(created["diff"])

    again = token_module(hub, dict(engine="karmada", description=description, ttl="2h"))
    assert not again["changed"] and again["token"] == token

    # bootstrap_token_info: the karmadactl token list columns, never the secret
    info = listed(hub, token_id)
    assert [(t["token_id"], t["ttl"], t["usages"], t["description"], t["groups"]) for t in info["tokens"]] == [
        (token_id, "1h", ["authentication", "signing"], description, [bootstrap.KARMADA_DEFAULT_GROUP])]
    assert info["tokens"][0]["expiration"] == created["expiration"]
    assert secret not in json.dumps(info) and secret not in json.dumps(listed(hub))

    # the real bootstrapsigner signs cluster-info for the token, and our verifier accepts it
    key = bootstrap.JWS_KEY_PREFIX + token_id
    wait_for(lambda: key in anonymous_cluster_info(lab), 30, key)
    found = bootstrap.discover_hub(server, token, ca_pins=created["ca_cert_hashes"])
    assert found["server"] == server and found["ca_pins"] == [pin]

    def tampered(url, context, timeout):
        status, body = bootstrap._urllib_fetch(url, context, timeout)
        configmap = json.loads(body)
        configmap["data"]["kubeconfig"] = configmap["data"]["kubeconfig"].replace("server: ", "server: https://evil.example#")
        return status, json.dumps(configmap).encode()
    with pytest.raises(FleetError, match="does not verify: wrong token secret or tampered cluster-info"):
        bootstrap.discover_hub(server, token, ca_pins=[pin], opener=tampered)
    wrong = "%s.%s" % (token_id, "0" * 16 if secret != "0" * 16 else "1" * 16)
    with pytest.raises(FleetError, match="does not verify") as refused:
        bootstrap.discover_hub(server, wrong, ca_pins=[pin])
    assert secret not in refused.value.msg and wrong.split(".")[1] not in refused.value.msg
    other_pin = bootstrap.ca_pin(open(lab.clusters["member1"]["ca_cert"]).read())
    with pytest.raises(FleetError, match="none of the expected ca_cert_hashes"):
        bootstrap.discover_hub(server, token, ca_pins=[other_pin])

    # the token authenticates as system:bootstrap:<id>, may create a CSR, may not list secrets
    bootstrapper = as_token(lab, token)
    name = "%s-%s" % (PREFIX, token_id)
    made = bootstrapper.request("POST", resources.CSR.path(), body=csr_manifest(name, "system:karmada:agent:" + name))
    assert made["spec"]["username"] == "system:bootstrap:" + token_id
    assert {"system:bootstrappers", bootstrap.KARMADA_DEFAULT_GROUP} <= set(made["spec"]["groups"])
    with pytest.raises(ClusterError) as forbidden:
        bootstrapper.request("GET", resources.SECRET.path("kube-system"))
    assert forbidden.value.status == 403 and 'User "system:bootstrap:%s" cannot list resource "secrets"' % token_id in forbidden.value.msg
    assert secret not in forbidden.value.msg


def test_expired_token_is_cleaned_up_and_refused(lab, hub, prepared):
    created = token_module(hub, dict(engine="karmada", description=PREFIX + "-short", ttl="3s"))
    token, token_id = created["token"], created["token_id"]
    started = time.monotonic()
    # the real tokencleaner deletes the Secret once it expires ...
    wait_for(lambda: stored(prepared, token_id) is None, 30, "the tokencleaner to delete bootstrap-token-" + token_id)
    removed_after = time.monotonic() - started
    assert removed_after < 30
    # ... the bootstrapsigner drops its signature, so discovery reports an unknown or expired token ...
    key = bootstrap.JWS_KEY_PREFIX + token_id
    wait_for(lambda: key not in anonymous_cluster_info(lab), 30, key + " to disappear")
    with pytest.raises(FleetError, match="no signature for token id %s .*unknown, expired" % token_id):
        bootstrap.discover_hub(lab.clusters["hub"]["server"], token, ca_pins=created["ca_cert_hashes"])
    # ... and the API server refuses it
    with pytest.raises(ClusterError) as refused:
        as_token(lab, token).request("GET", "/api/v1/namespaces/default/configmaps")
    assert refused.value.status == 401
    print("tokencleaner removed a 3s token %.1fs after creation" % removed_after)


def test_token_id_is_created_rewritten_and_deleted(hub, prepared):
    token_id = "t" + bootstrap.generate_token_id()[1:]
    args = dict(engine="karmada", token_id=token_id, description=PREFIX + "-a")
    created = token_module(hub, args)
    assert created["changed"] and created["token"].startswith(token_id + ".")
    assert not token_module(hub, args)["changed"]

    checked = token_module(hub, dict(args, description=PREFIX + "-b"), check_mode=True, diff=True)
    assert checked["changed"] and checked["diff"]["after"]["description"] == PREFIX + "-b"
    assert stored(prepared, token_id)["description"] == PREFIX + "-a"

    rewritten = token_module(hub, dict(args, description=PREFIX + "-b", ttl=0), diff=True)
    assert rewritten["changed"] and rewritten["token"] == created["token"]  # unexpired: the secret is kept
    assert rewritten["reasons"] == ["description differs", "expires at %s, but a token that never expires was asked for"
                                    % created["expiration"]]
    assert rewritten["diff"]["before"]["expiration"] == created["expiration"] and rewritten["diff"]["after"]["expiration"] is None
    assert stored(prepared, token_id)["ttl"] == "<forever>"

    gone = dict(engine="karmada", token_id=token_id, state="absent")
    assert token_module(hub, gone, check_mode=True)["changed"] and stored(prepared, token_id)
    deleted = token_module(hub, gone, diff=True)
    assert deleted["changed"] and deleted["objects"] == ["Secret/kube-system/bootstrap-token-%s: deleted" % token_id]
    assert deleted["diff"]["before"]["token_id"] == token_id and stored(prepared, token_id) is None
    again = token_module(hub, gone)
    assert not again["changed"] and again["objects"] == ["Secret/kube-system/bootstrap-token-%s: absent" % token_id]


def test_fixed_token_and_delete_by_full_token(hub, prepared):
    token = bootstrap.generate_token()
    created = token_module(hub, dict(engine="ocm", token=token, description=PREFIX + "-fixed"))
    assert created["changed"] and created["token_id"] == bootstrap.parse_token(token)[0]
    assert not token_module(hub, dict(engine="ocm", token=token, description=PREFIX + "-fixed"))["changed"]
    deleted = token_module(hub, dict(engine="ocm", token=token, state="absent"))
    assert deleted["changed"] and stored(prepared, created["token_id"]) is None


def test_ocm_bootstrap_token_may_register(lab, hub, prepared):
    created = token_module(hub, dict(engine="ocm", description=PREFIX + "-ocm"))
    token, token_id = created["token"], created["token_id"]
    assert created["groups"] == [bootstrap.OCM_DEFAULT_GROUP]
    assert created["cli_command"] == "clusteradm join --hub-token %s --hub-apiserver %s" % (token, lab.clusters["hub"]["server"])
    name = "%s-ocm-%s" % (PREFIX, token_id)
    made = as_token(lab, token).request("POST", resources.CSR.path(), body=csr_manifest(
        name, "system:open-cluster-management:itest:agent", {"open-cluster-management.io/cluster-name": "itest"}))
    assert made["spec"]["username"] == "system:bootstrap:" + token_id
    assert bootstrap.OCM_DEFAULT_GROUP in made["spec"]["groups"]


def test_ocm_service_account_token(lab, hub, prepared):
    args = dict(engine="ocm", token_type="service_account", ttl="1h")
    checked = token_module(hub, args, check_mode=True)
    assert checked["changed"] and checked["token"] is None and checked["token_id"] is None

    issued = token_module(hub, args)
    token = issued["token"]
    assert issued["changed"] and issued["objects"] == [
        "ServiceAccount/open-cluster-management/agent-registration-bootstrap: token issued"]
    assert issued["cli_command"] == "clusteradm join --hub-token %s --hub-apiserver %s" % (token, lab.clusters["hub"]["server"])
    assert issued["expiration"] and not bootstrap.TOKEN_RE.fullmatch(token)

    # what the ServiceAccount may do through open-cluster-management:bootstrap
    agent = as_token(lab, token)
    assert agent.request("GET", "/apis/cluster.open-cluster-management.io/v1/managedclusters")["items"] is not None
    with pytest.raises(ClusterError) as forbidden:
        agent.request("GET", resources.SECRET.path("kube-system"))
    assert 'User "system:serviceaccount:open-cluster-management:agent-registration-bootstrap"' in forbidden.value.msg

    kept = token_module(hub, dict(args, token=token))
    assert not kept["changed"] and kept["expiration"] == issued["expiration"]
    assert kept["token"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"  # the given token is a no_log value
    # Without a token every run issues one (changed), expiring the ttl from now. It is not necessarily a different
    # string: two TokenRequests within one second sign the same claims, so the same token.
    fresh = token_module(hub, args)
    assert fresh["changed"] and fresh["objects"] == issued["objects"]
    assert fresh["expiration"] >= issued["expiration"]
    assert as_token(lab, fresh["token"]).request("GET", "/apis/cluster.open-cluster-management.io/v1/managedclusters")
    shorter = token_module(hub, dict(args, ttl="15m", token=token))
    assert shorter["changed"] and "later than the requested ttl allows" in shorter["reasons"][0]


@pytest.mark.parametrize("args, fragment", [
    (dict(engine="ocm", token_type="service_account", ttl="5m"), "at least 10m"),
    (dict(engine="karmada", token_type="service_account"), "use engine: ocm"),
    (dict(engine="ocm", token_type="service_account", description="x"), "description only applies to bootstrap tokens"),
    (dict(engine="ocm", token_type="service_account", state="absent"), "cannot be revoked by itself"),
    (dict(engine="karmada", state="absent"), "needs the token or the token_id"),
    (dict(engine="karmada", ttl="1d"), "ttl must be a duration"),
    (dict(engine="karmada", token="abcdef.0123456789ABCDEF"), "must have the form <6 characters"),
    (dict(engine="karmada", token="abcdef.0123456789abcdef", impersonate_user="nobody"), 'User "nobody" cannot'),
])
def test_errors_say_what_and_never_show_the_token(hub, args, fragment):
    result = run_module("bootstrap_token", dict(hub, **args))
    assert result["rc"] == 1 and fragment in result["msg"], result["msg"]
    assert "0123456789" not in json.dumps(result) and "Traceback" not in result["msg"]


def test_no_log_keeps_the_token_out_of_the_output(lab, hub, prepared, tmp_path):
    secret_file = tmp_path / "token"
    auth = {"kubeconfig": hub["kubeconfig"], "context": "hub"}
    plays = [{"hosts": "localhost", "gather_facts": False, "connection": "local",
              "module_defaults": {"group/multicluster.fleet.fleet": auth},
              "tasks": [
                  {"name": "token", "multicluster.fleet.bootstrap_token": {"engine": "karmada", "description": PREFIX + "-nolog"},
                   "register": "join", "no_log": True},
                  {"name": "keep it", "ansible.builtin.copy": {"content": "{{ join.token }}", "dest": str(secret_file), "mode": "0600"},
                   "no_log": True},
                  {"name": "list", "multicluster.fleet.bootstrap_token_info": {"token_id": "{{ join.token_id }}"}, "register": "listed"},
                  {"name": "show the listing", "ansible.builtin.debug": {"var": "listed"}},
                  {"name": "use it where it is refused", "ignore_errors": True, "multicluster.fleet.bootstrap_token": {
                      "engine": "karmada", "token": "{{ join.token }}", "impersonate_user": "nobody"}},
              ]}]
    done = run_playbook(plays, env={"ANSIBLE_VERBOSITY": "1"})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    token = secret_file.read_text()
    token_id, secret = bootstrap.parse_token(token)
    assert re.search(r'"token_id": "%s"' % token_id, output)  # the listing is in the output ...
    assert "cannot get resource" in output  # ... and so is the refused task's error
    assert secret not in output  # ... the token secret never
    assert "the output of this result has been hidden" in output or "censored" in output
