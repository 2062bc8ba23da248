# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet
short_description: The member clusters of a Karmada or Open Cluster Management hub as inventory hosts
version_added: 1.0.0
description:
  - Reads the member clusters registered on the hub - Karmada C(Cluster) or OCM C(ManagedCluster) objects, as
    M(multicluster.fleet.cluster_info) reads them - and makes every member cluster a host named after the cluster,
    and the hub one more host (O(hub_host)). A host stands for a cluster; tasks run on the controller.
  - "Groups: C(hub) (the hub), C(members) (every member), C(engine_<engine>) (the hub and the members, with the
    group variable C(fleet_engine)), C(mode_push) and C(mode_pull) (members by C(registration_mode)), C(ready) and
    C(not_ready) (members by what the hub reports), C(cordoned) (members carrying the engine's cordon taint),
    C(cluster_set_<set>) (OCM members by their cluster set; characters other than letters, digits and C(_) become C(_))
    and C(agent_outdated) (with O(target_agent_version)). The playbooks C(site.yml) and C(detach.yml) run on it
    unchanged."
  - "Member host variables the playbooks read: C(cluster_name), C(registration_mode) (V(push) or V(pull); what the
    hub reports, else V(push) for Karmada and V(pull) for OCM), C(provider), C(region), C(zones), C(labels),
    C(annotations) (without the collection's bookkeeping annotations) and C(cluster_set) (OCM
    label C(cluster.open-cluster-management.io/clusterset)) - where the hub reports them -, and C(kubeconfig) and
    C(context) where O(members) or O(members_kubeconfig) give them."
  - "Member host variables with what the hub reports: C(fleet_registered), C(fleet_ready), C(fleet_mode) (V(Push)
    or V(Pull)), C(fleet_cluster_id), C(fleet_api_endpoint), C(fleet_kubernetes_version), C(fleet_joined) and
    C(fleet_accepted) (OCM; null for Karmada) and C(fleet_taints) (C(spec.taints), the hub's own taints included, so not the
    input C(taints) of C(site.yml)); null where the hub does not say. C(cordoned) is true when the cluster
    carries the engine's cordon taint - Karmada C(cluster.karmada.io/unschedulable:NoSchedule) (C(karmadactl cordon)),
    OCM C(multicluster.fleet/cordoned) with effect C(NoSelect) or C(NoSelectIfNew)."
  - The hub host's variables are the connection settings the inventory source gives, except secrets,
    O(hub_apiserver) and O(hub_vars). The same variables, with the hub's host name as C(name), are the group
    variable C(fleet_hub) of C(members), so that a member's play finds the hub where the hub host is not in the
    inventory (an AWX job slice).
  - No secret becomes an inventory variable - neither O(api_key) nor a O(kubeconfig) given as a dictionary.
  - The inventory source is a YAML file whose name ends in C(.fleet.yml) or C(.fleet.yaml).
author:
  - multicluster.fleet maintainers (@multicluster-fleet)
