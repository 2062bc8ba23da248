import datetime
import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.multicluster.fleet.plugins.filter import fleet

NOW = datetime.datetime(2026, 11, 24, 12, 0, 0, tzinfo=datetime.timezone.utc)


class TestConnection:
    def test_only_the_options_that_are_set(self):
        variables = {"kubeconfig": "/etc/m1.kubeconfig", "context": "", "host": None, "validate_certs": False,
                     "impersonate_groups": [], "region": "eu-west-1", "ansible_connection": "local"}
        assert fleet.connection(variables) == {"kubeconfig": "/etc/m1.kubeconfig", "validate_certs": False}

    def test_every_authentication_variable_passes(self):
        variables = dict((option, "x") for option in fleet.AUTH_OPTIONS)
        assert fleet.connection(variables) == variables

    def test_a_member_without_a_connection_uses_the_fleet_kubeconfig_with_its_name(self):
        assert fleet.connection({"region": "x"}, "/fleet.kubeconfig", "member1") == {
            "kubeconfig": "/fleet.kubeconfig", "context": "member1"}
        assert fleet.connection({"context": "m1-admin"}, "/fleet.kubeconfig", "member1") == {
            "kubeconfig": "/fleet.kubeconfig", "context": "m1-admin"}

    def test_an_own_kubeconfig_or_host_wins_over_the_fleet_kubeconfig(self):
        assert fleet.connection({"kubeconfig": "/own"}, "/fleet", "m1") == {"kubeconfig": "/own"}
        assert fleet.connection({"host": "https://m1:6443", "api_key": "t"}, "/fleet", "m1") == {
            "host": "https://m1:6443", "api_key": "t"}

    def test_a_hub_without_a_context_stays_unnamed_for_the_environment(self):
        assert fleet.connection({"hub_apiserver": "https://hub:6443"}, "/fleet.kubeconfig") == {}
        assert fleet.connection({"context": "hub"}, "/fleet.kubeconfig") == {"kubeconfig": "/fleet.kubeconfig", "context": "hub"}

    def test_refuses_what_is_not_a_mapping(self):
        with pytest.raises(AnsibleFilterError, match="mapping"):
            fleet.connection(["kubeconfig"])


class TestMemberProblem:
    """The check of a member's settings the member plays start with, in its order."""
    ok = dict(name="member1", action="register", mode="push", connection={"kubeconfig": "/m1"}, twins=[],
              hub_host="hub-cluster", hub={"fleet_hub_started": {"failed": False}, "hub_init_join": {"token": "x"}})

    def problem(self, **changes):
        args = dict(self.ok, **changes)
        member = dict((key, args.pop(key)) for key in ("mode", "connection", "twins", "engine", "labels", "annotations",
                                                       "taints", "cluster_set") if key in args)
        return fleet.fleet_member_problem(member=member, **args)

    def test_none(self):
        assert self.problem() == ""
        assert self.problem(connection={"host": "https://m1:6443"}, mode="pull") == ""
        # a run without the hub host: the group variable fleet_hub, even empty (the K8S_AUTH_* environment)
        assert self.problem(hub_host="", hub={}) == ""
        # the hub play of another run, or none yet: the member reads the join token from the hub
        assert self.problem(hub={}) == ""

    def test_each_problem(self):
        assert self.problem(mode="pul") == "registration_mode must be push or pull, not pul"
        assert self.problem(twins=["edge1", "edge2"]) == (
            "cluster_name member1 is also the cluster name of edge1, edge2 in the inventory: a name stands for one"
            " cluster, so none of them is registered")
        assert self.problem(connection={"context": "member1"}) == (
            "no connection to the member: set its kubeconfig (and context) or host in the inventory, or"
            " fleet_kubeconfig with a context named member1")
        assert self.problem(hub_host="", hub=None) == "no hub: the inventory has no hub host and no fleet_hub variable"
        assert self.problem(hub={"fleet_hub_started": {"failed": True}}) == (
            "the hub play failed on hub-cluster (see its error above), so there is no join token")

    def test_inventory_values_the_hub_step_takes(self):
        """site.yml gives every member's labels, annotations and taints to one task: a shape its options refuse would
        fail them all, so it fails the member's check instead."""
        assert self.problem(labels={"env": "prod"}, annotations={}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]) == ""
        assert self.problem(labels="env=prod") == "labels must be a dict of keys and values, not str"
        assert self.problem(annotations=["a"]) == "annotations must be a dict of keys and values, not list"
        assert self.problem(taints={"key": "k"}) == "taints must be a list of taints (key, value, effect), not dict"
        assert self.problem(taints=[{"key": "k"}, "k=v"]) == "taints[1] must be a dict with a key (and value, effect), not 'k=v'"
        assert self.problem(taints=[{"key": "k", "timeAdded": "x"}]) == "taints[0] has timeAdded; a taint has only key, value, effect"
        assert self.problem(taints=[{"key": "k"}], action="detach") == "" and self.problem(labels="x", action="upgrade") == ""

    def test_the_first_problem_wins(self):
        everything = dict(connection={}, twins=["edge1"], hub_host="", hub=None)
        assert self.problem(mode="none", **everything).startswith("registration_mode")
        assert self.problem(**everything).startswith("cluster_name member1 is also")
        everything.pop("twins")
        assert self.problem(**everything).startswith("no connection")
        everything.pop("connection")
        assert self.problem(**everything).startswith("no hub")

    def test_a_detachment_needs_no_join_token(self):
        assert self.problem(action="detach", hub={"fleet_hub_started": True}) == ""
        assert self.problem(action="detach", twins=["edge1"]).endswith("so none of them is detached")

    def test_unknown_action(self):
        with pytest.raises(AnsibleFilterError, match="fleet_member_problem: action must be one of register, detach"):
            self.problem(action="join")

    def test_inventory_labels_must_not_set_the_engines_cluster_set_label(self):
        """cluster_label would write the label and cluster_set move the member back, on every run (issue 46, item 4)."""
        label = "cluster.open-cluster-management.io/clusterset"
        assert self.problem(engine="ocm", labels={label: "site-b"}, cluster_set="site-a") == (
            "labels sets %s=site-b, the label that puts a cluster in a cluster set, and cluster_set names site-a: each run"
            " would move the member from one set to the other; name its set with cluster_set alone and leave %s out of"
            " labels" % (label, label))
        assert self.problem(engine="ocm", labels={label: "site-a"}) == (
            "labels sets %s=site-a, the label that puts a cluster in a cluster set: name the member's set with cluster_set"
            " instead (cluster_set: site-a) and leave %s out of labels" % (label, label))
        assert "cluster_set names site-a" in self.problem(engine="ocm", labels={label: None}, cluster_set="site-a")
        # the same set in both: what the fleet inventory plugin gives every OCM member (labels as the hub has them)
        assert self.problem(engine="ocm", labels={label: "site-a", "env": "prod"}, cluster_set="site-a") == ""
        # other labels, another engine (Karmada has no cluster set label), and plays that do not label are fine
        assert self.problem(engine="ocm", labels={"env": "prod"}, cluster_set="site-a") == ""
        assert self.problem(engine="karmada", labels={label: "site-b"}) == ""
        assert self.problem(engine="ocm", labels={label: "site-b"}, cluster_set="site-a", action="detach") == ""
        assert self.problem(engine="ocm", labels={label: "site-b"}, cluster_set="site-a", action="upgrade") == ""
        assert self.problem(engine="ocm", labels=None) == ""


