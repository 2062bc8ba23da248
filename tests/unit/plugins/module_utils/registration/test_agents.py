"""A member's agent as cluster_info reads it (agents.py): its version, rollout and certificate, for both engines."""

import base64

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import agents

from fake_ca import FakeCA
from conftest import FakeCluster


def _secret(name, namespace, data):
    return {"metadata": {"name": name, "namespace": namespace},
            "data": dict((k, base64.b64encode(v.encode()).decode()) for k, v in data.items())}


def _deployment(name, namespace, image):
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"template": {"spec": {"containers": [{"name": name, "image": image}]}}}}


def test_karmada_agent_report():
    ca = FakeCA()
    cert, key = ca.client(karmada.agent_user("member2"), [karmada.AGENTS_GROUP], days=30)
    member = FakeCluster("member2")
    member.add(resources.DEPLOYMENT, _deployment("karmada-agent", "karmada-system", "docker.io/karmada/karmada-agent:v1.18.2"))
    kubeconfig = karmada.agent_kubeconfig("https://hub:6443", ca.pem, "member2", cert, key)
    member.add(resources.SECRET, _secret("karmada-kubeconfig", "karmada-system", {"karmada-kubeconfig": kubeconfig}))
    report = engines.get("karmada").read_agent(member)
    expected = pki.rfc3339(pki.not_after(pki.load_certificates(cert)[0]))
    assert report == {"image": "docker.io/karmada/karmada-agent:v1.18.2", "version": "v1.18.2",
                      "certificate_expiration": expected, "rolled_out": False, "problem": None}  # no status yet


def test_ocm_agent_report_singleton_and_missing():
    ca = FakeCA()
    cert, dummy = ca.client(ocm.agent_common_name("c1", "abc"), [ocm.agent_organization("c1")])
    member = FakeCluster("c1")
    assert engines.get("ocm").read_agent(member)["problem"].startswith("no Klusterlet klusterlet on the member")
    member.add(ocm.KLUSTERLET, {"metadata": {"name": "klusterlet"}, "spec": {"deployOption": {"mode": "Singleton"}}})
    member.add(resources.DEPLOYMENT, _deployment("klusterlet-agent", ocm.AGENT_NAMESPACE,
                                                 "quay.io/open-cluster-management/registration-operator:v1.3.1"))
    report = engines.get("ocm").read_agent(member)
    assert report["version"] == "v1.3.1" and report["certificate_expiration"] is None
    assert report["problem"] == "no agent certificate: no Secret open-cluster-management-agent/hub-kubeconfig-secret on the member"
    member.add(resources.SECRET, _secret(ocm.HUB_KUBECONFIG_SECRET, ocm.AGENT_NAMESPACE, {"tls.crt": cert}))
    report = engines.get("ocm").read_agent(member)
    assert report["problem"] is None and report["certificate_expiration"].endswith("Z")


def _rolled(deployment, generation=1, observed=1, replicas=1, updated=1, available=1, total=None):
    deployment["metadata"]["generation"] = generation
    deployment["spec"]["replicas"] = replicas
    deployment["status"] = {"observedGeneration": observed, "updatedReplicas": updated, "availableReplicas": available,
                            "replicas": replicas if total is None else total}
    return deployment


@pytest.mark.parametrize("settings, expected", [
    ({}, True),
    ({"generation": 2, "observed": 1}, False),  # the controller has not seen the new template yet
    ({"replicas": 2, "updated": 1, "available": 2}, False),  # one replica still runs the old template
    ({"available": 0}, False),  # the new pods do not come up (an image that cannot be pulled)
    ({"total": 2}, False),  # an old pod still terminating
])
def test_rolled_out(settings, expected):
    assert agents.rolled_out(_rolled(_deployment("a", "ns", "i:v1"), **settings)) is expected
    assert agents.rolled_out(None) is False


def test_ocm_agent_rolled_out_only_with_the_klusterlet_image():
    member = FakeCluster("c1")
    member.add(ocm.KLUSTERLET, {"metadata": {"name": "klusterlet"},
                                "spec": {"registrationImagePullSpec": "quay.io/open-cluster-management/registration:v1.4.0"}})
    old = _rolled(_deployment("klusterlet-registration-agent", ocm.AGENT_NAMESPACE,
                              "quay.io/open-cluster-management/registration:v1.3.1"))
    member.add(resources.DEPLOYMENT, old)
    report = engines.get("ocm").read_agent(member)
    assert (report["version"], report["rolled_out"]) == ("v1.3.1", False)  # the operator has not updated the agent yet
    member.add(resources.DEPLOYMENT, _rolled(_deployment("klusterlet-registration-agent", ocm.AGENT_NAMESPACE,
                                                         "quay.io/open-cluster-management/registration:v1.4.0")))
    assert engines.get("ocm").read_agent(member)["rolled_out"] is True
