#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: bootstrap_token
short_description: Create, reuse or delete the join credentials members register to a hub with
version_added: 1.0.0
description:
  - Manages bootstrap tokens on the hub like C(karmadactl token create/delete) and C(clusteradm get token) do -
    a Secret C(kube-system/bootstrap-token-<id>) of type C(bootstrap.kubernetes.io/token) whose token
    authenticates as C(system:bootstrap:<id>) in the engine's bootstrap group, and signs
    C(kube-public/cluster-info) so members can discover and pin the hub (Kubernetes' bootstrapsigner does that).
  - Idempotent. With O(token) or O(token_id), that token is managed. Without either, an existing unexpired
    token with the same usages, groups and description is reused, else a new random token is created.
  - A token is reused only while it serves the request - unexpired, never expiring when O(ttl=0), otherwise
    expiring no later than O(ttl) from now (plus a minute); other tokens are rewritten (O(token_id)) or left alone.
    A token given by id that has expired gets a new secret; one that only differs in its properties keeps it.
  - One run at a time creates a new random token - it holds Lease C(kube-system/multicluster-fleet-join-token) on the
    hub while it looks again and creates the token, so a second run started at the same moment (a second playbook run)
    waits for it, up to two minutes, and reuses that token instead of making another.
  - With O(token_type=service_account) (only for O(engine=ocm)) the token is issued by a TokenRequest for the
    ServiceAccount C(open-cluster-management/agent-registration-bootstrap), as C(clusteradm get token) does by default.
    A TokenRequest stores nothing, so each run issues a token expiring O(ttl) from now and reports a change, unless the
    token of an earlier run is passed as O(token) - then the API server checks it (TokenReview) and it is returned
    unchanged while it is valid for that ServiceAccount and does not outlive O(ttl). Tokens issued within the same
    second carry the same claims, so they can be the same string.
  - Returns the token, the hub URL and the CA pins members need, and the equivalent C(karmadactl register) or
    C(clusteradm join) command line. B(Put C(no_log) on the task), the result holds the token.
  - Run M(multicluster.fleet.hub_registration) first so that the token's groups may create CSRs.
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  state:
    description:
      - V(present) makes a token exist (see the description for which one), V(absent) deletes the token
        given by O(token) or O(token_id).
    type: str
    choices: [present, absent]
    default: present
  token_type:
    description:
      - V(bootstrap_token) manages a bootstrap token Secret (both engines).
      - V(service_account) issues a ServiceAccount token for OCM's bootstrap ServiceAccount (O(engine=ocm) only;
        O(state=present) only; O(token_id), O(usages), O(groups) and O(description) do not apply).
    type: str
    choices: [bootstrap_token, service_account]
    default: bootstrap_token
  token:
    description:
      - The full token. For a bootstrap token V(<id>.<secret>) (6 and 16 characters V([a-z0-9])) to create or keep
        exactly this token, or to delete it. For a ServiceAccount token, the token of an earlier run to keep.
      - Values of this option are masked in the result, including inside RV(cli_command).
    type: str
  token_id:
    description:
      - The id of the bootstrap token to manage (6 characters V([a-z0-9])); a random secret is generated when it is created.
    type: str
  ttl:
    description:
      - How long the token is valid, as a duration (V(24h), V(30m), V(1h30m), V(90s)) or a number of seconds.
      - V(0) means a bootstrap token never expires. ServiceAccount tokens need at least V(10m).
      - Kubernetes' tokencleaner deletes an expired bootstrap token; the API server refuses it from then on.
    type: raw
    default: 24h
  description:
    description:
      - A human friendly description stored with the bootstrap token.
    type: str
  usages:
    description:
      - What the bootstrap token may be used for. V(authentication) lets it authenticate to the API server,
        V(signing) lets it sign C(kube-public/cluster-info) for discovery.
      - Default V([authentication, signing]).
    type: list
    elements: str
    choices: [authentication, signing]
  groups:
    description:
      - Extra groups the bootstrap token authenticates as, each matching C(system:bootstrappers:[a-z0-9:-]*).
      - Default C(system:bootstrappers:karmada:default-cluster-token) for Karmada and
        C(system:bootstrappers:managedcluster) for OCM. V([]) means none.
    type: list
    elements: str
  hub_apiserver:
    description:
      - The hub API server URL members reach, for RV(hub_apiserver) and RV(cli_command); an V(https) (or V(http)) URL
        with a host, as M(multicluster.fleet.hub_registration) takes it.
      - Default the server C(kube-public/cluster-info) publishes, else the server of the hub connection.
    type: str
  create:
    description:
      - With V(false), a bootstrap token that serves the request (O(description), groups, usages, O(ttl)) is only looked
        up - returned unchanged when one exists, otherwise the task fails with RV(missing) true and creates nothing.
        Member plays use it to read the join token the hub play made; retry the task to wait for it.
      - Applies to bootstrap tokens given neither by O(token) nor by O(token_id).
    type: bool
    default: true
