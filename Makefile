# guardrail-operator — run `make help` for the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

LOCALBIN ?= $(CURDIR)/bin
CONTROLPLANE_DIR ?= $(LOCALBIN)/controlplane
export PATH := $(LOCALBIN):$(PATH)

# Pinned tool versions.
CONTROLLER_GEN_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
HELM_VERSION ?= v3.22.0
GREMLINS_VERSION ?= v0.6.0
KWOK_VERSION ?= v0.8.0
HELM_DOCS_VERSION ?= v1.14.2
CYCLONEDX_GOMOD_VERSION ?= v1.10.0

CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
GREMLINS ?= $(LOCALBIN)/gremlins-$(GREMLINS_VERSION)
KWOK ?= $(LOCALBIN)/kwok-$(KWOK_VERSION)
HELM_DOCS ?= $(LOCALBIN)/helm-docs-$(HELM_DOCS_VERSION)
CYCLONEDX_GOMOD ?= $(LOCALBIN)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VERSION)

# Go test flags; override for a focused run, e.g. make test GO_TEST_FLAGS='-run TestEngine -v'.
GO_TEST_FLAGS ?=

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: dev
dev: cluster-build $(HELM) ## The whole product on the real single-node cluster (root): chart installed from the working tree, demo app guarded, traffic; addresses in bin/dev/env; runs until Ctrl-C or make dev-down.
	go build -o $(LOCALBIN)/dev/dev ./hack/dev
	$(LOCALBIN)/dev/dev -helm $(HELM) $(DEV_FLAGS)

.PHONY: dev-down
dev-down: ## Stop a running make dev (it stops what it started).
	@if [ -x $(LOCALBIN)/dev/dev ]; then $(LOCALBIN)/dev/dev down; else echo "make dev was never run here"; fi

