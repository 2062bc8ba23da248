# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Karmada hub needs before members can register with join credentials (docs/architecture.md 4.4): the bootstrap
token group may create CSRs (``system:node-bootstrapper``); optionally the ClusterRoles and bindings that let Karmada's
agent CSR approver approve bootstrap and renewal CSRs, exactly as ``karmadactl init`` creates them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, hub

NODE_BOOTSTRAPPER = "system:node-bootstrapper"  # built into Kubernetes: create/get/list/watch CSRs


def registration_objects(csr_auto_approval=True):
    """``(wanted, unwanted)`` object lists for a Karmada hub (names and rules of ``karmadactl init``)."""
    group = [hub.subject("Group", bootstrap.KARMADA_DEFAULT_GROUP)]
    approval = [
        hub.cluster_role("system:karmada:certificatesigningrequest:autoapprover",
                         [hub.rule("certificates.k8s.io", "certificatesigningrequests/clusteragent", ["create"])], karmada.HUB_LABELS),
        hub.cluster_role_binding("system:karmada:agent-autoapprove-bootstrap",
                                 "system:karmada:certificatesigningrequest:autoapprover", group, karmada.HUB_LABELS),
        hub.cluster_role("system:karmada:certificatesigningrequest:selfautoapprover",
                         [hub.rule("certificates.k8s.io", "certificatesigningrequests/selfclusteragent", ["create"])], karmada.HUB_LABELS),
        hub.cluster_role_binding("system:karmada:agent-autoapprove-certificate-rotation",
                                 "system:karmada:certificatesigningrequest:selfautoapprover",
                                 [hub.subject("Group", karmada.AGENTS_GROUP)], karmada.HUB_LABELS),
    ]
    wanted = hub.cluster_info_reader("karmada") + [
        hub.cluster_role_binding("system:karmada:agent-bootstrap", NODE_BOOTSTRAPPER, group, karmada.HUB_LABELS),
    ]
    return (wanted + approval, []) if csr_auto_approval else (wanted, approval)
