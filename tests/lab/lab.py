#!/usr/bin/env python
"""A lab of real Kubernetes control planes running as plain processes on 127.0.0.1.

Each lab cluster is one etcd, one kube-apiserver and one kube-controller-manager (Kubernetes 1.20.2
built by build.sh), with its own CA, its own ports, its own data and therefore its own kube-system
namespace UID. The controller manager runs the real bootstrap-token signer and CSR signer, so
cluster-info JWS signing and certificate issuing behave exactly as on a kubeadm cluster. The hub
also serves the Karmada and OCM custom resources (CRDs from crds/); no engine controller runs.

Command line::

    lab.py up     --dir DIR [--clusters hub,member1,member2] [--engine karmada|ocm] [--timeout S] [--audit]
    lab.py status --dir DIR
    lab.py down   --dir DIR

Python::

    lab = Lab(directory)
    lab.up(["hub", "member1", "member2"], engine="karmada")
    lab.clusters["member1"]["kubeconfig"]     # same dicts as state.json
    lab.api("hub").get("/version")
    install_crds(lab.clusters["member1"], ["klusterlets.operator.open-cluster-management.io"])
    lab.down()
    Lab.load(directory)                       # attach to a lab started elsewhere

DIR receives <cluster>.kubeconfig (admin, group system:masters), inventory.yml, state.json and one
directory per cluster holding its PKI, etcd data and process logs. With ``--audit`` (``up(audit=True)``)
each API server also writes an audit log, one JSON line per request (``audit.log`` in the cluster's
directory, ``Lab.clusters[name]["audit_log"]``); ``count_requests`` counts those of one client. Only
stdlib, cryptography and PyYAML are used.
"""

import argparse
import base64
import collections
import datetime
import functools
import http.client
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

LAB_DIR = os.path.dirname(os.path.abspath(__file__))
CRD_DIR = os.path.join(LAB_DIR, "crds")
BUILD_SCRIPT = os.path.join(LAB_DIR, "build.sh")

HOST = "127.0.0.1"
DEFAULT_CLUSTERS = ("hub", "member1", "member2")
ENGINES = ("karmada", "ocm")
DEFAULT_TIMEOUT = 180
# Sets of ports `up` tries when a process finds its port taken (see Lab.up).
PORT_ATTEMPTS = 3
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc"
SERVICE_CIDR = "10.0.0.0/24"
# up(audit=True): one audit event per request, written when the response is complete (a watch: when it ends), with the
# request's metadata only.
AUDIT_POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived", "ResponseStarted"],
                "rules": [{"level": "Metadata"}]}
CONTROLLERS = (
    "bootstrapsigner", "tokencleaner", "csrsigning", "csrapproving", "csrcleaner", "namespace",
    "garbagecollector", "serviceaccount", "serviceaccount-token", "root-ca-cert-publisher",
    "clusterrole-aggregation",
)
# Every CRD the lab knows, by CRD name; each has a file <name>.yaml in crds/.
CRDS = (
    "clusters.cluster.karmada.io",
    "works.work.karmada.io",
    "managedclusters.cluster.open-cluster-management.io",
    "manifestworks.work.open-cluster-management.io",
    "clustermanagers.operator.open-cluster-management.io",
    "klusterlets.operator.open-cluster-management.io",
    "managedclustersets.cluster.open-cluster-management.io",
    "managedclustersetbindings.cluster.open-cluster-management.io",
    "placements.cluster.open-cluster-management.io",
    "placementdecisions.cluster.open-cluster-management.io",
    "clustermanagementaddons.addon.open-cluster-management.io",
    "managedclusteraddons.addon.open-cluster-management.io",
    "addondeploymentconfigs.addon.open-cluster-management.io",
)
# Processes of one cluster in start order; they are stopped in reverse order.
PROCESSES = ("etcd", "kube-apiserver", "kube-controller-manager")
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class LabError(Exception):
    """The lab could not do what was asked; the message says what and where."""


class _Aborted(LabError):
    """Another cluster failed, so this one stopped waiting."""


class _PortTaken(LabError):
    """A process could not listen on its port: something took it between choosing and binding it."""


def say(message):
    """Print one progress line on stderr."""
    print(f"[lab] {message}", file=sys.stderr, flush=True)


# --- PKI ------------------------------------------------------------------------------------------

