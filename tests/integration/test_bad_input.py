"""Bad input to every module, against the lab: each row fails with a message that names the problem, and
no object changes on any lab cluster.

"Nothing changed" is checked by the resourceVersion of every object of the collections the modules write
(and of those the API server derives from them), on every lab cluster, before and after each row. The
lab runs no simulations here, so nothing else writes meanwhile.
"""

import os
import socket

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap
from runner import ROOT, recap_of, run_module, run_playbook

import lab as fleet_lab  # tests/lab, on sys.path through conftest.py

COLLECTIONS = (
    "/api/v1/namespaces", "/api/v1/configmaps", "/api/v1/secrets", "/api/v1/serviceaccounts",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "/apis/rbac.authorization.k8s.io/v1/roles", "/apis/rbac.authorization.k8s.io/v1/rolebindings",
    "/apis/certificates.k8s.io/v1/certificatesigningrequests", "/apis/apps/v1/deployments",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/apis/cluster.karmada.io/v1alpha1/clusters", "/apis/work.karmada.io/v1alpha1/works",
    "/apis/cluster.open-cluster-management.io/v1/managedclusters", "/apis/work.open-cluster-management.io/v1/manifestworks",
    "/apis/operator.open-cluster-management.io/v1/clustermanagers", "/apis/operator.open-cluster-management.io/v1/klusterlets",
    "/apis/cluster.open-cluster-management.io/v1beta2/managedclustersets",
    "/apis/cluster.open-cluster-management.io/v1beta1/placements",
)
BAD_PIN = "sha256:" + "0" * 64


def resource_versions(lab):
    """``{(cluster, collection, namespace, name): resourceVersion}`` of every object of COLLECTIONS on every lab cluster."""
    found = {}
    for cluster, info in lab.clusters.items():
        api = fleet_lab.ApiClient.for_cluster(info)
        for collection in COLLECTIONS:
            try:
                items = api.get(collection)["items"]
            except fleet_lab.ApiError as exc:
                if exc.status != 404:  # a kind this cluster does not serve
                    raise
                continue
            for obj in items:
                meta = obj["metadata"]
                found[(cluster, collection, meta.get("namespace"), meta["name"])] = meta["resourceVersion"]
    return found


class Context:
    """What the rows refer to: connections to the lab, a closed port, files that are no kubeconfig."""

    def __init__(self, lab, tmp_path, token):
        self.lab = lab
        self.hub = {"kubeconfig": lab.clusters["hub"]["kubeconfig"], "context": "hub"}
        self.member1 = {"kubeconfig": lab.clusters["member1"]["kubeconfig"], "context": "member1"}
        self.member2 = {"kubeconfig": lab.clusters["member2"]["kubeconfig"], "context": "member2"}
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.closed = "https://127.0.0.1:%d" % sock.getsockname()[1]
        self.missing = str(tmp_path / "missing.kubeconfig")
        self.directory = str(tmp_path)
        self.garbage = str(tmp_path / "garbage.kubeconfig")
        with open(self.garbage, "w") as handle:
            handle.write("clusters: [unclosed\n")
        self.binary = str(tmp_path / "binary.kubeconfig")
        with open(self.binary, "wb") as handle:
            handle.write(bytes(range(256)) * 4)
        self.other_ca = lab.clusters["member1"]["ca_cert"]
        self.token = token
        self.hub_server = lab.clusters["hub"]["server"]
        self.member_server = lab.clusters["member1"]["server"]


def cm(name, namespace="default", **extra):
    return dict({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}, **extra)


