"""What AWX does around a job, replicated from AWX's own source for the tests.

AWX (https://github.com/ansible/awx) runs a job template as an ansible-runner job in a private data
directory. This module rebuilds the parts the collection meets:

- ``validate_credential_type``: the checks AWX applies when a credential type is saved
  (``awx/main/fields.py``: ``CredentialTypeInputField``, ``CredentialTypeInjectorField``);
- ``inject_credential``: how a job receives a credential (``awx/main/models/credential.py``:
  ``CredentialType.inject_credential``): the injector templates rendered by an immutable sandboxed
  Jinja2 environment with the inputs and the ``tower`` namespace, each file template written to a
  private ``env/tmp*`` file (mode 0600) whose path is ``tower.filename`` (one unnamed ``template``) or
  ``tower.filename.<name>`` (``template.<name>``), env injectors into the job environment (``ANSIBLE_*``
  and AWX's own variables refused), and the extra_vars injectors, except in inventory updates, into an
  ``env/tmp*`` file (mode 0400) dumped with every string ``!unsafe`` and passed as ``-e @file``;
- ``write_private_data_dir``: ``env/envvars``, ``env/extravars`` (job extra variables through AWX's
  ``safe_dump``), ``env/cmdline``, ``env/settings``, ``inventory/`` and ``project/``
  (``awx/main/tasks/jobs.py``: ``BaseTask.run``, ``RunJob.build_extra_vars_file``).

In AWX the execution environment's container sees the private data directory as ``/runner``; here
ansible-runner runs the job without a container, so file paths are the host's.
"""

import os
import re
import shlex
import shutil
import stat
import tempfile

import yaml
from jinja2 import StrictUndefined, sandbox
from jinja2.exceptions import UndefinedError

# awx/main/constants.py ENV_BLOCKLIST: what no credential may set.
ENV_BLOCKLIST = frozenset((
    "VIRTUAL_ENV", "PATH", "PYTHONPATH", "JOB_ID", "INVENTORY_ID", "INVENTORY_SOURCE_ID", "INVENTORY_UPDATE_ID",
    "AD_HOC_COMMAND_ID", "REST_API_URL", "REST_API_TOKEN", "MAX_EVENT_RES", "CALLBACK_QUEUE", "CALLBACK_CONNECTION",
    "CACHE", "JOB_CALLBACK_DEBUG", "INVENTORY_HOSTVARS", "AWX_HOST", "PROJECT_REVISION", "SUPERVISOR_CONFIG_PATH",
))
FIELD_KEYS = {"type", "format", "choices", "id", "label", "help_text", "multiline", "secret", "ask_at_runtime", "default"}
FIELD_ID = re.compile(r"^[a-zA-Z_]+[a-zA-Z0-9_]*$")
FILE_TEMPLATE = re.compile(r"^template(\.[a-zA-Z_]+[a-zA-Z0-9_]*)?$")
ENV_NAME = re.compile(r"^[a-zA-Z_]+[a-zA-Z0-9_]*$")
EXTRA_VAR_NAME = re.compile(r"^[a-zA-Z_\{\}]+[a-zA-Z0-9_\{\}]*$")


class CredentialTypeError(ValueError):
    pass


# --- awx/main/fields.py ---------------------------------------------------------------------------

