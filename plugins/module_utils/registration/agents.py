# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A member's agent as cluster_info reports it: the image and rollout of its Deployment, the expiry of its certificate.

Read from the member with the member's credentials; the release rules applied to what is read are in ``versions.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.day2 import versions
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import pki, resources
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError


def deployment_image(deployment):
    """The image of a Deployment's first container, None without one."""
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
    image = deployment_image(deployment)
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
    return {"image": image, "version": versions.release(image) or versions.image_tag(image),
            "certificate_expiration": expiration,
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