class TestVariablesProblem:
    """The playbooks' own variables, checked first by every play, by their own names."""

    def test_none(self):
        assert fleet.fleet_variables_problem({"fleet_engine": "karmada"}) == ""
        assert fleet.fleet_variables_problem({"fleet_engine": "ocm", "fleet_wait_timeout": "600", "fleet_wait_step": 5,
                                              "fleet_hub_wait_timeout": 1}) == ""

    def test_the_engine(self):
        assert fleet.fleet_variables_problem({}) == "fleet_engine must be karmada or ocm, not (not set)"
        assert fleet.fleet_variables_problem({"fleet_engine": "kcp"}) == "fleet_engine must be karmada or ocm, not kcp"
        assert fleet.fleet_variables_problem({"fleet_engine": None}) == "fleet_engine must be karmada or ocm, not None"
        # the engine first: a bad wait too is reported once the engine is right
        assert fleet.fleet_variables_problem({"fleet_engine": ["ocm"], "fleet_wait_step": 0}).startswith("fleet_engine")

    @pytest.mark.parametrize("value", [0, "0", "5s", 1.5, "-1", "", None, True])
    def test_each_wait_is_a_whole_number_of_seconds(self, value):
        for name in fleet.WAITS:
            assert fleet.fleet_variables_problem({"fleet_engine": "karmada", name: value}) == (
                "%s must be a whole number of seconds, at least 1, not %s" % (name, value))

    def test_a_run_that_installs_checks_its_images_and_an_upgrade_its_batches(self):
        variables = {"fleet_engine": "karmada", "karmada_version": "v1.18.2; rm -rf"}
        image = fleet.fleet_image_settings_problem(variables)
        assert image and fleet.fleet_variables_problem(variables, "register") == image
        assert fleet.fleet_variables_problem(variables, "upgrade") == image
        assert fleet.fleet_variables_problem(variables) == "" and fleet.fleet_variables_problem(variables, "detach") == ""
        batches = fleet.fleet_upgrade_batches_problem([0])
        assert batches and fleet.fleet_variables_problem({"fleet_engine": "ocm"}, "upgrade", [0]) == batches
        assert fleet.fleet_variables_problem({"fleet_engine": "ocm"}, "register", [0]) == ""
        assert fleet.fleet_variables_problem({"fleet_engine": "ocm"}, "upgrade", None) == ""


class TestMemberSettings:
    def settings(self, **variables):
        return fleet.fleet_member_settings("member1", {"member1": variables})

    def test_the_name_mode_and_connection_from_the_host(self):
        assert self.settings(fleet_engine="karmada", kubeconfig="/m1") == {
            "name": "member1", "mode": "push", "connection": {"kubeconfig": "/m1"}}
        assert self.settings(fleet_engine="karmada", cluster_name="edge-1", registration_mode="pull",
                             fleet_kubeconfig="/fleet") == {
            "name": "edge-1", "mode": "pull", "connection": {"kubeconfig": "/fleet", "context": "edge-1"}}

    def test_an_engine_that_registers_only_by_pull(self):
        assert self.settings(fleet_engine="ocm", registration_mode="push")["mode"] == "pull"

    def test_no_mode_for_an_unknown_engine(self):
        assert self.settings(fleet_engine="kcp", registration_mode="push")["mode"] is None
        assert self.settings()["mode"] is None


class TestSettingsProblem:
    """A member's settings read from hostvars in one pass: the playbooks' variables, then fleet_member_problem."""

    def hostvars(self, hub=None, **members):
        found = dict((host, dict({"fleet_engine": "karmada", "kubeconfig": "/%s" % host}, **variables))
                     for host, variables in members.items())
        if hub is not None:
            found["hub-cluster"] = hub
        return found

    def problem(self, hostvars, action="register", host="member1", batches=None):
        groups = {"members": [h for h in hostvars if h != "hub-cluster"],
                  "hub": ["hub-cluster"] if "hub-cluster" in hostvars else []}
        return fleet.fleet_settings_problem(host, hostvars, groups, action, batches)

    def test_none(self):
        assert self.problem(self.hostvars(hub={}, member1={}, member2={})) == ""
        assert self.problem(self.hostvars(member1={"fleet_hub": {}})) == ""

    def test_the_playbooks_variables_first(self):
        everything = self.hostvars(member1={"fleet_engine": "kcp", "registration_mode": "sideways"})
        assert self.problem(everything) == "fleet_engine must be karmada or ocm, not kcp"
        assert self.problem(self.hostvars(hub={}, member1={"fleet_wait_step": "5s"})).startswith("fleet_wait_step")
        assert self.problem(self.hostvars(hub={}, member1={}), "upgrade", batches=[0]) == (
            fleet.fleet_upgrade_batches_problem([0]))

    def test_the_members_settings_as_fleet_member_problem_checks_them(self):
        assert self.problem(self.hostvars(hub={}, member1={"registration_mode": "pul"})) == (
            "registration_mode must be push or pull, not pul")
        assert self.problem(self.hostvars(hub={}, member1={"kubeconfig": None})).startswith("no connection to the member")
        assert self.problem(self.hostvars(member1={})) == "no hub: the inventory has no hub host and no fleet_hub variable"
        assert self.problem(self.hostvars(hub={"fleet_hub_started": {"failed": True}}, member1={})) == (
            "the hub play failed on hub-cluster (see its error above), so there is no join token")
        assert self.problem(self.hostvars(hub={}, member1={"taints": "NoSchedule"})).startswith("taints must be a list")
        label = "cluster.open-cluster-management.io/clusterset"
        assert self.problem(self.hostvars(hub={}, member1={"fleet_engine": "ocm", "labels": {label: "a"}})).startswith(
            "labels sets %s=a" % label)

    def test_twins_from_the_members_or_from_the_hub_play(self):
        hostvars = self.hostvars(hub={}, member1={"cluster_name": "edge"}, member2={"cluster_name": "edge"}, member3={})
        assert self.problem(hostvars) == ("cluster_name edge is also the cluster name of member2 in the inventory: a name"
                                          " stands for one cluster, so none of them is registered")
        assert self.problem(hostvars, host="member3") == ""
        # the hub play read them once for the run: that is what counts
        hostvars["hub-cluster"]["fleet_hosts_by_cluster_name"] = {"edge": ["member1"], "member3": ["member3", "x"]}
        assert self.problem(hostvars) == ""
        assert "is also the cluster name of x" in self.problem(hostvars, host="member3")

    def test_the_hub_registered_with_itself_under_the_members_name(self):
        hub = {"hub_init_ocm_register_self": "yes"}
        hostvars = self.hostvars(hub=hub, member1={"fleet_engine": "ocm", "cluster_name": "local-cluster"})
        assert "is also the cluster name of hub-cluster" in self.problem(hostvars)
        hub["hub_init_ocm_self_name"] = "hub-itself"
        assert self.problem(hostvars) == ""
        hub["hub_init_ocm_register_self"] = False
        hostvars["member1"]["cluster_name"] = "hub-itself"
        assert self.problem(hostvars) == ""