def _new_key():
    """Return a new RSA 2048 private key (what kubeadm uses)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def _pem_cert(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def _certificate(key, common_name, *, issuer=None, organizations=(), usage=None, days=365):
    """Issue a certificate for ``key``.

    ``issuer`` is ``(ca_cert, ca_key)``; without it the certificate is a self-signed CA.
    ``usage`` is ``"server"`` (SAN 127.0.0.1 and localhost) or ``"client"``.
    """
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
                     + [x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_cert, ca_key = issuer or (None, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(ca_cert.subject if ca_cert else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if ca_cert is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        builder = builder.add_extension(
            x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=True, crl_sign=True,
                          content_commitment=False, data_encipherment=False, key_agreement=False,
                          encipher_only=False, decipher_only=False), critical=True)
    else:
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        builder = builder.add_extension(
            x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=False, crl_sign=False,
                          content_commitment=False, data_encipherment=False, key_agreement=False,
                          encipher_only=False, decipher_only=False), critical=True)
        purpose = ExtendedKeyUsageOID.SERVER_AUTH if usage == "server" else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([purpose]), critical=False)
        if usage == "server":
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(HOST)), x509.DNSName("localhost")]),
                critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _write(path, data, mode=0o600):
    """Write bytes or text to ``path`` with ``mode``."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def _b64(data):
    """Base64 text of ``data``."""
    return base64.b64encode(data).decode()


def _kubeconfig(name, server, ca_pem, cert_pem, key_pem):
    """Return a kubeconfig (as a dict) whose cluster, user and context are all called ``name``."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}],
        "users": [{"name": name, "user": {"client-certificate-data": _b64(cert_pem), "client-key-data": _b64(key_pem)}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "preferences": {},
    }


# --- API access -----------------------------------------------------------------------------------

class ApiError(LabError):
    """A request to a lab API server returned an error status."""

    def __init__(self, method, url, status, body):
        super().__init__(f"{method} {url}: HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


class ApiClient:
    """Minimal JSON client for one lab API server.

    Authenticates with a client certificate (the admin one by default) and trusts only the cluster
    CA. Without a certificate it speaks as ``system:anonymous``. Each thread keeps its connection open for its next
    request, as client-go does (the simulations poll: a TLS handshake per request cost the lab more processor time
    than everything else it did); through the forward proxy ``proxy`` (an ``http://`` URL, as a kubeconfig's
    ``proxy-url``), when given, one connection per request.
    """

    def __init__(self, server, ca_file, cert_file=None, key_file=None, timeout=10, proxy=None):
        self.server = server
        self.timeout = timeout
        self._netloc = server.split("://", 1)[1]
        self._proxy = None
        if proxy:
            if not proxy.startswith("http://"):
                raise LabError(f"proxy {proxy}: the lab's clients reach servers through http:// proxies only")
            self._proxy = proxy[len("http://"):].rstrip("/").rsplit(":", 1)
        self._context = ssl.create_default_context(cafile=ca_file)
        if cert_file:
            self._context.load_cert_chain(cert_file, key_file)
        self._kept = threading.local()  # .connection: this thread's open connection, if any

    @classmethod
    def for_cluster(cls, cluster, anonymous=False):
        """Client for a cluster info dict (an entry of ``Lab.clusters``), as admin unless ``anonymous``."""
        if anonymous:
            return cls(cluster["server"], cluster["ca_cert"])
        return cls(cluster["server"], cluster["ca_cert"], cluster["admin_cert"], cluster["admin_key"])

    def request(self, method, path, body=None, headers=None, content_type="application/json"):
        """Send one request; return the decoded JSON (or the text of a non-JSON answer).

        Raises ApiError on a status >= 400 and OSError when the server does not answer.
        """
        send_headers = {"Accept": "application/json", **(headers or {})}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            send_headers["Content-Type"] = content_type
        kept = None if self._proxy else getattr(self._kept, "connection", None)
        try:
            response, text = self._exchange(kept or self._connect(), method, path, payload, send_headers)
        except (http.client.HTTPException, ConnectionError, ssl.SSLError):
            if kept is None:
                raise
            # The server ended the kept connection (closed it while idle, or restarted): send again on a new one.
            response, text = self._exchange(self._connect(), method, path, payload, send_headers)
        if response.status >= 400:
            raise ApiError(method, self.server + path, response.status, text)
        if response.getheader("Content-Type", "").startswith("application/json"):
            return json.loads(text)
        return text

    def _connect(self):
        """A new connection to the server (through the proxy: a CONNECT tunnel, TLS with the server inside it)."""
        host, port = self._netloc.rsplit(":", 1)
        if self._proxy:
            conn = http.client.HTTPSConnection(self._proxy[0], int(self._proxy[1]), context=self._context, timeout=self.timeout)
            conn.set_tunnel(host, int(port))
            return conn
        return http.client.HTTPSConnection(host, int(port), context=self._context, timeout=self.timeout)

    def _exchange(self, conn, method, path, payload, headers):
        """Send one request on ``conn``; return (response, its text). Without a proxy the thread keeps ``conn`` for
        its next request unless the server or an error ended it."""
        self._kept.connection = None
        try:
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            text = response.read().decode()
        except BaseException:
            conn.close()
            raise
        if not self._proxy and not response.will_close:
            self._kept.connection = conn
        else:
            conn.close()
        return response, text

    def get(self, path, **kwargs):
        """GET ``path``."""
        return self.request("GET", path, **kwargs)

    def post(self, path, body, **kwargs):
        """POST (create) ``body`` to ``path``."""
        return self.request("POST", path, body, **kwargs)

    def put(self, path, body, **kwargs):
        """PUT (replace) ``body`` at ``path``."""
        return self.request("PUT", path, body, **kwargs)

    def patch(self, path, body, **kwargs):
        """JSON merge-patch ``path`` with ``body``."""
        return self.request("PATCH", path, body, content_type="application/merge-patch+json", **kwargs)

    def delete(self, path, **kwargs):
        """DELETE ``path``."""
        return self.request("DELETE", path, **kwargs)

    def exists(self, path):
        """True if GET ``path`` answers, False on 404."""
        try:
            self.get(path)
        except ApiError as e:
            if e.status == 404:
                return False
            raise
        return True


def count_requests(path, user_agent, offset=0):
    """Count the requests of the audit log ``path`` from byte ``offset`` on whose client named itself ``user_agent``
    (its User-Agent header, up to the first space or slash); ``(Counter of "verb resource", end offset)``.

    A line the API server is still writing (no newline yet) is left for the next call.
    """
    counts = collections.Counter()
    with open(path, "rb") as log:
        log.seek(offset)
        for line in log:
            if not line.endswith(b"\n"):
                break
            offset += len(line)
            event = json.loads(line)
            if re.split(r"[ /]", event.get("userAgent", ""), maxsplit=1)[0] == user_agent:
                resource = event.get("objectRef", {}).get("resource") or event.get("requestURI", "").split("?")[0]
                counts["%s %s" % (event["verb"], resource)] += 1
    return counts, offset


def wait_for(check, timeout, what, interval=0.25):
    """Call ``check()`` until it returns a true value, which is returned.

    ``check`` may raise OSError, HTTPException or ApiError while the thing is not there yet; any
    other exception propagates. Raises LabError naming ``what`` after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            result = check()
            if result:
                return result
        except (OSError, http.client.HTTPException, ApiError) as e:
            last = e
        if time.monotonic() >= deadline:
            raise LabError(f"timed out after {timeout:.0f}s waiting for {what}" + (f" (last error: {last})" if last else ""))
        time.sleep(interval)


