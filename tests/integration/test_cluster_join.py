"""cluster_join against the lab: a real hub and two real members, with the simulated cluster-status controller.

The tests of ``TestPushLifecycle`` run in order and build on each other (join, re-join, refusals,
changes, unjoin, force-unjoin); every object they create is named ``cj-*`` and removed at the end.
Readiness comes from tests/lab/sim_karmada.py, which calls the member with the token stored on the hub.
"""

import base64
import json
import os
import socket

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import join
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER, WORK
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import (
    CLUSTER_ROLE, CLUSTER_ROLE_BINDING, NAMESPACE, SECRET, SERVICE_ACCOUNT,
)
from runner import run_module, run_playbook
import lab as fleet_lab
import labstate
import sim_karmada

NS = karmada.DEFAULT_CLUSTER_NAMESPACE
EAST, WEST = "cj-east", "cj-west"  # member1, member2
LIMITED_USER = "cj-limited"
SEEN_TOKENS = set()  # every member token read during the tests; none may appear in a module result
RESULTS = []


def auth(lab, name):
    return {"kubeconfig": lab.clusters[name]["kubeconfig"], "context": name}


def connection(lab, name):
    return client.get_cluster(auth(lab, name), name)


def run(args, check_mode=False, diff=False):
    result = run_module("cluster_join", args, check_mode=check_mode, diff=diff)
    RESULTS.append(result)
    return result


def ok(result):
    assert result["rc"] == 0, result.get("msg")
    assert "exception" not in result
    return result


def failed(result, *fragments):
    assert result["rc"] == 1 and result["failed"], result
    assert "Traceback" not in result["msg"] and "exception" not in result
    for fragment in fragments:
        assert fragment in result["msg"], result["msg"]
    return result


def changed_lines(result):
    return [c for c in result["changes"] if not c.endswith((": unchanged", ": absent"))]


def settled(changes):
    """Change lines with hub Secrets counted as deleted: the garbage collector may remove them first."""
    return [c.replace(": absent", ": deleted") if c.startswith("hub Secret/") else c for c in changes]


def hub_token(hub, name):
    """The member token stored in hub Secret ``name`` (recorded so no result may contain it)."""
    token = base64.b64decode(resources.get(hub, SECRET, name, NS)["data"]["token"]).decode()
    SEEN_TOKENS.update([token, base64.b64encode(token.encode()).decode()])
    return token


@pytest.fixture(scope="module")
def hub(lab):
    return connection(lab, lab.hub)


# Which member each cluster name stands for (also what the final cleanup unjoins).
MEMBERS = {EAST: "member1", WEST: "member2"}
# Karmada's controller marking a Cluster it cannot reach.
NOT_READY = resources.Wait(timeout=20, condition=resources.wanted_condition("Ready", "False"))


@pytest.fixture(scope="module")
def args(lab):
    """Module arguments to join ``cluster_name`` (its member from MEMBERS unless given)."""
    def build(cluster_name, member=None, **options):
        options.setdefault("wait_sleep", 1)  # the simulated controller reports every half second
        return dict(auth(lab, lab.hub), cluster_name=cluster_name, member=auth(lab, member or MEMBERS[cluster_name]),
                    **options)
    return build


@pytest.fixture(scope="module", autouse=True)
def karmada_controller(lab, hub):
    """The simulated cluster-status controller for this module; everything cj-* is removed afterwards."""
    hub_namespace_existed = resources.get(hub, NAMESPACE, NS) is not None
    simulation = sim_karmada.ClusterStatusSimulation(fleet_lab.ApiClient.for_cluster(lab.clusters[lab.hub]),
                                                     interval=0.5).start()
    yield simulation
    simulation.stop()
    resources.delete(hub, CLUSTER, "cj-pull", wait=resources.Wait())
    for name, member in MEMBERS.items():
        join.unjoin(hub, connection(lab, member), dict(cluster_name=name, cluster_namespace=NS, wait_timeout=60, force=True))
    for kind, name in ((CLUSTER_ROLE_BINDING, LIMITED_USER), (CLUSTER_ROLE, LIMITED_USER)):
        resources.delete(hub, kind, name)
    if not hub_namespace_existed:
        resources.delete(hub, NAMESPACE, NS)


