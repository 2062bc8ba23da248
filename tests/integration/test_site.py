"""The playbooks end to end on the lab: site.yml registers both members for each engine, a member
with a broken kubeconfig fails alone and is named in the summary, a second run changes nothing,
deploy_work.yml delivers a workload, and detach.yml returns the lab to its starting state, object by
object. Check mode is run at three points of each engine's sequence, and must write nothing: site.yml
on the starting state (it would install), site.yml --diff on the registered fleet (nothing to change)
and detach.yml on the registered fleet (it would remove). The lab's simulations play the operators,
agents and hub controllers (tests/lab/simulate.py).
"""

import re

import pytest
import yaml

from labstate import admin_token, changes, snapshot
from playbooks import check_play, play, write_inventory
from runner import failures, run_module, run_while_paused, summary, task_result

import sim_karmada
import sim_klusterlet

# The tasks that register a member and wait for the hub's report, retried while their waits time out.
PUSH_JOIN = "Join the member in Push mode and wait until the hub reports it ready"
OCM_JOIN = "Join the hub, be accepted there (agent_install_ocm_accept) and wait until ready, for %s"
LABEL = "Label and annotate the members on the hub"
TAINT = "Taint the members as the inventory says"
GROUP = "Put the members in their cluster sets"
MANAGED_LABELS = "multicluster.fleet/managed-labels"


def ran(task, host, stdout):
    """Whether ``task`` ran for ``host`` (ok or changed; not skipped, not failed) in a playbook's output."""
    return re.search(r"TASK \[%s\][^\n]*\n(?:(?!TASK \[)[^\n]*\n)*?(ok|changed): \[%s\]" % (re.escape(task), host), stdout)


def detach_with_member1_held(lab, inventory, path, task):
    """detach.yml for member1 with fleet_wait_timeout=3 while its cluster object on the hub (``path``) has a finalizer
    nobody removes: the member fails in ``task`` after 3 s, rescued; the hub is left set up. Return the failure the
    summary gives member1. (member1 alone: 3 s is short for some deletions that do finish.)"""
    hub, hold = lab.api(lab.hub), "example.com/hold"
    hub.patch(path, {"metadata": {"finalizers": (hub.get(path)["metadata"].get("finalizers") or []) + [hold]}})
    try:
        done, recap = play("detach.yml", inventory, limit="hub-cluster,member1", fleet_wait_timeout=3)
    finally:  # the hub's controllers may have removed their own finalizers meanwhile: drop only the hold
        hub.patch(path, {"metadata": {"finalizers": [f for f in hub.get(path)["metadata"]["finalizers"] if f != hold]}})
    assert done.returncode != 0 and recap["member1"]["rescued"] == 1 and set(recap) == {"hub-cluster", "member1"}, recap
    assert task_result(done.stdout, task, "member1") == "fatal", done.stdout[-4000:]
    assert summary(done.stdout)["member1"]["RESULT"].startswith("failed: timed out after 3s")
    assert task_result(done.stdout, "Uninstall from the hub what hub_init installed", "hub-cluster") == "skipping"
    return failures(done.stdout)["member1"]


def token_inventory(lab, directory, engine):
    """The lab's inventory with every cluster - hub and members - given by host, api_key and ca_cert only."""
    with open(lab.inventory) as handle:
        inventory = yaml.safe_load(handle)
    inventory["all"]["vars"]["fleet_engine"] = engine
    for group in ("hub", "members"):
        for host, variables in inventory["all"]["children"][group]["hosts"].items():
            info = lab.clusters[variables["cluster_name"]]
            for option in ("kubeconfig", "context"):
                variables.pop(option)
            variables.update(host=info["server"], ca_cert=info["ca_cert"], api_key=admin_token(lab.api(variables["cluster_name"])))
    path = directory / ("%s-tokens.yml" % engine)
    path.write_text(yaml.safe_dump(inventory))
    return str(path)


