# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The engine option of the modules whose behaviour depends on the hub's control plane.
    DOCUMENTATION = r"""
options:
  engine:
    description:
      - The multi-cluster control plane the hub runs.
    type: str
    required: true
    choices: [karmada, ocm]
"""