options:
  plugin:
    description: The name of this plugin; the inventory source is for it.
    type: str
    required: true
    choices: [multicluster.fleet.fleet]
  hub_host:
    description:
      - The inventory host name of the hub. It must differ from every group name and member cluster name.
    type: str
    default: hub-cluster
  hub_apiserver:
    description:
      - The URL members reach the hub's API server at, when it differs from the one this plugin uses. Becomes the
        hub host's variable C(hub_apiserver) and a key of C(fleet_hub).
    type: str
  hub_vars:
    description:
      - More variables of the hub host, for example C(hub_init_csr_auto_approval) or other C(hub_init_*) settings,
        or C(context) - the hub's context in C(fleet_kubeconfig), the AWX credential's kubeconfig. They are also
        keys of C(fleet_hub), so that a member play without the hub host (an AWX job slice) sees them. They are not
        this plugin's connection to the hub. Never put secrets here.
    type: dict
    default: {}
  members:
    description:
      - How to reach the member clusters, whose credentials are not on the hub, and which members to declare.
      - Every entry that matches a cluster contributes; where two set the same setting, the earlier one wins.
      - A cluster named by a O(members[].name) entry becomes a host even before it registers (C(fleet_registered)
        false), so that C(site.yml) can register it.
      - A cluster no entry gives a kubeconfig gets O(members_kubeconfig); one that gets no connection settings at all
        is reached by the playbooks through the variable C(fleet_kubeconfig) (the AWX credential of this collection),
        with its name as the context.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: One cluster, by name. Exactly one of O(members[].name) and O(members[].pattern).
        type: str
      pattern:
        description: Cluster names, as a shell-style pattern (fnmatch), for example V(edge-*).
        type: str
      kubeconfig:
        description: Path of the kubeconfig that reaches the matching clusters (the host variable C(kubeconfig)).
        type: str
      context:
        description:
          - The kubeconfig context (the host variable C(context)).
          - Default for a O(members[].pattern) entry with a kubeconfig - the cluster's name; for a O(members[].name)
            entry - the kubeconfig's current context.
        type: str
      vars:
        description:
          - Host variables of the matching clusters, for example C(registration_mode), C(provider), C(region),
            C(zones). They win over what the hub reports. Never put secrets here.
        type: dict
  members_kubeconfig:
    description:
      - Path of a kubeconfig with one context per member, each named after its cluster. Every member that O(members)
        gives no kubeconfig gets it, with its name as the context.
    type: path
  agent_versions:
    description:
      - Also read each member's agent (what M(multicluster.fleet.cluster_info) reads with member access) with the
        connection O(members) or O(members_kubeconfig) gives it, for the host variable C(agent_version) - the release
        its agent runs (the image tag), null when it cannot be read (with a warning). A Karmada Push member runs no agent
        and gets no C(agent_version), nor does a member without a kubeconfig.
      - One read per member; with O(cache) they are cached with the hub's answer.
    type: bool
    default: false
  target_agent_version:
    description:
      - With O(agent_versions), the release every agent should run (for example V(v1.18.2) or V(1.3.1)); members whose
        C(agent_version) is older are also in group C(agent_outdated), for example to upgrade them.
    type: str
  filters:
    description:
      - Jinja2 conditionals over a member's host variables (and C(fleet_engine)); only members for which all are
        true become hosts. The hub is always a host.
      - A conditional that cannot be evaluated leaves the member out with a warning, or fails the inventory when
        O(strict) is true.
    type: list
    elements: str
    default: []
notes:
  - The hub's connection follows the credential rule of the modules (below, the inventory source is the task) - a
    source that gives none of O(kubeconfig), O(context) and O(host) takes the whole connection from the
    E(K8S_AUTH_*) variables, which an AWX credential sets in inventory updates. Members are reached only with
    O(agent_versions), with the kubeconfigs O(members) and O(members_kubeconfig) give, never with the environment.
  - O(compose), O(groups) and O(keyed_groups) apply to the members, after O(filters). Set the hub's own variables in
    C(host_vars) or in the AWX inventory.
  - With O(cache), the hub's answer is kept in the inventory cache and a later run within O(cache_timeout) makes no
    request to the hub (C(ansible-inventory --flush-cache) asks it again).
  - One inventory holds one fleet source; C(site.yml) expects exactly one host in C(hub).
  - The collection's docs/awx.md shows the inventory source, the AWX credential type and the job templates.
seealso:
  - module: multicluster.fleet.cluster_info
extends_documentation_fragment:
  - multicluster.fleet.engine
  - multicluster.fleet.auth
  - ansible.builtin.constructed
  - ansible.builtin.inventory_cache
"""

EXAMPLES = r"""
# karmada.fleet.yml - the members of a Karmada hub, each member reached through a context named after it in
# one kubeconfig; ansible-inventory -i karmada.fleet.yml --graph
plugin: multicluster.fleet.fleet
engine: karmada
kubeconfig: /etc/fleet/karmada-apiserver.kubeconfig
context: karmada-apiserver
hub_apiserver: https://karmada.example.com:5443
members_kubeconfig: /etc/fleet/members.kubeconfig
# the agents' versions too (host variable agent_version), and group agent_outdated: the agents older than v1.18.2
agent_versions: true
target_agent_version: v1.18.2

---
# ocm.fleet.yml - an OCM hub whose credentials come from the environment (K8S_AUTH_KUBECONFIG, or the AWX
# credential of this collection); two clusters declared for site.yml to register, edge clusters reached with
# their own kubeconfig, groups by region and provider, and only the clusters labelled env=prod.
plugin: multicluster.fleet.fleet
engine: ocm
members:
  - name: cluster1
    vars:
      region: eu-west-1
  - name: cluster2
    context: cluster2-admin
  - pattern: "edge-*"
    kubeconfig: /etc/fleet/edge.kubeconfig
filters:
  - labels.env | default('') == 'prod'
keyed_groups:
  - key: region | default('unknown')
    prefix: region
  - key: provider
    prefix: provider