class TestFailureRecord:
    def test_the_task_and_its_message(self):
        assert fleet.fleet_failure_record({"failed": True, "msg": "refused"}, "Join the member") == {
            "task": "Join the member", "message": "refused"}

    def test_the_attempts_of_a_retried_task(self):
        record = fleet.fleet_failure_record({"failed": True, "msg": "timed out", "attempts": 30}, "Join the member")
        assert record["task"] == "Join the member (30 attempts)"
        assert fleet.fleet_failure_record({"msg": "x", "attempts": 1}, "Join")["task"] == "Join"

    def test_a_failure_without_a_message(self):
        assert fleet.fleet_failure_record({"failed": True}, "Join")["message"] == "failed"

    def test_fleet_members_reads_it(self):
        record = fleet.fleet_failure_record({"failed": True, "msg": "refused", "attempts": 2}, "Join")
        hostvars = {"member1": {"fleet_started": True, "fleet_failure": record}}
        assert fleet.fleet_members(["member1"], hostvars)[0] == {
            "host": "member1", "name": "member1", "ran": True, "failure": "refused", "failed_task": "Join (2 attempts)"}

    def test_with_a_diagnosis_it_keeps_the_verdict_for_the_summary(self):
        diagnosis = {"name": "member2", "verdict": "lease_expired", "next_step": "Look at the agent.",
                     "evidence": [EVIDENCE], "member_read": True, "context": []}
        record = fleet.fleet_failure_record({"failed": True, "msg": "timed out"}, "Wait", diagnosis)
        assert record == {"task": "Wait", "message": "timed out", "verdict": "lease_expired",
                          "next_step": "Look at the agent.", "evidence": [EVIDENCE]}
        assert fleet.fleet_failure_record({"msg": "x"}, "Wait", {}) == {"task": "Wait", "message": "x"}
        hostvars = {"member2": {"fleet_started": True, "fleet_failure": record}}
        (member,) = fleet.fleet_members(["member2"], hostvars)
        assert member["diagnosis"] == {"verdict": "lease_expired", "next_step": "Look at the agent.", "evidence": [EVIDENCE]}
        (row,) = fleet.fleet_report([member], [], "karmada")
        assert row["result"] == "failed" and row["verdict"] == "lease_expired" and row["reason"] == "timed out"
        assert fleet.fleet_table([row], "karmada")[1].endswith("failed (lease_expired): timed out")
        assert fleet.fleet_markdown([row], "karmada").endswith(
            "- **member2** (lease_expired): Wait: timed out\n"
            "  - evidence: Lease/karmada-cluster/member2 spec.renewTime: 2026-11-29T05:00:00Z (47m ago)\n"
            "  - next step: Look at the agent.\n")

    def test_evidence_as_a_line(self):
        assert fleet.fleet_evidence(EVIDENCE) == "Lease/karmada-cluster/member2 spec.renewTime: 2026-11-29T05:00:00Z (47m ago)"
        assert fleet.fleet_evidence(dict(EVIDENCE, age=None)).endswith("05:00:00Z")
        assert fleet.fleet_evidence(dict(EVIDENCE, age="in 3h")).endswith("05:00:00Z (in 3h)")


EVIDENCE = {"object": "Lease/karmada-cluster/member2", "field": "spec.renewTime", "value": "2026-11-29T05:00:00Z", "age": "47m"}

HOSTVARS = {
    "hub-cluster": {"cluster_name": "hub"},
    "member1": {"cluster_name": "member1", "fleet_started": True, "fleet_done": True},
    "member2": {"fleet_started": {"changed": False, "failed": True},
                "fleet_failure": {"message": "kubeconfig file /x does not exist", "task": "Join the member in Push mode"}},
    "member3": {"fleet_started": True},
    "member4": {"cluster_name": "edge4"},
}


def test_fleet_members_says_who_ran_and_why_one_failed():
    members = fleet.fleet_members(["member1", "member2", "member3", "member4"], HOSTVARS)
    assert members == [
        {"host": "member1", "name": "member1", "ran": True, "failure": "", "failed_task": ""},
        {"host": "member2", "name": "member2", "ran": True, "failure": "kubeconfig file /x does not exist",
         "failed_task": "Join the member in Push mode"},
        {"host": "member3", "name": "member3", "ran": True, "failure": "did not finish (see the output above)",
         "failed_task": ""},
        {"host": "member4", "name": "edge4", "ran": False, "failure": "", "failed_task": ""},
    ]


def test_fleet_cluster_hosts_groups_the_members_by_the_name_they_give():
    hostvars = dict(HOSTVARS, member5={"cluster_name": "member1"}, member6={"cluster_name": "edge4"})
    assert fleet.fleet_cluster_hosts(["member1", "member2", "member4", "member5", "member6"], hostvars) == {
        "member1": ["member1", "member5"], "member2": ["member2"], "edge4": ["member4", "member6"]}
    assert fleet.fleet_cluster_hosts(None, hostvars) == {}


