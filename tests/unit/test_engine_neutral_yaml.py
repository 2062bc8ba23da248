"""The roles, playbooks and extensions ask what an engine does (the filter multicluster.fleet.fleet_engine_facts, or the
engine's own task file, ``{{ hub_init_engine }}.yml``), never which engine it is: no YAML or Jinja file of theirs
compares a value with the name of an engine or a list of names (``multicluster.fleet.engine`` tells whether a value
names one)."""

import os
import re

import pytest

from source_tree import ROOT

TREES = ("roles", "playbooks", "extensions")
SUFFIXES = (".yml", ".yaml", ".j2")
ENGINE = r"""['"](?:karmada|ocm)['"]"""
# ``x == 'ocm'``, ``'ocm' != x``, and a list of names: ``x in ['karmada', 'ocm']``
COMPARISON = re.compile(r"(?:==|!=)\s*%s|%s\s*(?:==|!=)|\[[^]]*%s[^]]*\]" % (ENGINE, ENGINE, ENGINE))


def files():
    for tree in TREES:
        for directory, _subdirectories, names in os.walk(os.path.join(ROOT, tree)):
            for name in sorted(names):
                if name.endswith(SUFFIXES):
                    yield os.path.relpath(os.path.join(directory, name), ROOT)


def comparisons(text):
    return [number for number, line in enumerate(text.splitlines(), 1) if COMPARISON.search(line)]


@pytest.mark.parametrize("condition", [
    "when: fleet_engine == 'karmada'", 'when: "ocm" == hub_init_engine', "x if agent_install_engine != 'ocm' else y",
    "{% if hub_init_engine=='karmada' %}", "fleet_engine ==  \"ocm\"",
    "if fleet_engine not in ['karmada', 'ocm']", "when: hub_init_engine in [\"ocm\"]"])
def test_finds_a_comparison(condition):
    assert comparisons(condition) == [1]


@pytest.mark.parametrize("line", [
    "engine: karmada", "agent_install_engine: ocm", "when: (fleet_engine | multicluster.fleet.fleet_engine_facts).pull_only",
    "ansible.builtin.include_tasks: \"{{ hub_init_engine }}.yml\"", "fleet_mode == 'pull'",
    "if fleet_engine is not multicluster.fleet.engine", "fleet_mode in ['push', 'pull']"])
def test_lets_what_is_no_comparison_pass(line):
    assert comparisons(line) == []


def test_the_trees_are_searched():
    found = list(files())
    assert "roles/hub_init/tasks/main.yml" in found and "playbooks/site.yml" in found
    assert any(path.startswith("extensions/") for path in found)


def test_no_yaml_compares_a_value_with_an_engine_name():
    found = []
    for path in files():
        with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
            found += ["%s:%d" % (path, number) for number in comparisons(handle.read())]
    assert found == [], "ask multicluster.fleet.fleet_engine_facts what the engine does instead: %s" % ", ".join(found)
