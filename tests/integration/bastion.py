"""A bastion host on this machine: a network namespace reached over SSH, the only place a "private" API server answers.

``with Bastion(directory) as bastion:`` creates a network namespace joined to this one by a veth pair with private
addresses (``bastion.address`` inside, the other end here), and runs an OpenSSH server in it on ``bastion.address:22``
with a host key and an authorized key of its own (``bastion.key``, trusted by ``bastion.known_hosts``).
``bastion.private_url(cluster)`` gives an address, ``https://127.0.0.1:<port>``, that leads to a lab API server from
inside the namespace only: a forwarder listens on the namespace's loopback and connects each connection to the API
server here (TLS stays end to end; the serving certificate has SAN 127.0.0.1). Here the port is bound and never
listened on, so a connection to it from this namespace is refused, and nothing else can take it meanwhile.
Leaving the block stops the SSH server and the forwarders and deletes the namespace and the veth pair, on failure too.

Linux only, as root, with iproute2 (``ip``) and OpenSSH's server and client; ``missing()`` says what is not there.
"""

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import threading

from lab import wait_for  # tests/lab, which conftest.py puts on sys.path

SSHD = "/usr/sbin/sshd"
# One /30 per bastion: 10.254.0.0/16 holds 16384 of them; a test run takes the first free one from its process id on.
SUBNETS = 16384
CLONE_NEWNET = 0x40000000  # <sched.h>


def missing():
    """What a bastion needs and this machine lacks, as a sentence (None when nothing is missing)."""
    lacking = [what for what, there in (
        ("root (network namespaces)", os.geteuid() == 0),
        ("iproute2 (ip)", shutil.which("ip")),
        ("openssh-server (%s)" % SSHD, os.access(SSHD, os.X_OK)),
        ("openssh-client (ssh, ssh-keygen)", shutil.which("ssh") and shutil.which("ssh-keygen")),
    ) if not there]
    if lacking:
        return "a bastion host needs %s; tests/setup.sh installs the packages" % ", ".join(lacking)
    return None


def _ip(*args):
    subprocess.run(("ip",) + args, check=True, capture_output=True, text=True)


