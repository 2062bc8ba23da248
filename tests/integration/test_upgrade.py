"""playbooks/upgrade.yml on the lab, both engines: site.yml registers the fleet at release N, upgrade.yml in check mode
writes nothing and lists what would change per member, upgrade.yml takes the hub (OCM: CRD, operator, ClusterManager
images) and then every pull member to N+1 - the agent runs the new image (as the lab's operators and deployment
simulation roll it out) and the hub reports the member ready again - and a second run changes nothing. A member whose
agent never comes back (its new image comes from a registry no lab node can pull from) fails its batch and stops the
rollout: the summary names the members upgraded, failed and not attempted. An OCM hub's CRDs, aged before the upgrade
(a field removed from their schema, as an older release's CRD lacks it), accept that field again afterwards.
detach.yml removes everything again.
"""

import os

import yaml

from runner import ROOT, finish_playbook, recap_of, run_playbook, start_playbook, summary

KARMADA_AGENT = "/apis/apps/v1/namespaces/karmada-system/deployments/karmada-agent"
KLUSTERLET = "/apis/operator.open-cluster-management.io/v1/klusterlets/klusterlet"
KLUSTERLET_OPERATOR = "/apis/apps/v1/namespaces/open-cluster-management/deployments/klusterlet"
REGISTRATION_AGENT = "/apis/apps/v1/namespaces/open-cluster-management-agent/deployments/klusterlet-registration-agent"
CLUSTER_MANAGER = "/apis/operator.open-cluster-management.io/v1/clustermanagers/cluster-manager"
HUB_REGISTRATION = "/apis/apps/v1/namespaces/open-cluster-management-hub/deployments/cluster-manager-registration-controller"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
CLUSTER_MANAGER_CRD = CRDS + "clustermanagers.operator.open-cluster-management.io"
KLUSTERLET_CRD = CRDS + "klusterlets.operator.open-cluster-management.io"
UNPULLABLE = "unreachable.invalid"  # tests/lab/sim_operators.py: a Deployment with an image from there never runs


def inventory(lab, directory, engine, first=None, member_vars=None, **variables):
    """The lab's inventory for ``engine`` with ``variables`` for all, ``member_vars`` per member host, and member
    ``first`` listed first (the order of group members is the order of the batches)."""
    with open(lab.inventory) as handle:
        written = yaml.safe_load(handle)
    written["all"]["vars"].update(fleet_engine=engine, **variables)
    hosts = written["all"]["children"]["members"]["hosts"]
    for host, extra in (member_vars or {}).items():
        hosts[host].update(extra)
    if first:
        written["all"]["children"]["members"]["hosts"] = dict([(first, hosts[first])] + [
            (h, v) for h, v in hosts.items() if h != first])
    path = directory / ("%s-%s.yml" % (engine, len(list(directory.iterdir()))))
    path.write_text(yaml.safe_dump(written, sort_keys=False))
    return str(path)


def play(name, path, check=False, expect_rc=0, **extra_vars):
    done = run_playbook([{"import_playbook": os.path.join(ROOT, "playbooks", name)}], inventory=path,
                        extra_vars=extra_vars or None, check=check)
    assert done.returncode == expect_rc, done.stdout[-6000:]
    return done, recap_of(done.stdout)


def image(lab, cluster, path):
    return lab.api(cluster).get(path)["spec"]["template"]["spec"]["containers"][0]["image"]


def results(stdout):
    return dict((name, row["RESULT"]) for name, row in summary(stdout).items())


def unchanged(recap):
    return all(r["changed"] == 0 for r in recap.values())


def age_crd(lab, cluster, path, field):
    """Make the CRD at ``path`` an older release's: without ``spec.<field>`` in its schema, and no other unknown field
    kept in ``spec`` (the field is then pruned when stored)."""
    crd = lab.api(cluster).get(path)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"].pop(field, None)
    spec.pop("x-kubernetes-preserve-unknown-fields", None)
    lab.api(cluster).put(path, crd)


def stores(lab, cluster, path, field, value):
    """Whether the object at ``path`` keeps ``spec.<field>`` when written (a server-side dry run: nothing stored)."""
    written = lab.api(cluster).patch(path + "?dryRun=All", {"spec": {field: value}})
    return written["spec"].get(field) == value


