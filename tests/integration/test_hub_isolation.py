"""Least privilege and identity on the hub, on the lab.

Every identity site.yml leaves a member (its agent's hub credentials) and the join token reach only their own objects on
the hub. Each check is made twice, as ``kubectl auth can-i`` makes it (a SelfSubjectAccessReview) and as a real request,
and each identity is also shown to reach its own objects, so that a broken identity cannot pass for an isolated one.
Karmada: member2 registered by pull against member1 joined by push (its stored ServiceAccount token is admin on member1),
then both members by pull, each against the other; a fleet whose agent roles an earlier version wrote (every Cluster,
every Secret of karmada-cluster) loses them on the next site.yml run. OCM: both members by pull, each against the other.

One name, one cluster: an "impostor" host reaching member1's cluster but calling it member2 is refused before anything
is written, alone (the hub has member2 for another cluster id) and beside member2 (two hosts, one name: neither
registers, and the run fails for each); a Push member is not made a Pull one silently.

Each class registers its fleet once with site.yml and detaches it after its tests.
"""

import json
import os
import subprocess
import sys

import pytest
import yaml

from agents import can_i, join_token_client, karmada_agent, ocm_agent
from labstate import snapshot
from runner import COLLECTIONS, ROOT, recap_of, run_playbook, summary, summary_rows

import lab as fleet_lab

CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
MANAGED_CLUSTERS = "/apis/cluster.open-cluster-management.io/v1/managedclusters"
KARMADA_CLUSTER_NAMESPACE = "karmada-cluster"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
DUPLICATE = "cluster_name member2 is also the cluster name of %s in the inventory: a name stands for one cluster, so none " \
            "of them is registered"