def labels_follow_the_inventory(lab, directory, engine, path, **extra_vars):
    """site.yml gives each member the labels and annotations of the inventory on its hub object (``path`` % member;
    member1 and member2: push and pull for Karmada, both pull for OCM), changes and removes them with the inventory and
    keeps the label someone else set, and those a labelling job (another owner of cluster_label) set (issue 46); check
    mode with --diff shows the change and writes nothing; a re-run changes nothing."""
    hub = lab.api(lab.hub)

    def metadata(member):  # without the cluster id the collection records on an OCM ManagedCluster
        meta = hub.get(path % member)["metadata"]
        annotations = meta.get("annotations") or {}
        return meta.get("labels") or {}, dict((k, v) for k, v in annotations.items() if k != "multicluster.fleet/cluster-id")

    def run(member_vars, check=False):
        inventory = write_inventory(lab, directory, engine, member_vars=member_vars)
        if check:
            return check_play(lab, "site.yml", inventory, diff=True, **extra_vars)
        done, recap = play("site.yml", inventory, **extra_vars)
        assert done.returncode == 0, done.stdout[-4000:]
        return done, recap

    hub.patch(path % "member1", {"metadata": {"labels": {"team": "blue", "tier": "api"}}})
    done, recap = run({"member1": {"labels": {"env": "prod", "tier": "web"}, "annotations": {"example.com/owner": "platform"}},
                       "member2": {"labels": {"env": "prod"}}})
    # one task labels every member, on the hub's host: its change is the hub's
    assert (recap["member1"]["changed"], recap["member2"]["changed"], recap["hub-cluster"]["changed"]) == (0, 0, 1), recap
    assert task_result(done.stdout, LABEL, "hub-cluster") == "changed"
    assert metadata("member1") == ({"team": "blue", "env": "prod", "tier": "web"}, {
        "example.com/owner": "platform", MANAGED_LABELS: "env=inventory,tier=inventory",
        "multicluster.fleet/managed-annotations": "example.com/owner=inventory"})
    assert metadata("member2") == ({"env": "prod"}, {MANAGED_LABELS: "env=inventory"})
    # tier was someone else's, with another value: taken over, and the run says so
    assert ("cluster 'member1': label tier was set to 'api' by someone outside this collection; owner inventory took it over"
            in " ".join((done.stdout + done.stderr).split())), done.stderr[-4000:]

    # docs/labels.md's "label a batch of clusters": a job of its own labels member1; site.yml leaves its label alone
    hub_auth = {"kubeconfig": lab.clusters[lab.hub]["kubeconfig"], "context": lab.hub}
    job = run_module("cluster_label", dict(hub_auth, engine=engine, clusters=["member1"], labels={"rollout": "wave-1"}))
    assert job["rc"] == 0 and job["changed"] is True, job

    changed = {"member1": {"labels": {"env": "stage"}}, "member2": {"labels": {"env": "prod"}}}
    done, recap = run(changed, check=True)
    assert (recap["member1"]["changed"], recap["member2"]["changed"], recap["hub-cluster"]["changed"]) == (0, 0, 1), recap
    assert re.findall(r'^\+\+\+ after: (\S+)$', done.stdout, re.MULTILINE) == [
        {"karmada": "Cluster", "ocm": "ManagedCluster"}[engine] + "/member1"], done.stdout[-4000:]  # member2 unchanged
    assert re.search(r'^-\s+"tier": "web",?$', done.stdout, re.MULTILINE), done.stdout[-4000:]
    assert re.search(r'^\+\s+"env": "stage",?$', done.stdout, re.MULTILINE), done.stdout[-4000:]
    done, recap = run(changed)
    assert recap["hub-cluster"]["changed"] == 1, recap
    assert metadata("member1") == ({"team": "blue", "env": "stage", "rollout": "wave-1"},
                                   {MANAGED_LABELS: "env=inventory,rollout=cluster_label"})
    _done, recap = run(changed)
    assert all(r["changed"] == 0 for r in recap.values()), recap

    _done, recap = run({})
    assert recap["hub-cluster"]["changed"] == 1, recap
    assert metadata("member1") == ({"team": "blue", "rollout": "wave-1"}, {MANAGED_LABELS: "rollout=cluster_label"})
    assert metadata("member2") == ({}, {})
    job = run_module("cluster_label", dict(hub_auth, engine=engine, clusters=["member1"], labels={}, purge=True))
    assert job["rc"] == 0 and metadata("member1") == ({"team": "blue"}, {}), job
    hub.patch(path % "member1", {"metadata": {"labels": {"team": None}}})


def limited_run(inventory, **extra_vars):
    """site.yml with --limit: the hub and member2, then member2 alone (the join token read from the hub)."""
    done, recap = play("site.yml", inventory, limit="hub-cluster,member2", **extra_vars)
    assert done.returncode == 0, done.stdout[-4000:]
    assert set(recap) == {"hub-cluster", "member2"} and all(r["changed"] == 0 for r in recap.values()), recap
    rows = summary(done.stdout)
    assert rows["member1"]["RESULT"] == "-" and rows["member2"]["RESULT"] == "registered", rows
    done, recap = play("site.yml", inventory, limit="member2", **extra_vars)
    assert done.returncode == 0, done.stdout[-4000:]
    assert set(recap) == {"member2"} and recap["member2"]["changed"] == 0, recap
    assert summary(done.stdout)["member2"]["RESULT"] == "registered"


