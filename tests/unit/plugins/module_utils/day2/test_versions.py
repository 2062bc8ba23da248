"""Versions: parsing, image tags, the skew rule, the image settings, upgrade batches, and the certificate settings of
the agents (Karmada rotation flags and fingerprint annotation, OCM client certificate lifetime)."""

import types

import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import versions
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import registrar
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

from fake_ca import FakeCA
from conftest import FakeCluster
import register_fakes


@pytest.mark.parametrize("text, parsed", [
    ("v1.3.1", (1, 3, 1)),
    ("1.18.2", (1, 18, 2)),
    ("v1.18", (1, 18, 0)),
    ("v1.19.0-rc.0", (1, 19, 0)),
    ("docker.io/karmada/karmada-agent:v1.18.2", (1, 18, 2)),
    ("registry.local:5000/ocm/registration:v1.3.1@sha256:abc", (1, 3, 1)),
    ("quay.io/open-cluster-management/registration:latest", None),
    ("registry.local:5000/ocm/registration", None),
    ("", None),
    (None, None),
])
def test_parse(text, parsed):
    assert versions.parse(text) == parsed


def test_image_tag_and_release():
    assert versions.image_tag("registry.local:5000/karmada-agent") is None
    assert versions.image_tag("karmada-agent:v1.18.2@sha256:00") == "v1.18.2"
    assert versions.release("1.3.1") == "v1.3.1"
    assert versions.release("latest") is None


@pytest.mark.parametrize("agent, hub", [
    ("v1.18.2", "v1.18.0"),  # a newer patch release of the hub's minor release is fine
    ("v1.17.0", "v1.18.2"),  # one minor release behind
    ("v1.18.2", None),  # no hub version: nothing compared
    ("latest", "v1.18.2"),
])
def test_skew_fine(agent, hub):
    assert versions.skew(agent, hub) is None


def test_skew_refuses_a_newer_agent():
    with pytest.raises(FleetError, match=r"agent version v1.19.0 is newer than the hub's v1.18.2.*1.18 or older"):
        versions.skew("docker.io/karmada/karmada-agent:v1.19.0", "v1.18.2")
    with pytest.raises(FleetError, match="newer than the hub's"):
        versions.skew("v2.0.0", "v1.18.2")


def test_skew_warns_more_than_one_minor_behind():
    assert versions.skew("v1.16.3", "1.18.2") == ("agent version v1.16.3 is 2 minor releases behind the hub's v1.18.2: "
                                                  "upgrade the agent (at most 1 minor release behind is supported)")
    assert "a major release behind" in versions.skew("v0.9.0", "v1.0.0")


def test_outdated():
    assert versions.outdated("v1.0.0", "1.3.1")
    assert versions.outdated("v1.3.0", "v1.3.1")
    assert not versions.outdated("v1.3.1", "v1.3.1")
    assert not versions.outdated(None, "v1.3.1")
    assert not versions.outdated("v1.3.1", None)


def _reg(**values):
    fields = dict(agent_image=None, deploy_agent=False, klusterlet_spec=None, hub_version=None)
    fields.update(values)
    return types.SimpleNamespace(**fields)


def test_check_agent_karmada_uses_the_declared_hub_version():
    engine = engines.get("karmada")
    reg = _reg(agent_image="docker.io/karmada/karmada-agent:v1.19.0", deploy_agent=True, hub_version="v1.18.2")
    with pytest.raises(FleetError, match="newer than the hub's"):
        versions.check_agent(engine, reg, FakeCluster())
    assert versions.check_agent(engine, _reg(agent_image=reg.agent_image, hub_version="v1.18.2"), None) is None  # no agent