# --- cluster content ------------------------------------------------------------------------------

def publish_cluster_info(cluster):
    """Create kube-public/cluster-info the way kubeadm does, readable by system:anonymous.

    The ConfigMap's ``kubeconfig`` holds one unnamed cluster with the server URL and CA data; the
    bootstrapsigner controller adds ``jws-kubeconfig-<token-id>`` keys for signing tokens. An
    existing ConfigMap gets its ``kubeconfig`` replaced.
    """
    api = ApiClient.for_cluster(cluster)
    with open(cluster["ca_cert"], "rb") as f:
        ca_data = _b64(f.read())
    kubeconfig = yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": [
            {"name": "", "cluster": {"certificate-authority-data": ca_data, "server": cluster["server"]}}],
        "contexts": None, "current-context": "", "preferences": {}, "users": None,
    })
    path = "/api/v1/namespaces/kube-public/configmaps"
    try:
        api.post(path, {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "cluster-info", "namespace": "kube-public"},
                        "data": {"kubeconfig": kubeconfig}})
    except ApiError as e:
        if e.status != 409:
            raise
        current = api.get(path + "/cluster-info")
        current.setdefault("data", {})["kubeconfig"] = kubeconfig
        api.put(path + "/cluster-info", current)
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-public"
    name = "kubeadm:bootstrap-signer-clusterinfo"
    for kind, body in (
        ("roles", {"kind": "Role", "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"], "verbs": ["get"]}]}),
        ("rolebindings", {"kind": "RoleBinding",
                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                        "name": "system:anonymous"}]}),
    ):
        body.update(apiVersion="rbac.authorization.k8s.io/v1", metadata={"name": name, "namespace": "kube-public"})
        try:
            api.post(f"{rbac}/{kind}", body)
        except ApiError as e:
            if e.status != 409:
                raise