def inventory_taints(lab, inventory, engine, effect, **extra_vars):
    """member1's inventory variable taints: previewed by --check --diff (nothing written), applied by site.yml with
    taints others set kept, a second run changes nothing; then removed again with cluster_taint."""
    with open(inventory) as handle:
        data = yaml.safe_load(handle)
    taint = {"key": "example.com/maintenance", "value": "window-1", "effect": effect}
    data["all"]["children"]["members"]["hosts"]["member1"]["taints"] = [taint]
    with open(inventory, "w") as handle:
        yaml.safe_dump(data, handle)
    path = {"karmada": "/apis/cluster.karmada.io/v1alpha1/clusters/member1",
            "ocm": "/apis/cluster.open-cluster-management.io/v1/managedclusters/member1"}[engine]
    hub = lab.api(lab.hub)
    other = {"key": "example.com/team", "value": "blue", "effect": effect, "timeAdded": "2026-11-22T03:25:40Z"}
    hub.patch(path, {"spec": {"taints": [other]}})
    done, recap = check_play(lab, "site.yml", inventory, diff=True, **extra_vars)
    assert recap["hub-cluster"]["changed"] == 1 and recap["member1"]["changed"] == recap["member2"]["changed"] == 0, recap
    assert "example.com/maintenance" in done.stdout[done.stdout.index("TASK [%s]" % TAINT):]
    done, recap = play("site.yml", inventory, **extra_vars)
    assert done.returncode == 0 and recap["hub-cluster"]["changed"] == 1 and recap["member1"]["changed"] == 0, recap
    assert task_result(done.stdout, TAINT, "hub-cluster") == "changed"
    taints = hub.get(path)["spec"]["taints"]
    assert taints[0] == other and dict((k, taints[1][k]) for k in taint) == taint and len(taints) == 2
    again, recap = play("site.yml", inventory, **extra_vars)
    assert again.returncode == 0 and all(r["changed"] == 0 for r in recap.values()), recap
    hub.patch(path, {"spec": {"taints": None}})


@pytest.fixture(scope="module")
def starting_state(lab, simulations):
    """The lab before the playbooks ran (and, as each detach test checks, after), with the admin
    ServiceAccounts the token inventories use on every cluster (made first, removed last)."""
    for name in lab.clusters:
        admin_token(lab.api(name))
    yield snapshot(lab)
    for name in lab.clusters:
        lab.api(name).delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/fleet-test-admin")
        lab.api(name).delete("/api/v1/namespaces/kube-system/serviceaccounts/fleet-test-admin")


def row(stdout, name):
    """RESULT and the kubectl columns of one member in the last summary."""
    return summary(stdout)[name]


@pytest.fixture(autouse=True)
def deprecation_warnings(monkeypatch):
    """Every playbook run of these tests shows deprecation warnings (ansible-core's default, made explicit against an
    environment that turns them off)."""
    monkeypatch.setenv("ANSIBLE_DEPRECATION_WARNINGS", "true")


def assert_no_warnings(output):
    """A run of the collection's own playbooks warns about nothing: no [WARNING] or [DEPRECATION WARNING] line in
    its output (stdout and stderr), and no Python warning (``...Warning: ...``, such as a CryptographyDeprecationWarning
    that ansible-core's own imports raise with some cryptography releases)."""
    warnings = [line for line in output.splitlines()
                if re.match(r"\[(DEPRECATION )?WARNING\]", line) or re.search(r"\b\w*Warning: ", line)]
    assert warnings == [], "\n".join(warnings)


@pytest.mark.parametrize("variables, message", [
    ({"fleet_wait_step": 0}, "fleet_wait_step must be a whole number of seconds, at least 1, not 0"),
    ({"fleet_wait_timeout": -1}, "fleet_wait_timeout must be a whole number of seconds, at least 1, not -1"),
    ({"fleet_hub_wait_timeout": "soon"}, "fleet_hub_wait_timeout must be a whole number of seconds, at least 1, not soon"),
    ({"fleet_engine": "rancher"}, "fleet_engine must be karmada or ocm, not rancher"),
])
def test_bad_playbook_variables_are_refused_by_their_own_names(lab, simulations, starting_state, tmp_path, variables,
                                                               message):
    """Before anything is written, the run says which of its variables is wrong - not an option it passes it to. The hub
    play's first task refuses it (the member plays check the same, for a run without the hub host), and the run ends."""
    done, recap = play("site.yml", write_inventory(lab, tmp_path, "karmada"), **variables)
    assert done.returncode != 0 and recap["hub-cluster"]["failed"] == 1, done.stdout[-4000:]
    assert task_result(done.stdout, "Check the hub and the playbook's variables", "hub-cluster") == "fatal"
    assert '"msg": "%s"' % message in done.stdout, done.stdout[-4000:]
    assert snapshot(lab) == starting_state


