"""docs/architecture.md describes every part of plugins/module_utils: each module, and each engine package with the
modules in it, is named in its section 2 (Layers), so that a new file cannot land without a place in the map."""

import os
import re

from source_tree import ROOT

MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")


def layers_section():
    with open(os.path.join(ROOT, "docs", "architecture.md")) as handle:
        text = handle.read()
    return text[text.index("## 2. Layers"):text.index("## 3. ")]


def module_utils_parts():
    """``(package or None, module name)`` of every Python file under plugins/module_utils."""
    parts = []
    for directory, _dirs, files in os.walk(MODULE_UTILS):
        package = os.path.relpath(directory, MODULE_UTILS)
        for name in sorted(files):
            if name.endswith(".py"):
                parts.append((None if package == "." else package, name[:-3]))
    return sorted(parts, key=lambda part: (part[0] or "", part[1]))


def test_every_module_utils_file_is_in_the_layers_section():
    section = layers_section()
    diagram = section[section.index("```"):section.index("```", section.index("```") + 3)]
    named = set(re.findall(r"`([a-z_]+)\.py`", section)) | set(re.findall(r"\b[a-z_]+\b", diagram))
    packages = sorted(set(package for package, _name in module_utils_parts() if package))
    assert packages, "no engine package found under plugins/module_utils"
    missing = ["%s/" % package for package in packages if "%s/" % package not in section]
    for package, name in module_utils_parts():
        if package is None and name != "__init__" and name not in named:
            missing.append(name + ".py")
        elif package and "`%s.py`" % name not in section and "`%s/%s.py`" % (package, name) not in section:
            missing.append("%s/%s.py" % (package, name))
    assert missing == [], "docs/architecture.md section 2 does not name: %s" % ", ".join(missing)


def test_the_check_sees_a_missing_module(monkeypatch, tmp_path):
    (tmp_path / "karmada").mkdir()
    for path in ("client.py", "not_in_the_map.py", "karmada/__init__.py", "karmada/undocumented.py"):
        (tmp_path / path).write_text("")
    monkeypatch.setitem(globals(), "MODULE_UTILS", str(tmp_path))
    try:
        test_every_module_utils_file_is_in_the_layers_section()
    except AssertionError as exc:
        assert "not_in_the_map.py" in str(exc) and "karmada/undocumented.py" in str(exc) and "client.py" not in str(exc)
    else:
        raise AssertionError("a module missing from the map went unnoticed")