def install_crds(cluster, names=None, timeout=60):
    """Install CRDs from crds/ on a cluster (info dict) and wait until they are served.

    ``names`` are CRD names (see CRDS); default all. Existing CRDs are replaced, so this is
    idempotent. Returns when every CRD is Established and its list endpoint answers.
    """
    names = list(names or CRDS)
    unknown = sorted(set(names) - set(CRDS))
    if unknown:
        raise LabError(f"unknown CRD(s) {', '.join(unknown)}; the lab has {', '.join(CRDS)}")
    api = ApiClient.for_cluster(cluster)
    base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for name in names:
        with open(os.path.join(CRD_DIR, name + ".yaml")) as f:
            crd = yaml.safe_load(f)
        try:
            api.post(base, crd)
        except ApiError as e:
            if e.status != 409:
                raise
            crd["metadata"]["resourceVersion"] = api.get(f"{base}/{name}")["metadata"]["resourceVersion"]
            api.put(f"{base}/{name}", crd)

    def served(name):
        crd = api.get(f"{base}/{name}")
        conditions = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
        if conditions.get("Established") != "True":
            return False
        spec = crd["spec"]
        version = next(v["name"] for v in spec["versions"] if v["served"])
        return api.exists(f"/apis/{spec['group']}/{version}/{spec['names']['plural']}")

    for name in names:
        wait_for(functools.partial(served, name), timeout, f"CRD {name} on {cluster['name']}")


# --- processes ------------------------------------------------------------------------------------

def find_binaries():
    """Return the directory holding kube-apiserver and kube-controller-manager.

    Uses $FLEET_LAB_BIN, else runs build.sh (which builds once, then answers from its cache).
    """
    bin_dir = os.environ.get("FLEET_LAB_BIN")
    if not bin_dir:
        say(f"locating lab binaries with {BUILD_SCRIPT} (a first build takes several minutes)")
        result = subprocess.run(["bash", BUILD_SCRIPT], stdout=subprocess.PIPE, text=True, check=False)
        if result.returncode != 0:
            raise LabError(f"{BUILD_SCRIPT} failed with exit status {result.returncode}")
        bin_dir = result.stdout.strip().splitlines()[-1]
    for binary in ("kube-apiserver", "kube-controller-manager"):
        if not os.access(os.path.join(bin_dir, binary), os.X_OK):
            raise LabError(f"{binary} not found in {bin_dir} (set FLEET_LAB_BIN or run {BUILD_SCRIPT})")
    return bin_dir


VERSION_RE = re.compile(r"v(\d+)\.(\d+)\.(\d+)")


@functools.lru_cache(maxsize=None)
def binary_version(bin_dir):
    """(major, minor, patch) of the kube-apiserver in ``bin_dir``, from its own ``--version``."""
    binary = os.path.join(bin_dir, "kube-apiserver")
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    found = VERSION_RE.search(done.stdout)
    if done.returncode != 0 or not found:
        raise LabError(f"{binary} --version did not name a version: {(done.stdout + done.stderr).strip()[:200]}")
    return tuple(int(part) for part in found.groups())


def version_text(version):
    return "v%d.%d.%d" % version


def find_etcd():
    """Return the etcd binary (Debian package etcd-server)."""
    etcd = shutil.which("etcd") or "/usr/bin/etcd"
    if not os.access(etcd, os.X_OK):
        raise LabError("etcd not found: install the Debian package etcd-server")
    return etcd


def _free_ports(count):
    """Return ``count`` distinct TCP ports that are free on 127.0.0.1 right now."""
    sockets = []
    try:
        for _index in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _tail(path, lines=25):
    """Return the last ``lines`` lines of a file."""
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:])


