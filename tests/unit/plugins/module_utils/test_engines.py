import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import engines
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


def test_an_engine_takes_its_own_scoped_options_only():
    engines.check_scoped_options("ocm", {"ocm": {"cordon_effect": "NoSelectIfNew"}, "karmada": None})
    engines.check_scoped_options("karmada", {"ocm": None, "cordon": True})
    with pytest.raises(FleetError, match="^the ocm options [(]cordon_effect[)] apply to engine ocm only; engine is karmada$"):
        engines.check_scoped_options("karmada", {"ocm": {"cordon_effect": "NoSelectIfNew", "other": None}})


def test_an_unknown_engine_is_refused():
    with pytest.raises(FleetError, match="engine must be one of karmada, ocm, got 'kcp'"):
        engines.get("kcp")


SPEC = dict(
    engine=dict(type="str"),
    karmada=dict(type="dict", options=dict(replicas=dict(type="int", default=1), zones=dict(type="list"))),
    ocm=dict(type="dict", options=dict(driver=dict(type="str", default="csr"), server=dict(type="str"), ca=dict(type="str"),
                                       mode=dict(type="str"), hosting=dict(type="dict")),
             required_if=[("driver", "grpc", ("server", "ca"))], required_by={"hosting": "mode"},
             mutually_exclusive=[("server", "hosting")]),
    replicas=dict(type="int", removed_in_version="3.0.0"),  # the deprecated flat names of two suboptions
    driver=dict(type="str", removed_in_version="3.0.0"),
)


def scoped(engine, **params):
    return engines.scoped_options(engine, SPEC, dict(dict((name, None) for name in SPEC), engine=engine, **params))


def test_scoped_options_are_whole_dicts_with_their_defaults():
    assert scoped("karmada") == {"engine": "karmada", "karmada": {"replicas": 1, "zones": None},
                                 "ocm": {"driver": "csr", "server": None, "ca": None, "mode": None, "hosting": None}}
    assert scoped("karmada", karmada={"replicas": 3, "zones": ["z1"]})["karmada"] == {"replicas": 3, "zones": ["z1"]}


def test_a_deprecated_flat_name_is_folded_into_its_engines_dict():
    folded = scoped("karmada", replicas=2, karmada={"replicas": 1, "zones": ["z1"]})  # 1: the default, as if not given
    assert folded["karmada"] == {"replicas": 2, "zones": ["z1"]} and "replicas" not in folded and "driver" not in folded
    assert scoped("karmada", replicas=2, karmada={"replicas": 2, "zones": None})["karmada"]["replicas"] == 2
    with pytest.raises(FleetError, match="^replicas and karmada.replicas are one setting, given different values [(]2 and 3[)]: "
                                         "give karmada.replicas only, replicas is deprecated$"):
        scoped("karmada", replicas=2, karmada={"replicas": 3, "zones": None})


def test_folded_values_keep_the_relations_of_the_suboptions_spec():
    """ansible-core checks the relations of what is given nested (a null counts as given); the fold checks them again on
    the whole dict."""
    with pytest.raises(FleetError, match="^ocm.driver is grpc but ocm.ca missing$"):
        scoped("ocm", driver="grpc", ocm={"server": "grpc.hub:443", "driver": "csr"})
    assert scoped("ocm", driver="grpc", ocm={"server": "s", "ca": "c"})["ocm"]["driver"] == "grpc"
    with pytest.raises(FleetError, match="^ocm.driver is grpc but ocm.server, ocm.ca missing$"):
        scoped("ocm", ocm={"driver": "grpc", "server": None})
    with pytest.raises(FleetError, match="^ocm.hosting needs ocm.mode$"):
        engines._check_relations("ocm", SPEC["ocm"], {"hosting": {"host": "h"}})
    with pytest.raises(FleetError, match="^ocm.server, ocm.hosting are mutually exclusive$"):
        engines._check_relations("ocm", SPEC["ocm"], {"server": "s", "hosting": {"host": "h"}, "mode": "m"})


def test_options_of_another_engine_are_refused_unless_they_are_its_defaults():
    with pytest.raises(FleetError, match="^the karmada options [(]replicas[)] apply to engine karmada only; engine is ocm$"):
        scoped("ocm", replicas=2)
    with pytest.raises(FleetError, match="^the ocm options [(]ca, driver, server[)] apply to engine ocm only; engine is karmada$"):
        scoped("karmada", ocm={"driver": "grpc", "server": "s", "ca": "c"})
    # a value that says nothing for the other engine - the default - is no option of it (as before the options were scoped)
    assert scoped("ocm", replicas=1, karmada={"replicas": 1, "zones": None})["karmada"] == {"replicas": 1, "zones": None}
