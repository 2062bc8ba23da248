#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: bootstrap_token_info
short_description: List the bootstrap tokens of a hub, like karmadactl token list
version_added: 1.0.0
description:
  - Reads the Secrets of type C(bootstrap.kubernetes.io/token) in C(kube-system) and describes each token
    the way C(karmadactl token list) (and C(kubeadm token list)) show them - id, TTL, expiration, usages,
    description and extra groups - for both Karmada and OCM hubs.
  - Never returns a token secret. Secrets of the bootstrap token type that are not valid tokens are skipped
    with a warning.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  token_id:
    description:
      - Describe only the token with this id (6 characters V([a-z0-9])). The result is an empty list when it does not exist.
    type: str
extends_documentation_fragment:
  - multicluster.fleet.auth
  - multicluster.fleet.attributes
  - multicluster.fleet.attributes.info_module
seealso:
  - module: multicluster.fleet.bootstrap_token
"""

EXAMPLES = r"""
- name: List the bootstrap tokens of the hub
  multicluster.fleet.bootstrap_token_info:
    kubeconfig: /etc/fleet/hub.kubeconfig
  register: listed

- name: Ids of the tokens that still work
  ansible.builtin.debug:
    msg: "{{ listed.tokens | rejectattr('expired') | map(attribute='token_id') | list }}"

- name: Describe one token
  multicluster.fleet.bootstrap_token_info:
    token_id: abcdef
  register: one
"""

RETURN = r"""
tokens:
  description: The bootstrap tokens, sorted by id. No token secrets.
  returned: always
  type: list
  elements: dict
  contains:
    token_id:
      description: The public token id (the TOKEN column of C(karmadactl token list) shows V(<id>.<secret>)).
      type: str
      sample: abcdef
    secret_name:
      description: The Secret in C(kube-system) that stores the token.
      type: str
      sample: bootstrap-token-abcdef
    ttl:
      description: Time left, as the TTL column shows it (V(23h), V(45m), V(<forever>), V(<invalid>) once expired).
      type: str
      sample: 23h
    ttl_seconds:
      description: Seconds left (negative once expired); null when the token never expires.
      type: int
      sample: 86213
    expiration:
      description: The EXPIRES column, RFC 3339 in UTC; null when the token never expires.
      type: str
      sample: "2026-11-23T04:00:00Z"
    expired:
      description: Whether the token has expired (Kubernetes' tokencleaner deletes it soon after).
      type: bool
      sample: false
    usages:
      description: The USAGES column, sorted.
      type: list
      elements: str
      sample: [authentication, signing]
    description:
      description: The DESCRIPTION column; empty when none is set.
      type: str
      sample: register the edge clusters
    groups:
      description: The EXTRA GROUPS column.
      type: list
      elements: str
      sample: [system:bootstrappers:karmada:default-cluster-token]
"""

from ansible_collections.multicluster.fleet.plugins.module_utils.module import FleetModule
from ansible_collections.multicluster.fleet.plugins.module_utils.registration.tokens import list_tokens


def run(module):
    found, problems = list_tokens(module.cluster(), module.params["token_id"])
    return dict(changed=False, tokens=found, warnings=problems)


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(argument_spec=dict(token_id=dict(type="str")))


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