# What each module needs to get past its argument spec, on the lab (the rows replace or add options).
MINIMAL = {
    "bootstrap_token": lambda c: dict(c.hub, engine="karmada", description="bad-input"),
    "bootstrap_token_info": lambda c: dict(c.hub),
    "hub_registration": lambda c: dict(c.hub, engine="karmada"),
    "cluster_join": lambda c: dict(c.hub, cluster_name="bad-input", member=c.member1),
    "cluster_register": lambda c: dict(c.member2, engine="karmada", cluster_name="bad-input", hub_apiserver=c.hub_server,
                                       token=c.token, ca_cert_hashes=[c.pin], hub=c.hub),
    "csr_accept": lambda c: dict(c.hub, engine="karmada", clusters=["bad-input"]),
    "cluster_info": lambda c: dict(c.hub, engine="karmada"),
    "cluster_diagnose": lambda c: dict(c.hub, engine="karmada", clusters=["bad-input"]),
    "k8s_objects": lambda c: dict(c.member1, objects=[cm("bad-input")]),
    "manifest_work": lambda c: dict(c.hub, engine="ocm", name="bad-input", clusters=["bad-input"], manifests=[cm("bad-input")]),
    "cluster_set": lambda c: dict(c.hub, engine="ocm", name="bad-input"),
    "placement": lambda c: dict(c.hub, name="bad-input", namespace="default"),
    "cluster_label": lambda c: dict(c.hub, engine="karmada", clusters=["bad-input"], labels={"env": "prod"}),
    "cluster_taint": lambda c: dict(c.hub, engine="karmada", clusters=["bad-input"], cordon=True),
    # a day of silence: nothing on a shared hub is a candidate, should a row pass
    "cluster_prune": lambda c: dict(c.hub, engine="karmada", unreachable_after=86400),
}
# Modules whose credential rows break their second connection (the dict option named here), not the top-level one.
SECOND_CONNECTION = {"cluster_join": "member"}