def test_check_agent_ocm_reads_the_cluster_manager():
    engine = engines.get("ocm")
    hub = FakeCluster()
    hub.add(ocm.CLUSTER_MANAGER, {"metadata": {"name": "cluster-manager"},
                                  "spec": {"registrationImagePullSpec": "quay.io/open-cluster-management/registration:v1.3.1"}})
    old = _reg(klusterlet_spec={"registrationImagePullSpec": "quay.io/open-cluster-management/registration:v1.0.0"},
               hub_version="v1.0.0")
    assert "3 minor releases behind the hub's v1.3.1" in versions.check_agent(engine, old, hub)  # read wins over declared
    assert versions.check_agent(engine, old, None) is None  # declared: same release
    newer = _reg(klusterlet_spec={"registrationImagePullSpec": "quay.io/open-cluster-management/registration:v1.4.0"})
    with pytest.raises(FleetError, match="v1.4.0 is newer than the hub's v1.3.1"):
        versions.check_agent(engine, newer, hub)
    # check mode previews an upgrade whose hub part is only planned: a newer declared release counts, never an older one
    newer.hub_version = "v1.4.0"
    with pytest.raises(FleetError, match="v1.4.0 is newer than the hub's v1.3.1"):
        versions.check_agent(engine, newer, hub)
    assert versions.check_agent(engine, newer, hub, check_mode=True) is None
    assert "3 minor releases behind the hub's v1.3.1" in versions.check_agent(engine, old, hub, check_mode=True)


def test_karmada_agent_objects_with_cert_rotation_and_fingerprint():
    rotating = register_fakes.reg(cluster_name="m1", enable_cert_rotation=True, cert_rotation_checking_interval="10m",
                                  cert_rotation_remaining_time_threshold=0.3)
    deployment = karmada.agent_objects(rotating, "https://m1:6443", certificate_sha256="ab12")[-1]
    template = deployment["spec"]["template"]
    command = template["spec"]["containers"][0]["command"]
    assert "--controllers=*,certRotation" in command
    assert command[-2:] == ["--cert-rotation-checking-interval=10m", "--cert-rotation-remaining-time-threshold=0.3"]
    assert template["metadata"]["annotations"] == {karmada.CERTIFICATE_ANNOTATION: "ab12"}
    plain = karmada.agent_objects(register_fakes.reg(cluster_name="m1"), "https://m1:6443")[-1]["spec"]["template"]
    assert "--controllers=*" in plain["spec"]["containers"][0]["command"] and "annotations" not in plain["metadata"]


def test_cert_rotation_settings_are_checked():
    assert registrar.cert_rotation({"cert_rotation_checking_interval": "1h30m",
                                    "cert_rotation_remaining_time_threshold": 0.5}) == ("1h30m", 0.5)
    assert registrar.cert_rotation({}) == ("5m", 0.2)
    with pytest.raises(FleetError, match="Go duration"):
        registrar.cert_rotation({"cert_rotation_checking_interval": "5 minutes"})
    with pytest.raises(FleetError, match="between 0 and 1"):
        registrar.cert_rotation({"cert_rotation_remaining_time_threshold": 1.0})


def test_klusterlet_client_cert_expiration():
    spec = ocm.klusterlet("c1", "https://c1", ocm.Placement("c1"), fields={"registrationConfiguration": {"featureGates": []}},
                          client_cert_expiration_seconds=86400)["spec"]
    assert spec["registrationConfiguration"] == {"featureGates": [], "registrationDriver": {"authType": "csr"},
                                                 "clientCertExpirationSeconds": 86400}
    assert "clientCertExpirationSeconds" not in ocm.klusterlet("c1", "https://c1", ocm.Placement("c1"))["spec"][
        "registrationConfiguration"]


def test_certificate_options_are_engine_specific():
    with pytest.raises(FleetError, match="the ocm options [(]client_cert_expiration_seconds[)] apply to engine ocm only"):
        register_fakes.reg("karmada", ocm={"client_cert_expiration_seconds": 3600})
    with pytest.raises(FleetError, match="the karmada options [(]enable_cert_rotation[)] apply to engine karmada only"):
        register_fakes.reg("ocm", karmada={"enable_cert_rotation": True})


def test_fingerprint():
    ca = FakeCA()
    assert pki.fingerprint(pki.load_certificates(ca.pem)[0]) == pki.fingerprint(ca.cert) and len(pki.fingerprint(ca.cert)) == 64


# --- what is written into image references (issue 46, item 2) -------------------------------------------------------

@pytest.mark.parametrize("value", ["v1.18.2", "1.3.2", "v1.19.0-rc.0", "1.4.0-alpha.1", "v10.0.0-rc-1"])
def test_a_release_passes(value):
    assert versions.release_problem("karmada_version", value) == ""