@pytest.fixture(scope="module")
def limited_hub_user(lab, hub):
    """A hub identity that may create Clusters and namespaces but not Secrets: joins with it stop half way."""
    rules = [{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["get", "list", "create", "patch"]},
             {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "create"]}]
    resources.ensure(hub, CLUSTER_ROLE, {"metadata": {"name": LIMITED_USER}, "rules": rules})
    resources.ensure(hub, CLUSTER_ROLE_BINDING, {
        "metadata": {"name": LIMITED_USER},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": LIMITED_USER},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": LIMITED_USER}]})
    return LIMITED_USER


def test_readme_play_plans_a_join_of_every_member(lab, hub):
    """The cluster_join play of docs/modules.md over the lab inventory (hub credentials from hostvars), in check mode."""
    task = {"multicluster.fleet.cluster_join": {
        "kubeconfig": "{{ hostvars[groups.hub[0]].kubeconfig }}",
        "context": "{{ hostvars[groups.hub[0]].context | default(omit) }}",
        "cluster_name": "cj-pb-{{ cluster_name | default(inventory_hostname) }}",
        "member": {"kubeconfig": "{{ kubeconfig }}", "context": "{{ context | default(omit) }}"},
        "region": "{{ region | default(omit) }}", "wait": True},
        "register": "joined"}
    check = {"ansible.builtin.assert": {"that": [
        "joined is changed", "joined.cluster.spec.id == lab_uids[inventory_hostname]",
        "'hub Cluster/cj-pb-' ~ inventory_hostname ~ ': created' in joined.changes"]}}
    uids = dict((name, lab.clusters[name]["kube_system_uid"]) for name in ("member1", "member2"))
    done = run_playbook([{"hosts": "members", "gather_facts": False, "vars": {"lab_uids": uids}, "tasks": [task, check]}],
                        inventory=os.path.join(lab.dir, "inventory.yml"), check=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("changed=1") == 2 and "failed=0" in done.stdout
    assert resources.get(hub, CLUSTER, "cj-pb-member1") is None and resources.get(hub, CLUSTER, "cj-pb-member2") is None


class TestPushLifecycle:
    def test_check_mode_join_plans_everything_and_writes_nothing(self, lab, hub, args):
        result = ok(run(args(EAST, region="eu-west-1"), check_mode=True, diff=True))
        assert result["changed"] and result["cluster_id"] == lab.clusters["member1"]["kube_system_uid"]
        assert [c for c in result["changes"] if c.startswith("member")] == [
            "member Namespace/karmada-cluster: created",
            "member ServiceAccount/karmada-cluster/karmada-cj-east: created",
            "member ServiceAccount/karmada-cluster/karmada-impersonator: created",
            "member ClusterRole/karmada-controller-manager:karmada-cj-east: created",
            "member ClusterRoleBinding/karmada-controller-manager:karmada-cj-east: created",
            "member Secret/karmada-cluster/karmada-cj-east: created",
            "member Secret/karmada-cluster/karmada-impersonator: created"]
        assert "hub Cluster/cj-east: created" in result["changes"]
        assert result["diff"]["before"] == {} and result["diff"]["after"]["spec"]["region"] == "eu-west-1"
        assert result["diff"]["before_header"] == result["diff"]["after_header"] == "hub Cluster/cj-east"
        assert resources.get(hub, CLUSTER, EAST) is None
        assert resources.get(connection(lab, "member1"), NAMESPACE, NS) is None

    def test_join_first_member_and_wait_until_ready(self, lab, hub, args):
        result = ok(run(args(EAST, provider="lab", region="eu-west-1", zones=["eu-west-1a", "eu-west-1b"], wait=True),
                        diff=True))
        # Everything is new except, perhaps, the hub namespace other clusters share.
        assert result["changed"] and [c for c in result["changes"] if not c.endswith(": created")] in (
            [], ["hub Namespace/karmada-cluster: unchanged"])
        cluster = result["cluster"]
        member1 = lab.clusters["member1"]
        assert cluster["spec"] == {
            "syncMode": "Push", "apiEndpoint": member1["server"], "id": member1["kube_system_uid"],
            "secretRef": {"namespace": NS, "name": EAST},
            "impersonatorSecretRef": {"namespace": NS, "name": EAST + "-impersonator"},
            "provider": "lab", "region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]}
        ready = resources.condition(cluster, "Ready")
        assert (ready["status"], ready["reason"]) == ("True", "ClusterReady")
        assert cluster["status"]["kubernetesVersion"] == lab.version  # what the member's /version said

    def test_objects_have_karmadas_shapes(self, lab, hub):
        cluster = resources.get(hub, CLUSTER, EAST)
        for name, keys in ((EAST, {"caBundle", "token"}), (EAST + "-impersonator", {"token"})):
            secret = resources.get(hub, SECRET, name, NS)
            assert set(secret["data"]) == keys and secret["type"] == "Opaque"
            assert secret["metadata"]["labels"] == {"karmada.io/system": "true"}
            assert secret["metadata"]["ownerReferences"] == [{
                "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "name": EAST,
                "uid": cluster["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
        with open(lab.clusters["member1"]["ca_cert"]) as handle:
            assert base64.b64decode(resources.get(hub, SECRET, EAST, NS)["data"]["caBundle"]).decode() == handle.read()
        member = connection(lab, "member1")
        assert resources.get(member, NAMESPACE, NS)["metadata"]["labels"] == labstate.namespace_labels(lab, NS, {"karmada.io/system": "true"})
        for account in ("karmada-cj-east", "karmada-impersonator"):
            assert resources.get(member, SERVICE_ACCOUNT, account, NS)["metadata"]["labels"] == {"karmada.io/system": "true"}
            token_secret = resources.get(member, SECRET, account, NS)
            assert token_secret["type"] == "kubernetes.io/service-account-token"
            assert token_secret["metadata"]["annotations"]["kubernetes.io/service-account.name"] == account
        role = resources.get(member, CLUSTER_ROLE, "karmada-controller-manager:karmada-cj-east")
        assert role["rules"] == karmada.CLUSTER_ROLE_RULES
        binding = resources.get(member, CLUSTER_ROLE_BINDING, "karmada-controller-manager:karmada-cj-east")
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "karmada-cj-east", "namespace": NS}]

    def test_stored_tokens_authenticate_against_the_member(self, lab, hub, tmp_path):
        """A client built only from the hub Secret reaches member1, as the ServiceAccount karmada-cj-east."""
        secret = resources.get(hub, SECRET, EAST, NS)
        ca_file = tmp_path / "member-ca.pem"
        ca_file.write_bytes(base64.b64decode(secret["data"]["caBundle"]))
        endpoint = resources.get(hub, CLUSTER, EAST)["spec"]["apiEndpoint"]
        member = client.get_cluster({"host": endpoint, "api_key": hub_token(hub, EAST), "ca_cert": str(ca_file)}, "via-hub")
        names = [n["metadata"]["name"] for n in resources.list_objects(member, NAMESPACE)]
        assert "kube-system" in names and NS in names
        uid = resources.get(member, NAMESPACE, "kube-system")["metadata"]["uid"]
        assert uid == lab.clusters["member1"]["kube_system_uid"]
        impersonator = client.get_cluster({"host": endpoint, "api_key": hub_token(hub, EAST + "-impersonator"),
                                           "ca_cert": str(ca_file)}, "impersonator")
        with pytest.raises(client.ClusterError, match='system:serviceaccount:karmada-cluster:karmada-impersonator" cannot list'):
            resources.list_objects(impersonator, NAMESPACE)

    def test_same_member_under_a_second_name_is_refused(self, lab, hub, args):
        failed(run(args("cj-dup", member="member1")), "already registered on the hub as Cluster 'cj-east'")
        assert resources.get(hub, CLUSTER, "cj-dup") is None and resources.get(hub, SECRET, "cj-dup", NS) is None
        member = connection(lab, "member1")
        assert resources.get(member, SERVICE_ACCOUNT, "karmada-cj-dup", NS) is None
        assert resources.get(member, CLUSTER_ROLE, "karmada-controller-manager:karmada-cj-dup") is None
        failed(run(args(EAST, member="member2")), "Cluster 'cj-east' on the hub belongs to another cluster (%s, cluster id %s)"
               % (lab.clusters["member1"]["server"], lab.clusters["member1"]["kube_system_uid"]),
               "not to this member (%s, cluster id %s)" % (lab.clusters["member2"]["server"],
                                                           lab.clusters["member2"]["kube_system_uid"]))
        assert resources.get(connection(lab, "member2"), SERVICE_ACCOUNT, "karmada-cj-east", NS) is None

    def test_interrupted_join_is_finished_by_a_rerun(self, lab, hub, args, limited_hub_user):
        """The hub refuses Secrets half way (after the Cluster); the next run with full rights finishes."""
        broken = args(WEST, region="us-east-1", impersonate_user=limited_hub_user)
        refused = failed(run(broken), "cluster 'hub'", "secrets", "403")
        assert resources.get(hub, CLUSTER, WEST) is not None and resources.get(hub, SECRET, WEST, NS) is None
        # what it wrote before the refusal (the member objects, the Cluster) is reported, changed
        written = changed_lines(refused)
        assert refused["changed"] is True and "member Namespace/karmada-cluster: created" in written
        assert "hub Cluster/cj-west: created" in written
        assert refused["msg"].endswith("; written before the failure: " + ", ".join(written))
        result = ok(run(args(WEST, region="us-east-1", wait=True)))
        assert changed_lines(result) == ["hub Secret/karmada-cluster/cj-west: created",
                                         "hub Secret/karmada-cluster/cj-west-impersonator: created",
                                         "hub ConfigMap/kube-system/multicluster-fleet.karmada.cj-west: created"]
        assert resources.condition_is(result["cluster"], "Ready")

    def test_rejoin_changes_nothing(self, args):
        for name, options, check_mode in (
                (EAST, dict(provider="lab", region="eu-west-1", zones=["eu-west-1a", "eu-west-1b"]), True),
                (EAST, dict(provider="lab", region="eu-west-1", zones=["eu-west-1a", "eu-west-1b"]), False),
                (WEST, dict(region="us-east-1"), False)):
            result = ok(run(args(name, **options), check_mode=check_mode, diff=True))
            assert result["changed"] is False and changed_lines(result) == [], result["changes"]
            assert result["diff"]["before"] == result["diff"]["after"]

    def test_changed_region_updates_only_the_cluster(self, hub, args):
        options = dict(provider="lab", zones=["eu-west-1a", "eu-west-1b"])
        planned = ok(run(args(EAST, region="eu-central-1", **options), check_mode=True, diff=True))
        assert changed_lines(planned) == ["hub Cluster/cj-east: updated"]
        assert (planned["diff"]["before"]["spec"]["region"], planned["diff"]["after"]["spec"]["region"]) == (
            "eu-west-1", "eu-central-1")
        assert resources.get(hub, CLUSTER, EAST)["spec"]["region"] == "eu-west-1"
        done = ok(run(args(EAST, region="eu-central-1", **options)))
        assert changed_lines(done) == ["hub Cluster/cj-east: updated"]
        assert resources.get(hub, CLUSTER, EAST)["spec"]["region"] == "eu-central-1"
        removed = ok(run(args(EAST, zones=[])))
        assert changed_lines(removed) == ["hub Cluster/cj-east: updated"]
        spec = resources.get(hub, CLUSTER, EAST)["spec"]
        assert "zones" not in spec and (spec["region"], spec["provider"]) == ("eu-central-1", "lab")
        assert not ok(run(args(EAST, zones=[])))["changed"]

    def test_unreachable_endpoint_is_never_ready(self, lab, hub, args):
        """The simulated controller really calls the endpoint: a closed port gives ClusterNotReachable."""
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            endpoint = "https://127.0.0.1:%d" % sock.getsockname()[1]
        moved = ok(run(args(EAST, api_endpoint=endpoint)))
        assert changed_lines(moved) == ["hub Cluster/cj-east: updated"]
        # The Ready=True from before the move counts until the controller has looked again.
        resources.wait_for_condition(hub, CLUSTER, EAST, wait=NOT_READY)
        timed_out = failed(run(args(EAST, api_endpoint=endpoint, wait=True, wait_timeout=2)),
                           "Cluster/cj-east on cluster 'hub' (%s) to have Ready=True" % lab.clusters["hub"]["server"],
                           "ClusterNotReachable: cluster is not reachable", "reaches %s with the stored token" % endpoint)
        # the failure says what the run wrote before it waited: nothing, the Cluster already had this endpoint
        assert timed_out["changed"] is False and "hub Cluster/cj-east: unchanged" in timed_out["changes"], timed_out
        # wait_condition as kubernetes.core has it: this state is what it waits for
        unreachable = ok(run(args(EAST, api_endpoint=endpoint, wait=True, wait_timeout=20,
                                  wait_condition={"type": "Ready", "status": "False", "reason": "ClusterNotReachable"})))
        assert not unreachable["changed"] and resources.condition(unreachable["cluster"], "Ready")["status"] == "False"
        back = ok(run(args(EAST, wait=True)))
        assert changed_lines(back) == ["hub Cluster/cj-east: updated"]
        assert back["cluster"]["spec"]["apiEndpoint"] == lab.clusters["member1"]["server"]
        assert resources.condition_is(back["cluster"], "Ready")

    def test_rotated_member_token_is_propagated(self, lab, hub, args):
        """A re-created member ServiceAccount voids the stored token: not ready until a re-run stores the new one."""
        member = connection(lab, "member1")
        old = hub_token(hub, EAST)
        resources.delete(member, SERVICE_ACCOUNT, "karmada-cj-east", NS, wait=resources.Wait())
        resources.wait_for_condition(hub, CLUSTER, EAST, wait=NOT_READY)
        assert resources.condition(resources.get(hub, CLUSTER, EAST), "Ready")["reason"] == "ClusterNotReachable"
        result = ok(run(args(EAST, wait=True)))
        assert changed_lines(result) == ["member ServiceAccount/karmada-cluster/karmada-cj-east: created",
                                         "member Secret/karmada-cluster/karmada-cj-east: created",
                                         "hub Secret/karmada-cluster/cj-east: updated"]
        assert hub_token(hub, EAST) != old and resources.condition_is(result["cluster"], "Ready")

    def test_unjoin_in_check_mode_deletes_nothing(self, lab, hub, args):
        result = ok(run(args(EAST, state="absent"), check_mode=True, diff=True))
        assert result["changed"] and "hub Cluster/cj-east: deleted" in result["changes"]
        assert "member Namespace/karmada-cluster: deleted" in result["changes"]
        assert result["diff"]["before"]["metadata"]["name"] == EAST and result["diff"]["after"] == {}
        assert resources.get(hub, CLUSTER, EAST) is not None
        assert resources.get(connection(lab, "member1"), NAMESPACE, NS) is not None

    def test_unjoin_removes_cluster_secrets_and_member_objects(self, lab, hub, args):
        result = ok(run(args(EAST, state="absent")))
        assert settled(result["changes"]) == [
            "hub Cluster/cj-east: deleted",
            "hub Secret/karmada-cluster/cj-east: deleted",
            "hub Secret/karmada-cluster/cj-east-impersonator: deleted",
            "hub ConfigMap/kube-system/multicluster-fleet.karmada.cj-east: deleted",
            "member ClusterRoleBinding/karmada-controller-manager:karmada-cj-east: deleted",
            "member ClusterRole/karmada-controller-manager:karmada-cj-east: deleted",
            "member ServiceAccount/karmada-cluster/karmada-cj-east: deleted",
            "member Namespace/karmada-cluster: deleted"]
        member = connection(lab, "member1")
        assert resources.get(hub, CLUSTER, EAST) is None and resources.get(hub, SECRET, EAST, NS) is None
        assert resources.get(member, NAMESPACE, NS) is None
        assert resources.get(member, CLUSTER_ROLE, "karmada-controller-manager:karmada-cj-east") is None
        assert resources.get(connection(lab, "member2"), NAMESPACE, NS) is not None  # the other member is untouched

    def test_unjoin_again_changes_nothing(self, args):
        for check_mode in (True, False):
            result = ok(run(args(EAST, state="absent"), check_mode=check_mode))
            assert result["changed"] is False and changed_lines(result) == []

    def test_stuck_cluster_is_released_with_force(self, lab, hub, args):
        """Karmada's finalizers on the Cluster and on a Work stay when its controllers cannot finish."""
        resources.ensure(hub, NAMESPACE, karmada.system_namespace(karmada.execution_namespace(WEST)))
        resources.ensure(hub, WORK, {"metadata": {"name": "cj-work", "namespace": karmada.execution_namespace(WEST),
                                                  "finalizers": [karmada.EXECUTION_FINALIZER]},
                                     "spec": {"workload": {"manifests": []}}})
        resources.ensure(hub, CLUSTER, {"metadata": {"name": WEST, "finalizers": [karmada.CLUSTER_FINALIZER]}})
        stuck = failed(run(args(WEST, state="absent", wait_timeout=2)),
                       "Cluster/cj-west to be deleted on cluster 'hub' (", "finalizers: karmada.io/cluster-controller",
                       "force=true")
        assert resources.get(hub, CLUSTER, WEST)["metadata"]["deletionTimestamp"] and stuck["rc"] == 1
        # the Cluster is being deleted all the same: the failed run says so
        assert stuck["changed"] is True and stuck["changes"] == ["hub Cluster/cj-west: deleted"]
        assert stuck["msg"].endswith("; deleted before the failure: hub Cluster/cj-west: deleted")
        assert resources.get(connection(lab, "member2"), SERVICE_ACCOUNT, "karmada-cj-west", NS) is not None

        # As when the member is gone for good: force, and no member credentials.
        hub_only = {k: v for k, v in args(WEST, state="absent", wait_timeout=2, force=True).items() if k != "member"}
        result = ok(run(hub_only))
        assert "stay on the member cluster" in json.dumps(result["warnings"])
        assert settled(result["changes"]) == [
            "hub Cluster/cj-west: deleted",
            "hub Work/karmada-es-cj-west/cj-work: updated",
            "hub Namespace/karmada-es-cj-west: deleted",
            "hub Cluster/cj-west: updated",
            "hub Secret/karmada-cluster/cj-west: deleted",
            "hub Secret/karmada-cluster/cj-west-impersonator: deleted",
            "hub ConfigMap/kube-system/multicluster-fleet.karmada.cj-west: deleted"]
        assert resources.get(hub, CLUSTER, WEST) is None
        work = resources.get(hub, WORK, "cj-work", karmada.execution_namespace(WEST))
        assert work is None or not work["metadata"].get("finalizers")  # the namespace controller removes it
        assert resources.get(connection(lab, "member2"), SERVICE_ACCOUNT, "karmada-cj-west", NS) is not None
        # The member, reachable again, is cleaned up by a later unjoin.
        member_cleanup = ok(run(args(WEST, state="absent")))
        assert changed_lines(member_cleanup) == [
            "member ClusterRoleBinding/karmada-controller-manager:karmada-cj-west: deleted",
            "member ClusterRole/karmada-controller-manager:karmada-cj-west: deleted",
            "member ServiceAccount/karmada-cluster/karmada-cj-west: deleted",
            "member Namespace/karmada-cluster: deleted"]
        assert not ok(run(args(WEST, state="absent", force=True)))["changed"]

    def test_pull_clusters_are_left_to_cluster_register(self, lab, hub, args):
        resources.ensure(hub, CLUSTER, {"metadata": {"name": "cj-pull"}, "spec": {"syncMode": "Pull", "id": "pull-id"}})
        failed(run(args("cj-pull", member="member1", state="absent")), "Pull mode", "cluster_register state=absent")
        # another cluster's name (the identity rule comes first), then this cluster's own Pull registration
        taken = "Cluster 'cj-pull' on the hub belongs to another cluster (endpoint unknown, cluster id pull-id)"
        failed(run(args("cj-pull", member="member1")), taken)
        resources.ensure(hub, CLUSTER, {"metadata": {"name": "cj-pull"},
                                        "spec": {"id": lab.clusters["member1"]["kube_system_uid"]}})
        failed(run(args("cj-pull", member="member1")), "Pull mode", "cluster_register")
        assert resources.get(hub, CLUSTER, "cj-pull") is not None

    def test_no_result_contains_a_member_token(self):
        assert SEEN_TOKENS and RESULTS
        text = json.dumps(RESULTS)
        assert not [t for t in SEEN_TOKENS if t in text]


@pytest.fixture(scope="class")
def joins(lab, hub):
    """TestPerCluster's task: per_cluster of EAST (member1, with a region) and WEST (member2) and any ``extra`` items,
    with ``options``; both unjoined first."""
    resources.delete(hub, CLUSTER, "cj-pull", wait=resources.Wait())  # member1's id, left by TestPushLifecycle
    for name, member in MEMBERS.items():
        join.unjoin(hub, connection(lab, member), dict(cluster_name=name, cluster_namespace=NS, wait_timeout=60))
    items = [{"name": EAST, "member": auth(lab, "member1"), "region": "eu-west-1"},
             {"name": WEST, "member": auth(lab, "member2")}]
    return lambda *extra, **options: dict(auth(lab, lab.hub), per_cluster=items + list(extra), wait_sleep=1, **options)


class TestPerCluster:
    """Both members in one task (per_cluster), with a third that cannot be reached; run after TestPushLifecycle."""

    def test_check_mode_plans_both_and_writes_nothing(self, lab, hub, joins):
        result = ok(run(joins(wait=True), check_mode=True, diff=True))
        assert result["changed"] and sorted(result["clusters"]) == [EAST, WEST]
        assert "hub Cluster/cj-west: created" in result["clusters"][WEST]["changes"]
        assert result["clusters"][EAST]["cluster_id"] == lab.clusters["member1"]["kube_system_uid"]
        assert [d["after"]["spec"].get("region") for d in result["diff"]] == ["eu-west-1", None]
        assert resources.get(hub, CLUSTER, EAST) is None and resources.get(hub, CLUSTER, WEST) is None

    def test_joins_both_while_an_unreachable_member_fails_alone(self, lab, hub, joins):
        bad = {"name": "cj-bad", "member": dict(auth(lab, "member1"), host="https://127.0.0.1:1")}
        result = failed(run(joins(bad, wait=True)), "join failed on 1 of 3 clusters: cj-bad: cluster 'cj-bad' (https://127.0.0.1:1) is unreachable")
        assert result["changed"] and result["clusters_failed"] == ["cj-bad"] and "last_seen" not in result
        assert result["cluster_errors"]["cj-bad"].startswith("cluster 'cj-bad' (https://127.0.0.1:1) is unreachable")
        assert result["clusters"]["cj-bad"] == {"changed": False, "changes": [], "cluster_id": None}
        for name, member in MEMBERS.items():
            cluster = resources.get(hub, CLUSTER, name)
            assert cluster["spec"]["id"] == lab.clusters[member]["kube_system_uid"]
            assert resources.condition(cluster, "Ready")["status"] == "True"  # waited for, in the same task
            hub_token(hub, name)
        assert resources.get(hub, CLUSTER, EAST)["spec"]["region"] == "eu-west-1"
        assert "region" not in resources.get(hub, CLUSTER, WEST)["spec"] and resources.get(hub, CLUSTER, "cj-bad") is None

    def test_a_rerun_changes_nothing(self, joins):
        for check_mode in (True, False):
            result = ok(run(joins(wait=True), check_mode=check_mode))
            lines = [c for one in result["clusters"].values() for c in one["changes"]]
            assert result["changed"] is False and lines and all(c.endswith(": unchanged") for c in lines)

    def test_no_result_contains_a_member_token(self):
        assert SEEN_TOKENS and not [t for t in SEEN_TOKENS if t in json.dumps(RESULTS)]

    def test_per_cluster_is_for_joins_only(self, joins):
        failed(run(joins(state="absent")), "per_cluster joins clusters; unjoin each with cluster_name and state=absent")
        result = run(dict(joins(), cluster_name=EAST))
        assert result["failed"] and "parameters are mutually exclusive: per_cluster|cluster_name" in result["msg"]


class TestBadInput:
    """Refused before any request: nothing is written anywhere."""

    @pytest.mark.parametrize("options,fragment", [  # every rule is unit-tested; these prove the module path
        ({"cluster_name": "m" * 49}, "of 1 to 48 characters"),
        ({"zones": ["eu-1a", "eu-1a"]}, "zones lists eu-1a more than once"),
        ({"api_endpoint": "127.0.0.1:6443"}, "invalid api_endpoint '127.0.0.1:6443'"),
        ({"wait_timeout": -1}, "wait_timeout must be at least 1 second, got -1"),
        ({"wait_sleep": 0}, "wait_sleep must be at least 1 second, got 0"),
    ])
    def test_invalid_options(self, hub, args, options, fragment):
        options = dict(options)
        name = options.pop("cluster_name", "cj-bad")
        failed(run(args(name, member="member1", **options)), fragment)
        assert resources.get(hub, CLUSTER, name) is None

    def test_join_needs_member_credentials(self, lab):
        result = run(dict(auth(lab, lab.hub), cluster_name="cj-bad"))
        assert result["failed"] and "state is present but any of the following are missing: member, per_cluster" in result["msg"]

    def test_unreachable_member_names_the_cluster(self, lab, args):
        member = dict(auth(lab, "member1"), host="https://127.0.0.1:1")
        result = run(dict(args("cj-bad", member="member1"), member=member))
        failed(result, "cluster 'cj-bad' (https://127.0.0.1:1) is unreachable")


def test_simulation_reports_missing_credentials(lab, hub):
    """No Secret behind secretRef: StatusCollectionFailed, as Karmada's controller reports it."""
    simulation = sim_karmada.ClusterStatusSimulation(fleet_lab.ApiClient.for_cluster(lab.clusters[lab.hub]))
    cluster = {"metadata": {"name": "cj-nosecret"},
               "spec": {"syncMode": "Push", "apiEndpoint": lab.clusters["member1"]["server"],
                        "secretRef": {"namespace": NS, "name": "cj-nosecret"}}}
    (status, reason, message), version = simulation.observe(cluster)
    assert (status, reason, version) == ("False", "StatusCollectionFailed", None)
    assert message == 'failed to create a ClusterClient: secrets "cj-nosecret" not found'
