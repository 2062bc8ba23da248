# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connections to Kubernetes API servers.

One :class:`Cluster` per set of credentials per process. Credentials are resolved the way
kubernetes.core resolves them (same option names, kubeconfig semantics of kubectl); requests go to
known REST paths, with no API discovery, and return plain dicts. A server is reached over kept-alive
connections of the standard library (``http.client``); only a connection through a proxy imports urllib3,
whose ``ProxyManager`` tunnels through HTTP and HTTPS proxies alike.

Kubeconfigs are read by :mod:`kubeconfig`; only users that authenticate with an ``exec`` or
``auth-provider`` plugin need the kubernetes library, whose loader runs those plugins, and only
then is it imported.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import atexit
import base64
import http.client
import json
import os
import select
import shutil
import socket
import ssl
import tempfile
import threading
import time
from urllib.parse import urlencode, urlsplit

from ansible_collections.multicluster.fleet.plugins.module_utils.kube import kubeconfig as kubeconfigs
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.auth_options import AUTH_OPTIONS, ENVIRONMENT, NAMING_OPTIONS
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

IMPORT_ERROR = kubeconfigs.YAML_IMPORT_ERROR

# How messages call a cluster whose name is not known, by the part it plays.
ROLES = {"hub": "the hub", "member": "the member cluster", "hosting": "the hosting cluster"}
DEFAULT_TIMEOUT = (10.0, 60.0)  # connect, read (seconds)
WATCH_SECONDS = 300  # how long the server keeps one watch open (it ends it then; the watcher watches again)
CONNECT_RETRY_DELAYS = (0.0, 0.4)  # a connection refused or timed out is tried again after these (seconds)
IDLE_CONNECTIONS = 4  # kept-alive connections kept per server
TLS_HINT = "TLS verification failed; check ca_cert / the kubeconfig's certificate-authority"
CONNECT_HINT = "check that the API server runs and that host/kubeconfig point at it"
DEFAULT_HOST = "http://localhost"  # what the kubernetes library's Configuration starts with: no server given
_CLUSTERS = {}
_DATA_FILES = {}


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


class Gone(ClusterError):
    """410 Gone: a watch asked for a resourceVersion the server no longer has; list again."""


def names_cluster(auth):
    """True when ``auth`` says which cluster to reach (kubeconfig, context or host given)."""
    return any(auth.get(option) not in (None, "") for option in NAMING_OPTIONS)


def from_environment(environ=None):
    """The authentication options the ``K8S_AUTH_*`` variables of ``environ`` (default: this process) set."""
    environ = os.environ if environ is None else environ
    found = {}
    for option, variables in ENVIRONMENT:
        value = next((environ[v] for v in variables if environ.get(v) not in (None, "")), None)
        if value is None:
            continue
        if option == "validate_certs":
            value = value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
        elif option == "impersonate_groups":
            value = [group.strip() for group in value.split(",") if group.strip()]
        elif option in ("kubeconfig", "ca_cert", "client_cert", "client_key"):
            value = os.path.expanduser(value)
        found[option] = value
    return found


def connection_options(auth, environment=True, environ=None):
    """The authentication options of one connection, by the collection's credential rule.

    The ``K8S_AUTH_*`` environment is a fallback for a whole connection, never for part of one: when
    ``auth`` names a cluster (:func:`names_cluster`) it is used as given and no variable is read;
    otherwise the variables supply every option ``auth`` leaves unset. ``environment=False`` (member
    connections) never reads them. Unlike kubernetes.core, where ``K8S_AUTH_HOST`` overrides a
    kubeconfig's server, a task that names a member can therefore never be sent to the cluster an
    AWX credential put into the environment.
    """
    options = dict((k, v) for k, v in auth.items() if k in AUTH_OPTIONS and v not in (None, ""))
    if environment and not names_cluster(options):
        for option, value in from_environment(environ).items():
            options.setdefault(option, value)
    return options


