#!/usr/bin/env bash
# Fails when a file tracked by git is larger than the limit (1 MiB by default): a compiled binary
# or a cluster dump committed by mistake would otherwise ride along in every clone.
#   hack/check-tracked-sizes.sh [LIMIT_BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-1048576}
big=$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk -v l="$limit" '$1 > l {print "  " $2 " (" $1 " bytes)"}')
if [ -n "$big" ]; then
  echo "tracked files over $limit bytes (build outputs belong in bin/, ignored by .gitignore):" >&2
  echo "$big" >&2
  exit 1
fi
