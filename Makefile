# cline-mcp — the two commands a newcomer needs are `make run` and `make test`.
GO        ?= go
BIN       ?= bin
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
IMAGE      ?= cline-mcp/cline:latest
FAKE_IMAGE ?= cline-mcp/fake-cline:latest
EGRESS_IMAGE ?= cline-mcp/egress:latest
# the real CLI's image the contract suite runs in Docker; per checkout with CLINE_MCP_TEST_TAG
CONTRACT_IMAGE ?= cline-mcp/cline:contract$(if $(CLINE_MCP_TEST_TAG),-$(CLINE_MCP_TEST_TAG))
CLINE_VERSION ?= 3.0.65
# image base: auto (a registry when one answers, else debootstrap), registry or debootstrap
IMAGE_BASE ?= auto
# Images always get Linux binaries of the engine's architecture, whatever the host runs (a Mac
# builds linux/arm64 for Docker Desktop on Apple silicon); without an engine, the host's.
ENGINE_ARCH ?= $(shell docker version --format '{{.Server.Arch}}' 2>/dev/null || $(GO) env GOARCH)
# npm's name for the engine's architecture (@cline/cli-linux-x64 / -arm64)
CLINE_ARCH := $(if $(filter arm64,$(ENGINE_ARCH)),arm64,x64)
CLINE_PKG  := images/cline/cline-cli-linux-$(CLINE_ARCH)-$(CLINE_VERSION).tgz
# every target a user may build on; `make cross` compiles code and tests (all tags) for each
CROSS_TARGETS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64

.PHONY: all build run test test-short lint bench e2e contract cross image image-fake image-k8s-fake image-egress image-service clean fuzz \
	release-snapshot release-check bundle

all: build

## build: the server, the fake CLI and the egress proxy into ./bin
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/cline-mcp ./cmd/cline-mcp
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/fake-cline ./internal/cmd/fake-cline
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/cline-mcp-egress ./cmd/cline-mcp-egress

## run: build and serve MCP on stdio (it waits for a client; do not type into it). Everything but
## the server's own MCP output goes to stderr, so even `make -s run` can sit behind an MCP client.
run:
	@$(MAKE) --no-print-directory -s build 1>&2
	@exec $(BIN)/cline-mcp $(ARGS)

## test: everything — unit, integration (real git, real processes, real MCP client), Docker e2e.
## Docker tests skip loudly without an engine, and fail under CI=true.
test: image-fake
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 60m -tags e2e ./...

## test-short: unit tests only, no git/processes/Docker
test-short:
	$(GO) test -short -count=1 ./...

## lint: the repository guard first (no tracked file over 1 MiB, no binary executable, no executable
## but the allow-listed scripts; every Markdown link and anchor resolves inside the repository), then
## gofmt and go vet of every file (one vet with both test tags: see cross)
lint:
	$(GO) test -count=1 ./internal/repocheck/
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags "e2e contract" ./...

## fuzz: every fuzz target for FUZZTIME each (CI: a short bounded run; locally e.g. FUZZTIME=10m).
## Go 1.26's fuzzing coordinator can fail a run with a bare "context deadline exceeded" at the end of
## -fuzztime when a loaded machine delays a worker (go.dev/issue/75804, fixed in Go 1.27): such a run,
## with no failing input written, is said and the target's corpus is replayed instead; any other
## failure fails.
FUZZTIME ?= 10s
FUZZ_TARGETS := ./bridge/redact:FuzzRedact ./bridge/cline:FuzzParser ./bridge/mcpserver:FuzzToolArguments \
	./bridge/settings:FuzzSettingsRestoreMerge ./bridge/settings:FuzzParseObjectDeep ./sandbox/archive:FuzzReadBack \
	./sandbox/egress:FuzzMatch ./sandbox/egress:FuzzCleanPath ./bridge/acp:FuzzStream ./sandbox/git:FuzzCheckPatch
fuzz:
	@set -e; out=$$(mktemp); trap 'rm -f "$$out"' EXIT; for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $${t#*:} ($(FUZZTIME))"; \
	  if $(GO) test -short -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) $${t%%:*} >"$$out" 2>&1; then cat "$$out"; continue; fi; \
	  cat "$$out"; \
	  if grep -q 'Failing input written' "$$out" || ! grep -qx '    context deadline exceeded' "$$out"; then exit 1; fi; \
	  echo "fuzz $${t#*:}: the coordinator's end-of-fuzztime deadline race (go.dev/issue/75804), no failing input: replaying its corpus"; \
	  $(GO) test -short -count=1 -run "^$${t#*:}$$" $${t%%:*}; \
	done

