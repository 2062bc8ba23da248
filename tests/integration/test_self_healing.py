"""The event source multicluster.fleet.fleet_health and the rulebook fleet_repair, run by the real ansible-rulebook on the
lab, on both engines: a healthy fleet emits nothing while its agents renew their Leases; member2's agent stopped for good
(Karmada: its Deployment deleted; OCM: its Klusterlet) emits one lease_expired after the Lease's grace, the rulebook runs
site.yml --limit member2, which deploys the agent again, and ready follows.

The grace of member2's Lease is shortened to ``GRACE_SECONDS`` for the test (its agent renews it every 10 s) and the
settle time is ``SETTLE_SECONDS``, so that the test takes about a minute per engine. ansible-rulebook is the one next to
this Python (tests/setup.sh installs it), or ``FLEET_ANSIBLE_RULEBOOK``.
"""

import ast
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
import yaml

import lab as fleet_lab
from playbooks import play, write_inventory
from runner import COLLECTIONS

GRACE_SECONDS = 20  # the Lease's grace in the test (see ENGINES)
SETTLE_SECONDS = 3
WAIT = 240  # seconds: the deadline of each wait below
EVENT = re.compile(r"^\*\* \S+ \S+ \[received event\] \*+\nRuleset: [^\n]*\nEvent:\n(.*?)\n\*{20,}$", re.MULTILINE | re.DOTALL)

# Per engine: member2's Lease; what sets its grace (the object, the short and the usual duration: Karmada's Lease itself,
# OCM's ManagedCluster, whose grace is five durations); the agent, deleted to stop it (Karmada: its Deployment; OCM: the
# Klusterlet, without which the operator runs no agent).
ENGINES = {
    "karmada": {"lease": "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/member2",
                "lease_ref": "Lease/karmada-cluster/member2",
                "duration": ("/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/member2", 20, 40),
                "agent": "/apis/apps/v1/namespaces/karmada-system/deployments/karmada-agent"},
    "ocm": {"lease": "/apis/coordination.k8s.io/v1/namespaces/member2/leases/managed-cluster-lease",
            "lease_ref": "Lease/member2/managed-cluster-lease",
            "duration": ("/apis/cluster.open-cluster-management.io/v1/managedclusters/member2", 4, 60),
            "agent": "/apis/operator.open-cluster-management.io/v1/klusterlets/klusterlet"},
}


def rulebook_command():
    found = os.environ.get("FLEET_ANSIBLE_RULEBOOK") or shutil.which("ansible-rulebook", path=os.path.dirname(sys.executable))
    assert found, "ansible-rulebook is not installed next to %s: run tests/setup.sh, or set FLEET_ANSIBLE_RULEBOOK" % sys.executable
    return found


class Rulebook:
    """ansible-rulebook running a rulebook of the collection, its output (with --print-events) in a file."""

    def __init__(self, name, inventory, variables, tmp_path):
        vars_file = tmp_path / "vars.yml"
        vars_file.write_text(yaml.safe_dump(variables))
        self.output = tmp_path / "rulebook.log"
        environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1", PYTHONUNBUFFERED="1",
                           PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
        with open(self.output, "w") as handle:
            self.process = subprocess.Popen(
                [rulebook_command(), "--rulebook", "multicluster.fleet." + name, "-i", inventory, "--vars", str(vars_file),
                 "--print-events"], stdout=handle, stderr=subprocess.STDOUT, env=environment, cwd=str(tmp_path),
                start_new_session=True)

    def text(self):
        return self.output.read_text()

    def events(self):
        return [ast.literal_eval(block) for block in EVENT.findall(self.text())]

    def wait_for(self, check, what):
        def ready():
            assert self.process.poll() is None, "ansible-rulebook ended (rc %s):\n%s" % (self.process.returncode, self.text()[-4000:])
            return check()
        try:
            return fleet_lab.wait_for(ready, WAIT, what, interval=0.5)
        except fleet_lab.LabError as exc:
            raise AssertionError("%s\n%s" % (exc, self.text()[-4000:]))

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(30)


@pytest.fixture(scope="module", params=sorted(ENGINES))
def fleet(request, lab, simulations, tmp_path_factory):
    """site.yml for the engine on the lab (both members healthy); detach.yml afterwards."""
    engine = request.param
    inventory = write_inventory(lab, tmp_path_factory.mktemp(engine), engine)
    done, _recap = play("site.yml", inventory)
    assert done.returncode == 0, done.stdout[-4000:]
    yield engine, inventory
    done, _recap = play("detach.yml", inventory)
    assert done.returncode == 0, done.stdout[-4000:]


def renewals(hub, path, count):
    """Wait until the Lease at ``path`` has been renewed ``count`` times."""
    seen = [hub.get(path)["spec"]["renewTime"]]

    def renewed():
        current = hub.get(path)["spec"]["renewTime"]
        if current != seen[-1]:
            seen.append(current)
        return len(seen) > count
    fleet_lab.wait_for(renewed, WAIT, "%d renewals of %s" % (count, path), interval=0.5)


def test_a_stopped_agent_is_registered_again_and_ready_follows(lab, fleet, tmp_path):
    engine, inventory = fleet
    paths = ENGINES[engine]
    hub, member2 = lab.api(lab.hub), lab.api("member2")
    duration_path, short, usual = paths["duration"]
    hub.patch(duration_path, {"spec": {"leaseDurationSeconds": short}})
    rulebook = Rulebook("fleet_repair", inventory, {
        "fleet_engine": engine, "fleet_hub_kubeconfig": lab.clusters[lab.hub]["kubeconfig"], "fleet_hub_context": lab.hub,
        "fleet_health_settle_seconds": SETTLE_SECONDS, "fleet_cordon_after_seconds": 600}, tmp_path)
    try:
        rulebook.wait_for(lambda: "member(s) of %s" % engine in rulebook.text(), "the source watching")
        renewals(hub, paths["lease"], 3)  # three renewals: more than two Lease periods of a healthy fleet
        assert rulebook.events() == [], rulebook.text()[-4000:]

        member2.delete(paths["agent"])
        stopped = time.monotonic()
        rulebook.wait_for(lambda: [e for e in rulebook.events() if e["transition"] == "ready"], "member2 ready again")
        ready_after = time.monotonic() - stopped
        events = rulebook.events()
    finally:
        rulebook.stop()
        hub.patch(duration_path, {"spec": {"leaseDurationSeconds": usual}})
    assert [(e["member"], e["transition"], e["verdict"]) for e in events] == [
        ("member2", "lease_expired", "lease_expired"), ("member2", "ready", "healthy")], events
    assert events[0]["repairable"] and events[0]["meta"]["hosts"] == "member2"
    assert [e["object"] for e in events[0]["evidence"]] == [paths["lease_ref"]], events[0]
    recaps = re.findall(r"^member2\s+: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0", rulebook.text(), re.MULTILINE)
    assert len(recaps) == 1 and recaps[0] != "0", rulebook.text()[-4000:]  # site.yml ran once, for member2 alone
    assert not re.search(r"^(member1|hub-cluster)\s+: ok=", rulebook.text(), re.MULTILINE)
    assert member2.get(paths["agent"])["metadata"]["name"] == paths["agent"].rsplit("/", 1)[1]
    print("\n%s: member2's agent stopped -> ready event after %.1f s (Lease grace %d s, settle %d s)"
          % (engine, ready_after, GRACE_SECONDS, SETTLE_SECONDS))
