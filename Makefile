# redis-rebalancer — build, test and demo. `make demo` and `make test` install what a fresh
# machine lacks (Debian's redis-server; etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok built from the Go module proxy and cached in $(TOOLS_CACHE)).
SHELL := /bin/bash
GO ?= go

K8S_VERSION  ?= v1.36.3
# The Kubernetes versions make test-compat proves, the newest patch of each supported minor
# (README.md's compatibility table; docs/testing.md has the results).
K8S_COMPAT_VERSIONS ?= v1.35.4 v1.36.3 v1.37.2
ETCD_VERSION ?= v3.6.16
KWOK_VERSION ?= v0.8.0
KUSTOMIZE_VERSION ?= v5.8.1
HELM_VERSION ?= v3.22.0
# promtool (deploy/monitoring's rules): Prometheus 3.16.0, module version v0.316.0.
PROMTOOL_VERSION ?= v0.316.0
# The stock descheduler make compare runs: the version hack/compare/descheduler/go.mod requires
# (read from it, so that a bump there builds a new cached binary).
DESCHEDULER_VERSION := $(shell awk '$$1=="sigs.k8s.io/descheduler" {print $$2}' hack/compare/descheduler/go.mod)
TOOLS_CACHE  ?= $(HOME)/.cache/redis-rebalancer
export K8S_VERSION ETCD_VERSION KWOK_VERSION KUSTOMIZE_VERSION HELM_VERSION PROMTOOL_VERSION
export REBALANCER_TOOLS_CACHE := $(TOOLS_CACHE)
export K8S_BIN_DIR  := $(TOOLS_CACHE)/k8s-$(K8S_VERSION)
export ETCD_BIN_DIR := $(TOOLS_CACHE)/etcd-$(ETCD_VERSION)
export KWOK_BIN_DIR := $(TOOLS_CACHE)/kwok-$(KWOK_VERSION)
export KUSTOMIZE_BIN_DIR := $(TOOLS_CACHE)/kustomize-$(KUSTOMIZE_VERSION)
export HELM_BIN_DIR := $(TOOLS_CACHE)/helm-$(HELM_VERSION)
export PROMTOOL_BIN_DIR := $(TOOLS_CACHE)/promtool-$(PROMTOOL_VERSION)

# The version: git describe's, a release tag (v0.1.0) on a release commit.
VERSION  ?= $(shell git describe --tags --match 'v[0-9]*' --always --dirty 2>/dev/null || echo dev)
# The git commit built (the metrics' build_info and `redis-rebalancer version` show it).
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -X github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app.Version=$(VERSION) \
            -X github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app.Revision=$(REVISION)
FUZZTIME ?= 30s
TEST_TIMEOUT ?= 45m
# The order go test runs each package's tests in (go test -shuffle): a new seed each time, printed
# first, so that a failure can be replayed in the same order (make test SHUFFLE=<seed>).
ifeq ($(origin SHUFFLE),undefined)
SHUFFLE := $(shell echo $$(( $$(date +%s%N) % 1000000007 )))
endif

# The image: IMAGE_REGISTRY is a placeholder (registry.example.com) the manifests share; set it to
# your registry (make image IMAGE_REGISTRY=ghcr.io/you) and the manifests' image with kustomize's
# `images:` or Helm's image.repository. The manifests reference RELEASE, the chart's appVersion:
# `make image` on the commit tagged RELEASE builds exactly the image they name.
IMAGE_REGISTRY ?= registry.example.com
IMAGE_REPO     ?= $(IMAGE_REGISTRY)/redis-rebalancer
IMAGE          ?= $(IMAGE_REPO):$(VERSION)
RELEASE        := $(shell awk '$$1=="appVersion:" {gsub(/"/, "", $$2); print $$2}' deploy/helm/redis-rebalancer/Chart.yaml)
IMAGE_PLATFORMS ?= amd64 arm64
# The OCI labels: the licenses label's SPDX expression, and created, the commit's time (the same
# commit builds the same image).
IMAGE_LICENSES ?= Apache-2.0
COMMIT_TIME    ?= $(shell git log -1 --format=%cI 2>/dev/null)
# The CA bundle put in the image (none when the file is missing).
CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt

