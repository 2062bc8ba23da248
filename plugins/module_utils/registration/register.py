# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pull registration of a member with a hub, from the member's side (docs/architecture.md 4.2, 4.4, 4.6): what module
``cluster_register`` runs.

:func:`run` takes a :class:`registrar.Registration` and runs the flow of its engine and state: Karmada
(``karmadactl register`` / ``unregister``, :class:`karmada.registration.KarmadaRegistration`) or OCM (``clusteradm
join`` / ``accept`` / ``unjoin``, :class:`ocm.registration.OcmRegistration`): the engine's
:meth:`engine.Engine.registration`. What the flows share is in ``registrar.py``,
the result they build in ``report.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import versions
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


def run(member, hub, reg, check_mode=False, hosting=None):
    """Run the flow of the registration's engine and state; return the module result.

    ``hosting`` (a Cluster) is for Hosted klusterlets only. The agent's version is checked against the hub's first
    (:func:`versions.check_agent`): a newer agent is refused before anything is written, one far behind warned about;
    then against the agent the member runs (:func:`versions.check_downgrade`): an older release is refused before
    anything is written unless ``reg.allow_downgrade``, and the result's ``downgrade`` says from which to which.
    """
    hosted = bool(reg.placement and reg.placement.hosted)
    if hosted != bool(hosting):
        raise FleetError("ocm.klusterlet_mode %s needs the hosting cluster's connection (hosting)" % reg.placement.mode
                         if hosted else "hosting is only used with ocm.klusterlet_mode Hosted or SingletonHosted")
    skew = versions.check_agent(reg.engine, reg, hub, check_mode) if reg.state == "present" else None
    downgrade = versions.check_downgrade(reg.engine, reg, member, hosting or member) if reg.state == "present" else None
    result = reg.engine.registration(member, hub, reg, check_mode, hosting).run()
    warnings = [skew] if skew else []
    if downgrade:
        result["downgrade"] = downgrade
        warnings.append("%s the agent of cluster %s from %s to %s, an older release (allow_downgrade)"
                        % ("would downgrade" if check_mode else "downgraded", reg.cluster_name, downgrade["from"],
                           downgrade["to"]))
    if warnings:
        result["warnings"] = list(result.get("warnings") or []) + warnings
    return result