# (module, what is wrong, the options to change, fragments the message must hold). Options are functions of the Context.
ROWS = [
    # wrong types
    ("k8s_objects", "wait is no boolean", lambda c: dict(wait="maybe"), ["argument 'wait' is of type", "bool"]),
    ("manifest_work", "wait_timeout is no number", lambda c: dict(wait_timeout="soon"), ["argument 'wait_timeout' is of type", "int"]),
    ("csr_accept", "clusters is a mapping", lambda c: dict(clusters={"a": 1}), ["argument 'clusters' is of type", "list"]),
    ("cluster_join", "zones is a mapping", lambda c: dict(zones={"a": 1}), ["argument 'zones' is of type", "list"]),
    ("bootstrap_token", "ttl is a list", lambda c: dict(ttl=["24h"]), ["ttl must be a duration"]),
    ("cluster_info", "label_selectors is a mapping", lambda c: dict(label_selectors={"env": "prod"}),
     ["argument 'label_selectors' is of type", "list"]),
    ("cluster_register", "ca_cert_hashes is a mapping", lambda c: dict(ca_cert_hashes={"a": 1}),
     ["argument 'ca_cert_hashes' is of type", "list"]),
    ("hub_registration", "update_cluster_info is no boolean", lambda c: dict(update_cluster_info="perhaps"),
     ["argument 'update_cluster_info' is of type", "bool"]),
    ("bootstrap_token_info", "token_id is a list", lambda c: dict(token_id=["abcdef"]), ["a bootstrap token id must be 6 characters"]),
    ("cluster_diagnose", "member for two clusters", lambda c: dict(clusters=["a", "b"], member=c.member1),
     ["the member's credentials are for one cluster; clusters lists 2"]),
    # invalid names: uppercase, 64 characters, empty
    ("cluster_join", "uppercase cluster name", lambda c: dict(cluster_name="Member1"), ["invalid cluster name 'Member1'"]),
    ("cluster_join", "64-character cluster name", lambda c: dict(cluster_name="m" * 64), ["of 1 to 48 characters"]),
    ("cluster_join", "empty cluster name", lambda c: dict(cluster_name=""), ["invalid cluster name ''"]),
    ("cluster_diagnose", "uppercase cluster name", lambda c: dict(clusters=["Member1"]),
     ["invalid cluster name 'Member1'"]),
    ("cluster_register", "uppercase cluster name", lambda c: dict(cluster_name="Member2"), ["invalid cluster name 'Member2'"]),
    ("cluster_register", "64-character OCM cluster name", lambda c: dict(engine="ocm", cluster_name="m" * 64,
                                                                         ca_cert_hashes=[]), ["of 1 to 63 characters"]),
    ("cluster_register", "empty cluster name", lambda c: dict(cluster_name=""), ["invalid cluster name ''"]),
    # the agent identity of a Karmada cluster so named would be karmadactl's all-powerful RBAC helper's
    ("cluster_register", "cluster named rbac-generator", lambda c: dict(cluster_name="rbac-generator"),
     ["refusing cluster name 'rbac-generator'", "system:karmada:agent:rbac-generator", "all-powerful helper identity"]),
    ("csr_accept", "uppercase cluster name", lambda c: dict(clusters=["Member2"]), ["invalid cluster name 'Member2'"]),
    ("csr_accept", "64-character OCM cluster name", lambda c: dict(engine="ocm", clusters=["m" * 64]), ["of 1 to 63 characters"]),
    ("csr_accept", "empty cluster name", lambda c: dict(clusters=[""]), ["invalid cluster name ''"]),
    ("cluster_info", "uppercase cluster name", lambda c: dict(name="Member1"), ["invalid cluster name 'Member1'"]),
    ("cluster_info", "64-character cluster name", lambda c: dict(engine="ocm", name="m" * 64), ["of 1 to 63 characters"]),
    ("cluster_info", "empty cluster name", lambda c: dict(name=""), ["invalid cluster name ''"]),
    ("manifest_work", "uppercase work name", lambda c: dict(name="Bad_Name"), ["name 'Bad_Name' is not a valid Kubernetes object name"]),
    ("manifest_work", "uppercase cluster name", lambda c: dict(clusters=["Member1"]), ["invalid cluster name 'Member1'"]),
    ("manifest_work", "64-character cluster name", lambda c: dict(clusters=["m" * 64]), ["of 1 to 63 characters"]),
    ("manifest_work", "empty cluster name", lambda c: dict(clusters=[""]), ["invalid cluster name ''"]),
    ("k8s_objects", "uppercase object name", lambda c: dict(objects=[cm("bad-input-first"), cm("Bad_Name")]),
     ["nothing was written", "object 2 (ConfigMap/default/Bad_Name)", "Invalid value: \"Bad_Name\""]),
    ("k8s_objects", "64-character namespace name", lambda c: dict(objects=[{"apiVersion": "v1", "kind": "Namespace",
                                                                            "metadata": {"name": "n" * 64}}]),
     ["nothing was written", "object 1 (Namespace/" + "n" * 64 + ")", "must be no more than 63 characters"]),
    ("k8s_objects", "empty object name", lambda c: dict(objects=[cm("")]), ["object 1 (ConfigMap) has no metadata.name"]),
    ("bootstrap_token", "uppercase token id", lambda c: dict(token_id="ABCDEF"), ["a bootstrap token id must be 6 characters"]),
    ("bootstrap_token", "64-character token id", lambda c: dict(token_id="a" * 64), ["a bootstrap token id must be 6 characters"]),
    ("bootstrap_token_info", "empty token id", lambda c: dict(token_id=""), ["a bootstrap token id must be 6 characters"]),
    # unknown engine
    ("bootstrap_token", "unknown engine", lambda c: dict(engine="fleetd"), ["value of engine must be one of: karmada, ocm"]),
    ("hub_registration", "unknown engine", lambda c: dict(engine="fleetd"), ["value of engine must be one of: karmada, ocm"]),
    ("cluster_register", "unknown engine", lambda c: dict(engine="fleetd"), ["value of engine must be one of: karmada, ocm"]),
    ("csr_accept", "unknown engine", lambda c: dict(engine="fleetd"), ["value of engine must be one of: karmada, ocm"]),
    ("cluster_info", "unknown engine", lambda c: dict(engine="fleetd"), ["value of engine must be one of: karmada, ocm"]),
    ("manifest_work", "unknown engine", lambda c: dict(engine="fleetd"), ["value of engine must be one of: karmada, ocm"]),
    # malformed manifests
    ("k8s_objects", "manifest without kind", lambda c: dict(objects=[{"apiVersion": "v1", "metadata": {"name": "x"}}]),
     ["object 1 (?) has no kind"]),
    ("k8s_objects", "manifest that is text", lambda c: dict(objects=["kind: ConfigMap"]), ["object 1 is not a mapping but str"]),
    ("k8s_objects", "unknown kind", lambda c: dict(objects=[{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}}]),
     ["Service (apiVersion v1) is not a kind this collection knows"]),
    ("k8s_objects", "namespace that does not exist", lambda c: dict(objects=[cm("bad-input-first"), cm("x", "nowhere")]),
     ["object 2 (ConfigMap/nowhere/x): namespace nowhere does not exist on cluster 'member1'"]),
    ("manifest_work", "non-string apiVersion", lambda c: dict(manifests=[dict(cm("x"), apiVersion=1)]),
     ["invalid manifests: manifests[0]: apiVersion must be a string, not integer 1"]),
    ("manifest_work", "manifest without name", lambda c: dict(manifests=[{"apiVersion": "v1", "kind": "ConfigMap"}]),
     ["invalid manifests: manifests[0]: missing metadata.name"]),
    ("manifest_work", "src that does not exist", lambda c: dict(manifests=None, src=[c.missing]),
     lambda c: ["src %s does not exist" % c.missing]),
    # wrong CA pins and CAs
    ("cluster_register", "wrong CA pin", lambda c: dict(ca_cert_hashes=[BAD_PIN]), [BAD_PIN]),
    ("cluster_register", "malformed CA pin", lambda c: dict(ca_cert_hashes=["md5:abc"]), ["a CA certificate hash must have the form sha256:"]),
    ("hub_registration", "another cluster's CA", lambda c: dict(hub_ca_cert=c.other_ca),
     ["hub_ca_cert (CA sha256:", "does not verify the serving certificate of cluster 'hub'"]),
    ("cluster_info", "a CA that does not verify the hub", lambda c: dict(ca_cert=c.other_ca),
     ["cluster 'hub'", "is unreachable", "TLS verification failed"]),
    # hub_apiserver
    ("hub_registration", "hub_apiserver of another scheme", lambda c: dict(hub_apiserver="ftp://x"),
     ["invalid hub_apiserver 'ftp://x': the scheme must be https (or http)"]),
    ("bootstrap_token", "hub_apiserver of another scheme", lambda c: dict(hub_apiserver="ftp://x"),
     ["invalid hub_apiserver 'ftp://x': the scheme must be https (or http)"]),
    ("cluster_register", "unreachable hub", lambda c: dict(hub_apiserver=c.closed, discovery_timeout=0),
     lambda c: ["cannot fetch %s" % c.closed]),
    # negative durations
    ("k8s_objects", "negative wait_timeout", lambda c: dict(wait=True, wait_timeout=-1), ["wait_timeout must not be negative, got -1"]),
    ("k8s_objects", "wait_sleep of 0", lambda c: dict(wait=True, wait_sleep=0), ["wait_sleep must be at least 1 second, got 0"]),
    ("manifest_work", "negative wait_timeout", lambda c: dict(wait=True, wait_timeout=-1), ["wait_timeout must not be negative, got -1"]),
    ("csr_accept", "negative timeout", lambda c: dict(wait=True, timeout=-1), ["wait_timeout must not be negative, got -1"]),
    ("csr_accept", "negative wait_sleep", lambda c: dict(wait=True, wait_sleep=-1), ["wait_sleep must be at least 1 second, got -1"]),
    ("cluster_info", "negative wait_timeout", lambda c: dict(wait=True, wait_timeout=-1), ["wait_timeout must not be negative, got -1"]),
    ("cluster_join", "negative wait_timeout", lambda c: dict(wait=True, wait_timeout=-1), ["wait_timeout must be at least 1 second, got -1"]),
    ("bootstrap_token", "negative ttl", lambda c: dict(ttl=-1), ["ttl must not be negative, got -1"]),
    ("cluster_register", "negative csr_wait_timeout", lambda c: dict(karmada={"csr_wait_timeout": -1}),
     ["karmada.csr_wait_timeout must be at least 1"]),
    ("bootstrap_token", "ttl of eleven million years", lambda c: dict(ttl="99999999999h"),
     ["ttl '99999999999h' is longer than 100 years", "use 0 for a token that never expires"]),
    ("k8s_objects", "src that is a binary file", lambda c: dict(objects=None, src=c.binary),
     lambda c: ["src %s is not text (a binary file?): expected YAML manifests" % c.binary]),
    ("manifest_work", "src that is a binary file", lambda c: dict(manifests=None, src=[c.binary]),
     lambda c: ["src %s is not text (a binary file?): expected YAML manifests" % c.binary]),
    ("k8s_objects", "the same object twice", lambda c: dict(objects=[cm("bad-input"), cm("bad-input")]),
     ["objects 1 and 2 are the same object, ConfigMap/default/bad-input (v1)"]),
    ("cluster_register", "negative discovery_timeout", lambda c: dict(discovery_timeout=-5), ["discovery_timeout must be at least 0"]),
    # what is written into image references (issue 46): refused before anything is written, naming the option
    ("cluster_register", "hub_version that names no release", lambda c: dict(hub_version="../../evil"),
     ["hub_version must name a release, vX.Y.Z or X.Y.Z", "not '../../evil'"]),
    ("cluster_register", "agent_image with a path for a tag", lambda c: dict(
        karmada={"deploy_agent": True, "agent_image": "docker.io/karmada/karmada-agent:v../../evil"}),
     ["karmada.agent_image must be an image reference", "not 'docker.io/karmada/karmada-agent:v../../evil'"]),
    ("cluster_register", "agent_image with a command in its tag", lambda c: dict(
        karmada={"deploy_agent": True, "agent_image": "docker.io/karmada/karmada-agent:v1.19.0;id"}),
     ["karmada.agent_image must be an image reference", "v1.19.0;id"]),
    ("cluster_register", "klusterlet image from a registry that is no image prefix", lambda c: dict(
        engine="ocm", ca_cert_hashes=[], ocm={"klusterlet_spec": {"registrationImagePullSpec": "evil.example.com/ocm;x/registration:v1.3.1"}}),
     ["ocm.klusterlet_spec.registrationImagePullSpec must be an image reference", "evil.example.com/ocm;x"]),
    # cluster sets (OCM only)
    ("cluster_set", "uppercase set name", lambda c: dict(name="Bad-Input"), ["invalid cluster set name 'Bad-Input'"]),
    ("cluster_set", "64-character set name", lambda c: dict(name="s" * 64), ["of 1 to 63 characters"]),
    ("cluster_set", "unknown selector type", lambda c: dict(selector_type="Labels"),
     ["value of selector_type must be one of: ExclusiveClusterSetLabel, LabelSelector, got: Labels"]),
    ("cluster_set", "cluster that is not registered", lambda c: dict(clusters=["bad-input"]),
     ["cluster set bad-input: cluster(s) bad-input not registered on the hub"]),
    ("cluster_set", "Karmada engine", lambda c: dict(engine="karmada"), ["cluster sets are an OCM concept", "engine is karmada"]),
    ("cluster_label", "label value with a space", lambda c: dict(labels={"env": "prod west"}),
     ["invalid labels: labels['env'] = 'prod west'"]),
    ("cluster_label", "cluster that is not registered", lambda c: {},
     ["cannot label every cluster, nothing was written: cluster 'bad-input' is not registered on the hub"]),
    ("cluster_taint", "unknown effect", lambda c: dict(taints=[{"key": "k", "effect": "Sometimes"}]),
     ["taints[0] (key k): effect 'Sometimes' is not a karmada taint effect"]),
    ("cluster_taint", "cluster that is not registered", lambda c: {},
     ["nothing was written: cluster 'bad-input' is not registered on the hub"]),
    # Kubernetes' rules end at the end of the text: "$" would also match before a final newline (issue 46)
    ("cluster_label", "label key ending in a newline", lambda c: dict(labels={"env\n": "prod"}),
     ["invalid labels: labels key 'env\\n': its name must be"]),
    ("cluster_taint", "taint key ending in a newline", lambda c: dict(cordon=None, taints=[{"key": "gpu\n", "effect": "NoSchedule"}]),
     ["taints[0]: taint key 'gpu\\n' is not a qualified name"]),
    ("cluster_info", "cluster name ending in a newline", lambda c: dict(name="member1\n"), ["invalid cluster name 'member1\\n'"]),
    # label selectors Kubernetes cannot parse (metav1.LabelSelectorAsSelector in the engines' controllers)
    ("cluster_set", "label selector key that is no qualified name", lambda c: dict(
        selector_type="LabelSelector", label_selector={"match_labels": {"Bad Key!": "v"}}),
     ["invalid selector, Kubernetes cannot parse it: label_selector.match_labels key 'Bad Key!': its name must be"]),
    ("cluster_set", "label selector value with a comma", lambda c: dict(selector_type="LabelSelector", label_selector={
        "match_expressions": [{"key": "env", "operator": "In", "values": ["a,b"]}]}),
     ["label_selector.match_expressions[0] (key env) values[0] = 'a,b': a label value must be"]),
    ("placement", "label selector key that is no qualified name", lambda c: dict(
        predicates=[{"label_selector": {"match_labels": {"Bad Key!": "v"}}}]),
     ["invalid selector, Kubernetes cannot parse it: predicates[0].label_selector.match_labels key 'Bad Key!': its name must be"]),
    ("placement", "label selector value with a comma", lambda c: dict(
        predicates=[{"label_selector": {"match_labels": {"env": "a,b"}}}]),
     ["predicates[0].label_selector.match_labels['env'] = 'a,b': a label value must be"]),
    ("placement", "claim selector key ending in a newline", lambda c: dict(
        predicates=[{"claim_selector": {"match_expressions": [{"key": "region\n", "operator": "Exists"}]}}]),
     ["predicates[0].claim_selector.match_expressions[0] key 'region\\n': its name must be"]),
    ("cluster_prune", "uppercase cluster name in listed", lambda c: dict(listed=["member1", "Member2"]),
     ["invalid cluster name 'Member2'"]),
    ("cluster_prune", "uppercase cluster name in confirmed", lambda c: dict(confirmed=["Member3"]),
     ["invalid cluster name 'Member3'"]),
    ("cluster_prune", "negative unreachable_after", lambda c: dict(unreachable_after=-1),
     ["unreachable_after must not be negative, got -1"]),
    ("cluster_prune", "wait_sleep of 0", lambda c: dict(wait_sleep=0), ["wait_sleep must be at least 1 second, got 0"]),
    ("cluster_prune", "neither listed nor unreachable_after", lambda c: dict(unreachable_after=None),
     ["one of the following is required: listed, unreachable_after"]),
]

