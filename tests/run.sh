#!/usr/bin/env bash
# The test command: sanity, ansible-lint, the documentation (antsibull-docs lint, the docsite), unit and integration tests
# (integration against a real lab), the molecule scenarios (site.yml converge, idempotence, verify, detach on a
# fresh lab per engine), and the version matrix (every ansible-core of meta/runtime.yml's range in a virtualenv of its
# own: tests/matrix/matrix.py). sanity, lint, docs, unit and the matrix's steps without a lab run beside the lab stages
# at the lowest CPU priority (below).
#
#   bash tests/run.sh                 # everything
#   bash tests/run.sh sanity|lint|docs|unit|integration|molecule|matrix ...   # selected stages
#
# The matrix runs as two stages: matrix-nolab (its unit, doc and sanity steps) beside the lab stages with sanity, lint,
# docs and unit, and matrix-lab (compare, awx, smoke) after molecule; "matrix" names both.
#
# FLEET_TEST_WORKERS: pytest-xdist workers of the integration stage, each with a lab of its own (default 2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
setup_started=$SECONDS
source "$root/tests/setup.sh"
cd "$root"
stage_times=("setup $((SECONDS - setup_started)) ok")
requested=("$@")
[ ${#requested[@]} -gt 0 ] || requested=(sanity lint docs unit integration molecule matrix)
stages=()
for stage in "${requested[@]}"; do
  if [ "$stage" = matrix ]; then stages+=(matrix-nolab matrix-lab); else stages+=("$stage"); fi
done

run_sanity() {
  # ansible-test needs the collection at ansible_collections/<namespace>/<name>; copy the tracked tree.
  local top tree status=0
  top="$(mktemp -d)"
  tree="$top/ansible_collections/multicluster/fleet"
  mkdir -p "$tree"
  git ls-files -z --cached --others --exclude-standard | rsync -a --from0 --files-from=- ./ "$tree/"
  echo "[tests] ansible-test sanity" >&2
  (cd "$tree" && git init -q && git add -A && ansible-test sanity --local --requirements --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" --color no) || status=$?
  rm -rf "$top"
  return "$status"
}

link_collection() {
  # Make the checkout importable as multicluster.fleet (ansible-lint, molecule) without installing it.
  local collections="$root/tests/output/collections"
  mkdir -p "$collections/ansible_collections/multicluster"
  # Never replaced while it is there: the stages of the other lane use it meanwhile.
  local link="$collections/ansible_collections/multicluster/fleet"
  [ -L "$link" ] || ln -sn "$root" "$link" 2>/dev/null || [ -L "$link" ]  # made meanwhile by the other lane: fine
  export ANSIBLE_COLLECTIONS_PATH="$collections"
}

run_molecule() {
  # The two scenarios run side by side, each on a lab of its own, so that one's waits on its lab overlap the other's
  # work; each one's output follows as a block once both have ended.
  local status=0 scenario logs pids=()
  link_collection
  logs="$(mktemp -d)"
  for scenario in karmada ocm; do
    echo "[tests] molecule test -s $scenario" >&2
    molecule test -s "$scenario" >"$logs/$scenario.log" 2>&1 &
    pids+=("$!")
  done
  for scenario in karmada ocm; do
    if wait "${pids[0]}"; then echo "[tests] molecule $scenario: passed" >&2; else echo "[tests] molecule $scenario: FAILED" >&2; status=1; fi
    pids=("${pids[@]:1}")
    cat "$logs/$scenario.log"
  done
  rm -rf "$logs"
  return "$status"
}

# Two lanes run side by side. The lab lane (integration, molecule, matrix-lab) leaves processor time idle while its
# tests wait on the labs' simulations, so the processor lane (sanity, lint, docs, unit, matrix-nolab) runs beside it at
# the lowest CPU priority (nice 19): it takes the processor time the lab lane leaves idle and gives it back as soon as
# the lab lane wants it. The lab lane prints as it goes; each processor stage says when it ends and its output follows
# once both lanes have ended. Every stage runs even when an earlier one failed, so one run shows all failures.
run_stage() {
  case "$1" in
    sanity) run_sanity ;;
    unit) echo "[tests] unit" >&2; python -m pytest tests/unit -q -p no:cacheprovider ;;
    integration)
      # Two workers, a lab each; a test file runs in one worker (its module fixtures hold for the file).
      echo "[tests] integration (lab, ${FLEET_TEST_WORKERS:-2} workers)" >&2
      python -m pytest tests/integration -q -p no:cacheprovider -n "${FLEET_TEST_WORKERS:-2}" --dist loadfile \
        --no-loadscope-reorder --durations=15 ;;
    lint) echo "[tests] ansible-lint (production profile)" >&2; link_collection && ansible-lint ;;
    docs) echo "[tests] docs: antsibull-docs lint and the docsite" >&2; bash tests/docs/build.sh ;;
    molecule) run_molecule ;;
    matrix-nolab|matrix-lab)
      # The sanity stage runs ansible-test on this virtualenv's ansible-core, the newest release: with it, the
      # matrix runs sanity on the oldest only. Likewise the unit, integration (test_in_worker_execution and test_awx:
      # the matrix's compare and awx steps) and molecule stages (site.yml, again, detach: its smoke set) run on it.
      local matrix_steps=unit,doc,sanity
      [ "$1" = matrix-nolab ] || matrix_steps=compare,awx,smoke
      echo "[tests] version matrix: $matrix_steps" >&2
      local matrix_sanity=both other
      local matrix_covered=()
      for other in "${stages[@]}"; do
        case "$other" in
          sanity) matrix_sanity=oldest ;;
          unit) matrix_covered+=(unit) ;;
          integration) matrix_covered+=(compare awx) ;;
          molecule) matrix_covered+=(smoke) ;;
        esac
      done
      python tests/matrix/matrix.py --steps "$matrix_steps" --sanity "$matrix_sanity" \
        --covered "$(IFS=,; echo "${matrix_covered[*]}")" ;;
  esac
}

