"""Unit tests mirror plugins/module_utils: every module there has a test file of its name at the mirrored path,
``plugins/module_utils/<package>/<module>.py`` -> ``tests/unit/plugins/module_utils/<package>/test_<module>.py``, so that
the tests of a module are found where its path says (a package's ``__init__.py`` is tested as ``test_<package>.py``
beside the package's other tests, when it holds code)."""

import os

from source_tree import ROOT

MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
TESTS = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils")


def expected_test_files(module_utils):
    """The test file of every module under ``module_utils``, as a path relative to the mirrored test directory."""
    expected = []
    for directory, subdirectories, files in os.walk(module_utils):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        package = os.path.relpath(directory, module_utils)
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            if name == "__init__.py":
                if package == "." or os.path.getsize(os.path.join(directory, name)) == 0:
                    continue
                name = os.path.basename(directory) + ".py"
            expected.append(os.path.normpath(os.path.join(package, "test_" + name)))
    return expected


def missing_test_files(module_utils, tests):
    return [path for path in expected_test_files(module_utils) if not os.path.isfile(os.path.join(tests, path))]


def test_every_module_has_a_test_file_at_the_mirrored_path():
    assert len(expected_test_files(MODULE_UTILS)) > 40
    assert missing_test_files(MODULE_UTILS, TESTS) == []


def test_the_check_sees_a_missing_or_misplaced_test_file(tmp_path):
    source, tests = tmp_path / "module_utils", tmp_path / "tests"
    for path in ("errors.py", "__init__.py", "kube/__init__.py", "kube/client.py", "karmada/__init__.py",
                 "karmada/join.py"):
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text("" if path.endswith("__init__.py") and "karmada" not in path else "X = 1\n")
    for path in ("test_errors.py", "test_client.py", "karmada/test_join.py"):
        (tests / path).parent.mkdir(parents=True, exist_ok=True)
        (tests / path).write_text("")
    assert missing_test_files(str(source), str(tests)) == ["karmada/test_karmada.py", "kube/test_client.py"]
