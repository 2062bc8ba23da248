# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connections to Kubernetes API servers.

One :class:`Cluster` per set of credentials per process. Credentials are resolved the way
kubernetes.core resolves them (same option names, kubeconfig semantics from the official client's
loader, including exec plugins); requests go to known REST paths over one urllib3 pool, with no API
discovery, and return plain dicts.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
from urllib.parse import urlencode

from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

try:
    import urllib3
    import yaml
    from urllib3._collections import HTTPHeaderDict
    from kubernetes.client import Configuration
    from kubernetes.config.kube_config import load_kube_config_from_dict
    from kubernetes.config.config_exception import ConfigException
except ImportError as exc:  # pragma: no cover - reported by the module wrapper
    KUBERNETES_IMPORT_ERROR = exc
else:
    KUBERNETES_IMPORT_ERROR = None

# The authentication options, as kubernetes.core names them.
AUTH_OPTIONS = (
    "kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert",
    "client_key", "proxy", "impersonate_user", "impersonate_groups",
)
DEFAULT_TIMEOUT = (10.0, 60.0)  # connect, read (seconds)
_CLUSTERS = {}


class ClusterError(FleetError):
    """A request to a cluster failed; ``status`` is the HTTP status (0 when nothing answered)."""

    def __init__(self, msg, status=0, reason=None):
        details = dict(status=status, reason=reason) if status else {}
        super(ClusterError, self).__init__(msg, **details)
        self.status = status
        self.reason = reason


class NotFound(ClusterError):
    pass


class Conflict(ClusterError):
    pass


def get_cluster(auth, name="cluster"):
    """Return the process-wide :class:`Cluster` for these credentials, building it once.

    ``auth`` is a dict of :data:`AUTH_OPTIONS` (missing keys mean unset); ``name`` is how messages
    call this cluster (``hub``, a member's name).
    """
    key = (name, json.dumps({k: auth.get(k) for k in AUTH_OPTIONS}, sort_keys=True, default=str))
    cluster = _CLUSTERS.get(key)
    if cluster is None:
        cluster = _CLUSTERS[key] = Cluster(name, build_configuration(auth, name))
    return cluster


def build_configuration(auth, name="cluster"):
    """Resolve credentials to a kubernetes ``Configuration``, failing with a message that names ``name``.

    Explicit options override what the kubeconfig says; with neither ``kubeconfig`` nor ``host`` the
    default kubeconfig (``KUBECONFIG`` or ``~/.kube/config``) is used, as kubectl does.
    """
    if KUBERNETES_IMPORT_ERROR is not None:
        raise FleetError("the kubernetes Python library is required: %s" % KUBERNETES_IMPORT_ERROR)
    config = Configuration()
    kubeconfig = auth.get("kubeconfig")
    context = auth.get("context")
    if kubeconfig or not auth.get("host"):
        _load_kubeconfig(config, kubeconfig, context, name)
    elif context:
        raise FleetError("cluster '%s': context '%s' given without a kubeconfig" % (name, context))
    if auth.get("host"):
        config.host = auth["host"]
    if auth.get("api_key"):
        config.api_key = {"authorization": "Bearer %s" % auth["api_key"]}
        config.api_key_prefix = {}
        config.refresh_api_key_hook = None  # the kubeconfig user's token refresh must not undo this
    if auth.get("validate_certs") is not None:
        config.verify_ssl = bool(auth["validate_certs"])
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        path = auth.get(option)
        if path:
            if not os.path.isfile(path):
                raise FleetError("cluster '%s': %s file %s does not exist" % (name, option, path))
            setattr(config, attribute, path)
    if auth.get("proxy"):
        config.proxy = auth["proxy"]
    config.impersonate_user = auth.get("impersonate_user")
    config.impersonate_groups = list(auth.get("impersonate_groups") or [])
    if not config.host or config.host == Configuration().host:
        raise FleetError("cluster '%s': no API server given; set kubeconfig (and context) or host" % name)
    return config


def _load_kubeconfig(config, kubeconfig, context, name):
    """Fill ``config`` from a kubeconfig path, a kubeconfig dict, or the default kubeconfig."""
    if isinstance(kubeconfig, dict):
        data, source = kubeconfig, "the kubeconfig given as a dict"
    else:
        path = os.path.expanduser(kubeconfig or os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0])
        source = "kubeconfig %s" % path
        if not os.path.isfile(path):
            if kubeconfig:
                raise FleetError("cluster '%s': kubeconfig file %s does not exist" % (name, path))
            raise FleetError("cluster '%s': no kubeconfig or host given, and no default kubeconfig at %s" % (name, path))
        try:
            with open(path) as handle:
                data = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError) as exc:
            raise FleetError("cluster '%s': cannot read %s: %s" % (name, source, exc))
    if not isinstance(data, dict):
        raise FleetError("cluster '%s': %s is not a kubeconfig (expected a mapping)" % (name, source))
    contexts = [c.get("name") for c in data.get("contexts") or [] if isinstance(c, dict)]
    wanted = context or data.get("current-context")
    if not wanted:
        raise FleetError("cluster '%s': %s has no current-context; set context (one of: %s)"
                         % (name, source, ", ".join(contexts) or "none"))
    if wanted not in contexts:
        raise FleetError("cluster '%s': context '%s' not found in %s (available: %s)"
                         % (name, wanted, source, ", ".join(contexts) or "none"))
    try:
        load_kube_config_from_dict(data, context=wanted, client_configuration=config, persist_config=False)
    except (ConfigException, ValueError, TypeError, KeyError) as exc:
        raise FleetError("cluster '%s': %s, context '%s', is not usable: %s" % (name, source, wanted, exc))


