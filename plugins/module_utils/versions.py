# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Engine releases: version parsing, image tags, the version skew rule and the agents' versions and certificates.

The skew rule (docs/versions.md): an agent never runs a newer minor release than its hub (Karmada: "an agent never newer
than the control plane"; OCM: hub first, then the managed clusters), and an agent more than one minor release behind
the hub is warned about, as Kubernetes' own version skew policy counts in minor releases.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import re

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm, pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9A-Za-z.+-]*)?$")
# How many minor releases an agent may be behind its hub before a warning.
MAX_MINOR_BEHIND = 1


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
    shown = engine.hub_release(hub) if hub is not None else None
    hub_release = shown or reg.hub_version
    if check_mode and shown and parse(reg.hub_version) and parse(reg.hub_version) > parse(shown):
        hub_release = reg.hub_version
    return skew(agent, hub_release) if agent else None


def hub_release_of_cluster_manager(cluster_manager):
    """The OCM release a ClusterManager runs: the tag of its registration image (None when unknown)."""
    return release(((cluster_manager or {}).get("spec") or {}).get("registrationImagePullSpec"))


# --- a member's agent, as cluster_info reports it -----------------------------------------------------


def _deployment_image(deployment):
    containers = ((((deployment or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    return containers[0].get("image") if containers else None


def rolled_out(deployment):
    """Whether a Deployment runs its current pod template on every replica, as ``kubectl rollout status`` decides: the
    deployment controller observed its generation, and every desired replica is updated and available."""
    if not deployment:
        return False
    status = deployment.get("status") or {}
    replicas = ((deployment.get("spec") or {}).get("replicas"))
    replicas = 1 if replicas is None else replicas
    return (status.get("observedGeneration", 0) >= (deployment.get("metadata") or {}).get("generation", 0)
            and (status.get("updatedReplicas") or 0) >= replicas and (status.get("availableReplicas") or 0) >= replicas
            and (status.get("replicas") or 0) <= replicas)


def _secret_text(secret, key):
    value = ((secret or {}).get("data") or {}).get(key)
    try:
        return base64.b64decode(value).decode("utf-8") if value else None
    except (binascii.Error, ValueError):
        return None


def agent_report(member, deployment_name, namespace, secret_name, read_cert, problem=None, wanted=None):
    """What cluster_info reports of a member's agent: ``image`` and ``version`` (its tag) of Deployment
    ``<namespace>/<deployment_name>``, ``rolled_out``: whether that Deployment runs its image on every replica (and is
    the image ``wanted``, when given: what the agent's operator was asked to run), ``certificate_expiration`` (notAfter,
    RFC 3339) of the client certificate that ``read_cert`` finds in Secret ``<namespace>/<secret_name>``, and
    ``problem``: what could not be read (None)."""
    deployment = resources.get(member, resources.DEPLOYMENT, deployment_name, namespace)
    image = _deployment_image(deployment)
    secret = resources.get(member, resources.SECRET, secret_name, namespace)
    expiration = None
    if image is None:
        problem = problem or "no agent Deployment %s/%s on the member" % (namespace, deployment_name)
    if secret is None:
        problem = problem or "no agent certificate: no Secret %s/%s on the member" % (namespace, secret_name)
    else:
        try:
            expiration = pki.rfc3339(pki.not_after(pki.load_certificates(read_cert(secret))[0]))
        except FleetError as exc:
            problem = problem or "the agent certificate in Secret %s/%s cannot be read: %s" % (namespace, secret_name, exc.msg)
    return {"image": image, "version": release(image) or image_tag(image), "certificate_expiration": expiration,
            "rolled_out": rolled_out(deployment) and (wanted is None or wanted == image), "problem": problem}


def karmada_agent(member):
    """The karmada-agent of ``member``: Deployment and Secret ``karmada-system/karmada-kubeconfig`` (docs 4.4)."""
    def read_cert(secret):
        return pki.read_kubeconfig(_secret_text(secret, karmada.AGENT_KUBECONFIG_SECRET) or "", "agent kubeconfig")["client_cert_pem"]
    return agent_report(member, karmada.AGENT_NAME, karmada.AGENT_NAMESPACE, karmada.AGENT_KUBECONFIG_SECRET, read_cert)


def ocm_agent(member):
    """The klusterlet's registration agent on ``member`` (Default and Singleton modes): the Deployment the klusterlet
    operator runs it in (``klusterlet-registration-agent``, Singleton ``klusterlet-agent``) and Secret
    ``hub-kubeconfig-secret`` (``tls.crt``) in ``open-cluster-management-agent``. The agent has rolled out when that
    Deployment runs the image the Klusterlet asks for (``registrationImagePullSpec``, Singleton ``imagePullSpec``)."""
    klusterlet = resources.get(member, ocm.KLUSTERLET, ocm.KLUSTERLET_NAME)
    spec = (klusterlet or {}).get("spec") or {}
    mode = (spec.get("deployOption") or {}).get("mode") or "Default"
    problem = None if klusterlet else ("no Klusterlet %s on the member (a Hosted klusterlet runs on its hosting cluster)"
                                       % ocm.KLUSTERLET_NAME)
    deployment = "%s-%s" % (ocm.KLUSTERLET_NAME, "agent" if mode == "Singleton" else "registration-agent")
    wanted = spec.get("imagePullSpec" if mode == "Singleton" else "registrationImagePullSpec")
    return agent_report(member, deployment, ocm.AGENT_NAMESPACE, ocm.HUB_KUBECONFIG_SECRET,
                        lambda secret: _secret_text(secret, "tls.crt") or "", problem, wanted)
