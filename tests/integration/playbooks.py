"""This collection's playbooks run on the lab, for the tests that drive them end to end.

``write_inventory`` writes the lab's inventory for an engine (with a broken member, more variables for the members,
members left out); ``play`` runs a playbook and returns the process result and its recap; ``check_play`` runs one in
check mode and asserts that it wrote nothing; ``hub_csrs`` names the CertificateSigningRequests on the hub.
"""

import os

import yaml

from labstate import snapshot
from runner import ROOT, recap_of, run_playbook


def hub_csrs(lab):
    """The names of the CertificateSigningRequests on the hub."""
    return {c["metadata"]["name"] for c in lab.api(lab.hub).get("/apis/certificates.k8s.io/v1/certificatesigningrequests")["items"]}


def write_inventory(lab, tmp_path, engine, broken=False, member_vars=None, without=()):
    """The lab's inventory with ``fleet_engine`` set; ``broken`` adds a member whose kubeconfig is missing;
    ``member_vars`` ({host: variables}) adds variables to members; the members ``without`` names are left out."""
    with open(lab.inventory) as handle:
        inventory = yaml.safe_load(handle)
    inventory["all"]["vars"]["fleet_engine"] = engine
    for host, variables in (member_vars or {}).items():
        inventory["all"]["children"]["members"]["hosts"][host].update(variables)
    for host in without:
        del inventory["all"]["children"]["members"]["hosts"][host]
    if broken:
        inventory["all"]["children"]["members"]["hosts"]["broken"] = {
            "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "kubeconfig": str(tmp_path / "missing.kubeconfig"), "cluster_name": "broken", "registration_mode": "push"}
    path = tmp_path / ("%s%s%s.yml" % (engine, "-broken" if broken else "", "".join("-" + host for host in without)))
    path.write_text(yaml.safe_dump(inventory))
    return str(path)


def play(name, inventory, check=False, diff=False, limit=None, **extra_vars):
    done = run_playbook([{"import_playbook": os.path.join(ROOT, "playbooks", name)}], inventory=inventory,
                        extra_vars=extra_vars or None, check=check, diff=diff, limit=limit)
    return done, recap_of(done.stdout)


def check_play(lab, name, inventory, diff=False, **extra_vars):
    """Run a playbook in check mode; assert that it succeeded for every host and wrote nothing: every object
    of every cluster as it was (``snapshot(lab, contents=True)``) and no CSR created on the hub."""
    before, csrs = snapshot(lab, contents=True), hub_csrs(lab)
    done, recap = play(name, inventory, check=True, diff=diff, **extra_vars)
    assert done.returncode == 0, done.stdout[-4000:]
    assert set(recap) == {"hub-cluster", "member1", "member2"}, recap
    assert all(r["failed"] == 0 and r["rescued"] == 0 and r["unreachable"] == 0 for r in recap.values()), recap
    assert snapshot(lab, contents=True) == before
    assert hub_csrs(lab) == csrs
    return done, recap
