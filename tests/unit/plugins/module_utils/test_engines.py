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