# Missing or unreadable credentials and an unreachable cluster, for every module: (what, options, fragments).
CREDENTIAL_ROWS = [
    ("missing kubeconfig", lambda c: {"kubeconfig": c.missing}, lambda c: ["kubeconfig file %s does not exist" % c.missing]),
    ("kubeconfig that is a directory", lambda c: {"kubeconfig": c.directory}, lambda c: ["is a directory, not a file"]),
    ("kubeconfig that is no YAML", lambda c: {"kubeconfig": c.garbage}, lambda c: [c.garbage]),
    ("unreachable API server", lambda c: {"host": c.closed, "ca_cert": c.lab.clusters["hub"]["ca_cert"]},
     lambda c: ["(%s) is unreachable" % c.closed, "Connection refused"]),
    # malformed connection values: each names the option, the value and what is expected
    ("host without a scheme", lambda c: {"host": c.hub_server.split("://", 1)[1]},
     lambda c: ["invalid host %r: the scheme must be https:// or http://" % c.hub_server.split("://", 1)[1],
                "expected a URL such as https://10.0.0.7:6443"]),
    ("host with a port that is no number", lambda c: {"host": "https://127.0.0.1:port"},
     lambda c: ["invalid host 'https://127.0.0.1:port': it is not a URL with a numeric port"]),
    ("proxy of an unknown scheme", lambda c: {"host": c.hub_server, "proxy": "ftp://127.0.0.1:21"},
     lambda c: ["invalid proxy 'ftp://127.0.0.1:21': the scheme must be http:// or https://"]),
    ("kubeconfig that is a binary file", lambda c: {"kubeconfig": c.binary},
     lambda c: ["%s is not a kubeconfig: it is not text (a binary file?)" % c.binary]),
]


