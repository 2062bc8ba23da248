"""Test files stand alone: no ``tests/**/test_*.py`` imports another test file.

What several test files share lives in a helper module beside them (tests/integration/labstate.py, playbooks.py,
agents.py; tests/unit/source_tree.py; tests/unit/plugins/module_utils/fake_ca.py, register_fakes.py, ...) or in a
conftest.py fixture, where the next reader looks for it; a test file is read, moved and run on its own.
"""

import ast
import os

import pytest

from source_tree import ROOT

TESTS = os.path.join(ROOT, "tests")
OUTPUT = os.path.join(TESTS, "output")  # what test runs write, a link to the checkout among it


def find_test_files():
    """Every ``test_*.py`` under tests/ but tests/output, by its path in the checkout."""
    found = []
    for directory, subdirectories, files in os.walk(TESTS):
        subdirectories[:] = sorted(d for d in subdirectories
                                   if not (d.startswith(".") or d == "__pycache__" or os.path.join(directory, d) == OUTPUT))
        found.extend(os.path.relpath(os.path.join(directory, name), ROOT) for name in sorted(files)
                     if name.startswith("test_") and name.endswith(".py"))
    return found


def imports_of(source, modules):
    """``(line, module)`` for each import in ``source`` of one of ``modules``, wherever it is (in a function, over
    several lines): ``import m``, ``import m as n``, ``from m import x``, ``from .m import x``, ``from . import m``, and
    ``m`` as any part of a dotted name."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] + [alias.name for alias in node.names]
        else:
            continue
        found.update((node.lineno, part) for name in names for part in name.split(".") if part in modules)
    return sorted(found)


def test_no_test_file_imports_another():
    paths = find_test_files()
    assert os.path.relpath(os.path.abspath(__file__), ROOT) in paths
    modules = {os.path.basename(path)[:-len(".py")] for path in paths}
    found = []
    for path in paths:
        with open(os.path.join(ROOT, path)) as handle:
            found.extend("%s:%d imports %s" % (path, line, module) for line, module in imports_of(handle.read(), modules))
    assert found == [], "move what these test files share into a helper module beside them, or a conftest.py fixture"


@pytest.mark.parametrize("source, line", [
    pytest.param("import test_site\n", 1, id="import"),
    pytest.param("import os, test_site as site\n", 1, id="import-as"),
    pytest.param("from test_site import play\n", 1, id="from-import"),
    pytest.param("from test_site import (\n    check_play,\n    play,\n)\n", 1, id="multi-line"),
    pytest.param("def helper():\n    from test_site import play\n    return play\n", 2, id="indented"),
    pytest.param("from .test_site import play\n", 1, id="relative"),
    pytest.param("from . import test_site\n", 1, id="from-package"),
    pytest.param("import tests.integration.test_site\n", 1, id="dotted"),
])
def test_every_form_of_import_is_found(source, line):
    assert imports_of(source, {"test_site"}) == [(line, "test_site")]


def test_helper_modules_are_not_test_files():
    source = "import labstate\nfrom playbooks import play\nfrom register_fakes import reg\nfrom lab import test_site_like\n"
    assert imports_of(source, {"test_site"}) == []
