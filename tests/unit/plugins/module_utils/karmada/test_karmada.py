"""Karmada push-join facts: names, object builders (against the real karmadactl shapes) and validation."""

import pytest
import yaml

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada
from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# What the real ``karmadactl join kmember1`` created (docs/architecture.md 4.3; secret values left out).
REFERENCE = """
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: kmember1}
spec:
  apiEndpoint: https://127.0.0.1:18443
  id: 004830c5-3081-41f2-afc4-e68d86e4f96b
  impersonatorSecretRef: {name: kmember1-impersonator, namespace: karmada-cluster}
  secretRef: {name: kmember1, namespace: karmada-cluster}
  syncMode: Push
---
apiVersion: v1
kind: Secret
metadata:
  labels: {karmada.io/system: 'true'}
  name: kmember1
  namespace: karmada-cluster
  ownerReferences:
  - {apiVersion: cluster.karmada.io/v1alpha1, blockOwnerDeletion: true, controller: true, kind: Cluster,
     name: kmember1, uid: <uid of the owner>}
type: Opaque
data: {caBundle: x, token: x}
---
apiVersion: v1
kind: Secret
metadata:
  labels: {karmada.io/system: 'true'}
  name: kmember1-impersonator
  namespace: karmada-cluster
  ownerReferences:
  - {apiVersion: cluster.karmada.io/v1alpha1, blockOwnerDeletion: true, controller: true, kind: Cluster,
     name: kmember1, uid: <uid of the owner>}
type: Opaque
data: {token: x}
---
apiVersion: v1
kind: Namespace
metadata:
  labels: {karmada.io/system: 'true'}
  name: karmada-cluster
---
apiVersion: v1
kind: ServiceAccount
metadata:
  labels: {karmada.io/system: 'true'}
  name: karmada-kmember1
  namespace: karmada-cluster
---
apiVersion: v1
kind: ServiceAccount
metadata:
  labels: {karmada.io/system: 'true'}
  name: karmada-impersonator
  namespace: karmada-cluster
---
apiVersion: v1
kind: Secret
metadata:
  annotations: {kubernetes.io/service-account.name: karmada-kmember1}
  name: karmada-kmember1
  namespace: karmada-cluster
type: kubernetes.io/service-account-token
---
apiVersion: v1
kind: Secret
metadata:
  annotations: {kubernetes.io/service-account.name: karmada-impersonator}
  name: karmada-impersonator
  namespace: karmada-cluster
type: kubernetes.io/service-account-token
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  labels: {karmada.io/system: 'true'}
  name: karmada-controller-manager:karmada-kmember1
rules:
- apiGroups: ['*']
  resources: ['*']
  verbs: ['*']
- nonResourceURLs: ['*']
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  labels: {karmada.io/system: 'true'}
  name: karmada-controller-manager:karmada-kmember1
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: karmada-controller-manager:karmada-kmember1}
subjects:
- {kind: ServiceAccount, name: karmada-kmember1, namespace: karmada-cluster}
"""