# Runs the stages named, one after the other; each one's "name seconds ok|FAILED" goes to the file $1.
run_lane() {
  local times="$1" stage started status
  shift
  for stage in "$@"; do
    started=$SECONDS
    if (run_stage "$stage"); then status=ok; else status=FAILED; fi
    echo "$stage $((SECONDS - started)) $status" >> "$times"
  done
}

lab_stages=() processor_stages=()
for stage in "${stages[@]}"; do
  case "$stage" in
    integration|molecule|matrix-lab) lab_stages+=("$stage") ;;
    sanity|lint|docs|unit|matrix-nolab) processor_stages+=("$stage") ;;
    *) echo "unknown stage: $stage (sanity, lint, docs, unit, integration, molecule, matrix, matrix-nolab, matrix-lab)" >&2
       exit 2 ;;
  esac
done
lanes="$(mktemp -d)"
trap 'rm -rf "$lanes"' EXIT
: > "$lanes/times"
processor_lane=""
if [ ${#processor_stages[@]} -gt 0 ]; then
  if [ ${#lab_stages[@]} -gt 0 ]; then
    echo "[tests] ${processor_stages[*]}: beside the lab stages, at the lowest CPU priority; their output follows at the end" >&2
    (
      renice -n 19 -p "$BASHPID" >/dev/null
      for stage in "${processor_stages[@]}"; do
        run_lane "$lanes/times" "$stage" >"$lanes/$stage.log" 2>&1
        echo "[tests] $stage: $(awk -v s="$stage" '$1 == s {print $3 " in " $2 " s"}' "$lanes/times")" >&2
      done
    ) &
    processor_lane=$!
  else
    run_lane "$lanes/times" "${processor_stages[@]}"
  fi
fi
[ ${#lab_stages[@]} -eq 0 ] || run_lane "$lanes/times" "${lab_stages[@]}"
if [ -n "$processor_lane" ]; then
  wait "$processor_lane"
  for stage in "${processor_stages[@]}"; do
    echo "[tests] ---- output of $stage ----" >&2
    cat "$lanes/$stage.log"
  done
fi
failed=()
for stage in "${stages[@]}"; do
  read -r _ seconds status < <(awk -v s="$stage" '$1 == s' "$lanes/times")
  stage_times+=("$stage $seconds $status")
  [ "$status" = ok ] || failed+=("$stage")
done
{
  echo "[tests] stage times (Kubernetes $("$FLEET_LAB_BIN/kube-apiserver" --version | awk '{print $2}') in the lab, $(python -c 'from ansible.release import __version__ as v; print("ansible-core", v)')):"
  printf '[tests]   %-12s %7s  %s\n' stage seconds result
  for row in "${stage_times[@]}"; do
    # shellcheck disable=SC2086
    printf '[tests]   %-12s %7s  %s\n' $row
  done
  printf '[tests]   %-12s %7s\n' total "$SECONDS"
} >&2
if [ ${#failed[@]} -gt 0 ]; then
  echo "[tests] FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "[tests] all stages passed: ${stages[*]}" >&2