def describe(name=None, role=None):
    """How messages call a cluster: ``cluster 'NAME'``, or by its role (``the hub``) when no name is known."""
    if name:
        return "cluster '%s'" % name
    return ROLES.get(role, "the cluster")


def get_cluster(auth, name=None, role=None):
    """Return the process-wide :class:`Cluster` for these credentials, building it once.

    ``auth`` is a dict of :data:`AUTH_OPTIONS` (missing keys mean unset), used as given (see
    :func:`connection_options`). ``name`` is the cluster's name where the caller knows it (a member's
    name); otherwise the kubeconfig context names it. ``role`` (``hub``, ``member``, ``hosting``) is
    how messages call a cluster that has no name.
    """
    key = (name, role, json.dumps({k: auth.get(k) for k in AUTH_OPTIONS}, sort_keys=True, default=str))
    cluster = _CLUSTERS.get(key)
    if cluster is None:
        config = build_configuration(auth, describe(name, role))
        cluster = _CLUSTERS[key] = Cluster(name or getattr(config, "fleet_context", None), config, role)
    return cluster


class Configuration:
    """Where and how to reach one API server.

    The attributes :class:`Cluster` reads, named as in the kubernetes library's ``Configuration``
    (which :func:`build_configuration` returns instead for users whose credentials come from a plugin).
    """

    def __init__(self):
        self.host = None
        self.api_key = {}
        self.api_key_prefix = {}
        self.refresh_api_key_hook = None
        self.verify_ssl = True
        self.ssl_ca_cert = None
        self.cert_file = None
        self.key_file = None
        self.tls_server_name = None
        self.proxy = None
        self.proxy_headers = None
        self.impersonate_user = None
        self.impersonate_groups = []
        self.fleet_context = None

    def get_api_key_with_prefix(self, identifier, alias=None):
        """The ``Authorization`` header value kept under ``identifier`` (or ``alias``), with its prefix."""
        if self.refresh_api_key_hook is not None:
            self.refresh_api_key_hook(self)
        key = self.api_key.get(identifier, self.api_key.get(alias) if alias is not None else None)
        if not key:
            return None
        prefix = self.api_key_prefix.get(identifier, self.api_key_prefix.get(alias) if alias is not None else None)
        return "%s %s" % (prefix, key) if prefix else key


def build_configuration(auth, who="the cluster"):
    """Resolve credentials to a :class:`Configuration`, failing with a message that starts with ``who``.

    Explicit options override what the kubeconfig says; with neither ``kubeconfig`` nor ``host`` the
    default kubeconfig (``KUBECONFIG`` or ``~/.kube/config``) is used, as kubectl does. The context a
    kubeconfig was read with is kept as ``fleet_context``: it names the cluster in messages.
    """
    if IMPORT_ERROR is not None:
        raise FleetError("the PyYAML Python library is required: %s" % IMPORT_ERROR)
    kubeconfig = auth.get("kubeconfig")
    context = auth.get("context")
    if kubeconfig or not auth.get("host"):
        config = _from_kubeconfig(kubeconfig, context, who)
    elif context:
        raise FleetError("%s: context '%s' given without a kubeconfig" % (who, context))
    else:
        config = Configuration()
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
                raise FleetError("%s: %s file %s %s" % (who, option, path, kubeconfigs.missing_file(path)))
            setattr(config, attribute, path)
    if auth.get("proxy"):
        config.proxy = auth["proxy"]
    config.impersonate_user = auth.get("impersonate_user")
    config.impersonate_groups = list(auth.get("impersonate_groups") or [])
    if not config.host or config.host == DEFAULT_HOST:
        raise FleetError("%s: no API server given; set kubeconfig (and context) or host" % who)
    _check_url(who, "host" if auth.get("host") else "the kubeconfig's server", config.host, ("https", "http"),
               "https://10.0.0.7:6443")
    if config.proxy:
        _check_url(who, "proxy" if auth.get("proxy") else "the kubeconfig's proxy-url", config.proxy, ("http", "https"),
                   "http://proxy.example:3128")
    return config