class TestKarmada:
    """member1 is a Push member (no agent), member2 a Pull member with a karmada-agent."""

    def test_site_at_n(self, lab, simulations, tmp_path_factory):
        path = inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada", karmada_version="v1.18.2")
        play("site.yml", path)
        assert image(lab, "member2", KARMADA_AGENT) == "docker.io/karmada/karmada-agent:v1.18.2"

    def test_check_mode_lists_what_would_change_and_writes_nothing(self, lab, simulations, tmp_path_factory):
        before = lab.api("member2").get(KARMADA_AGENT)
        path = inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada", karmada_version="v1.19.0")
        done, recap = play("upgrade.yml", path, check=True)
        rows = results(done.stdout)
        assert rows["member1"] == "no agent: a Push member runs no agent: the hub drives it", rows
        assert rows["member2"] == "would upgrade: member Deployment/karmada-system/karmada-agent: updated", rows
        after = lab.api("member2").get(KARMADA_AGENT)
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    def test_upgrade_to_n_plus_1_and_again(self, lab, simulations, tmp_path_factory):
        path = inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada", karmada_version="v1.19.0")
        done, recap = play("upgrade.yml", path)
        rows = summary(done.stdout)
        assert rows["member2"]["RESULT"] == "upgraded: v1.18.2 -> v1.19.0" and rows["member2"]["AGENT"] == "v1.19.0", rows
        assert rows["member2"]["READY"] == "True" and rows["member1"]["RESULT"].startswith("no agent"), rows
        assert "member1 is a Push member: the Karmada control plane drives it" in done.stdout
        assert image(lab, "member2", KARMADA_AGENT) == "docker.io/karmada/karmada-agent:v1.19.0"
        again, recap = play("upgrade.yml", path)
        assert unchanged(recap), recap
        assert results(again.stdout)["member2"] == "up to date: v1.19.0"

    def test_site_naming_the_old_release_does_not_downgrade(self, lab, simulations, tmp_path_factory):
        """Issue 46: after the upgrade, the daily site.yml whose inventory still names v1.18.2 refuses to take member2's
        agent back (check mode: would downgrade) and writes nothing on it; fleet_allow_downgrade lets it."""
        before = lab.api("member2").get(KARMADA_AGENT)["metadata"]["generation"]
        path = inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada", karmada_version="v1.18.2")
        done, recap = play("site.yml", path, check=True, expect_rc=2)
        rows = results(done.stdout)
        assert rows["member2"].startswith("would downgrade: v1.19.0 -> v1.18.2, refused: refusing to downgrade"), rows
        assert rows["member1"] == "registered", rows  # a Push member runs no agent
        done, recap = play("site.yml", path, expect_rc=2)
        rows = results(done.stdout)
        assert rows["member2"].startswith("failed: refusing to downgrade the agent from v1.19.0 to v1.18.2"), rows
        assert "set the release of the member (karmada_version / ocm_version) to v1.19.0 or newer" in done.stdout
        assert "fleet_allow_downgrade=true" in done.stdout
        assert lab.api("member2").get(KARMADA_AGENT)["metadata"]["generation"] == before
        done, recap = play("site.yml", path, check=True, fleet_allow_downgrade=True)
        assert results(done.stdout)["member2"].startswith("registered: would downgrade the agent from v1.19.0 to v1.18.2")
        assert lab.api("member2").get(KARMADA_AGENT)["metadata"]["generation"] == before

    def test_an_agent_that_never_comes_back_stops_the_rollout(self, lab, simulations, tmp_path_factory):
        """Batches of one: member2 first, its new agent image cannot be pulled; member1's batch is not attempted."""
        broken = {"member2": {"agent_install_karmada_image": UNPULLABLE + "/karmada/karmada-agent"}}
        path = inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada", first="member2", member_vars=broken,
                         karmada_version="v1.19.0", fleet_upgrade_batches=[1])
        done, recap = play("upgrade.yml", path, expect_rc=2, fleet_wait_timeout=15, fleet_wait_step=5)
        rows = results(done.stdout)
        assert rows["member2"].startswith("failed"), rows
        assert rows["member1"].startswith("not attempted: the rollout stopped after the batch of member2"), rows
        assert ("member1 is not upgraded: the rollout stopped after the batch of member2: 1 of 1 failed (member2), more "
                "than fleet_upgrade_max_fail_percentage 0%") in done.stdout
        # the failure budget: with 100 % a failed batch does not stop the rollout
        done, recap = play("upgrade.yml", path, expect_rc=2, fleet_wait_timeout=15, fleet_wait_step=5,
                           fleet_upgrade_max_fail_percentage=100)
        rows = results(done.stdout)
        assert rows["member2"].startswith("failed") and rows["member1"].startswith("no agent"), rows
        # the registry fixed: the agent comes back with the same tag from the right registry - a change, not up to date
        fixed = inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada", karmada_version="v1.19.0")
        done, recap = play("upgrade.yml", fixed)
        # (the table shortens it to 60 characters)
        assert results(done.stdout)["member2"] == "upgraded: unreachable.invalid/karmada/karmada-agent:v1.19.0 -> dock..."
        assert image(lab, "member2", KARMADA_AGENT) == "docker.io/karmada/karmada-agent:v1.19.0"

    def test_detach(self, lab, simulations, tmp_path_factory):
        play("detach.yml", inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada", karmada_version="v1.19.0"))
        assert not lab.api("member2").exists(KARMADA_AGENT)


SELF = {"hub_init_ocm_register_self": True}  # the hub registered with itself, local-cluster: a member of the summary


class TestOcm:
    """Both members are pull members (klusterlets); the hub is registered with itself as local-cluster."""

    def test_site_at_n(self, lab, simulations, tmp_path_factory):
        path = inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm", **SELF, ocm_version="1.3.1")
        play("site.yml", path)
        for member in ("hub", "member1", "member2"):
            assert image(lab, member, REGISTRATION_AGENT) == "quay.io/open-cluster-management/registration:v1.3.1"

    def test_check_mode_lists_what_would_change_and_writes_nothing(self, lab, simulations, tmp_path_factory):
        before = dict((m, lab.api(m).get(KLUSTERLET)["metadata"]["resourceVersion"]) for m in ("member1", "member2"))
        manager = lab.api("hub").get(CLUSTER_MANAGER)["metadata"]["resourceVersion"]
        path = inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm", **SELF, ocm_version="1.4.0")
        done, recap = play("upgrade.yml", path, check=True)
        rows = results(done.stdout)
        for member in ("member1", "member2"):
            assert rows[member].startswith("would upgrade: member Deployment/open-cluster-management/klusterlet: upd"), rows
            assert ('"msg": "%s would change: member Deployment/open-cluster-management/klusterlet: updated; member '
                    'Klusterlet/klusterlet: updated"' % member) in done.stdout
            assert lab.api(member).get(KLUSTERLET)["metadata"]["resourceVersion"] == before[member]
        assert lab.api("hub").get(CLUSTER_MANAGER)["metadata"]["resourceVersion"] == manager
        assert rows["local-cluster"].startswith("would upgrade: member Deployment/open-cluster-management/klusterlet: upd"), rows

    def test_upgrade_to_n_plus_1_updates_the_crds_and_again(self, lab, simulations, tmp_path_factory):
        age_crd(lab, "hub", CLUSTER_MANAGER_CRD, "addOnManagerConfiguration")
        age_crd(lab, "member1", KLUSTERLET_CRD, "workConfiguration")
        feature = {"featureGates": [{"feature": "AddonManagement", "mode": "Enable"}]}
        assert not stores(lab, "hub", CLUSTER_MANAGER, "addOnManagerConfiguration", feature)
        assert not stores(lab, "member1", KLUSTERLET, "workConfiguration", feature)
        path = inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm", **SELF, ocm_version="1.4.0")
        done, recap = play("upgrade.yml", path)
        rows = summary(done.stdout)
        for member in ("member1", "member2"):
            assert rows[member]["RESULT"] == "upgraded: v1.3.1 -> v1.4.0" and rows[member]["AGENT"] == "v1.4.0", rows
            assert rows[member]["AVAILABLE"] == "True", rows
            assert image(lab, member, REGISTRATION_AGENT) == "quay.io/open-cluster-management/registration:v1.4.0"
        assert rows["local-cluster"]["RESULT"] == "upgraded: v1.3.1 -> v1.4.0", rows  # the hub's own klusterlet
        assert image(lab, "hub", REGISTRATION_AGENT) == "quay.io/open-cluster-management/registration:v1.4.0"
        # the hub first: its components run the new images; the CRDs accept the field only the new ones have
        assert image(lab, "hub", HUB_REGISTRATION) == "quay.io/open-cluster-management/registration:v1.4.0"
        assert stores(lab, "hub", CLUSTER_MANAGER, "addOnManagerConfiguration", feature)
        assert stores(lab, "member1", KLUSTERLET, "workConfiguration", feature)
        # who created the CRD is kept: the lab's hub CRD carries no label of the collection
        assert "labels" not in lab.api("hub").get(CLUSTER_MANAGER_CRD)["metadata"]
        again, recap = play("upgrade.yml", path)
        assert unchanged(recap), recap
        assert set(results(again.stdout).values()) == {"up to date: v1.4.0"}

    def test_site_naming_the_old_release_does_not_downgrade(self, lab, simulations, tmp_path_factory):
        """Issue 46: after the upgrade to 1.4.0, site.yml naming 1.3.1 refuses to take the hub back (OCM does not support
        it), in check mode too, before anything is written; members held back at 1.3.1 by their own ocm_version refuse
        to downgrade their klusterlets, before the klusterlet operator is touched; fleet_allow_downgrade lets it."""
        def versions_now():  # the generation of each object: what changes with its spec (status writes aside)
            return dict([("ClusterManager", lab.api("hub").get(CLUSTER_MANAGER)["metadata"]["generation"])]
                        + [(m, lab.api(m).get(KLUSTERLET)["metadata"]["generation"]) for m in ("member1", "member2")]
                        + [(m + " operator", lab.api(m).get(KLUSTERLET_OPERATOR)["metadata"]["generation"])
                           for m in ("member1", "member2")])
        before = versions_now()
        old = inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm", **SELF, ocm_version="1.3.1")
        for check in (True, False):
            done, recap = play("site.yml", old, check=check, expect_rc=2)
            assert recap["hub-cluster"]["failed"] == 1, recap
            assert ("%s the OCM hub (ClusterManager cluster-manager) from v1.4.0 to v1.3.1"
                    % ("would downgrade" if check else "refusing to downgrade")) in done.stdout
            assert versions_now() == before
        held_back = inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm", **SELF, ocm_version="1.4.0",
                              member_vars={"member1": {"ocm_version": "1.3.1"}, "member2": {"ocm_version": "1.3.1"}})
        done, recap = play("site.yml", held_back, check=True, expect_rc=2)
        rows = results(done.stdout)
        for member in ("member1", "member2"):
            assert rows[member].startswith("would downgrade: v1.4.0 -> v1.3.1, refused: refusing to downgrade"), rows
        assert rows["local-cluster"] == "registered", rows
        done, recap = play("site.yml", held_back, expect_rc=2)
        rows = results(done.stdout)
        for member in ("member1", "member2"):
            assert rows[member].startswith("failed: refusing to downgrade the agent from v1.4.0 to v1.3.1"), rows
        assert versions_now() == before
        done, recap = play("site.yml", old, check=True, fleet_allow_downgrade=True)
        rows = results(done.stdout)
        for member in ("member1", "member2"):
            assert rows[member].startswith("registered: would downgrade the agent from v1.4.0 to v1.3.1"), rows
        assert versions_now() == before

    def test_an_agent_that_never_comes_back_stops_the_rollout(self, lab, simulations, tmp_path_factory):
        broken = {"member1": {"agent_install_ocm_registry": UNPULLABLE + "/open-cluster-management"}}
        path = inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm", **SELF, member_vars=broken, ocm_version="1.4.0")
        running = start_playbook("upgrade.yml", path, str(tmp_path_factory.mktemp("ocm") / "out.txt"),
                                 fleet_upgrade_batches=[1, 1], fleet_wait_timeout=15, fleet_wait_step=5)
        rc, output, recap = finish_playbook(running)
        assert rc == 2, output[-6000:]
        rows = results(output)
        assert rows["member1"].startswith("failed"), rows
        assert rows["member2"].startswith("not attempted: the rollout stopped after the batch of member1"), rows
        assert "member2 is not upgraded: the rollout stopped after the batch of member1: 1 of 1 failed (member1)" in output
        assert image(lab, "member2", REGISTRATION_AGENT).endswith(":v1.4.0")  # upgraded before, left as it was
        fixed = inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm", **SELF, ocm_version="1.4.0")
        done, recap = play("upgrade.yml", fixed)
        rows = results(done.stdout)
        # the summary's column shortens the detail: the operator's Deployment was the only write
        assert rows["member1"] == "upgraded: member Deployment/open-cluster-management/klusterlet: upd...", rows
        assert rows["member2"] == rows["local-cluster"] == "up to date: v1.4.0", rows

    def test_detach(self, lab, simulations, tmp_path_factory):
        play("detach.yml", inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm", **SELF, ocm_version="1.4.0"))
        assert not lab.api("member1").exists(KLUSTERLET)
