"""Identities on the lab hub for the registration and isolation tests: the lab's admin, a member's agent, the join token.

``auth`` gives the module options that reach a lab cluster as its admin, ``connection`` a client from them;
``join_credentials`` is what bootstrap_token hands out (``delete_token`` removes its token again); ``agent_csrs`` names
an agent's CSRs on the hub, ``approve_when_posted`` runs cluster_register while csr_accept approves the CSR it posts,
and ``delete_all`` removes what a test registered. ``karmada_agent``, ``ocm_agent`` and ``join_token_client`` are hub
clients with the credentials a member's agent or the join token holds; ``can_i`` asks the hub what such a client may
do, as ``kubectl auth can-i`` does.
"""

import base64
import threading

import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, tokens
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CSR, SECRET
from runner import run_module
from sim_base import AgentClient


def auth(lab, name):
    return {"kubeconfig": lab.clusters[name]["kubeconfig"], "context": name}


def connection(auth_dict, label):
    return client.get_cluster(auth_dict, label)


def join_credentials(lab, hub_api, engine, service_account=False):
    """What bootstrap_token hands out: a token of its own, the hub URL and the CA pins."""
    if service_account:
        token = tokens.service_account_token(hub_api, 3600)["token"]
    else:
        token = bootstrap.generate_token()
        token_id, secret = token.split(".")
        group = bootstrap.KARMADA_DEFAULT_GROUP if engine == "karmada" else bootstrap.OCM_DEFAULT_GROUP
        resources.ensure(hub_api, SECRET, bootstrap.token_secret(token_id, secret, ttl_seconds=3600, groups=[group]))
    with open(lab.clusters["hub"]["ca_cert"]) as handle:
        pins = bootstrap.pins_of_bundle(handle.read())
    return {"token": token, "hub_apiserver": lab.clusters["hub"]["server"], "ca_cert_hashes": pins}


def delete_token(hub_api, join):
    resources.delete(hub_api, SECRET, bootstrap.SECRET_NAME_PREFIX + join["token"].split(".")[0], bootstrap.SECRET_NAMESPACE)


def agent_csrs(hub_api, name):
    return sorted(c["metadata"]["name"] for c in resources.list_objects(hub_api, CSR) if c["metadata"]["name"].startswith(name + "-"))


def approve_when_posted(lab, engine, name, known, run):
    """Run ``run()`` (a cluster_register call) while csr_accept approves the CSR it posts; return its result."""
    hub_api = connection(auth(lab, "hub"), "hub")
    result = {}
    thread = threading.Thread(target=lambda: result.update(run()))
    thread.start()
    resources.wait_until(lambda: (bool(set(agent_csrs(hub_api, name)) - set(known)), "no new CSR"), 30, "the agent CSR")
    accepted = run_module("csr_accept", dict(auth(lab, "hub"), engine=engine, clusters=[name]))
    assert accepted["rc"] == 0, accepted.get("msg")
    thread.join(60)
    return result


def delete_all(items):
    """Delete ``(cluster, kind, name, namespace)`` items, then wait for each: namespaces terminate in parallel."""
    for cluster, kind, name, namespace in items:
        resources.delete(cluster, kind, name, namespace)
    for cluster, kind, name, namespace in items:
        resources.wait_until_gone(cluster, kind, name, namespace)


def secret_data(api, namespace, name, key):
    return base64.b64decode(api.get("/api/v1/namespaces/%s/secrets/%s" % (namespace, name))["data"][key])


def karmada_agent(lab, member, tmp_path):
    """A hub client with the credentials of ``member``'s karmada-agent (Secret karmada-system/karmada-kubeconfig)."""
    kubeconfig = secret_data(lab.api(member), "karmada-system", "karmada-kubeconfig", "karmada-kubeconfig")
    return AgentClient.from_kubeconfig(kubeconfig, str(tmp_path / ("agent-" + member)))


def ocm_agent(lab, member, tmp_path):
    """A hub client with the credentials of ``member``'s registration agent (Secret hub-kubeconfig-secret)."""
    api = lab.api(member)
    kubeconfig = yaml.safe_load(secret_data(api, "open-cluster-management-agent", "hub-kubeconfig-secret", "kubeconfig"))
    cluster = kubeconfig["clusters"][0]["cluster"]
    return AgentClient(cluster["server"], base64.b64decode(cluster["certificate-authority-data"]),
                       str(tmp_path / ("agent-" + member)),
                       cert_pem=secret_data(api, "open-cluster-management-agent", "hub-kubeconfig-secret", "tls.crt"),
                       key_pem=secret_data(api, "open-cluster-management-agent", "hub-kubeconfig-secret", "tls.key"))


def join_token_client(lab, group, tmp_path):
    """A hub client with a bootstrap token of ``group`` (the join token site.yml gives the members)."""
    hub = lab.api(lab.hub)
    for secret in hub.get("/api/v1/namespaces/kube-system/secrets")["items"]:
        data = dict((k, base64.b64decode(v).decode()) for k, v in (secret.get("data") or {}).items())
        if secret.get("type") == "bootstrap.kubernetes.io/token" and group in data.get("auth-extra-groups", "").split(","):
            info = lab.clusters[lab.hub]
            with open(info["ca_cert"]) as handle:
                ca_pem = handle.read()
            return AgentClient(info["server"], ca_pem, str(tmp_path / "join-token"),
                               token="%s.%s" % (data["token-id"], data["token-secret"]))
    raise AssertionError("no bootstrap token of group %s on the hub" % group)


def can_i(client, verb, group, resource, name=None, namespace=None, subresource=None):
    """Whether the hub allows ``client`` the request - as ``kubectl auth can-i`` asks it (SelfSubjectAccessReview)."""
    attributes = {"verb": verb, "group": group, "resource": resource}
    for key, value in (("name", name), ("namespace", namespace), ("subresource", subresource)):
        if value:
            attributes[key] = value
    review = client.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                         {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                          "spec": {"resourceAttributes": attributes}})
    return review["status"]["allowed"]