def _check_url(who, option, url, schemes, example):
    """FleetError naming ``option`` unless ``url`` is a URL with one of ``schemes``, a host and a numeric port."""
    problem = None
    try:
        parts = urlsplit(url)
        port = parts.port
    except (TypeError, ValueError):
        parts, port, problem = None, None, "it is not a URL with a numeric port"
    if problem is None and parts.scheme not in schemes:
        problem = "the scheme must be %s" % " or ".join("%s://" % scheme for scheme in schemes)
    elif problem is None and not parts.hostname:
        problem = "it names no host"
    elif problem is None and port == 0:
        problem = "the port must be between 1 and 65535"
    if problem:
        raise FleetError("%s: invalid %s %r: %s; expected a URL such as %s" % (who, option, str(url), problem, example))


def _from_kubeconfig(kubeconfig, context, who):
    """The configuration a kubeconfig path, a kubeconfig dict, or the default kubeconfig gives."""
    if not kubeconfig:
        kubeconfig = kubeconfigs.default_path()
        if not os.path.isfile(kubeconfig):
            raise FleetError("%s: no kubeconfig or host given, and no default kubeconfig at %s" % (who, kubeconfig))
    selection = kubeconfigs.select(kubeconfig, context, who)
    if selection.plugin:
        config = _from_plugin_user(selection)
        config.fleet_context = selection.context_name
        return config
    credentials = kubeconfigs.Credentials(selection)
    config = Configuration()
    config.fleet_context = selection.context_name
    if credentials.server:
        config.host = credentials.server
        if config.host.startswith("https"):
            config.ssl_ca_cert = credentials.ca_file or _data_file(credentials.ca_data)
            config.cert_file = credentials.client_cert_file or _data_file(credentials.client_cert_data)
            config.key_file = credentials.client_key_file or _data_file(credentials.client_key_data)
    config.verify_ssl = not credentials.insecure
    config.tls_server_name = credentials.tls_server_name
    config.proxy = credentials.proxy_url
    if credentials.token:
        config.api_key["BearerToken"] = "Bearer %s" % credentials.token
    elif credentials.username is not None and credentials.password is not None:
        basic = "%s:%s" % (credentials.username, credentials.password)
        config.api_key["BearerToken"] = "Basic " + base64.b64encode(basic.encode("utf-8")).decode("ascii")
    return config


def _from_plugin_user(selection):
    """The configuration of a user whose credentials an ``exec`` or ``auth-provider`` plugin produces.

    The kubernetes library's loader runs the plugin (and refreshes expiring tokens); it is imported
    only here. The TLS files it writes are moved at once into :func:`private_file` files, so that a module killed
    mid-run leaves no client key behind here either.
    """
    try:
        from kubernetes.client import Configuration as KubernetesConfiguration
        from kubernetes.config.kube_config import KubeConfigLoader
        from kubernetes.config.config_exception import ConfigException
    except ImportError as exc:
        raise selection.fail("user '%s' authenticates with %s, which needs the kubernetes Python library: %s"
                             % (selection.context.get("user"), selection.plugin, exc))
    data = {"clusters": [{"name": "cluster", "cluster": selection.cluster}],
            "users": [{"name": "user", "user": selection.user}],
            "contexts": [{"name": "context", "context": dict(selection.context, cluster="cluster", user="user")}],
            "current-context": "context"}
    config = KubernetesConfiguration()
    written = tempfile.mkdtemp(prefix="multicluster-fleet-")  # where the library writes the TLS files, for moments
    try:
        loader = KubeConfigLoader(config_dict=data, active_context="context", config_base_path=selection.directory,
                                  temp_file_path=written)
        loader.load_and_set(config)
        # The files it wrote (the inline CA, a plugin's client certificate and key) become private files: in the
        # configuration, and in the loader, whose token refresh copies its files into the configuration again.
        for attribute in ("ssl_ca_cert", "cert_file", "key_file"):
            path = getattr(config, attribute, None)
            if path and os.path.dirname(path) == written:
                with open(path, "rb") as handle:
                    private = _data_file(handle.read())
                setattr(config, attribute, private)
                if attribute in vars(loader):
                    setattr(loader, attribute, private)
    except (ConfigException, ValueError, TypeError, KeyError) as exc:
        raise selection.fail(exc)
    finally:
        shutil.rmtree(written, ignore_errors=True)
    return config


