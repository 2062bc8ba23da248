import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils import engine, engines
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import hub_objects as karmada_hub_objects
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import removal as karmada_removal
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.registration import KarmadaRegistration
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.works import KarmadaWorks
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import hub_objects as ocm_hub_objects
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import removal as ocm_removal
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.registration import OcmRegistration
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.works import OcmWorks


def test_spec_of_is_an_empty_dict_for_no_object_or_no_spec():
    assert engine.spec_of(None) == {} and engine.spec_of({"metadata": {}}) == {} and engine.spec_of({"spec": {"a": 1}}) == {"a": 1}


@pytest.mark.parametrize("name, registration, works, hub_objects, removal", [
    ("karmada", KarmadaRegistration, KarmadaWorks, karmada_hub_objects, karmada_removal),
    ("ocm", OcmRegistration, OcmWorks, ocm_hub_objects, ocm_removal),
])
def test_each_facet_is_a_module_or_class_of_the_engines_package(name, registration, works, hub_objects, removal):
    chosen = engines.get(name)
    assert isinstance(chosen, engine.Engine) and repr(chosen) == "<engine %s>" % name
    assert (chosen.registration, chosen.works, chosen.hub_objects, chosen.removal) == (registration, works, hub_objects, removal)


def test_the_cordon_taint_counts_with_one_of_the_cordon_effects_only():
    class Cordoning(engine.Engine):
        cordon_taint = {"key": "example.com/cordoned", "effect": "NoSelect"}
        cordon_effects = ("NoSelect", "NoSelectIfNew")
    cordoning = Cordoning()
    assert cordoning.is_cordoned([{"key": "example.com/cordoned", "effect": "NoSelectIfNew"}])
    assert not cordoning.is_cordoned([{"key": "example.com/cordoned", "effect": "PreferNoSelect"}])
    assert not cordoning.is_cordoned([{"key": "other", "effect": "NoSelect"}]) and not cordoning.is_cordoned(None)


def test_what_an_engine_must_say_itself_is_not_guessed():
    with pytest.raises(NotImplementedError):
        engine.Engine().validate_cluster_name("m1")
    with pytest.raises(NotImplementedError):
        engine.Engine().registration
