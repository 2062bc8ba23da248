# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Waiting for the engines' controllers and agents to act on what a module wrote.
    DOCUMENTATION = r"""
options:
  wait:
    description:
      - Wait until the controllers or agents of the engine have acted on the objects the module wrote.
      - In check mode nothing is written, so nothing is waited for.
    type: bool
    default: false
  wait_timeout:
    description:
      - How many seconds O(wait) waits before the task fails with what was last seen.
    type: int
    default: 120
"""