def credentials(module, options):
    """The options of a credential row for ``module``: they replace its top-level connection (or its second one)."""
    def build(c):
        auth = options(c)
        if module in SECOND_CONNECTION:
            return {SECOND_CONNECTION[module]: auth}
        return dict(auth, kubeconfig=auth.get("kubeconfig"), context=None)
    return build


ROWS += [(module, what, credentials(module, options), fragments)
         for module in MINIMAL for what, options, fragments in CREDENTIAL_ROWS]
# Modules of the collection without rows here (their owners add them).
UNCOVERED = {"addon", "addon_deployment_config"}


@pytest.fixture(scope="module")
def context(lab, tmp_path_factory):
    """The Context, with a bootstrap token the hub has signed cluster-info for (cluster_register's rows need one)."""
    hub = {"kubeconfig": lab.clusters["hub"]["kubeconfig"], "context": "hub"}
    registration = run_module("hub_registration", dict(hub, engine="karmada"))
    assert registration["rc"] == 0, registration.get("msg")
    # The rows take minutes, on a busy machine more than an hour: a token that expired meanwhile would be deleted by the
    # tokencleaner, and its cluster-info signature with it, in the middle of a row that must change nothing.
    made = run_module("bootstrap_token", dict(hub, engine="karmada", ttl="24h", description="bad-input rows"))
    assert made["rc"] == 0, made.get("msg")
    anonymous = fleet_lab.ApiClient.for_cluster(lab.clusters["hub"], anonymous=True)
    key = bootstrap.JWS_KEY_PREFIX + made["token_id"]
    fleet_lab.wait_for(lambda: key in anonymous.get(bootstrap.CLUSTER_INFO_PATH)["data"], 30, key)
    ctx = Context(lab, tmp_path_factory.mktemp("bad-input"), made["token"])
    ctx.pin = made["ca_cert_hashes"][0]
    yield ctx
    run_module("bootstrap_token", dict(hub, engine="karmada", token_id=made["token_id"], state="absent"))
    run_module("hub_registration", dict(hub, engine="karmada", state="absent"))


