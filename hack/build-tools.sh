#!/usr/bin/env bash
# Builds the local test cluster's binaries from the Go module proxy and caches them outside the
# repository, keyed by version:
#   $CACHE/k8s-$K8S_VERSION/{kube-apiserver,kube-controller-manager,kube-scheduler}
#   $CACHE/etcd-$ETCD_VERSION/etcd
#   $CACHE/kwok-$KWOK_VERSION/kwok
#   $CACHE/kustomize-$KUSTOMIZE_VERSION/kustomize, $CACHE/helm-$HELM_VERSION/helm (deploy/'s e2e)
#   $CACHE/promtool-$PROMTOOL_VERSION/promtool (deploy/monitoring's rules: check and unit tests)
# A binary already in the cache is not rebuilt. Prints the cache directory's bin paths when done.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.36.3}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
# kustomize v5.8.2 and later need Go 1.27.
KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-v5.8.1}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
# Prometheus 3.16.0's module version (github.com/prometheus/prometheus tags v0.316.0 for v3.16.0).
PROMTOOL_VERSION=${PROMTOOL_VERSION:-v0.316.0}
CACHE=${REBALANCER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redis-rebalancer}

log() { printf '[build-tools] %s\n' "$*" >&2; }

build_k8s() {
  local out=$CACHE/k8s-$K8S_VERSION
  if [[ -x $out/kube-apiserver && -x $out/kube-controller-manager && -x $out/kube-scheduler ]]; then
    log "kubernetes $K8S_VERSION: cached in $out"; return
  fi
  log "kubernetes $K8S_VERSION: building kube-apiserver, kube-controller-manager, kube-scheduler (about 8 min cold)"
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  local staging="v0.${K8S_VERSION#v1.}"
  local work; work=$(mktemp -d); trap 'rm -rf "$work"' RETURN
  (
    cd "$work"
    go mod init k8sbuild >/dev/null 2>&1
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
    {
      echo "require k8s.io/kubernetes $K8S_VERSION"
      # Every staging replace in k8s.io/kubernetes' own go.mod becomes a proxy version.
      sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#replace \1 => \1 '"$staging"'#p' "$gomod"
    } >>go.mod
    cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
    go mod tidy -e >/dev/null 2>&1 || true
    go mod download
    local ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitTreeState=clean"
    mkdir -p "$out.tmp"
    for c in kube-apiserver kube-controller-manager kube-scheduler; do
      log "  go build $c"
      go build -tags tools -ldflags "$ld" -o "$out.tmp/$c" "k8s.io/kubernetes/cmd/$c"
    done
  )
  rm -rf "$out"; mv "$out.tmp" "$out"
}

build_etcd() {
  local out=$CACHE/etcd-$ETCD_VERSION
  if [[ -x $out/etcd ]]; then log "etcd $ETCD_VERSION: cached in $out"; return; fi
  log "etcd $ETCD_VERSION: building (about 1 min cold)"
  local work; work=$(mktemp -d); trap 'rm -rf "$work"' RETURN
  (
    cd "$work"
    go mod init etcdbuild >/dev/null 2>&1
    cat >>go.mod <<MOD
require (
	go.etcd.io/etcd/server/v3 $ETCD_VERSION
	go.etcd.io/etcd/api/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/v3 $ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
)
MOD
    cat > tools.go <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
    go mod tidy -e >/dev/null 2>&1 || true
    mkdir -p "$out.tmp"
    go build -tags tools -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3
  )
  rm -rf "$out"; mv "$out.tmp" "$out"
}

build_kwok() {
  local out=$CACHE/kwok-$KWOK_VERSION
  if [[ -x $out/kwok ]]; then log "kwok $KWOK_VERSION: cached in $out"; return; fi
  log "kwok $KWOK_VERSION: building (about 2 min cold)"
  mkdir -p "$out.tmp"
  GOBIN=$out.tmp go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  # The pod/node lifecycle stages kwok needs come with its module.
  local moddir; moddir=$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION
  cp -r "$moddir/kustomize/stage" "$out.tmp/stage"; chmod -R u+w "$out.tmp/stage"
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# build_go_tool NAME PACKAGE VERSION: go install PACKAGE@VERSION into $CACHE/NAME-VERSION
# (these modules have no replace directive, so go install builds them as released).
build_go_tool() {
  local name=$1 pkg=$2 version=$3
  local out=$CACHE/$name-$version
  if [[ -x $out/$name ]]; then log "$name $version: cached in $out"; return; fi
  log "$name $version: building (a few minutes cold)"
  mkdir -p "$out.tmp"
  GOBIN=$out.tmp GOFLAGS= go install -ldflags "-s -w" "$pkg@$version"
  rm -rf "$out"; mv "$out.tmp" "$out"
}

mkdir -p "$CACHE"
case "${1:-all}" in
  k8s) build_k8s ;;
  etcd) build_etcd ;;
  kwok) build_kwok ;;
  kustomize) build_go_tool kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION" ;;
  helm) build_go_tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" ;;
  promtool) build_go_tool promtool github.com/prometheus/prometheus/cmd/promtool "$PROMTOOL_VERSION" ;;
  all) build_etcd; build_kwok; build_k8s
       build_go_tool kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION"
       build_go_tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
       build_go_tool promtool github.com/prometheus/prometheus/cmd/promtool "$PROMTOOL_VERSION" ;;
  *) echo "usage: $0 [all|k8s|etcd|kwok|kustomize|helm|promtool]" >&2; exit 2 ;;
esac
echo "K8S_BIN_DIR=$CACHE/k8s-$K8S_VERSION"
echo "ETCD_BIN_DIR=$CACHE/etcd-$ETCD_VERSION"
echo "KWOK_BIN_DIR=$CACHE/kwok-$KWOK_VERSION"
echo "KUSTOMIZE_BIN_DIR=$CACHE/kustomize-$KUSTOMIZE_VERSION"
echo "HELM_BIN_DIR=$CACHE/helm-$HELM_VERSION"
echo "PROMTOOL_BIN_DIR=$CACHE/promtool-$PROMTOOL_VERSION"