def private_file(content):
    """``(path, release)``: a file holding ``content`` (bytes) that only this process reads, for the TLS settings
    (CA, client certificate, client key), and the function that releases it.

    Where the system has anonymous memory files (Linux), it is one, as ``/proc/self/fd/N``: nothing reaches the
    disk, and it goes with the process however that ends - a module killed mid-run leaves no key behind. Elsewhere
    it is a temporary file of mode 0600, which ``release`` removes.
    """
    memory = _memory_file(content)
    if memory is not None:
        return "/proc/self/fd/%d" % memory, lambda: _quietly(os.close, memory)
    handle, path = tempfile.mkstemp(prefix="multicluster-fleet-", suffix=".pem")
    with os.fdopen(handle, "wb") as stream:
        stream.write(content)
    return path, lambda: _quietly(os.remove, path)


def _memory_file(content):
    """The descriptor of an anonymous memory file holding ``content``, or None where there is none."""
    if not hasattr(os, "memfd_create") or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        descriptor = os.memfd_create("multicluster-fleet", os.MFD_CLOEXEC)
    except OSError:  # refused, e.g. by a seccomp profile
        return None
    view = memoryview(content)
    while view:
        view = view[os.write(descriptor, view):]
    return descriptor


def _quietly(release, what):
    """``release(what)``, a file already gone being no error."""
    try:
        release(what)
    except OSError:
        pass


def _data_file(content):
    """The path of a :func:`private_file` holding ``content`` (bytes), one per content, released when the process ends."""
    if content is None:
        return None
    if content not in _DATA_FILES:
        if not _DATA_FILES:
            atexit.register(release_data_files)
        _DATA_FILES[content] = private_file(content)
    return _DATA_FILES[content][0]


def release_data_files():
    """Release the files :func:`_data_file` made (as at the end of the process, for a process that ends otherwise)."""
    for _path, release in _DATA_FILES.values():
        release()
    _DATA_FILES.clear()