@pytest.mark.parametrize("module, what, options, fragments", ROWS, ids=["%s: %s" % (r[0], r[1]) for r in ROWS])
def test_bad_input_fails_clearly_and_changes_nothing(lab, context, module, what, options, fragments):
    args = dict(MINIMAL[module](context), **options(context))
    args = dict((k, v) for k, v in args.items() if v is not None)
    before = resource_versions(lab)
    result = run_module(module, args)
    after = resource_versions(lab)
    assert result["rc"] == 1 and result["failed"] is True, result
    message = result["msg"]
    assert "Traceback" not in message and "unexpected error" not in message and "exception" not in result, result
    for fragment in fragments(context) if callable(fragments) else fragments:
        assert fragment in message, message
    assert result.get("changed") is not True
    changed = sorted(set(k for k in set(before) | set(after) if before.get(k) != after.get(k)))
    assert changed == [], changed
    if context.token:
        assert context.token.split(".")[1] not in repr(result)


def test_every_module_has_rows():
    modules = {f[:-3] for f in os.listdir(os.path.join(os.path.dirname(__file__), "..", "..", "plugins", "modules"))
               if f.endswith(".py")}
    assert modules - UNCOVERED == set(MINIMAL) == {row[0] for row in ROWS}


# --- the same values in an inventory, through site.yml ------------------------------------------------------

