#!/usr/bin/env bash
# Prepare a Debian machine to run the collection, its lab and its tests. Idempotent.
#
#   source tests/setup.sh     # exports FLEET_VENV, FLEET_LAB_BIN, FLEET_LAB_BIN_OLDEST, PATH
#
# The virtualenv runs on the newest Python 3.12 to 3.14 found (python3.X on PATH, then pyenv's), which takes the
# newest ansible-core release; with none of them it falls back to Python 3 (Debian 12: 3.11, ansible-core 2.19) and
# says so.
#
# Environment:
#   FLEET_PYTHON        the Python to build the virtualenv with (default: chosen as above)
#   FLEET_VENV          virtualenv to create/use (default: ~/.cache/multicluster-fleet/venv-<python version>)
#   FLEET_LAB_PREBUILT  a directory with kube-apiserver, kube-controller-manager and their SHA256SUMS: the lab runs
#                       them when the checksums hold (otherwise, or unset, the Debian build)
#   FLEET_LAB_BIN       the lab's binaries, when set (overrides FLEET_LAB_PREBUILT)
#   FLEET_LAB_CACHE     lab binary cache root (see tests/lab/build.sh)
set -euo pipefail
_fleet_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

_fleet_newest_python() {
  local minor candidate pyenv="${PYENV_ROOT:-$HOME/.pyenv}"
  for minor in 14 13 12; do
    candidate="$(command -v "python3.$minor" 2>/dev/null || true)"
    # pyenv's shim exists for every installed version but runs only the selected ones: ask the version itself.
    if [ -n "$candidate" ] && "$candidate" -c 'import venv' >/dev/null 2>&1; then echo "$candidate"; return; fi
    for candidate in "$pyenv"/versions/3."$minor"*/bin/python3."$minor"; do
      [ -x "$candidate" ] && { echo "$candidate"; return; }
    done
  done
}
if [ -z "${FLEET_PYTHON:-}" ]; then
  FLEET_PYTHON="$(_fleet_newest_python)"
  if [ -z "$FLEET_PYTHON" ]; then
    FLEET_PYTHON="$(command -v python3)"
    echo "[setup] no Python 3.12 or newer found: using $("$FLEET_PYTHON" -V 2>&1), whose newest ansible-core is 2.19 (end of life)" >&2
  fi
fi
_fleet_pyver="$("$FLEET_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
FLEET_VENV="${FLEET_VENV:-$HOME/.cache/multicluster-fleet/venv-$_fleet_pyver}"

_missing=()
# iproute2 and OpenSSH: the bastion host of tests/integration/test_bastion.py, a network namespace running sshd
# (started by the test alone: where the package's installation starts the system's ssh service, it is stopped and
# disabled again, so the tests leave no SSH server listening that the machine did not have).
for _p in rsync shellcheck git iproute2 openssh-client openssh-server; do
  dpkg -s "$_p" >/dev/null 2>&1 || _missing+=("$_p")
done
# ansible-rulebook (tests/requirements.txt; the event source's lab test) runs its rule engine (drools_jpy) on a Java 17
# runtime: Debian's openjdk-17-jre-headless, installed where no java of 17 or newer is found.
_fleet_java_major() { java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print v[1]; exit}'; }
if ! command -v java >/dev/null 2>&1 || [ "$(_fleet_java_major)" -lt 17 ] 2>/dev/null; then
  _missing+=(openjdk-17-jre-headless)
fi
if [ ${#_missing[@]} -gt 0 ]; then
  echo "[setup] installing Debian packages: ${_missing[*]}" >&2
  _sudo=(); [ "$(id -u)" = 0 ] || _sudo=(sudo)
  "${_sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${_sudo[@]}" apt-get install -y -qq "${_missing[@]}" >/dev/null
  if [[ " ${_missing[*]} " == *" openssh-server "* ]] && command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    "${_sudo[@]}" systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
  fi
fi

# The Debian build is the oldest Kubernetes the collection supports (the version matrix's smoke runs on it); the lab
# runs the prebuilt binaries when they are given and intact.
echo "[setup] lab binaries" >&2
FLEET_LAB_BIN_OLDEST="$(bash "$_fleet_root/tests/lab/build.sh")"
if [ -z "${FLEET_LAB_BIN:-}" ]; then
  FLEET_LAB_BIN="$FLEET_LAB_BIN_OLDEST"
  if [ -n "${FLEET_LAB_PREBUILT:-}" ]; then
    if [ -f "$FLEET_LAB_PREBUILT/SHA256SUMS" ] && (cd "$FLEET_LAB_PREBUILT" && sha256sum --quiet -c SHA256SUMS) >/dev/null 2>&1; then
      FLEET_LAB_BIN="$(cd "$FLEET_LAB_PREBUILT" && pwd)"
    else
      echo "[setup] FLEET_LAB_PREBUILT=$FLEET_LAB_PREBUILT: missing, or its SHA256SUMS do not hold; using the Debian build" >&2
    fi
  fi
fi
echo "[setup] lab: Kubernetes $("$FLEET_LAB_BIN/kube-apiserver" --version | awk '{print $2}') from $FLEET_LAB_BIN" >&2

if [ ! -x "$FLEET_VENV/bin/python" ]; then
  echo "[setup] creating virtualenv $FLEET_VENV ($("$FLEET_PYTHON" -V 2>&1))" >&2
  "$FLEET_PYTHON" -m venv "$FLEET_VENV"
fi
_stamp="$FLEET_VENV/.fleet-requirements"
_want="$(cat "$_fleet_root/requirements.txt" "$_fleet_root/meta/requirements.txt" "$_fleet_root/tests/requirements.txt" | sha256sum | cut -c1-16)"
if [ "$(cat "$_stamp" 2>/dev/null)" != "$_want" ]; then
  echo "[setup] installing Python requirements" >&2
  "$FLEET_VENV/bin/python" -m pip install -q --upgrade pip
  "$FLEET_VENV/bin/python" -m pip install -q -r "$_fleet_root/requirements.txt" -r "$_fleet_root/tests/requirements.txt"
  echo "$_want" > "$_stamp"
fi

# ansible-test bootstraps pip in its per-test virtualenvs with a get-pip script it downloads from a
# host these machines cannot reach; it looks in its cache first. This stand-in uses ensurepip, then
# installs the pip version asked for. ensurepip hides the machine's pip configuration (and CA bundle)
# by setting PIP_CONFIG_FILE=/dev/null, so drop that before calling pip.
_getpip_dir="$HOME/.ansible/test/cache"
mkdir -p "$_getpip_dir"
for _v in 24_2 25_0 25_1 25_2 25_3; do
  cat > "$_getpip_dir/get_pip_${_v}.py" <<'PY'
import os, subprocess, sys
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
env = {k: v for k, v in os.environ.items() if k not in ("PIP_CONFIG_FILE", "ENSUREPIP_OPTIONS")}
wanted = [a for a in sys.argv[1:] if a.startswith("pip")]
if wanted:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q"] + wanted, env=env)
PY
done

# jpy finds the Java runtime by JAVA_HOME, else by the java on PATH.
if [ -z "${JAVA_HOME:-}" ] && command -v java >/dev/null 2>&1; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
  export JAVA_HOME
fi

export FLEET_VENV FLEET_LAB_BIN FLEET_LAB_BIN_OLDEST
export PATH="$FLEET_VENV/bin:$PATH"
echo "[setup] ready: venv $FLEET_VENV ($(python -c 'from ansible.release import __version__ as v; print("ansible-core", v)')), lab binaries $FLEET_LAB_BIN" >&2
