#!/usr/bin/env bash
# The main job: start a lab (hub + two members: member1 push, member2 pull) and the simulations of the
# engines' components, run playbooks/site.yml against it (it ends with the fleet summary), stop the lab.
#
#   bash tests/lab/site.sh [--keep] [--engine karmada|ocm] [ansible-playbook options...]
#
# --keep leaves the lab and simulations running (stop them with: python tests/lab/simulate.py --lab-dir <dir>
# --stop; python tests/lab/lab.py down --dir <dir>).
# FLEET_LAB_DIR chooses the lab directory (default: tests/output/lab).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/tests/setup.sh"
keep=false
engine=karmada
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=true ;;
    --engine) engine="$2"; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
lab_dir="${FLEET_LAB_DIR:-$root/tests/output/lab}"
python "$root/tests/lab/lab.py" up --dir "$lab_dir" --engine "$engine"
if [ "$keep" = false ]; then
  trap 'python "$root/tests/lab/simulate.py" --lab-dir "$lab_dir" --stop; python "$root/tests/lab/lab.py" down --dir "$lab_dir"' EXIT
fi
# The engines' operators, controllers and agents, simulated (tests/lab/simulate.py).
python "$root/tests/lab/simulate.py" --lab-dir "$lab_dir"
# Make the checkout importable as multicluster.fleet for ansible-playbook.
collections="$root/tests/output/collections"
mkdir -p "$collections/ansible_collections/multicluster"
ln -sfn "$root" "$collections/ansible_collections/multicluster/fleet"
ANSIBLE_COLLECTIONS_PATH="$collections" ansible-playbook -i "$lab_dir/inventory.yml" \
  "$root/playbooks/site.yml" "${args[@]}"
