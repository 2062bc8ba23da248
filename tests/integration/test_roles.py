"""The roles on the lab with their options: hub_init installs and configures OCM's cluster manager
(registration drivers, feature gates, auto-approval, resource QoS), agent_install a Singleton
klusterlet, both refuse inconsistent settings with a clear message, and uninstalling refuses while
accepted clusters remain, then removes what was installed. The simulations play the operators.
"""

import base64
import re

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import CLUSTER_MANAGER, KLUSTERLET, MANAGED_CLUSTER
from runner import run_playbook, run_while_paused, task_result

import sim_operators

# The Hosted-mode test runs member2's klusterlet on member1: the simulations include the Hosted klusterlets.
SIMULATE_HOSTED_KLUSTERLETS = True
RECAP = re.compile(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", re.MULTILINE)
HUB_OPTIONS = {
    "fleet_engine": "ocm",
    "hub_init_ocm_registry": "mirror.example/ocm",
    "hub_init_ocm_tag": "v9.9.9",
    "hub_init_ocm_registration_drivers": ["csr", "grpc"],
    "hub_init_ocm_grpc_endpoint_host": "grpc.hub.example",
    "hub_init_ocm_feature_gates": [{"feature": "ResourceCleanup", "mode": "Disable"},
                                   {"feature": "ManagedClusterAutoApproval", "mode": "Enable"}],
    "hub_init_ocm_auto_approve_identities": ["system:serviceaccount:open-cluster-management:agent-registration-bootstrap"],
    "hub_init_ocm_resource_qos_class": "ResourceRequirement",
    "hub_init_ocm_resource_requests": {"cpu": "100m", "memory": "128Mi"},
    "hub_init_ocm_resource_limits": {"cpu": "1000m", "memory": "1Gi"},  # stored as cpu "1": still no change on re-runs
}
MEMBER_OPTIONS = {
    "agent_install_ocm_mode": "Singleton",
    "agent_install_ocm_resource_qos_class": "ResourceRequirement",
    "agent_install_ocm_resource_requests": {"cpu": "50m"},
    "agent_install_ocm_resource_limits": {"cpu": "500m", "memory": "256Mi"},
}
JOIN = {"agent_install_hub_apiserver": "{{ hostvars['hub-cluster'].hub_init_join.hub_apiserver }}",
        "agent_install_token": "{{ hostvars['hub-cluster'].hub_init_join.token }}",
        "agent_install_ca_cert_hashes": "{{ hostvars['hub-cluster'].hub_init_join.ca_cert_hashes }}"}


def hub_play(*tasks, **variables):
    return {"name": "hub", "hosts": "hub", "gather_facts": False, "vars": dict(HUB_OPTIONS, **variables), "tasks": list(tasks)}


def role(name, validate=True, **variables):
    """Include role ``name`` with ``variables``; ``validate=False`` without its argument validation (then the role's own
    checks must still refuse what the argument spec cannot say)."""
    return {"name": "role " + name,
            "ansible.builtin.include_role": {"name": "multicluster.fleet." + name, "rolespec_validate": validate},
            "vars": variables}


def changes(done):
    return dict((host, (int(changed), int(failed))) for host, changed, failed in RECAP.findall(done.stdout))


@pytest.fixture(scope="module")
def clusters(lab, simulations):
    hub = client.get_cluster({"kubeconfig": lab.clusters["hub"]["kubeconfig"], "context": "hub"}, "hub")
    member = client.get_cluster({"kubeconfig": lab.clusters["member1"]["kubeconfig"], "context": "member1"}, "member1")
    return hub, member


@pytest.fixture(scope="module")
def member_crd_before(clusters):
    """Whether member1 served the Klusterlet CRD before these tests (then the roles must keep it)."""
    return resources.get(clusters[1], resources.CRD, "klusterlets.operator.open-cluster-management.io") is not None


def test_inconsistent_settings_are_refused_before_anything_is_written(lab, clusters, member_crd_before):
    cases = [
        ("hub_init", {"hub_init_ocm_resource_requests": {"cpu": "2", "memory": "128Mi"}},
         "resource requests must not exceed their limits: cpu request 2 > limit 1000m"),
        ("hub_init", {"hub_init_ocm_resource_limits": {"cpu": "lots"}}, "not a Kubernetes quantity: cpu"),
        ("hub_init", {"hub_init_ocm_grpc_endpoint_host": ""}, "the grpc driver needs hub_init_ocm_grpc_endpoint_host"),
        ("hub_init", {"hub_init_ocm_feature_gates": []}, "need the feature gate ManagedClusterAutoApproval with mode Enable"),
        ("agent_install", {"agent_install_ocm_mode": "Hosted"},
         "agent_install_ocm_mode Hosted runs the klusterlet on another cluster: set agent_install_ocm_hosting"),
        ("agent_install", {"agent_install_ocm_hosting": {"context": "hub"}},
         "agent_install_ocm_hosting is only used with agent_install_ocm_mode Hosted or SingletonHosted"),
        ("agent_install", {"agent_install_ocm_registration_driver": "grpc"},
         "the grpc registration driver needs agent_install_ocm_grpc_server and agent_install_ocm_grpc_ca_pem"),
        # what the argument spec says, its validation refuses (the playbooks include the role with it)
        ("agent_install", {"agent_install_ocm_operator_replicas": "two"},
         "argument 'agent_install_ocm_operator_replicas' is of type str and we were unable to convert to int"),
        ("agent_install", {"agent_install_karmada_replicas": "1.5"},
         "argument 'agent_install_karmada_replicas' is of type str and we were unable to convert to int"),
        ("agent_install", {"agent_install_ocm_mode": "Hostd"}, "value of agent_install_ocm_mode must be one of: Default,"),
        # a wait step of 0 would divide by zero when the retries are counted
        ("hub_init", {"hub_init_wait_step": 0},
         "hub_init_wait_timeout and hub_init_wait_step must be whole numbers of seconds, at least 1 (got 300, 0)"),
        ("agent_install", {"agent_install_wait_step": 0, "validate": False},
         "agent_install_wait_timeout and agent_install_wait_step must be whole numbers of seconds, at least 1 (got 300, 0)"),
        ("agent_install", {"agent_install_wait_timeout": -1, "validate": False},
         "agent_install_wait_timeout and agent_install_wait_step must be whole numbers of seconds, at least 1 (got -1, 10)"),
    ]
    tasks = []
    for index, (name, variables, _message) in enumerate(cases):
        tasks.append({"name": "case %d" % index, "block": [role(name, **variables)],
                      "rescue": [{"ansible.builtin.debug": {"msg": "CASE %d: {{ ansible_failed_result.msg }}" % index}}]})
    hub, _member = clusters
    klusterlet_crd = "klusterlets.operator.open-cluster-management.io"
    hub_crd_before = resources.get(hub, resources.CRD, klusterlet_crd) is not None
    done = run_playbook([hub_play(*tasks, agent_install_cluster_name="member1")], inventory=lab.inventory)
    assert done.returncode == 0, done.stdout[-3000:]
    for index, (_name, _variables, message) in enumerate(cases):
        line = re.search(r'"msg": "CASE %d: (.*)"' % index, done.stdout)
        assert line and message in line.group(1), (index, line and line.group(1))
    assert resources.get(hub, CLUSTER_MANAGER, "cluster-manager") is None
    # agent_install ran on the hub host (its connection): no klusterlet CRD was installed there
    assert (resources.get(hub, resources.CRD, klusterlet_crd) is not None) is hub_crd_before


class TestOcmHubAndSingletonKlusterlet:
    def test_hub_init_configures_the_cluster_manager(self, lab, clusters, simulations, tmp_path):
        """The cluster-manager operator is down until the wait for the ClusterManager has timed out and is being
        retried: the wait shows as retry lines, and the ClusterManager stays reported as the change it was."""
        show_grpc = {"ansible.builtin.debug": {"msg": "JOIN GRPC: {{ hub_init_join.grpc_server }} "
                                                      "{{ hub_init_join.grpc_ca_pem | b64encode }}"}}
        playbook, output = tmp_path / "hub.yml", tmp_path / "hub.log"
        playbook.write_text(yaml.safe_dump([hub_play(role("hub_init", hub_init_wait_step=2), show_grpc)]))
        operator = next(s for s in simulations if isinstance(s, sim_operators.ClusterManagerOperatorSimulation))
        returncode, stdout, _recap = run_while_paused(
            operator, r"^FAILED - RETRYING: \[hub-cluster\]: .*Configure the ClusterManager and wait until its operator applied it", str(playbook),
            lab.inventory, output)
        assert returncode == 0, stdout[-3000:]
        assert task_result(stdout, "multicluster.fleet.hub_init : Configure the ClusterManager and wait until its operator applied it and the hub "
                           "registration runs", "hub-cluster") == "changed"
        hub, _member = clusters
        spec = resources.get(hub, CLUSTER_MANAGER, "cluster-manager")["spec"]
        identities = HUB_OPTIONS["hub_init_ocm_auto_approve_identities"]
        assert spec["registrationImagePullSpec"] == "mirror.example/ocm/registration:v9.9.9"
        assert spec["registrationConfiguration"] == {
            "featureGates": HUB_OPTIONS["hub_init_ocm_feature_gates"],
            "registrationDrivers": [{"authType": "csr", "csr": {"autoApprovedIdentities": identities}},
                                    {"authType": "grpc", "grpc": {"autoApprovedIdentities": identities}}]}
        assert spec["serverConfiguration"]["endpointsExposure"] == [
            {"protocol": "grpc", "usage": "agentToHub", "grpc": {"type": "hostname", "hostname": {"host": "grpc.hub.example"}}}]
        assert spec["resourceRequirement"] == {"type": "ResourceRequirement", "resourceRequirements": {
            "requests": HUB_OPTIONS["hub_init_ocm_resource_requests"], "limits": HUB_OPTIONS["hub_init_ocm_resource_limits"]}}
        operator = resources.get(hub, resources.DEPLOYMENT, "cluster-manager", "open-cluster-management")
        container = operator["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == "mirror.example/ocm/registration-operator:v9.9.9"
        assert container["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
        # What the (simulated) operator made of it: the hub components, a gRPC server among them, with that QoS.
        grpc = resources.get(hub, resources.DEPLOYMENT, "cluster-manager-grpc-server", "open-cluster-management-hub")
        assert grpc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] == "1Gi"
        manager = resources.get(hub, CLUSTER_MANAGER, "cluster-manager")
        assert resources.condition_is(manager, "Applied") and resources.condition_is(manager, "HubRegistrationDegraded", "False")
        # The join data members read carries the gRPC endpoint and the CA the operator published for it.
        ca_bundle = resources.get(hub, resources.CONFIG_MAP, "ca-bundle-configmap", "open-cluster-management-hub")
        ca_pem = ca_bundle["data"]["ca-bundle.crt"]
        assert "BEGIN CERTIFICATE" in ca_pem
        assert "JOIN GRPC: grpc.hub.example %s" % base64.b64encode(ca_pem.encode()).decode() in stdout

    def test_second_run_changes_nothing_and_agent_install_deploys_a_singleton_klusterlet(self, lab, clusters):
        member_play = {"name": "member", "hosts": "member1", "gather_facts": False,
                       "vars": dict(MEMBER_OPTIONS, fleet_engine="ocm", **JOIN), "roles": ["multicluster.fleet.agent_install"]}
        done = run_playbook([hub_play(role("hub_init")), member_play], inventory=lab.inventory)
        assert done.returncode == 0, done.stdout[-3000:]
        recap = changes(done)
        assert recap["hub-cluster"] == (0, 0) and recap["member1"][0] > 0, recap
        _hub, member = clusters
        klusterlet = resources.get(member, KLUSTERLET, "klusterlet")
        assert klusterlet["spec"]["deployOption"] == {"mode": "Singleton"}
        assert klusterlet["spec"]["clusterName"] == "member1"
        assert klusterlet["spec"]["registrationConfiguration"] == {"registrationDriver": {"authType": "csr"}}
        assert resources.condition_is(klusterlet, "Applied") and resources.condition_is(klusterlet, "Available")
        agent = resources.get(member, resources.DEPLOYMENT, "klusterlet-agent", "open-cluster-management-agent")
        assert agent["spec"]["template"]["spec"]["containers"][0]["resources"] == {
            "requests": {"cpu": "50m"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
        assert resources.get(member, resources.DEPLOYMENT, "klusterlet-registration-agent", "open-cluster-management-agent") is None

    def test_agent_install_hosts_member2s_klusterlet_on_member1(self, lab, clusters):
        """Hosted mode: the klusterlet of member2 runs on member1 (which already runs the operator) and joins."""
        hosting = {"kubeconfig": lab.clusters["member1"]["kubeconfig"], "context": "member1"}
        hub_auth = {"kubeconfig": lab.clusters["hub"]["kubeconfig"], "context": "hub"}
        options = dict(fleet_engine="ocm", agent_install_ocm_mode="Hosted", agent_install_ocm_hosting=hosting)
        member_play = {"name": "member", "hosts": "member2", "gather_facts": False, "vars": dict(options, **JOIN),
                       "roles": ["multicluster.fleet.agent_install"]}
        accept = {"name": "accept member2", "multicluster.fleet.csr_accept": {
            "engine": "ocm", "kubeconfig": "{{ kubeconfig }}", "clusters": ["member2"], "wait": True, "timeout": 60}}
        done = run_playbook([hub_play(role("hub_init")), member_play, hub_play(accept)], inventory=lab.inventory)
        assert done.returncode == 0, done.stdout[-3000:]
        hub, member1 = clusters
        member2 = client.get_cluster({"kubeconfig": lab.clusters["member2"]["kubeconfig"], "context": "member2"}, "member2")
        klusterlet = resources.get(member1, KLUSTERLET, "klusterlet-member2")
        assert klusterlet["spec"]["deployOption"] == {"mode": "Hosted"}
        assert resources.condition_is(klusterlet, "ReadyToApply") and resources.condition_is(klusterlet, "Available")
        assert resources.get(member1, resources.DEPLOYMENT, "klusterlet-member2-registration-agent", "klusterlet-member2")
        assert resources.get(member2, resources.NAMESPACE, "open-cluster-management-agent") is None  # nothing on member2
        resources.wait_until(lambda: (resources.condition_is(
            resources.get(hub, MANAGED_CLUSTER, "member2") or {}, "ManagedClusterJoined"), None), 30, "member2 to join")
        again = run_playbook([hub_play(role("hub_init")), member_play], inventory=lab.inventory)
        assert again.returncode == 0 and changes(again)["member2"] == (0, 0), again.stdout[-3000:]
        remove = dict(member_play, vars=dict(options, agent_install_state="absent", agent_install_hub=hub_auth))
        gone = run_playbook([remove], inventory=lab.inventory)
        assert gone.returncode == 0, gone.stdout[-3000:]
        assert resources.get(member1, KLUSTERLET, "klusterlet-member2") is None
        assert resources.get(member1, resources.NAMESPACE, "klusterlet-member2") is None
        assert resources.get(hub, MANAGED_CLUSTER, "member2") is None
        assert resources.get(member1, resources.DEPLOYMENT, "klusterlet", "open-cluster-management")  # the operator stays

    def test_uninstall_refuses_while_a_cluster_is_accepted(self, lab, clusters):
        tasks = [
            {"name": "accept member1", "multicluster.fleet.csr_accept": {
                "engine": "ocm", "kubeconfig": "{{ kubeconfig }}", "clusters": ["member1"], "wait": True, "timeout": 60}},
            {"name": "uninstall", "block": [role("hub_init", hub_init_state="absent")],
             "rescue": [{"ansible.builtin.debug": {"msg": "REFUSED: {{ ansible_failed_result.msg }}"}}]},
        ]
        done = run_playbook([hub_play(*tasks)], inventory=lab.inventory)
        assert done.returncode == 0, done.stdout[-3000:]
        assert ('REFUSED: the hub still has accepted member clusters: member1; detach them first (playbooks/detach.yml) '
                'or set hub_init_force=true') in done.stdout
        hub, _member = clusters
        assert resources.get(hub, CLUSTER_MANAGER, "cluster-manager") is not None

    def test_uninstall_removes_what_the_roles_installed(self, lab, clusters, member_crd_before):
        member_play = {"name": "member", "hosts": "member1", "gather_facts": False,
                       "vars": dict(MEMBER_OPTIONS, fleet_engine="ocm", agent_install_state="absent",
                                    agent_install_hub={"kubeconfig": lab.clusters["hub"]["kubeconfig"], "context": "hub"}),
                       "roles": ["multicluster.fleet.agent_install"]}
        done = run_playbook([member_play, hub_play(role("hub_init", hub_init_state="absent"))], inventory=lab.inventory)
        assert done.returncode == 0, done.stdout[-3000:]
        hub, member = clusters
        assert resources.get(hub, CLUSTER_MANAGER, "cluster-manager") is None
        for name in ("open-cluster-management", "open-cluster-management-hub"):
            assert resources.get(hub, resources.NAMESPACE, name) is None
        assert resources.get(hub, resources.CLUSTER_ROLE, "cluster-manager") is None
        assert resources.get(hub, resources.CRD, "clustermanagers.operator.open-cluster-management.io") is not None  # the lab's
        for name in ("open-cluster-management", "open-cluster-management-agent"):
            assert resources.get(member, resources.NAMESPACE, name) is None
        crd = resources.get(member, resources.CRD, "klusterlets.operator.open-cluster-management.io")
        assert (crd is not None) is member_crd_before  # removed when the role created it
        assert resources.get(member, resources.CLUSTER_ROLE_BINDING, "klusterlet") is None