def test_a_hub_registered_with_itself_is_a_member_under_its_own_name():
    hostvars = dict(HOSTVARS, **{
        "hub-cluster": {"cluster_name": "hub", "fleet_member_name": "local-cluster", "fleet_started": True,
                        "fleet_failure": {"message": "timed out", "task": "Accept local-cluster on the hub"}},
        "other-hub": {"cluster_name": "hub2", "fleet_started": True}})
    members = fleet.fleet_members(["member1"], hostvars, ["hub-cluster", "other-hub"])
    assert members == [
        {"host": "hub-cluster", "name": "local-cluster", "ran": True, "failure": "timed out",
         "failed_task": "Accept local-cluster on the hub"},
        {"host": "member1", "name": "member1", "ran": True, "failure": "", "failed_task": ""},
    ]
    # a hub that did not register with itself is no member, and without hubs none is
    assert fleet.fleet_members(["member1"], hostvars) == members[1:]
    row = fleet.fleet_report(members, [cluster("local-cluster", ready=False)], "ocm", now=NOW)[0]
    assert (row["name"], row["host"], row["result"], row["reason"]) == ("local-cluster", "hub-cluster", "failed", "timed out")
    hostvars["hub-cluster"] = {"fleet_member_name": "local-cluster", "fleet_started": True, "fleet_done": True}
    members = fleet.fleet_members([], hostvars, ["hub-cluster"])
    assert [(r["name"], r["result"]) for r in fleet.fleet_report(members, [cluster("local-cluster")], "ocm", now=NOW)] == [
        ("local-cluster", "registered")]
    assert fleet.fleet_report(members, [], "ocm", action="detach", now=NOW)[0]["result"] == "detached"


def cluster(name, ready=True, created="2026-11-24T11:55:00Z", **extra):
    summary = {"name": name, "mode": "Push", "kubernetes_version": "v1.20.2", "ready": ready, "accepted": None,
               "joined": None, "created": created, "conditions": [{"type": "Ready", "message": "cluster is not reachable"}]}
    summary.update(extra)
    return summary


class TestReport:
    members = fleet.fleet_members(["member1", "member2", "member3", "member4"], HOSTVARS)

    def rows(self, clusters, **kwargs):
        return dict((row["name"], row) for row in fleet.fleet_report(self.members, clusters, "karmada", now=NOW, **kwargs))

    def test_members_of_the_run_and_clusters_outside_it(self):
        rows = self.rows([cluster("member1"), cluster("member3", ready=False), cluster("edge4"), cluster("other")])
        assert sorted(rows) == ["edge4", "member1", "member2", "member3", "other"]
        assert (rows["member1"]["result"], rows["member1"]["reason"], rows["member1"]["age"]) == ("registered", "", "5m")
        assert rows["member2"]["result"] == "failed" and rows["member2"]["version"] == "-"
        assert rows["member2"]["failed_task"] == "Join the member in Push mode"
        assert rows["member3"]["reason"] == "did not finish (see the output above)"
        # not in this run: listed as the hub has them, never as failed, even when not ready
        assert rows["edge4"]["result"] == rows["other"]["result"] == "-"
        assert rows["edge4"]["host"] is None and rows["member1"]["host"] == "member1"

    def test_a_member_that_finished_but_is_not_ready_failed(self):
        members = fleet.fleet_members(["member1"], HOSTVARS)
        row = fleet.fleet_report(members, [cluster("member1", ready=False)], "karmada", now=NOW)[0]
        assert (row["result"], row["reason"]) == ("failed", "not ready: cluster is not reachable")
        row = fleet.fleet_report(members, [], "karmada", now=NOW)[0]
        assert (row["result"], row["reason"]) == ("failed", "not registered on the hub")

    def test_check_mode_and_detach_do_not_ask_for_readiness(self):
        members = fleet.fleet_members(["member1"], HOSTVARS)
        assert fleet.fleet_report(members, [], "karmada", check_mode=True)[0]["result"] == "registered"
        assert fleet.fleet_report(members, [], "karmada", action="detach")[0]["result"] == "detached"

    def test_two_hosts_giving_a_cluster_the_same_name_each_keep_their_result(self):
        """The verdict counts hosts, never names: one host's success must not hide another's failure."""
        hostvars = {"impostor": {"cluster_name": "member1", "fleet_started": True,
                                 "fleet_failure": {"message": "refused", "task": "Check the member's settings"}},
                    "member1": {"fleet_started": True, "fleet_done": True}}
        members = fleet.fleet_members(["impostor", "member1"], hostvars)
        rows = fleet.fleet_report(members, [cluster("member1")], "karmada", now=NOW)
        assert [(r["name"], r["host"], r["result"]) for r in rows] == [("member1", "impostor", "failed"),
                                                                       ("member1", "member1", "registered")]

    def test_members_whose_hub_kubeconfigs_followed_a_moved_hub(self):
        change = {"address": {"from": "https://10.0.0.1:6443", "to": "https://hub:6443"}, "ca": {"from": [], "to": []}}
        hostvars = {"moved": {"fleet_started": True, "fleet_done": True, "agent_install_registration": {"hub_change": change}},
                    "failed": {"fleet_started": True, "fleet_failure": {"message": "refused", "task": "x"},
                               "agent_install_registration": {"hub_change": change}},
                    "member1": {"fleet_started": True, "fleet_done": True, "agent_install_registration": {"changed": False}}}
        members = fleet.fleet_members(["moved", "failed", "member1"], hostvars)
        assert [m.get("hub_change") for m in members] == [["address", "ca"], ["address", "ca"], None]
        clusters = [cluster("moved"), cluster("failed"), cluster("member1")]
        rows = dict((r["name"], r) for r in fleet.fleet_report(members, clusters, "karmada", now=NOW))
        assert rows["moved"]["hub_change"] == "rewrote its hub kubeconfigs for the hub's new address and ca"
        assert "hub_change" not in rows["failed"] and "hub_change" not in rows["member1"]  # a failure says why instead
        assert fleet.fleet_table([rows["moved"]], "karmada")[1].endswith(
            "registered: rewrote its hub kubeconfigs for the hub's new address and ca")
        planned = fleet.fleet_report(members[:1], clusters[:1], "karmada", check_mode=True, now=NOW)[0]
        assert planned["hub_change"] == "would rewrite its hub kubeconfigs for the hub's new address and ca"

    def test_unknown_action(self):
        with pytest.raises(AnsibleFilterError, match="register, detach"):
            fleet.fleet_report([], [], "karmada", action="join")