.PHONY: all build image test test-stress test-compat unit e2e fuzz bench demo compare soak tools deps vet generate clean help descheduler-plugin descheduler

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## build bin/redis-rebalancer and bin/rebalancer-demo
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/redis-rebalancer ./cmd/redis-rebalancer
	$(GO) build -o bin/rebalancer-demo ./cmd/rebalancer-demo

image: ## build the container image without a Docker daemon for linux/amd64 and linux/arm64: bin/image (an OCI layout holding the image index) and bin/redis-rebalancer-image.tar (this machine's platform, for docker load)
	for arch in $(IMAGE_PLATFORMS); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/linux/$$arch/redis-rebalancer ./cmd/redis-rebalancer || exit 1; \
	done
	$(GO) run ./hack/image $(foreach a,$(IMAGE_PLATFORMS),-binary $(a)=bin/linux/$(a)/redis-rebalancer) \
	  -version $(VERSION) -revision $(REVISION) $(if $(COMMIT_TIME),-created $(COMMIT_TIME)) -licenses $(IMAGE_LICENSES) \
	  -tag $(IMAGE) -layout bin/image -tarball bin/redis-rebalancer-image.tar $(if $(wildcard $(CA_CERTS)),-ca-certs $(CA_CERTS))
	@if [ "$(VERSION)" != "$(RELEASE)" ]; then \
	  echo "note: the manifests (deploy/) name $(IMAGE_REPO):$(RELEASE); this build is $(IMAGE), not a release tag:"; \
	  echo "      set the image tag (kustomize images:, Helm image.tag) to use it"; \
	fi

deps: ## install Debian's redis-server and redis-tools when missing
	@if ! command -v redis-server >/dev/null; then \
	  echo "installing redis-server and redis-tools (apt-get)"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; \
	fi
	@redis-server --version

tools: deps ## build (once, cached) etcd, the Kubernetes control plane and kwok for the local cluster, kustomize, helm and promtool for deploy/
	./hack/build-tools.sh all

generate: ## regenerate api/v1alpha1's deepcopy, the commented default policy, docs/policy.md, the Helm chart's policy schema (values.schema.json), docs/cli.md, docs/rules.md, docs/architecture.md's folder table, README.md's rule table and the command outputs shown in README.md and docs/ (a test fails when they are stale)
	$(GO) generate ./api/v1alpha1

vet: ## gofmt, go vet (the module and hack/descheduler-plugin's), and no tracked file over 1 MiB
	./hack/check-tracked-sizes.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	cd hack/descheduler-plugin && $(GO) vet ./...

unit: deps ## unit tests (real redis-server where they need one; no Kubernetes)
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v /e2e)
	cd hack/descheduler-plugin && $(GO) test -count=1 ./...

e2e: tools descheduler-plugin ## end-to-end tests on a local cluster with real Redis, in a shuffled order (SHUFFLE=<seed> replays one)
	@echo "go test -shuffle $(SHUFFLE) (replay this order: make e2e SHUFFLE=$(SHUFFLE))"
	$(GO) test -count=1 -shuffle=$(SHUFFLE) -timeout $(TEST_TIMEOUT) ./e2e/...

test: tools vet descheduler-plugin descheduler ## every test: unit and end-to-end (a short soak among them: e2e/soak, 3 minutes, seed 1), in a shuffled order (SHUFFLE=<seed> replays one)
	@echo "go test -shuffle $(SHUFFLE) (replay this order: make test SHUFFLE=$(SHUFFLE))"
	cd hack/descheduler-plugin && $(GO) test -count=1 -shuffle=$(SHUFFLE) ./...
	@mkdir -p _output
	set -o pipefail; $(GO) test -count=1 -shuffle=$(SHUFFLE) -timeout $(TEST_TIMEOUT) ./... 2>&1 | tee _output/test.log || { ./hack/failure-digest.sh _output/test.log; exit 1; }

# make test-stress: the end-to-end suite 3 times (STRESS_RUNS), each in a new shuffled order
# (STRESS_SEEDS="s1 s2 s3" replays them) under a CPU hog on every core (hack/cpuhog), with a line
# per run: its seed, outcome and wall time. E2E_LOCK=<file> takes that flock(1) lock per run.
test-stress: tools descheduler-plugin ## the end-to-end suite 3 times, shuffled, under a CPU hog on every core (not part of make test; about an hour)
	TEST_TIMEOUT=$(TEST_TIMEOUT) GO=$(GO) ./hack/test-stress.sh

