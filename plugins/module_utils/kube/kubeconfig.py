# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading kubeconfigs without the kubernetes library.

:func:`resolve` picks one context of a kubeconfig (a path or a dict) and returns what it says about
the API server and the credentials; :func:`flatten` makes a self-contained copy of one context that
can be stored in a Secret for use elsewhere. File references are relative to the kubeconfig's
directory, as kubectl reads them (relative to the working directory for a kubeconfig given as a
dict); where both a file and its ``*-data`` are given, the data wins.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import os

from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

try:
    import yaml
except ImportError as exc:  # pragma: no cover - the modules report the missing library first
    yaml = None
    YAML_IMPORT_ERROR = exc
else:
    YAML_IMPORT_ERROR = None

DEFAULT_PATH = "~/.kube/config"
# (file field, inline base64 field) of the cluster and user entries
CLUSTER_FILES = (("certificate-authority", "certificate-authority-data"),)
USER_FILES = (("client-certificate", "client-certificate-data"), ("client-key", "client-key-data"))
# user fields whose credentials are produced by a plugin where the kubeconfig is used
PLUGINS = ("exec", "auth-provider")


def default_path():
    """The kubeconfig kubectl reads when given none: the first entry of ``KUBECONFIG``, else ``~/.kube/config``."""
    entries = [entry for entry in (os.environ.get("KUBECONFIG") or "").split(os.pathsep) if entry]
    return os.path.expanduser(entries[0] if entries else DEFAULT_PATH)


def missing_file(path):
    """Why ``path`` is not a readable file, for messages: it does not exist, or it is a directory."""
    return "is a directory, not a file" if os.path.isdir(path) else "does not exist"


def load(kubeconfig, who="the cluster"):
    """``(source, directory, config)`` of a kubeconfig path or dict.

    ``source`` is how messages call the kubeconfig, ``directory`` what relative file references are
    relative to. Raises :class:`FleetError` starting with ``who`` (the cluster, e.g. ``cluster
    'member1'``) when the file is missing, unreadable or not a mapping.
    """
    if isinstance(kubeconfig, dict):
        return "the kubeconfig given as a dict", os.getcwd(), kubeconfig
    path = os.path.expanduser(str(kubeconfig))
    source = "kubeconfig %s" % path
    if not os.path.isfile(path):
        raise FleetError("%s: kubeconfig file %s %s" % (who, path, missing_file(path)))
    if yaml is None:
        raise FleetError("%s: the PyYAML Python library is required to read %s: %s" % (who, source, YAML_IMPORT_ERROR))
    try:
        with open(path) as handle:
            config = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml when present
    except (OSError, yaml.YAMLError) as exc:
        raise FleetError("%s: cannot read %s: %s" % (who, source, exc))
    except UnicodeDecodeError:
        raise FleetError("%s: %s is not a kubeconfig: it is not text (a binary file?); expected a YAML kubeconfig"
                         % (who, source))
    if not isinstance(config, dict):
        raise FleetError("%s: %s is not a kubeconfig (expected a mapping)" % (who, source))
    return source, os.path.dirname(os.path.abspath(path)), config


def _entries(config, section):
    entries = config.get(section)
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _named(config, section, wanted):
    for entry in _entries(config, section):
        if entry.get("name") == wanted:
            value = entry.get(section[:-1])
            return dict(value) if isinstance(value, dict) else {}
    return None


class Selection:
    """One context of a kubeconfig: copies of its ``context``, ``cluster`` and ``user`` entries."""

    def __init__(self, who, source, directory, context_name, context, cluster, user):
        self.who = who
        self.source = source
        self.directory = directory
        self.context_name = context_name
        self.context = context
        self.cluster = cluster
        self.user = user

    def fail(self, problem):
        """A :class:`FleetError` saying this context is not usable because of ``problem``."""
        return FleetError("%s: %s, context '%s', is not usable: %s" % (self.who, self.source, self.context_name, problem))

    @property
    def plugin(self):
        """``exec`` or ``auth-provider`` when the user's credentials come from a plugin, else None."""
        return next((key for key in PLUGINS if self.user.get(key)), None)

    def path(self, value):
        """A file reference of this kubeconfig as an absolute path."""
        return os.path.normpath(os.path.join(self.directory, os.path.expanduser(str(value))))

    def read(self, field, value):
        path = self.path(value)
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except (OSError, IOError) as exc:
            raise self.fail("%s %s cannot be read: %s" % (field, path, exc.strerror or exc))

    def data(self, entry, data_field):
        """The decoded content of a base64 ``*-data`` field, or None when unset."""
        value = entry.get(data_field)
        if not value:
            return None
        try:
            return base64.b64decode(value if isinstance(value, bytes) else str(value).encode("ascii"), validate=False)
        except (binascii.Error, ValueError, UnicodeError) as exc:
            raise self.fail("%s is not valid base64: %s" % (data_field, exc))

    def file_or_data(self, entry, file_field, data_field):
        """``(path, None)``, ``(None, content)`` or ``(None, None)`` for a file field and its ``*-data`` field."""
        data = self.data(entry, data_field)
        if data is not None:
            return None, data
        if not entry.get(file_field):
            return None, None
        path = self.path(entry[file_field])
        if not os.path.isfile(path):
            raise self.fail("%s %s %s" % (file_field, path, missing_file(path)))
        return path, None

    def token(self):
        """The user's bearer token: ``token``, else the content of ``tokenFile`` (stripped), else None."""
        if self.user.get("token"):
            return str(self.user["token"]).strip()
        if self.user.get("tokenFile"):
            return self.read("tokenFile", self.user["tokenFile"]).decode("utf-8", "replace").strip() or None
        return None