## bench: bridge overhead and memory benchmarks (numbers, not pass/fail), then the redaction
## figures: precision over real Go source, recall over the secret corpus and generated samples,
## throughput medians (wall and per CPU-second) and allocations
bench: build image-fake
	$(GO) run ./internal/cmd/benchbridge -cline-mcp $(BIN)/cline-mcp -fake $(BIN)/fake-cline \
	  $$(docker info >/dev/null 2>&1 && echo -docker-image $(FAKE_IMAGE)) \
	  $(if $(BASELINE),-baseline-cline-mcp $(BASELINE))
	@echo "warm containers in copy mode (an engine that cannot see this machine's files):"
	@if docker info >/dev/null 2>&1; then $(GO) run ./internal/cmd/benchbridge -cline-mcp $(BIN)/cline-mcp -fake $(BIN)/fake-cline \
	  -docker-image $(FAKE_IMAGE) -only warm -docker-arg=--docker-mounts -docker-arg=copy; fi
	@echo "ask_cline on the real CLI (fake provider): one-shot --json against a warm ACP process:"
	CLINE_MCP_CONTRACT_BENCH=$${CLINE_MCP_CONTRACT_BENCH:-10} $(GO) test -count=1 -tags contract -run '^TestLatencyACPWarmVsJSON$$' -v ./contract/ \
	  | grep -E 'p50|ratio|PONG|^(ok|FAIL|--- |contract:)'
	@echo "warm Docker calls and conversation turns against warm host ones, real CLI (fake provider):"
	@docker info >/dev/null 2>&1 && $(MAKE) --no-print-directory image IMAGE=$(CONTRACT_IMAGE) >/dev/null || true
	CLINE_MCP_CONTRACT_IMAGE=$(CONTRACT_IMAGE) CLINE_MCP_CONTRACT_BENCH=$${CLINE_MCP_CONTRACT_BENCH:-20} \
	  $(GO) test -count=1 -timeout 30m -tags contract -run '^TestLatencyWarmAndSessions$$' -v ./contract/ \
	  | grep -E 'p50|PONG|^(ok|FAIL|--- |contract:)'
	@echo "the test cluster: cold, warm and agent-sandbox pod calls; later turns of a pod conversation:"
	$(GO) test -count=1 -timeout 30m -tags e2e -run '^$$' -bench '^(BenchmarkWarmVsCold|BenchmarkASBClaim)$$' -benchtime 20x ./sandbox/kubernetes/ \
	  | grep -E '^(Benchmark|ok|FAIL|--- )|SKIP'
	CLINE_MCP_POD_SESSION_BENCH=20 $(GO) test -count=1 -tags e2e -run '^TestKubernetesLaterTurns$$' -v ./e2e/ \
	  | grep -E 'later turns|^(ok|FAIL|--- )|SKIP'
	@echo "a key-less Docker call (the egress proxy adds the key) against one with the key inside:"
	CLINE_MCP_KEYLESS_BENCH=$${CLINE_MCP_KEYLESS_BENCH:-15} $(GO) test -count=1 -tags e2e -run '^TestKeylessCost$$' -v ./e2e/ \
	  | grep -E 'keyless/key|^(ok|FAIL|--- )'
	$(GO) test -run '^$$' -bench . -skip '^BenchmarkPool$$' -benchtime 20x ./sandbox/worktree/ ./sandbox/host/ ./bridge/redact/ ./bridge/cline/
	$(GO) test -run '^$$' -bench '^BenchmarkPool$$' -benchtime 7x -timeout 60m ./sandbox/worktree/
	@$(GO) test -count=1 -run '^(TestPrecisionSourceCorpus|TestRedactCorpus|TestRecallGeneratedSamples|TestFigures)$$' \
	  -v ./bridge/redact/ -args -figures > $(BIN)/redact-figures.txt 2>&1 || { cat $(BIN)/redact-figures.txt; exit 1; }
	@echo "redaction figures:"
	@grep -E '(precision|recall|throughput):' $(BIN)/redact-figures.txt | sed -E 's/^ *[a-z_]+\.go:[0-9]+: /  /'

## e2e: the testcontainers-go end-to-end suite against the fake Cline image
e2e: image-fake
	$(GO) test -count=1 -timeout 60m -tags e2e ./e2e/...

## contract: the suite against the real Cline CLI, on the host (installs cline@$(CLINE_VERSION) from npm
## into a cache dir) and in Docker (builds the real image as $(CONTRACT_IMAGE) first; without an
## engine or a base for it the Docker half skips loudly, and fails under CI=true)
contract: build
	@if docker info >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory image IMAGE=$(CONTRACT_IMAGE) || { [ "$$CI" = true ] && exit 1; \
	    echo "WARNING: $(CONTRACT_IMAGE) not built: the Docker half of the contract suite will skip"; }; \
	 fi
	CLINE_MCP_CONTRACT_IMAGE=$(CONTRACT_IMAGE) $(GO) test -count=1 -timeout 30m -tags contract ./contract/...

