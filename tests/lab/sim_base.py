"""What the lab's agent simulations share: a client speaking with an agent's credentials, status
conditions as Kubernetes' ``meta.SetStatusCondition`` keeps them, and a polling thread.

The simulations (sim_klusterlet.py, sim_karmada_agent.py) play the protocol part of agents the lab
cannot run. They encode the engines' protocol on their own and import nothing from the collection,
so a mistake in the collection cannot hide behind the same mistake in its test double.
"""

import argparse
import base64
import datetime
import http.client
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

import yaml

import lab


def now():
    """The current time as Kubernetes writes it (RFC 3339, whole seconds, UTC)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_now():
    """The current time as Kubernetes writes a MicroTime (Lease renewTime)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text):
    """An aware datetime from an RFC 3339 time as the API writes it."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def set_condition(conditions, condition_type, status, reason, message):
    """Conditions with this one set, as ``meta.SetStatusCondition`` does; ``(conditions, changed)``.

    The transition time moves only when the status changes.
    """
    conditions = [dict(c) for c in conditions or []]
    for current in conditions:
        if current.get("type") == condition_type:
            if (current.get("status"), current.get("reason"), current.get("message")) == (status, reason, message):
                return conditions, False
            if current.get("status") != status:
                current["lastTransitionTime"] = now()
            current.update(status=status, reason=reason, message=message)
            return conditions, True
    conditions.append({"type": condition_type, "status": status, "reason": reason, "message": message,
                       "lastTransitionTime": now()})
    return conditions, True


def condition_true(obj, condition_type):
    return any(c.get("type") == condition_type and c.get("status") == "True"
               for c in ((obj or {}).get("status") or {}).get("conditions") or [])


def get_or_none(api, path):
    """The object at ``path``, or None on 404."""
    try:
        return api.get(path)
    except lab.ApiError as e:
        if e.status == 404:
            return None
        raise


def apply(api, collection, body):
    """Create ``body`` in ``collection``, or replace an existing object's fields with those of ``body``.

    Read first, as the engines' resourceapply does (from their informers): a pass that finds everything in place writes
    nothing. Labels the body names are set and the others kept: the API server adds some of its own
    (``kubernetes.io/metadata.name`` on a Namespace from 1.21 on), and replacing them would write on every pass."""
    name = body["metadata"]["name"]
    current = get_or_none(api, f"{collection}/{name}")
    if current is None:
        try:
            return api.post(collection, body)
        except lab.ApiError as e:
            if e.status != 409:
                raise
        current = api.get(f"{collection}/{name}")
    merged = dict(current, **{k: v for k, v in body.items() if k != "metadata"})
    labels = dict(current["metadata"].get("labels") or {}, **(body["metadata"].get("labels") or {}))
    merged["metadata"] = dict(current["metadata"], **({"labels": labels} if labels else {}))
    if merged == current:
        return current
    return api.put(f"{collection}/{name}", merged)


class AgentClient(lab.ApiClient):
    """An API client with an agent's credentials: a bearer token or a client certificate (PEM data).

    Key material goes to files (the ssl module loads client certificates from files) in ``directory``,
    which the owning simulation removes when it stops.
    """

    def __init__(self, server, ca_pem, directory, token=None, cert_pem=None, key_pem=None, proxy=None):
        os.makedirs(directory, mode=0o700, exist_ok=True)
        files = {}
        for name, data in (("ca.crt", ca_pem), ("tls.crt", cert_pem), ("tls.key", key_pem)):
            if data:
                files[name] = os.path.join(directory, name)
                with open(os.open(files[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
                    f.write(data if isinstance(data, bytes) else data.encode())
        super().__init__(server, files["ca.crt"], files.get("tls.crt"), files.get("tls.key"), proxy=proxy)
        self.token = token

    @classmethod
    def from_kubeconfig(cls, text, directory):
        """A client for the current context of a kubeconfig whose user has a token or embedded certificate data.

        Its cluster's ``proxy-url`` is honoured, as client-go does.
        """
        config = yaml.safe_load(text)
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])

        def data(key):
            return base64.b64decode(user[key]) if user.get(key) else None
        return cls(cluster["server"], base64.b64decode(cluster["certificate-authority-data"]), directory,
                   token=user.get("token"), cert_pem=data("client-certificate-data"), key_pem=data("client-key-data"),
                   proxy=cluster.get("proxy-url"))

    def request(self, method, path, body=None, headers=None, content_type="application/json"):
        if self.token:
            headers = {"Authorization": f"Bearer {self.token}", **(headers or {})}
        return super().request(method, path, body, headers=headers, content_type=content_type)


class Revision:
    """The etcd revision of one API server: a number that moves whenever any object there changes (a list's
    ``resourceVersion``). Read at most every ``max_age`` seconds and shared by the simulations that hold it, so that
    their passes cost one read between them; None while the server does not answer.
    """

    PROBE = "/api/v1/namespaces/default/resourcequotas?limit=1"

    def __init__(self, client, max_age=0.25):
        self._client = client
        self._max_age = max_age
        self._lock = threading.Lock()
        self._value = None
        self._read_at = None

    def current(self):
        with self._lock:
            if self._read_at is None or time.monotonic() - self._read_at >= self._max_age:
                try:
                    self._value = self._client.get(self.PROBE)["metadata"]["resourceVersion"]
                except (OSError, http.client.HTTPException, lab.LabError):
                    self._value = None
                self._read_at = time.monotonic()
            return self._value


class Simulation:
    """A polling loop in a thread: ``sync()`` every ``interval`` seconds until ``stop()``; ``pause()`` holds it
    (a controller or agent that is down) until ``resume()``.

    With ``revisions`` (the :class:`Revision` of each server it reads), a pass runs only when one of them moved since
    the last good pass, or ``RESYNC_SECONDS`` after it: as a controller acts on its informers' events and resyncs them,
    rather than reading everything on every tick. What a simulation does on a clock (lease renewals and expiry) or on
    what is not in the API (a proxy that cuts it off) waits at most that long.

    ``status`` says what the simulation last did or waits for; ``error`` is the last failure of a
    ``sync`` (None after a good one), as a real agent would log it before retrying.
    """

    name = "simulation"
    RESYNC_SECONDS = 3.0

    def __init__(self, interval=1.0):
        self.interval = interval
        self.revisions = ()
        self.status = "starting"
        self.error = None
        self._workdir = None
        self._stop = threading.Event()
        self._paused = False
        self._synced = None  # (revisions at the start of the last good pass, its monotonic time)
        self._syncing = threading.Lock()  # held for each sync, so pause() returns only once none runs
        self._thread = None

    @property
    def workdir(self):
        """A private directory for the files of the agent's connections, made on first use and removed by ``stop()``."""
        if self._workdir is None:
            self._workdir = tempfile.mkdtemp(prefix=f"fleet-{self.name}-")
        return self._workdir

    def sync(self):
        raise NotImplementedError

    def start(self):
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout=10):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout)
        if self._workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)

    def pause(self):
        """Stop syncing (a sync under way completes first), as a controller that is down."""
        with self._syncing:
            self._paused = True
            self.status = "paused"

    def resume(self):
        self._synced = None  # a controller that starts again lists everything
        self._paused = False

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    def _loop(self):
        while not self._stop.is_set():
            with self._syncing:
                if not self._paused:
                    self._pass()
            self._stop.wait(self.interval)

    def _pass(self):
        seen = tuple(revision.current() for revision in self.revisions)
        if not seen or None in seen:
            seen = None
        if (seen is not None and self._synced is not None and self._synced[0] == seen
                and time.monotonic() - self._synced[1] < self.RESYNC_SECONDS):
            return
        started = time.monotonic()
        try:
            self.sync()
            self.error = None
            self._synced = (seen, started) if seen is not None else None
        except (OSError, http.client.HTTPException, lab.LabError) as e:
            self.error = str(e)
            self._synced = None

    def wait_for(self, check, timeout, what):
        """Poll ``check()`` until true (returned); LabError naming ``what``, the status and last error otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            result = check()
            if result:
                return result
            if time.monotonic() >= deadline:
                raise lab.LabError(f"{self.name}: timed out after {timeout}s waiting for {what}; "
                                   f"status: {self.status}; last error: {self.error}")
            time.sleep(0.2)


def run_cli(description, add_arguments, build, argv=None):
    """Command line: ``--lab-dir DIR --cluster NAME`` plus ``add_arguments``; runs the simulations that
    ``build(lab, args)`` returns until SIGINT/SIGTERM, printing each change of status or error."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--lab-dir", required=True, help="lab directory (lab.py up --dir)")
    parser.add_argument("--cluster", required=True, help="the lab member cluster the agent runs on")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        fleet = lab.Lab.load(args.lab_dir)
        if args.cluster not in fleet.clusters:
            raise lab.LabError(f"no cluster {args.cluster} in the lab (it has {', '.join(fleet.clusters)})")
        simulations = build(fleet, args)
    except lab.LabError as e:
        print(f"{parser.prog}: {e}", file=sys.stderr)
        return 1
    shown = {}

    def print_changes():
        for simulation in simulations:
            line = f"{simulation.name}: {simulation.status}" + (f" (error: {simulation.error})" if simulation.error else "")
            if shown.get(simulation.name) != line:
                print(line, flush=True)
                shown[simulation.name] = line
    run_until_signalled(simulations, every_half_second=print_changes)
    return 0