# The agent roles an earlier version of the collection wrote: every Cluster, every Secret of karmada-cluster.
EARLIER_CLUSTER_RULES = [
    {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"],
     "verbs": ["create", "get", "list", "watch", "delete", "update", "patch"]},
    {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/status"], "verbs": ["update", "patch"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
]
EARLIER_SECRET_RULES = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch", "update"]}]


def inventory(lab, directory, engine, name, impostor=False, **modes):
    """The lab's inventory for ``engine`` with each member's registration_mode from ``modes`` (None leaves the member
    out); ``impostor`` adds, first, a host that reaches member1's cluster but calls it member2 (by pull)."""
    with open(lab.inventory) as handle:
        content = yaml.safe_load(handle)
    content["all"]["vars"]["fleet_engine"] = engine
    members = content["all"]["children"]["members"]["hosts"]
    impostor_vars = dict(members["member1"], cluster_name="member2", registration_mode="pull")
    for host, mode in modes.items():
        if mode is None:
            members.pop(host)
        else:
            members[host]["registration_mode"] = mode
    if impostor:
        content["all"]["children"]["members"]["hosts"] = dict([("impostor", impostor_vars)] + list(members.items()))
    path = directory / ("%s-%s.yml" % (engine, name))
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    return str(path)


def playbook(name, path, succeeds=True):
    done = run_playbook([{"import_playbook": "%s/playbooks/%s" % (ROOT, name)}], inventory=path)
    assert (done.returncode == 0) is succeeds, done.stdout[-4000:]
    return done


@pytest.fixture(scope="class")
def fleet(request, lab, simulations, tmp_path_factory):
    """The fleet site.yml registers for the class's ``ENGINE`` and ``MODES`` (kept for the class's tests, detached by
    detach.yml after them): the inventory's path."""
    directory = tmp_path_factory.mktemp("fleet")
    path = inventory(lab, directory, request.cls.ENGINE, "fleet", **request.cls.MODES)
    playbook("site.yml", path)
    yield path
    playbook("detach.yml", path)


def refused_before_anything_is_written(lab, path, hosts, message):
    """site.yml with the inventory ``path`` fails for each of ``hosts`` with ``message``, and changes nothing."""
    before = snapshot(lab, contents=True)
    done = playbook("site.yml", path, succeeds=False)
    recap = recap_of(done.stdout)
    for host in hosts:
        assert recap[host]["failed"] + recap[host]["rescued"] >= 1, recap
    assert message in done.stdout, done.stdout[-4000:]
    assert snapshot(lab, contents=True) == before
    return done


def status_of(client, method, path, body=None):
    """The HTTP status of a real request (200 when it succeeds)."""
    try:
        if method == "PATCH":
            client.patch(path, body)
        else:
            client.request(method, path, body)
    except fleet_lab.ApiError as exc:
        return exc.status
    return 200


VERSIONS = {"cluster.karmada.io": "v1alpha1", "work.karmada.io": "v1alpha1", "coordination.k8s.io": "v1",
            "cluster.open-cluster-management.io": "v1", "work.open-cluster-management.io": "v1"}


def path_of(resource, group, name=None, namespace=None, subresource=None):
    base = "/apis/%s/%s" % (group, VERSIONS[group]) if group else "/api/v1"
    path = base + ("/namespaces/%s" % namespace if namespace else "") + "/" + resource
    return path + ("/" + name if name else "") + ("/" + subresource if subresource else "")


# (verb, HTTP method, body) of each request tried on another member's object.
WRITES = [("get", "GET", None), ("patch", "PATCH", {"metadata": {"labels": {"fleet-test/taken": "yes"}}}),
          ("delete", "DELETE", None)]


def refused_everything(client, targets):
    """The (verb, path) of each request on ``targets`` that the hub does not refuse, by review or for real (403 each).

    ``targets`` are (group, resource, name, namespace, subresource) of objects that belong to another member."""
    allowed = []
    for group, resource, name, namespace, subresource in targets:
        for verb, method, body in WRITES if name else [("list", "GET", None)]:
            if subresource and verb != "patch":
                continue
            path = path_of(resource, group, name, namespace, subresource)
            if can_i(client, verb, group, resource, name, namespace, subresource):
                allowed.append(("can-i", verb, path))
            status = status_of(client, method, path, body)
            if status != 403:
                allowed.append((status, verb, path))
    return allowed


def karmada_targets(name):
    """Member ``name``'s objects on a Karmada hub: its Cluster and status, its Secrets (the stored ServiceAccount
    tokens of a Push member), its Lease, its Works; and the list of every Secret of karmada-cluster."""
    return [("cluster.karmada.io", "clusters", name, None, None),
            ("cluster.karmada.io", "clusters", name, None, "status"),
            ("", "secrets", name, KARMADA_CLUSTER_NAMESPACE, None),
            ("", "secrets", name + "-impersonator", KARMADA_CLUSTER_NAMESPACE, None),
            ("", "secrets", None, KARMADA_CLUSTER_NAMESPACE, None),
            ("coordination.k8s.io", "leases", name, KARMADA_CLUSTER_NAMESPACE, None),
            ("work.karmada.io", "works", None, "karmada-es-" + name, None)]


def ocm_targets(name):
    """Member ``name``'s objects on an OCM hub: its ManagedCluster and status, and what its namespace holds."""
    return [("cluster.open-cluster-management.io", "managedclusters", name, None, None),
            ("cluster.open-cluster-management.io", "managedclusters", name, None, "status"),
            ("", "secrets", None, name, None),
            ("coordination.k8s.io", "leases", "managed-cluster-lease", name, None),
            ("work.open-cluster-management.io", "manifestworks", None, name, None)]


def reaches_its_own_cluster(client, engine, name):
    path = "%s/%s" % (CLUSTERS if engine == "karmada" else MANAGED_CLUSTERS, name)
    return status_of(client, "GET", path) == 200 and can_i(
        client, "get", "cluster.karmada.io" if engine == "karmada" else "cluster.open-cluster-management.io",
        "clusters" if engine == "karmada" else "managedclusters", name)


class TestKarmadaPushAndPull:
    ENGINE, MODES = "karmada", {"member1": "push", "member2": "pull"}

    def test_a_pull_agent_cannot_reach_a_push_member(self, lab, fleet, tmp_path):
        agent = karmada_agent(lab, "member2", tmp_path)
        assert reaches_its_own_cluster(agent, "karmada", "member2")
        # member1's ServiceAccount token, admin on member1, is in Secret karmada-cluster/member1 on the hub
        assert lab.api(lab.hub).exists("/api/v1/namespaces/karmada-cluster/secrets/member1")
        assert refused_everything(agent, karmada_targets("member1")) == []

    def test_the_join_token_reaches_no_member(self, lab, fleet, tmp_path):
        token = join_token_client(lab, "system:bootstrappers:karmada:default-cluster-token", tmp_path)
        for name in ("member1", "member2"):
            assert refused_everything(token, karmada_targets(name)) == [], name
        assert can_i(token, "create", "certificates.k8s.io", "certificatesigningrequests")  # what it is for

    def test_the_broad_roles_of_an_earlier_version_are_replaced_on_the_next_run(self, lab, fleet, tmp_path):
        hub = lab.api(lab.hub)
        roles = {"%s/clusterroles/system:karmada:member2:agent" % RBAC: EARLIER_CLUSTER_RULES,
                 "%s/namespaces/karmada-cluster/roles/system:karmada:member2:agent-secret" % RBAC: EARLIER_SECRET_RULES}
        for role, rules in roles.items():
            hub.patch(role, {"rules": rules})
        agent = karmada_agent(lab, "member2", tmp_path)
        assert refused_everything(agent, karmada_targets("member1")) != []  # the earlier roles let it through
        assert recap_of(playbook("site.yml", fleet).stdout)["member2"]["changed"] >= 1
        for role in roles:
            assert all("resourceNames" in rule for rule in hub.get(role)["rules"]
                       if set(rule["verbs"]) & {"get", "update", "patch", "delete"} and
                       rule["resources"][0] in ("clusters", "clusters/status", "secrets", "leases")), hub.get(role)["rules"]
        assert refused_everything(agent, karmada_targets("member1")) == []
        assert reaches_its_own_cluster(agent, "karmada", "member2")

    def test_a_cluster_an_agent_names_like_the_hub_host_leaves_the_inventory_whole(self, lab, fleet, tmp_path):
        """Any agent may create a Cluster (it registers itself); one named like the inventory's hub host is left out
        of the inventory plugin's hosts, with a warning, instead of failing the whole inventory."""
        agent = karmada_agent(lab, "member2", tmp_path)
        agent.post(CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                              "metadata": {"name": "hub-cluster"}, "spec": {"syncMode": "Pull"}})
        try:
            source = tmp_path / "lab.fleet.yml"
            source.write_text(yaml.safe_dump({"plugin": "multicluster.fleet.fleet", "engine": "karmada",
                                              "hub_host": "hub-cluster", "kubeconfig": lab.clusters[lab.hub]["kubeconfig"],
                                              "context": lab.hub}))
            done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-inventory"), "-i", str(source),
                                   "--list"], capture_output=True, text=True, check=False,
                                  env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1",
                                           ANSIBLE_INVENTORY_UNPARSED_FAILED="true"))
        finally:
            lab.api(lab.hub).delete("%s/hub-cluster" % CLUSTERS)
        assert done.returncode == 0, done.stderr[-3000:]
        listed = json.loads(done.stdout)
        assert listed["hub"]["hosts"] == ["hub-cluster"] and sorted(listed["members"]["hosts"]) == ["member1", "member2"]
        assert "cluster 'hub-cluster' on the hub is left out: the inventory's hub host has that name" in done.stderr

    def test_a_cluster_never_takes_another_members_name(self, lab, fleet, tmp_path):
        impostor = inventory(lab, tmp_path, "karmada", "impostor", impostor=True, member1=None, member2=None)
        done = refused_before_anything_is_written(lab, impostor, ["impostor"], (
            "Cluster 'member2' on the hub belongs to another cluster (%s, cluster id %s), not to this member (%s, cluster "
            "id %s)" % (lab.clusters["member2"]["server"], lab.clusters["member2"]["kube_system_uid"],
                        lab.clusters["member1"]["server"], lab.clusters["member1"]["kube_system_uid"])))
        assert summary(done.stdout)["member2"]["RESULT"].startswith("failed")

    def test_two_hosts_naming_one_cluster_alike_are_refused_before_either_registers(self, lab, fleet, tmp_path):
        twins = inventory(lab, tmp_path, "karmada", "twins", impostor=True)
        done = refused_before_anything_is_written(lab, twins, ["impostor", "member2"], DUPLICATE % "member2")
        assert DUPLICATE % "impostor" in done.stdout
        recap = recap_of(done.stdout)
        assert recap["member1"]["failed"] == 0 and recap["member1"]["rescued"] == 0
        # a row per host, each failed: neither host's result can hide the other's
        rows = [row["RESULT"] for row in summary_rows(done.stdout) if row["NAME"] == "member2"]
        assert len(rows) == 2 and all(result.startswith("failed: cluster_name member2 is also") for result in rows), rows

    def test_a_push_member_is_not_made_a_pull_member_silently(self, lab, fleet, tmp_path):
        pulled = inventory(lab, tmp_path, "karmada", "push-to-pull", member1="pull", member2="pull")
        refused_before_anything_is_written(lab, pulled, ["member1"], (
            "Cluster 'member1' is registered on the hub in Push mode; registering it by pull would make it a Pull "
            "member: set karmada.allow_mode_change=true"))