class Cluster:
    """A connection to one API server: dict in, dict out, errors as :class:`ClusterError`."""

    def __init__(self, name, config, role=None):
        self.name = name
        self.role = role
        self.server = config.host.rstrip("/")
        self._config = config
        self._transport = _ProxiedTransport(config) if config.proxy else _DirectTransport(config)

    @property
    def label(self):
        """How messages call this cluster: ``cluster 'NAME' (URL)``, or ``the hub (URL)`` when it has no name."""
        return "%s (%s)" % (describe(self.name, self.role), self.server)

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
            raise FleetError("%s: cannot read the CA certificate %s: %s" % (self.label, path, exc))

    @property
    def verifies_tls(self):
        """False when this connection skips TLS verification (validate_certs false, insecure-skip-tls-verify)."""
        return bool(self._config.verify_ssl)

    @property
    def proxy(self):
        """The proxy URL requests to this server go through, or None."""
        return self._config.proxy or None

    def _headers(self, content_type):
        headers = [("Accept", "application/json"), ("User-Agent", "multicluster.fleet")]
        if content_type:
            headers.append(("Content-Type", content_type))
        token = self._config.get_api_key_with_prefix("BearerToken", alias="authorization")
        if token:
            headers.append(("Authorization", token))
        if getattr(self._config, "impersonate_user", None):
            headers.append(("Impersonate-User", self._config.impersonate_user))
        for group in getattr(self._config, "impersonate_groups", None) or []:
            headers.append(("Impersonate-Group", group))
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
            status, data = self._transport.send(method, url, payload, self._headers(content_type if payload else None),
                                                timeout or DEFAULT_TIMEOUT)
        except _Unreachable as exc:
            raise ClusterError("%s is unreachable: %s (%s)" % (self.label, exc.detail, exc.hint))
        if 200 <= status < 300:
            return json.loads(data) if data else None
        raise self._http_error(method, path, status, data)

    def _http_error(self, method, path, status, data):
        reason = None
        causes = []
        message = data.decode("utf-8", "replace").strip()[:500] if data else ""
        try:
            status_obj = json.loads(data)
            reason = status_obj.get("reason")
            message = status_obj.get("message") or message
            causes = [cause.get("reason") for cause in (status_obj.get("details") or {}).get("causes") or []]
        except (ValueError, AttributeError):
            pass
        if status == 401:
            return ClusterError("%s refused the credentials (401 Unauthorized): check the token, "
                                "client certificate or kubeconfig user" % self.label, status, reason)
        text = "%s: %s %s failed: %s %s" % (self.label, method, path, status, message or reason or "")
        if status == 403 and "NamespaceTerminating" in causes:
            text += " (the namespace is being deleted; run again once it is gone)"
        elif status == 403:
            text += " (the credentials lack RBAC permission for this)"
        error = {404: NotFound, 409: Conflict, 410: Gone}.get(status, ClusterError)
        return error(text.rstrip(), status, reason)

    def watch(self, path, resource_version, query=None, timeout_seconds=WATCH_SECONDS):
        """The events of a Kubernetes watch of collection ``path`` from ``resource_version``, as ``(type, object)``:
        ``ADDED``, ``MODIFIED``, ``DELETED`` and ``BOOKMARK`` (whose object carries only the resourceVersion reached),
        read as the server streams them (one JSON document a line), until it ends the watch (after ``timeout_seconds``).

        Raises :class:`Gone` when the server no longer has ``resource_version`` (as the answer, or as an ``ERROR`` event:
        list again), :class:`ClusterError` as :meth:`request` does, also when the connection breaks mid-watch.
        """
        fields = dict(query or {}, watch="true", allowWatchBookmarks="true", resourceVersion=resource_version,
                      timeoutSeconds=timeout_seconds)
        url = self.server + path + "?" + urlencode([(k, v) for k, v in fields.items() if v is not None])
        what = "%s: watch of %s" % (self.label, path)
        try:
            status, lines, close = self._transport.stream(url, self._headers(None), (DEFAULT_TIMEOUT[0], timeout_seconds + 30))
        except _Unreachable as exc:
            raise ClusterError("%s is unreachable: %s (%s)" % (self.label, exc.detail, exc.hint))
        try:
            if status != 200:
                raise self._http_error("GET", path, status, b"".join(lines))
            for line in lines:
                if not line.strip():
                    continue
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    code = obj.get("code") or 500
                    raise (Gone if code == 410 else ClusterError)(
                        "%s ended: %s %s" % (what, code, obj.get("message") or obj.get("reason") or ""), code, obj.get("reason"))
                yield event.get("type"), obj
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise ClusterError("%s broke off: %s (%s)" % (what, str(exc) or type(exc).__name__, CONNECT_HINT))
        finally:
            close()


class _Unreachable(Exception):
    """A request that got no answer: ``detail`` says what happened, ``hint`` what to check."""

    def __init__(self, detail, hint="check the network path to the API server"):
        super(_Unreachable, self).__init__(detail)
        self.detail = detail
        self.hint = hint


def verifying_context(cafile=None, cadata=None):
    """A TLS context that verifies the server against ``cafile`` / ``cadata`` (else the system's CAs) as Kubernetes'
    own clients (Go) and urllib3 do: without Python 3.13's VERIFY_X509_STRICT, which also refuses a certificate that
    lacks an Authority Key Identifier, as many cluster CAs issue them."""
    context = ssl.create_default_context(cafile=cafile, cadata=cadata)
    context.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
    return context