## cross: every package, command and test binary (default, e2e and contract tags) must compile
## for every target. `go vet` type-checks them all, tests included, and compiles every dependency
## (linking proves nothing more for pure Go; the release snapshot links every target). No file is
## built only without a tag (no `!e2e`, `!contract`: checked here), so one vet with both tags sees
## every file the three tag sets would. -trimpath as the release builds use it, so what cross
## compiled for a target is in the cache when goreleaser builds it. No file of the repository
## depends on GOARCH (checked here), so CI vets one architecture per OS; the release snapshot
## still compiles and links every target.
cross:
	@if git grep -lE '^//go:build.*!(e2e|contract)' -- '*.go' | grep .; then \
	  echo "cross: files built only without the e2e or contract tag: vet each tag set apart"; exit 1; fi
	@if git ls-files '*.go' | grep -E '_(386|amd64|arm|arm64|loong64|mips[a-z0-9]*|ppc64|ppc64le|riscv64|s390x|wasm)(_test)?\.go$$' || \
	  git grep -lE '^//go:build.*\b(386|amd64|arm|arm64|riscv64|s390x|ppc64le)\b' -- '*.go'; then \
	  echo "cross: files that depend on GOARCH: vet every architecture in CI, not one per OS"; exit 1; fi
	@set -e; for t in $(CROSS_TARGETS); do \
	  os=$${t%/*}; arch=$${t#*/}; echo "cross $$os/$$arch"; \
	  GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) vet -trimpath -tags "e2e contract" ./... ; \
	done

## image-egress: FROM scratch + the static egress proxy of Docker runs (--docker-egress provider)
image-egress:
	GOOS=linux GOARCH=$(ENGINE_ARCH) CGO_ENABLED=0 $(GO) build -trimpath -o images/egress/cline-mcp-egress ./cmd/cline-mcp-egress
	@if docker info >/dev/null 2>&1; then docker build -q -t $(EGRESS_IMAGE) images/egress >/dev/null && echo "built $(EGRESS_IMAGE)"; \
	 else echo "WARNING: no Docker engine: $(EGRESS_IMAGE) not built"; fi

## image-fake: FROM scratch + the static fake CLI (no registry needed), and the egress proxy's image
image-fake: image-egress
	GOOS=linux GOARCH=$(ENGINE_ARCH) CGO_ENABLED=0 $(GO) build -trimpath -o images/fake-cline/fake-cline ./internal/cmd/fake-cline
	@if docker info >/dev/null 2>&1; then docker build -q -t $(FAKE_IMAGE) images/fake-cline >/dev/null && echo "built $(FAKE_IMAGE)"; \
	 else echo "WARNING: no Docker engine: $(FAKE_IMAGE) not built (Docker tests will skip, or fail under CI=true)"; fi

## image-k8s-fake: the fake image plus the Kubernetes executor's helper and egress sidecar ($(FAKE_IMAGE) -> tag k8s)
image-k8s-fake: image-fake
	GOOS=linux GOARCH=$(ENGINE_ARCH) CGO_ENABLED=0 $(GO) build -trimpath -o images/k8s-fake/cline-mcp-k8s-helper ./cmd/cline-mcp-k8s-helper
	GOOS=linux GOARCH=$(ENGINE_ARCH) CGO_ENABLED=0 $(GO) build -trimpath -o images/k8s-fake/cline-mcp-egress ./cmd/cline-mcp-egress
	docker build -q --build-arg FAKE=$(FAKE_IMAGE) -t $(subst :latest,:k8s,$(FAKE_IMAGE)) images/k8s-fake >/dev/null && echo "built $(subst :latest,:k8s,$(FAKE_IMAGE))"