def select(kubeconfig, context=None, who="the cluster"):
    """The :class:`Selection` of ``context`` (default: the current context) in a kubeconfig path or dict.

    Raises :class:`FleetError` starting with ``who`` and naming the kubeconfig when the context, or the
    cluster or user it names, is missing.
    """
    source, directory, config = load(kubeconfig, who)
    contexts = [str(entry.get("name")) for entry in _entries(config, "contexts")]
    wanted = context or config.get("current-context")
    if not wanted:
        raise FleetError("%s: %s has no current-context; set context (one of: %s)"
                         % (who, source, ", ".join(contexts) or "none"))
    selected = _named(config, "contexts", wanted)
    if selected is None:
        raise FleetError("%s: context '%s' not found in %s (available: %s)"
                         % (who, wanted, source, ", ".join(contexts) or "none"))
    selection = Selection(who, source, directory, wanted, selected, {}, {})
    cluster_name = selected.get("cluster")
    if not cluster_name:
        raise selection.fail("the context names no cluster")
    selection.cluster = _named(config, "clusters", cluster_name)
    if selection.cluster is None:
        raise selection.fail("cluster '%s' is not defined" % cluster_name)
    user_name = selected.get("user")
    if user_name:  # a context without a user connects anonymously
        selection.user = _named(config, "users", user_name)
        if selection.user is None:
            raise selection.fail("user '%s' is not defined" % user_name)
    return selection


class Credentials:
    """What one context says about its API server and how to authenticate to it.

    Files are absolute paths, ``*_data`` decoded bytes; of a file and its data only one is set.
    """

    def __init__(self, selection):
        cluster, user = selection.cluster, selection.user
        self.selection = selection
        self.context = selection.context_name
        self.namespace = selection.context.get("namespace")
        self.server = str(cluster["server"]).rstrip("/") if cluster.get("server") else None
        self.insecure = bool(cluster.get("insecure-skip-tls-verify", False))
        self.tls_server_name = cluster.get("tls-server-name") or None
        self.proxy_url = cluster.get("proxy-url") or None
        self.ca_file, self.ca_data = selection.file_or_data(cluster, *CLUSTER_FILES[0])
        self.client_cert_file, self.client_cert_data = selection.file_or_data(user, *USER_FILES[0])
        self.client_key_file, self.client_key_data = selection.file_or_data(user, *USER_FILES[1])
        self.plugin = selection.plugin
        self.token = None if self.plugin else selection.token()
        self.username = user.get("username")
        self.password = user.get("password")


def resolve(kubeconfig, context=None, who="the cluster"):
    """The :class:`Credentials` of ``context`` (default: the current context) of a kubeconfig path or dict."""
    return Credentials(select(kubeconfig, context, who))


def flatten(kubeconfig, context=None, who="the cluster"):
    """A self-contained kubeconfig dict for ``context`` (default: the current one) of ``kubeconfig``.

    It has exactly one cluster, user and context; files the kubeconfig names are embedded as
    ``*-data`` and a ``tokenFile`` as ``token``. Users that authenticate with ``exec`` or
    ``auth-provider`` are refused: their credentials exist only where the plugin runs.
    """
    selection = select(kubeconfig, context, who)
    if selection.plugin:
        raise selection.fail("user '%s' authenticates with %s, which cannot be copied for use elsewhere; give a "
                             "kubeconfig whose user has a token or a client certificate"
                             % (selection.context.get("user"), selection.plugin))
    cluster, user = dict(selection.cluster), dict(selection.user)
    for entry, fields in ((cluster, CLUSTER_FILES), (user, USER_FILES)):
        for file_field, data_field in fields:
            path = entry.pop(file_field, None)
            if path and not entry.get(data_field):
                entry[data_field] = base64.b64encode(selection.read(file_field, path)).decode("ascii")
    token_file = user.pop("tokenFile", None)
    if token_file and not user.get("token"):
        user["token"] = selection.token()
    context_entry = {"cluster": "cluster", "user": "user"}
    if selection.context.get("namespace"):
        context_entry["namespace"] = selection.context["namespace"]
    return {"apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "cluster", "cluster": cluster}],
            "users": [{"name": "user", "user": user}],
            "contexts": [{"name": selection.context_name, "context": context_entry}],
            "current-context": selection.context_name}