groups:
  outdated: fleet_kubernetes_version is not none and fleet_kubernetes_version is version('v1.27', '<')

---
# awx.fleet.yml - in AWX, with the collection's credential type: the inventory update reaches the hub through
# K8S_AUTH_KUBECONFIG; jobs reach the hub and every member through the credential's kubeconfig
# (fleet_kubeconfig), whose hub context is "hub" and member contexts are named "<cluster>-admin"
plugin: multicluster.fleet.fleet
engine: karmada
hub_vars:
  context: hub
compose:
  context: cluster_name ~ '-admin'

---
# cached.fleet.yml - ask the hub at most every 10 minutes
plugin: multicluster.fleet.fleet
engine: karmada
kubeconfig: ~/.kube/karmada.kubeconfig
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/fleet-inventory
cache_timeout: 600
"""

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.utils.display import Display
from ansible.utils.unsafe_proxy import wrap_var

from ansible_collections.multicluster.fleet.plugins.module_utils.fleet import inventory as fleet_inventory
from ansible_collections.multicluster.fleet.plugins.module_utils.kube import client
from ansible_collections.multicluster.fleet.plugins.module_utils.kube.auth_options import AUTH_OPTIONS
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

display = Display()


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "multicluster.fleet.fleet"

    def verify_file(self, path):
        return super(InventoryModule, self).verify_file(path) and path.endswith((".fleet.yml", ".fleet.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        self._read_config_data(path)
        engine = self.get_option("engine")
        hub_options = dict((option, self.get_option(option)) for option in AUTH_OPTIONS)
        try:
            mapping = fleet_inventory.MemberMapping(self.get_option("members"), self.get_option("members_kubeconfig"))
            # What the hub says is data, never a template: a label value like "{{ lookup('pipe', ...) }}" stays text.
            clusters = [dict(wrap_var(cluster), name=cluster["name"])
                        for cluster in self._clusters(path, cache, engine, hub_options, mapping)]
            fleet = fleet_inventory.build(engine, clusters, mapping, self.get_option("hub_host"), hub_options,
                                          self.get_option("hub_apiserver"), self.get_option("hub_vars"),
                                          self.get_option("target_agent_version"))
        except FleetError as exc:
            raise AnsibleParserError("%s: %s" % (path, exc.msg))
        for warning in fleet.warnings:
            display.warning("%s: %s" % (path, warning))
        self._populate(fleet)

    def _clusters(self, path, cache, engine, hub_options, mapping):
        """What the hub reports about its members (with O(agent_versions), and what the members report of their agents):
        from the inventory cache when allowed and filled, else from the hub and the members."""
        key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        update_cache = self.get_option("cache") and not cache
        if use_cache:
            try:
                return self._cache[key]
            except KeyError:
                update_cache = True
        hub = client.get_cluster(client.connection_options(hub_options, environment=True), role="hub")
        clusters = fleet_inventory.observe(hub, engine)
        if self.get_option("agent_versions"):
            for warning in fleet_inventory.observe_agents(engine, clusters, mapping):
                display.warning("%s: %s" % (path, warning))
        if update_cache:
            self._cache[key] = clusters
        return clusters

    def _populate(self, fleet):
        for group in fleet.groups:
            self.inventory.add_group(group)
        for group, variables in fleet.group_vars.items():
            for name, value in variables.items():
                self.inventory.set_variable(group, name, value)
        group_vars = dict(item for variables in fleet.group_vars.values() for item in variables.items())
        self._add(fleet.hub)
        strict = self.get_option("strict")
        for member in fleet.members:
            variables = dict(group_vars, **member.vars)
            if not self._passes_filters(member.name, variables, strict):
                continue
            self._add(member)
            self._set_composite_vars(self.get_option("compose"), variables, member.name, strict)
            self._add_host_to_composed_groups(self.get_option("groups"), variables, member.name, strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), variables, member.name, strict)

    def _add(self, host):
        self.inventory.add_host(host.name)
        for group in host.groups:
            self.inventory.add_child(group, host.name)
        for name, value in host.vars.items():
            self.inventory.set_variable(host.name, name, value)

    def _passes_filters(self, name, variables, strict):
        for condition in self.get_option("filters"):
            try:
                if not self._compose(condition, variables):
                    return False
            except Exception as exc:  # any templating error: the user's expression
                message = "filter %r cannot be evaluated for cluster %s: %s" % (condition, name, to_native(exc))
                if strict:
                    raise AnsibleError(message)
                display.warning(message + "; the cluster is left out")
                return False
        return True
