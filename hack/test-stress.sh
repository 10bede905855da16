#!/usr/bin/env bash
# make test-stress: the end-to-end suite STRESS_RUNS times (3 by default), each in a shuffled
# order (go test -shuffle) under a CPU hog on every core (hack/cpuhog: busy loops that stop when
# the run ends, whatever its outcome), then a summary line per run: its seed, outcome and wall
# time. A failed run prints the command that replays it.
#   STRESS_RUNS=3            runs
#   STRESS_SEEDS="1 2 3"     the runs' shuffle seeds (random when not given; replays a failure)
#   STRESS_WORKERS=N         the hog's busy loops (the number of CPUs by default)
#   E2E_LOCK=/path           take this flock(1) lock around each run, not around all of them
#   TEST_TIMEOUT, GO         as in the Makefile
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
runs=${STRESS_RUNS:-3}
read -r -a seeds <<<"${STRESS_SEEDS:-}"
if [ "${#seeds[@]}" -gt 0 ]; then
  runs=${#seeds[@]}
fi
workers=${STRESS_WORKERS:-$(nproc)}
timeout=${TEST_TIMEOUT:-45m}
$GO build -o bin/cpuhog ./hack/cpuhog || exit 1

lock=()
if [ -n "${E2E_LOCK:-}" ]; then
  lock=(flock "$E2E_LOCK")
fi
summary=()
failed=0
for ((i = 0; i < runs; i++)); do
  seed=${seeds[i]:-$(( (RANDOM << 15 | RANDOM) + 1 ))}
  echo "=== test-stress run $((i + 1))/$runs: go test -shuffle $seed ./e2e/... under $workers busy loops"
  start=$(date +%s)
  "${lock[@]}" bin/cpuhog -workers "$workers" -max "$timeout" -- \
    $GO test -count=1 -shuffle="$seed" -timeout "$timeout" ./e2e/...
  rc=$?
  took=$(( $(date +%s) - start ))
  if [ "$rc" -eq 0 ]; then
    summary+=("run $((i + 1)): -shuffle $seed: ok in ${took}s")
  else
    failed=1
    summary+=("run $((i + 1)): -shuffle $seed: FAIL (exit $rc) in ${took}s; replay: make test-stress STRESS_SEEDS=$seed")
  fi
done
echo "=== test-stress: $runs runs under $workers busy loops"
printf '%s\n' "${summary[@]}"
exit $failed