@pytest.mark.parametrize("value", ["../../evil", "latest", "", "v1.19.0;id", "v1.19.0 ", " v1.19.0", "1.19", "v1",
                                   "v1.19.0\n", "v1.19.0+build", "v1.19.0-", "v1.19.0-rc..0", 1.19, None, ["v1.18.2"]])
def test_anything_else_is_refused_naming_the_variable(value):
    problem = versions.release_problem("karmada_version", value)
    assert problem.startswith("karmada_version must name a release, vX.Y.Z or X.Y.Z"), problem
    assert repr(value) in problem


@pytest.mark.parametrize("value", ["quay.io/open-cluster-management", "registry.local:5000/ocm", "localhost:5000",
                                   "10.0.0.7:5000/mirror/ocm", "registry.example.com", "my_org/sub-path", "docker.io"])
def test_a_registry_passes(value):
    assert versions.registry_problem("hub_init_ocm_registry", value) == ""


@pytest.mark.parametrize("value", ["evil.example.com/ocm;x", "", "quay.io/Open-Cluster-Management", "quay.io/ocm/",
                                   "/ocm", "quay.io//ocm", "quay.io/ocm:v1", "quay.io/ocm\n", "https://quay.io/ocm",
                                   "quay.io/ocm@sha256:0", "a" * 300, None])
def test_a_registry_that_is_no_image_prefix_is_refused(value):
    problem = versions.registry_problem("hub_init_ocm_registry", value)
    assert problem.startswith("hub_init_ocm_registry must be an image registry and path without tag"), problem


def test_image_names_tags_and_references():
    assert versions.repository_problem("agent_install_karmada_image", "docker.io/karmada/karmada-agent") == ""
    assert "without tag" in versions.repository_problem("agent_install_karmada_image", "docker.io/karmada/karmada-agent:v1")
    assert versions.tag_problem("hub_init_ocm_tag", "v1.3.1") == "" and versions.tag_problem("x_tag", "latest") == ""
    assert versions.tag_problem("hub_init_ocm_tag", "v../../evil").startswith("hub_init_ocm_tag must be an image tag")
    assert versions.tag_problem("hub_init_ocm_tag", "-v1") and versions.tag_problem("hub_init_ocm_tag", "v" * 129)
    for good in ("docker.io/karmada/karmada-agent:v1.18.2", "registry.local:5000/karmada-agent",
                 "quay.io/ocm/registration:v1.3.1@sha256:" + "a" * 64, "karmada-agent@sha256:" + "0" * 64):
        assert versions.image_problem("agent_image", good) == "", good
    for bad in ("docker.io/karmada/karmada-agent:v../../evil", "docker.io/karmada/karmada-agent:v1.19.0;id",
                "docker.io/karmada/karmada-agent:", "x@sha256:zz", "", "evil.example.com/ocm;x/registration:v1.3.1"):
        assert versions.image_problem("agent_image", bad).startswith("agent_image must be an image reference"), bad


def test_settings_by_the_end_of_their_names_the_first_problem_wins():
    assert versions.settings_problem({"ocm_version": "1.3.2", "hub_init_ocm_registry": "quay.io/ocm"}) == ""
    problem = versions.settings_problem({"ocm_version": "1.3.2", "hub_init_ocm_registry": "evil.example.com/ocm;x",
                                         "agent_install_ocm_tag": "bad tag"})
    assert problem.startswith("hub_init_ocm_registry must be") and "'evil.example.com/ocm;x'" in problem
    with pytest.raises(FleetError, match="fleet_wait_timeout is no image setting"):
        versions.setting_problem("fleet_wait_timeout", 5)


def test_the_skew_rule_says_when_it_cannot_apply():
    """An agent image whose tag names no release is not compared, and the run says so (no silent skip)."""
    engine = engines.get("karmada")
    reg = types.SimpleNamespace(agent_image="docker.io/karmada/karmada-agent:latest", deploy_agent=True, hub_version="v1.18.2")
    warning = versions.check_agent(engine, reg, None)
    assert warning.startswith("the version skew rule is not applied: the agent image "
                              "docker.io/karmada/karmada-agent:latest names no release (its tag is latest)"), warning