extends_documentation_fragment:
  - multicluster.fleet.engine
  - multicluster.fleet.auth
  - multicluster.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Writes are server-side dry runs. A token that a real run would generate is not returned (it does not exist).
      - No ServiceAccount token is issued in check mode.
  diff_mode:
    support: full
    details:
      - The diff shows the token's id, description, usages, groups and expiration, never its secret.
  idempotent:
    support: partial
    details:
      - Bootstrap tokens are idempotent. A ServiceAccount token is idempotent only when the token of an earlier
        run is passed as O(token); otherwise each run issues a new one and reports a change.
notes:
  - The CA pins are those of the CA in C(kube-public/cluster-info) (what a member verifies), or of the CA
    that verifies the hub connection when cluster-info does not exist.
seealso:
  - module: multicluster.fleet.bootstrap_token_info
  - module: multicluster.fleet.hub_registration
"""

EXAMPLES = r"""
- name: A bootstrap token for Karmada pull registration, valid for 2 hours
  multicluster.fleet.bootstrap_token:
    engine: karmada
    kubeconfig: /etc/fleet/hub.kubeconfig
    ttl: 2h
    description: register the edge clusters
  register: join
  no_log: true

- name: Keep the equivalent karmadactl command for a manual join (it contains the token)
  ansible.builtin.copy:
    content: "{{ join.cli_command }}\n"
    dest: /root/karmada-register.sh
    mode: "0600"
  no_log: true

- name: Read the join token role hub_init made, waiting up to 5 minutes for a hub play running elsewhere
  multicluster.fleet.bootstrap_token:
    engine: karmada
    kubeconfig: /etc/fleet/hub.kubeconfig
    description: join token created by multicluster.fleet hub_init
    create: false
  register: join
  until: join.missing is not defined
  retries: 30
  delay: 10
  no_log: true

- name: Keep one fixed token id (created, or rewritten when expired or different)
  multicluster.fleet.bootstrap_token:
    engine: ocm
    token_id: edge01
    ttl: 24h
  register: ocm_join
  no_log: true

- name: The OCM default - a token of ServiceAccount open-cluster-management/agent-registration-bootstrap
  multicluster.fleet.bootstrap_token:
    engine: ocm
    token_type: service_account
    ttl: 1h
  register: sa_join
  no_log: true

- name: Delete a token by id (or pass the full token)
  multicluster.fleet.bootstrap_token:
    engine: karmada
    token_id: edge01
    state: absent
"""

RETURN = r"""
missing:
  description: True when O(create=false) found no bootstrap token that serves the request (the task then fails).
  returned: failure
  type: bool
  sample: true
token:
  description:
    - The full token (V(<id>.<secret>) for a bootstrap token, a JWT for a ServiceAccount token). Keep it secret.
    - Null when O(state=absent), and in check mode when a real run would generate or issue a new one.
  returned: success
  type: str
  sample: abcdef.0123456789abcdef
token_id:
  description: The bootstrap token id; null for ServiceAccount tokens and when check mode would generate one.
  returned: success
  type: str
  sample: abcdef
expiration:
  description: When the token expires (RFC 3339, UTC); null when it never expires or is not known in check mode.
  returned: success
  type: str
  sample: "2026-11-23T04:00:00Z"
usages:
  description: The bootstrap token's usages.
  returned: state is present and token_type is bootstrap_token
  type: list
  elements: str
  sample: [authentication, signing]
groups:
  description: The bootstrap token's extra groups.
  returned: state is present and token_type is bootstrap_token
  type: list
  elements: str
  sample: [system:bootstrappers:karmada:default-cluster-token]
description:
  description: The bootstrap token's description.
  returned: state is present and token_type is bootstrap_token
  type: str
  sample: register the edge clusters
reasons:
  description: Why an existing token was rewritten or a new ServiceAccount token issued instead of keeping the given one.
  returned: state is present
  type: list
  elements: str
  sample: [expired at 2026-11-22T04:00:00Z]
hub_apiserver:
  description: The hub API server URL members reach.
  returned: state is present
  type: str
  sample: https://hub.example.com:6443
ca_cert_hashes:
  description: Public key pins (C(sha256:<hex>)) of the hub CA, the values of C(--discovery-token-ca-cert-hash).
  returned: state is present
  type: list
  elements: str
  sample: [sha256:1ab2...]