class TestKarmadaPullAndPull:
    ENGINE, MODES = "karmada", {"member1": "pull", "member2": "pull"}

    def test_pull_agents_cannot_reach_each_other(self, lab, fleet, tmp_path):
        for own, other in (("member1", "member2"), ("member2", "member1")):
            agent = karmada_agent(lab, own, tmp_path)
            assert reaches_its_own_cluster(agent, "karmada", own)
            assert refused_everything(agent, karmada_targets(other)) == [], own


class TestOcm:
    ENGINE, MODES = "ocm", {}

    def test_agents_cannot_reach_each_other(self, lab, fleet, tmp_path):
        for own, other in (("member1", "member2"), ("member2", "member1")):
            agent = ocm_agent(lab, own, tmp_path)
            assert reaches_its_own_cluster(agent, "ocm", own)
            assert refused_everything(agent, ocm_targets(other)) == [], own

    def test_the_join_token_reaches_no_member(self, lab, fleet, tmp_path):
        token = join_token_client(lab, "system:bootstrappers:managedcluster", tmp_path)
        own = path_of("managedclusters", "cluster.open-cluster-management.io", "member1")
        # clusteradm's bootstrap role lets a joining agent read ManagedClusters (it looks for its own): reading one is
        # the join token's only right on another member's objects
        assert refused_everything(token, ocm_targets("member1")) == [("can-i", "get", own), (200, "get", own)]

    def test_a_cluster_never_takes_another_members_name(self, lab, fleet, tmp_path):
        impostor = inventory(lab, tmp_path, "ocm", "impostor", impostor=True, member1=None, member2=None)
        refused_before_anything_is_written(lab, impostor, ["impostor"], (
            "ManagedCluster 'member2' on the hub belongs to another cluster (%s, cluster id %s), not to this member (%s, "
            "cluster id %s)" % (lab.clusters["member2"]["server"], lab.clusters["member2"]["kube_system_uid"],
                                lab.clusters["member1"]["server"], lab.clusters["member1"]["kube_system_uid"])))

    def test_two_hosts_naming_one_cluster_alike_are_refused_before_either_registers(self, lab, fleet, tmp_path):
        twins = inventory(lab, tmp_path, "ocm", "twins", impostor=True)
        done = refused_before_anything_is_written(lab, twins, ["impostor", "member2"], DUPLICATE % "member2")
        assert DUPLICATE % "impostor" in done.stdout