@pytest.mark.parametrize("created, age", [
    ("2026-11-24T11:59:30Z", "30s"), ("2026-11-24T11:55:00Z", "5m"), ("2026-11-24T11:54:50Z", "5m10s"),
    ("2026-11-24T10:00:00Z", "120m"), ("2026-11-24T07:00:00Z", "5h"), ("2026-11-24T06:30:00Z", "5h30m"),
    ("2026-11-23T00:00:00Z", "36h"), ("2026-11-20T06:00:00Z", "4d6h"), ("2026-09-01T12:00:00Z", "84d"),
    ("2023-11-24T12:00:00Z", "3y"), (None, "-"), ("yesterday", "-"),
])
def test_age_reads_like_kubectl(created, age):
    assert fleet._age(created, NOW) == age


ROWS = [
    {"name": "member1", "version": "v1.20.2", "mode": "Pull", "ready": True, "accepted": "-", "joined": "-", "age": "5m",
     "agent": "v1.18.2", "result": "registered", "reason": "", "failed_task": "",
     "warning": "the agent certificate expires at 2026-12-01T00:00:00Z"},
    {"name": "edge7", "version": "-", "mode": "-", "ready": "-", "accepted": "-", "joined": "-", "age": "-",
     "result": "failed", "failed_task": "Join the member in Push mode",
     "reason": "cluster 'edge7': kubeconfig file /etc/fleet/edge-07.kubeconfig does not exist | really"},
]


def test_table_has_kubectls_columns_and_a_short_reason():
    lines = fleet.fleet_table(ROWS, "karmada")
    assert lines[0].split() == ["NAME", "VERSION", "MODE", "READY", "AGE", "AGENT", "RESULT"]
    assert lines[1].split() == ["member1", "v1.20.2", "Pull", "True", "5m", "v1.18.2", "registered"]
    assert lines[2].startswith("edge7     -         -      -       -     -         failed: cluster 'edge7': kubeconfig file")
    assert lines[2].endswith("...") and len(lines[2].split("failed: ", 1)[1]) == fleet.REASON_WIDTH
    ocm = fleet.fleet_table(ROWS[:1], "ocm")
    assert re.split(r"\s{2,}", ocm[0]) == ["NAME", "HUB ACCEPTED", "JOINED", "AVAILABLE", "AGE", "AGENT", "RESULT"]


def test_markdown_has_the_table_and_every_whole_reason():
    text = fleet.fleet_markdown(ROWS, "karmada", "Fleet registration")
    lines = text.splitlines()
    assert lines[0] == "# Fleet registration"
    assert lines[2] == "| NAME | VERSION | MODE | READY | AGE | AGENT | RESULT |"
    assert lines[3] == "|---|---|---|---|---|---|---|"
    assert lines[4] == "| member1 | v1.20.2 | Pull | True | 5m | v1.18.2 | registered |"
    assert lines[5].startswith("| edge7 | - | - | - | - | - | failed: cluster 'edge7'") and "\\|" not in lines[5][:-2]
    assert lines[-5] == ("- **edge7**: Join the member in Push mode: cluster 'edge7': kubeconfig file "
                         "/etc/fleet/edge-07.kubeconfig does not exist \\| really")
    assert lines[-3:] == ["## Agent certificates expiring soon", "",
                          "- **member1**: the agent certificate expires at 2026-12-01T00:00:00Z"]


HOSTILE = ("ok\n# Pwned\n![x](https://evil.example/t.png) [click](javascript:alert(1)) <img src=x onerror=alert(1)> "
           "**bold** `code` ~~gone~~ | cell _em_ &lt; \\")
HOSTILE_TEXT = ("ok # Pwned !\\[x\\](https://evil.example/t.png) \\[click\\](javascript:alert(1)) \\<img src=x "
                "onerror=alert(1)\\> \\*\\*bold\\*\\* \\`code\\` \\~\\~gone\\~\\~ \\| cell \\_em\\_ \\&lt; \\\\")


def test_markdown_text_is_literal_and_on_one_line():
    assert fleet.markdown_text(HOSTILE) == HOSTILE_TEXT
    assert fleet.markdown_text("fleet_wait_timeout: 2_000 in /tmp/test_x0") == "fleet_wait_timeout: 2_000 in /tmp/test_x0"
    assert fleet.markdown_text(" a\r\n\tb ") == "a b"


def test_markdown_shows_what_an_agent_wrote_on_the_hub_as_text():
    """A member's agent writes its cluster's condition message and Kubernetes version on the hub: the report quotes
    them as text - no heading, image, link, HTML or table cell of theirs."""
    members = [{"host": "member2", "name": "member2", "ran": True, "failure": "", "failed_task": "",
                "agent": {"version": HOSTILE, "certificate_expiration": None}},
               {"host": "member3", "name": "member3", "ran": True, "failure": "", "failed_task": "",
                "diagnosis": {"verdict": "not_ready", "next_step": "Read its conditions.",
                              "evidence": [dict(EVIDENCE, field="condition Ready", value=HOSTILE, age=None)]}}]
    clusters = [{"name": "member2", "ready": True, "mode": "Pull", "kubernetes_version": HOSTILE},
                {"name": "member3", "ready": False, "mode": "Pull", "kubernetes_version": "v1.36.2",
                 "conditions": [{"type": "Ready", "status": "False", "message": HOSTILE}]}]
    rows = fleet.fleet_report(members, clusters, "karmada", now=NOW)
    text = fleet.fleet_markdown(rows, "karmada")
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("#")] == ["# Fleet summary", "## Failed members"]
    assert lines[4].startswith("| member2 | %s | Pull | True |" % HOSTILE_TEXT) and lines[4].count(" | ") == 6
    assert "- **member3** (not_ready): not ready: %s\n" % HOSTILE_TEXT in text and HOSTILE_TEXT in lines[-2] and lines[-2].startswith("  - evidence: ")
    for raw in ("![", "](", "<img", "**bold", "`code`", "~~"):
        assert raw not in text.replace("\\" + raw[0], ""), raw


