"""Re-bootstrap: the hub is reached at a new address (docs/hub_changes.md), for each engine.

site.yml registers the lab's fleet with the hub at ``https://127.0.0.1:<port>``; then the inventory's ``hub_apiserver``
becomes ``https://localhost:<port>`` (the lab's serving certificates name both). Check mode lists the pull members it
would touch and writes nothing; the real run rewrites each pull member's hub kubeconfigs and the members keep their
registration (the same hub object, the same cluster id); a re-run changes nothing. Karmada keeps the agent's certificate
(no new CSR) and rolls the karmada-agent, which reads its kubeconfig only at start; OCM's klusterlet bootstraps again
with the new bootstrap kubeconfig (a new CSR, approved by the run), as its operator's bootstrap controller makes it. The
hub's CA cannot be changed on the running lab: the unit tests cover it. detach.yml returns the lab to where it was.
"""

import base64

import pytest
import yaml

from labstate import changes, snapshot
from playbooks import check_play, hub_csrs, play, write_inventory

import sim_karmada_agent

HUB_CHANGE = "its hub kubeconfigs for the hub's new"  # the summary's line per member that follows the hub
KARMADA_SECRET = "/api/v1/namespaces/karmada-system/secrets/karmada-kubeconfig"
OCM_SECRET = "/api/v1/namespaces/open-cluster-management-agent/secrets/hub-kubeconfig-secret"
DEPLOYMENT = "/apis/apps/v1/namespaces/karmada-system/deployments/karmada-agent"
CLUSTERS = {"karmada": "/apis/cluster.karmada.io/v1alpha1/clusters/%s",
            "ocm": "/apis/cluster.open-cluster-management.io/v1/managedclusters/%s"}


@pytest.fixture(scope="module")
def starting_state(lab, simulations):
    return snapshot(lab)


def moved_inventory(lab, directory, engine):
    """The lab inventory with the hub reached at ``localhost`` instead of ``127.0.0.1``; returns (path, new URL)."""
    path = write_inventory(lab, directory, engine)
    with open(path) as handle:
        inventory = yaml.safe_load(handle)
    hub_vars = inventory["all"]["children"]["hub"]["hosts"]["hub-cluster"]
    assert "://127.0.0.1:" in hub_vars["hub_apiserver"]
    hub_vars["hub_apiserver"] = hub_vars["hub_apiserver"].replace("://127.0.0.1:", "://localhost:")
    moved = directory / ("%s-moved.yml" % engine)
    moved.write_text(yaml.safe_dump(inventory))
    return str(moved), hub_vars["hub_apiserver"]


def server_of(lab, member, secret_path):
    """The hub URL of the kubeconfig in Secret ``secret_path`` of ``member``."""
    secret = lab.api(member).get(secret_path)
    key = "karmada-kubeconfig" if "karmada" in secret_path else "kubeconfig"
    return yaml.safe_load(base64.b64decode(secret["data"][key]))["clusters"][0]["cluster"]["server"]


def certificate_of(lab):
    """The client certificate of member2's karmada-agent kubeconfig."""
    secret = lab.api("member2").get(KARMADA_SECRET)
    return yaml.safe_load(base64.b64decode(secret["data"]["karmada-kubeconfig"]))["users"][0]["user"]["client-certificate-data"]


def hub_object(lab, engine, member):
    cluster = lab.api(lab.hub).get(CLUSTERS[engine] % member)
    return cluster["metadata"]["uid"], (cluster.get("spec") or {}).get("id")


