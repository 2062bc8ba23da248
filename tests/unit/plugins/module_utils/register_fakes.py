"""Fakes and requests the register tests share: the hub as the bootstrap token sees it (``BootstrapHub``), token
discovery (``FakeDiscovery``) and the connection to the hub (``connector``), Registrations as module cluster_register
builds them (``registration_of``, ``reg``), the hub kubeconfig Secret an OCM agent writes once joined (``joined``), and
the tokens, hub URL and cluster name they default to."""

import base64
import copy
import contextlib

import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, registrar
from ansible_collections.multicluster.fleet.plugins.modules import cluster_register
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CSR, SECRET
from conftest import FakeCluster

TOKEN = "abcdef.0123456789abcdef"
OTHER_TOKEN = "zyxwvu.9876543210zyxwvu"
SA_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2ln"
HUB_URL = "https://hub.example:6443"
CLUSTER = "member1"
AGENT_SECRET_PATH = SECRET.path(karmada.AGENT_NAMESPACE, karmada.AGENT_KUBECONFIG_SECRET)


class FakeDiscovery:
    """Stands in for bootstrap.discover_hub: answers with the CA, or raises the queued errors first."""

    def __init__(self, ca, server="https://internal.hub:6443", errors=()):
        self.ca = ca
        self.server = server
        self.errors = list(errors)
        self.calls = []

    def __call__(self, server_url, token, **kwargs):
        self.calls.append(dict(kwargs, server_url=server_url, token=token))
        if self.errors:
            raise self.errors.pop(0)
        return {"server": self.server, "ca_pem": self.ca.pem, "ca_pins": [bootstrap.ca_pin(self.ca.pem)], "kubeconfig": "..."}


class BootstrapHub(FakeCluster):
    """The hub as the bootstrap token sees it: CSRs are approved and signed at once, or denied, or left pending."""

    def __init__(self, ca, verdict="approve", days=365):
        super().__init__("hub")
        self.ca = ca
        self.verdict = verdict
        self.days = days
        self.posted = []

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        answer = super().request(method, path, body, query, content_type, timeout)
        if method == "POST" and path == CSR.path():
            self.posted.append((body, dict(query or {})))
            stored = self.objects.get(CSR.path(name=body["metadata"]["name"]))
            if stored is not None and self.verdict == "approve":
                request = base64.b64decode(body["spec"]["request"]).decode()
                stored["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "AutoApproved"}],
                                    "certificate": base64.b64encode(self.ca.sign_request(request, self.days).encode()).decode()}
            elif stored is not None and self.verdict == "deny":
                stored["status"] = {"conditions": [{"type": "Denied", "status": "True", "reason": "Nope",
                                                    "message": "not this one"}]}
        return answer


def connector(bootstrap_hub, seen=None):
    @contextlib.contextmanager
    def connect(server, ca_pem, token, proxy=None):
        if seen is not None:
            seen.append((server, ca_pem, token) + ((proxy,) if proxy else ()))
        yield bootstrap_hub
    return connect


def registration_of(engine, cluster_name, **options):
    """A Registration as module cluster_register builds it, from its argument spec's defaults; polls a second apart.
    ``options`` may name an engine's options by their flat names, which are folded in as the module folds them."""
    spec = cluster_register.module_spec()["argument_spec"]
    params = dict((name, option.get("default")) for name, option in spec.items())
    params.update(engine=engine, cluster_name=cluster_name, wait_sleep=1)
    params.update(options)
    return registrar.Registration(engines.scoped_options(engine, spec, params))


def reg(engine="karmada", **kwargs):
    kwargs.setdefault("state", "present")
    if kwargs["state"] == "present":
        kwargs.setdefault("hub_apiserver", HUB_URL)
        kwargs.setdefault("token", TOKEN if engine == "karmada" else SA_TOKEN)
        kwargs.setdefault("unsafe_skip_ca_verification", "ca_cert_hashes" not in kwargs)
    return registration_of(engine, kwargs.pop("cluster_name", CLUSTER), **kwargs)


def secret_text(cluster, path, key):
    return base64.b64decode(cluster.objects[path]["data"][key]).decode()


def joined(member, ca, cluster_name=CLUSTER, server=HUB_URL):
    """Write the hub kubeconfig Secret the registration agent writes once its CSR was approved."""
    cert, key = ca.client(ocm.agent_common_name(cluster_name, "abcde"),
                          [ocm.agent_organization(cluster_name), "system:open-cluster-management:managed-clusters"])
    kubeconfig = yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "default-context",
        "clusters": [{"name": "hub", "cluster": {"server": server, "certificate-authority-data": pki.b64(ca.pem)}}],
        "users": [{"name": "default-auth", "user": {"client-certificate": "tls.crt", "client-key": "tls.key"}}],
        "contexts": [{"name": "default-context", "context": {"cluster": "hub", "user": "default-auth"}}]})
    data = {"kubeconfig": kubeconfig, "tls.crt": cert, "tls.key": key, "cluster-name": cluster_name, "agent-name": "abcde"}
    member.add(SECRET, {"metadata": {"name": ocm.HUB_KUBECONFIG_SECRET, "namespace": ocm.AGENT_NAMESPACE},
                        "data": dict((k, pki.b64(v)) for k, v in data.items())})


def held_after_delete(cluster, kind, name, namespace=None, finalizer="example.com/cleanup"):
    """After its DELETE the object stays, terminating, as it does while a controller has not removed its finalizer."""
    path = kind.path(namespace, name)
    held = copy.deepcopy(cluster.objects[path])
    held["metadata"].update(finalizers=[finalizer], deletionTimestamp="2026-11-26T12:00:00Z")
    answer = cluster.request

    def request(method, request_path, *args, **kwargs):
        result = answer(method, request_path, *args, **kwargs)
        if method == "DELETE" and request_path == path:
            cluster.objects[path] = held
        return result
    cluster.request = request