def test_report_has_the_agent_version_and_warns_about_expiring_certificates():
    def member(name, expiration):
        return {"host": name, "name": name, "ran": True, "failure": "", "failed_task": "",
                "agent": {"version": "v1.18.2", "certificate_expiration": expiration}}
    push = {"host": "push", "name": "push", "ran": True, "failure": "", "failed_task": ""}
    members = [member("soon", "2026-12-10T12:00:00Z"), member("later", "2027-11-24T12:00:00Z"),
               member("gone", "2026-11-01T00:00:00Z"), push]
    clusters = [{"name": name, "ready": True, "mode": "Pull"} for name in ("soon", "later", "gone", "push")]
    rows = dict((r["name"], r) for r in fleet.fleet_report(members, clusters, "karmada", now=NOW, cert_warning_days=30))
    assert rows["soon"]["agent"] == "v1.18.2" and rows["soon"]["warning"] == (
        "the agent certificate expires at 2026-12-10T12:00:00Z")
    assert rows["later"]["warning"] == "" and rows["later"]["certificate_expiration"] == "2027-11-24T12:00:00Z"
    assert rows["gone"]["warning"] == "the agent certificate expired at 2026-11-01T00:00:00Z"
    assert (rows["push"]["agent"], rows["push"]["warning"]) == ("-", "")
    assert fleet.fleet_report(members, clusters, "karmada", now=NOW, cert_warning_days=10)[-1]["warning"] == ""


def test_fleet_members_reads_the_agent_the_summary_read():
    hostvars = {"m1": {"fleet_agent": {"clusters": [{"name": "m1", "agent": {"version": "v1.3.1"}}]}}, "m2": {}}
    members = fleet.fleet_members(["m1", "m2"], hostvars)
    assert members[0]["agent"] == {"version": "v1.3.1"} and "agent" not in members[1]


def test_report_takes_the_agents_read_with_the_clusters():
    members = [{"host": "m1", "name": "m1", "ran": True, "failure": "", "failed_task": "", "agent": {"version": "v1.3.0"}}]
    clusters = [{"name": "m1", "ready": True, "agent": {"version": "v1.3.1"}}, {"name": "m2", "ready": True, "agent": None}]
    rows = fleet.fleet_report(members, clusters, "ocm", now=NOW)
    assert [(r["name"], r["agent"]) for r in rows] == [("m1", "v1.3.1"), ("m2", "-")]


class TestHubStep:
    """The hub step of site.yml: every member's values for one task per step, and the members a step failed."""
    hostvars = {
        "m1": {"fleet_done": True, "labels": {"env": "prod"}, "taints": [{"key": "k", "effect": "NoSelect"}], "cluster_set": "a"},
        "m2": {"fleet_done": True, "cluster_name": "edge2", "annotations": {"owner": "me"}, "cluster_set": "b"},
        "m3": {"fleet_done": True, "cluster_set": "a"},
        "m4": {"fleet_done": True, "fleet_failure": {"message": "no"}, "labels": {"env": "x"}},
        "m5": {"fleet_started": True},
    }

    def test_the_values_of_the_members_that_registered(self):
        day2 = fleet.fleet_day2(["m1", "m2", "m3", "m4", "m5"], self.hostvars)
        assert day2 == {
            "labels": [{"name": "m1", "labels": {"env": "prod"}, "annotations": {}},
                       {"name": "edge2", "labels": {}, "annotations": {"owner": "me"}},
                       {"name": "m3", "labels": {}, "annotations": {}}],
            "taints": [{"name": "m1", "taints": [{"key": "k", "effect": "NoSelect"}]}],
            "cluster_sets": [{"name": "a", "clusters": ["m1", "m3"]}, {"name": "b", "clusters": ["edge2"]}],
            "hosts": {"m1": "m1", "edge2": "m2", "m3": "m3"}}
        assert fleet.fleet_day2([], self.hostvars) == {"labels": [], "taints": [], "cluster_sets": [], "hosts": {}}

    def test_the_members_a_step_failed_each_once_with_its_own_message(self):
        day2 = fleet.fleet_day2(["m1", "m2", "m3"], self.hostvars)
        labelled = {"failed": True, "msg": "labelling failed on 1 of 3 clusters", "clusters_failed": ["edge2"],
                    "cluster_errors": {"edge2": "labelling failed on cluster 'edge2': forbidden"}}
        tainted = {"failed": True, "msg": "the hub cannot be reached"}
        grouped = {"results": [{"failed": True, "msg": "cluster set a: no", "item": {"name": "a", "clusters": ["m1", "m3"]}},
                               {"failed": False, "item": {"name": "b", "clusters": ["edge2"]}}]}
        steps = [["labels", "Label", labelled], ["taints", "Taint", tainted], ["cluster_sets", "Group", grouped]]
        assert fleet.fleet_day2_failures(day2, steps) == [
            {"host": "m2", "name": "edge2", "task": "Label", "message": "labelling failed on cluster 'edge2': forbidden"},
            {"host": "m1", "name": "m1", "task": "Taint", "message": "the hub cannot be reached"},
            {"host": "m3", "name": "m3", "task": "Group", "message": "cluster set a: no"}]
        skipped = {"skipped": True, "changed": False}
        assert fleet.fleet_day2_failures(day2, [["labels", "Label", {"changed": True}], ["taints", "Taint", skipped],
                                                ["cluster_sets", "Group", dict(skipped, results=[])]]) == []

    def test_the_connections_of_members_with_one_of_their_own(self):
        hostvars = {"hub": {"fleet_member_name": "local-cluster", "kubeconfig": "/hub", "context": "hub"},
                    "m1": {"kubeconfig": "/m1", "api_key": "t"}, "m2": {"cluster_name": "edge2"}, "m3": {}}
        assert fleet.fleet_member_connections(["m1", "m2"], hostvars, "", ["hub"]) == [
            {"name": "local-cluster", "kubeconfig": "/hub", "context": "hub"}, {"name": "m1", "kubeconfig": "/m1", "api_key": "t"}]
        assert fleet.fleet_member_connections(["m2", "m3"], hostvars, "/fleet") == [
            {"name": "edge2", "kubeconfig": "/fleet", "context": "edge2"}, {"name": "m3", "kubeconfig": "/fleet", "context": "m3"}]
        hostvars["hub"].pop("fleet_member_name")  # a hub that did not register with itself in this run
        assert fleet.fleet_member_connections(["m1"], hostvars, "", ["hub"]) == [{"name": "m1", "kubeconfig": "/m1", "api_key": "t"}]


def test_unknown_engine():
    with pytest.raises(AnsibleFilterError, match="unknown engine"):
        fleet.fleet_table(ROWS, "kubefed")


