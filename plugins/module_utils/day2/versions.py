# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Engine releases: version parsing, image tags, the version skew rule, the image settings and upgrade batches.

The skew rule (docs/versions.md): an agent never runs a newer minor release than its hub (Karmada: "an agent never newer
than the control plane"; OCM: hub first, then the managed clusters), and an agent more than one minor release behind
the hub is warned about, as Kubernetes' own version skew policy counts in minor releases.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9A-Za-z.+-]*)?$")
# How many minor releases an agent may be behind its hub before a warning.
MAX_MINOR_BEHIND = 1


# A release as the settings name it (karmada_version, ocm_version, hub_version): vX.Y.Z with an optional pre-release
# (semver's: dot-separated identifiers of letters, digits and '-'), the leading v optional - both roles write the tag
# as v<X.Y.Z>, and OCM's releases are spelled without it (clusteradm --bundle-version 1.3.1).
RELEASE_RE = re.compile(r"v?(\d{1,9})\.(\d{1,9})\.(\d{1,9})(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?")
# An image reference (distribution/reference): an optional registry host (DNS name or IPv4, optional port) and
# path components of lowercase letters and digits separated by '.', '_', '__' or '-'; a tag; a digest.
_HOST = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]{1,5})?)"
_PATH = r"(?:[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)"
REPOSITORY_RE = re.compile(r"(?:%s/)?%s(?:/%s)*" % (_HOST, _PATH, _PATH))
# A registry prefix that an image name is appended to (<prefix>/registration): a host alone, or a repository.
REGISTRY_RE = re.compile(r"(?:%s|%s)(?:/%s)*" % (_HOST, _PATH, _PATH))
TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
DIGEST_RE = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}")
REPOSITORY_MAX_LENGTH = 255  # distribution/reference's NameTotalLengthMax

# What each kind of image setting is, by the end of its variable's name (settings_problem).
SETTING_KINDS = (("_version", "release"), ("_registry", "registry"), ("_image", "repository"), ("_tag", "tag"))


def release_problem(name, value):
    """Why ``value`` of setting ``name`` (karmada_version, ocm_version, hub_version) is not a release, '' when it is one."""
    text = value if isinstance(value, str) else None
    if text is not None and RELEASE_RE.fullmatch(text):
        return ""
    return ("%s must name a release, vX.Y.Z or X.Y.Z with an optional pre-release such as -rc.0 (for example v1.18.2 or "
            "1.3.1), not %s: it becomes the tag of the images the collection installs" % (name, _shown(value)))


def registry_problem(name, value):
    """Why ``value`` of setting ``name`` is not an image registry prefix (``quay.io/open-cluster-management``,
    ``registry.local:5000/ocm``) - a host and/or path components that an image name is appended to - '' when it is."""
    if isinstance(value, str) and len(value) < REPOSITORY_MAX_LENGTH and REGISTRY_RE.fullmatch(value):
        return ""
    return ("%s must be an image registry and path without tag, such as quay.io/open-cluster-management or "
            "registry.local:5000/mirror (a host, then path components of lowercase letters and digits separated by "
            "'.', '_' or '-'), not %s" % (name, _shown(value)))


def repository_problem(name, value):
    """Why ``value`` of setting ``name`` is not an image name without tag (``docker.io/karmada/karmada-agent``), ''."""
    if isinstance(value, str) and len(value) <= REPOSITORY_MAX_LENGTH and REPOSITORY_RE.fullmatch(value):
        return ""
    return ("%s must be an image name without tag, such as docker.io/karmada/karmada-agent (a registry host, then path "
            "components of lowercase letters and digits separated by '.', '_' or '-'), not %s" % (name, _shown(value)))


def tag_problem(name, value):
    """Why ``value`` of setting ``name`` is not an image tag (letters, digits, '_', '.', '-'; at most 128), ''."""
    if isinstance(value, str) and TAG_RE.fullmatch(value):
        return ""
    return ("%s must be an image tag (up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'), not %s"
            % (name, _shown(value)))


def image_problem(name, value):
    """Why ``value`` of setting ``name`` is not a whole image reference (``<name>[:<tag>][@<digest>]``), ''."""
    text = value if isinstance(value, str) else ""
    rest, digest = text.split("@", 1) if "@" in text else (text, None)
    last = rest.rsplit("/", 1)[-1]
    repository, tag = (rest[:len(rest) - len(last)] + last.split(":", 1)[0], last.split(":", 1)[1]) if ":" in last else (rest, None)
    if (text and len(repository) <= REPOSITORY_MAX_LENGTH and REPOSITORY_RE.fullmatch(repository)
            and (tag is None or TAG_RE.fullmatch(tag)) and (digest is None or DIGEST_RE.fullmatch(digest))):
        return ""
    return ("%s must be an image reference, <registry>/<path>:<tag> such as docker.io/karmada/karmada-agent:v1.18.2, "
            "not %s" % (name, _shown(value)))


