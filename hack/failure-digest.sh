#!/usr/bin/env bash
# failure-digest.sh LOG: after a failed `go test` (not -v), print each failed test's header and the
# lines its test files logged (t.Log, t.Error, t.Fatal: "    foo_test.go:12: ..."), without the
# harness's progress and the CLI outputs it dumps, so that the reason of a failure is on the last
# screen of a long log. The whole log stays in LOG.
set -euo pipefail
log=${1:?usage: failure-digest.sh LOG}
echo "== failure digest (the whole output: $log)"
grep -E -- '^\s*--- FAIL|^(FAIL|panic:)|^\s+[A-Za-z0-9_]+_test\.go:[0-9]+: ' "$log" \
	| grep -vE '\$ redis-rebalancer |exited \(.*\); its output|: drain: (evicting pod|error when evicting)' \
	| cut -c1-400 | tail -n 60 || true