class TestEngineFacts:
    """What the roles and playbooks ask of an engine instead of its name."""

    def test_karmada(self):
        assert fleet.fleet_engine_facts("karmada") == {
            "name": "karmada", "member_kind": "Cluster", "default_mode": "push", "pull_only": False,
            "accepts_clients": False, "csr_auto_approval_setting": True, "cluster_set_label": None,
            "self_registration": False, "installs_control_plane": False, "grpc_registration": False,
            "service_account_join": False}

    def test_ocm(self):
        assert fleet.fleet_engine_facts("ocm") == {
            "name": "ocm", "member_kind": "ManagedCluster", "default_mode": "pull", "pull_only": True,
            "accepts_clients": True, "csr_auto_approval_setting": False,
            "cluster_set_label": "cluster.open-cluster-management.io/clusterset", "self_registration": True,
            "installs_control_plane": True, "grpc_registration": True, "service_account_join": True}

    def test_the_facts_are_the_engines_own(self):
        from ansible_collections.multicluster.fleet.plugins.module_utils import engines

        for name in engines.NAMES:
            facts = fleet.fleet_engine_facts(name)
            assert all(facts[fact] == getattr(engines.get(name), fact) for fact in fleet.ENGINE_FACTS)
            assert facts["default_mode"] in ("push", "pull") and (facts["default_mode"] == "pull" or not facts["pull_only"])

    @pytest.mark.parametrize("name", ["rancher", "", None, "OCM", ["ocm"]])
    def test_an_unknown_engine_fails_as_engines_get_does(self, name):
        with pytest.raises(AnsibleFilterError) as failed:
            fleet.fleet_engine_facts(name)
        assert str(failed.value) == "engine must be one of karmada, ocm, got %r" % (name,)

    def test_is_a_filter_of_the_collection(self):
        assert fleet.FilterModule().filters()["fleet_engine_facts"] is fleet.fleet_engine_facts


KARMADA_AGENT = "docker.io/karmada/karmada-agent"


def agent_fact(image):
    return {"clusters": [{"agent": {"image": image, "version": image.rsplit(":", 1)[-1]}}]}


class TestUpgrade:
    """upgrade.yml's decisions: the failure budget between batches, what a member's upgrade wrote, its summary row."""

    def test_the_rollout_stops_after_a_batch_over_the_budget(self):
        hostvars = {"m1": {"fleet_upgrade_batch": ["m1"], "fleet_started": True, "fleet_failure": {"message": "x"}},
                    "m2": {"fleet_upgrade_batch": ["m2", "m3"]}, "m3": {"fleet_upgrade_batch": ["m2", "m3"]}, "m4": {}}
        assert fleet.fleet_upgrade_stop(["m1", "m2", "m3", "m4"], hostvars, ["m2", "m3"]) == (
            "the rollout stopped after the batch of m1: 1 of 1 failed (m1), more than fleet_upgrade_max_fail_percentage 0%")
        # later batches stay out too; a budget of 100 % never stops
        assert fleet.fleet_upgrade_stop(["m1", "m2", "m3", "m4"], hostvars, ["m4"]).startswith("the rollout stopped")
        assert fleet.fleet_upgrade_stop(["m1", "m2", "m3", "m4"], hostvars, ["m4"], 100) == ""
        # the batch that is running is not judged, nor is a batch without failures
        assert fleet.fleet_upgrade_stop(["m1"], hostvars, ["m1"]) == ""
        hostvars["m1"] = {"fleet_upgrade_batch": ["m1"], "fleet_started": True, "fleet_done": True}
        assert fleet.fleet_upgrade_stop(["m1", "m2", "m3", "m4"], hostvars, ["m4"]) == ""

    def test_the_budget_is_a_percentage_of_the_batch(self):
        batch = ["a", "b", "c", "d"]
        hostvars = dict((h, {"fleet_upgrade_batch": batch, "fleet_started": True, "fleet_done": True}) for h in batch)
        hostvars["b"] = {"fleet_upgrade_batch": batch, "fleet_started": True, "cluster_name": "edge-b"}  # did not finish
        hostvars["e"] = {}
        assert fleet.fleet_upgrade_stop(batch + ["e"], hostvars, ["e"], "25") == ""  # 25 % is not more than 25 %
        assert "1 of 4 failed (edge-b)" in fleet.fleet_upgrade_stop(batch + ["e"], hostvars, ["e"], 20)
        for bad in ("lots", -1, 101):
            with pytest.raises(AnsibleFilterError, match="fleet_upgrade_max_fail_percentage must be a number"):
                fleet.fleet_upgrade_stop([], {}, [], bad)

    def test_writes_are_the_created_updated_and_deleted_entries(self):
        operator = {"objects": ["CustomResourceDefinition/klusterlets.operator.open-cluster-management.io: updated",
                                "Namespace/open-cluster-management: unchanged"]}
        registration = {"changes": ["member Klusterlet/klusterlet: updated", "hub ManagedCluster/m1: unchanged"]}
        assert fleet.fleet_upgrade_writes([operator, registration, {"skipped": True}]) == [
            "CustomResourceDefinition/klusterlets.operator.open-cluster-management.io: updated",
            "member Klusterlet/klusterlet: updated"]
        with pytest.raises(AnsibleFilterError, match="expects task results"):
            fleet.fleet_upgrade_writes(["x"])

    def rows(self, hostvars, clusters, **kwargs):
        members = fleet.fleet_members(sorted(hostvars), hostvars)
        return dict((row["name"], row) for row in fleet.fleet_report(members, clusters, "karmada", action="upgrade",
                                                                     now=NOW, **kwargs))

    def test_the_summary_says_what_became_of_each_member(self):
        done = {"fleet_started": True, "fleet_done": True}
        hostvars = {
            "new": dict(done, fleet_agent_before=agent_fact(KARMADA_AGENT + ":v1.18.2"),
                        fleet_agent=agent_fact(KARMADA_AGENT + ":v1.19.0")),
            "same": dict(done, fleet_agent_before=agent_fact(KARMADA_AGENT + ":v1.19.0"),
                         fleet_agent=agent_fact(KARMADA_AGENT + ":v1.19.0")),
            # the same tag from another registry is a change, named with both images
            "mirror": dict(done, fleet_agent_before=agent_fact(KARMADA_AGENT + ":v1.19.0"),
                           fleet_agent=agent_fact("mirror.local/karmada/karmada-agent:v1.19.0")),
            "push": dict(done),
            "broken": {"fleet_started": True, "fleet_failure": {"message": "timed out", "task": "Wait"},
                       "fleet_agent_before": agent_fact(KARMADA_AGENT + ":v1.18.2")},
            "later": {"fleet_not_attempted": "the rollout stopped after the batch of broken"},
        }
        clusters = [cluster(name, mode="Pull") for name in ("new", "same", "mirror", "broken", "later")] + [cluster("push")]
        rows = self.rows(hostvars, clusters)
        assert dict((n, (r["result"], r.get("detail", r["reason"]))) for n, r in rows.items()) == {
            "new": ("upgraded", "v1.18.2 -> v1.19.0"),
            "same": ("up to date", "v1.19.0"),
            "mirror": ("upgraded", KARMADA_AGENT + ":v1.19.0 -> mirror.local/karmada/karmada-agent:v1.19.0"),
            "push": ("no agent", "a Push member runs no agent: the hub drives it"),
            "broken": ("failed", "timed out"),
            "later": ("not attempted", "the rollout stopped after the batch of broken"),
        }
        assert rows["new"]["agent"] == "v1.19.0"
        table = "\n".join(fleet.fleet_table(list(rows.values()), "karmada"))
        assert "not attempted: the rollout stopped after the batch of broken" in table
        markdown = fleet.fleet_markdown(list(rows.values()), "karmada", "Fleet upgrade")
        assert "- **broken**: Wait: timed out" in markdown and "**later**" not in markdown  # only failures listed there

    def test_check_mode_lists_what_would_change(self):
        hostvars = {"m1": {"fleet_started": True, "fleet_done": True, "fleet_agent": agent_fact(KARMADA_AGENT + ":v1.18.2"),
                           "fleet_upgrade_writes": ["member Deployment/karmada-system/karmada-agent: updated"]},
                    "m2": {"fleet_started": True, "fleet_done": True, "fleet_agent": agent_fact(KARMADA_AGENT + ":v1.19.0")}}
        rows = self.rows(hostvars, [cluster("m1", mode="Pull", ready=False), cluster("m2", mode="Pull")], check_mode=True)
        assert (rows["m1"]["result"], rows["m1"]["detail"]) == (
            "would upgrade", "member Deployment/karmada-system/karmada-agent: updated")
        assert rows["m2"]["result"] == "up to date"
        # outside check mode, writes without an image change (a CRD) are an upgrade too; a member not ready failed
        hostvars["m2"]["fleet_upgrade_writes"] = ["CustomResourceDefinition/klusterlets.operator.open-cluster-management.io: updated"]
        rows = self.rows(hostvars, [cluster("m1", mode="Pull", ready=False), cluster("m2", mode="Pull")])
        assert rows["m2"]["result"] == "upgraded" and rows["m1"]["result"] == "failed"


