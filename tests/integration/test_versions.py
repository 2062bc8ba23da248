"""Versions and agent certificates on the lab, both engines: site.yml with the version settings and the certificate
options registers the members; cluster_info with member access and the summary's AGENT column report the agents'
versions (the images the simulated operators and agents were given) and certificate expiry, the summary warns about
certificates within fleet_cert_warning_days; a Karmada certificate renewal rolls the agent Deployment; the version skew
rule refuses a newer agent (OCM: against the release the hub's ClusterManager shows) and warns about one far behind.
detach.yml removes everything again. The lab's simulations play the operators, agents and hub controllers.
"""

import base64
import json
import os

import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap
from runner import ROOT, recap_of, run_module, run_playbook, summary

DEPLOYMENT = "/apis/apps/v1/namespaces/karmada-system/deployments/karmada-agent"
KLUSTERLET = "/apis/operator.open-cluster-management.io/v1/klusterlets/klusterlet"
AGENT = {"deploy_agent": True, "enable_cert_rotation": True, "cert_rotation_checking_interval": "10m"}  # what site.yml set


def auth(lab, name):
    return {"kubeconfig": lab.clusters[name]["kubeconfig"], "context": name}


def inventory(lab, directory, engine, **variables):
    with open(lab.inventory) as handle:
        written = yaml.safe_load(handle)
    written["all"]["vars"].update(fleet_engine=engine, **variables)
    path = directory / ("%s.yml" % engine)
    path.write_text(yaml.safe_dump(written))
    return str(path)


def play(name, path, **extra_vars):
    done = run_playbook([{"import_playbook": os.path.join(ROOT, "playbooks", name)}], inventory=path,
                        extra_vars=extra_vars or None)
    assert done.returncode == 0, done.stdout[-4000:]
    return done, recap_of(done.stdout)


def secret_text(lab, member, path, key):
    return base64.b64decode(lab.api(member).get(path)["data"][key]).decode()


def expiration_of(cert_pem):
    return pki.rfc3339(pki.not_after(pki.load_certificates(cert_pem)[0]))


def agent_of(lab, engine, member):
    """cluster_info's ``agent`` of ``member``, read with member access."""
    info = run_module("cluster_info", dict(auth(lab, "hub"), engine=engine, name=member, member=auth(lab, member)))
    assert info["rc"] == 0 and info["changed"] is False, info.get("msg")
    return info["clusters"][0]["agent"]


def join(lab):
    token = run_module("bootstrap_token", dict(auth(lab, "hub"), engine="karmada"))
    assert token["rc"] == 0, token.get("msg")
    return dict(hub_apiserver=token["hub_apiserver"], token=token["token"], ca_cert_hashes=token["ca_cert_hashes"])


def karmada_agent_certificate(lab):
    kubeconfig = secret_text(lab, "member2", "/api/v1/namespaces/karmada-system/secrets/karmada-kubeconfig",
                             "karmada-kubeconfig")
    return pki.read_kubeconfig(kubeconfig)["client_cert_pem"]