def _tls_context(config):
    """The TLS settings of ``config``: its CA (else the system's), client certificate, and verification."""
    try:
        context = verifying_context(cafile=config.ssl_ca_cert or None)
        if config.cert_file:
            context.load_cert_chain(config.cert_file, config.key_file)
    except (OSError, ValueError) as exc:
        raise _Unreachable("cannot use the TLS files: %s" % exc, "check ca_cert, client_cert and client_key")
    if not config.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class _TLSConnection(http.client.HTTPSConnection):
    """An HTTPS connection that can check the server's certificate for another name (``tls-server-name``)."""

    def __init__(self, host, port, timeout, context, server_hostname):
        super(_TLSConnection, self).__init__(host, port, timeout=timeout, context=context)
        self._tls_context = context
        self._server_hostname = server_hostname or host

    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as http.client does: no Nagle delay
        self.sock = self._tls_context.wrap_socket(sock, server_hostname=self._server_hostname)


# How a kept-alive connection that the server closed fails when it is used.
_DISCONNECTED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class _DirectTransport:
    """Requests to one server over kept-alive connections of the standard library (safe across threads)."""

    def __init__(self, config):
        parts = urlsplit(config.host)
        self._config = config
        self._tls = parts.scheme == "https"
        self._address = (parts.hostname, parts.port or (443 if self._tls else 80))
        self._context = None
        self._idle = []
        self._lock = threading.Lock()

    def send(self, method, url, payload, headers, timeout):
        """``(status, body)`` of one request; connections refused or timed out are tried again.

        A kept-alive connection the server closed just as it was reused fails without an answer; a GET is then
        sent again on a new connection (as Go's client does), any other request fails as unreachable.
        """
        parts = urlsplit(url)
        target = parts.path + ("?" + parts.query if parts.query else "")
        for attempt in (1, 2):
            connection, reused = self._connection(timeout[0], reuse=attempt == 1)
            try:
                status, data, keep = self._exchange(connection, method, target, payload, headers, timeout[1])
                break
            except _DISCONNECTED as exc:
                connection.close()
                if not (reused and method == "GET"):
                    raise self._unreachable(exc, connecting=False)
        if keep:
            with self._lock:
                if len(self._idle) < IDLE_CONNECTIONS:
                    self._idle.append(connection)
                    return status, data
        connection.close()
        return status, data

    def stream(self, url, headers, timeout):
        """``(status, lines, close)`` of a GET whose answer is read as it comes, on a connection of its own."""
        parts = urlsplit(url)
        connection, _reused = self._connection(timeout[0], reuse=False)
        try:
            connection.sock.settimeout(timeout[1])
            connection.putrequest("GET", parts.path + "?" + parts.query, skip_accept_encoding=True)
            for name, value in headers:
                connection.putheader(name, value)
            connection.endheaders()
            response = connection.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise self._unreachable(exc, connecting=False)
        return response.status, iter(response.readline, b""), connection.close

    def _exchange(self, connection, method, target, payload, headers, timeout):
        """Send one request on ``connection``: ``(status, body, whether the connection stays open)``."""
        try:
            connection.sock.settimeout(timeout)
            connection.putrequest(method, target, skip_accept_encoding=True)
            for name, value in headers:
                connection.putheader(name, value)
            if payload is not None or method in ("POST", "PUT", "PATCH"):
                connection.putheader("Content-Length", str(len(payload or b"")))
            connection.endheaders(payload)
            response = connection.getresponse()
            return response.status, response.read(), not response.will_close
        except _DISCONNECTED:
            raise
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise self._unreachable(exc, connecting=False)

    def _connection(self, timeout, reuse=True):
        """``(connection, reused)``: a kept-alive connection the server has not closed meanwhile, else a new one."""
        with self._lock:
            while reuse and self._idle:
                connection = self._idle.pop()
                if not select.select([connection.sock], [], [], 0)[0]:  # nothing to read: still open
                    return connection, True
                connection.close()
        for delay in CONNECT_RETRY_DELAYS + (None,):
            connection = self._new_connection(timeout)
            try:
                connection.connect()
                return connection, False
            except (ConnectionRefusedError, socket.timeout) as exc:
                connection.close()
                if delay is None:
                    raise self._unreachable(exc, connecting=True)
                time.sleep(delay)
            except OSError as exc:
                connection.close()
                raise self._unreachable(exc, connecting=True)

    def _new_connection(self, timeout):
        if not self._tls:
            return http.client.HTTPConnection(self._address[0], self._address[1], timeout=timeout)
        if self._context is None:
            self._context = _tls_context(self._config)
        return _TLSConnection(self._address[0], self._address[1], timeout, self._context,
                              getattr(self._config, "tls_server_name", None))

    @staticmethod
    def _unreachable(cause, connecting):
        text = str(cause) or type(cause).__name__
        if isinstance(cause, ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in text:
            return _Unreachable(text, TLS_HINT)
        if connecting:
            return _Unreachable("failed to connect: %s" % text, CONNECT_HINT)
        return _Unreachable(text)


class _ProxiedTransport:
    """Requests to one server through the proxy of ``config`` (HTTP or HTTPS), with urllib3's ProxyManager."""

    def __init__(self, config):
        try:
            import urllib3
            from urllib3._collections import HTTPHeaderDict
        except ImportError as exc:
            raise FleetError("a connection through a proxy (%s) needs the urllib3 Python library: %s" % (config.proxy, exc))
        self._urllib3 = urllib3
        self._header_dict = HTTPHeaderDict
        tls = dict(
            cert_reqs="CERT_REQUIRED" if config.verify_ssl else "CERT_NONE",
            ca_certs=config.ssl_ca_cert,
            cert_file=config.cert_file,
            key_file=config.key_file,
            retries=urllib3.Retry(total=2, connect=2, read=0, status=0, backoff_factor=0.2, redirect=False),
            maxsize=IDLE_CONNECTIONS,
        )
        if getattr(config, "tls_server_name", None):
            tls["server_hostname"] = config.tls_server_name
        if not config.verify_ssl:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        self._pool = urllib3.ProxyManager(config.proxy, proxy_headers=getattr(config, "proxy_headers", None), **tls)

    def send(self, method, url, payload, headers, timeout):
        """``(status, body)`` of one request."""
        urllib3 = self._urllib3
        fields = self._header_dict()
        for name, value in headers:
            fields.add(name, value)
        try:
            response = self._pool.request(method, url, body=payload, headers=fields,
                                          timeout=urllib3.Timeout(*timeout), preload_content=True)
        except urllib3.exceptions.MaxRetryError as exc:
            raise self._unreachable(exc.reason)
        except urllib3.exceptions.HTTPError as exc:
            raise self._unreachable(exc)
        return response.status, response.data

    def stream(self, url, headers, timeout):
        """``(status, lines, close)`` of a GET whose answer is read as it comes."""
        urllib3 = self._urllib3
        fields = self._header_dict()
        for name, value in headers:
            fields.add(name, value)
        try:
            response = self._pool.request("GET", url, headers=fields, timeout=urllib3.Timeout(*timeout), preload_content=False)
        except urllib3.exceptions.MaxRetryError as exc:
            raise self._unreachable(exc.reason)
        except urllib3.exceptions.HTTPError as exc:
            raise self._unreachable(exc)
        return response.status, iter(response.readline, b""), response.release_conn

    def _unreachable(self, cause):
        exceptions = self._urllib3.exceptions
        text = str(cause)
        if isinstance(cause, exceptions.SSLError) or "CERTIFICATE_VERIFY_FAILED" in text:
            return _Unreachable(text, TLS_HINT)
        if isinstance(cause, (exceptions.NewConnectionError, exceptions.ConnectTimeoutError)):
            detail = text.split(": ", 1)[-1] if isinstance(cause, exceptions.NewConnectionError) else text
            return _Unreachable(detail, CONNECT_HINT)
        return _Unreachable(text)