def setting_problem(name, value):
    """Why image setting ``name`` (a variable ending in _version, _registry, _image or _tag) has no valid ``value``."""
    for suffix, kind in SETTING_KINDS:
        if name.endswith(suffix):
            return {"release": release_problem, "registry": registry_problem, "repository": repository_problem,
                    "tag": tag_problem}[kind](name, value)
    raise FleetError("%s is no image setting (a name ending in %s)" % (name, ", ".join(s for s, _k in SETTING_KINDS)))


def settings_problem(settings):
    """The first problem among image ``settings`` (``{variable name: value}``, in order), '' when there is none."""
    for name, value in (settings or {}).items():
        problem = setting_problem(name, value)
        if problem:
            return problem
    return ""


def _shown(value):
    """``value`` as a message shows it: quoted (so '' and trailing blanks show), its type when it is no string."""
    if isinstance(value, str):
        return repr(value)
    return "%r (%s)" % (value, type(value).__name__)


def downgrade(running, wanted):
    """``(running, wanted)`` releases (``vX.Y.Z``) when ``wanted`` (a release or an image) is an older release than
    ``running``; None when it is not, or when either names no release (a ``latest`` tag, a digest). Pre-releases count
    as their release."""
    running_version, wanted_version = parse(running), parse(wanted)
    if running_version and wanted_version and wanted_version < running_version:
        return release(running), release(wanted)
    return None


# --- upgrade.yml's batches ------------------------------------------------------------------------------

DEFAULT_UPGRADE_BATCHES = [1, 5, "25%"]
_BATCH_RE = re.compile(r"([0-9]{1,9})(%?)")


def _batch_problem(batch):
    if isinstance(batch, bool) or not isinstance(batch, (int, str)):
        return "%r is neither a number nor a percentage" % (batch,)
    match = _BATCH_RE.fullmatch(str(batch).strip()) if isinstance(batch, str) else None
    number = batch if isinstance(batch, int) else int(match.group(1)) if match else None
    if number is None:
        return "%r is neither a number nor a percentage such as \"25%%\"" % (batch,)
    if number < 1 or (match and match.group(2) and number > 100):
        return "%r is not a batch size: a number of members of at least 1, or a percentage from 1%% to 100%%" % (batch,)
    return ""


def upgrade_batches_problem(batches):
    """Why ``batches`` (``fleet_upgrade_batches``, upgrade.yml's ``serial``) is no list of batch sizes, '' when it is one
    (None: unset, the default). A batch size is a whole number of members of at least 1 or a percentage from 1% to
    100%: Ansible would take 0, a negative number or an empty list as "the whole fleet in one batch" and fail with an
    unexpected error on a word."""
    if batches is None:
        return ""
    listed = batches if isinstance(batches, (list, tuple)) else [batches]
    problems = [_batch_problem(batch) for batch in listed] if listed else ["the list is empty"]
    problem = next((p for p in problems if p), "")
    if not problem:
        return ""
    return ("fleet_upgrade_batches must be a batch size or a list of them - each a whole number of members of at least 1, "
            "or a percentage from 1%% to 100%% such as \"25%%\" (for example [1, 5, \"25%%\"], given as -e "
            "'{\"fleet_upgrade_batches\": [1, 5, \"25%%\"]}') - not %s: %s" % (_shown(batches), problem))


def upgrade_serial(batches):
    """upgrade.yml's ``serial`` for ``batches``: the default (:data:`DEFAULT_UPGRADE_BATCHES`) when None, one member at
    a time when they are invalid (the play's first task then fails every member, naming the problem), else them."""
    if batches is None:
        return list(DEFAULT_UPGRADE_BATCHES)
    if upgrade_batches_problem(batches):
        return [1]
    return list(batches) if isinstance(batches, (list, tuple)) else [batches]