.PHONY: dev-lite
dev-lite: controlplane ## Without root: the operator on an embedded kube-apiserver and etcd, pod injector included, one local guard playing an injected pod; kubeconfig in bin/dev/kubeconfig.
	go run ./hack/devlite

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs (config/crd/bases, descriptions rewrapped for kubectl explain), RBAC (config/rbac) and the webhook configuration (config/webhook) from the Go markers.
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true paths="./api/..." output:crd:artifacts:config=config/crd/bases
	go run ./hack/crd-descriptions config/crd/bases/*.yaml
	$(CONTROLLER_GEN) rbac:roleName=guardrail-operator paths="./controllers/..." output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths="./controllers/..." output:webhook:artifacts:config=config/webhook
	go run ./hack/chart-sync

.PHONY: chart-docs
chart-docs: $(HELM_DOCS) ## Generate the chart's README.md from README.md.gotmpl and the comments of values.yaml (helm-docs).
	$(HELM_DOCS) --chart-search-root charts --sort-values-order file

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the deepcopy methods of the API types.
	$(CONTROLLER_GEN) object paths="./api/..."

.PHONY: fmt
fmt: ## Format the Go code.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (config in .golangci.yml).
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: manifests generate chart-docs ## Fail when generated files or go.mod are stale or code is unformatted.
	go mod tidy
	@if [ -n "$$(gofmt -l $$(git ls-files '*.go'))" ]; then echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; fi
	@if [ -n "$$(git status --porcelain -- api config charts go.mod go.sum)" ]; then \
		echo "Generated files are stale; run 'make manifests generate' and 'go mod tidy', then commit:"; \
		git status --porcelain -- api config charts go.mod go.sum; git diff --stat -- api config charts go.mod go.sum; exit 1; fi

.PHONY: test
test: test-unit test-chart test-e2e cluster-build ## Run every test: make test-unit, make test-chart, make test-e2e, then the single-node cluster suites.
	@# The single-node cluster suites (root): they build images from the working tree, which
	@# go test's cache cannot see either; one at a time, each with its own private cluster
	@# unless make cluster-up's is running. Never skipped here.
	GUARDRAIL_CLUSTER_REQUIRED=1 HELM=$(HELM) go test -count=1 -p 1 -timeout 30m $(GO_TEST_FLAGS) ./test/cluster/... ./test/incluster/...

# Suites that make test-unit leaves to their own targets.
SLOW_SUITES := -e /test/e2e -e /test/cluster -e /test/incluster -e /test/chart -e /test/gitops

.PHONY: test-unit
test-unit: controlplane vet ## The inner loop, without root, helm or a cluster: unit, table and fuzz-seed tests, and the envtest suites against a real kube-apiserver and etcd.
	KUBEBUILDER_ASSETS=$(CONTROLPLANE_DIR) go test $(GO_TEST_FLAGS) $$(go list ./... | grep -v $(SLOW_SUITES))

.PHONY: test-chart
test-chart: controlplane $(HELM) lua ## The chart and GitOps checks: helm template, lint, install and upgrade against a real kube-apiserver, Argo CD and Flux health checks.
	KUBEBUILDER_ASSETS=$(CONTROLPLANE_DIR) HELM=$(HELM) go test $(GO_TEST_FLAGS) ./test/chart/... ./test/gitops/...

.PHONY: test-e2e
test-e2e: ## End to end without root: the real manager and guard binaries, the fake provider and classifiers, the official SDKs (Go, and the TypeScript MCP SDK through npm).
	@# The end-to-end suite builds the guard binary itself, which go test's cache cannot see: never cached.
	go test -count=1 $(GO_TEST_FLAGS) ./test/e2e/...

.PHONY: bench
bench: ## Run the benchmarks of the data plane.
	go test -run '^$$' -bench . -benchmem ./runtime/...

.PHONY: scale
scale: controlplane $(KWOK) ## Policy distribution to 1,000 guards whose pods are injected by the webhook and run by kwok (~3 minutes).
	go run ./test/load/cmd/cpscale -guards 1000 -kwok $(KWOK) $(SCALE_FLAGS)

.PHONY: mutation
mutation: $(GREMLINS) ## Mutation testing of the engine, policy and built-in detectors (gremlins): at least 90% efficacy each; ~1 hour on 2 cores.
	go run ./hack/mutation --gremlins $(GREMLINS) $(MUTATION_FLAGS)

.PHONY: load
load: ## Run the guard's load benchmark against a plain reverse proxy, then the linear-streams and large-input checks, the MCP tools/call latency and a 4-minute memory soak (test/load/README.md), ~9 min.
	go run ./test/load/cmd/guardload $(LOAD_FLAGS)
	go run ./test/load/cmd/guardload linear $(LINEAR_FLAGS)
	go run ./test/load/cmd/guardload large
	go run ./test/load/cmd/mcpload
	go run ./test/load/cmd/guardload soak $(SOAK_FLAGS)

##@ Single-node cluster (root; internal/singlenode, suites in test/cluster and test/incluster)

CLUSTER ?= $(LOCALBIN)/cluster/cluster

.PHONY: cluster-build
cluster-build: ## Build the node components (kubelet, containerd, kube-proxy, CoreDNS, ...) into bin/cluster/bin and install Debian's runc, CNI plugins, iptables (cached; cold ~8 min).
	hack/cluster/build.sh
	go build -o $(CLUSTER) ./hack/cluster

.PHONY: cluster-up
cluster-up: cluster-build ## Start a real single-node cluster in namespaces of its own, operator image loaded; KUBECONFIG=bin/cluster/kubeconfig.
	$(CLUSTER) up
	$(CLUSTER) images

.PHONY: cluster-down
cluster-down: ## Stop the single-node cluster and check that nothing of it is left on the host (its data stays in bin/cluster).
	@if [ -x $(CLUSTER) ]; then $(CLUSTER) down; else echo "no cluster was built"; fi

##@ Build

RELEASE_DIR ?= $(LOCALBIN)/release

.PHONY: release
release: $(HELM) $(CYCLONEDX_GOMOD) ## A release's assets in bin/release: the chart .tgz, the operator's image and the Envoy external processor's as OCI archives (load with ctr, push with skopeo), SBOMs of its binaries, SHA256SUMS.
	go run ./hack/release -out $(RELEASE_DIR) -helm $(HELM) -cyclonedx $(CYCLONEDX_GOMOD)

.PHONY: build
build: ## Build the manager, the guard and the guard's Envoy ext_proc server into bin/.
	go build -o $(LOCALBIN)/manager ./cmd/manager
	go build -o $(LOCALBIN)/guard ./cmd/guard
	go build -o $(LOCALBIN)/guard-extproc ./cmd/guard-extproc

.PHONY: kubectl-guardrail
kubectl-guardrail: ## Build the kubectl plugin into bin/kubectl-guardrail (put bin/ on PATH for `kubectl guardrail`).
	go build -o $(LOCALBIN)/kubectl-guardrail ./cmd/kubectl-guardrail

##@ Tools

.PHONY: controlplane
controlplane: ## Build kube-apiserver and etcd from the Go module proxy into bin/controlplane (cached).
	CONTROLPLANE_DIR=$(CONTROLPLANE_DIR) hack/setup-controlplane.sh

.PHONY: lua
lua: ## Install Debian's lua5.4 when it is missing: test/gitops runs the Argo CD health checks with it.
	hack/install-lua.sh

.PHONY: tools
tools: $(CONTROLLER_GEN) $(GOLANGCI_LINT) $(HELM) $(HELM_DOCS) ## Install the pinned tools into bin/.

$(CONTROLLER_GEN):
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_GEN_VERSION))

$(GOLANGCI_LINT):
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

$(GREMLINS):
	$(call go-install-tool,$(GREMLINS),github.com/go-gremlins/gremlins/cmd/gremlins,$(GREMLINS_VERSION))

$(HELM):
	$(call go-install-tool,$(HELM),helm.sh/helm/v3/cmd/helm,$(HELM_VERSION))

$(HELM_DOCS):
	$(call go-install-tool,$(HELM_DOCS),github.com/norwoodj/helm-docs/cmd/helm-docs,$(HELM_DOCS_VERSION))

$(CYCLONEDX_GOMOD):
	$(call go-install-tool,$(CYCLONEDX_GOMOD),github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod,$(CYCLONEDX_GOMOD_VERSION))

$(KWOK):
	$(call go-install-tool,$(KWOK),sigs.k8s.io/kwok/cmd/kwok,$(KWOK_VERSION))

# go-install-tool installs $2@$3 as $1 (a versioned file name, so a version bump reinstalls).
define go-install-tool
@set -e; mkdir -p $(LOCALBIN); tmp=$$(mktemp -d); \
echo "Installing $(2)@$(3)"; \
GOBIN=$$tmp go install $(2)@$(3); \
mv $$tmp/$$(basename $(2)) $(1); rm -rf $$tmp
endef