def validate_credential_type(definition):
    """Raise CredentialTypeError where AWX would refuse to save ``definition`` (inputs and injectors)."""
    inputs, injectors = definition.get("inputs") or {}, definition.get("injectors") or {}
    if set(inputs) - {"required", "fields"}:
        raise CredentialTypeError("inputs: unknown keys %s" % sorted(set(inputs) - {"required", "fields"}))
    ids = []
    for field in inputs.get("fields", []):
        if set(field) - FIELD_KEYS or not {"id", "label"} <= set(field):
            raise CredentialTypeError("field %r: keys must be among %s, with id and label" % (field, sorted(FIELD_KEYS)))
        if not FIELD_ID.match(field["id"]) or field["id"] == "tower" or field["id"] in ids:
            raise CredentialTypeError("field id %r is invalid, reserved or repeated" % field["id"])
        ids.append(field["id"])
        kind = field.get("type", "string")
        if kind not in ("string", "boolean"):
            raise CredentialTypeError("field %s: type must be string or boolean" % field["id"])
        if "default" in field and not isinstance(field["default"], {"string": str, "boolean": bool}[kind]):
            raise CredentialTypeError("field %s: default %r is not a %s" % (field["id"], field["default"], kind))
        for key in ("choices", "multiline", "format", "secret"):
            if key in field and kind != "string":
                raise CredentialTypeError("%s not allowed for %s type (%s)" % (key, kind, field["id"]))
    if set(inputs.get("required", [])) - set(ids):
        raise CredentialTypeError("required names undefined fields %s" % sorted(set(inputs["required"]) - set(ids)))

    if set(injectors) - {"file", "env", "extra_vars"}:
        raise CredentialTypeError("injectors: unknown keys %s" % sorted(set(injectors) - {"file", "env", "extra_vars"}))
    templates = list(injectors.get("file", {}))
    if any(not FILE_TEMPLATE.match(name) for name in templates):
        raise CredentialTypeError("file injector names must be template or template.<name>: %s" % templates)
    if "template" in templates and len(templates) > 1:
        raise CredentialTypeError("Must use multi-file syntax when injecting multiple files")

    class Exploding:
        def __str__(self):
            raise UndefinedError("Must define unnamed file injector in order to reference `tower.filename`.")

    class Tower:
        def __init__(self):
            self.filename = Exploding()

        def __str__(self):
            raise UndefinedError("Cannot directly reference reserved `tower` namespace container.")

    namespace = dict((field_id, "EXAMPLE") for field_id in ids)
    namespace["tower"] = Tower()
    if "template" in templates:
        namespace["tower"].filename = "EXAMPLE_FILENAME"
    else:
        for name in templates:
            setattr(namespace["tower"].filename, name.split(".")[1], "EXAMPLE_FILENAME")

    def check(kind, key, template):
        try:
            sandbox.ImmutableSandboxedEnvironment(undefined=StrictUndefined).from_string(template).render(namespace)
        except UndefinedError as exc:
            raise CredentialTypeError("%s uses an undefined field (%s)" % (key, exc))

    def check_extra_vars(key, node):
        if isinstance(node, dict):
            for name, value in node.items():
                if not EXTRA_VAR_NAME.match(name):
                    raise CredentialTypeError("extra_vars: invalid variable name %r" % name)
                check("extra_vars", "a key" if key is None else key, name)
                check_extra_vars(name if key is None else "%s.%s" % (key, name), value)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                check_extra_vars("%s[%d]" % (key, index), value)
        else:
            check("extra_vars", key, node)

    for kind, injector in injectors.items():
        if kind == "env":
            for name, template in injector.items():
                if not ENV_NAME.match(name) or name.startswith("ANSIBLE_") or name in ENV_BLOCKLIST:
                    raise CredentialTypeError("Environment variable %s is not allowed in credentials" % name)
                if not isinstance(template, str) or not template.isascii():
                    raise CredentialTypeError("env %s: the value must be an ASCII string" % name)
        if kind == "extra_vars":
            check_extra_vars(None, injector)
        else:
            for key, template in injector.items():
                check(kind, key, template)


# --- awx/main/models/credential.py ----------------------------------------------------------------