class Cluster:
    """A connection to one API server: dict in, dict out, errors as :class:`ClusterError`."""

    def __init__(self, name, config):
        self.name = name
        self.server = config.host.rstrip("/")
        self._config = config
        self._pool = self._build_pool(config)

    @property
    def ca_pem(self):
        """PEM text of the CA bundle that verifies this server (``ca_cert`` or the kubeconfig's), or None."""
        path = self._config.ssl_ca_cert
        if not path:
            return None
        try:
            with open(path) as handle:
                return handle.read()
        except OSError as exc:
            raise FleetError("cluster '%s': cannot read the CA certificate %s: %s" % (self.name, path, exc))

    @property
    def verifies_tls(self):
        """False when this connection skips TLS verification (validate_certs false, insecure-skip-tls-verify)."""
        return bool(self._config.verify_ssl)

    @property
    def proxy(self):
        """The proxy URL requests to this server go through, or None."""
        return self._config.proxy or None

    @staticmethod
    def _build_pool(config):
        tls = dict(
            cert_reqs="CERT_REQUIRED" if config.verify_ssl else "CERT_NONE",
            ca_certs=config.ssl_ca_cert,
            cert_file=config.cert_file,
            key_file=config.key_file,
            retries=urllib3.Retry(total=2, connect=2, read=0, status=0, backoff_factor=0.2, redirect=False),
            timeout=urllib3.Timeout(connect=DEFAULT_TIMEOUT[0], read=DEFAULT_TIMEOUT[1]),
            maxsize=4,
        )
        if getattr(config, "tls_server_name", None):
            tls["server_hostname"] = config.tls_server_name
        if not config.verify_ssl:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        if config.proxy:
            return urllib3.ProxyManager(config.proxy, proxy_headers=getattr(config, "proxy_headers", None), **tls)
        return urllib3.PoolManager(**tls)

    def _headers(self, content_type):
        headers = {"Accept": "application/json", "User-Agent": "multicluster.fleet"}
        if content_type:
            headers["Content-Type"] = content_type
        token = self._config.get_api_key_with_prefix("BearerToken", alias="authorization")
        if token:
            headers["Authorization"] = token
        if getattr(self._config, "impersonate_user", None):
            headers["Impersonate-User"] = self._config.impersonate_user
        headers = HTTPHeaderDict(headers)
        for group in getattr(self._config, "impersonate_groups", None) or []:
            headers.add("Impersonate-Group", group)
        return headers

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        """Send one request and return the decoded JSON answer (``None`` for an empty body).

        Raises :class:`NotFound` (404), :class:`Conflict` (409) or :class:`ClusterError` with a message
        naming the cluster, the request and the server's own explanation.
        """
        fields = [(k, v) for k, v in (query or {}).items() if v is not None]
        url = self.server + path
        if fields:
            url += "?" + urlencode(fields)
        payload = None if body is None else json.dumps(body).encode("utf-8")
        try:
            response = self._pool.request(
                method, url, body=payload, headers=self._headers(content_type if payload else None),
                timeout=urllib3.Timeout(*timeout) if timeout else None, preload_content=True,
            )
        except urllib3.exceptions.MaxRetryError as exc:
            raise ClusterError(self._unreachable(exc.reason))
        except urllib3.exceptions.HTTPError as exc:
            raise ClusterError(self._unreachable(exc))
        data = response.data
        if 200 <= response.status < 300:
            return json.loads(data) if data else None
        raise self._http_error(method, path, response.status, data)

    def _unreachable(self, cause):
        text = str(cause)
        if isinstance(cause, urllib3.exceptions.SSLError) or "CERTIFICATE_VERIFY_FAILED" in text:
            hint = "TLS verification failed; check ca_cert / the kubeconfig's certificate-authority"
        elif isinstance(cause, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)):
            hint = "check that the API server runs and that host/kubeconfig point at it"
        else:
            hint = "check the network path to the API server"
        detail = text.split(": ", 1)[-1] if isinstance(cause, urllib3.exceptions.NewConnectionError) else text
        return "cluster '%s' (%s) is unreachable: %s (%s)" % (self.name, self.server, detail, hint)

    def _http_error(self, method, path, status, data):
        reason = None
        message = data.decode("utf-8", "replace").strip()[:500] if data else ""
        try:
            status_obj = json.loads(data)
            reason = status_obj.get("reason")
            message = status_obj.get("message") or message
        except (ValueError, AttributeError):
            pass
        if status == 401:
            return ClusterError("cluster '%s' (%s) refused the credentials (401 Unauthorized): check the token, "
                                "client certificate or kubeconfig user" % (self.name, self.server), status, reason)
        text = "cluster '%s': %s %s failed: %s %s" % (self.name, method, path, status, message or reason or "")
        if status == 403:
            text += " (the credentials lack RBAC permission for this)"
        error = {404: NotFound, 409: Conflict}.get(status, ClusterError)
        return error(text.rstrip(), status, reason)