class TestImageSettingsAndBatches:
    """Issue 46: what is written into image references, and upgrade.yml's batches."""

    def test_image_settings_of_a_host(self):
        assert fleet.fleet_image_settings_problem({"ocm_version": "1.3.2", "karmada_version": "v1.18.2", "region": "x"}) == ""
        assert fleet.fleet_image_settings_problem({"karmada_version": "../../evil"}).startswith(
            "karmada_version must name a release")
        assert fleet.fleet_image_settings_problem({"hub_init_ocm_registry": "evil.example.com/ocm;x"}).startswith(
            "hub_init_ocm_registry must be an image registry")
        assert fleet.fleet_image_settings_problem({"agent_install_karmada_image": "x:v1"}, ["ocm_version"]) == ""
        with pytest.raises(AnsibleFilterError, match="expects a mapping"):
            fleet.fleet_image_settings_problem("v1.18.2")

    def test_batches(self):
        assert fleet.fleet_upgrade_batches_problem(None) == "" and fleet.fleet_upgrade_serial(None) == [1, 5, "25%"]
        assert fleet.fleet_upgrade_batches_problem("abc").startswith("fleet_upgrade_batches must be")
        assert fleet.fleet_upgrade_serial([1, 0]) == [1]

    def test_downgrade(self):
        assert fleet.fleet_downgrade("quay.io/open-cluster-management/registration:v1.3.2", "v1.3.1") == {
            "from": "v1.3.2", "to": "v1.3.1"}
        assert fleet.fleet_downgrade("", "v1.3.1") == {} and fleet.fleet_downgrade("x:v1.3.1", "v1.3.2") == {}


class TestDowngradeInTheSummary:
    refused = {"failed": True, "msg": "refusing to downgrade the agent from v1.19.0 to v1.18.2 (cluster member2 ...)",
               "downgrade": {"from": "v1.19.0", "to": "v1.18.2"}}

    def test_a_refused_downgrade_fails_and_check_mode_says_would_downgrade(self):
        record = fleet.fleet_failure_record(self.refused, "Register", {"verdict": "healthy", "next_step": "x"})
        assert record["downgrade"] == {"from": "v1.19.0", "to": "v1.18.2"} and "verdict" not in record
        members = fleet.fleet_members(["member2"], {"member2": {"fleet_started": True, "fleet_failure": record}})
        (row,) = fleet.fleet_report(members, [cluster("member2")], "karmada", now=NOW)
        assert row["result"] == "failed" and row["reason"].startswith("refusing to downgrade the agent from v1.19.0")
        (row,) = fleet.fleet_report(members, [cluster("member2")], "karmada", check_mode=True, now=NOW)
        assert row["result"] == "would downgrade"
        assert row["reason"].startswith("v1.19.0 -> v1.18.2, refused: refusing to downgrade"), row
        assert "   would downgrade: v1.19.0 -> v1.18.2, refused: " in fleet.fleet_table([row], "karmada")[1]
        (row,) = fleet.fleet_report(members, [cluster("member2", mode="Pull")], "karmada", action="upgrade",
                                    check_mode=True, now=NOW)
        assert row["result"] == "would downgrade", row  # not "would upgrade" / "up to date"

    def test_an_allowed_downgrade_says_so(self):
        hostvars = {"member2": {"fleet_started": True, "fleet_done": True,
                                "agent_install_registration": {"downgrade": {"from": "v1.19.0", "to": "v1.18.2"}}}}
        members = fleet.fleet_members(["member2"], hostvars)
        (row,) = fleet.fleet_report(members, [cluster("member2")], "karmada", now=NOW)
        assert row["result"] == "registered"
        assert row["detail"] == "downgraded the agent from v1.19.0 to v1.18.2 (fleet_allow_downgrade)"
        (row,) = fleet.fleet_report(members, [cluster("member2")], "karmada", check_mode=True, now=NOW)
        assert row["detail"].startswith("would downgrade the agent from v1.19.0 to v1.18.2")
