# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The cluster a module acts on: kubernetes.core's option names and environment variables.
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig content as a dictionary.
      - Without O(kubeconfig) and O(host), the default kubeconfig is used (E(KUBECONFIG) or C(~/.kube/config)).
      - Can also be set with E(K8S_AUTH_KUBECONFIG).
    type: raw
  context:
    description:
      - The kubeconfig context to use; the kubeconfig's current context when unset.
      - Can also be set with E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description:
      - URL of the API server. Overrides the kubeconfig's server.
      - Can also be set with E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - Bearer token to authenticate with. Overrides the kubeconfig's user.
      - Can also be set with E(K8S_AUTH_API_KEY).
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - Can also be set with E(K8S_AUTH_VALIDATE_CERTS) or E(K8S_AUTH_VERIFY_SSL).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA certificate bundle that verifies the API server.
      - Can also be set with E(K8S_AUTH_CA_CERT) or E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate to authenticate with.
      - Can also be set with E(K8S_AUTH_CLIENT_CERT) or E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the private key of O(client_cert).
      - Can also be set with E(K8S_AUTH_CLIENT_KEY) or E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  proxy:
    description:
      - URL of an HTTP proxy to reach the API server through.
      - Can also be set with E(K8S_AUTH_PROXY).
    type: str
  impersonate_user:
    description:
      - User to impersonate for the requests.
      - Can also be set with E(K8S_AUTH_IMPERSONATE_USER).
    type: str
  impersonate_groups:
    description:
      - Groups to impersonate for the requests.
      - Can also be set with E(K8S_AUTH_IMPERSONATE_GROUPS), comma separated.
    type: list
    elements: str
notes:
  - The API is addressed by known resource paths; no API discovery runs, so a task costs a few requests.
requirements:
  - urllib3
  - PyYAML
  - kubernetes >= 24.2.0, only for kubeconfig users that authenticate with C(exec) or C(auth-provider)
"""

    # A second cluster as one dictionary, the option named CLUSTER_OPTION: the text of MEMBER and HUB below.
    _SECOND_CLUSTER = r"""
options:
  CLUSTER_OPTION:
    description:
      - How to reach the CLUSTER_OPTION cluster. Takes the same keys as the top-level authentication options
        (O(kubeconfig), O(context), O(host), O(api_key), O(validate_certs), O(ca_cert), O(client_cert),
        O(client_key), O(proxy), O(impersonate_user), O(impersonate_groups)).
      - Environment variables do not apply here; they belong to the top-level options.
    type: dict
    suboptions:
      kubeconfig:
        description: Path to a kubeconfig file, or the kubeconfig content as a dictionary.
        type: raw
      context:
        description: The kubeconfig context to use.
        type: str
      host:
        description: URL of the API server.
        type: str
      api_key:
        description: Bearer token to authenticate with.
        type: str
      validate_certs:
        description: Whether to verify the API server's TLS certificate.
        type: bool
        aliases: [verify_ssl]
      ca_cert:
        description: Path to a CA certificate bundle that verifies the API server.
        type: path
        aliases: [ssl_ca_cert]
      client_cert:
        description: Path to a client certificate.
        type: path
        aliases: [cert_file]
      client_key:
        description: Path to the private key of the client certificate.
        type: path
        aliases: [key_file]
      proxy:
        description: URL of an HTTP proxy.
        type: str
      impersonate_user:
        description: User to impersonate.
        type: str
      impersonate_groups:
        description: Groups to impersonate.
        type: list
        elements: str
"""


# The member (for modules acting on the hub), the hub (for modules acting on a member) and the hosting cluster
# of an OCM Hosted klusterlet: one text, three option names. Set here because ansible-test's yamllint check only
# reads literal strings in the class body.
ModuleDocFragment.MEMBER = ModuleDocFragment._SECOND_CLUSTER.replace("CLUSTER_OPTION", "member")
ModuleDocFragment.HUB = ModuleDocFragment._SECOND_CLUSTER.replace("CLUSTER_OPTION", "hub")
ModuleDocFragment.HOSTING = ModuleDocFragment._SECOND_CLUSTER.replace("CLUSTER_OPTION", "hosting")
