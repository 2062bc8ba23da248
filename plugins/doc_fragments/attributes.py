# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # What every module of the collection documents; combine with one of the variants below.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and return a changed status prediction without modifying the clusters.
  diff_mode:
    description: Returns details on what has changed (or would change in check mode) when run in diff mode.
  idempotent:
    description:
      - When run twice in a row outside check mode with the same arguments, the second run reports no change.
      - This assumes the clusters have not changed in a relevant way in between.
  action_group:
    description: Use C(group/multicluster.fleet.fleet) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - multicluster.fleet.fleet
"""

    # Modules that write objects on the hub with its dry run in check mode, and wait for them outside it.
    HUB_OBJECTS = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - Reports what would be created, updated or deleted, using the hub's dry run; writes nothing and does not wait.
  diff_mode:
    support: full
  idempotent:
    support: full
"""

    # Modules that only read.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
  idempotent:
    support: full
    details:
      - This action does not modify state.
"""
