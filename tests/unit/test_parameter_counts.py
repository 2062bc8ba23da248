"""No function of the collection takes more than ``MAX_PARAMETERS`` parameters.

Counted are the positional (positional-only included), keyword-only, ``*args`` and ``**kwargs`` parameters, a first
``self`` or ``cls`` not; lambdas count too. Parameters that travel together belong in one value (``resources.Wait``,
``tokens.token_request``, a ``Registration``, a module's ``params``) or in an object that carries them.
"""

import ast
import os

import pytest

from source_tree import ROOT

MAX_PARAMETERS = 8
PLUGINS = os.path.join(ROOT, "plugins")


def parameter_count(node):
    """The parameters of a function or lambda node, as counted above."""
    arguments = node.args
    positional = [a.arg for a in arguments.posonlyargs + arguments.args]
    if positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    return len(positional) + len(arguments.kwonlyargs) + (arguments.vararg is not None) + (arguments.kwarg is not None)


def functions_over_limit(source, path="<source>"):
    """``(path, name, line, count)`` for each function or lambda of ``source`` over :data:`MAX_PARAMETERS`."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            count = parameter_count(node)
            if count > MAX_PARAMETERS:
                found.append((path, getattr(node, "name", "<lambda>"), node.lineno, count))
    return found


def plugin_files():
    """Every ``*.py`` under plugins/, by its path in the checkout."""
    found = []
    for directory, subdirectories, files in os.walk(PLUGINS):
        subdirectories[:] = sorted(d for d in subdirectories if not (d.startswith(".") or d == "__pycache__"))
        found.extend(os.path.relpath(os.path.join(directory, name), ROOT) for name in sorted(files) if name.endswith(".py"))
    return found


def test_no_function_has_more_than_eight_parameters():
    paths = plugin_files()
    assert "plugins/module_utils/kube/resources.py" in paths and "plugins/plugin_utils/module_in_worker.py" in paths
    found = []
    for path in paths:
        with open(os.path.join(ROOT, path)) as handle:
            found.extend(functions_over_limit(handle.read(), path))
    over = ["%s:%d %s has %d parameters" % (path, line, name, count) for path, name, line, count in found]
    assert over == [], "at most %d parameters: group those that travel together into one value" % MAX_PARAMETERS


@pytest.mark.parametrize("source, name, count", [
    pytest.param("def f(a, b, c, d, e, f, g, h, i):\n    pass\n", "f", 9, id="positional"),
    pytest.param("def f(a, b, c, d, e, f, g, h=1, *, i=2):\n    pass\n", "f", 9, id="keyword-only"),
    pytest.param("def f(a, b, c, d, e, f, g, *args, **kwargs):\n    pass\n", "f", 9, id="star-args"),
    pytest.param("def f(a, b, /, c, d, e, f, g, h, i):\n    pass\n", "f", 9, id="positional-only"),
    pytest.param("async def f(a, b, c, d, e, f, g, h, i):\n    pass\n", "f", 9, id="async"),
    pytest.param("class C:\n    def m(self, a, b, c, d, e, f, g, h, i):\n        pass\n", "m", 9, id="method"),
    pytest.param("class C:\n    @classmethod\n    def m(cls, a, b, c, d, e, f, g, h, i):\n        pass\n", "m", 9,
                 id="classmethod"),
    pytest.param("def outer():\n    def f(a, b, c, d, e, f, g, h, i):\n        pass\n", "f", 9, id="nested"),
    pytest.param("g = lambda a, b, c, d, e, f, g, h, i: None\n", "<lambda>", 9, id="lambda"),
])
def test_a_function_with_nine_parameters_is_found(source, name, count):
    assert [(found_name, found_count) for _path, found_name, _line, found_count in functions_over_limit(source)] == [
        (name, count)]


@pytest.mark.parametrize("source", [
    pytest.param("def f(a, b, c, d, e, f, g, h):\n    pass\n", id="eight"),
    pytest.param("class C:\n    def m(self, a, b, c, d, e, f, g, h):\n        pass\n", id="eight-and-self"),
    pytest.param("def f(a, b, c, d, e, f, *args, **kwargs):\n    pass\n", id="eight-with-star-args"),
])
def test_eight_parameters_are_allowed(source):
    assert functions_over_limit(source) == []
