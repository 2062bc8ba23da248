# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs multicluster.fleet.cluster_prune, in a child of the task's worker where it runs on the controller (see plugin_utils)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.plugin_utils.module_in_worker import ModuleInWorkerAction


class ActionModule(ModuleInWorkerAction):
    """The action of multicluster.fleet.cluster_prune."""
