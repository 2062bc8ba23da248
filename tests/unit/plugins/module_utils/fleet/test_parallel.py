import threading

from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import parallel
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


def test_fan_out_collects_errors():
    def task(cluster):
        if cluster == "bad":
            raise FleetError("broken " + cluster)
        return cluster.upper()
    assert parallel.fan_out(task, ["a", "bad", "c"]) == ({"a": "A", "c": "C"}, {"bad": "broken bad"})


def test_fan_out_runs_at_most_workers_tasks_at_once():
    lock, running, most = threading.Lock(), [0], [0]
    release = threading.Event()

    def task(cluster):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            if running[0] == parallel.WORKERS:
                release.set()
        release.wait(5)  # the first WORKERS tasks meet here; a pool of fewer threads would never set it
        with lock:
            running[0] -= 1
        return cluster
    clusters = ["c%d" % i for i in range(3 * parallel.WORKERS)]
    results, errors = parallel.fan_out(task, clusters)
    assert errors == {} and sorted(results) == sorted(clusters)
    assert most[0] == parallel.WORKERS and release.is_set()


def test_an_unexpected_error_is_not_collected():
    def task(cluster):
        raise KeyError(cluster)
    try:
        parallel.fan_out(task, ["a"])
    except KeyError as exc:
        assert exc.args == ("a",)
    else:
        raise AssertionError("an error other than FleetError was swallowed")
