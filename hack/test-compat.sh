#!/usr/bin/env bash
# Runs the end-to-end smoke set against a control plane of each Kubernetes version given (make
# test-compat: K8S_COMPAT_VERSIONS, one per supported minor), one version after the other, each
# on a test bed of its own (kube-apiserver, kube-controller-manager, kube-scheduler of that
# version; etcd and kwok as make test's), and prints a table: version, test, result, wall time.
#
#   hack/test-compat.sh v1.35.4 v1.36.3 v1.37.2
#
# Every version's binaries are built first (hack/build-tools.sh k8s, about 8 min each cold,
# cached in $CACHE/k8s-<version>), so that the tests run back to back. COMPAT_TESTS (top-level
# test names) in COMPAT_PACKAGES choose the smoke set; a test of it that does not pass — fails, is
# skipped or does not run — fails the version, and the script exits 1. The packages run one after
# the other (-p 1): e2e/scheduleroracle starts a control plane of its own. Each version's go test
# -v output is kept in $COMPAT_LOG_DIR (bin/compat) as <version>.log.
set -euo pipefail
cd "$(dirname "$0")/.."

[[ $# -gt 0 ]] || { echo "usage: $0 VERSION... (such as v1.35.4 v1.36.3 v1.37.2)" >&2; exit 2; }
TESTS=${COMPAT_TESTS:-TestControlPlaneVersion TestPostScaleDown TestGuardDrain TestJobOutcomes TestFilterAgreesWithKubeScheduler}
read -r -a PACKAGES <<<"${COMPAT_PACKAGES:-./e2e ./e2e/scheduleroracle}"
LOG_DIR=${COMPAT_LOG_DIR:-bin/compat}
TIMEOUT=${TEST_TIMEOUT:-45m}
CACHE=${REBALANCER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redis-rebalancer}

log() { printf '[test-compat] %s\n' "$*" >&2; }

for v in "$@"; do
  K8S_VERSION=$v ./hack/build-tools.sh k8s >/dev/null
done
mkdir -p "$LOG_DIR"
pattern="^($(tr ' ' '|' <<<"$TESTS"))\$"

rows=() failed=0
for v in "$@"; do
  out=$LOG_DIR/$v.log
  log "Kubernetes $v: go test ${PACKAGES[*]} -run '$pattern' (log: $out)"
  start=$SECONDS
  # K8S_VERSION picks the bed's binaries (e2e/localcluster.DefaultBinaries) and the version
  # TestControlPlaneVersion expects; K8S_BIN_DIR, which make exports for its own version, is
  # set to the same build.
  K8S_VERSION=$v K8S_BIN_DIR=$CACHE/k8s-$v \
    go test -count=1 -p 1 -timeout "$TIMEOUT" -v -run "$pattern" "${PACKAGES[@]}" >"$out" 2>&1 || true
  wall=$((SECONDS - start))
  for t in $TESTS; do
    # The top-level result line: "--- PASS: TestPostScaleDown (41.23s)".
    line=$(grep -E "^--- (PASS|FAIL|SKIP): $t \(" "$out" | tail -1 || true)
    if [[ -z $line ]]; then
      result="did not run" secs="-"
    else
      result=$(awk '{print $2}' <<<"$line"); result=${result%:}
      secs=$(sed -E 's/.*\(([0-9.]+)s\)$/\1/' <<<"$line")
      secs="${secs%.*} s"
    fi
    [[ $result == PASS ]] || failed=1
    rows+=("| $v | \`$t\` | $result | $secs |")
  done
  # go test's line per package: "ok  <package> <time>" when every test passed and the bed
  # stopped clean.
  whole=FAIL
  if [[ $(grep -cE '^ok ' "$out" || true) -eq ${#PACKAGES[@]} ]]; then whole=ok; else failed=1; fi
  log "Kubernetes $v: go test $whole in ${wall} s (the bed's start and stop included)"
  rows+=("| $v | go test (the bed's start and stop included) | $whole | $wall s |")
done

echo "| Kubernetes | test | result | wall time |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit "$failed"