test-compat: deps ## the end-to-end smoke set (post-scale-down with the writer, the guard's drain, the Job outcomes, the placeability filter against kube-scheduler) against a control plane of each supported Kubernetes minor (K8S_COMPAT_VERSIONS, each built once and cached): a table of results and wall times (not part of make test)
	./hack/build-tools.sh etcd
	./hack/build-tools.sh kwok
	./hack/build-tools.sh kustomize
	./hack/test-compat.sh $(K8S_COMPAT_VERSIONS)

# The descheduler with the RedisClusterBalance plugin (hack/descheduler-plugin), built from this
# checkout: e2e/descheduler_plugin_test.go runs it (and builds it itself when run alone), make
# compare compares it. go build relinks it only when a source changed.
DESCHEDULER_PLUGIN_BIN := bin/descheduler-redis

descheduler-plugin: ## build bin/descheduler-redis: the descheduler with the RedisClusterBalance balance plugin
	./hack/descheduler-plugin/build.sh $(CURDIR)/$(DESCHEDULER_PLUGIN_BIN)

fuzz: deps ## fuzz the CLUSTER NODES and INFO parsers, the snapshot decoder and the policy loader for FUZZTIME each
	$(GO) test -run '^$$' -fuzz '^FuzzParseClusterNodes$$' -fuzztime $(FUZZTIME) ./redisctl
	$(GO) test -run '^$$' -fuzz '^FuzzParseInfo$$' -fuzztime $(FUZZTIME) ./redisctl
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeSnapshot$$' -fuzztime $(FUZZTIME) ./rebalancer/observe
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./api/v1alpha1

bench: deps ## benchmarks, figures printed and nothing asserted: the rules, failover under write load (20 failovers), and the scale benchmark (5,000 nodes, 150,000 pods: analysis, plans, and the descheduler's topology-spread plugin side by side; the check command live and offline)
	$(GO) test -run '^$$' -bench . -benchmem ./policies
	$(GO) test -run '^$$' -bench FailoverUnderLoad -benchtime 20x ./redisctl
	$(GO) test -run '^$$' -bench . -skip Check -benchtime 3x -benchmem -timeout 60m ./bench
	$(GO) test -run '^$$' -bench Check -benchtime 1x -timeout 60m ./bench

demo: tools build ## local cluster + real Redis Cluster in a bad placement + redis-rebalancer fixing it
	./bin/rebalancer-demo -binary bin/redis-rebalancer $(DEMO_ARGS)

DESCHEDULER_BIN := $(TOOLS_CACHE)/descheduler-$(DESCHEDULER_VERSION)/descheduler
# e2e/soak runs the stock descheduler beside the rebalancer.
export DESCHEDULER_BIN

descheduler: ## build (once, cached) the stock descheduler that make compare and the soak run
	./hack/compare/build-descheduler.sh $(DESCHEDULER_BIN)

compare: tools build descheduler-plugin descheduler ## the stock descheduler, redis-rebalancer and the descheduler with RedisClusterBalance side by side on the same scenarios and writer: prints a table (several minutes; not part of make test)
	$(GO) run ./hack/compare -rebalancer bin/redis-rebalancer -descheduler $(DESCHEDULER_BIN) -descheduler-plugin $(DESCHEDULER_PLUGIN_BIN) $(COMPARE_ARGS)

clean: ## remove built binaries (the tool cache stays)
	rm -rf bin

# The chaos soak (e2e/soak, docs/testing.md): SOAK_DURATION of seeded disruptions (SOAK_SEED)
# against what deploy/ installs, on the realistic bed; it takes the e2e lock itself for its whole
# run (do not wrap it in flock) and, when it fails, shrinks the failing sequence.
SOAK_DURATION ?= 30m
SOAK_SEED ?= 1

soak: tools descheduler ## the chaos soak: SOAK_DURATION (30m) of disruptions drawn from SOAK_SEED (1); prints its summary and the timeline's path; SOAK_ARGS adds test flags
	flock /tmp/rr-e2e.lock $(GO) test ./e2e/soak -run 'TestSoak$$' -count=1 -timeout 4h -v \
	  -soak.duration=$(SOAK_DURATION) -soak.seed=$(SOAK_SEED) -soak.shrink $(SOAK_ARGS)