## image: the real Cline CLI image: npm's platform binary @cline/cli-linux-<arch>@$(CLINE_VERSION)
## (fetched with npm pack) on Debian bookworm with bash, coreutils, hostname, git and CA certificates,
## plus the Kubernetes executor's helper and egress sidecar (the same image serves --isolation docker and kubernetes).
## The base comes from a registry (debian:bookworm-slim) when one answers, else from Debian packages
## (debootstrap + docker import, needs root); force one with IMAGE_BASE=registry|debootstrap.
image: $(CLINE_PKG) image-egress
	GOOS=linux GOARCH=$(ENGINE_ARCH) CGO_ENABLED=0 $(GO) build -trimpath -o images/cline/cline-mcp-k8s-helper ./cmd/cline-mcp-k8s-helper
	GOOS=linux GOARCH=$(ENGINE_ARCH) CGO_ENABLED=0 $(GO) build -trimpath -o images/cline/cline-mcp-egress ./cmd/cline-mcp-egress
	@base=$$(ENGINE_ARCH=$(ENGINE_ARCH) images/base.sh $(IMAGE_BASE)) && \
	 echo "docker build $(IMAGE) FROM $$base" && \
	 docker build -q --build-arg BASE_IMAGE=$$base --build-arg CLINE_VERSION=$(CLINE_VERSION) \
	   --build-arg CLINE_ARCH=$(CLINE_ARCH) -t $(IMAGE) images/cline >/dev/null && \
	 echo "built $(IMAGE) ($$(docker image inspect --format '{{.Size}}' $(IMAGE) | awk '{printf "%.0f MB", $$1/1e6}'))"

## image-service: the HTTP service's image (deploy/): the static cline-mcp on the same Debian base
## (git, CA certificates; images/base.sh picks it, no registry needed), uid 1000
SERVICE_IMAGE ?= cline-mcp/cline-mcp:latest
image-service:
	GOOS=linux GOARCH=$(ENGINE_ARCH) CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o deploy/image/cline-mcp ./cmd/cline-mcp
	@base=$$(ENGINE_ARCH=$(ENGINE_ARCH) images/base.sh $(IMAGE_BASE)) && \
	 docker build -q --build-arg BASE_IMAGE=$$base -t $(SERVICE_IMAGE) deploy/image >/dev/null && \
	 echo "built $(SERVICE_IMAGE) FROM $$base"

# npm pack checks the tarball against the registry's integrity hash; older versions are removed
# from the build context.
$(CLINE_PKG):
	@rm -f images/cline/cline-cli-linux-*.tgz
	npm pack --silent --pack-destination images/cline @cline/cli-linux-$(CLINE_ARCH)@$(CLINE_VERSION) >/dev/null

# --- Release (docs/install.md#publishing-a-release). goreleaser and cyclonedx-gomod are pinned in
# tools/go.mod, apart from the product's go.mod; mcpb (npm) goes to a cache dir outside the repo.
GORELEASER   := $(GO) tool -modfile=tools/go.mod goreleaser
MCPB_VERSION ?= 2.1.2
CACHE_DIR    ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/cline-mcp
MCPB         := $(CACHE_DIR)/mcpb-$(MCPB_VERSION)/node_modules/@anthropic-ai/mcpb/dist/cli/cli.js

## release-snapshot: the release pipeline without publishing: archives (binary, README, docs/install.md,
## licence files) for linux/darwin/windows × amd64/arm64, checksums.txt, CycloneDX SBOMs, .deb/.rpm and
## the Homebrew formula, all in ./dist
release-snapshot:
	$(GORELEASER) release --snapshot --clean

## release-check: two snapshot builds of HEAD in two fresh clones must give identical binaries
release-check:
	CLINE_MCP_RELEASE_TEST=1 $(GO) test -count=1 -timeout 60m -run '^TestReproducibleSnapshot$$' -v ./packaging/

## bundle: one MCP Bundle (.mcpb, Claude Desktop) per platform in ./dist, validated and packed with the
## official mcpb CLI; then dist/server.json (this version, the bundles' SHA-256), validated against the
## MCP Registry's schema
bundle: $(MCPB)
	rm -rf dist/bundle dist/cline-mcp_*.mcpb
	$(GO) run ./packaging/mcpb -version $(VERSION) -out dist/bundle >/dev/null
	@set -e; for d in dist/bundle/*/; do p=$$(basename $$d); \
	  node $(MCPB) validate $$d/manifest.json; \
	  node $(MCPB) pack $$d dist/cline-mcp_$$p.mcpb >/dev/null; echo "dist/cline-mcp_$$p.mcpb"; \
	done
	$(GO) run ./packaging/mcpb -version $(VERSION) -out dist/bundle -server-json dist/server.json
	CLINE_MCP_SERVER_JSON=$(CURDIR)/dist/server.json $(GO) test -count=1 -run '^TestServerJSONValidates$$' ./packaging/

$(MCPB):
	npm install --prefix $(CACHE_DIR)/mcpb-$(MCPB_VERSION) --no-audit --no-fund --loglevel=error \
	  @anthropic-ai/mcpb@$(MCPB_VERSION)

clean:
	rm -rf $(BIN) dist images/fake-cline/fake-cline images/egress/cline-mcp-egress images/cline/cline-cli-linux-*.tgz
