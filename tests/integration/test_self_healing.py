"""The event source multicluster.fleet.fleet_health and the rulebook fleet_repair, run by the real ansible-rulebook on the
lab, on both engines: a healthy fleet emits nothing while its agents renew their Leases; member2's agent stopped for good
(Karmada: its Deployment deleted; OCM: its Klusterlet) emits one lease_expired after the Lease's grace, the rulebook runs
site.yml --limit member2, which deploys the agent again, and ready follows. Both members' agents stopped and the hub
restarted meanwhile: each member emits one lease_expired and one ready, and is registered again by a run of its own.

The grace of member2's Lease is shortened to ``GRACE_SECONDS`` for the test (its agent renews it every 10 s) and the
settle time is ``SETTLE_SECONDS``, so that the test takes about a minute per engine. ansible-rulebook is the one next to
this Python (tests/setup.sh installs it), or ``FLEET_ANSIBLE_RULEBOOK``.
"""

import json
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
# The source logs each event it emits as one line (shown with -v): ansible-rulebook's --print-events blocks interleave with
# the output of the playbooks it runs meanwhile.
EVENT = re.compile(r"^.* - multicluster\.fleet\.fleet_health - INFO - event: (\{.*\})$", re.MULTILINE)

# Per engine and member: its Lease; what sets its grace (the object, the short and the usual duration: Karmada's Lease
# itself, OCM's ManagedCluster, whose grace is five durations); the agent, deleted to stop it (Karmada: its Deployment;
# OCM: the Klusterlet, without which the operator runs no agent).
ENGINES = {
    "karmada": {"lease": "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/%(member)s",
                "lease_ref": "Lease/karmada-cluster/%(member)s",
                "duration": ("/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/%(member)s", 20, 40),
                "agent": "/apis/apps/v1/namespaces/karmada-system/deployments/karmada-agent"},
    "ocm": {"lease": "/apis/coordination.k8s.io/v1/namespaces/%(member)s/leases/managed-cluster-lease",
            "lease_ref": "Lease/%(member)s/managed-cluster-lease",
            "duration": ("/apis/cluster.open-cluster-management.io/v1/managedclusters/%(member)s", 4, 60),
            "agent": "/apis/operator.open-cluster-management.io/v1/klusterlets/klusterlet"},
}
MEMBERS = ("member1", "member2")


def facts(engine, member):
    """ENGINES[engine] for ``member``."""
    found = dict((key, value % {"member": member}) for key, value in ENGINES[engine].items() if key != "duration")
    path, short, usual = ENGINES[engine]["duration"]
    return dict(found, duration=(path % {"member": member}, short, usual))


def rulebook_command():
    beside = shutil.which("ansible-rulebook", path=os.path.dirname(sys.executable))
    found = os.environ.get("FLEET_ANSIBLE_RULEBOOK") or beside
    assert found, ("ansible-rulebook is not installed next to %s: run tests/setup.sh, or set FLEET_ANSIBLE_RULEBOOK"
                   % sys.executable)
    return found


class Rulebook:
    """ansible-rulebook running a rulebook of the collection, its output (-v: with the source's events) in a file."""

    def __init__(self, name, inventory, variables, tmp_path):
        vars_file = tmp_path / "vars.yml"
        vars_file.write_text(yaml.safe_dump(variables))
        self.output = tmp_path / "rulebook.log"
        environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1", PYTHONUNBUFFERED="1",
                           PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
        with open(self.output, "w") as handle:
            self.process = subprocess.Popen(
                [rulebook_command(), "--rulebook", "multicluster.fleet." + name, "-i", inventory, "--vars", str(vars_file),
                 "-v"], stdout=handle, stderr=subprocess.STDOUT, env=environment, cwd=str(tmp_path),
                start_new_session=True)

    def text(self):
        return self.output.read_text()

    def events(self):
        return [json.loads(line) for line in EVENT.findall(self.text())]

    def wait_for(self, check, what):
        def ready():
            assert self.process.poll() is None, "ansible-rulebook ended (rc %s):\n%s" % (
                self.process.returncode, self.text()[-4000:])
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
    """site.yml for the engine on the lab, both members pull members (both healthy); detach.yml afterwards."""
    engine = request.param
    inventory = write_inventory(lab, tmp_path_factory.mktemp(engine), engine,
                                member_vars={"member1": {"registration_mode": "pull"}})
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