# A member host per malformed connection value, registering by push: (host, its connection, what the run says of it)
MALFORMED_MEMBERS = [
    ("no-scheme", lambda c: {"host": c.member_server.split("://", 1)[1]},
     lambda c: "invalid host %r: the scheme must be https:// or http://" % c.member_server.split("://", 1)[1]),
    ("port-no-number", lambda c: {"host": "https://127.0.0.1:port"},
     lambda c: "invalid host 'https://127.0.0.1:port': it is not a URL with a numeric port"),
    ("ftp-proxy", lambda c: {"host": c.member_server, "proxy": "ftp://127.0.0.1:21"},
     lambda c: "invalid proxy 'ftp://127.0.0.1:21': the scheme must be http:// or https://"),
    ("binary-kubeconfig", lambda c: {"kubeconfig": c.binary},
     lambda c: "%s is not a kubeconfig: it is not text (a binary file?)" % c.binary),
]


def playbook_run(lab, directory, playbook, members, **extra_vars):
    """``playbook`` (site.yml, detach.yml) on the lab's hub and ``members`` (host -> variables); returns (returncode,
    output with its lines joined, recap)."""
    with open(lab.inventory) as handle:
        inventory = yaml.safe_load(handle)
    inventory["all"]["children"]["members"]["hosts"] = members
    path = directory / ("%s-inventory.yml" % playbook)
    path.write_text(yaml.safe_dump(inventory))
    done = run_playbook([{"import_playbook": os.path.join(ROOT, "playbooks", playbook)}], inventory=str(path),
                        extra_vars=extra_vars or None)
    return done.returncode, " ".join((done.stdout + done.stderr).split()), recap_of(done.stdout)


@pytest.fixture
def hub_left_clean(lab, tmp_path):
    """detach.yml on the hub alone after the test: its join token and registration set-up go."""
    yield
    returncode, output, dummy = playbook_run(lab, tmp_path, "detach.yml", {})
    assert returncode == 0, output[-4000:]


