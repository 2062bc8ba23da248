"""The inventory plugin as Ansible runs it: ``ansible-inventory`` (and ``ansible``) with an inventory source, against
a small HTTP server that answers the hub's list request like an API server and counts the requests.

What the plugin builds from the hub's answer is tested in plugins/module_utils/test_inventory.py; here: loading,
options, the hub connection (credential rule), compose, groups, keyed_groups, filters, strict, the cache, and that
no secret and no template from the hub reaches the inventory.
"""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

KARMADA_CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"


def karmada_cluster(name, mode, ready, labels=None, region=None):
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": dict({"syncMode": mode, "apiEndpoint": "https://10.0.0.%d:6443" % (len(name) + 1)},
                         **({"region": region} if region else {})),
            "status": {"kubernetesVersion": "v1.20.2",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False", "reason": "r"}]}}


class Hub(ThreadingHTTPServer):
    """Answers GET on the Karmada Cluster list with ``clusters``; records (path, Authorization) of every request."""

    def __init__(self):
        super(Hub, self).__init__(("127.0.0.1", 0), HubHandler)
        self.clusters = []
        self.requests = []

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


class HubHandler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server interface
        self.server.requests.append((self.path.split("?")[0], self.headers.get("Authorization")))
        if self.path.split("?")[0] == KARMADA_CLUSTERS:
            status, body = 200, {"kind": "ClusterList", "items": self.server.clusters}
        else:
            status, body = 404, {"kind": "Status", "reason": "NotFound", "message": "not found"}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def hub():
    server = Hub()
    server.clusters = [karmada_cluster("m1", "Push", True, labels={"env": "prod"}, region="eu-west-1"),
                       karmada_cluster("m2", "Pull", False, labels={"env": "dev"})]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def unsafe_free(value):
    """``value`` with ansible-inventory's ``{"__ansible_unsafe": x}`` markers of untrusted strings replaced by x."""
    if isinstance(value, dict):
        if list(value) == ["__ansible_unsafe"]:
            return value["__ansible_unsafe"]
        return dict((k, unsafe_free(v)) for k, v in value.items())
    if isinstance(value, list):
        return [unsafe_free(v) for v in value]
    return value


def ansible(tmp_path, command, env=None):
    """Run an Ansible command line tool of this Python's installation with a clean HOME and no K8S_AUTH_*."""
    environment = dict((k, v) for k, v in os.environ.items() if not k.startswith("K8S_AUTH_") and k != "KUBECONFIG")
    environment.update(HOME=str(tmp_path), ANSIBLE_NOCOLOR="1", ANSIBLE_INVENTORY_UNPARSED_FAILED="1",
                       ANSIBLE_LOCALHOST_WARNING="false", **(env or {}))
    command = [os.path.join(os.path.dirname(sys.executable), command[0])] + command[1:]
    return subprocess.run(command, capture_output=True, text=True, env=environment, check=False)


def inventory(tmp_path, source, *args, env=None, expect_failure=False):
    """Write ``source`` as an inventory source and return ``ansible-inventory --list`` (parsed) for it."""
    path = tmp_path / "test.fleet.yml"
    path.write_text(yaml.safe_dump(dict({"plugin": "multicluster.fleet.fleet"}, **source)))
    done = ansible(tmp_path, ["ansible-inventory", "-i", str(path), "--list"] + list(args), env)
    if expect_failure:
        assert done.returncode != 0, done.stdout
        return done
    assert done.returncode == 0, done.stderr
    return unsafe_free(json.loads(done.stdout))


def hosts_of(listing, group):
    return sorted(listing.get(group, {}).get("hosts", []))


def test_groups_and_variables(tmp_path, hub):
    listing = inventory(tmp_path, {"engine": "karmada", "host": hub.url, "hub_apiserver": "https://hub.example.com",
                                   "members": [{"name": "m3", "vars": {"registration_mode": "pull"}}]})
    assert hosts_of(listing, "hub") == ["hub-cluster"]
    assert hosts_of(listing, "members") == ["m1", "m2", "m3"]
    assert hosts_of(listing, "engine_karmada") == ["hub-cluster", "m1", "m2", "m3"]
    assert (hosts_of(listing, "mode_push"), hosts_of(listing, "mode_pull")) == (["m1"], ["m2", "m3"])
    assert (hosts_of(listing, "ready"), hosts_of(listing, "not_ready")) == (["m1"], ["m2", "m3"])
    hostvars = listing["_meta"]["hostvars"]
    assert hostvars["hub-cluster"] == {"ansible_connection": "local", "host": hub.url, "fleet_engine": "karmada",
                                       "hub_apiserver": "https://hub.example.com"}
    assert hostvars["m1"]["fleet_hub"] == {"name": "hub-cluster", "host": hub.url, "hub_apiserver": "https://hub.example.com"}
    assert {k: hostvars["m1"][k] for k in ("cluster_name", "registration_mode", "region", "labels", "fleet_engine",
                                           "fleet_ready", "fleet_registered", "fleet_kubernetes_version")} == {
        "cluster_name": "m1", "registration_mode": "push", "region": "eu-west-1", "labels": {"env": "prod"},
        "fleet_engine": "karmada", "fleet_ready": True, "fleet_registered": True, "fleet_kubernetes_version": "v1.20.2"}
    assert hostvars["m3"]["fleet_registered"] is False
    assert hub.requests == [(KARMADA_CLUSTERS, None)]


def test_compose_groups_and_keyed_groups(tmp_path, hub):
    listing = inventory(tmp_path, {
        "engine": "karmada", "host": hub.url,
        "compose": {"context": "cluster_name ~ '-admin'", "minor": "fleet_kubernetes_version.split('.')[1] | int"},
        "groups": {"production": "labels.env == 'prod'", "broken": "undefined_variable.attribute"},
        "keyed_groups": [{"key": "region | default('none')", "prefix": "region"}, {"key": "fleet_engine"}],
    })
    hostvars = listing["_meta"]["hostvars"]
    assert (hostvars["m1"]["context"], hostvars["m2"]["context"], hostvars["m1"]["minor"]) == ("m1-admin", "m2-admin", 20)
    assert "context" not in hostvars["hub-cluster"]  # constructed options apply to the members
    assert hosts_of(listing, "production") == ["m1"] and "broken" not in listing  # not strict: skipped
    assert (hosts_of(listing, "region_eu_west_1"), hosts_of(listing, "region_none")) == (["m1"], ["m2"])
    assert hosts_of(listing, "_karmada") == ["m1", "m2"]


def test_cordoned_group_and_keyed_groups_on_labels(tmp_path, hub):
    cordon = {"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-11-24T12:00:00Z"}
    hub.clusters[1]["spec"]["taints"] = [cordon]
    hub.clusters[1]["metadata"]["annotations"] = {"owner": "me", "multicluster.fleet/managed-labels": "env"}
    listing = inventory(tmp_path, {"engine": "karmada", "host": hub.url,
                                   "keyed_groups": [{"key": "labels.env", "prefix": "env"}]})
    assert hosts_of(listing, "cordoned") == ["m2"]
    assert (hosts_of(listing, "env_prod"), hosts_of(listing, "env_dev")) == (["m1"], ["m2"])
    m1, m2 = listing["_meta"]["hostvars"]["m1"], listing["_meta"]["hostvars"]["m2"]
    assert (m1["cordoned"], m2["cordoned"], m2["fleet_taints"], m2["annotations"]) == (False, True, [cordon], {"owner": "me"})
    assert "cluster_set" not in m2  # Karmada has no cluster sets


def test_strict_fails_on_an_expression_that_cannot_be_evaluated(tmp_path, hub):
    done = inventory(tmp_path, {"engine": "karmada", "host": hub.url, "strict": True,
                                "groups": {"broken": "undefined_variable.attribute"}}, expect_failure=True)
    assert "Could not add host m1 to group broken" in done.stderr


def test_filters(tmp_path, hub):
    listing = inventory(tmp_path, {"engine": "karmada", "host": hub.url,
                                   "filters": ["fleet_ready", "labels.env == 'prod'"]})
    assert hosts_of(listing, "members") == ["m1"] and hosts_of(listing, "hub") == ["hub-cluster"]
    assert hosts_of(listing, "not_ready") == []
    assert inventory(tmp_path, {"engine": "karmada", "host": hub.url, "filters": ["not fleet_ready"]})["members"][
        "hosts"] == ["m2"]


def test_filter_that_cannot_be_evaluated_leaves_the_member_out_or_fails_when_strict(tmp_path, hub):
    path = tmp_path / "test.fleet.yml"
    source = {"plugin": "multicluster.fleet.fleet", "engine": "karmada", "host": hub.url, "filters": ["region == 'eu-west-1'"]}
    path.write_text(yaml.safe_dump(source))
    done = ansible(tmp_path, ["ansible-inventory", "-i", str(path), "--list"])
    assert done.returncode == 0, done.stderr
    assert unsafe_free(json.loads(done.stdout))["members"]["hosts"] == ["m1"]
    assert "filter \"region == 'eu-west-1'\" cannot be evaluated for cluster m2" in done.stderr.replace("\n", " ")
    path.write_text(yaml.safe_dump(dict(source, strict=True)))
    done = ansible(tmp_path, ["ansible-inventory", "-i", str(path), "--list"])
    assert done.returncode != 0 and "cannot be evaluated for cluster m2" in done.stderr


def test_bearer_token_reaches_the_hub_but_no_inventory_variable(tmp_path, hub):
    done = ansible(tmp_path, ["ansible-inventory", "-i", str(_source(tmp_path, host=hub.url, api_key="s3cr3t-token")), "--list"])
    assert done.returncode == 0, done.stderr
    assert hub.requests == [(KARMADA_CLUSTERS, "Bearer s3cr3t-token")]
    assert "s3cr3t-token" not in done.stdout


def test_hub_from_the_environment_when_the_source_names_no_cluster(tmp_path, hub):
    listing = inventory(tmp_path, {"engine": "karmada"}, env={"K8S_AUTH_HOST": hub.url, "K8S_AUTH_API_KEY": "env-token"})
    assert hosts_of(listing, "members") == ["m1", "m2"]
    assert hub.requests == [(KARMADA_CLUSTERS, "Bearer env-token")]
    # what came from the environment belongs to this run, not to the inventory
    assert listing["_meta"]["hostvars"]["hub-cluster"] == {"ansible_connection": "local", "fleet_engine": "karmada"}
    assert "env-token" not in json.dumps(listing)


def test_source_that_names_the_hub_never_reads_the_environment(tmp_path, hub):
    done = inventory(tmp_path, {"engine": "karmada", "context": "hub"}, env={"K8S_AUTH_HOST": hub.url}, expect_failure=True)
    assert hub.requests == []
    assert "the hub: no kubeconfig or host given, and no default kubeconfig at %s/.kube/config" % tmp_path in done.stderr


def test_unreachable_hub_is_named(tmp_path):
    done = inventory(tmp_path, {"engine": "karmada", "host": "http://127.0.0.1:9"}, expect_failure=True)
    assert "the hub (http://127.0.0.1:9) is unreachable" in done.stderr


def test_invalid_members_entry(tmp_path, hub):
    done = inventory(tmp_path, {"engine": "karmada", "host": hub.url, "members": [{"name": "m1", "pattern": "m*"}]},
                     expect_failure=True)
    assert "test.fleet.yml: members[0] needs exactly one of name (a cluster) or pattern" in done.stderr.replace("\n", " ")


def test_cache_answers_without_asking_the_hub(tmp_path, hub):
    source = {"engine": "karmada", "host": hub.url, "cache": True, "cache_plugin": "ansible.builtin.jsonfile",
              "cache_connection": str(tmp_path / "cache"), "cache_timeout": 3600}
    first = inventory(tmp_path, source)
    assert len(hub.requests) == 1
    second = inventory(tmp_path, source)
    assert len(hub.requests) == 1 and second == first
    hub.clusters = hub.clusters[:1]
    flushed = inventory(tmp_path, source, "--flush-cache")
    assert len(hub.requests) == 2 and hosts_of(flushed, "members") == ["m1"]
    assert hosts_of(inventory(tmp_path, source), "members") == ["m1"] and len(hub.requests) == 2


def test_what_the_hub_reports_is_never_templated(tmp_path, hub):
    hub.clusters[0]["metadata"]["labels"]["note"] = "{{ 6 * 7 }}"
    path = _source(tmp_path, host=hub.url)
    done = ansible(tmp_path, ["ansible", "-i", str(path), "m1", "-m", "ansible.builtin.debug", "-a", "var=labels.note"],
                   env={"ANSIBLE_PYTHON_INTERPRETER": sys.executable})
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"labels.note": "{{ 6 * 7 }}"' in done.stdout


def _source(tmp_path, **options):
    path = tmp_path / "test.fleet.yml"
    path.write_text(yaml.safe_dump(dict({"plugin": "multicluster.fleet.fleet", "engine": "karmada"}, **options)))
    return path
