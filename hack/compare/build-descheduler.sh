#!/usr/bin/env bash
# Builds the stock descheduler (sigs.k8s.io/descheduler/cmd/descheduler at the version
# hack/compare/descheduler/go.mod requires) from the Go module proxy, once, into the path given
# (the Makefile's $(TOOLS_CACHE)/descheduler-<version>/descheduler). About 3 min cold on 2 cores.
set -euo pipefail
out=${1:?usage: $0 OUTPUT}
if [[ -x $out ]]; then echo "[build-descheduler] cached: $out" >&2; exit 0; fi
cd "$(dirname "$0")/descheduler"
version=$(go list -m -f '{{.Version}}' sigs.k8s.io/descheduler)
echo "[build-descheduler] building the descheduler $version into $out" >&2
mkdir -p "$(dirname "$out")"
go build -ldflags "-s -w -X sigs.k8s.io/descheduler/pkg/version.version=$version" -o "$out.tmp" sigs.k8s.io/descheduler/cmd/descheduler
mv "$out.tmp" "$out"