class Repairing:
    """fleet_repair running on the lab's fleet, the grace of the members' Leases shortened while it runs."""

    def __init__(self, lab, engine, inventory, tmp_path):
        self.hub = lab.api(lab.hub)
        self.durations = [facts(engine, member)["duration"] for member in MEMBERS]
        for path, short, _usual in self.durations:
            self.hub.patch(path, {"spec": {"leaseDurationSeconds": short}})
        self.rulebook = Rulebook("fleet_repair", inventory, {
            "fleet_engine": engine, "fleet_hub_kubeconfig": lab.clusters[lab.hub]["kubeconfig"],
            "fleet_hub_context": lab.hub, "fleet_health_settle_seconds": SETTLE_SECONDS, "fleet_cordon_after_seconds": 600}, tmp_path)
        self.rulebook.wait_for(lambda: "watching 2 member(s) of %s" % engine in self.rulebook.text(), "the source watching")

    def repaired(self, members):
        """Wait until each of ``members`` has its ready event; return the seconds waited. Then wait until the runs of
        site.yml that repaired them have ended too (they go on after the agent runs again: labels, summary)."""
        started = time.monotonic()
        self.rulebook.wait_for(
            lambda: set(members) <= {e["member"] for e in self.rulebook.events() if e["transition"] == "ready"},
            "ready events of %s" % ", ".join(members))
        waited = time.monotonic() - started
        self.rulebook.wait_for(lambda: set(members) <= {name for name, _ok in site_runs(self.rulebook.text())},
                               "the end of the runs of site.yml for %s" % ", ".join(members))
        return waited

    def stop(self):
        self.rulebook.stop()
        for path, _short, usual in self.durations:
            self.hub.patch(path, {"spec": {"leaseDurationSeconds": usual}})


def site_runs(text):
    """The members of each run of site.yml the rulebook started (their recap lines), and whether each succeeded."""
    return sorted((name, failed == "0" and changed != "0") for name, changed, failed in re.findall(
        r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", text, re.MULTILINE))


def test_a_stopped_agent_is_registered_again_and_ready_follows(lab, fleet, tmp_path):
    engine, inventory = fleet
    member2 = facts(engine, "member2")
    repairing = Repairing(lab, engine, inventory, tmp_path)
    try:
        renewals(repairing.hub, member2["lease"], 3)  # three renewals: more than two Lease periods of a healthy fleet
        assert repairing.rulebook.events() == [], repairing.rulebook.text()[-4000:]
        lab.api("member2").delete(member2["agent"])
        ready_after = repairing.repaired(["member2"])
    finally:
        repairing.stop()
    events, text = repairing.rulebook.events(), repairing.rulebook.text()
    assert [(e["member"], e["transition"], e["verdict"]) for e in events] == [
        ("member2", "lease_expired", "lease_expired"), ("member2", "ready", "healthy")], events
    assert events[0]["registered"] and events[0]["repairable"] and events[0]["meta"]["hosts"] == "member2"
    assert [e["object"] for e in events[0]["evidence"]] == [member2["lease_ref"]], events[0]
    assert site_runs(text) == [("member2", True)], text[-4000:]  # site.yml ran once, for member2 alone
    assert lab.api("member2").get(member2["agent"])["metadata"]["name"] == member2["agent"].rsplit("/", 1)[1]
    print("\n%s: member2's agent stopped -> ready event after %.1f s (Lease grace %d s, settle %d s)"
          % (engine, ready_after, GRACE_SECONDS, SETTLE_SECONDS))


def test_two_members_failing_across_a_hub_restart_are_repaired_independently(lab, fleet, tmp_path):
    """Both agents stopped, then the hub's API server restarted: one lease_expired and one ready per member - none lost,
    none twice - and a site.yml run for each member alone."""
    engine, inventory = fleet
    repairing = Repairing(lab, engine, inventory, tmp_path)
    try:
        for member in MEMBERS:
            lab.api(member).delete(facts(engine, member)["agent"])
        lab.stop_apiserver(lab.hub, grace=2)
        repairing.rulebook.wait_for(lambda: "the hub does not answer" in repairing.rulebook.text(), "the source saying so")
        lab.start_apiserver(lab.hub)
        ready_after = repairing.repaired(MEMBERS)
    finally:
        repairing.stop()
    events, text = repairing.rulebook.events(), repairing.rulebook.text()
    for member in MEMBERS:
        assert [(e["transition"], e["verdict"]) for e in events if e["member"] == member] == [
            ("lease_expired", "lease_expired"), ("ready", "healthy")], events
    assert len(events) == 4, events
    assert text.count("the hub does not answer") == 1 and text.count("the hub answers again") == 1, text[-4000:]
    assert site_runs(text) == [("member1", True), ("member2", True)], text[-4000:]
    print("\n%s: two agents stopped and the hub restarted -> both ready %.1f s after the hub's return" % (engine, ready_after))
