# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every engine has: :class:`Engine`, the base of ``karmada.engine.KarmadaEngine`` and ``ocm.engine.OcmEngine``.

An engine holds what the operations need to know of it and the rules that differ between engines: the hub kind of a
member cluster, its names and readiness, the identity its agents ask a certificate for (docs/architecture.md 4.4, 4.6),
which agent CSRs are a cluster's and what accepting it takes, its hub objects, how a member registers with it, its
taints and its diagnosis. Its operations with much code of their own - pull
registration, works, the hub objects members need, removal - are modules of its package, which the engine imports when
one is first used (:attr:`Engine.registration`, :attr:`Engine.works`, :attr:`Engine.hub_objects`,
:attr:`Engine.removal`): reading an engine's facts loads none of them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def spec_of(obj):
    """The ``spec`` of ``obj`` (None: none), {} without one."""
    return (obj or {}).get("spec") or {}


class Engine:
    """What every engine has; see :class:`KarmadaEngine` and :class:`OcmEngine`."""

    name = None
    member_kind = None  # the hub kind that stands for a member cluster
    ready_condition = None  # what "ready" means for a member cluster (a resources.wanted_condition)
    default_mode = None  # the registration_mode site.yml uses for a member that names none (inventory)
    bootstrap_group = None  # the group of its join tokens
    cluster_info_reader = None  # the Role and RoleBinding letting anyone read kube-public/cluster-info
    hub_labels = None  # the labels of its hub objects
    grpc_registration = False  # its hub may offer the grpc registration driver
    accepts_clients = False  # accepting a cluster also sets hubAcceptsClient on its member object
    unsigned_discovery = False  # a member may discover the hub from an unsigned cluster-info (clusteradm join)
    bootstrap_token_only = False  # a member registers with a bootstrap token only, not a ServiceAccount token
    cli_pins = False  # its join command line names the hub CA pins (cli_command)
    service_account_join = False  # a member may join with a ServiceAccount token (bootstrap_token token_type)
    csr_auto_approval_setting = False  # hub_registration sets whether agent CSRs are approved automatically
    pull_only = False  # a member registers only by pull: no Push mode, whatever its registration_mode
    self_registration = False  # the hub may register with itself as a member (hub_init_ocm_register_self)
    installs_control_plane = False  # role hub_init installs (and upgrade.yml upgrades) its control plane on the hub
    # Day 2 (day2/labels.py, day2/taints.py): the label that names a member's cluster set (None: the engine has none), the label
    # domains its own controllers own, the taint effects it knows, the taint ({key, effect}) that cordons a member -
    # new placements leave it out - and the keys of the taints its own controllers set and remove.
    cluster_set_label = None
    label_domains = ()
    taint_effects = ()
    cordon_taint = None
    cordon_effects = ()  # the effects a cordon taint may have (module cluster_taint's cordon_effect); cordon_taint's first
    hub_taint_keys = ()

    def __repr__(self):
        return "<engine %s>" % self.name

    # --- member clusters on the hub -------------------------------------------------------------

    def validate_cluster_name(self, name):
        """FleetError unless ``name`` can name a member cluster."""
        raise NotImplementedError

    def summarize(self, obj):
        """The engine-neutral summary of a member object (see :func:`hub_members.summarize`)."""
        raise NotImplementedError

    def recorded_cluster_id(self, obj):
        raise NotImplementedError

    def endpoints_of(self, obj):
        raise NotImplementedError

    def check_pull_registration(self, existing, cluster_name, allow_mode_change):
        """FleetError when member object ``existing`` (or None) may not be registered by pull as it is."""

    def is_push(self, member):
        """The hub has ``member`` (its member object, or None) as a Push member: no agent runs for it."""
        return False

    def joined(self, member):
        """The member object says the cluster's agent joined with a certificate."""
        raise NotImplementedError

    def is_cordoned(self, taints):
        """``taints`` (a member object's ``spec.taints``) hold the engine's cordon taint, with one of its cordon effects."""
        key = self.cordon_taint["key"]
        return any(t.get("key") == key and t.get("effect") in self.cordon_effects for t in taints or [])

    def check_cluster_sets(self):
        """FleetError unless the engine groups its member clusters in cluster sets (module cluster_set)."""

    # --- agent certificates (csr.py, accept.py) -------------------------------------------------

    def agent_organizations(self, cluster):
        """The O of the subject of ``cluster``'s agent certificate, sorted."""
        raise NotImplementedError

    def common_name_problem(self, cluster, cn):
        """Why ``cn`` is not an agent identity of ``cluster``, or None."""
        raise NotImplementedError

    def bootstrap_identities(self):
        """The requesters besides bootstrap token users that may ask for an agent certificate, for messages."""
        return "a bootstrap token user"

    def is_bootstrap_identity(self, user):
        """``user`` is one of the engine's bootstrap identities other than a bootstrap token user."""
        return False

    def renews_itself(self, cluster, user, cn):
        """``user`` asking for ``cn`` is the agent of ``cluster`` renewing its own certificate."""
        raise NotImplementedError

    def csr_selector(self, clusters):
        """The label selector of the agent CSRs of ``clusters``, or None to read every CSR."""
        return None

    def claims_csr(self, cluster, csr, common_name):
        """``csr`` (asking for ``common_name``) claims to be the agent CSR of ``cluster``."""
        raise NotImplementedError

    # --- join tokens -------------------------------------------------------------------------------

    def cli_command(self, token, server, pins):
        """The command line a member would run to register with this token."""
        raise NotImplementedError

    # --- registration (cluster_register) --------------------------------------------------------

    def klusterlet_placement(self, cluster_name, mode, driver):
        """The :class:`ocm.Placement` of the cluster's Klusterlet (OCM), None without one."""
        return None

    # --- diagnosis (diagnose.py) ----------------------------------------------------------------

    def agent_lease(self, cluster):
        """``(namespace, name)`` of the Lease on the hub that ``cluster``'s agent renews."""
        raise NotImplementedError

    def lease_grace_seconds(self, member, lease):
        """How long after its Lease's renewTime the hub counts the agent of ``member`` (its member object) as gone."""
        raise NotImplementedError

    def agent_access(self, cluster):
        """``(user, groups, [resourceAttributes])``: what ``cluster``'s agent must be allowed on the hub."""
        raise NotImplementedError

    def works_of(self, cluster):
        """``(Kind, namespace)`` of the workloads the hub holds for ``cluster``; the namespace is its execution or
        cluster namespace."""
        raise NotImplementedError

    def agent_layout(self, status_object):
        """Where the agent lives on the member, from the object of :attr:`agent_status`: ``dict(deployments=[(namespace,
        name)], kubeconfigs=[(namespace, secret, key)], certificate=(namespace, secret, key))``, the certificate in one
        of the kubeconfig Secrets (key None: the kubeconfig's own); None when the member does not run it (Hosted)."""
        raise NotImplementedError

    agent_status = None  # (Kind, name) of the member object that reports on the agent (OCM's Klusterlet), or None

    # --- versions and agents (versions.py) --------------------------------------------------------

    def agent_image(self, reg):
        """The agent image registration ``reg`` installs, None when it installs none."""
        return None

    def hub_release(self, hub):
        """The engine release the hub shows (with admin credentials), None where it shows none."""
        return None

    def running_agent_image(self, reg, member, runtime):
        """The agent image the member runs now (read on ``runtime``: the member, or a Hosted klusterlet's hosting
        cluster), None when it runs none yet."""
        return None

    def read_agent(self, member):
        """The agent of the member cluster reached at ``member``, as :func:`agents.agent_report` reports it."""
        raise NotImplementedError

    # --- its operations, each in a module of the engine's package, imported when first used --------------------

    @property
    def registration(self):
        """The class of its pull registration flow, a :class:`registrar.Registrar` (module cluster_register)."""
        raise NotImplementedError

    @property
    def works(self):
        """Its workloads on the hub (module manifest_work): the kind, namespace and status rules of its works."""
        raise NotImplementedError

    @property
    def hub_objects(self):
        """The module whose ``registration_objects(csr_auto_approval)`` gives ``(wanted, unwanted)``: the hub objects its
        members need to register, and those to remove (module hub_registration)."""
        raise NotImplementedError

    @property
    def removal(self):
        """The module that removes a member from the hub (module cluster_prune): ``plan(hub, obj, record)`` gives
        ``(deletes, problem)`` - what removing member object ``obj`` (``record``: its hub record, or None) deletes, as
        ``(kind, namespace, name)``, besides its agent CSRs, and None or why it cannot be removed; ``remove(hub, obj,
        deletes, removal)`` removes it as :class:`prune.Removal` ``removal`` says and returns the removal's result."""
        raise NotImplementedError
