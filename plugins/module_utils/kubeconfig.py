# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading kubeconfigs without the kubernetes library: the entries of one context, and a
self-contained copy of them that can be stored in a Secret for use elsewhere."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import os

from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

try:
    import yaml
except ImportError:  # pragma: no cover - the modules report the missing library first
    yaml = None

# kubeconfig fields that name a file, and the field that holds the same content inline (base64)
_FILE_FIELDS = {"cluster": (("certificate-authority", "certificate-authority-data"),),
                "user": (("client-certificate", "client-certificate-data"), ("client-key", "client-key-data"))}
_UNCOPYABLE = ("exec", "auth-provider")


def _named(config, section, name, what, source):
    for entry in config.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return dict(entry.get(section[:-1]) or {})
    raise FleetError("%s: %s %r is not defined" % (source, what, name))


def load(kubeconfig, label="cluster"):
    """``(source, directory, config)`` of a kubeconfig path or dict; FleetError naming ``label`` otherwise."""
    if isinstance(kubeconfig, dict):
        return "cluster '%s': the kubeconfig given as a dict" % label, os.getcwd(), kubeconfig
    path = os.path.expanduser(kubeconfig)
    source = "cluster '%s': kubeconfig %s" % (label, path)
    if not os.path.isfile(path):
        raise FleetError("%s does not exist" % source)
    try:
        with open(path) as handle:
            config = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise FleetError("%s cannot be read: %s" % (source, exc))
    if not isinstance(config, dict):
        raise FleetError("%s is not a kubeconfig" % source)
    return source, os.path.dirname(os.path.abspath(path)), config


def flatten(kubeconfig, context=None, label="cluster"):
    """A self-contained kubeconfig dict for ``context`` (default: the current one) of ``kubeconfig``.

    It has exactly one cluster, user and context; files the kubeconfig names (relative to its
    directory, as kubectl reads them) are embedded as ``*-data`` and a ``tokenFile`` as ``token``.
    Users that authenticate with ``exec`` or ``auth-provider`` are refused: their credentials exist
    only where the plugin runs.
    """
    source, directory, config = load(kubeconfig, label)
    context_name = context or config.get("current-context")
    if not context_name:
        raise FleetError("%s has no current-context; name one with context" % source)
    selected = _named(config, "contexts", context_name, "context", source)
    cluster = _named(config, "clusters", selected.get("cluster"), "cluster", source)
    user = _named(config, "users", selected.get("user"), "user", source)
    uncopyable = [key for key in _UNCOPYABLE if user.get(key)]
    if uncopyable:
        raise FleetError("%s: user %r authenticates with %s, which cannot be copied for use elsewhere; give a kubeconfig "
                         "with a token or a client certificate" % (source, selected.get("user"), uncopyable[0]))
    for section, entry in (("cluster", cluster), ("user", user)):
        for file_field, data_field in _FILE_FIELDS[section]:
            if entry.get(file_field):
                entry[data_field] = base64.b64encode(_read(directory, entry.pop(file_field), source)).decode("ascii")
    if user.get("tokenFile"):
        user["token"] = _read(directory, user.pop("tokenFile"), source).decode("utf-8").strip()
    context_entry = {"cluster": "cluster", "user": "user"}
    if selected.get("namespace"):
        context_entry["namespace"] = selected["namespace"]
    return {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "cluster", "cluster": cluster}],
            "users": [{"name": "user", "user": user}], "contexts": [{"name": context_name, "context": context_entry}],
            "current-context": context_name}


def _read(directory, path, source):
    full = os.path.join(directory, os.path.expanduser(path))
    try:
        with open(full, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise FleetError("%s refers to %s, which cannot be read: %s" % (source, full, exc.strerror))
