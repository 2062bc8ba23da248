"""hub_registration and the hub_init role against lab clusters: real RBAC decisions (SubjectAccessReview),
real cluster-info signing by the bootstrapsigner."""

import json
import os

import pytest

import lab as fleet_lab
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, hub as hub_utils
from runner import run_module, run_playbook

KARMADA_GROUP = bootstrap.KARMADA_DEFAULT_GROUP
OCM_SA_USER = "system:serviceaccount:open-cluster-management:agent-registration-bootstrap"


def auth(lab, name):
    return {"kubeconfig": lab.clusters[name]["kubeconfig"], "context": name}


def registration(args, check_mode=False, diff=False):
    result = run_module("hub_registration", args, check_mode=check_mode, diff=diff)
    assert result["rc"] == 0, result.get("msg")
    return result


def actions(result):
    return dict(line.rsplit(": ", 1) for line in result["objects"])


def allowed(admin, verb, resource, user="system:bootstrap:itest1", groups=("system:bootstrappers", KARMADA_GROUP),
            group="certificates.k8s.io", subresource=None, namespace=None, name=None):
    """The real authorizer's answer (SubjectAccessReview) for that identity."""
    attributes = {"group": group, "resource": resource, "verb": verb}
    attributes.update((k, v) for k, v in (("subresource", subresource), ("namespace", namespace), ("name", name)) if v)
    review = admin.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body={
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": list(groups), "resourceAttributes": attributes}})
    return review["status"].get("allowed", False)


@pytest.fixture(scope="module")
def hub(lab):
    args = auth(lab, "hub")
    connection = client.get_cluster(args, "hub")
    had_namespace = resources.get(connection, resources.NAMESPACE, "open-cluster-management") is not None
    for engine in ("karmada", "ocm"):
        registration(dict(args, engine=engine, state="absent"))
    yield args
    for engine in ("karmada", "ocm"):
        registration(dict(args, engine=engine, state="absent"))
    if not had_namespace:  # hub_registration keeps it (the OCM operator lives there); these tests made it
        resources.delete(connection, resources.NAMESPACE, "open-cluster-management", wait=resources.Wait())


@pytest.fixture(scope="module")
def admin(hub):
    return client.get_cluster(hub, "hub")


def test_karmada_prerequisites(lab, hub, admin):
    args = dict(hub, engine="karmada")
    assert not allowed(admin, "create", "certificatesigningrequests")

    checked = registration(args, check_mode=True)
    assert checked["changed"] and actions(checked)["ClusterRoleBinding/system:karmada:agent-bootstrap"] == "created"
    assert resources.get(admin, resources.CLUSTER_ROLE_BINDING, "system:karmada:agent-bootstrap") is None

    done = registration(args, diff=True)
    ca_pin = bootstrap.ca_pin(open(lab.clusters["hub"]["ca_cert"]).read())
    assert done["changed"] and done["hub_apiserver"] == lab.clusters["hub"]["server"] and done["ca_cert_hashes"] == [ca_pin]
    assert actions(done) == {
        "ConfigMap/kube-public/cluster-info": "unchanged",
        "Role/kube-public/system:karmada:bootstrap-signer-clusterinfo": "created",
        "RoleBinding/kube-public/system:karmada:bootstrap-signer-clusterinfo": "created",
        "ClusterRoleBinding/system:karmada:agent-bootstrap": "created",
        "ClusterRole/system:karmada:certificatesigningrequest:autoapprover": "created",
        "ClusterRoleBinding/system:karmada:agent-autoapprove-bootstrap": "created",
        "ClusterRole/system:karmada:certificatesigningrequest:selfautoapprover": "created",
        "ClusterRoleBinding/system:karmada:agent-autoapprove-certificate-rotation": "created",
    }
    assert done["cluster_info"] == {"action": "unchanged", "server": lab.clusters["hub"]["server"],
                                    "ca_cert_hashes": [ca_pin], "matches": True}
    assert [d["after_header"] for d in done["diff"]] == list(actions(done))[1:]

    assert allowed(admin, "create", "certificatesigningrequests")
    assert allowed(admin, "create", "certificatesigningrequests", subresource="clusteragent")
    assert allowed(admin, "create", "certificatesigningrequests", subresource="selfclusteragent",
                   user="system:karmada:agent:m1", groups=["system:karmada:agents"])
    assert not allowed(admin, "list", "secrets", group="")
    assert allowed(admin, "get", "configmaps", user="system:anonymous", groups=[], group="", namespace="kube-public",
                   name="cluster-info")

    again = registration(args, check_mode=True)
    assert not again["changed"]
    assert not registration(args)["changed"]

    manual = registration(dict(args, csr_auto_approval=False))
    assert manual["changed"] and actions(manual)["ClusterRole/system:karmada:certificatesigningrequest:autoapprover"] == "deleted"
    assert not allowed(admin, "create", "certificatesigningrequests", subresource="clusteragent")
    assert allowed(admin, "create", "certificatesigningrequests")
    assert not registration(dict(args, csr_auto_approval=False))["changed"]

    removed = registration(dict(args, state="absent"), diff=True)
    assert removed["changed"] and set(actions(removed).values()) == {"deleted", "absent"}
    assert not allowed(admin, "create", "certificatesigningrequests")
    assert resources.get(admin, resources.CONFIG_MAP, "cluster-info", "kube-public") is not None
    assert not registration(dict(args, state="absent"))["changed"]


def test_ocm_prerequisites(hub, admin):
    args = dict(hub, engine="ocm")
    done = registration(args)
    assert done["changed"]
    assert actions(done)["ServiceAccount/open-cluster-management/agent-registration-bootstrap"] == "created"
    sa_groups = ["system:serviceaccounts", "system:serviceaccounts:open-cluster-management"]
    managed = dict(group="cluster.open-cluster-management.io", resource="managedclusters")
    assert allowed(admin, "create", user=OCM_SA_USER, groups=sa_groups, **managed)
    assert allowed(admin, "create", "certificatesigningrequests", groups=["system:bootstrappers", bootstrap.OCM_DEFAULT_GROUP])
    assert allowed(admin, "create", "managedclustersets", subresource="join", group="cluster.open-cluster-management.io",
                   groups=["system:bootstrappers", bootstrap.OCM_DEFAULT_GROUP])
    assert not allowed(admin, "delete", user=OCM_SA_USER, groups=sa_groups, **managed)
    assert not registration(args)["changed"]

    removed = registration(dict(args, state="absent"))
    assert "Namespace/open-cluster-management" not in " ".join(removed["objects"])
    assert resources.get(admin, resources.NAMESPACE, "open-cluster-management") is not None
    assert not allowed(admin, "create", user=OCM_SA_USER, groups=sa_groups, **managed)


def test_cluster_info_created_signed_reported_and_updated(lab, tmp_path):
    """On member2 (standing in for a hub): cluster-info missing, then different, then replaced."""
    name = "member2"
    args = dict(auth(lab, name), engine="karmada")
    member = lab.clusters[name]
    admin = client.get_cluster(auth(lab, name), name)
    anonymous = fleet_lab.ApiClient.for_cluster(member, anonymous=True)
    ca_pem = open(member["ca_cert"]).read()
    token = None
    try:
        resources.delete(admin, resources.CONFIG_MAP, "cluster-info", "kube-public")
        created = registration(args)
        assert created["cluster_info"]["action"] == "created"
        assert hub_utils.published(anonymous.get(bootstrap.CLUSTER_INFO_PATH)) == (member["server"], ca_pem)

        # the real bootstrapsigner signs what we created, and discovery with the token works
        made = run_module("bootstrap_token", dict(auth(lab, name), engine="karmada", ttl="10m", description="itest-hr"))
        token, token_id = made["token"], made["token_id"]
        key = bootstrap.JWS_KEY_PREFIX + token_id
        fleet_lab.wait_for(lambda: key in anonymous.get(bootstrap.CLUSTER_INFO_PATH)["data"], 30, key)
        assert bootstrap.discover_hub(member["server"], token, made["ca_cert_hashes"])["server"] == member["server"]

        # another URL and CA bundle (one that verifies the server, with a second CA) for members: reported, not changed
        public = "https://member2.example.test:6443"
        bundle = tmp_path / "ca.crt"
        bundle.write_text(ca_pem + open(lab.clusters["member1"]["ca_cert"]).read())
        different = registration(dict(args, hub_apiserver=public, hub_ca_cert=str(bundle)))
        assert not different["changed"]
        assert different["cluster_info"] == {"action": "different", "server": member["server"],
                                             "ca_cert_hashes": made["ca_cert_hashes"], "matches": False}
        warnings = json.dumps(different["warnings"])  # ansible-core 2.19 returns them as structured events
        assert "publishes server %s" % member["server"] in warnings and "update_cluster_info: true" in warnings
        assert different["ca_cert_hashes"] == bootstrap.pins_of_bundle(bundle.read_text())

        update = dict(args, hub_apiserver=public, update_cluster_info=True)
        assert registration(update, check_mode=True)["changed"]
        assert hub_utils.published(anonymous.get(bootstrap.CLUSTER_INFO_PATH))[0] == member["server"]
        updated = registration(update, diff=True)
        assert updated["changed"] and updated["cluster_info"]["action"] == "updated"
        assert any(d["after_header"] == "ConfigMap/kube-public/cluster-info" for d in updated["diff"])
        assert not registration(update)["changed"]

        # the bootstrapsigner re-signs the new content for the token
        def resigned():
            data = anonymous.get(bootstrap.CLUSTER_INFO_PATH)["data"]
            return bootstrap.verify_kubeconfig_signature(data["kubeconfig"], data.get(key), token_id, token.split(".")[1])
        fleet_lab.wait_for(resigned, 30, "cluster-info re-signed for " + token_id)
        assert hub_utils.published(anonymous.get(bootstrap.CLUSTER_INFO_PATH)) == (public, ca_pem)
        assert bootstrap.discover_hub(member["server"], token, made["ca_cert_hashes"])["server"] == public
    finally:
        if token:
            run_module("bootstrap_token", dict(auth(lab, name), engine="karmada", token_id=token.split(".")[0], state="absent"))
        registration(dict(args, update_cluster_info=True))
        registration(dict(args, state="absent"))
    assert hub_utils.published(anonymous.get(bootstrap.CLUSTER_INFO_PATH)) == (member["server"], ca_pem)


def test_a_ca_that_is_not_the_hubs_is_refused(lab, tmp_path):
    """Regression: hub_ca_cert set to another cluster's CA rewrote cluster-info with it and returned its pin."""
    name = "member2"
    admin = client.get_cluster(auth(lab, name), name)
    before = resources.get(admin, resources.CONFIG_MAP, "cluster-info", "kube-public")
    other = tmp_path / "member1-ca.crt"
    other.write_text(open(lab.clusters["member1"]["ca_cert"]).read())
    own_pin = bootstrap.ca_pin(open(lab.clusters[name]["ca_cert"]).read())
    for check_mode in (True, False):
        result = run_module("hub_registration", dict(auth(lab, name), engine="karmada", hub_ca_cert=str(other),
                                                     update_cluster_info=True), check_mode=check_mode)
        assert result["rc"] == 1 and result.get("changed") is not True
        assert result["msg"].startswith("hub_ca_cert (CA %s) does not verify the serving certificate of cluster 'member2' (%s)"
                                        % (bootstrap.ca_pin(other.read_text()), lab.clusters[name]["server"])), result["msg"]
        assert "that certificate was issued by CA %s (CN=member2-ca)" % own_pin in result["msg"], result["msg"]
    after = resources.get(admin, resources.CONFIG_MAP, "cluster-info", "kube-public")
    assert (after or {}).get("metadata", {}).get("resourceVersion") == (before or {}).get("metadata", {}).get("resourceVersion")
    assert resources.get(admin, resources.CLUSTER_ROLE_BINDING, "system:karmada:agent-bootstrap") is None


@pytest.mark.parametrize("url, problem", [
    ("ftp://x", "the scheme must be https (or http)"),
    ("https://hub.example.com:6443/?x=1", "query parameters and fragments are not permitted"),
])
def test_hub_apiserver_is_validated_like_api_endpoint(lab, hub, admin, url, problem):
    result = run_module("hub_registration", dict(hub, engine="karmada", hub_apiserver=url))
    assert result["rc"] == 1
    assert result["msg"] == "invalid hub_apiserver %r: %s; expected a URL such as https://10.0.0.7:6443" % (url, problem)
    assert resources.get(admin, resources.CLUSTER_ROLE_BINDING, "system:karmada:agent-bootstrap") is None


@pytest.mark.parametrize("args, fragment", [
    (dict(engine="ocm", csr_auto_approval=True), "csr_auto_approval applies to Karmada only"),
    (dict(engine="karmada", hub_ca_cert="/nonexistent/ca.crt"), "cannot read hub_ca_cert /nonexistent/ca.crt"),
    (dict(engine="karmada", hub_ca_cert=__file__), "no PEM certificate found"),
    (dict(engine="karmada", impersonate_user="nobody"),
     "): GET /api/v1/namespaces/kube-public/configmaps/cluster-info failed: 403"),
])
def test_errors(lab, hub, args, fragment):
    result = run_module("hub_registration", dict(hub, **args))
    assert result["rc"] == 1 and fragment in result["msg"], result["msg"]
    if "403" in fragment:
        assert result["msg"].startswith("cluster 'hub' (%s): " % lab.clusters["hub"]["server"]), result["msg"]
    assert "Traceback" not in result["msg"]


def test_hub_init_registration_tasks(lab, hub, admin):
    plays = [{"hosts": "hub", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "multicluster.fleet.hub_init", "tasks_from": "registration"}},
        {"ansible.builtin.assert": {"that": ["hub_init_registration.cluster_info.matches",
                                             "hub_init_registration.hub_apiserver == hub_apiserver"]}},
    ]}]
    inventory = os.path.join(lab.dir, "inventory.yml")
    try:
        first = run_playbook(plays, inventory=inventory)
        assert first.returncode == 0, first.stdout + first.stderr
        assert "changed=1" in first.stdout
        assert resources.get(admin, resources.CLUSTER_ROLE_BINDING, "system:karmada:agent-bootstrap") is not None
        second = run_playbook(plays, inventory=inventory)
        assert second.returncode == 0 and "changed=0" in second.stdout, second.stdout
        ocm = run_playbook(plays, inventory=inventory, extra_vars={"fleet_engine": "ocm"}, check=True)
        assert ocm.returncode == 0 and "changed=1" in ocm.stdout, ocm.stdout
        assert resources.get(admin, resources.SERVICE_ACCOUNT, "agent-registration-bootstrap", "open-cluster-management") is None
        bad = run_playbook(plays, inventory=inventory, extra_vars={"hub_init_engine": "fleetd"})
        assert bad.returncode != 0 and "hub_init_engine" in bad.stdout and "karmada, ocm" in bad.stdout, bad.stdout
    finally:
        registration(dict(hub, engine="karmada", state="absent"))