def run_lab_cli(description, build, default_interval, argv=None):
    """Command line ``--lab-dir DIR [--interval S]`` for simulations of a whole lab: run the simulations
    ``build(lab, interval)`` returns, with a callable that announces them once they run, until
    SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--lab-dir", required=True, help="directory of a running lab (lab.py up --dir)")
    parser.add_argument("--interval", type=float, default=default_interval,
                        help=f"seconds between rounds (default {default_interval:g})")
    args = parser.parse_args(argv)
    try:
        fleet = lab.Lab.load(args.lab_dir)
    except lab.LabError as e:
        print(f"{parser.prog}: {e}", file=sys.stderr)
        return 1
    simulations, announce = build(fleet, args.interval)
    run_until_signalled(simulations, started=announce)
    return 0


def run_until_signalled(simulations, started=None, every_half_second=None):
    """Start ``simulations``, call ``started()``, then ``every_half_second()`` until SIGINT or SIGTERM; stop them.

    SIGTERM stops like Ctrl-C does (setting an Event from a signal handler can deadlock), and a second
    signal does not cut the clean-up short.
    """
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        for simulation in simulations:
            simulation.start()
        if started:
            started()
        while True:
            time.sleep(0.5)
            if every_half_second:
                every_half_second()
    except KeyboardInterrupt:
        pass
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    for simulation in simulations:
        simulation.stop()
