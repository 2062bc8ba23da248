"""The hub as accept.py sees it: the unit tests' FakeCluster with the CSR ``approval`` subresource (``Hub``), the CSR
an OCM registration agent posts (``ocm_csr``; ``csr_request`` makes the request of any subject) and the ManagedCluster
it registers (``managed_cluster``)."""

import base64
import copy
import functools

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.multicluster.fleet.plugins.module_utils.kube.client import Conflict
from ansible_collections.multicluster.fleet.plugins.module_utils.ocm import MANAGED_CLUSTER


@functools.lru_cache(maxsize=None)
def _key():
    return ec.generate_private_key(ec.SECP256R1())


def csr_request(cn, orgs):
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
                     + [x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    pem = x509.CertificateSigningRequestBuilder().subject_name(name).sign(_key(), hashes.SHA256())
    return base64.b64encode(pem.public_bytes(serialization.Encoding.PEM)).decode()


def ocm_csr(name, cluster="east", user="system:bootstrap:abc123", cn=None, usages=None, labels=None):
    cn = cn or "system:open-cluster-management:%s:agent1" % cluster
    orgs = ["system:open-cluster-management:%s" % cluster, "system:open-cluster-management:managed-clusters"]
    return {"metadata": {"name": name, "labels": labels or {"open-cluster-management.io/cluster-name": cluster}},
            "spec": {"request": csr_request(cn, orgs), "signerName": "kubernetes.io/kube-apiserver-client",
                     "usages": usages or ["digital signature", "key encipherment", "client auth"],
                     "username": user, "groups": ["system:bootstrappers", "system:authenticated"]}}


class Hub:
    """The unit tests' FakeCluster plus the CSR ``approval`` subresource (PUT, resourceVersion-guarded)."""

    def __init__(self, fake):
        self.fake = fake
        self.name, self.role = fake.name, fake.role
        self.label = fake.label
        self.conflicts = 0

    def add(self, kind, obj):
        return self.fake.add(kind, obj)

    def get(self, kind, name):
        return self.fake.objects.get(kind.path(name=name))

    def writes(self):
        return [(m, p, q) for m, p, q in self.fake.calls if m != "GET"]

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        if method == "PUT" and path.endswith("/approval"):
            self.fake.calls.append((method, path, dict(query or {})))
            target = path[:-len("/approval")]
            current = self.fake.objects[target]
            if self.conflicts or body["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
                self.conflicts = max(0, self.conflicts - 1)
                raise Conflict("conflict", 409, "Conflict")
            stored = copy.deepcopy(current)
            stored.setdefault("status", {})["conditions"] = body["status"]["conditions"]
            if (query or {}).get("dryRun") != "All":
                stored["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1000)
                self.fake.objects[target] = stored
            return copy.deepcopy(stored)
        return self.fake.request(method, path, body, query, content_type, timeout)


def managed_cluster(hub, name="east", accepted=False, joined=False):
    obj = {"metadata": {"name": name}, "spec": {"hubAcceptsClient": accepted}}
    if joined:
        obj["status"] = {"conditions": [{"type": "ManagedClusterJoined", "status": "True"}]}
    return hub.add(MANAGED_CLUSTER, obj)