def test_site_names_each_malformed_connection_of_a_member(lab, context, tmp_path, hub_left_clean):
    members = dict((host, dict(connection(context), ansible_connection="local", registration_mode="push",
                               ansible_python_interpreter="{{ ansible_playbook_python }}"))
                   for host, connection, dummy in MALFORMED_MEMBERS)
    returncode, output, recap = playbook_run(lab, tmp_path, "site.yml", members)
    assert returncode != 0, output[-4000:]
    for host, dummy, message in MALFORMED_MEMBERS:
        assert recap[host]["failed"] == 1, recap
        assert message(context) in output, (host, output[-6000:])
    assert "unexpected error" not in output and "Traceback" not in output, output[-6000:]
    clusters = fleet_lab.ApiClient.for_cluster(lab.clusters["hub"]).get("/apis/cluster.karmada.io/v1alpha1/clusters")["items"]
    assert not {c["metadata"]["name"] for c in clusters} & set(members)


def test_site_names_a_join_token_ttl_too_long(lab, context, tmp_path, hub_left_clean):
    member = dict(context.member1, ansible_connection="local", registration_mode="pull",
                  ansible_python_interpreter="{{ ansible_playbook_python }}", cluster_name="member1")
    returncode, output, recap = playbook_run(lab, tmp_path, "site.yml", {"member1": member}, hub_init_token_ttl="99999999999h")
    assert returncode != 0 and recap["hub-cluster"]["failed"] == 1, output[-4000:]
    assert "ttl '99999999999h' is longer than 100 years" in output, output[-6000:]
    assert "unexpected error" not in output and "Traceback" not in output, output[-6000:]


# --- releases, registries and batches through site.yml and upgrade.yml (issue 46) ----------------------------------

# (engine, playbook, check mode, extra variables, what the run must say). Each is refused by the hub play's first task,
# naming the variable, in check mode as in a real run, and nothing is written on any cluster (ansible-playbook then ends:
# every host of the hub play failed). The filters' unit tests hold the other values.
BAD_RUNS = [
    ("karmada", "upgrade.yml", False, {"karmada_version": "../../evil"}, "karmada_version must name a release"),
    ("karmada", "upgrade.yml", True, {"karmada_version": "v1.19.0;id"}, "karmada_version must name a release"),
    ("ocm", "site.yml", True, {"ocm_version": "1.19"}, "ocm_version must name a release"),
    ("ocm", "site.yml", False, {"hub_init_ocm_registry": "evil.example.com/ocm;x"},
     "hub_init_ocm_registry must be an image registry and path without tag"),
    ("karmada", "upgrade.yml", False, {"fleet_upgrade_batches": "abc"}, "'abc' is neither a number nor a percentage"),
    ("ocm", "upgrade.yml", True, {"fleet_upgrade_batches": [1, 0]}, "0 is not a batch size"),
]


@pytest.mark.parametrize("engine, playbook, check, extra, message", BAD_RUNS,
                         ids=["%s %s%s %s" % (r[0], r[1], " --check" if r[2] else "", r[3]) for r in BAD_RUNS])
def test_a_bad_release_registry_or_batch_is_refused_before_anything_is_written(
        lab, context, tmp_path, engine, playbook, check, extra, message):
    with open(lab.inventory) as handle:
        inventory = yaml.safe_load(handle)
    inventory["all"]["vars"]["fleet_engine"] = engine
    before = resource_versions(lab)
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    # short waits: on code without these checks a run goes on and waits for agents the lab does not run here
    done = run_playbook([{"import_playbook": os.path.join(ROOT, "playbooks", playbook)}], inventory=str(path),
                        extra_vars=dict(extra, fleet_wait_timeout=5, fleet_wait_step=5), check=check)
    output = " ".join((done.stdout + done.stderr).split())
    recap = recap_of(done.stdout)
    assert done.returncode == 2, output[-4000:]
    assert "unexpected error" not in output and "Traceback" not in output and "Unexpected Exception" not in output, output[-4000:]
    assert recap["hub-cluster"]["failed"] == 1 and recap["hub-cluster"]["ok"] == 0, recap  # its first task
    assert message in output, output[-6000:]
    after = resource_versions(lab)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert changed == [], changed