def reference_objects():
    """The reference objects by (kind, name, namespace)."""
    docs = [d for d in yaml.safe_load_all(REFERENCE) if d]
    return dict(((d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")), d) for d in docs)


def subset(expected, actual):
    """Every field of ``actual`` (our builder) has the value the reference shows."""
    if isinstance(actual, dict):
        return all(k in expected and subset(expected[k], v) for k, v in actual.items())
    if isinstance(actual, list):
        return len(actual) == len(expected) and all(subset(e, a) for e, a in zip(expected, actual))
    return expected == actual


class TestNames:
    def test_names_follow_karmadactl(self):
        assert karmada.service_account_name("kmember1") == "karmada-kmember1"
        assert karmada.cluster_role_name("kmember1") == "karmada-controller-manager:karmada-kmember1"
        assert karmada.impersonator_secret_name("kmember1") == "kmember1-impersonator"
        assert karmada.execution_namespace("kmember1") == "karmada-es-kmember1"


class TestBuildersMatchReference:
    """Each builder produces a subset of what the real karmadactl join left on the clusters."""

    def test_member_objects(self):
        ref = reference_objects()
        ns = karmada.DEFAULT_CLUSTER_NAMESPACE
        pairs = [
            (("Namespace", ns, None), karmada.system_namespace(ns)),
            (("ServiceAccount", "karmada-kmember1", ns), karmada.member_service_account("karmada-kmember1", ns)),
            (("ServiceAccount", "karmada-impersonator", ns), karmada.member_service_account("karmada-impersonator", ns)),
            (("Secret", "karmada-kmember1", ns), karmada.service_account_token_secret("karmada-kmember1", ns)),
            (("Secret", "karmada-impersonator", ns), karmada.service_account_token_secret("karmada-impersonator", ns)),
            (("ClusterRole", "karmada-controller-manager:karmada-kmember1", None), karmada.member_cluster_role("kmember1")),
            (("ClusterRoleBinding", "karmada-controller-manager:karmada-kmember1", None),
             karmada.member_cluster_role_binding("kmember1", ns)),
        ]
        for key, built in pairs:
            assert subset(ref[key], built), key

    def test_cluster_role_grants_everything_and_nonresource_get(self):
        rules = karmada.member_cluster_role("x")["rules"]
        assert rules == [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["get"]}]
        rules[0]["verbs"].append("mutated")
        assert karmada.CLUSTER_ROLE_RULES[0]["verbs"] == ["*"]  # builders hand out copies

    def test_hub_secrets_and_owner_reference(self):
        ref = reference_objects()
        owner = {"metadata": {"name": "kmember1", "uid": "u-1"}}
        secret = karmada.hub_secret("kmember1", "karmada-cluster", {"caBundle": "Q0E=", "token": "VA=="}, owner)
        expected = ref[("Secret", "kmember1", "karmada-cluster")]
        assert secret["metadata"]["labels"] == expected["metadata"]["labels"]
        assert secret["type"] == expected["type"] and set(secret["data"]) == set(expected["data"])
        reference_owner = dict(expected["metadata"]["ownerReferences"][0], uid="u-1")
        assert secret["metadata"]["ownerReferences"] == [reference_owner]
        impersonator = karmada.hub_secret("kmember1-impersonator", "karmada-cluster", {"token": "VA=="}, owner)
        assert set(impersonator["data"]) == set(ref[("Secret", "kmember1-impersonator", "karmada-cluster")]["data"])

    def test_push_cluster_matches_reference_spec(self):
        ref = reference_objects()[("Cluster", "kmember1", None)]
        options = dict(cluster_name="kmember1", cluster_namespace="karmada-cluster", api_endpoint=ref["spec"]["apiEndpoint"])
        built = karmada.push_cluster(options, ref["spec"]["id"])
        assert built["spec"].pop("insecureSkipTLSVerification") is None  # false is omitted, as Karmada omits it
        assert built["spec"] == ref["spec"]


class TestPushClusterOptionalFields:
    def base(self, **kwargs):
        options = dict(cluster_name="c1", cluster_namespace="karmada-cluster", api_endpoint="https://10.0.0.7:6443", **kwargs)
        return karmada.push_cluster(options, "id-1")["spec"]

    def test_unset_fields_are_left_out(self):
        spec = self.base()
        assert not {"proxyURL", "provider", "region", "zones"} & set(spec)

    def test_values_are_set(self):
        spec = self.base(insecure_skip_tls_verification=True, proxy_url="socks5://p:1080", provider="aws",
                         region="eu-west-1", zones=["a", "b"])
        assert (spec["insecureSkipTLSVerification"], spec["proxyURL"], spec["provider"], spec["region"], spec["zones"]) == (
            True, "socks5://p:1080", "aws", "eu-west-1", ["a", "b"])

    def test_empty_values_ask_for_removal(self):
        spec = self.base(proxy_url="", provider="", region="", zones=[])
        assert all(spec[k] is None for k in ("proxyURL", "provider", "region", "zones"))


class TestValidation:
    @pytest.mark.parametrize("name", ["a", "member-1", "x" * 48, "0abc"])
    def test_good_cluster_names(self, name):
        karmada.validate_cluster_name(name)

    @pytest.mark.parametrize("name", ["", "x" * 49, "Member1", "-a", "a-", "a_b", "a.b"])
    def test_bad_cluster_names(self, name):
        with pytest.raises(FleetError, match="DNS-1123 labels .* of 1 to 48 characters"):
            karmada.validate_cluster_name(name)

    @pytest.mark.parametrize("namespace", ["kube-system", "default", "kube-public", "kube-node-lease"])
    def test_reserved_namespaces(self, namespace):
        with pytest.raises(FleetError, match="reserved by Kubernetes"):
            karmada.validate_cluster_namespace(namespace)

    def test_bad_namespace(self):
        with pytest.raises(FleetError, match="DNS-1123 label"):
            karmada.validate_cluster_namespace("Karmada")
        karmada.validate_cluster_namespace("karmada-cluster")

    @pytest.mark.parametrize("zones,match", [
        (["a", ""], "non-empty"), (["a b"], "without spaces"), (["a,b"], "commas"), (["a", "b", "a"], "a more than once"),
    ])
    def test_bad_zones(self, zones, match):
        with pytest.raises(FleetError, match=match):
            karmada.validate_zones(zones)

    def test_good_zones(self):
        karmada.validate_zones(["eu-west-1a", "eu-west-1b"])

    @pytest.mark.parametrize("url", ["https://10.0.0.7:6443", "http://member.example.com", "https://[::1]:6443/prefix"])
    def test_good_endpoints(self, url):
        karmada.validate_api_endpoint(url)

    @pytest.mark.parametrize("url,match", [
        ("10.0.0.7:6443", "scheme must be https"), ("ftp://host", "scheme"), ("https://", "no host"),
        ("https://user:pw@host", "user information"), ("https://host?x=1", "query"), ("https://host#f", "fragments"),
        ("https://host:99999", "port"), ("https://host:abc", "port"),
    ])
    def test_bad_endpoints(self, url, match):
        with pytest.raises(FleetError, match=match):
            karmada.validate_api_endpoint(url)

    @pytest.mark.parametrize("url", ["http://proxy:3128", "https://proxy", "socks5://127.0.0.1:1080"])
    def test_good_proxies(self, url):
        karmada.validate_proxy_url(url)

    @pytest.mark.parametrize("url", ["proxy:3128", "ftp://proxy", "http://"])
    def test_bad_proxies(self, url):
        with pytest.raises(FleetError, match="invalid proxy_url"):
            karmada.validate_proxy_url(url)
