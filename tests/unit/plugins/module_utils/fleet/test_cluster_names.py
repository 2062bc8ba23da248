import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import cluster_names
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


def test_names_without_repeats_in_their_order():
    assert cluster_names.cluster_names("ocm", ["b", "a", "b"]) == ["b", "a"]


@pytest.mark.parametrize("names", [[], None])
def test_no_name_is_refused(names):
    with pytest.raises(FleetError, match="clusters is empty"):
        cluster_names.cluster_names("karmada", names)


@pytest.mark.parametrize("engine, longest", [("karmada", 48), ("ocm", 63)])
def test_each_name_is_checked_by_the_engines_rule(engine, longest):
    assert cluster_names.cluster_names(engine, ["a" * longest]) == ["a" * longest]
    with pytest.raises(FleetError, match="of 1 to %d characters" % longest):
        cluster_names.cluster_names(engine, ["ok", "a" * (longest + 1)])
    with pytest.raises(FleetError, match="DNS-1123"):
        cluster_names.validate_cluster_name(engine, "Member1")