class Bastion:
    def __init__(self, directory):
        self.directory = str(directory)
        self.netns = self.address = self._sshd = None
        self._cleanup = contextlib.ExitStack()

    def __enter__(self):
        try:
            self._create_namespace()
            self._start_sshd()
        except BaseException:
            self._cleanup.close()
            raise
        return self

    def __exit__(self, *exc):
        self._cleanup.close()

    @property
    def key(self):
        return os.path.join(self.directory, "id_ed25519")

    @property
    def known_hosts(self):
        return os.path.join(self.directory, "known_hosts")

    def private_url(self, cluster):
        """``https://127.0.0.1:<port>``: the API server of the lab ``cluster``, from inside the namespace only."""
        forward = _Forward(self.netns, cluster["server"].split("://", 1)[1].rsplit(":", 1))
        self._cleanup.callback(forward.stop)
        return "https://127.0.0.1:%d" % forward.port

    def _create_namespace(self):
        """A namespace and veth pair named after the first free /30 from this process's id on."""
        for attempt in range(64):
            index = (os.getpid() + attempt) % SUBNETS
            name, veth = "fleet-bastion-%d" % index, "fleetb%d" % index
            here = "10.254.%d.%d" % (index // 64, index % 64 * 4 + 1)
            if self._address_taken(here):
                continue
            try:
                _ip("netns", "add", name)
            except subprocess.CalledProcessError:  # another run's (or left over by a killed one)
                continue
            self._cleanup.callback(_ip, "netns", "delete", name)
            self.netns = name
            self.address = "10.254.%d.%d" % (index // 64, index % 64 * 4 + 2)
            _ip("link", "add", veth, "type", "veth", "peer", "name", veth + "b", "netns", name)
            self._cleanup.callback(_ip, "link", "delete", veth)  # deletes both ends now; the namespace's goes later
            _ip("addr", "add", here + "/30", "dev", veth)
            _ip("link", "set", veth, "up")
            _ip("-n", name, "addr", "add", self.address + "/30", "dev", veth + "b")
            _ip("-n", name, "link", "set", veth + "b", "up")
            _ip("-n", name, "link", "set", "lo", "up")
            return
        raise RuntimeError("no free network namespace fleet-bastion-* / subnet in 10.254.0.0/16")

    @staticmethod
    def _address_taken(address):
        shown = subprocess.run(["ip", "-4", "-o", "addr", "show"], check=True, capture_output=True, text=True).stdout
        return (" %s/" % address) in shown

    def _start_sshd(self):
        host_key, config = os.path.join(self.directory, "host_key"), os.path.join(self.directory, "sshd_config")
        for path in (host_key, self.key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fleet-bastion", "-f", path], check=True)
        shutil.copy(self.key + ".pub", os.path.join(self.directory, "authorized_keys"))
        with open(host_key + ".pub") as handle:
            public = handle.read().split()
        with open(self.known_hosts, "w") as handle:
            handle.write("%s %s %s\n" % (self.address, public[0], public[1]))
        with open(config, "w") as handle:
            handle.write("\n".join([
                "ListenAddress %s:22" % self.address,
                "HostKey %s" % host_key,
                "PidFile none",
                "AuthorizedKeysFile %s" % os.path.join(self.directory, "authorized_keys"),
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",  # the key lies in a temporary directory under /tmp
                "Subsystem sftp internal-sftp",
                "",
            ]))
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation directory, made by the service
        log = open(os.path.join(self.directory, "sshd.log"), "w")
        self._cleanup.callback(log.close)
        # ip netns exec runs sshd (absolute path: sshd re-executes itself) in the namespace, as this very process
        self._sshd = subprocess.Popen(["ip", "netns", "exec", self.netns, SSHD, "-D", "-e", "-f", config],
                                      stdout=log, stderr=subprocess.STDOUT)
        self._cleanup.callback(self._stop_sshd)
        wait_for(self._sshd_listens, 30, "sshd on %s:22 in namespace %s" % (self.address, self.netns))

    def _sshd_listens(self):
        if self._sshd.poll() is not None:
            with open(os.path.join(self.directory, "sshd.log")) as handle:
                raise RuntimeError("sshd exited with %s: %s" % (self._sshd.returncode, handle.read()))
        socket.create_connection((self.address, 22), timeout=1).close()
        return True

    def _stop_sshd(self):
        self._sshd.terminate()
        try:
            self._sshd.wait(10)
        except subprocess.TimeoutExpired:
            self._sshd.kill()
            self._sshd.wait()
        # what sshd started for connections still open: its session processes
        left = subprocess.run(["ip", "netns", "pids", self.netns], check=True, capture_output=True, text=True).stdout.split()
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)


class _Forward:
    """Listens on 127.0.0.1:<port> inside the namespace ``netns``, forwards each connection to ``upstream`` (host,
    port) here."""

    def __init__(self, netns, upstream):
        self._upstream = (upstream[0], int(upstream[1]))
        self._reserved = socket.socket()
        self._reserved.bind(("127.0.0.1", 0))  # bound, never listening: refused here
        self.port = self._reserved.getsockname()[1]
        self._listener = _in_namespace(netns, lambda: socket.create_server(("127.0.0.1", self.port)))
        self._open = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        while True:
            try:
                client, _address = self._listener.accept()
            except OSError:  # stop() shut the listener down
                return
            try:
                server = socket.create_connection(self._upstream, timeout=30)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            self._open += [client, server]
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(source, target), daemon=True).start()

    def stop(self):
        self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept() (Linux)
        self._listener.close()
        self._thread.join(10)
        for connection in self._open:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()
        self._reserved.close()


def _pump(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
        target.shutdown(socket.SHUT_WR)
    except OSError:  # the other side went away, or stop()
        pass


def _setns(fd):
    """The calling thread into the network namespace of ``fd``: os.setns from Python 3.12, libc's before."""
    if hasattr(os, "setns"):
        os.setns(fd, os.CLONE_NEWNET)
    elif ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")


def _in_namespace(netns, make):
    """``make()`` called in the network namespace ``netns`` (by a thread of its own, which alone enters it): what it
    creates, a socket, stays in that namespace."""
    made = {}

    def enter():
        try:
            with open("/run/netns/%s" % netns) as handle:
                _setns(handle.fileno())
            made["value"] = make()
        except BaseException as exc:  # handed to the caller
            made["error"] = exc

    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    if "error" in made:
        raise made["error"]
    return made["value"]