class TestKarmada:
    # Without Karmada's CSR auto-approval (the molecule scenario covers it), so that site.yml approves the pull
    # member's CSR with csr_accept while the member waits for its certificate.
    def test_check_mode_on_the_starting_state_writes_nothing(self, lab, simulations, starting_state, tmp_path_factory):
        assert changes(starting_state, snapshot(lab)) == {}
        # member2's taints: their task runs for a member the hub does not have yet, which it skips (unregistered: skip).
        inventory = write_inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada", member_vars={
            "member2": {"taints": [{"key": "example.com/maintenance", "value": "planned", "effect": "NoSchedule"}]}})
        done, recap = check_play(lab, "site.yml", inventory, hub_init_csr_auto_approval=False)
        # It would create the hub's namespace, RBAC and join token, join member1 and register member2 ...
        assert all(r["changed"] > 0 for r in recap.values()), recap
        assert ran(TAINT, "hub-cluster", done.stdout), done.stdout[-4000:]
        # ... but cannot preview member2's registration before the hub has a join token, and says so (as a change).
        assert re.search(r"changed: \[member2\] => \{\s+\"msg\": \"check mode: [^\"]*no join token", done.stdout), done.stdout[-4000:]
        assert changes(starting_state, snapshot(lab)) == {}

    def test_site_registers_a_fleet_given_by_host_and_token_only(self, lab, simulations, starting_state, tmp_path_factory):
        """Hub and members given by host, api_key and ca_cert (ServiceAccount tokens), no kubeconfig.

        Karmada's cluster status controller is down until member1's wait for Ready has timed out and is being
        retried: the join is still reported as the change it was."""
        directory = tmp_path_factory.mktemp("karmada")
        inventory = token_inventory(lab, directory, "karmada")
        controller = next(s for s in simulations if isinstance(s, sim_karmada.ClusterStatusSimulation))
        returncode, stdout, recap = run_while_paused(
            controller, r"^FAILED - RETRYING: \[member1\]: " + PUSH_JOIN, "site.yml", inventory,
            directory / "site.log", hub_init_csr_auto_approval=False, fleet_wait_step=2)
        assert returncode == 0, stdout[-4000:]
        assert_no_warnings(stdout)
        assert set(recap) == {"hub-cluster", "member1", "member2"} and all(r["changed"] > 0 for r in recap.values()), recap
        assert task_result(stdout, PUSH_JOIN, "member1") == "changed", stdout[-4000:]
        rows = summary(stdout)
        assert (rows["member1"]["VERSION"], rows["member1"]["MODE"], rows["member1"]["READY"], rows["member1"]["RESULT"]) == (
            lab.version, "Push", "True", "registered")
        assert (rows["member2"]["MODE"], rows["member2"]["READY"], rows["member2"]["RESULT"]) == ("Pull", "True", "registered")
        hub = lab.api(lab.hub)
        for member in ("member1", "member2"):
            cluster = hub.get("/apis/cluster.karmada.io/v1alpha1/clusters/" + member)
            assert cluster["spec"]["id"] == lab.clusters[member]["kube_system_uid"]
            assert cluster["spec"]["apiEndpoint"] == lab.clusters[member]["server"]
        approvals = dict((c["metadata"]["name"], [s.get("reason") for s in c.get("status", {}).get("conditions", [])])
                         for c in hub.get("/apis/certificates.k8s.io/v1/certificatesigningrequests")["items"]
                         if c["metadata"]["name"].startswith("member2-"))
        assert ["MulticlusterFleetApproved"] in approvals.values(), approvals
        assert not hub.exists("/apis/rbac.authorization.k8s.io/v1/clusterroles/system:karmada:certificatesigningrequest:autoapprover")
        again, recap = play("site.yml", inventory, hub_init_csr_auto_approval=False)
        assert again.returncode == 0 and all(r["changed"] == 0 for r in recap.values()), recap
        assert_no_warnings(again.stdout + again.stderr)

    def test_check_mode_on_the_registered_fleet_changes_nothing(self, lab, simulations, tmp_path_factory):
        inventory = write_inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada")
        done, recap = check_play(lab, "site.yml", inventory, diff=True, hub_init_csr_auto_approval=False)
        assert all(r["changed"] == 0 for r in recap.values()), recap
        assert "+++ after" not in done.stdout, done.stdout[-4000:]
        rows = summary(done.stdout)
        assert rows["member1"]["RESULT"] == rows["member2"]["RESULT"] == "registered"

    def test_labels_and_annotations_follow_the_inventory(self, lab, simulations, tmp_path_factory):
        labels_follow_the_inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada",
                                    "/apis/cluster.karmada.io/v1alpha1/clusters/%s", hub_init_csr_auto_approval=False)

    def test_a_member_whose_labels_are_refused_fails_alone(self, lab, simulations, tmp_path_factory):
        """The hub step labels every member in one task: member1's label value is refused, so member1 fails - named in
        the summary with the step and why - and member2 is labelled; nothing is written to member1."""
        path = "/apis/cluster.karmada.io/v1alpha1/clusters/%s"
        hub = lab.api(lab.hub)
        inventory = write_inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada", member_vars={
            "member1": {"labels": {"env": "prod west"}}, "member2": {"labels": {"env": "prod"}}})
        done, recap = play("site.yml", inventory, hub_init_csr_auto_approval=False)
        assert done.returncode != 0 and recap["member1"]["failed"] == 1 and recap["member2"]["failed"] == 0, recap
        assert task_result(done.stdout, LABEL, "hub-cluster") == "fatal", done.stdout[-4000:]
        assert re.search(r"^\.\.\.ignoring$", done.stdout, re.MULTILINE), done.stdout[-4000:]
        assert task_result(done.stdout, "Record why a member's step failed", "hub-cluster -> member1") == "ok"
        assert row(done.stdout, "member1")["RESULT"].startswith("failed"), summary(done.stdout)
        assert row(done.stdout, "member2")["RESULT"] == "registered"
        assert failures(done.stdout)["member1"].startswith("member1: %s: cluster 'hub' (" % LABEL), done.stdout[-3000:]
        assert "labelling failed on cluster 'member1': invalid labels: labels['env'] = 'prod west'" in failures(done.stdout)["member1"]
        assert (hub.get(path % "member1")["metadata"].get("labels") or {}).get("env") is None
        assert hub.get(path % "member2")["metadata"]["labels"]["env"] == "prod"
        done, recap = play("site.yml", write_inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada"),
                           hub_init_csr_auto_approval=False)
        assert done.returncode == 0 and "env" not in (hub.get(path % "member2")["metadata"].get("labels") or {}), recap

    def test_limit_covers_only_the_members_in_the_run(self, lab, simulations, tmp_path_factory):
        limited_run(write_inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada"), hub_init_csr_auto_approval=False)

    def test_inventory_taints_are_applied(self, lab, simulations, tmp_path_factory):
        inventory_taints(lab, write_inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada"), "karmada", "NoSchedule",
                         hub_init_csr_auto_approval=False)

    def test_second_run_changes_nothing_and_a_broken_member_fails_alone(self, lab, simulations, tmp_path_factory):
        directory = tmp_path_factory.mktemp("karmada")
        inventory = write_inventory(lab, directory, "karmada", broken=True)
        report = directory / "fleet.md"
        done, recap = play("site.yml", inventory, hub_init_csr_auto_approval=False, fleet_report_path=str(report))
        assert done.returncode != 0
        assert all(r["changed"] == 0 for r in recap.values()), recap
        assert recap["broken"]["rescued"] == 1 and recap["broken"]["failed"] == 1
        assert recap["member1"]["failed"] == recap["member2"]["failed"] == recap["hub-cluster"]["failed"] == 0
        missing = "kubeconfig file %s does not exist" % (directory / "missing.kubeconfig")
        rows = summary(done.stdout)
        assert rows["broken"]["RESULT"].startswith("failed (member_unreachable): cluster 'broken': kubeconfig file ")
        assert rows["member1"]["RESULT"] == rows["member2"]["RESULT"] == "registered"
        assert failures(done.stdout) == {"broken": "broken: %s: cluster 'broken': %s" % (PUSH_JOIN, missing)}
        text = report.read_text()
        assert text.startswith("# Fleet registration\n\n| NAME | VERSION | MODE | READY | AGE | AGENT | RESULT |\n")
        # AGENT: the version of member2's karmada-agent (the default image), none for the Push member1
        version = re.escape(lab.version)
        assert re.search(r"^\| member2 \| %s \| Pull \| True \| \S+ \| v1\.18\.2 \| registered \|$" % version, text, re.MULTILINE), text
        assert re.search(r"^\| member1 \| %s \| Push \| True \| \S+ \| - \| registered \|$" % version, text, re.MULTILINE), text
        assert "- **broken** (member_unreachable): %s: cluster 'broken': %s\n" % (PUSH_JOIN, missing) in text

    def test_an_agent_that_never_comes_up_is_retried_visibly_and_named(self, lab, simulations, tmp_path_factory):
        """member2's agent image cannot be pulled: the wait prints a retry line per step, the failed registration says
        what it changed, the summary says why."""
        inventory = write_inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada")
        done, recap = play("site.yml", inventory, hub_init_csr_auto_approval=False, agent_install_wait_timeout=15,
                           agent_install_wait_step=5, agent_install_karmada_image="unreachable.invalid/karmada/karmada-agent")
        assert done.returncode != 0 and recap["member2"]["failed"] == 1 and recap["member1"]["failed"] == 0
        assert recap["member1"]["changed"] == 0, recap
        task = "Register with the hub, deploy the karmada-agent and wait until the hub reports ready member2"
        assert task_result(done.stdout, "multicluster.fleet.agent_install : " + task, "member2") == "fatal", done.stdout[-4000:]
        # Three waits: 15 s in steps of 5 s, the last attempt's result still carrying the agent's update of the first.
        assert len(re.findall(r"^FAILED - RETRYING: \[member2\]: (multicluster.fleet.agent_install : )?%s \(\d+ retries left\)"
                              % re.escape(task), done.stdout, re.MULTILINE)) == 2, done.stdout[-4000:]
        assert re.search(r'^fatal: \[member2\]: FAILED! => \{"attempts": 2, "changed": true', done.stdout, re.MULTILINE), \
            done.stdout[-4000:]
        reason = "timed out after 5s waiting for Deployment/karmada-system/karmada-agent on cluster 'member2'"
        # diagnosed: the agent's Deployment has no ready replica
        assert row(done.stdout, "member2")["RESULT"].startswith("failed (agent_not_running): " + reason[:52]), summary(done.stdout)
        # Ansible counts the attempts of a task that ran out of them as its retries.
        assert failures(done.stdout)["member2"].startswith("member2: %s (2 attempts): %s" % (task, reason)), done.stdout[-3000:]
        restored, recap = play("site.yml", inventory, hub_init_csr_auto_approval=False)
        assert restored.returncode == 0, restored.stdout[-4000:]
        assert recap["member2"]["changed"] >= 1, recap
        assert row(restored.stdout, "member2")["RESULT"] == "registered"

    def test_check_mode_detach_previews_and_removes_nothing(self, lab, simulations, tmp_path_factory):
        inventory = write_inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada")
        done, recap = check_play(lab, "detach.yml", inventory)
        assert all(r["changed"] > 0 for r in recap.values()), recap
        hub = lab.api(lab.hub)
        for member in ("member1", "member2"):
            assert hub.exists("/apis/cluster.karmada.io/v1alpha1/clusters/" + member)
        assert row(done.stdout, "member1")["RESULT"] == row(done.stdout, "member2")["RESULT"] == "detached"

    def test_detach_waits_fleet_wait_timeout_for_each_deletion(self, lab, simulations, tmp_path_factory):
        failure = detach_with_member1_held(lab, write_inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada"),
                                           "/apis/cluster.karmada.io/v1alpha1/clusters/member1",
                                           "Unjoin the member (Push mode)")
        assert "timed out after 3s waiting for Cluster/member1 to be deleted" in failure, failure
        assert failure.endswith("; deleted before the failure: hub Cluster/member1: deleted"), failure

    def test_detach_restores_the_starting_state(self, lab, simulations, starting_state, tmp_path_factory):
        directory = tmp_path_factory.mktemp("karmada")
        inventory = write_inventory(lab, directory, "karmada")
        done, recap = play("detach.yml", inventory, fleet_report_path=str(directory / "detach.md"))
        assert done.returncode == 0, done.stdout[-4000:]
        assert_no_warnings(done.stdout + done.stderr)
        assert all(r["failed"] == 0 and r["rescued"] == 0 for r in recap.values())
        assert changes(starting_state, snapshot(lab)) == {}
        rows = summary(done.stdout)
        assert rows["member1"]["RESULT"] == rows["member2"]["RESULT"] == "detached"
        assert rows["member1"]["VERSION"] == "-"  # no longer on the hub
        assert (directory / "detach.md").read_text().startswith("# Fleet detachment\n")


class TestOcm:
    def test_check_mode_on_the_starting_state_writes_nothing(self, lab, simulations, starting_state, tmp_path_factory):
        assert changes(starting_state, snapshot(lab)) == {}
        # member1's taints and cluster set: their tasks run for a member the hub does not have yet, which they skip.
        inventory = write_inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm", member_vars={"member1": {
            "taints": [{"key": "example.com/maintenance", "value": "planned", "effect": "NoSelect"}], "cluster_set": "planned"}})
        done, recap = check_play(lab, "site.yml", inventory)
        # It would install the cluster manager and the klusterlets ...
        assert all(r["changed"] > 0 for r in recap.values()), recap
        for task in (TAINT, GROUP):
            assert ran(task, "hub-cluster", done.stdout), done.stdout[-4000:]
        # ... but cannot preview the joins before the hub has a join token, and says so ...
        for member in ("member1", "member2"):
            assert re.search(r"changed: \[%s\] => \{\s+\"msg\": \"check mode: [^\"]*no join token" % member, done.stdout), \
                done.stdout[-4000:]
            # ... nor their acceptance, whose klusterlets have not registered: it says so instead of failing to find their CSRs.
            assert re.search(r"check mode: the registration of %s [^\"]*no join token yet \(a real run creates it first\); nor is "
                             r"its acceptance by the hub\"" % member, done.stdout), done.stdout[-4000:]
        assert changes(starting_state, snapshot(lab)) == {}

    def test_site_registers_a_fleet_given_by_host_and_token_only(self, lab, simulations, starting_state, tmp_path_factory):
        """Hub and members given by host, api_key and ca_cert (ServiceAccount tokens), no kubeconfig.

        member1's klusterlet is down until the wait of its join has timed out and is being retried: the join is
        still reported as the change it was."""
        directory = tmp_path_factory.mktemp("ocm")
        inventory = token_inventory(lab, directory, "ocm")
        klusterlet = next(s for s in simulations if isinstance(s, sim_klusterlet.SimulatedKlusterlet)
                          and s.info["name"] == "member1" and not s.hosted)
        returncode, stdout, recap = run_while_paused(
            klusterlet, r"^FAILED - RETRYING: \[member1\]: .*" + re.escape(OCM_JOIN % "member1"), "site.yml", inventory,
            directory / "site.log", fleet_wait_step=2)
        assert returncode == 0, stdout[-4000:]
        assert_no_warnings(stdout)
        assert all(r["changed"] > 0 for r in recap.values()), recap
        assert task_result(stdout, "multicluster.fleet.agent_install : " + OCM_JOIN % "member1", "member1") == "changed", \
            stdout[-4000:]
        rows = summary(stdout)
        for member in ("member1", "member2"):
            assert [rows[member][c] for c in ("HUB ACCEPTED", "JOINED", "AVAILABLE", "RESULT")] == [
                "True", "True", "True", "registered"], rows
        hub = lab.api(lab.hub)
        manager = hub.get("/apis/operator.open-cluster-management.io/v1/clustermanagers/cluster-manager")
        assert {c["type"]: c["status"] for c in manager["status"]["conditions"]}["Applied"] == "True"
        for member in ("member1", "member2"):
            managed = hub.get("/apis/cluster.open-cluster-management.io/v1/managedclusters/" + member)
            assert managed["spec"]["hubAcceptsClient"] is True
            klusterlet = lab.api(member).get("/apis/operator.open-cluster-management.io/v1/klusterlets/klusterlet")
            assert {c["type"]: c["status"] for c in klusterlet["status"]["conditions"]}["HubConnectionDegraded"] == "False"
        again, recap = play("site.yml", inventory)
        assert again.returncode == 0 and all(r["changed"] == 0 for r in recap.values()), recap
        assert_no_warnings(again.stdout + again.stderr)

    def test_check_mode_on_the_registered_fleet_changes_nothing(self, lab, simulations, tmp_path_factory):
        inventory = write_inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm")
        done, recap = check_play(lab, "site.yml", inventory, diff=True)
        assert all(r["changed"] == 0 for r in recap.values()), recap
        assert "+++ after" not in done.stdout, done.stdout[-4000:]
        rows = summary(done.stdout)
        assert rows["member1"]["RESULT"] == rows["member2"]["RESULT"] == "registered"

    def test_labels_and_annotations_follow_the_inventory(self, lab, simulations, tmp_path_factory):
        labels_follow_the_inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm",
                                    "/apis/cluster.open-cluster-management.io/v1/managedclusters/%s")

    def test_limit_covers_only_the_members_in_the_run(self, lab, simulations, tmp_path_factory):
        limited_run(write_inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm"))

    def test_inventory_cluster_set_puts_members_in_their_sets(self, lab, simulations, tmp_path_factory):
        """Inventory cluster_set: each member in its exclusive set; moved when it names another one (previewed by check
        mode, which writes nothing); a re-run changes nothing."""
        directory = tmp_path_factory.mktemp("ocm")
        hub = lab.api(lab.hub)

        def set_of(member):
            labels = hub.get("/apis/cluster.open-cluster-management.io/v1/managedclusters/" + member)["metadata"]["labels"]
            return labels.get("cluster.open-cluster-management.io/clusterset")

        try:
            done, recap = play("site.yml", write_inventory(lab, directory, "ocm", member_vars={
                "member1": {"cluster_set": "site-a"}, "member2": {"cluster_set": "site-b"}}))
            assert done.returncode == 0, done.stdout[-4000:]
            assert recap["hub-cluster"]["changed"] == 1, recap
            assert task_result(done.stdout, GROUP, "hub-cluster") == "changed"
            assert (set_of("member1"), set_of("member2")) == ("site-a", "site-b")
            moved = write_inventory(lab, directory, "ocm", member_vars={"member1": {"cluster_set": "site-a"},
                                                                        "member2": {"cluster_set": "site-a"}})
            done, recap = check_play(lab, "site.yml", moved, diff=True)
            assert recap["hub-cluster"]["changed"] == 1, recap
            assert re.search(r'^\+\s+"cluster.open-cluster-management.io/clusterset": "site-a"', done.stdout, re.MULTILINE), \
                done.stdout[-4000:]
            assert set_of("member2") == "site-b"
            done, recap = play("site.yml", moved)
            assert done.returncode == 0 and recap["hub-cluster"]["changed"] == 1, done.stdout[-4000:]
            assert set_of("member2") == "site-a"
            again, recap = play("site.yml", moved)
            assert again.returncode == 0 and all(r["changed"] == 0 for r in recap.values()), recap
        finally:
            hub_auth = {"kubeconfig": lab.clusters[lab.hub]["kubeconfig"], "context": lab.hub}
            run_module("cluster_set", dict(hub_auth, engine="ocm", name="site-a", remove_clusters=["member1", "member2"]))
            for name in ("site-a", "site-b"):
                run_module("cluster_set", dict(hub_auth, engine="ocm", name=name, state="absent", force=True))

    def test_inventory_labels_that_name_a_cluster_set_are_refused(self, lab, simulations, tmp_path_factory):
        """Issue 46, item 4: labels setting OCM's cluster set label besides cluster_set made cluster_label and cluster_set
        move the member between two sets on every run. The member check refuses it, naming both variables; nothing is
        written, and the other member registers."""
        label = "cluster.open-cluster-management.io/clusterset"
        path = "/apis/cluster.open-cluster-management.io/v1/managedclusters/member1"
        hub = lab.api(lab.hub)
        before = hub.get(path)["metadata"]
        inventory = write_inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm", member_vars={
            "member1": {"labels": {label: "site-b"}, "cluster_set": "site-a"}})
        done, recap = play("site.yml", inventory, limit="member1,member2")
        assert done.returncode != 0 and recap["member1"]["failed"] == 1 and recap["member2"]["failed"] == 0, recap
        assert task_result(done.stdout, "Check the member's settings", "member1") == "fatal"
        assert ("labels sets %s=site-b, the label that puts a cluster in a cluster set, and cluster_set names site-a" % label
                in " ".join(done.stdout.split())), done.stdout[-4000:]
        assert summary(done.stdout)["member2"]["RESULT"] == "registered"
        after = hub.get(path)["metadata"]
        assert (after.get("labels"), after.get("annotations")) == (before.get("labels"), before.get("annotations"))

    def test_inventory_taints_are_applied(self, lab, simulations, tmp_path_factory):
        inventory_taints(lab, write_inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm"), "ocm", "NoSelect")

    def test_deploy_work_delivers_and_removes_a_workload(self, lab, simulations, tmp_path_factory):
        inventory = write_inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm")
        done, _recap = play("deploy_work.yml", inventory)
        assert done.returncode == 0, done.stdout[-4000:]
        assert "member1: created, applied" in done.stdout and "member2: created, applied" in done.stdout
        for member in ("member1", "member2"):
            assert lab.api(member).get("/api/v1/namespaces/default/configmaps/fleet-demo")["data"]["greeting"]
        done, _recap = play("deploy_work.yml", inventory, fleet_work_state="absent")
        assert done.returncode == 0, done.stdout[-4000:]
        for member in ("member1", "member2"):
            assert not lab.api(member).exists("/api/v1/namespaces/default/configmaps/fleet-demo")

    def test_check_mode_detach_previews_and_removes_nothing(self, lab, simulations, tmp_path_factory):
        inventory = write_inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm")
        _done, recap = check_play(lab, "detach.yml", inventory)
        assert all(r["changed"] > 0 for r in recap.values()), recap
        hub = lab.api(lab.hub)
        for member in ("member1", "member2"):
            assert hub.get("/apis/cluster.open-cluster-management.io/v1/managedclusters/" + member)["spec"]["hubAcceptsClient"] is True

    def test_detach_waits_fleet_wait_timeout_for_each_deletion(self, lab, simulations, tmp_path_factory):
        failure = detach_with_member1_held(lab, write_inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm"),
                                           "/apis/cluster.open-cluster-management.io/v1/managedclusters/member1",
                                           "multicluster.fleet.agent_install : Unregister the member")
        assert "timed out after 3s waiting for " in failure, failure
        assert "; deleted before the failure: member Klusterlet/klusterlet: deleted" in failure, failure

    def test_detach_restores_the_starting_state(self, lab, simulations, starting_state, tmp_path_factory):
        inventory = write_inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm")
        done, recap = play("detach.yml", inventory)
        assert done.returncode == 0, done.stdout[-4000:]
        assert_no_warnings(done.stdout + done.stderr)
        assert all(r["failed"] == 0 and r["rescued"] == 0 for r in recap.values())
        assert changes(starting_state, snapshot(lab)) == {}
        rows = summary(done.stdout)
        assert rows["member1"]["RESULT"] == rows["member2"]["RESULT"] == "detached"