def _rss_mb(pid):
    """Resident memory of a process in MB, or 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
    except FileNotFoundError:
        pass
    return 0


class Lab:
    """A set of lab clusters rooted in one directory.

    ``clusters`` maps cluster name to its info dict (the entries of state.json): ``name``,
    ``server``, ``ports``, ``pids``, ``dir``, ``ca_cert``, ``admin_cert``, ``admin_key``,
    ``kubeconfig``, ``logs`` and ``kube_system_uid``.
    """

    def __init__(self, directory):
        self.dir = os.path.abspath(directory)
        self.state_file = os.path.join(self.dir, "state.json")
        self.inventory = os.path.join(self.dir, "inventory.yml")
        self.audit_policy = os.path.join(self.dir, "audit-policy.yaml")  # AUDIT_POLICY, written by up(audit=True)
        self.clusters = {}
        self.hub = None
        self.engine = None
        self.version = None            # Kubernetes version of the binaries, "v1.36.2"
        self.audit = False             # whether the API servers write audit logs
        self._children = {}            # pid -> Popen, for processes this Python process started
        self._lock = threading.Lock()  # guards state.json writes from the start threads
        self._abort = threading.Event()

    @classmethod
    def load(cls, directory):
        """Attach to a lab that ``up`` started in ``directory``."""
        lab = cls(directory)
        try:
            with open(lab.state_file) as f:
                state = json.load(f)
        except FileNotFoundError:
            raise LabError(f"no lab in {lab.dir} (state.json missing); run: lab.py up --dir {lab.dir}") from None
        lab.clusters, lab.hub, lab.engine = state["clusters"], state["hub"], state["engine"]
        lab.version = state.get("version")
        lab.audit = state.get("audit", False)
        return lab

    def api(self, name):
        """Admin ApiClient for cluster ``name``."""
        return ApiClient.for_cluster(self.clusters[name])

    # -- up ----------------------------------------------------------------------------------------

    def up(self, names=DEFAULT_CLUSTERS, engine="karmada", timeout=DEFAULT_TIMEOUT, audit=False):
        """Start the clusters ``names`` in parallel, install the CRDs on the hub, write DIR.

        The hub is the cluster named ``hub`` or else the first one. ``timeout`` bounds each
        cluster's start. With ``audit`` every API server logs each request it served (AUDIT_POLICY).
        On any failure the logs of the failing cluster are printed, everything started is stopped
        and LabError is raised.
        """
        names = list(names)
        if not names or len(set(names)) != len(names) or not all(NAME_RE.match(n) for n in names):
            raise LabError(f"cluster names must be distinct DNS-1123 labels, got {names}")
        if engine not in ENGINES:
            raise LabError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        if os.path.exists(self.state_file):
            running = Lab.load(self.dir)._running()
            if running:
                raise LabError(f"a lab is already running in {self.dir} (pids {running}); stop it with down first")
        bin_dir, etcd = find_binaries(), find_etcd()
        self.version = version_text(binary_version(bin_dir))
        self.hub = "hub" if "hub" in names else names[0]
        self.engine = engine
        self.audit = audit
        os.makedirs(self.dir, exist_ok=True)
        if audit:
            _write(self.audit_policy, yaml.safe_dump(AUDIT_POLICY), mode=0o644)
        started = time.monotonic()
        # Ports are chosen free, then released for the processes to bind: a lab starting beside this one, or an
        # outgoing connection, can take one in between. Start again on other ports then.
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                self._start_clusters(names, bin_dir, etcd, timeout)
                break
            except _PortTaken as e:
                if attempt == PORT_ATTEMPTS:
                    raise LabError(f"{e} (tried {PORT_ATTEMPTS} sets of ports)") from None
                say(f"{e}; starting again on other ports")
        say(f"lab up in {time.monotonic() - started:.1f}s: Kubernetes {self.version} from {bin_dir}: {', '.join(names)}; "
            f"inventory {self.inventory}")
        return self

    def _start_clusters(self, names, bin_dir, etcd, timeout):
        """Prepare and start the clusters ``names`` on fresh ports, install the CRDs, write DIR; on failure stop
        everything started and raise (_PortTaken when a process found its port taken)."""
        self.clusters = {}
        self._abort.clear()
        ports = iter(_free_ports(3 * len(names)))
        for name in names:
            self.clusters[name] = self._prepare(name, next(ports), next(ports), next(ports))
        self._save()
        pool = ThreadPoolExecutor(len(names))
        try:
            futures = {name: pool.submit(self._start, name, bin_dir, etcd, timeout) for name in names}
            failed = {name: f.exception() for name, f in futures.items() if f.exception()}
            pool.shutdown()
            if failed:
                # Report the cluster that failed first, not those that gave up because of it.
                name, error = sorted(failed.items(), key=lambda item: isinstance(item[1], _Aborted))[0]
                logs = self.clusters[name]["logs"]
                taken = [proc for proc in self.clusters[name]["pids"] if "address already in use" in _tail(logs[proc])]
                if taken:
                    raise _PortTaken(f"cluster {name}: {', '.join(taken)} found its port taken")
                for proc in self.clusters[name]["pids"]:
                    say(f"{name}: last lines of {logs[proc]}:\n{_tail(logs[proc])}")
                raise LabError(f"cluster {name} failed to start: {error}")
            hub_started = time.monotonic()
            install_crds(self.clusters[self.hub])
            say(f"{self.hub}: {len(CRDS)} CRDs established ({time.monotonic() - hub_started:.1f}s)")
            self._write_inventory()
            self._save()
        except BaseException:
            self._abort.set()
            pool.shutdown()  # the start threads notice the abort within a poll interval
            say("stopping everything started")
            self.down()
            raise

    def _prepare(self, name, etcd_client, etcd_peer, apiserver):
        """Create a fresh directory, PKI and kubeconfig for cluster ``name``; return its info dict."""
        cdir = os.path.join(self.dir, name)
        shutil.rmtree(cdir, ignore_errors=True)
        pki = os.path.join(cdir, "pki")
        os.makedirs(pki)
        server = f"https://{HOST}:{apiserver}"
        ca_key = _new_key()
        ca_cert = _certificate(ca_key, f"{name}-ca", days=3650)
        issued = {
            "apiserver": ("kube-apiserver", (), "server"),
            "admin": (f"{name}-admin", ("system:masters",), "client"),
            "controller-manager": ("system:kube-controller-manager", (), "client"),
        }
        files = {"ca.crt": _pem_cert(ca_cert), "ca.key": _pem_key(ca_key)}
        for base, (cn, orgs, usage) in issued.items():
            key = _new_key()
            files[base + ".crt"] = _pem_cert(_certificate(key, cn, issuer=(ca_cert, ca_key), organizations=orgs,
                                                          usage=usage))
            files[base + ".key"] = _pem_key(key)
        sa_key = _new_key()
        files["sa.key"] = _pem_key(sa_key)
        files["sa.pub"] = sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                           serialization.PublicFormat.SubjectPublicKeyInfo)
        for filename, data in files.items():
            _write(os.path.join(pki, filename), data)
        kubeconfig = os.path.join(self.dir, f"{name}.kubeconfig")
        for path, user in ((os.path.join(pki, "controller-manager.kubeconfig"), "controller-manager"),
                           (kubeconfig, "admin")):
            config = _kubeconfig(name, server, files["ca.crt"], files[user + ".crt"], files[user + ".key"])
            _write(path, yaml.safe_dump(config, sort_keys=False))
        return {
            "name": name,
            "server": server,
            "ports": {"etcd_client": etcd_client, "etcd_peer": etcd_peer, "apiserver": apiserver},
            "pids": {},
            "dir": cdir,
            "ca_cert": os.path.join(pki, "ca.crt"),
            "admin_cert": os.path.join(pki, "admin.crt"),
            "admin_key": os.path.join(pki, "admin.key"),
            "kubeconfig": kubeconfig,
            "logs": {proc: os.path.join(cdir, proc + ".log") for proc in PROCESSES},
            "audit_log": os.path.join(cdir, "audit.log") if self.audit else None,
            "kube_system_uid": None,
        }

    def _command(self, name, proc, bin_dir, etcd):
        """Return the command line of process ``proc`` of cluster ``name``."""
        info = self.clusters[name]
        ports = info["ports"]
        # kube-apiserver's --insecure-port and kube-controller-manager's --port were removed in 1.24 (either then
        # makes the process exit "unknown flag"); before, both served plain HTTP unless set to 0.
        plain_http_off = binary_version(bin_dir) < (1, 24, 0)

        def pki(filename):
            return os.path.join(info["dir"], "pki", filename)

        if proc == "etcd":
            peer = f"http://{HOST}:{ports['etcd_peer']}"
            client = f"http://{HOST}:{ports['etcd_client']}"
            return [etcd, f"--name={name}", f"--data-dir={os.path.join(info['dir'], 'etcd')}",
                    f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
                    f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                    f"--initial-cluster={name}={peer}", "--initial-cluster-state=new",
                    f"--initial-cluster-token={name}"]
        if proc == "kube-apiserver":
            return [os.path.join(bin_dir, proc),
                    f"--etcd-servers=http://{HOST}:{ports['etcd_client']}",
                    f"--bind-address={HOST}", f"--advertise-address={HOST}",
                    f"--secure-port={ports['apiserver']}", *(["--insecure-port=0"] if plain_http_off else []),
                    f"--cert-dir={os.path.join(info['dir'], 'pki')}",
                    f"--client-ca-file={pki('ca.crt')}",
                    f"--tls-cert-file={pki('apiserver.crt')}", f"--tls-private-key-file={pki('apiserver.key')}",
                    f"--service-account-key-file={pki('sa.pub')}",
                    f"--service-account-signing-key-file={pki('sa.key')}",
                    f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
                    f"--api-audiences={SERVICE_ACCOUNT_ISSUER}",
                    "--enable-bootstrap-token-auth", "--authorization-mode=Node,RBAC",
                    f"--service-cluster-ip-range={SERVICE_CIDR}", "--allow-privileged",
                    # The default reconciler publishes the advertise address as the endpoint of
                    # Service "kubernetes" and fails forever on a loopback address.
                    "--endpoint-reconciler-type=none",
                    # Stop at once on SIGTERM: the v1.36.2 build of the tests otherwise keeps serving for a minute
                    # (seen: 60 s and more, then killed), and a lab's state is not worth a graceful drain.
                    "--shutdown-delay-duration=0s",
                    *([f"--audit-policy-file={self.audit_policy}",
                       f"--audit-log-path={info['audit_log']}", "--audit-log-format=json"] if info["audit_log"] else [])]
        return [os.path.join(bin_dir, proc),
                f"--kubeconfig={pki('controller-manager.kubeconfig')}",
                f"--controllers={','.join(CONTROLLERS)}",
                f"--cluster-signing-cert-file={pki('ca.crt')}", f"--cluster-signing-key-file={pki('ca.key')}",
                f"--service-account-private-key-file={pki('sa.key')}", f"--root-ca-file={pki('ca.crt')}",
                "--use-service-account-credentials=true", "--leader-elect=false",
                "--secure-port=0", *(["--port=0"] if plain_http_off else [])]

    def _spawn(self, name, proc, command):
        """Start one process in its own session, logging to its log file, and record its pid."""
        info = self.clusters[name]
        with open(info["logs"][proc], "wb") as log:
            child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     cwd=info["dir"], start_new_session=True)
        self._children[child.pid] = child
        with self._lock:
            info["pids"][proc] = child.pid
            self._save()

    def _start(self, name, bin_dir, etcd, timeout):
        """Start cluster ``name`` and wait until its controllers work; runs in a thread."""
        info = self.clusters[name]
        started = time.monotonic()
        deadline = started + timeout
        api = ApiClient.for_cluster(info)

        def wait(check, what):
            def guarded():
                if self._abort.is_set():
                    raise _Aborted()
                for proc, pid in info["pids"].items():
                    code = self._children[pid].poll()
                    if code is not None:
                        raise LabError(f"{proc} exited with status {code}")
                return check()
            wait_for(guarded, max(deadline - time.monotonic(), 0), f"{name}: {what}")
            say(f"{name}: {what} ({time.monotonic() - started:.1f}s)")

        try:
            self._spawn(name, "etcd", self._command(name, "etcd", bin_dir, etcd))
            wait(lambda: _etcd_healthy(info["ports"]["etcd_client"]), "etcd healthy")
            self._spawn(name, "kube-apiserver", self._command(name, "kube-apiserver", bin_dir, etcd))
            wait(lambda: api.get("/readyz") == "ok", "kube-apiserver ready")
            self._spawn(name, "kube-controller-manager", self._command(name, "kube-controller-manager", bin_dir, etcd))
            wait(lambda: api.exists("/api/v1/namespaces/kube-public"), "kube-public exists")
            publish_cluster_info(info)
            wait(lambda: api.exists("/api/v1/namespaces/default/serviceaccounts/default"),
                 "controllers working (default ServiceAccount exists)")
            info["kube_system_uid"] = api.get("/api/v1/namespaces/kube-system")["metadata"]["uid"]
        except BaseException:
            self._abort.set()
            raise
        say(f"{name}: ready at {info['server']} in {time.monotonic() - started:.1f}s")

    def _write_inventory(self):
        """Write inventory.yml: group hub (one host), group members, fleet_engine for all."""
        def host(name, **extra):
            info = self.clusters[name]
            return {"ansible_connection": "local",
                    "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                    "kubeconfig": info["kubeconfig"], "context": name, "cluster_name": name, **extra}

        members = [n for n in self.clusters if n != self.hub]
        # A host may not share its name with a group (Ansible warns), so the hub host of a cluster
        # named "hub" is "hub-cluster"; cluster_name keeps the cluster's own name.
        hub_host = self.hub + "-cluster" if self.hub in ("hub", "members") else self.hub
        inventory = {"all": {
            # Written for people reading the inventory (and tests): the playbooks do not read it.
            "vars": {"fleet_engine": self.engine, "fleet_lab_kubernetes_version": self.version},
            "children": {
                "hub": {"hosts": {hub_host: host(self.hub, hub_apiserver=self.clusters[self.hub]["server"])}},
                "members": {"hosts": {n: host(n, registration_mode=("push", "pull")[i % 2])
                                      for i, n in enumerate(members)}},
            },
        }}
        _write(self.inventory, "# Written by tests/lab/lab.py up; rewritten on every up.\n"
               + yaml.safe_dump(inventory, sort_keys=False), mode=0o644)

    def _save(self):
        """Write state.json."""
        state = {"dir": self.dir, "hub": self.hub, "engine": self.engine, "version": self.version,
                 "audit": self.audit, "inventory": self.inventory, "clusters": self.clusters}
        _write(self.state_file, json.dumps(state, indent=2) + "\n", mode=0o644)

    # -- down and status ---------------------------------------------------------------------------

    def _alive(self, pid):
        """True if ``pid`` is a live (not zombie) process that belongs to this lab."""
        child = self._children.get(pid)
        if child is not None:
            return child.poll() is None
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        # A recycled pid belongs to someone else: every lab process names a file under self.dir.
        return state != "Z" and self.dir.encode() + b"/" in cmdline

    def _running(self):
        """Pids of this lab's processes that are still alive."""
        return [pid for info in self.clusters.values() for pid in info["pids"].values() if self._alive(pid)]

    def down(self, grace=10):
        """Stop every process of the lab: SIGTERM, then SIGKILL after ``grace`` seconds.

        Controller managers go first, etcd last. Logs, data and kubeconfigs stay in DIR.
        """
        stopped = []
        for proc in reversed(PROCESSES):
            pids = [info["pids"][proc] for info in self.clusters.values()
                    if proc in info["pids"] and self._alive(info["pids"][proc])]
            self._stop(proc, pids, grace)
            stopped += pids
        # Processes started by an earlier `up` are orphans: they stay zombies until PID 1 reaps
        # them, which takes a second or two on some machines. Give it that, so that pgrep after
        # down shows nothing.
        deadline = time.monotonic() + 5
        while any(os.path.exists(f"/proc/{pid}") for pid in stopped) and time.monotonic() < deadline:
            time.sleep(0.1)
        for info in self.clusters.values():
            info["pids"] = {}
        if self.clusters:
            self._save()

    def _stop(self, proc, pids, grace):
        """SIGTERM ``pids`` (all running ``proc``), SIGKILL what is left after ``grace`` seconds."""
        for pid in pids:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while any(self._alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in pids:
            if self._alive(pid):
                say(f"{proc} pid {pid} ignored SIGTERM for {grace}s; killing it")
                _signal(pid, signal.SIGKILL)
        wait_for(lambda: not any(self._alive(p) for p in pids), 10, f"{proc} processes to exit")

    def stop_apiserver(self, name, grace=10):
        """Stop the kube-apiserver of cluster ``name``; its etcd (with the data) and controller manager keep running."""
        pid = self.clusters[name]["pids"].pop("kube-apiserver", None)
        self._stop("kube-apiserver", [pid] if pid and self._alive(pid) else [], grace)
        self._save()

    def start_apiserver(self, name, timeout=DEFAULT_TIMEOUT):
        """Start the kube-apiserver of cluster ``name`` again (same port, PKI and data); return once it is ready."""
        self._spawn(name, "kube-apiserver", self._command(name, "kube-apiserver", find_binaries(), find_etcd()))
        api = ApiClient.for_cluster(self.clusters[name])
        wait_for(lambda: api.get("/readyz") == "ok", timeout, f"{name}: kube-apiserver ready again")

    def status(self):
        """Return ``{name: (answers, detail)}``; detail is the resident memory or the error."""
        result = {}
        for name, info in self.clusters.items():
            try:
                ready = ApiClient.for_cluster(info).get("/readyz") == "ok"
                rss = sum(_rss_mb(pid) for pid in info["pids"].values())
                result[name] = (ready, f"{rss} MB resident")
            except (OSError, http.client.HTTPException, ApiError) as e:
                result[name] = (False, str(e))
        return result


def _signal(pid, sig):
    """Send ``sig`` to ``pid`` unless it has exited meanwhile."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _etcd_healthy(port):
    """True if etcd on ``port`` reports health."""
    conn = http.client.HTTPConnection(HOST, port, timeout=2)
    try:
        conn.request("GET", "/health")
        return json.loads(conn.getresponse().read()).get("health") == "true"
    finally:
        conn.close()


# --- command line ---------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the clusters and write DIR")
    up.add_argument("--clusters", default=",".join(DEFAULT_CLUSTERS),
                    help="comma-separated cluster names; 'hub' (else the first) is the hub (default: %(default)s)")
    up.add_argument("--engine", choices=ENGINES, default="karmada", help="fleet_engine in the inventory")
    up.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds allowed per cluster start")
    up.add_argument("--audit", action="store_true",
                    help="every API server logs each request it served to audit.log in its cluster's directory")
    sub.add_parser("down", help="stop every lab process (logs stay)")
    sub.add_parser("status", help="show each cluster, its URL and whether it answers")
    for p in sub.choices.values():
        p.add_argument("--dir", required=True, help="lab directory")
    args = parser.parse_args(argv)

    try:
        if args.command == "up":
            lab = Lab(args.dir).up([n for n in args.clusters.split(",") if n], engine=args.engine,
                                   timeout=args.timeout, audit=args.audit)
            for name, info in lab.clusters.items():
                print(f"{name}\t{info['server']}\t{info['kubeconfig']}")
            print(f"kubernetes\t{lab.version}")
            print(f"inventory\t{lab.inventory}")
        elif args.command == "down":
            Lab.load(args.dir).down()
        else:
            lab = Lab.load(args.dir)
            status = lab.status()
            print(f"kubernetes\t{lab.version or 'unknown'}")
            for name, (ready, detail) in status.items():
                role = "hub" if name == lab.hub else "member"
                print(f"{name}\t{role}\t{lab.clusters[name]['server']}\t{'ready' if ready else 'DOWN'}\t{detail}")
            return 0 if all(ready for ready, _detail in status.values()) else 1
    except LabError as e:
        print(f"lab.py {args.command}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
