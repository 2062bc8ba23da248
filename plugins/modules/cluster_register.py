#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cluster_register
short_description: Register a member cluster with a Karmada hub in Pull mode, or join it to an OCM hub
version_added: 1.0.0
description:
  - Runs against the B(member) cluster (the top-level authentication options address the member) and reaches the
    hub only through the bootstrap token, the way C(karmadactl register) and C(clusteradm join) do.
  - Both engines first discover the hub through C(kube-public/cluster-info) on O(hub_apiserver) - anonymously,
    checking the token's JWS signature and the hub CA against O(ca_cert_hashes) - then talk to the hub with TLS
    verified by that CA only. A wrong pin, a tampered C(cluster-info) or an unknown or expired token fail before
    anything is written.
  - B(Karmada) (O(engine=karmada)) - creates a fresh private key and a CSR for C(system:karmada:agent:<cluster>)
    (organization C(system:karmada:agents), signer C(kubernetes.io/kube-apiserver-client)) with the bootstrap token,
    waits for the certificate (approved by Karmada's agent CSR approver or by M(multicluster.fleet.csr_accept)), and
    writes Secret C(karmada-system/karmada-kubeconfig) on the member. With O(hub) admin credentials it first creates the
    hub-side agent RBAC and namespaces (least privilege; no all-powerful certificate is ever minted).
  - A member whose stored agent certificate is for this cluster, matches its key, was issued by the stored hub CA (one
    of O(ca_cert_hashes)), points at this hub and does not expire within O(renew_before) days is left unchanged - no
    new CSR, and the token is not used, so re-runs after the token expired still pass. Closer to expiry it is renewed.
  - Re-bootstrap - when the hub moved (a new O(hub_apiserver)) or got a new CA (none of the stored CA's pins in
    O(ca_cert_hashes)), the member keeps its registration (same cluster name and cluster id) and RV(hub_change) says
    what changed. Karmada keeps the agent certificate while the discovered hub CA still vouches for it, rewrites only
    the agent kubeconfig and rolls the agent (O(karmada.deploy_agent)); otherwise it requests a new certificate. OCM
    rewrites the bootstrap kubeconfig; the klusterlet then requests a new certificate (its operator's bootstrap
    controller deletes the old hub kubeconfig), which O(ocm.accept) waits for and approves.
  - One Karmada registration of a member at a time, so that each member gets one certificate and one name. A run that
    needs a certificate holds Lease C(kube-system/multicluster-fleet-registration) on the member (taken after discovery,
    renewed while the run waits, deleted at the end). Another run registering the same cluster meanwhile, for example a
    second playbook run, or another inventory host reaching it under another name, waits for it (up to
    O(karmada.csr_wait_timeout) seconds, then fails naming the other run), then reads again - it keeps the certificate
    the first run stored - no second CSR - and says so in RV(waited_for) and a warning; or, when that run registered the
    cluster under another name, it fails naming it. The Lease of a run that was stopped is taken over once it was not
    renewed for 60 seconds.
  - The Karmada CSR and its private key are stored in Secret C(kube-system/multicluster-fleet-registration-<cluster>) on
    the member before the CSR is posted, and removed once the agent kubeconfig is written (or the CSR was refused). A
    run that stopped after posting - hub or runner gone, O(karmada.csr_wait_timeout) reached - is resumed by the next
    run with the same CSR instead of a second one. A hub that does not answer for a while, or refuses the bootstrap
    token for up to 30 seconds (an API server that has just started), is waited for within O(karmada.csr_wait_timeout).
    A bootstrap token refused when the CSR is posted (expired since discovery) fails the run and leaves nothing on the
    member. A CSR for the agent that this module did not post, pending from the same bootstrap token (C(karmadactl
    register) running meanwhile), stops the run before a second one is posted.
  - B(OCM) (O(engine=ocm)) - writes Secret C(open-cluster-management-agent/bootstrap-hub-kubeconfig) (cluster C(hub),
    user C(bootstrap), context C(bootstrap)) and the registration fields of Klusterlet C(klusterlet) (C(clusterName),
    C(namespace), C(externalServerURLs), the registration driver of O(ocm.registration_driver), and C(deployOption.mode)
    when O(ocm.klusterlet_mode) is given), with the fields of O(ocm.klusterlet_spec). The klusterlet then creates its
    own CSR and ManagedCluster; accept them with M(multicluster.fleet.csr_accept). Once the klusterlet holds a valid
    certificate for this cluster (Secret C(hub-kubeconfig-secret)) the bootstrap Secret is left as it is, even for a new
    token.
  - One OCM join of a member at a time - a run that has to write the bootstrap Secret, or a Klusterlet that does not
    register this cluster yet, holds the same Lease on the member while it decides and writes (up to O(wait_timeout)
    seconds for another run's, then it reads the member again and refuses a Klusterlet that registers another
    cluster meanwhile), and a bootstrap Secret that differs from this run's only by a token the hub still
    accepts (another run's join token, checked by a SelfSubjectAccessReview) is kept - a new token would make the
    klusterlet bootstrap again with a second CSR.
  - OCM B(Hosted) mode (O(ocm.klusterlet_mode=Hosted) or V(SingletonHosted), with O(hosting)) - the klusterlet runs on
    another cluster, the hosting cluster, which must run the klusterlet operator. Everything is written there, as
    C(clusteradm join --mode hosted) does - namespace C(klusterlet-<cluster>) holding the bootstrap Secret and Secret
    C(external-managed-kubeconfig) (the kubeconfig the agents use to reach the member, see O(ocm.managed_kubeconfig)),
    and Klusterlet C(klusterlet-<cluster>) whose C(spec.namespace) on the member is
    C(open-cluster-management-klusterlet-<cluster>). The member itself is only read.
  - OCM B(grpc) registration driver (O(ocm.registration_driver=grpc)) - the bootstrap Secret also holds C(config.yaml)
    (C(url) O(ocm.grpc_server), C(caData) O(ocm.grpc_ca_pem), and the token), which the registration agent uses to reach
    the hub's gRPC server instead of its API server; the Klusterlet's driver is C(grpc).
  - B(Through a forward proxy) (O(proxy_url), as C(clusteradm join --proxy-url --proxy-ca-file)) - discovery, the
    Karmada CSR and the kubeconfig stored on the member (the Karmada agent kubeconfig, the OCM bootstrap kubeconfig) go
    through the HTTP(S) proxy - the kubeconfig carries C(proxy-url), and the CA of O(proxy_ca_cert) is added to its hub
    CA. A run with another O(proxy_url) (or without one) writes that kubeconfig again - a Karmada agent keeps its
    certificate, the discovery checks the new way to the hub with the token; an OCM member gets a new bootstrap
    kubeconfig, from which the klusterlet registers again.
  - O(state=absent) unregisters. Karmada - with O(hub) credentials the Works in C(karmada-es-<cluster>), the Cluster
    and the agent RBAC on the hub (each deletion awaited), then the member's agent objects (Deployment, ClusterRole and
    ClusterRoleBinding C(karmada-agent), ServiceAccount C(karmada-agent-sa), Secret C(karmada-kubeconfig), and namespace
    C(karmada-system) when it is labelled C(karmada.io/system=true), and what a registration stopped half-way left in
    C(kube-system)). A cluster registered in Push mode is refused (use M(multicluster.fleet.cluster_join)). OCM - the
    Klusterlet and the Secrets join wrote or the agent wrote (on the hosting cluster in Hosted mode, and namespace
    C(klusterlet-<cluster>) there), and with O(hub) the ManagedCluster. A member (or hosting cluster) that does not
    answer fails the run, naming it, unless O(force=true).
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  cluster_name:
    description:
      - The member's name on the hub. A DNS-1123 label of at most 48 (Karmada) or 63 (OCM) characters.
      - Karmada refuses V(rbac-generator), whose agent identity would be karmadactl's all-powerful RBAC helper.
    type: str
    required: true
  state:
    description:
      - V(present) registers the member, V(absent) unregisters it.
    type: str
    choices: [present, absent]
    default: present
  hub_apiserver:
    description:
      - The hub API server the member reaches, as a URL (V(https://hub.example.com:6443)) or V(host:port).
      - Required with O(state=present).
    type: str
  token:
    description:
      - The join token, as M(multicluster.fleet.bootstrap_token) or C(karmadactl token create) prints it.
      - A bootstrap token C(<id>.<secret>); for O(engine=ocm) also a ServiceAccount token (no JWS signature exists
        for it, so the hub is authenticated by O(ca_cert_hashes) alone).
      - Required with O(state=present); not used when the stored credentials are reused.
    type: str
  ca_cert_hashes:
    description:
      - Pins of the hub CA public key, C(sha256:<hex>) (C(--discovery-token-ca-cert-hash)). The hub CA must match one.
      - Required with O(state=present) unless O(unsafe_skip_ca_verification=true).
    type: list
    elements: str
    default: []
  unsafe_skip_ca_verification:
    description:
      - Trust the hub CA from C(cluster-info) without a pin. Anyone who can answer on O(hub_apiserver) and knows the
        token could then pose as the hub (with a ServiceAccount token, anyone at all).
    type: bool
    default: false
  force_internal_endpoint_lookup:
    description:
      - Write the hub server published in C(cluster-info) into the member's kubeconfig (as C(karmadactl register) does)
        instead of O(hub_apiserver).
      - With V(true) the stored kubeconfig's server is not compared with O(hub_apiserver) on re-runs.
    type: bool
    default: false
  discovery_timeout:
    description:
      - Seconds to keep retrying while C(cluster-info) carries no signature for the token yet (the hub's bootstrap
        signer adds it moments after the token is created). Then the token counts as unknown or expired.
    type: int
    default: 30
  csr_wait_timeout:
    description:
      - Deprecated, use O(karmada.csr_wait_timeout) instead.
    type: int
  cert_expiration_seconds:
    description:
      - Deprecated, use O(karmada.cert_expiration_seconds) instead.
    type: int
  renew_before:
    description:
      - Days before the stored agent certificate expires from which a run requests a new one (Karmada), or writes the
        bootstrap kubeconfig again (OCM).
    type: int
    default: 30
  api_endpoint:
    description:
      - The member API server URL the hub and the agents use. Defaults to the server of the member connection.
      - OCM puts it into the Klusterlet's C(externalServerURLs); Karmada passes it to the agent of
        O(karmada.deploy_agent) as C(--cluster-api-endpoint).
    type: str
  wait:
    description:
      - With O(state=present), wait for each of the steps below up to O(wait_timeout) seconds. A timeout fails saying
        what was last seen (also as C(last_seen)), with the objects written in C(changes); running the task again goes
        on waiting.
      - OCM - until the klusterlet operator has applied the Klusterlet and its agents run (the Klusterlet's conditions
        C(Applied=True) and C(Available=True)), as C(clusteradm join --wait) does; with O(ocm.accept) also for the
        klusterlet's CSR, then until the hub reports the cluster available.
      - Karmada - until the karmada-agent Deployment of O(karmada.deploy_agent) is available and, with O(hub), until the
        hub reports the cluster C(Ready). Needs O(karmada.deploy_agent) or O(hub).
      - Not waited for in check mode.
    type: bool
    default: false
  accept:
    description:
      - Deprecated, use O(ocm.accept) instead.
    type: bool
  allow_mode_change:
    description:
      - Deprecated, use O(karmada.allow_mode_change) instead.
    type: bool
  deploy_agent:
    description:
      - Deprecated, use O(karmada.deploy_agent) instead.
    type: bool
  agent_image:
    description:
      - Deprecated, use O(karmada.agent_image) instead.
    type: str
  hub_version:
    description:
      - The engine release the hub runs (for example V(v1.18.2) or V(1.3.1)), for the version skew rule - where the
        hub does not show it. An OCM hub shows it to O(hub) credentials (the tag of its ClusterManager's
        C(registrationImagePullSpec)), which then win; Karmada's API server does not show Karmada's release.
        In check mode a declared release newer than the one the hub shows counts - the preview of an upgrade whose
        hub part (C(playbooks/upgrade.yml) upgrades the hub first) is only planned.
      - A release, V(vX.Y.Z) or V(X.Y.Z) with an optional pre-release (V(v1.19.0-rc.0)); anything else is refused.
      - "The rule: the agent's version (the tag of O(karmada.agent_image) with O(karmada.deploy_agent), or of
        C(registrationImagePullSpec) in O(ocm.klusterlet_spec)) must not be a newer minor release than the hub's -
        refused before anything is written -, and a warning says when it is more than one minor release behind. Without
        a hub version nothing is compared."
    type: str
  allow_downgrade:
    description:
      - Install the agent image even when it is an older release than the one the member runs (the karmada-agent
        Deployment's image with O(karmada.deploy_agent), the Klusterlet's C(registrationImagePullSpec)). Without it such
        a run fails before anything is written, naming both releases - a run after a one-off upgrade with settings that
        still name the old release would otherwise take the agent back; OCM does not support downgrades.
      - Tags that name no release (V(latest), a digest) are not compared.
    type: bool
    default: false
  enable_cert_rotation:
    description:
      - Deprecated, use O(karmada.enable_cert_rotation) instead.
    type: bool
  cert_rotation_checking_interval:
    description:
      - Deprecated, use O(karmada.cert_rotation_checking_interval) instead.
    type: str
  cert_rotation_remaining_time_threshold:
    description:
      - Deprecated, use O(karmada.cert_rotation_remaining_time_threshold) instead.
    type: float
  client_cert_expiration_seconds:
    description:
      - Deprecated, use O(ocm.client_cert_expiration_seconds) instead.
    type: int
  agent_replicas:
    description:
      - Deprecated, use O(karmada.agent_replicas) instead.
    type: int
  provider:
    description:
      - Deprecated, use O(karmada.provider) instead.
    type: str
  region:
    description:
      - Deprecated, use O(karmada.region) instead.
    type: str
  zones:
    description:
      - Deprecated, use O(karmada.zones) instead.
    type: list
    elements: str
  wait_timeout:
    description:
      - Seconds to wait for each deletion with O(state=absent) (Works, Cluster, namespaces, Klusterlet, ManagedCluster),
        and with O(wait) for the Klusterlet (OCM) or for the karmada-agent and the hub's report of the cluster
        (Karmada).
      - A deletion that is not over in time fails saying what was last seen (also as C(last_seen)), with C(changed) and
        C(changes) saying what the run deleted before it; running the task again goes on.
    type: int
    default: 60
  wait_sleep:
    description:
      - Seconds between two checks while the module waits for the agent certificate (O(karmada.csr_wait_timeout)), for
        another run's registration of the member, for deletions and for what O(wait) waits for (O(wait_timeout)); at
        least V(1). As C(wait_sleep) of M(kubernetes.core.k8s).
    type: int
    default: 5
  force:
    description:
      - With O(state=absent), when the member (or, OCM Hosted, the hosting cluster) does not answer, remove the cluster
        from the hub only - the Works, the Cluster and the agent RBAC (Karmada) or the ManagedCluster (OCM) - instead of
        failing. Needs O(hub). What the registration wrote on the member stays there, and a warning says so; run
        O(state=absent) again once the member answers.
      - Without effect on a member that answers.
    type: bool
    default: false
  klusterlet_mode:
    description:
      - Deprecated, use O(ocm.klusterlet_mode) instead.
    type: str
    choices: [Default, Singleton, Hosted, SingletonHosted]
  klusterlet_spec:
    description:
      - Deprecated, use O(ocm.klusterlet_spec) instead.
    type: dict
  managed_kubeconfig:
    description:
      - Deprecated, use O(ocm.managed_kubeconfig) instead.
    type: path
  registration_driver:
    description:
      - Deprecated, use O(ocm.registration_driver) instead.
    type: str
    choices: [csr, grpc]
  grpc_server:
    description:
      - Deprecated, use O(ocm.grpc_server) instead.
    type: str
  grpc_ca_pem:
    description:
      - Deprecated, use O(ocm.grpc_ca_pem) instead.
    type: str
  proxy_url:
    description:
      - The forward proxy through which the member and its agents reach the hub, V(http://host:port) or
        V(https://host:port) (C(clusteradm join --proxy-url)). Discovery, the Karmada CSR and the agents' kubeconfig
        (C(proxy-url)) use it.
      - Not the proxy of the connection to the member (the authentication option O(proxy)).
    type: str
  proxy_ca_cert:
    description:
      - Path to the PEM file of the CA that signed the certificate of an V(https) O(proxy_url)
        (C(clusteradm join --proxy-ca-file)). It is added to the hub CA of the kubeconfig written on the member, which
        verifies both the proxy and the hub. Needs O(proxy_url).
    type: path
  proxy_server_address:
    description:
      - Deprecated, use O(karmada.proxy_server_address) instead.
    type: str
  karmada:
    description:
      - Settings for O(engine=karmada) only; one given with another engine, other than its default, fails the task before
        anything is read.
      - Each was a top-level option of its name in version 1.0.0; those names still work, deprecated, until version
        3.0.0. Given both ways with different values, the task fails.
    type: dict
    version_added: 1.1.0
    suboptions:
      csr_wait_timeout:
        description:
          - Seconds to wait for the Karmada agent certificate to be approved and issued.
          - On timeout the module fails naming the CSR; the member is not changed. Approve the CSR with
            M(multicluster.fleet.csr_accept) and run again.
        type: int
        default: 300
      cert_expiration_seconds:
        description:
          - Requested lifetime of the Karmada agent certificate (C(expirationSeconds); API servers older than 1.22 apply
            their own signing duration, newer ones honour it up to their signer's maximum).
          - A certificate issued for no longer than O(renew_before) days would be renewed by every run; the module warns
            when the certificate it received is within O(renew_before) of its expiry already.
        type: int
        default: 31536000
      allow_mode_change:
        description:
          - Register by pull a cluster the hub has as a Push member (joined with M(multicluster.fleet.cluster_join));
            its agent takes over the Cluster, which becomes a Pull member. The Push credentials (the hub Secrets, the
            member ServiceAccounts) are not removed; unjoining the member first removes them with it.
          - Without it such a registration is refused before anything is written, naming the current mode.
        type: bool
        default: false
      deploy_agent:
        description:
          - After the registration, deploy the karmada-agent on the member as C(karmadactl register) does - namespace
            C(karmada-system), ServiceAccount C(karmada-agent-sa), ClusterRole and ClusterRoleBinding C(karmada-agent)
            and Deployment C(karmada-agent) (image O(karmada.agent_image), O(karmada.agent_replicas) replicas, reading
            Secret C(karmada-kubeconfig), with the arguments C(--cluster-name), C(--cluster-api-endpoint)
            (O(api_endpoint)), C(--cluster-provider), C(--cluster-region), C(--cluster-zones) and
            C(--proxy-server-address)). The agent then creates the Cluster on the hub with C(syncMode=Pull).
          - The agent reads its certificate only when it starts, so the Deployment's pod template carries the
            certificate's SHA-256 fingerprint (annotation C(multicluster.fleet/agent-certificate-sha256)) - a run that
            stores a new certificate rolls the agent, which then uses it. Likewise annotation
            C(multicluster.fleet/agent-hub-sha256), the fingerprint of the hub URL, proxy and CA bundle of its
            kubeconfig - a run that rewrites the kubeconfig for a hub that moved or has a new CA rolls the agent too.
          - Every object is sent as a server-side dry run before the first is written; check mode does only that.
          - O(state=absent) removes these objects whether or not this is set.
        type: bool
        default: false
      agent_image:
        description:
          - With O(karmada.deploy_agent). The karmada-agent image (C(--karmada-agent-image)), of the hub's Karmada
            version. The default is the agent of the latest Karmada v1.18 patch release.
          - Its tag is the agent's version for the version skew rule (see O(hub_version)) and the downgrade rule (see
            O(allow_downgrade)). An image reference (C(<registry>/<path>:<tag>), optionally C(@<digest>)); anything else
            is refused before anything is written. A tag that names no release (V(latest)) leaves both rules unapplied,
            with a warning.
        type: str
        default: docker.io/karmada/karmada-agent:v1.18.2
      agent_replicas:
        description:
          - With O(karmada.deploy_agent). Replicas of the karmada-agent Deployment (C(--karmada-agent-replicas)).
        type: int
        default: 1
      enable_cert_rotation:
        description:
          - With O(karmada.deploy_agent). Let the karmada-agent renew its own certificate before it expires
            (C(karmadactl register --enable-cert-rotation)) - agent flags C(--controllers=*,certRotation),
            C(--cert-rotation-checking-interval) (O(karmada.cert_rotation_checking_interval)) and
            C(--cert-rotation-remaining-time-threshold) (O(karmada.cert_rotation_remaining_time_threshold)). Karmada's
            self-approver RBAC (role multicluster.fleet.hub_init) approves the renewals.
        type: bool
        default: false
      cert_rotation_checking_interval:
        description:
          - With O(karmada.enable_cert_rotation), how often the agent checks its certificate (a Go duration, for example
            V(5m)).
        type: str
        default: 5m
      cert_rotation_remaining_time_threshold:
        description:
          - With O(karmada.enable_cert_rotation), the share of the certificate's lifetime left from which the agent
            renews it, between 0 and 1.
        type: float
        default: 0.2
      provider:
        description:
          - With O(karmada.deploy_agent). The member's cloud provider (the agent's C(--cluster-provider)).
        type: str
      region:
        description:
          - With O(karmada.deploy_agent). The member's region (the agent's C(--cluster-region)).
        type: str
      zones:
        description:
          - With O(karmada.deploy_agent). The member's zones (the agent's C(--cluster-zones)); names without spaces or
            commas.
        type: list
        elements: str
      proxy_server_address:
        description:
          - The address of the proxy through which the Karmada control plane reaches the member's API server
            (C(karmadactl register --proxy-server-address)) - the agent's C(--proxy-server-address), from which
            karmada-agent sets C(spec.proxyURL) of its Cluster. V(http), V(https) or V(socks5) C(://host:port).
          - Validated, passed to the agent of O(karmada.deploy_agent) and returned as RV(proxy_server_address). For Push
            members see O(multicluster.fleet.cluster_join#module:proxy_url).
        type: str
  ocm:
    description:
      - Settings for O(engine=ocm) only; one given with another engine, other than its default, fails the task before
        anything is read.
      - Each was a top-level option of its name in version 1.0.0; those names still work, deprecated, until version
        3.0.0. Given both ways with different values, the task fails.
    type: dict
    version_added: 1.1.0
    suboptions:
      accept:
        description:
          - Needs O(hub). After the join, accept the cluster on the hub as C(clusteradm accept) does (and
            M(multicluster.fleet.csr_accept)) - approve its klusterlet's CSR once it is checked, and set the
            ManagedCluster's C(hubAcceptsClient). With O(wait), the CSR is waited for, and then the hub's report of the
            cluster as C(ManagedClusterConditionAvailable=True).
          - In check mode the acceptance is previewed only for a cluster whose klusterlet has registered with the hub; a
            warning says so otherwise.
        type: bool
        default: false
      klusterlet_mode:
        description:
          - The Klusterlet's C(deployOption.mode), written when given; when omitted the mode the agent installer set is
            kept (C(Default) when none is set).
          - V(Hosted) and V(SingletonHosted) need O(hosting) (the cluster where the klusterlet runs and where the
            bootstrap Secret, Secret C(external-managed-kubeconfig) and Klusterlet C(klusterlet-<cluster>) are written),
            and limit O(cluster_name) to 52 characters. O(hosting) is refused with the other modes.
        type: str
        choices: [Default, Singleton, Hosted, SingletonHosted]
      klusterlet_spec:
        description:
          - The Klusterlet's other spec fields, written together with the registration fields, for example
            C(registrationImagePullSpec), C(workImagePullSpec), C(imagePullSpec) and C(resourceRequirement) (what role
            multicluster.fleet.agent_install sets). The Klusterlet is written whole, after the identity checks, so the
            operator never sees it without its cluster name.
          - Must not set the registration fields (C(clusterName), C(namespace), C(externalServerURLs),
            C(deployOption.mode), C(registrationConfiguration.registrationDriver)); they come from the other options.
          - When omitted, fields set by others are kept.
        type: dict
      operator_bundle:
        description:
          - The klusterlet operator's objects (manifests, as M(multicluster.fleet.k8s_objects) takes them) - its
            Klusterlet CustomResourceDefinition, namespace, RBAC and Deployment, what role multicluster.fleet.agent_install
            passes. They are applied to the cluster the klusterlet runs on after the identity checks and before the
            Klusterlet, each named in RV(changes); a CustomResourceDefinition that exists is kept as it is (it may be
            newer, or another installation's, as with O(multicluster.fleet.k8s_objects#module:existing=keep_crds)).
          - The operator then applies the Klusterlet; with O(wait), the wait for the Klusterlet covers the operator's
            start.
          - When omitted, the cluster must serve the Klusterlet API already (the operator installed before).
        type: list
        elements: dict
      managed_kubeconfig:
        description:
          - With O(ocm.klusterlet_mode=Hosted) or V(SingletonHosted). Path to the kubeconfig the hosted agents use to
            reach the member (the managed cluster), stored in Secret C(external-managed-kubeconfig) on the hosting
            cluster. Its current context is used, and files it refers to are embedded. It must work from the hosting
            cluster's network.
          - Defaults to the member connection's O(kubeconfig) (the default kubeconfig when neither O(kubeconfig) nor
            O(host) is given) and O(context). Users that authenticate with C(exec) or C(auth-provider) cannot be copied
            and are refused.
        type: path
      registration_driver:
        description:
          - How the registration agent reaches the hub - V(csr) through the hub API server, V(grpc) through the hub's
            gRPC server (ClusterManager registration driver C(grpc)), which needs O(ocm.grpc_server) and
            O(ocm.grpc_ca_pem).
        type: str
        choices: [csr, grpc]
        default: csr
      grpc_server:
        description:
          - The hub's gRPC server as C(host:port), as the agents reach it. Required with
            O(ocm.registration_driver=grpc).
        type: str
      grpc_ca_pem:
        description:
          - The PEM text of the CA bundle that signed the gRPC server's certificate (the hub's
            C(open-cluster-management-hub/ca-bundle-configmap), or the C(caBundle) of a C(hostname) endpoint). Required
            with O(ocm.registration_driver=grpc).
        type: str
      client_cert_expiration_seconds:
        description:
          - The lifetime the registration agent asks for its client certificate, Klusterlet
            C(registrationConfiguration.clientCertExpirationSeconds) (C(clusteradm join
            --client-cert-expiration-seconds)); the agent renews it itself when 20 to 25 percent of it is left. At least
            one hour. When omitted the field is not written (OCM's default, one year).
        type: int
extends_documentation_fragment:
  - multicluster.fleet.auth.member_connection
  - multicluster.fleet.auth.hub
  - multicluster.fleet.auth.hosting
  - multicluster.fleet.engine
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Discovery runs (it only reads), the Karmada CSR is a server-side dry run with the bootstrap token (which checks
        the token and its RBAC), and nothing is written or awaited.
      - When another run is registering the member (its Lease is held), no CSR is planned (Karmada); RV(waited_for)
        names that run and a warning says that a real run would wait for it.
  diff_mode:
    support: full
    details:
      - One diff per changed object; Secret values are masked.
  idempotent:
    support: full
notes:
  - The hub-side agent RBAC (Karmada) - namespaces C(karmada-cluster) and C(karmada-es-<cluster>), ClusterRole and
    ClusterRoleBinding C(system:karmada:<cluster>:agent) for user C(system:karmada:agent:<cluster>) with the
    cluster-wide rules of C(karmadactl register) except secrets and works, Role and RoleBinding
    C(system:karmada:<cluster>:agent-secret) (its own Secrets and Lease in C(karmada-cluster)) and
    C(system:karmada:<cluster>:agent-work) (works in C(karmada-es-<cluster>)). Every verb that can name an object is
    limited to the agent's own (its Cluster, its Secrets, its Lease), so one member's agent can neither read another
    member's stored credentials nor change its Cluster. Each run writes these roles, so roles an earlier version wrote
    more broadly are narrowed.
  - One name, one cluster. With O(hub), a registration is refused before anything is written when the hub has
    O(cluster_name) for another cluster (another cluster id - the UID of the member's C(kube-system) namespace,
    Karmada's C(spec.id), on OCM the id recorded at acceptance), or has this cluster under another name; the message
    names both clusters and their ids. Without O(hub) the hub cannot be asked (a bootstrap token may not list its
    clusters).
  - Without O(hub), Karmada registration writes only the member side; the agent fails at start until the hub-side RBAC
    exists. O(state=absent) without O(hub) warns that the hub still lists the cluster.
  - The karmada-agent Deployment itself and the klusterlet operator are installed by the role
    C(multicluster.fleet.agent_install).
requirements:
  - cryptography
seealso:
  - module: multicluster.fleet.bootstrap_token
  - module: multicluster.fleet.csr_accept
  - module: multicluster.fleet.cluster_join
  - module: multicluster.fleet.cluster_info
  - name: Karmada - Cluster Registration
    description: Push and Pull registration with C(karmadactl join) and C(karmadactl register).
    link: https://karmada.io/docs/userguide/clustermanager/cluster-registration
  - name: OCM - Register a cluster
    description: C(clusteradm join) and C(clusteradm accept), as OCM documents them.
    link: https://open-cluster-management.io/docs/getting-started/installation/register-a-cluster/
  - name: kubeadm join - token-based discovery with CA pinning
    description: How a joining cluster authenticates the hub through C(cluster-info) and the CA public key pin.
    link: https://kubernetes.io/docs/reference/setup-tools/kubeadm/kubeadm-join/
"""

EXAMPLES = r"""
- name: Create a join token on the Karmada hub
  multicluster.fleet.bootstrap_token:
    engine: karmada
    kubeconfig: /etc/fleet/hub.kubeconfig
  register: join

- name: Register member2 in Pull mode, with the hub-side agent RBAC
  multicluster.fleet.cluster_register:
    engine: karmada
    cluster_name: member2
    kubeconfig: /etc/fleet/member2.kubeconfig
    hub_apiserver: https://hub.example.com:6443
    token: "{{ join.token }}"
    ca_cert_hashes: "{{ join.ca_cert_hashes }}"
    hub:
      kubeconfig: /etc/fleet/hub.kubeconfig
  register: registration

- name: Register member4 in Pull mode and deploy its karmada-agent, waiting until the hub reports it Ready
  multicluster.fleet.cluster_register:
    engine: karmada
    cluster_name: member4
    kubeconfig: /etc/fleet/member4.kubeconfig
    hub_apiserver: https://hub.example.com:6443
    token: "{{ join.token }}"
    ca_cert_hashes: "{{ join.ca_cert_hashes }}"
    karmada:
      deploy_agent: true
      region: eu-west-1
    hub:
      kubeconfig: /etc/fleet/hub.kubeconfig
    wait: true
    wait_timeout: 300

- name: Approve the agent CSR on the hub
  multicluster.fleet.csr_accept:
    engine: karmada
    clusters: [member2]
    kubeconfig: /etc/fleet/hub.kubeconfig

- name: Join member3 to an OCM hub, waiting until its klusterlet runs
  multicluster.fleet.cluster_register:
    engine: ocm
    cluster_name: member3
    context: member3
    hub_apiserver: hub.example.com:6443
    token: "{{ ocm_join.token }}"
    ca_cert_hashes:
      - sha256:7877f4b21bc834bd68751fe486fccd6d66b4375710126c7489fa7a22a306b426
    wait: true
    wait_timeout: 300

- name: Join member4 to an OCM hub with its klusterlet hosted on the hub cluster
  multicluster.fleet.cluster_register:
    engine: ocm
    cluster_name: member4
    kubeconfig: /etc/fleet/member4.kubeconfig
    ocm:
      klusterlet_mode: Hosted
      managed_kubeconfig: /etc/fleet/member4-internal.kubeconfig
    hosting:
      kubeconfig: /etc/fleet/hub.kubeconfig
    hub_apiserver: https://hub.example.com:6443
    token: "{{ ocm_join.token }}"
    ca_cert_hashes: "{{ ocm_join.ca_cert_hashes }}"

- name: Join member7 to an OCM hub and accept it there, waiting until the hub reports it available
  multicluster.fleet.cluster_register:
    engine: ocm
    cluster_name: member7
    kubeconfig: /etc/fleet/member7.kubeconfig
    hub_apiserver: https://hub.example.com:6443
    token: "{{ ocm_join.token }}"
    ca_cert_hashes: "{{ ocm_join.ca_cert_hashes }}"
    ocm:
      accept: true
    hub:
      kubeconfig: /etc/fleet/hub.kubeconfig
    wait: true
    wait_timeout: 300

- name: Join member5 through the hub's gRPC server
  multicluster.fleet.cluster_register:
    engine: ocm
    cluster_name: member5
    context: member5
    hub_apiserver: https://hub.example.com:6443
    token: "{{ ocm_join.token }}"
    ca_cert_hashes: "{{ ocm_join.ca_cert_hashes }}"
    ocm:
      registration_driver: grpc
      grpc_server: grpc.hub.example.com:443
      grpc_ca_pem: "{{ lookup('ansible.builtin.file', '/etc/fleet/hub-grpc-ca.pem') }}"

- name: Register member6, which reaches the Karmada hub through an HTTPS proxy
  multicluster.fleet.cluster_register:
    engine: karmada
    cluster_name: member6
    kubeconfig: /etc/fleet/member6.kubeconfig
    hub_apiserver: https://hub.example.com:6443
    token: "{{ join.token }}"
    ca_cert_hashes: "{{ join.ca_cert_hashes }}"
    proxy_url: https://proxy.example.com:3129
    proxy_ca_cert: /etc/fleet/proxy-ca.pem
    karmada:
      proxy_server_address: http://member6-gateway.example.com:8118
    hub:
      kubeconfig: /etc/fleet/hub.kubeconfig

- name: Unregister member2 from Karmada, hub side included
  multicluster.fleet.cluster_register:
    engine: karmada
    cluster_name: member2
    state: absent
    kubeconfig: /etc/fleet/member2.kubeconfig
    hub:
      kubeconfig: /etc/fleet/hub.kubeconfig

- name: Remove member3, which no longer answers, from the Karmada hub
  multicluster.fleet.cluster_register:
    engine: karmada
    cluster_name: member3
    state: absent
    force: true
    kubeconfig: /etc/fleet/member3.kubeconfig
    hub:
      kubeconfig: /etc/fleet/hub.kubeconfig
"""

RETURN = r"""
changes:
  description:
    - Every object the run looked at (or would change, in check mode), in order - V(member) or V(hub), then
      C(Kind/namespace/name) or C(Kind/name), a colon, and V(created), V(updated), V(unchanged), V(deleted) or
      V(absent).
  returned: always
  type: list
  elements: str
  sample:
    - "hub ClusterRole/system:karmada:member2:agent: created"
    - "hub CertificateSigningRequest/member2-x7k2p: created"
    - "member Secret/karmada-system/karmada-kubeconfig: created"
engine:
  description: The engine of the hub.
  returned: always
  type: str
  sample: karmada
cluster_name:
  description: The member's name on the hub.
  returned: always
  type: str
  sample: member2
reason:
  description:
    - Why the run requested a certificate (Karmada) or wrote the bootstrap kubeconfig (OCM); null when the stored
      credentials were kept.
    - OCM in check mode on a cluster that does not serve the Klusterlet API yet - that the join is not previewed (only
      the identity checks and the dry run of O(ocm.operator_bundle) ran); a warning says so too.
  returned: when O(state=present)
  type: str
  sample: the certificate expires at 2027-01-02T03:04:05Z, within the renewal window
cluster_id:
  description:
    - The member's cluster id, the UID of its C(kube-system) namespace - the Karmada Cluster's C(spec.id), and on OCM
      recorded on the ManagedCluster (annotation C(multicluster.fleet/cluster-id)) when O(ocm.accept) accepts it. With
      O(hub) and O(wait), the Karmada Cluster gets the same annotation once its agent has created it. Then, and on OCM
      acceptance, the hub also records it in ConfigMap C(kube-system/multicluster-fleet.<engine>.<cluster>), the record
      of a cluster this collection registered, which M(multicluster.fleet.cluster_prune) reads.
  returned: when O(state=present)
  type: str
  sample: 3f5e8c1a-2b7d-4c9e-8f10-6a2b3c4d5e6f
csr_name:
  description:
    - The Karmada agent CSR created (or, in check mode, planned) on the hub, or the one an earlier run posted and this
      run resumed (listed as V(unchanged) in RV(changes)); null when none was needed.
  returned: when O(state=present)
  type: str
  sample: member2-x7k2p
csr_resumed:
  description:
    - Karmada, with RV(csr_name) set - whether that CSR is one an earlier run posted and this run resumed (V(true)),
      perhaps approved already, rather than a new one (V(false)); null when no CSR was needed.
    - A task approving the CSR (M(multicluster.fleet.csr_accept)) sets
      O(multicluster.fleet.csr_accept#module:expect_new_csr) only for a new one.
  returned: when O(state=present) and O(engine=karmada)
  type: bool
  sample: false
accepted:
  description:
    - With O(ocm.accept), the acceptance of the cluster on the hub, as an entry of the C(clusters) that
      M(multicluster.fleet.csr_accept) returns - C(name), C(accepted), C(approved) (the CSRs approved), C(rejected),
      C(denied). Null in check mode before the cluster's klusterlet has registered.
  returned: when O(state=present), O(engine=ocm) and O(ocm.accept)
  type: dict
  sample: {name: member7, accepted: true, approved: [member7-x7k2p], rejected: [], denied: []}
waited_for:
  description:
    - The registration of this member by another run that was under way when this run needed a certificate, and that
      this run waited for (in check mode - would wait for); null when there was none.
  returned: when O(state=present)
  type: dict
  contains:
    holder:
      description: The other run - host, process id and a random part.
      type: str
      sample: awx-task-1/4242/9f3c1a2b
    since:
      description: When it took the Lease.
      type: str
      sample: "2027-11-22T03:22:19.123456Z"
    lease:
      description: The Lease on the member.
      type: str
      sample: Lease/kube-system/multicluster-fleet-registration
certificate_expiration:
  description: When the agent's client certificate expires (Karmada, or OCM once joined); null in check mode.
  returned: when O(state=present)
  type: str
  sample: "2027-11-22T03:22:19Z"
proxy_server_address:
  description: The agent's C(--proxy-server-address) (the Cluster's C(spec.proxyURL)), O(karmada.proxy_server_address);
    null when not set.
  returned: when O(state=present) and O(engine=karmada)
  type: str
  sample: http://member6-gateway.example.com:8118
agent_user:
  description: The user name the Karmada agent has on the hub.
  returned: when O(state=present) and O(engine=karmada)
  type: str
  sample: system:karmada:agent:member2
joined:
  description: Whether the klusterlet already holds a valid certificate for this cluster (OCM).
  returned: when O(state=present) and O(engine=ocm)
  type: bool
hub_server:
  description: The hub server written into the member's kubeconfig (or found there); null for an OCM member that has
    joined.
  returned: when O(state=present)
  type: str
  sample: https://hub.example.com:6443
ca_pins:
  description: Pins of the hub CA the member trusts.
  returned: when O(state=present)
  type: list
  elements: str
hub_change:
  description:
    - What differs between the hub the member's stored hub kubeconfig reaches and the one this run asks for
      (re-bootstrap, see the hub changes guide); null when nothing does, or the member has no usable stored kubeconfig.
    - V(address) (C(from), C(to)) when O(hub_apiserver) changed; V(ca) (C(from), C(to), CA pins) when none of the stored
      CA's pins is in O(ca_cert_hashes). Karmada keeps the agent's certificate when the hub's CA still vouches for it
      and only rewrites the agent kubeconfig (no CSR); OCM rewrites the bootstrap kubeconfig and the klusterlet requests
      a new certificate, which O(ocm.accept) approves. Check mode reports it without writing.
  returned: when O(state=present)
  type: dict
  sample: {"address": {"from": "https://10.0.0.1:6443", "to": "https://hub.example.com:6443"}}
removed_from_hub:
  description:
    - Whether the klusterlet holds a certificate for a cluster the hub no longer has (its ManagedCluster removed, by
      C(prune.yml) or by hand, after it registered), which the hub no longer honours. The run then asks the klusterlet
      operator to bootstrap again (Klusterlet status condition C(RebootstrapProgressing)), with this run's token; the
      klusterlet creates the ManagedCluster again and requests a new certificate, which O(ocm.accept) approves. Only
      with O(hub); a Karmada member in that state (neither its Cluster nor its agent's hub RBAC left) gets a new
      certificate as at registration, and RV(reason) says why.
  returned: when O(state=present) and O(engine=ocm)
  type: bool
downgrade:
  description:
    - When the agent image this run installs is an older release than the one the member runs and O(allow_downgrade)
      let it (in check mode, would let it), C(from) and C(to), the two releases. Without O(allow_downgrade) such a run
      fails before anything is written, and its failed result carries the same C(downgrade).
  returned: when O(state=present) and the run downgrades the agent
  type: dict
  sample: {"from": "v1.4.0", "to": "v1.3.1"}
api_endpoint:
  description: The member API server URL the hub and agents use.
  returned: when O(state=present)
  type: str
  sample: https://10.0.0.7:6443
klusterlet:
  description: The Klusterlet of the cluster (OCM) - C(klusterlet), or C(klusterlet-<cluster>) on the hosting cluster.
  returned: when O(engine=ocm)
  type: str
  sample: klusterlet
agent_namespace:
  description: The namespace of the klusterlet's Secrets and agents (OCM; on the hosting cluster in Hosted mode).
  returned: when O(state=present) and O(engine=ocm)
  type: str
  sample: open-cluster-management-agent
"""

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, karmada, ocm
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import register, registrar
from ansible_collections.multicluster.fleet.plugins.module_utils.module import WAIT_ARG_SPEC, FleetModule, cluster_argument_spec


def run(module):
    params = engines.scoped_options(module.params["engine"], module_spec()["argument_spec"], module.params)
    reg = registrar.Registration(params)
    hub = module.cluster(params["hub"], role="hub") if params["hub"] else None
    hosting = module.cluster(params["hosting"], role="hosting") if params["hosting"] else None
    member = module.cluster(name=params["cluster_name"])
    return register.run(member, hub, reg, module.check_mode, hosting=hosting)


# The options of one engine only: suboptions karmada and ocm (engines.scoped_options).
KARMADA_OPTIONS = dict(
    csr_wait_timeout=dict(type="int", default=300),
    cert_expiration_seconds=dict(type="int", default=31536000),
    allow_mode_change=dict(type="bool", default=False),
    deploy_agent=dict(type="bool", default=False),
    agent_image=dict(type="str", default=karmada.DEFAULT_AGENT_IMAGE),
    agent_replicas=dict(type="int", default=1),
    enable_cert_rotation=dict(type="bool", default=False),
    cert_rotation_checking_interval=dict(type="str", default=karmada.CERT_ROTATION_CHECKING_INTERVAL),
    cert_rotation_remaining_time_threshold=dict(type="float", default=karmada.CERT_ROTATION_REMAINING_TIME_THRESHOLD),
    provider=dict(type="str"),
    region=dict(type="str"),
    zones=dict(type="list", elements="str"),
    proxy_server_address=dict(type="str"),
)
OCM_OPTIONS = dict(
    accept=dict(type="bool", default=False),
    klusterlet_mode=dict(type="str", choices=list(ocm.KLUSTERLET_MODES)),
    klusterlet_spec=dict(type="dict"),
    operator_bundle=dict(type="list", elements="dict"),
    managed_kubeconfig=dict(type="path"),
    registration_driver=dict(type="str", default="csr", choices=list(ocm.REGISTRATION_DRIVERS)),
    grpc_server=dict(type="str"),
    grpc_ca_pem=dict(type="str"),
    client_cert_expiration_seconds=dict(type="int"),
)
# Their flat names of version 1: deprecated top-level options without defaults, which the module folds in.
DEPRECATED = dict(removed_in_version="3.0.0", removed_from_collection="multicluster.fleet")


# The OCM options version 1 did not have, so no flat name.
OCM_OPTIONS_SINCE_V2 = ("operator_bundle",)


def flat_options(options):
    return dict((name, dict(dict((k, v) for k, v in spec.items() if k != "default"), **DEPRECATED))
                for name, spec in options.items() if name not in OCM_OPTIONS_SINCE_V2)


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(argument_spec=dict(
        engine=dict(type="str", required=True, choices=list(engines.NAMES)),
        cluster_name=dict(type="str", required=True),
        state=dict(type="str", default="present", choices=list(registrar.STATES)),
        hub_apiserver=dict(type="str"),
        token=dict(type="str", no_log=True),
        ca_cert_hashes=dict(type="list", elements="str", default=[]),
        unsafe_skip_ca_verification=dict(type="bool", default=False),
        force_internal_endpoint_lookup=dict(type="bool", default=False),
        discovery_timeout=dict(type="int", default=30),
        renew_before=dict(type="int", default=registrar.DEFAULT_RENEW_BEFORE_DAYS),
        api_endpoint=dict(type="str"),
        hub_version=dict(type="str"),
        allow_downgrade=dict(type="bool", default=False),
        force=dict(type="bool", default=False),
        hosting=cluster_argument_spec(),
        proxy_url=dict(type="str"),
        proxy_ca_cert=dict(type="path"),
        hub=cluster_argument_spec(),
        karmada=dict(type="dict", options=KARMADA_OPTIONS),
        ocm=dict(type="dict", options=OCM_OPTIONS,
                 required_if=[("registration_driver", "grpc", ("grpc_server", "grpc_ca_pem"))]),
        **dict(WAIT_ARG_SPEC, wait_timeout=dict(WAIT_ARG_SPEC["wait_timeout"], default=60),
               **dict(flat_options(KARMADA_OPTIONS), **flat_options(OCM_OPTIONS)))
    ), role="member", environment=False,
        required_if=[("state", "present", ("hub_apiserver", "token"))],
        required_by={"proxy_ca_cert": ("proxy_url",)})


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
