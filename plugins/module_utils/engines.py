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
