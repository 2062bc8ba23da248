# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


class ModuleDocFragment(object):
    # The cluster a module acts on: kubernetes.core's option names. The K8S_AUTH_* environment variables supply
    # the whole connection when the task names no cluster (client.connection_options). DOCUMENTATION says so; the
    # variant MEMBER_CONNECTION, for modules whose top-level connection is a member, says they are never read.
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig content as a dictionary.
      - Without O(kubeconfig) and O(host), the default kubeconfig is used (E(KUBECONFIG) or C(~/.kube/config)).
      - E(K8S_AUTH_KUBECONFIG) when the task names no cluster, see the notes.
    type: raw
  context:
    description:
      - The kubeconfig context to use; the kubeconfig's current context when unset. Messages name the cluster by it.
      - E(K8S_AUTH_CONTEXT) when the task names no cluster, see the notes.
    type: str
  host:
    description:
      - URL of the API server. Overrides the kubeconfig's server.
      - E(K8S_AUTH_HOST) when the task names no cluster, see the notes.
    type: str
  api_key:
    description:
      - Bearer token to authenticate with. Overrides the kubeconfig's user.
      - E(K8S_AUTH_API_KEY) when the task names no cluster, see the notes.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - E(K8S_AUTH_VALIDATE_CERTS) or E(K8S_AUTH_VERIFY_SSL) when the task names no cluster, see the notes.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA certificate bundle that verifies the API server.
      - E(K8S_AUTH_CA_CERT) or E(K8S_AUTH_SSL_CA_CERT) when the task names no cluster, see the notes.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate to authenticate with.
      - E(K8S_AUTH_CLIENT_CERT) or E(K8S_AUTH_CERT_FILE) when the task names no cluster, see the notes.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the private key of O(client_cert).
      - E(K8S_AUTH_CLIENT_KEY) or E(K8S_AUTH_KEY_FILE) when the task names no cluster, see the notes.
    type: path
    aliases: [key_file]
  proxy:
    description:
      - URL of an HTTP proxy to reach the API server through.
      - E(K8S_AUTH_PROXY) when the task names no cluster, see the notes.
    type: str
  impersonate_user:
    description:
      - User to impersonate for the requests.
      - E(K8S_AUTH_IMPERSONATE_USER) when the task names no cluster, see the notes.
    type: str
  impersonate_groups:
    description:
      - Groups to impersonate for the requests.
      - E(K8S_AUTH_IMPERSONATE_GROUPS) (comma separated) when the task names no cluster, see the notes.
    type: list
    elements: str
notes:
  - The API is addressed by known resource paths; no API discovery runs, so a task costs a few requests.
  - Where the connection's credentials come from. A task that names a cluster - gives O(kubeconfig), O(context) or
    O(host) - is connected with exactly what it gives, and no E(K8S_AUTH_*) variable is read for that connection.
    A task that names none takes the connection from the E(K8S_AUTH_*) variables, with the options it does give on
    top (for example O(impersonate_user)). Connections to a second cluster (the member, hub or hosting dictionaries)
    never read the environment.
  - This differs on purpose from C(kubernetes.core), where E(K8S_AUTH_HOST) overrides the server of a task's
    kubeconfig. An AWX credential for the hub (OpenShift or Kubernetes API Bearer Token) puts the hub into the
    environment of the whole job; under that rule a task given a member's kubeconfig would be sent to the hub.
requirements:
  - urllib3, only for connections through a proxy (O(proxy), or a kubeconfig's C(proxy-url))
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
      - The E(K8S_AUTH_*) environment variables are never read for this cluster.
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


# Modules whose top-level connection is a member cluster: the same options, and the environment is never read,
# so an AWX credential for the hub can never redirect a member's task to the hub.
ModuleDocFragment.MEMBER_CONNECTION = re.sub(r"\n      - E\(K8S_AUTH_[^\n]*", "", ModuleDocFragment.DOCUMENTATION.split("\nnotes:", 1)[0]) + r"""
notes:
  - The API is addressed by known resource paths; no API discovery runs, so a task costs a few requests.
  - The top-level options address the member cluster. The E(K8S_AUTH_*) environment variables are never read for it
    (nor for the other clusters), so credentials in the environment, such as an AWX credential for the hub, can never
    send a member's task to another cluster. Without O(kubeconfig) and O(host) the default kubeconfig is used
    (E(KUBECONFIG) or C(~/.kube/config)).
requirements:
  - urllib3, only for connections through a proxy (O(proxy), or a kubeconfig's C(proxy-url))
  - PyYAML
  - kubernetes >= 24.2.0, only for kubeconfig users that authenticate with C(exec) or C(auth-provider)
"""