# --- the downgrade rule (issue 46, item 6) --------------------------------------------------------------------------

@pytest.mark.parametrize("running, wanted, found", [
    ("docker.io/karmada/karmada-agent:v1.19.0", "docker.io/karmada/karmada-agent:v1.18.2", ("v1.19.0", "v1.18.2")),
    ("quay.io/open-cluster-management/registration:v1.3.2", "v1.3.1", ("v1.3.2", "v1.3.1")),
    ("quay.io/ocm/registration:v1.4.0", "1.3.1", ("v1.4.0", "v1.3.1")),
    ("v1.19.0", "v1.19.0", None), ("v1.18.2", "v1.19.0", None), ("v1.19.0-rc.0", "v1.19.0", None),
    ("quay.io/ocm/registration:latest", "v1.3.1", None), ("", "v1.3.1", None), (None, "v1.3.1", None),
])
def test_downgrade(running, wanted, found):
    assert versions.downgrade(running, wanted) == found


class _Runtime:
    label = "cluster 'member2'"


def _karmada_reg(image, allow=False):
    return types.SimpleNamespace(agent_image=image, deploy_agent=True, allow_downgrade=allow, cluster_name="member2")


def test_check_downgrade_refuses_an_older_agent_unless_allowed(monkeypatch):
    engine = engines.get("karmada")
    monkeypatch.setattr(engine, "running_agent_image", lambda reg, member, runtime: "docker.io/karmada/karmada-agent:v1.19.0",
                        raising=False)
    with pytest.raises(FleetError) as refused:
        versions.check_downgrade(engine, _karmada_reg("docker.io/karmada/karmada-agent:v1.18.2"), None, _Runtime())
    assert refused.value.msg.startswith(
        "refusing to downgrade the agent from v1.19.0 to v1.18.2 (cluster member2 runs "
        "docker.io/karmada/karmada-agent:v1.19.0 on cluster 'member2'"), refused.value.msg
    assert "fleet_allow_downgrade=true" in refused.value.msg
    assert refused.value.details == {"downgrade": {"from": "v1.19.0", "to": "v1.18.2"}}
    assert versions.check_downgrade(engine, _karmada_reg("docker.io/karmada/karmada-agent:v1.18.2", allow=True), None,
                                    _Runtime()) == {"from": "v1.19.0", "to": "v1.18.2"}
    assert versions.check_downgrade(engine, _karmada_reg("docker.io/karmada/karmada-agent:v1.19.1"), None, _Runtime()) is None


# --- upgrade.yml's batches (issue 46, item 8) -----------------------------------------------------------------------

@pytest.mark.parametrize("batches", [None, 1, "5", "25%", [1, 5, "25%"], ["100%"], (2,)])
def test_valid_batches(batches):
    assert versions.upgrade_batches_problem(batches) == ""


@pytest.mark.parametrize("batches, why", [
    ([0], "0 is not a batch size"), (-1, "-1 is not a batch size"), ([1, 0], "0 is not a batch size"),
    ("abc", "'abc' is neither a number nor a percentage"), ([], "the list is empty"), ("0%", "'0%' is not a batch size"),
    ("150%", "'150%' is not a batch size"), ([True], "True is neither"), ([1.5], "1.5 is neither"),
    ("[1, 2]", "'[1, 2]' is neither"), ({"a": 1}, "{'a': 1} is neither"),
])
def test_invalid_batches_are_refused_naming_the_variable(batches, why):
    problem = versions.upgrade_batches_problem(batches)
    assert problem.startswith("fleet_upgrade_batches must be a batch size or a list of them"), problem
    assert why in problem, problem


def test_serial_is_never_the_whole_fleet_by_mistake():
    assert versions.upgrade_serial(None) == [1, 5, "25%"]
    assert versions.upgrade_serial([2, "50%"]) == [2, "50%"] and versions.upgrade_serial("25%") == ["25%"]
    for invalid in ([0], -1, [1, 0], "abc", []):
        assert versions.upgrade_serial(invalid) == [1]