cli_command:
  description:
    - The equivalent command line a member would run - C(karmadactl register <host:port> --token <token>
      --discovery-token-ca-cert-hash <pins>) for Karmada, C(clusteradm join --hub-token <token> --hub-apiserver <url>)
      for OCM (add C(--cluster-name)). It contains the token; null when RV(token) is null.
  returned: state is present
  type: str
  sample: karmadactl register hub.example.com:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:1ab2...
objects:
  description: What happened, as C(Kind/namespace/name) followed by the action.
  returned: success
  type: list
  elements: str
  sample: ["Secret/kube-system/bootstrap-token-abcdef: created"]
"""

from ansible_collections.multicluster.fleet.plugins.module_utils import engines, karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.registration import bootstrap, hub, tokens
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError
from ansible_collections.multicluster.fleet.plugins.module_utils.module import FleetModule

BOOTSTRAP_ONLY = ("token_id", "usages", "groups", "description")


def present(module, cluster, ttl_seconds):
    params = module.params
    engine = engines.get(params["engine"])
    if params["token_type"] == "service_account":
        done = tokens.service_account_token(cluster, ttl_seconds, params["token"], module.check_mode)
        result = dict(changed=done["action"] != "unchanged", token=done["token"], token_id=None,
                      expiration=done["expiration"], reasons=done["reasons"], objects=[done["summary"]])
    else:
        groups = params["groups"] if params["groups"] is not None else [engine.bootstrap_group]
        usages = params["usages"] if params["usages"] is not None else list(bootstrap.DEFAULT_USAGES)
        want = tokens.token_request(groups, usages, ttl_seconds, params["description"])
        done = tokens.ensure_token(cluster, want, params["token"], params["token_id"], module.check_mode, create=params["create"])
        info = done["info"]
        result = dict(changed=done["action"] != "unchanged", token=done["token"], token_id=info["token_id"],
                      expiration=info["expiration"], usages=info["usages"], groups=info["groups"],
                      description=info["description"], reasons=done["reasons"], objects=[done["summary"]],
                      diff=done["diff"])
    server, pins = hub.hub_endpoint(cluster, params["hub_apiserver"])
    if not pins and engine.cli_pins:
        result["warnings"] = ["no CA certificate is known for the hub, so no --discovery-token-ca-cert-hash can be given"]
    result.update(hub_apiserver=server, ca_cert_hashes=pins,
                  cli_command=engine.cli_command(result["token"], server, pins) if result["token"] else None)
    return result


def run(module):
    params = module.params
    ttl_seconds = tokens.parse_duration(params["ttl"])
    if params["hub_apiserver"]:
        karmada.validate_api_endpoint(params["hub_apiserver"], "hub_apiserver")
    if params["token_type"] == "service_account":
        if not engines.get(params["engine"]).service_account_join:
            raise FleetError("token_type service_account is OCM's join mode; use engine: ocm")
        given = [name for name in BOOTSTRAP_ONLY if params[name] is not None]
        if given:
            raise FleetError("%s only appl%s to bootstrap tokens" % (", ".join(given), "ies" if len(given) == 1 else "y"))
    cluster = module.cluster()
    if params["state"] == "present":
        return present(module, cluster, ttl_seconds)
    if params["token_type"] == "service_account":
        raise FleetError("a ServiceAccount token cannot be revoked by itself; remove the ServiceAccount with"
                         " multicluster.fleet.hub_registration state=absent to invalidate all its tokens")
    if not params["token"] and not params["token_id"]:
        raise FleetError("state=absent needs the token or the token_id to delete")
    done = tokens.delete_token(cluster, params["token"] or params["token_id"], module.check_mode)
    return dict(changed=done["action"] == "deleted", token=None, token_id=done["token_id"], expiration=None,
                objects=[done["summary"]], diff=done["diff"])


def module_spec():
    """The arguments of FleetModule (the module process) and of ControllerModule (on the controller)."""
    return dict(
        argument_spec=dict(
            engine=dict(type="str", required=True, choices=list(engines.NAMES)),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            token_type=dict(type="str", default="bootstrap_token", choices=["bootstrap_token", "service_account"]),
            token=dict(type="str", no_log=True),
            token_id=dict(type="str"),
            ttl=dict(type="raw", default="24h"),
            description=dict(type="str"),
            usages=dict(type="list", elements="str", choices=list(bootstrap.KNOWN_USAGES)),
            groups=dict(type="list", elements="str"),
            hub_apiserver=dict(type="str"),
            create=dict(type="bool", default=True),
        ),
        mutually_exclusive=[("token", "token_id")],
    )


def main():
    FleetModule(**module_spec()).run(run)


if __name__ == "__main__":
    main()
