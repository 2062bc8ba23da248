# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The authentication options of a cluster connection, as kubernetes.core names them.

Kept apart from :mod:`client` so that what only reads the option names (the ``connection`` filter,
which Ansible loads for many tasks) does not import the HTTP client.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Each option with the K8S_AUTH_* environment variables that can supply it (the first one set wins).
ENVIRONMENT = (
    ("kubeconfig", ("K8S_AUTH_KUBECONFIG",)),
    ("context", ("K8S_AUTH_CONTEXT",)),
    ("host", ("K8S_AUTH_HOST",)),
    ("api_key", ("K8S_AUTH_API_KEY",)),
    ("validate_certs", ("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL")),
    ("ca_cert", ("K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT")),
    ("client_cert", ("K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE")),
    ("client_key", ("K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE")),
    ("proxy", ("K8S_AUTH_PROXY",)),
    ("impersonate_user", ("K8S_AUTH_IMPERSONATE_USER",)),
    ("impersonate_groups", ("K8S_AUTH_IMPERSONATE_GROUPS",)),
)
AUTH_OPTIONS = tuple(option for option, _variables in ENVIRONMENT)
# The options that name a cluster: a connection given any of them never reads the environment.
NAMING_OPTIONS = ("kubeconfig", "context", "host")
