# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one Ansible-facing wrapper every module of this collection uses.

It adds the authentication options (kubernetes.core's names and ``K8S_AUTH_*`` environment
variables), turns :class:`FleetError` into ``fail_json`` with the message and details, and hands out
the process-wide cluster connections.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible.module_utils.basic import AnsibleModule, env_fallback, missing_required_lib

from ansible_collections.multicluster.fleet.plugins.module_utils import client
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# option -> (type, aliases, environment variables, no_log)
_AUTH = (
    ("kubeconfig", "raw", [], ["K8S_AUTH_KUBECONFIG"], False),  # a path is no secret; see _hide_credentials
    ("context", "str", [], ["K8S_AUTH_CONTEXT"], False),
    ("host", "str", [], ["K8S_AUTH_HOST"], False),
    ("api_key", "str", [], ["K8S_AUTH_API_KEY"], True),
    ("validate_certs", "bool", ["verify_ssl"], ["K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"], False),
    ("ca_cert", "path", ["ssl_ca_cert"], ["K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"], False),
    ("client_cert", "path", ["cert_file"], ["K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"], False),
    ("client_key", "path", ["key_file"], ["K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"], False),
    ("proxy", "str", [], ["K8S_AUTH_PROXY"], False),
    ("impersonate_user", "str", [], ["K8S_AUTH_IMPERSONATE_USER"], False),
    ("impersonate_groups", "list", [], ["K8S_AUTH_IMPERSONATE_GROUPS"], False),
)


def auth_argument_spec(environment=True):
    """Authentication options; with ``environment`` unset values fall back to ``K8S_AUTH_*``."""
    spec = {}
    for name, kind, aliases, env, no_log in _AUTH:
        option = dict(type=kind, no_log=no_log)
        if aliases:
            option["aliases"] = aliases
        if kind == "list":
            option["elements"] = "str"
        if environment:
            option["fallback"] = (env_fallback, env)
        spec[name] = option
    return spec


def cluster_argument_spec(required=False):
    """A dict option holding a second cluster's authentication options (no environment fallback)."""
    return dict(type="dict", required=required, options=auth_argument_spec(environment=False))


def _leaves(value):
    """Every non-empty string or number inside ``value`` (as strings)."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return set().union(*[_leaves(v) for v in value]) if value else set()
    return {str(value)} if value not in (None, "", True, False) else set()


class FleetModule(AnsibleModule):
    """``AnsibleModule`` with the top-level authentication options and the collection's error handling.

    The top-level authentication options address the cluster the module acts on (named
    ``cluster_label`` in messages); modules that also reach a second cluster add a dict option built
    by :func:`cluster_argument_spec`.
    """

    def __init__(self, argument_spec, cluster_label="hub", **kwargs):
        spec = auth_argument_spec()
        spec.update(argument_spec)
        kwargs.setdefault("supports_check_mode", True)
        super(FleetModule, self).__init__(argument_spec=spec, **kwargs)
        self.cluster_label = cluster_label
        self._hide_credentials(self.params)
        if client.IMPORT_ERROR is not None:  # urllib3 and PyYAML, which the kubernetes library brings
            self.fail_json(msg=missing_required_lib("kubernetes"), exception=str(client.IMPORT_ERROR))

    def _hide_credentials(self, params):
        """Mask the credentials of kubeconfigs given as dicts, here and in nested cluster options.

        A kubeconfig path stays readable in messages; a kubeconfig dict's ``users`` entries (tokens,
        keys, passwords, exec settings) become no_log values, masked in every result and error.
        """
        for value in params.values():
            if isinstance(value, dict) and "kubeconfig" in value:
                self._hide_credentials(value)
        kubeconfig = params.get("kubeconfig")
        if isinstance(kubeconfig, dict):
            for user in kubeconfig.get("users") or []:
                self.no_log_values.update(_leaves((user or {}).get("user")))

    def cluster(self, auth=None, label=None):
        """The connection for ``auth`` (default: the top-level options), named ``label`` in messages."""
        return client.get_cluster(self.params if auth is None else auth, label or self.cluster_label)

    def run(self, logic):
        """Call ``logic(self)`` and exit with the dict it returns, or fail with a clear message."""
        try:
            result = logic(self)
        except FleetError as exc:
            self.fail_json(msg=exc.msg, **exc.details)
        except Exception as exc:  # a bug: still a message, the traceback only with -vvv
            self.fail_json(msg="unexpected error: %s: %s" % (type(exc).__name__, exc), exception=traceback.format_exc())
        self.exit_json(**result)
