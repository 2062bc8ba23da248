import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import hub_members, inventory
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.engine import KarmadaEngine
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import CLUSTER
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER

from .cluster_objects import KARMADA_CLUSTER, OCM_CLUSTER


def karmada(name, mode="Push", ready=True, **spec):
    return {"metadata": {"name": name, "labels": {"env": "prod"}},
            "spec": dict({"syncMode": mode, "apiEndpoint": "https://%s:6443" % name, "id": "id-" + name}, **spec),
            "status": {"kubernetesVersion": "v1.20.2",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def observed(engine, *objs):
    summaries = []
    for obj in objs:
        summary = hub_members.summarize(engine, obj)
        summaries.append(dict((key, summary[key]) for key in inventory.OBSERVED))
    return summaries


def by_name(fleet):
    return dict((host.name, host) for host in [fleet.hub] + fleet.members)


class TestObserve:
    def test_reads_the_members_without_their_objects(self, fake_cluster):
        fake_cluster.add(CLUSTER, KARMADA_CLUSTER)
        [cluster] = inventory.observe(fake_cluster, "karmada")
        assert set(cluster) == set(inventory.OBSERVED)
        assert cluster["name"] == "kmember1" and cluster["zones"] == ["eu-west-1a", "eu-west-1b"]
        assert [call[:2] for call in fake_cluster.calls] == [("GET", "/apis/cluster.karmada.io/v1alpha1/clusters")]

    def test_ocm(self, fake_cluster):
        fake_cluster.add(MANAGED_CLUSTER, OCM_CLUSTER)
        [cluster] = inventory.observe(fake_cluster, "ocm")
        assert (cluster["mode"], cluster["accepted"], cluster["joined"], cluster["ready"]) == ("Pull", True, True, False)


class TestGrouping:
    def test_members_hub_and_groups(self):
        clusters = observed("karmada", karmada("m1"), karmada("m2", mode="Pull", ready=False))
        fleet = inventory.build("karmada", clusters, inventory.MemberMapping(), "hub-cluster", {})
        hosts = by_name(fleet)
        assert fleet.hub.name == "hub-cluster" and fleet.hub.groups == ["hub", "engine_karmada"]
        assert hosts["m1"].groups == ["members", "engine_karmada", "mode_push", "ready"]
        assert hosts["m2"].groups == ["members", "engine_karmada", "mode_pull", "not_ready"]
        assert fleet.groups == ["hub", "members", "engine_karmada", "mode_push", "mode_pull", "ready", "not_ready", "cordoned"]
        assert fleet.group_vars["engine_karmada"] == {"fleet_engine": "karmada"}

    def test_member_variables(self):
        clusters = observed("karmada", karmada("m1", provider="aws", region="eu-west-1", zones=["a", "b"]))
        [member] = inventory.build("karmada", clusters, inventory.MemberMapping(), "hub-cluster", {}).members
        assert member.vars == {
            "ansible_connection": "local", "cluster_name": "m1", "registration_mode": "push",
            "provider": "aws", "region": "eu-west-1", "zones": ["a", "b"], "labels": {"env": "prod"},
            "fleet_registered": True, "fleet_ready": True, "fleet_mode": "Push", "fleet_cluster_id": "id-m1",
            "fleet_api_endpoint": "https://m1:6443", "fleet_kubernetes_version": "v1.20.2",
            "fleet_joined": None, "fleet_accepted": None, "fleet_taints": [], "cordoned": False}

    def test_labels_annotations_taints_cordon_and_cluster_set(self):
        cordon = {"key": "multicluster.fleet/cordoned", "effect": "NoSelect"}
        obj = dict(OCM_CLUSTER, metadata={"name": "c2", "labels": {"cluster.open-cluster-management.io/clusterset": "blue-1"},
                                          "annotations": {"owner": "me", "multicluster.fleet/managed-labels": "env"}},
                   spec=dict(OCM_CLUSTER["spec"], taints=[cordon]))
        fleet = inventory.build("ocm", observed("ocm", obj, dict(OCM_CLUSTER, metadata={"name": "c3"})),
                                inventory.MemberMapping(), "hub-cluster", {})
        c2, c3 = fleet.members
        assert {k: c2.vars[k] for k in ("annotations", "fleet_taints", "cordoned", "cluster_set")} == {
            "annotations": {"owner": "me"}, "fleet_taints": [cordon], "cordoned": True, "cluster_set": "blue-1"}
        assert c2.groups == ["members", "engine_ocm", "mode_pull", "not_ready", "cordoned", "cluster_set_blue_1"]
        assert c3.vars["cordoned"] is False and not {"annotations", "taints", "cluster_set"} & set(c3.vars)
        assert "taints" not in c2.vars  # the hub's taints are no input of site.yml
        assert c3.groups == ["members", "engine_ocm", "mode_pull", "not_ready"]
        assert fleet.groups[-2:] == ["cordoned", "cluster_set_blue_1"]

    def test_unreported_placement_is_left_unset(self):
        # site.yml passes provider/region/zones on with default(omit): unset keeps the hub's values as they are
        [member] = inventory.build("karmada", observed("karmada", karmada("m1")), inventory.MemberMapping(), "h", {}).members
        assert not {"provider", "region", "zones"} & set(member.vars)

    def test_ocm_members_register_by_pull(self):
        [member] = inventory.build("ocm", observed("ocm", OCM_CLUSTER), inventory.MemberMapping(), "hub-cluster", {}).members
        assert member.vars["registration_mode"] == "pull" and member.vars["fleet_accepted"] is True
        assert member.groups == ["members", "engine_ocm", "mode_pull", "not_ready"]

    def test_declared_members_are_hosts_before_they_register(self):
        mapping = inventory.MemberMapping([{"name": "new", "vars": {"registration_mode": "pull", "region": "r1"}},
                                           {"name": "other"}])
        fleet = inventory.build("karmada", observed("karmada", karmada("m1")), mapping, "hub-cluster", {})
        hosts = by_name(fleet)
        assert [m.name for m in fleet.members] == ["m1", "new", "other"]
        assert hosts["new"].vars == {"ansible_connection": "local", "cluster_name": "new", "registration_mode": "pull",
                                     "region": "r1", "fleet_registered": False, "fleet_ready": False, "fleet_mode": None,
                                     "fleet_cluster_id": None, "fleet_api_endpoint": None,
                                     "fleet_kubernetes_version": None, "fleet_joined": None, "fleet_accepted": None,
                                     "fleet_taints": None, "cordoned": False}
        assert hosts["new"].groups == ["members", "engine_karmada", "mode_pull", "not_ready"]
        # what site.yml does for a member that names no mode
        assert hosts["other"].vars["registration_mode"] == "push"
        assert inventory.build("ocm", [], mapping, "h", {}).members[1].vars["registration_mode"] == "pull"

    def test_declared_variables_win_over_what_the_hub_reports(self):
        mapping = inventory.MemberMapping([{"name": "m1", "vars": {"registration_mode": "pull", "region": "mine"}}])
        [member] = inventory.build("karmada", observed("karmada", karmada("m1", region="theirs")), mapping, "h", {}).members
        assert (member.vars["registration_mode"], member.vars["region"], member.vars["fleet_mode"]) == ("pull", "mine", "Push")
        assert "mode_pull" in member.groups

    def test_hub_host_must_not_be_a_declared_member_or_a_group(self):
        with pytest.raises(FleetError, match="hub's host name 'x' is also the name of a member cluster; set hub_host"):
            inventory.build("karmada", [], inventory.MemberMapping([{"name": "x"}]), "x", {})
        with pytest.raises(FleetError, match="hub_host 'members' is the name of a group of this inventory"):
            inventory.build("karmada", [], inventory.MemberMapping(), "members", {})
        with pytest.raises(FleetError, match="members declares hub, the name of a group of this inventory"):
            inventory.build("karmada", [], inventory.MemberMapping([{"name": "hub"}]), "h", {})

    def test_a_cluster_on_the_hub_named_like_the_hub_host_or_a_group_is_left_out(self):
        # Anyone who may create a Cluster on the hub (a pull agent) chooses its name: it must not break the inventory.
        clusters = observed("karmada", karmada("m1"), karmada("h"), karmada("members"), karmada("m2"))
        fleet = inventory.build("karmada", clusters, inventory.MemberMapping(), "h", {})
        assert [m.name for m in fleet.members] == ["m1", "m2"]
        assert fleet.hub.name == "h" and fleet.hub.groups == ["hub", "engine_karmada"]
        assert fleet.warnings == [
            "cluster 'h' on the hub is left out: the inventory's hub host has that name (rename the cluster, or set "
            "hub_host to another name)",
            "cluster 'members' on the hub is left out: a group of the inventory has that name (rename the cluster)"]

    def test_unknown_engine(self):
        with pytest.raises(FleetError, match="engine must be one of karmada, ocm, got 'kcp'"):
            inventory.build("kcp", [], inventory.MemberMapping(), "h", {})


class TestHubVariables:
    def test_connection_settings_without_secrets(self):
        options = {"kubeconfig": "/etc/fleet/hub.kubeconfig", "context": "hub", "api_key": "s3cr3t", "validate_certs": False,
                   "ca_cert": "/etc/ca.pem", "host": None, "impersonate_groups": [], "proxy": ""}
        fleet = inventory.build("ocm", [], inventory.MemberMapping(), "hub-cluster", options, "https://hub.example.com:6443")
        assert fleet.hub.vars == {"ansible_connection": "local", "kubeconfig": "/etc/fleet/hub.kubeconfig", "context": "hub",
                                  "validate_certs": False, "ca_cert": "/etc/ca.pem", "hub_apiserver": "https://hub.example.com:6443"}
        assert fleet.group_vars["members"] == {"fleet_hub": {
            "name": "hub-cluster", "kubeconfig": "/etc/fleet/hub.kubeconfig", "context": "hub", "validate_certs": False,
            "ca_cert": "/etc/ca.pem", "hub_apiserver": "https://hub.example.com:6443"}}

    def test_hub_vars_reach_member_plays_without_the_hub_host(self):
        fleet = inventory.build("karmada", [], inventory.MemberMapping(), "hub-cluster", {"context": "hub"},
                                hub_vars={"hub_init_csr_auto_approval": False})
        assert fleet.hub.vars == {"ansible_connection": "local", "context": "hub", "hub_init_csr_auto_approval": False}
        assert fleet.group_vars["members"]["fleet_hub"] == {"name": "hub-cluster", "context": "hub",
                                                            "hub_init_csr_auto_approval": False}
        with pytest.raises(FleetError, match="hub_vars must be a dictionary of variables, got"):
            inventory.build("karmada", [], inventory.MemberMapping(), "hub-cluster", {}, hub_vars=["x"])

    def test_kubeconfig_content_is_no_inventory_variable(self):
        options = {"kubeconfig": {"users": [{"name": "u", "user": {"token": "s3cr3t"}}]}, "context": "hub"}
        fleet = inventory.build("ocm", [], inventory.MemberMapping(), "hub-cluster", options)
        assert fleet.hub.vars == {"ansible_connection": "local", "context": "hub"}
        assert "s3cr3t" not in repr(fleet.group_vars)

    def test_hub_from_the_environment_shows_nothing(self):
        fleet = inventory.build("karmada", [], inventory.MemberMapping(), "hub-cluster", {})
        assert fleet.hub.vars == {"ansible_connection": "local"}
        assert fleet.group_vars["members"] == {"fleet_hub": {"name": "hub-cluster"}}


class TestMemberMapping:
    def test_nothing_mapped(self):
        # the playbooks then use fleet_kubeconfig (the AWX credential) with the cluster's name as context
        assert inventory.MemberMapping().connection("m1") == {}

    def test_shared_kubeconfig_uses_the_cluster_name_as_context(self):
        assert inventory.MemberMapping(members_kubeconfig="/k").connection("m1") == {"kubeconfig": "/k", "context": "m1"}

    def test_name_entry_keeps_the_current_context(self):
        mapping = inventory.MemberMapping([{"name": "m1", "kubeconfig": "/m1"}], members_kubeconfig="/k")
        assert mapping.connection("m1") == {"kubeconfig": "/m1"}
        assert mapping.connection("m2") == {"kubeconfig": "/k", "context": "m2"}

    def test_pattern_entry_defaults_the_context_to_the_cluster_name(self):
        mapping = inventory.MemberMapping([{"pattern": "edge-*", "kubeconfig": "/edge"},
                                           {"pattern": "lab-[0-9]", "kubeconfig": "/lab", "context": "admin"}])
        assert mapping.connection("edge-7") == {"kubeconfig": "/edge", "context": "edge-7"}
        assert mapping.connection("lab-1") == {"kubeconfig": "/lab", "context": "admin"}
        assert mapping.connection("lab-12") == {}
        assert mapping.connection("Edge-7") == {}  # case matters, as in cluster names

    def test_context_alone_selects_from_the_shared_kubeconfig(self):
        mapping = inventory.MemberMapping([{"name": "m1", "context": "m1-admin"}], members_kubeconfig="/k")
        assert mapping.connection("m1") == {"kubeconfig": "/k", "context": "m1-admin"}
        assert inventory.MemberMapping([{"name": "m1", "context": "m1-admin"}]).connection("m1") == {"context": "m1-admin"}

    def test_earlier_entries_win_and_later_ones_fill_in(self):
        mapping = inventory.MemberMapping([
            {"name": "edge-1", "context": "special", "vars": {"region": "r1"}},
            {"pattern": "edge-*", "kubeconfig": "/edge", "context": "ignored", "vars": {"region": "r0", "provider": "p"}},
        ])
        assert mapping.connection("edge-1") == {"kubeconfig": "/edge", "context": "special"}
        assert mapping.variables("edge-1") == {"region": "r1", "provider": "p"}
        assert mapping.connection("edge-2") == {"kubeconfig": "/edge", "context": "ignored"}
        assert mapping.declared() == ["edge-1"]

    def test_mapped_connection_becomes_host_variables(self):
        mapping = inventory.MemberMapping([{"pattern": "*", "kubeconfig": "/all"}])
        [member] = inventory.build("karmada", observed("karmada", karmada("m1")), mapping, "h", {}).members
        assert (member.vars["kubeconfig"], member.vars["context"]) == ("/all", "m1")

    @pytest.mark.parametrize("entry, message", [
        ("m1", r"members\[0\] must be a dictionary"),
        ({"name": "m1", "pattern": "m*"}, r"members\[0\] needs exactly one of name .* got name and pattern"),
        ({"kubeconfig": "/k"}, r"members\[0\] needs exactly one of name .* got neither"),
        ({"name": "m1", "host": "https://m1"}, r"members\[0\]: unknown key\(s\) host; an entry takes name, pattern"),
        ({"name": "m1", "vars": ["region"]}, r"members\[0\]: vars must be a dictionary"),
        ({"name": 7}, r"members\[0\]: name must be a string"),
        ({"name": "m1", "vars": {"registration_mode": "Push"}}, r"vars.registration_mode must be push or pull, got 'Push'"),
    ])
    def test_invalid_entries(self, entry, message):
        with pytest.raises(FleetError, match=message):
            inventory.MemberMapping([entry])


class TestAgentVersions:
    def test_outdated_agents_are_grouped(self):
        clusters = observed("karmada", karmada("old", mode="Pull"), karmada("new", mode="Pull"), karmada("push"),
                            karmada("unread", mode="Pull"))
        clusters[0]["agent_version"], clusters[1]["agent_version"], clusters[3]["agent_version"] = "v1.17.0", "v1.18.2", None
        fleet = inventory.build("karmada", clusters, inventory.MemberMapping(), "h", {}, target_agent_version="1.18.2")
        hosts = by_name(fleet)
        assert inventory.OUTDATED_GROUP in fleet.groups
        assert [name for name, host in sorted(hosts.items()) if inventory.OUTDATED_GROUP in host.groups] == ["old"]
        assert hosts["old"].vars["agent_version"] == "v1.17.0" and "agent_version" not in hosts["push"].vars
        assert hosts["unread"].vars["agent_version"] is None
        assert inventory.OUTDATED_GROUP not in inventory.build("karmada", clusters, inventory.MemberMapping(), "h", {}).groups

    def test_observe_agents_reads_pull_members_with_a_kubeconfig(self, monkeypatch):
        read = []
        monkeypatch.setattr(inventory.client, "get_cluster", lambda options, name, role: read.append((name, role)) or name)
        monkeypatch.setattr(KarmadaEngine, "read_agent", lambda self, member: (
            {"version": "v1.18.2", "problem": None} if member == "m1" else {"version": None, "problem": "no agent Deployment"}))
        clusters = observed("karmada", karmada("m1", mode="Pull"), karmada("m2", mode="Pull"), karmada("m3"),
                            karmada("m4", mode="Pull"))
        mapping = inventory.MemberMapping([{"pattern": "m[123]", "kubeconfig": "/k"}])
        warnings = inventory.observe_agents("karmada", clusters, mapping)
        assert read == [("m1", "member"), ("m2", "member")]  # m3 is a Push member, m4 has no kubeconfig
        assert [c.get("agent_version", "-") for c in clusters] == ["v1.18.2", None, "-", "-"]
        assert warnings == ["the agent version of cluster m2 is unknown: no agent Deployment"]
