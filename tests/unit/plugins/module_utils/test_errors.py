import pytest

from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError, WaitTimeout


def test_the_message_and_the_details_of_the_failed_result():
    error = FleetError("cluster 'm1' is not registered", changed=False, clusters_failed=["m1"])
    assert error.msg == str(error) == "cluster 'm1' is not registered"
    assert error.details == {"changed": False, "clusters_failed": ["m1"]}
    assert FleetError("no details").details == {}


def test_a_timeout_is_a_fleet_error():
    with pytest.raises(FleetError) as caught:
        raise WaitTimeout("timed out after 5s waiting for m1 to be Ready", last_seen="Ready is Unknown")
    assert isinstance(caught.value, WaitTimeout) and caught.value.details == {"last_seen": "Ready is Unknown"}
