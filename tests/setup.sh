#!/usr/bin/env bash
# Prepare a Debian machine to run the collection, its lab and its tests. Idempotent.
#
#   source tests/setup.sh     # exports FLEET_VENV, FLEET_LAB_BIN, PATH
#
# Environment:
#   FLEET_VENV        virtualenv to create/use (default: ~/.cache/multicluster-fleet/venv)
#   FLEET_LAB_CACHE   lab binary cache root (see tests/lab/build.sh)
set -euo pipefail
_fleet_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FLEET_VENV="${FLEET_VENV:-$HOME/.cache/multicluster-fleet/venv}"

_missing=()
for _p in rsync shellcheck git; do dpkg -s "$_p" >/dev/null 2>&1 || _missing+=("$_p"); done
if [ ${#_missing[@]} -gt 0 ]; then
  echo "[setup] installing Debian packages: ${_missing[*]}" >&2
  _sudo=(); [ "$(id -u)" = 0 ] || _sudo=(sudo)
  "${_sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${_sudo[@]}" apt-get install -y -qq "${_missing[@]}" >/dev/null
fi

echo "[setup] lab binaries" >&2
FLEET_LAB_BIN="$(bash "$_fleet_root/tests/lab/build.sh")"

if [ ! -x "$FLEET_VENV/bin/python" ]; then
  echo "[setup] creating virtualenv $FLEET_VENV" >&2
  python3 -m venv "$FLEET_VENV"
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

export FLEET_VENV FLEET_LAB_BIN
export PATH="$FLEET_VENV/bin:$PATH"
echo "[setup] ready: venv $FLEET_VENV, lab binaries $FLEET_LAB_BIN" >&2