def inject_credential(definition, inputs, env, safe_env, args, private_data_dir, container_path=lambda path: path):
    """Add what a credential of type ``definition`` with ``inputs`` gives a job: ``env`` (and ``safe_env``, with
    secrets masked, what AWX stores), ``args`` (``-e @file`` for extra_vars) and files under ``private_data_dir``/env."""
    injectors = definition.get("injectors") or {}
    fields = (definition.get("inputs") or {}).get("fields", [])
    secret_fields = [field["id"] for field in fields if field.get("secret") is True]

    class TowerNamespace:
        pass

    tower = TowerNamespace()
    namespace, safe_namespace = {"tower": tower}, {"tower": tower}
    for name, value in inputs.items():
        if isinstance(value, bool):
            safe_namespace[name] = namespace[name] = value
            continue
        if name in secret_fields:
            safe_namespace[name] = "**********"
        elif len(value):
            safe_namespace[name] = value
        if len(value):
            namespace[name] = value
    for field in fields:
        if field.get("type") == "boolean" and field["id"] not in inputs:
            namespace[field["id"]] = safe_namespace[field["id"]] = False

    environment = sandbox.ImmutableSandboxedEnvironment()
    for label, template in injectors.get("file", {}).items():
        data = environment.from_string(template).render(**namespace)
        _handle, path = tempfile.mkstemp(dir=os.path.join(private_data_dir, "env"))
        with open(path, "w") as stream:
            stream.write(data)
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
        if label.find(".") == -1:
            tower.filename = container_path(path)
        else:
            if not hasattr(tower, "filename"):
                tower.filename = TowerNamespace()
            setattr(tower.filename, label.split(".")[1], container_path(path))

    for name, template in injectors.get("env", {}).items():
        if name.startswith("ANSIBLE_") or name in ENV_BLOCKLIST:
            continue  # AWX logs and ignores them
        env[name] = environment.from_string(template).render(**namespace)
        safe_env[name] = environment.from_string(template).render(**safe_namespace)

    if "INVENTORY_UPDATE_ID" not in env:  # inventory updates take no extra vars
        def build(node):
            if isinstance(node, dict):
                return dict((build(key), build(value)) for key, value in node.items())
            if isinstance(node, list):
                return [build(item) for item in node]
            return environment.from_string(node).render(**namespace)

        extra_vars = build(injectors.get("extra_vars", {}))
        if extra_vars:
            handle, path = tempfile.mkstemp(dir=os.path.join(private_data_dir, "env"))
            with os.fdopen(handle, "w") as stream:
                stream.write(safe_dump(extra_vars))
            os.chmod(path, stat.S_IRUSR)
            args.extend(["-e", "@%s" % container_path(path)])


# --- awx/main/utils/safe_yaml.py ------------------------------------------------------------------

class _UnsafeDumper(yaml.SafeDumper):
    def represent_data(self, data):
        if isinstance(data, str):
            return self.represent_scalar("!unsafe", data)
        return super(_UnsafeDumper, self).represent_data(data)


def safe_dump(data, safe_dict=None):
    """YAML of ``data`` with every string ``!unsafe`` except top-level items equal to ``safe_dict``'s."""
    safe_dict = safe_dict or {}
    return "".join(yaml.dump_all([{key: value}], None, default_flow_style=False,
                                 Dumper=yaml.SafeDumper if safe_dict.get(key, object()) == value else _UnsafeDumper)
                   for key, value in data.items())


# --- awx/main/tasks/jobs.py -----------------------------------------------------------------------

def new_private_data_dir(parent):
    """An empty private data directory as AWX creates one (``env/`` for the private files)."""
    path = tempfile.mkdtemp(prefix="awx_", dir=parent)
    os.makedirs(os.path.join(path, "env"), mode=0o700)
    return path


def write_private_data_dir(path, project, inventory, env, args, extra_vars, job_template_vars, settings=None):
    """Fill the private data directory ``path``: ``project/`` (a copy of the directory ``project``),
    ``inventory/`` (``inventory`` maps file names to their text), ``env/envvars``, ``env/extravars``
    (``extra_vars``, of which those equal to ``job_template_vars`` stay templatable), ``env/cmdline``
    (``args``) and ``env/settings``."""
    shutil.copytree(project, os.path.join(path, "project"))
    os.makedirs(os.path.join(path, "inventory"))
    for name, text in inventory.items():
        _write(os.path.join(path, "inventory", name), text, 0o600)
    _write(os.path.join(path, "env", "envvars"), yaml.safe_dump(env), 0o600)
    _write(os.path.join(path, "env", "extravars"), safe_dump(extra_vars, job_template_vars), 0o600)
    _write(os.path.join(path, "env", "cmdline"), " ".join(shlex.quote(arg) for arg in args), 0o600)  # args2cmdline
    _write(os.path.join(path, "env", "settings"), yaml.safe_dump(settings or {"suppress_ansible_output": True}), 0o600)


def _write(path, text, mode):
    with open(path, "w") as stream:
        stream.write(text)
    os.chmod(path, mode)