def parse(version):
    """``(major, minor, patch)`` of a release name (``v1.3.1``, ``1.18``, ``v1.19.0-rc.0``) or of an image reference's
    tag; None for anything else (``latest``, a digest, no tag)."""
    if not version:
        return None
    match = VERSION_RE.match(str(version).strip()) or VERSION_RE.match(image_tag(version) or "")
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def image_tag(image):
    """The tag of image reference ``image`` (``registry:5000/repo/name:tag@sha256:...``), None without one."""
    name = str(image or "").split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def release(version):
    """``v<major>.<minor>.<patch>`` of ``version`` (a release name or an image), None when it names none."""
    parsed = parse(version)
    return "v%d.%d.%d" % parsed if parsed else None


def skew(agent, hub):
    """The skew rule for an agent at release ``agent`` against a hub at ``hub`` (names or images).

    Returns a warning when the agent is more than :data:`MAX_MINOR_BEHIND` minor releases (or a major release) behind,
    None when the pair is fine or either version is unknown; raises FleetError when the agent's minor release is newer
    than the hub's. Patch releases are not compared.
    """
    agent_version, hub_version = parse(agent), parse(hub)
    if not agent_version or not hub_version:
        return None
    if agent_version[:2] > hub_version[:2]:
        raise FleetError("agent version %s is newer than the hub's %s: an agent never runs a newer release than its hub; "
                         "upgrade the hub first, or choose agent version %d.%d or older"
                         % (release(agent), release(hub), hub_version[0], hub_version[1]))
    behind = (hub_version[1] - agent_version[1]) if agent_version[0] == hub_version[0] else None
    if behind is None or behind > MAX_MINOR_BEHIND:
        return ("agent version %s is %s behind the hub's %s: upgrade the agent (at most %d minor release behind is "
                "supported)" % (release(agent), "%d minor releases" % behind if behind else "a major release",
                                release(hub), MAX_MINOR_BEHIND))
    return None


def outdated(agent, target):
    """The agent at release ``agent`` is older than ``target`` (patch releases compared); False when either is unknown."""
    agent_version, target_version = parse(agent), parse(target)
    return bool(agent_version and target_version and agent_version < target_version)


def check_agent(engine, reg, hub, check_mode=False):
    """Apply the skew rule to a registration's agent (:meth:`engines.Engine.agent_image`) against its hub's release:
    read from the hub where it shows it (:meth:`engines.Engine.hub_release`, with hub credentials), else
    ``reg.hub_version``. In check mode a declared ``reg.hub_version`` newer than the one read counts: the run previews an
    upgrade whose hub part (upgrade.yml: the hub first) is only planned. Returns the warning, or None; FleetError when
    the agent would be newer."""
    agent = engine.agent_image(reg)
    if not agent:
        return None
    if not parse(agent):  # not silently: the rule cannot be applied to an image whose tag names no release
        return ("the version skew rule is not applied: the agent image %s names no release (its tag is %s); use a "
                "release's tag, such as v1.18.2" % (agent, image_tag(agent) or "missing"))
    shown = engine.hub_release(hub) if hub is not None else None
    hub_release = shown or reg.hub_version
    if check_mode and shown and parse(reg.hub_version) and parse(reg.hub_version) > parse(shown):
        hub_release = reg.hub_version
    return skew(agent, hub_release)


def check_downgrade(engine, reg, member, runtime):
    """The downgrade rule for a registration's agent: the image it installs (:meth:`engines.Engine.agent_image`) against
    the one the member runs (:meth:`engines.Engine.running_agent_image`, on ``runtime``: the member, or the hosting
    cluster of a Hosted klusterlet). An older release is refused (FleetError with detail ``downgrade``: ``from`` and
    ``to``) unless ``reg.allow_downgrade``; then ``{"from": .., "to": ..}`` is returned. None when it is no downgrade
    (the same or a newer release, nothing running yet, or a tag that names no release)."""
    wanted = engine.agent_image(reg)
    running = engine.running_agent_image(reg, member, runtime) if wanted else None
    found = downgrade(running, wanted)
    if not found:
        return None
    change = {"from": found[0], "to": found[1]}
    if reg.allow_downgrade:
        return change
    raise FleetError("refusing to downgrade the agent from %s to %s (cluster %s runs %s on %s; this run would install "
                     "%s): set the release of the member (karmada_version / ocm_version) to %s or newer, or allow the "
                     "downgrade with allow_downgrade=true (playbooks: fleet_allow_downgrade=true)"
                     % (found[0], found[1], reg.cluster_name, running, runtime.label, wanted, found[0]),
                     downgrade=change)


def hub_release_of_cluster_manager(cluster_manager):
    """The OCM release a ClusterManager runs: the tag of its registration image (None when unknown)."""
    return release(((cluster_manager or {}).get("spec") or {}).get("registrationImagePullSpec"))