class TestKarmada:
    def test_site_turns_on_cert_rotation_and_reports_the_agent(self, lab, simulations, tmp_path_factory):
        path = inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada", karmada_version="v1.18.2",
                         agent_install_karmada_enable_cert_rotation=True,
                         agent_install_karmada_cert_rotation_checking_interval="10m")
        done, recap = play("site.yml", path, fleet_cert_warning_days=400)
        rows = summary(done.stdout)
        assert (rows["member1"]["AGENT"], rows["member2"]["AGENT"]) == ("-", "v1.18.2"), rows  # Push: no agent
        cert = karmada_agent_certificate(lab)
        assert "WARNING: member2: the agent certificate expires at %s" % expiration_of(cert) in done.stdout
        deployment = lab.api("member2").get(DEPLOYMENT)
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == "docker.io/karmada/karmada-agent:v1.18.2"
        assert {"--controllers=*,certRotation", "--cert-rotation-checking-interval=10m",
                "--cert-rotation-remaining-time-threshold=0.2"} <= set(container["command"])
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations[karmada.CERTIFICATE_ANNOTATION] == pki.fingerprint(pki.load_certificates(cert)[0])
        assert set(annotations) == {karmada.CERTIFICATE_ANNOTATION, karmada.HUB_ANNOTATION}
        assert agent_of(lab, "karmada", "member2") == {"image": container["image"], "version": "v1.18.2",
                                                       "certificate_expiration": expiration_of(cert), "rolled_out": True,
                                                       "problem": None}
        assert agent_of(lab, "karmada", "member1") is None
        again, recap = play("site.yml", path)
        assert all(r["changed"] == 0 for r in recap.values()), recap

    def test_a_renewal_rolls_the_agent(self, lab, simulations):
        before = lab.api("member2").get(DEPLOYMENT)
        result = run_module("cluster_register", dict(
            auth(lab, "member2"), engine="karmada", cluster_name="member2", hub=auth(lab, "hub"), renew_before=400,
            hub_version="v1.18.2", karmada=dict(AGENT, csr_wait_timeout=60), **join(lab)))
        assert result["rc"] == 0, result.get("msg")
        assert result["changed"] and "within the renewal window" in result["reason"]
        assert "member Deployment/karmada-system/karmada-agent: updated" in result["changes"]
        after = lab.api("member2").get(DEPLOYMENT)
        cert = karmada_agent_certificate(lab)
        annotations = after["spec"]["template"]["metadata"]["annotations"]
        assert annotations[karmada.CERTIFICATE_ANNOTATION] == pki.fingerprint(pki.load_certificates(cert)[0]) != \
            before["spec"]["template"]["metadata"]["annotations"][karmada.CERTIFICATE_ANNOTATION]
        assert annotations[karmada.HUB_ANNOTATION] == before["spec"]["template"]["metadata"]["annotations"][karmada.HUB_ANNOTATION]
        assert after["metadata"]["generation"] > before["metadata"]["generation"]  # a new ReplicaSet: the agent restarts
        assert agent_of(lab, "karmada", "member2")["certificate_expiration"] == result["certificate_expiration"]

    def test_the_skew_rule(self, lab, simulations):
        args = dict(auth(lab, "member2"), engine="karmada", cluster_name="member2", hub=auth(lab, "hub"), karmada=AGENT,
                    **join(lab))
        before = lab.api("member2").get(DEPLOYMENT)
        newer = run_module("cluster_register", dict(args, karmada=dict(AGENT, agent_image="docker.io/karmada/karmada-agent:v1.19.0"),
                                                    hub_version="v1.18.2"))
        assert newer["rc"] == 1 and not newer.get("changed")
        assert newer["msg"] == ("agent version v1.19.0 is newer than the hub's v1.18.2: an agent never runs a newer release "
                                "than its hub; upgrade the hub first, or choose agent version 1.18 or older")
        assert lab.api("member2").get(DEPLOYMENT)["metadata"]["generation"] == before["metadata"]["generation"]
        behind = run_module("cluster_register", dict(args, hub_version="v1.20.0"))
        assert behind["rc"] == 0 and behind["changed"] is False, behind.get("msg")
        assert ("agent version v1.18.2 is 2 minor releases behind the hub's v1.20.0: upgrade the agent (at most 1 minor "
                "release behind is supported)") in json.dumps(behind["warnings"])  # structured events in ansible-core 2.19

    def test_detach(self, lab, simulations, tmp_path_factory):
        play("detach.yml", inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada"))
        assert not lab.api("member2").exists(DEPLOYMENT)


class TestOcm:
    def test_site_sets_the_certificate_lifetime_and_reports_the_agents(self, lab, simulations, tmp_path_factory):
        path = inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm", ocm_version="1.3.1",
                         agent_install_ocm_client_cert_expiration_seconds=7200)
        done, recap = play("site.yml", path, fleet_cert_warning_days=400)
        rows = summary(done.stdout)
        for member in ("member1", "member2"):
            assert rows[member]["AGENT"] == "v1.3.1", rows
            klusterlet = lab.api(member).get(KLUSTERLET)
            assert klusterlet["spec"]["registrationConfiguration"]["clientCertExpirationSeconds"] == 7200
            assert klusterlet["spec"]["registrationImagePullSpec"] == "quay.io/open-cluster-management/registration:v1.3.1"
            cert = secret_text(lab, member, "/api/v1/namespaces/open-cluster-management-agent/secrets/hub-kubeconfig-secret",
                               "tls.crt")
            assert agent_of(lab, "ocm", member) == {
                "image": "quay.io/open-cluster-management/registration:v1.3.1", "version": "v1.3.1",
                "certificate_expiration": expiration_of(cert), "rolled_out": True, "problem": None}
            assert "%s: the agent certificate expires at %s" % (member, expiration_of(cert)) in done.stdout
        again, recap = play("site.yml", path)
        assert all(r["changed"] == 0 for r in recap.values()), recap

    def test_a_newer_agent_than_the_cluster_manager_is_refused(self, lab, simulations):
        before = lab.api("member1").get(KLUSTERLET)
        spec = {"registrationImagePullSpec": "quay.io/open-cluster-management/registration:v1.4.0"}
        refused = run_module("cluster_register", dict(
            auth(lab, "member1"), engine="ocm", cluster_name="member1", hub=auth(lab, "hub"), ocm={"klusterlet_spec": spec},
            hub_version="v1.4.0", hub_apiserver=lab.clusters["hub"]["server"], token="abcdef.0123456789abcdef",
            ca_cert_hashes=bootstrap.pins_of_bundle(open(lab.clusters["hub"]["ca_cert"]).read())))
        # the release the hub's ClusterManager shows (v1.3.1) wins over the declared one; refused before anything is read
        assert refused["rc"] == 1 and refused["msg"].startswith("agent version v1.4.0 is newer than the hub's v1.3.1: ")
        assert lab.api("member1").get(KLUSTERLET)["spec"] == before["spec"]

    def test_detach(self, lab, simulations, tmp_path_factory):
        play("detach.yml", inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm"))
        assert not lab.api("member1").exists(KLUSTERLET)
