"""Fixtures for integration tests against the lab (tests/lab/lab.py): real control planes on loopback.

The session-scoped ``lab`` fixture starts hub, member1 and member2 in a temporary directory and stops
them when the session ends. To iterate quickly, start a lab once and point the tests at it::

    python tests/lab/lab.py up --dir /tmp/fleet-lab
    FLEET_LAB_DIR=/tmp/fleet-lab pytest tests/integration
    python tests/lab/lab.py down --dir /tmp/fleet-lab

A lab reused that way is left running. Tests share the clusters, so they create uniquely named
objects and remove what they create.

Run in parallel (pytest-xdist, ``-n N --dist loadfile``, as tests/run.sh does), every worker starts a lab of its own;
one test file runs in one worker, so its module-scoped fixtures (``simulations``, ``bootstrap_rbac``) hold for the file.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lab"))

# Helpers that assert on the tests' behalf: pytest rewrites their asserts as it does a test file's, so that a failure
# shows the values compared.
pytest.register_assert_rewrite("agents", "playbooks")

import lab as fleet_lab  # noqa: E402  (tests/lab is not a package)
import labstate  # noqa: E402
import simulate  # noqa: E402


# The test files that take longest, longest first (per-file times of a full run on Kubernetes 1.36, two workers). With
# --dist loadfile and --no-loadscope-reorder (tests/run.sh), pytest-xdist hands whole files to the workers in collection
# order: the long ones go first, so that no worker starts one while the other has finished everything else. (Without
# that option it orders files by their number of tests, and the two-test test_slicing.py came last.)
LONGEST_FIRST = ("test_site.py", "test_upgrade.py", "test_faults.py", "test_slicing.py", "test_bad_input.py",
                 "test_prune.py", "test_hub_isolation.py", "test_diagnose.py", "test_rebootstrap.py", "test_local_cluster.py",
                 "test_awx.py", "test_versions.py", "test_cluster_register.py", "test_roles.py")


def pytest_collection_modifyitems(items):
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(os.path.basename(str(item.path)), len(rank)))


# Seconds spent in each test file (set-up, call and tear-down of its tests, module fixtures included), printed at the
# end of the run: what LONGEST_FIRST is ordered by.
FILE_SECONDS = {}


def pytest_runtest_logreport(report):
    name = os.path.basename(report.nodeid.split("::", 1)[0])
    FILE_SECONDS[name] = FILE_SECONDS.get(name, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if FILE_SECONDS:
        terminalreporter.write_sep("=", "seconds per test file, longest first")
        for name, seconds in sorted(FILE_SECONDS.items(), key=lambda item: -item[1]):
            terminalreporter.write_line("%8.1f  %s" % (seconds, name))


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """The running Lab: clusters hub, member1, member2; see ``Lab.clusters`` for their details."""
    existing = os.environ.get("FLEET_LAB_DIR")
    if existing:
        if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
            pytest.exit(f"FLEET_LAB_DIR={existing}: tests share a lab's clusters one at a time; run without -n", returncode=1)
        running = fleet_lab.Lab.load(existing)
        down = [name for name, (ready, _detail) in running.status().items() if not ready]
        if down:
            pytest.exit(f"FLEET_LAB_DIR={existing}: cluster(s) {', '.join(down)} not answering", returncode=1)
        yield running
        return
    started = fleet_lab.Lab(str(tmp_path_factory.mktemp("lab")))
    started.up(fleet_lab.DEFAULT_CLUSTERS)
    try:
        yield started
    finally:
        started.down()


@pytest.fixture(scope="module", autouse=True)
def settled_lab(lab):
    """Each test file starts once no namespace an earlier file deleted is still being deleted: the namespace controller
    takes seconds to empty one (about 5 s on Kubernetes 1.36), and the API server refuses to create anything in it
    meanwhile."""
    for name, info in lab.clusters.items():
        labstate.wait_settled(fleet_lab.ApiClient.for_cluster(info), name)


# What hub_init sets up for bootstrap identities (docs/architecture.md 4.1, 4.5), created here as test setup under
# names of its own: bootstrap token users may create and read CSRs (system:node-bootstrapper), and OCM's
# bootstrap group may also create and read ManagedClusters (the rules of open-cluster-management:bootstrap).
BOOTSTRAP_GROUPS = ("system:bootstrappers:karmada:default-cluster-token", "system:bootstrappers:managedcluster")
OCM_BOOTSTRAP_RULES = [
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
    {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get", "list", "watch"]},
    {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters"], "verbs": ["get", "create", "list", "watch"]},
    {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclustersets/join"], "verbs": ["create"]},
]


@pytest.fixture(scope="module")
def bootstrap_rbac(lab):
    """Hub RBAC for bootstrap identities: groups ``BOOTSTRAP_GROUPS`` may create CSRs, OCM's also ManagedClusters.

    Module-scoped: the bindings go away after the test file that asked for them, so files testing what
    the hub allows before its prerequisites exist (hub_registration) do not see them."""
    api = lab.api(lab.hub)
    rbac = "/apis/rbac.authorization.k8s.io/v1"

    def group(name):
        return {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}

    objects = [
        ("clusterrolebindings", {"metadata": {"name": "fleet-test:node-bootstrapper"},
                                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
                                 "subjects": [group(g) for g in BOOTSTRAP_GROUPS]}),
        ("clusterroles", {"metadata": {"name": "fleet-test:ocm-bootstrap"}, "rules": OCM_BOOTSTRAP_RULES}),
        ("clusterrolebindings", {"metadata": {"name": "fleet-test:ocm-bootstrap"},
                                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "fleet-test:ocm-bootstrap"},
                                 "subjects": [group("system:bootstrappers:managedcluster")]}),
    ]
    for plural, body in objects:
        body.update(apiVersion="rbac.authorization.k8s.io/v1", kind="ClusterRoleBinding" if plural == "clusterrolebindings" else "ClusterRole")
        try:
            api.post(f"{rbac}/{plural}", body)
        except fleet_lab.ApiError as e:
            if e.status != 409:
                raise
    yield BOOTSTRAP_GROUPS
    for plural, body in reversed(objects):
        try:
            api.delete(f"{rbac}/{plural}/{body['metadata']['name']}")
        except fleet_lab.ApiError as e:
            if e.status != 404:
                raise


@pytest.fixture(scope="module")
def simulations(request, lab):
    """Every lab simulation (tests/lab/simulate.py) running against ``lab`` for one test module.

    Operators, agents and controllers play their parts only while a module that asks for this runs,
    and start afresh for the next one (agents keep what they registered in memory). The klusterlets of Hosted mode
    (one per member and hosting cluster, each polling the API servers) run only for a module that sets
    ``SIMULATE_HOSTED_KLUSTERLETS = True``.
    """
    sims = simulate.start_all(lab, hosted=getattr(request.module, "SIMULATE_HOSTED_KLUSTERLETS", False))
    yield sims
    simulate.stop_all(sims)
