"""site.yml run as AWX job slices: a lab of a hub and four members, split into two slices exactly as AWX
splits a sliced job's inventory, converges to four registered members in either order; a slice whose hub
was never prepared fails, naming each member.

AWX (``Inventory.get_script_data`` with ``slice_number``/``slice_count``) orders the hosts by name and gives
slice N of C the hosts ``[N-1::C]``; every group keeps its variables but lists only the slice's hosts, and
only those hosts have host variables. The job then runs ansible-playbook with that inventory as a script.
The hub host (``hub-cluster``) sorts first, so slice 1 holds it with member2 and member4, slice 2 member1
and member3; members reach the hub through the group variable ``fleet_hub``.
"""

import re
import sys

import pytest
import yaml

from runner import finish_playbook, start_playbook, summary

import lab as fleet_lab  # tests/lab, on sys.path through conftest.py
import simulate

CLUSTERS = ("hub", "member1", "member2", "member3", "member4")
# Karmada modes: slice 2 holds only pull members, which need the hub's join token; slice 1 the push ones.
MODES = {"member1": "pull", "member2": "push", "member3": "pull", "member4": "push"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """A lab of its own with four members, and the simulations of the engines' agents and controllers."""
    lab = fleet_lab.Lab(str(tmp_path_factory.mktemp("slicing-lab")))
    lab.up(CLUSTERS)
    sims = simulate.start_all(lab, hosted=False)  # no member registers in Hosted mode here
    try:
        yield lab
    finally:
        simulate.stop_all(sims)
        lab.down()


def inventory_groups(lab, engine):
    """The fleet's inventory as AWX stores it: ``{group: {hosts, vars, children}}`` and ``{host: vars}``."""
    with open(lab.inventory) as handle:
        written = yaml.safe_load(handle)["all"]
    hub = lab.clusters[lab.hub]
    groups = {"all": {"vars": dict(written["vars"], fleet_engine=engine), "children": ["hub", "members"]},
              "hub": {"hosts": list(written["children"]["hub"]["hosts"])},
              "members": {"hosts": list(written["children"]["members"]["hosts"]),
                          "vars": {"fleet_hub": {"kubeconfig": hub["kubeconfig"], "context": lab.hub,
                                                 "hub_apiserver": hub["server"]}}}}
    hostvars = {}
    for group in ("hub", "members"):
        for host, variables in written["children"][group]["hosts"].items():
            hostvars[host] = dict(variables, **({"registration_mode": MODES[host]} if host in MODES else {}))
    return groups, hostvars


def awx_slice(groups, hostvars, number, count):
    """What AWX's inventory script prints for slice ``number`` of ``count`` (get_script_data, hostvars=1)."""
    hosts = sorted(hostvars)[number - 1::count]
    data = {"_meta": {"hostvars": dict((h, hostvars[h]) for h in hosts)}}
    for name, group in groups.items():
        info = dict((key, group[key]) for key in ("vars", "children") if group.get(key))
        members = [h for h in group.get("hosts", []) if h in hosts]
        if members:
            info["hosts"] = members
        if info:  # a group with neither hosts in this slice, children nor vars is only listed under all
            data[name] = info
    return data


def write_slice(directory, lab, engine, number, count=2):
    """An executable inventory script for one slice, as AWX hands it to ansible-playbook."""
    groups, hostvars = inventory_groups(lab, engine)
    path = directory / ("%s-slice%dof%d.py" % (engine, number, count))
    path.write_text("#!%s\nimport json\nprint(json.dumps(%r))\n" % (sys.executable, awx_slice(groups, hostvars, number, count)))
    path.chmod(0o755)
    return str(path)


def run(playbook, inventory, output, **extra_vars):
    return finish_playbook(start_playbook(playbook, inventory, output, **extra_vars))


def registered(lab, engine):
    """The names of the members the hub reports ready."""
    path, condition = (("/apis/cluster.karmada.io/v1alpha1/clusters", "Ready") if engine == "karmada" else
                       ("/apis/cluster.open-cluster-management.io/v1/managedclusters", "ManagedClusterConditionAvailable"))
    return sorted(item["metadata"]["name"] for item in lab.api(lab.hub).get(path)["items"]
                  if {c["type"]: c["status"] for c in (item.get("status") or {}).get("conditions") or []}.get(condition) == "True")


@pytest.mark.parametrize("engine", ["karmada", "ocm"])
def test_slices_converge_in_either_order(fleet, engine, tmp_path):
    first, second = (write_slice(tmp_path, fleet, engine, n) for n in (1, 2))
    full = write_slice(tmp_path, fleet, engine, 1, count=1)

    # A slice whose hub was never prepared: each member fails, named, and the run ends non-zero.
    rc, output, recap = run("site.yml", second, tmp_path / "unprepared.log", fleet_hub_wait_timeout=10)
    assert rc != 0 and set(recap) == {"member1", "member3"}, output[-3000:]
    for member in ("member1", "member3"):
        assert recap[member]["failed"] == 1
        assert re.search(r'^fatal: \[%s\]: FAILED! => .*"msg": "%s: Read the join token the hub play made .*'
                         r"has no valid bootstrap token described 'join token created by multicluster.fleet hub_init'.*"
                         r"the hub has not been prepared" % (member, member), output, re.MULTILINE), output[-3000:]
    assert registered(fleet, engine) == []

    # Slice 2 first: its members wait for the join token until slice 1's hub play has made it.
    waiting = start_playbook("site.yml", second, tmp_path / "second.log")
    fleet_lab.wait_for(lambda: "FAILED - RETRYING: [member1]: Read the join token" in (tmp_path / "second.log").read_text(),
                       300, "slice 2 waiting for the hub")
    rc1, output1, recap1 = run("site.yml", first, tmp_path / "first.log")
    rc2, output2, recap2 = finish_playbook(waiting)
    assert rc1 == 0, output1[-4000:]
    assert rc2 == 0, output2[-4000:]
    assert set(recap1) == {"hub-cluster", "member2", "member4"} and set(recap2) == {"member1", "member3"}
    assert registered(fleet, engine) == ["member1", "member2", "member3", "member4"]
    rows = summary(output2)
    assert rows["member1"]["RESULT"] == rows["member3"]["RESULT"] == "registered"
    assert rows["member2"]["RESULT"] == rows["member4"]["RESULT"] == "-"  # another slice's: as the hub has them

    for inventory, name in ((first, "again1"), (second, "again2")):
        rc, output, recap = run("site.yml", inventory, tmp_path / ("%s.log" % name))
        assert rc == 0 and all(r["changed"] == 0 for r in recap.values()), (recap, output[-3000:])

    # Detached, then slice 1 first: slice 2 finds the join token at once.
    rc, output, _recap = run("detach.yml", full, tmp_path / "detach.log")
    assert rc == 0 and registered(fleet, engine) == [], output[-4000:]
    for inventory, name in ((first, "first-again"), (second, "second-again")):
        rc, output, _recap = run("site.yml", inventory, tmp_path / ("%s.log" % name))
        assert rc == 0, output[-4000:]
    assert registered(fleet, engine) == ["member1", "member2", "member3", "member4"]
    rc, output, _recap = run("detach.yml", full, tmp_path / "detach-again.log")
    assert rc == 0 and registered(fleet, engine) == [], output[-4000:]
