# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engines, one per name: :func:`get` returns the :class:`engine.Engine` of a name, chosen once from a module's
``engine`` option; :data:`NAMES` are that option's choices. Each engine lives in its package (``karmada/``, ``ocm/``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils.engine import Engine
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.karmada.engine import KarmadaEngine
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm.engine import OcmEngine

_BY_NAME = dict((engine.name, engine) for engine in (KarmadaEngine(), OcmEngine()))
NAMES = tuple(_BY_NAME)  # the choices of every engine option


def get(engine):
    """The :class:`Engine` of name ``engine`` (an Engine is returned as it is); FleetError for an unknown name."""
    if isinstance(engine, Engine):
        return engine
    try:
        return _BY_NAME[engine]
    except (KeyError, TypeError):
        raise FleetError("engine must be one of %s, got %r" % (", ".join(NAMES), engine))


def check_scoped_options(engine, params):
    """FleetError when ``params`` (a module's) give the options scoped to another engine: its suboptions named after
    the engine (``ocm``, ``karmada``)."""
    engine = get(engine)
    for name in NAMES:
        if name != engine.name and params.get(name):
            raise FleetError("the %s options (%s) apply to engine %s only; engine is %s"
                             % (name, ", ".join(sorted(k for k, v in params[name].items() if v is not None)), name, engine.name))


def scoped_options(engine, argument_spec, params):
    """``params`` (a module's, validated against ``argument_spec``) with each engine's options - the suboptions named
    after it (``karmada``, ``ocm``) - as one whole dict, the suboptions' defaults filled in.

    A suboption may also have a deprecated top-level option of its name (its flat name from before it was scoped); its
    value is folded into the engine's dict and the top-level name left out. FleetError, before anything is read, when a
    top-level and a nested value differ (a nested value equal to the suboption's default counts as not given), when
    the dict breaks a relation its spec states (``required_if``, ``required_by``, ``mutually_exclusive``): ansible-core
    checked those on the nested values only, and counts a suboption given as null as present, or when options of another
    engine are given other than their defaults (:func:`check_scoped_options`).
    """
    folded, given = dict(params), {}
    for name in NAMES:
        spec = argument_spec.get(name) or {}
        if not spec.get("options"):
            continue
        defaults = dict((key, option.get("default")) for key, option in spec["options"].items())
        nested = dict((key, value) for key, value in (params.get(name) or {}).items()
                      if value is not None and value != defaults[key])
        flat = dict((key, folded.pop(key, None)) for key in defaults if key in argument_spec)
        flat = dict((key, value) for key, value in flat.items() if value is not None)
        for key, value in flat.items():
            if nested.get(key, value) != value:
                raise FleetError("%s and %s.%s are one setting, given different values (%r and %r): give %s.%s only, %s "
                                 "is deprecated" % (key, name, key, value, nested[key], name, key, key))
        nested.update(flat)
        folded[name] = dict(defaults, **nested)
        _check_relations(name, spec, folded[name])
        given[name] = dict((key, value) for key, value in nested.items() if value != defaults[key])
    check_scoped_options(engine, given)
    return folded


def _check_relations(name, spec, values):
    """FleetError when ``values`` (the suboptions of option ``name``, defaults filled in) break a relation of its
    ``spec`` as ansible-core states them."""
    def missing(keys, any_of=False):
        keys = [keys] if isinstance(keys, str) else list(keys)
        absent = [key for key in keys if values.get(key) is None]
        return "" if (any_of and len(absent) < len(keys)) or not absent else ", ".join("%s.%s" % (name, k) for k in absent)
    for rule in spec.get("required_if") or []:
        lacking = missing(rule[2], len(rule) > 3 and rule[3])
        if values.get(rule[0]) == rule[1] and lacking:
            raise FleetError("%s.%s is %s but %s missing" % (name, rule[0], rule[1], lacking))
    for key, requirements in (spec.get("required_by") or {}).items():
        lacking = missing(requirements)
        if values.get(key) is not None and lacking:
            raise FleetError("%s.%s needs %s" % (name, key, lacking))
    for keys in spec.get("mutually_exclusive") or []:
        present = [key for key in keys if values.get(key) is not None]
        if len(present) > 1:
            raise FleetError("%s are mutually exclusive" % ", ".join("%s.%s" % (name, k) for k in present))
