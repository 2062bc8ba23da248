# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one Ansible-facing wrapper every module of this collection uses.

It adds the authentication options (kubernetes.core's names; ``K8S_AUTH_*`` environment variables
by the collection's credential rule, see :func:`client.connection_options`), keeps the result
contract of every module (:meth:`FleetModuleBase.run`: warnings, diff mode, :class:`FleetError`
into ``fail_json`` with the message and details), and hands out the process-wide cluster connections.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.resources import CONDITION_STATUSES, WAIT_SLEEP

# option -> (type, aliases, no_log); auth_options.ENVIRONMENT names their K8S_AUTH_* variables.
_AUTH = (
    ("kubeconfig", "raw", [], False),  # a path is no secret; see _hide_credentials
    ("context", "str", [], False),
    ("host", "str", [], False),
    ("api_key", "str", [], True),
    ("validate_certs", "bool", ["verify_ssl"], False),
    ("ca_cert", "path", ["ssl_ca_cert"], False),
    ("client_cert", "path", ["cert_file"], False),
    ("client_key", "path", ["key_file"], False),
    ("proxy", "str", [], False),
    ("impersonate_user", "str", [], False),
    ("impersonate_groups", "list", [], False),
)

# The wait options of every module that waits, as doc fragment multicluster.fleet.wait describes them (kubernetes.core's
# WAIT_ARG_SPEC). A module whose wait differs overrides an option: dict(WAIT_ARG_SPEC, wait_timeout=...).
WAIT_ARG_SPEC = dict(
    wait=dict(type="bool", default=False),
    wait_timeout=dict(type="int", default=120),
    wait_sleep=dict(type="int", default=WAIT_SLEEP),
)
# The status condition a module's wait waits for (the fragment's CONDITION).
WAIT_CONDITION_ARG_SPEC = dict(
    wait_condition=dict(type="dict", options=dict(
        type=dict(type="str", required=True),
        status=dict(type="str", choices=list(CONDITION_STATUSES), default="True"),
        reason=dict(type="str"),
    )),
)


def auth_argument_spec():
    """The authentication options of one connection (the environment is applied by :class:`FleetModule`)."""
    spec = {}
    for name, kind, aliases, no_log in _AUTH:
        option = dict(type=kind, no_log=no_log)
        if aliases:
            option["aliases"] = aliases
        if kind == "list":
            option["elements"] = "str"
        spec[name] = option
    return spec


def cluster_argument_spec(required=False):
    """A dict option holding a second cluster's authentication options (never read from the environment)."""
    return dict(type="dict", required=required, options=auth_argument_spec())


def _leaves(value):
    """Every non-empty string or number inside ``value`` (as strings)."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return set().union(*[_leaves(v) for v in value]) if value else set()
    return {str(value)} if value not in (None, "", True, False) else set()


def fleet_argument_spec(argument_spec):
    """``argument_spec`` with the top-level authentication options; a copy, so that the parts modules share
    (:data:`WAIT_ARG_SPEC`) stay as they are whatever ansible-core does with a spec."""
    spec = auth_argument_spec()
    spec.update(copy.deepcopy(argument_spec))
    return spec


class FleetModuleBase(object):
    """What the collection adds to ``AnsibleModule``: the top-level connection, the credential masking and the error
    handling; for :class:`FleetModule` and for the controller-side module object of the action plugins
    (plugin_utils/module_in_worker.py), which both call :meth:`_start` once their parameters are validated.

    The top-level authentication options address the cluster the module acts on, which plays ``role``
    (``hub``, ``member``, ``cluster``) in messages. With ``environment`` the ``K8S_AUTH_*`` variables
    supply that connection when the task names no cluster (:func:`client.connection_options`); modules
    whose top-level connection is a member pass ``environment=False``. Modules that also reach a second
    cluster add a dict option built by :func:`cluster_argument_spec`, which never reads the environment.
    """

    def _start(self, role, environment):
        self.role = role
        self._hide_credentials(self.params)
        if client.IMPORT_ERROR is not None:  # PyYAML, which the kubernetes library brings
            self.fail_json(msg=missing_required_lib("kubernetes"), exception=str(client.IMPORT_ERROR))
        self.connection = client.connection_options(self.params, environment)
        if self.connection.get("api_key"):
            self.no_log_values.add(self.connection["api_key"])

    def _hide_credentials(self, params):
        """Mask the credentials of kubeconfigs given as dicts, here and in nested options: cluster options, and those
        of the items of a list (``per_cluster``, cluster_info's ``members``).

        A kubeconfig path stays readable in messages; a kubeconfig dict's ``users`` entries (tokens,
        keys, passwords, exec settings) become no_log values, masked in every result and error.
        """
        for value in params.values():
            for nested in value if isinstance(value, list) else [value]:
                if isinstance(nested, dict):
                    self._hide_credentials(nested)
        kubeconfig = params.get("kubeconfig")
        if isinstance(kubeconfig, dict):
            for user in kubeconfig.get("users") or []:
                self.no_log_values.update(_leaves((user or {}).get("user")))

    def cluster(self, auth=None, name=None, role=None):
        """The connection for ``auth`` (default: the top-level connection), called ``name`` in messages.

        Without a ``name`` the cluster is named by its kubeconfig context, or by ``role`` (default: the
        module's role for the top-level connection, ``member`` for others) when it has none.
        """
        if auth is None:
            return client.get_cluster(self.connection, name, role or self.role)
        return client.get_cluster(client.connection_options(auth, environment=False), name, role or "member")

    def run(self, logic):
        """Call ``logic(self)`` and exit with the result it returns, or fail with a clear message.

        The result contract of every module is kept here, not in the modules: ``logic`` returns a plain result, or
        raises :class:`FleetError` whose ``details`` are the keys of the failed result. In either, ``warnings`` (a list
        of messages) are reported as the module's warnings, and ``diff`` is returned in diff mode only. A failure
        after writes carries ``changed`` and what was written in its details (:func:`resources.failed_after`), which
        the failed result keeps.
        """
        try:
            result = logic(self)
        except FleetError as exc:
            self.fail_json(msg=exc.msg, **self._reported(exc.details))
        except Exception as exc:  # a bug: still a message, the traceback only with -vvv
            self.fail_json(msg="unexpected error: %s: %s" % (type(exc).__name__, exc), exception=traceback.format_exc())
        self.exit_json(**self._reported(result))

    def _reported(self, result):
        """``result`` as the module reports it: its ``warnings`` given to :meth:`warn`, its ``diff`` kept in diff mode
        only."""
        result = dict(result)
        for warning in result.pop("warnings", None) or ():
            self.warn(warning)
        diff = result.pop("diff", None)
        if self._diff and diff is not None:
            result["diff"] = diff
        return result


class FleetModule(FleetModuleBase, AnsibleModule):
    """``AnsibleModule`` with the top-level authentication options and the collection's error handling."""

    def __init__(self, argument_spec, role="hub", environment=True, **kwargs):
        kwargs.setdefault("supports_check_mode", True)
        AnsibleModule.__init__(self, argument_spec=fleet_argument_spec(argument_spec), **kwargs)
        self._start(role, environment)
