# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Waiting for the engines' controllers and agents to act on what a module wrote; the names and
    # defaults of kubernetes.core's k8s module. A module may describe wait and the defaults its own way.
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
      - V(0) checks once. Negative values are refused.
    type: int
    default: 120
  wait_sleep:
    description:
      - Seconds between two checks while O(wait) waits (at least V(1)).
      - A wait for one object - a member's cluster object on the hub, a Deployment, a Klusterlet - follows it with a watch
        instead, and sees each change as the API server sends it. There O(wait_sleep) is the pause before the object is
        read again after a watch that ended early, and the time between checks where the credentials may not list or
        watch it.
    type: int
    default: 5
"""

    # wait_condition as kubernetes.core's k8s module has it; the module says what it applies to and its default.
    CONDITION = r"""
options:
  wait_condition:
    description:
      - The status condition O(wait) waits for.
    type: dict
    suboptions:
      type:
        description: The condition type, for example V(Ready) or V(Available).
        type: str
        required: true
      status:
        description: The condition status to wait for.
        type: str
        choices: ["True", "False", "Unknown"]
        default: "True"
      reason:
        description: The condition reason to wait for as well; any reason when unset.
        type: str
"""