def rebootstrap(lab, directory, engine, pull_members, registered=lambda: None):
    """site.yml on the original address (then ``registered()``), then on the new one, check mode first; a re-run. Returns
    the new URL and the hub's CSRs before the real run on it."""
    done, recap = play("site.yml", write_inventory(lab, directory, engine))
    assert done.returncode == 0, done.stdout[-4000:]
    registered()
    before = dict((member, hub_object(lab, engine, member)) for member in pull_members)
    inventory, url = moved_inventory(lab, directory, engine)

    done, recap = check_play(lab, "site.yml", inventory)
    for member in pull_members:
        assert "%s: would rewrite %s address" % (member, HUB_CHANGE) in done.stdout, done.stdout[-4000:]

    csrs = hub_csrs(lab)
    done, recap = play("site.yml", inventory)
    assert done.returncode == 0, done.stdout[-4000:]
    for member in pull_members:
        assert "%s: rewrote %s address" % (member, HUB_CHANGE) in done.stdout, done.stdout[-4000:]
        assert recap[member]["changed"] > 0 and recap[member]["failed"] == 0, recap
        assert hub_object(lab, engine, member) == before[member]  # the same registration, not a new one
    again, recap = play("site.yml", inventory)
    assert again.returncode == 0, again.stdout[-4000:]
    assert all(r["changed"] == 0 for r in recap.values()), recap
    assert HUB_CHANGE not in again.stdout, again.stdout[-4000:]
    return url, csrs


class TestKarmada:
    def test_a_moved_hub_keeps_the_certificate_and_rolls_the_agent(self, lab, simulations, starting_state, tmp_path_factory):
        agent = next(s for s in simulations if isinstance(s, sim_karmada_agent.SimulatedKarmadaAgent)
                     and s.info["name"] == "member2")
        before = {}

        def registered():
            before.update(generation=lab.api("member2").get(DEPLOYMENT)["metadata"]["generation"], server=agent.hub_server,
                          certificate=certificate_of(lab))
        url, csrs = rebootstrap(lab, tmp_path_factory.mktemp("karmada"), "karmada", ["member2"], registered)
        assert before["server"] != url and server_of(lab, "member2", KARMADA_SECRET) == url
        assert hub_csrs(lab) == csrs and certificate_of(lab) == before["certificate"]  # no new CSR, the same certificate
        assert lab.api("member2").get(DEPLOYMENT)["metadata"]["generation"] > before["generation"]  # a new pod
        assert agent.hub_server == url  # which read the new kubeconfig
        assert lab.api(lab.hub).get(CLUSTERS["karmada"] % "member2")["status"]["conditions"][0]["status"] == "True"

    def test_detach_restores_the_starting_state(self, lab, simulations, starting_state, tmp_path_factory):
        done, recap = play("detach.yml", write_inventory(lab, tmp_path_factory.mktemp("karmada"), "karmada"))
        assert done.returncode == 0, done.stdout[-4000:]
        assert changes(starting_state, snapshot(lab)) == {}


class TestOcm:
    def test_a_moved_hub_makes_the_klusterlets_bootstrap_again(self, lab, simulations, starting_state, tmp_path_factory):
        url, csrs = rebootstrap(lab, tmp_path_factory.mktemp("ocm"), "ocm", ["member1", "member2"])
        hub = lab.api(lab.hub)
        for member in ("member1", "member2"):
            assert server_of(lab, member, OCM_SECRET) == url
            cluster = hub.get(CLUSTERS["ocm"] % member)
            assert cluster["spec"]["hubAcceptsClient"] is True
            assert {c["type"]: c["status"] for c in cluster["status"]["conditions"]}["ManagedClusterConditionAvailable"] == "True"
        # OCM's klusterlet asks for a new certificate with the new bootstrap kubeconfig: one new CSR per member, approved
        new = [hub.get("/apis/certificates.k8s.io/v1/certificatesigningrequests/%s" % name) for name in hub_csrs(lab) - csrs]
        assert sorted(c["metadata"]["labels"]["open-cluster-management.io/cluster-name"] for c in new) == ["member1", "member2"]
        assert all(c["status"].get("certificate") for c in new)

    def test_detach_restores_the_starting_state(self, lab, simulations, starting_state, tmp_path_factory):
        done, recap = play("detach.yml", write_inventory(lab, tmp_path_factory.mktemp("ocm"), "ocm"))
        assert done.returncode == 0, done.stdout[-4000:]
        assert changes(starting_state, snapshot(lab)) == {}
