# Obversa — one target per habit; `make help` lists them.
GO      ?= go
# Debian's python3, which sees python3-grpcio, python3-grpc-tools and
# python3-protobuf; a python3 earlier on PATH (pyenv) usually does not.
PYTHON  ?= /usr/bin/python3
BIN     := bin
PKGS    := ./...
FUZZTIME ?= 20s

.PHONY: help build node-engine python-engine mermaid screenshot test test-short sim demo demo-review-loop demo-fix-until-green bench bench-scale bench-peers fuzz generate generate-check proto-check lint conformance clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

# The bundled plugins carry no symbol table, DWARF or build paths: about
# 30 % fewer bytes for every run to hash into its plugin cache
# (internal/testutil.PluginBuildFlags builds the tests' copies the same way).
PLUGIN_FLAGS := -trimpath -ldflags='-s -w'
# Every binary a run starts is linked statically, without cgo: a process
# started through the dynamic loader, libc and cgo's thread start costs
# 5-7 ms more CPU, and a run starts seven or more of them before its
# first dispatch (docs/decisions.md, "Before the first dispatch";
# internal/testutil.BuildBinaries builds the tests' copies the same way).
STATIC := CGO_ENABLED=0

build: ## Build obversa and the bundled plugins into bin/
	$(STATIC) $(GO) build -o $(BIN)/obversa ./cmd/obversa
	$(STATIC) $(GO) build $(PLUGIN_FLAGS) -o $(BIN)/mock-engine ./plugins/mock-engine
	$(STATIC) $(GO) build $(PLUGIN_FLAGS) -o $(BIN)/cmd-engine ./plugins/cmd-engine
	$(STATIC) $(GO) build $(PLUGIN_FLAGS) -o $(BIN)/guard ./examples/plugins/guard

node-engine: ## Install the JavaScript engine's npm packages and build bin/node-engine (node >= 20)
	cd examples/plugins/node-engine && npm ci --ignore-scripts --no-audit --no-fund && node build.js

python-engine: ## Build bin/python-engine (Debian packages python3-grpcio, python3-grpc-tools, python3-protobuf)
	$(PYTHON) examples/plugins/python-engine/build.py

mermaid: ## Fetch the pinned Mermaid build the run browser embeds and check its sha256 (npm)
	./scripts/vendor-mermaid.sh

screenshot: ## Rewrite docs/img/ui-run.png from the browser test (Debian's chromium)
	$(GO) test -count=1 -run '^TestUIBrowserApproval$$' ./cmd/obversa/ -screenshot

test: ## Run every test (crash matrices and 300 crash-simulation cases included)
	$(GO) test -count=1 -timeout 20m $(PKGS)
	$(GO) test -tags failpoints -count=1 -run '^TestSim$$' ./host/watchdog/
	$(GO) test -tags failpoints -count=1 -run '^TestSwapBeforeExecIsNotExecuted$$' ./plugin/
	$(GO) test -tags failpoints -count=1 -run '^TestArmed$$' ./internal/failpoint/

SIM_CASES ?= 10000
# The simulation runs in a PID namespace of its own where the machine
# allows one (unshare(1) as root): the watchdog's owner-marker scans of
# /proc then read the simulation's processes, not every process of a busy
# machine. Elsewhere it runs as it is.
SIM_NS = $(shell unshare --pid --fork --mount-proc true >/dev/null 2>&1 && echo unshare --pid --fork --mount-proc)
sim: ## Run the crash simulation: SIM_CASES seeded cases (default 10000); SEED=n runs one case
	$(SIM_NS) $(GO) test -tags failpoints -count=1 -timeout 60m -run '^TestSim$$' -v ./host/watchdog/ -sim.cases=$(SIM_CASES) $(if $(SEED),-sim.seed=$(SEED))

test-short: ## Run the tests, skipping the slowest crash matrices
	$(GO) test -short -count=1 $(PKGS)

demo: build ## Build, pin and run the quickstart graph on the mock engine
	$(BIN)/obversa plugin lock --upgrade examples/quickstart/run.hcl
	$(BIN)/obversa run --progress examples/quickstart/run.hcl

demo-review-loop: build ## Run examples/review-loop: a draft fails review in round 1 and passes in round 2 (mock engine)
	$(BIN)/obversa plugin lock --upgrade examples/review-loop/run.hcl
	$(BIN)/obversa run --progress examples/review-loop/run.hcl

demo-fix-until-green: build ## Run examples/fix-until-green: edit a Go package until `go test` passes
	$(BIN)/obversa plugin lock --upgrade examples/fix-until-green/run.hcl
	$(BIN)/obversa run --progress examples/fix-until-green/run.hcl

bench: ## Run the benchmarks and print one table, graph figures as ratios to floors measured in the same run
	$(GO) test -run '^$$' -bench . -count 1 ./store/ ./store/pgstore/ ./host/... ./internal/proc/ > bench.out 2>&1 || (cat bench.out; exit 1)
	$(GO) test -run '^$$' -bench '^Benchmark(Floor|EngineRun|Chain200|Chain200Guarded|FanOut200|DAG1000FanOut32|ForEach1000|Quickstart|PGChain200Run|PGDAG1000FanOut32|FloorAfter)$$' -benchtime 3x -count 1 ./cmd/obversa/ >> bench.out 2>&1 || (cat bench.out; exit 1)
	$(GO) test -run '^$$' -bench '^BenchmarkScale$$/^DAG10000$$' -benchtime 1x -count 1 -timeout 30m ./cmd/obversa/ >> bench.out 2>&1 || (cat bench.out; exit 1)
	$(GO) run ./internal/benchtable < bench.out

bench-scale: ## Run the scale benchmarks alone: a 10 000-node DAG and a 33 400-node DAG (a record of over 100 000 events)
	$(GO) test -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -count 1 -timeout 60m ./cmd/obversa/ > bench-scale.out 2>&1 || (cat bench-scale.out; exit 1)
	$(GO) run ./internal/benchtable < bench-scale.out

bench-peers: ## Chain200 and DAG1000 on the file store, on PostgreSQL and as DBOS workflows on the same PostgreSQL, with ratios (root; ~10 min)
	./scripts/bench-peers.sh

fuzz: ## Run every fuzz test for FUZZTIME each
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

generate: ## Regenerate the protocol code (pinned generator versions)
	./scripts/generate.sh

generate-check: ## Fail if the committed generated code differs from a fresh generation
	./scripts/generate-check.sh

conformance: build node-engine python-engine ## Run the plugin conformance kit on every bundled engine and the guard policy
	$(BIN)/obversa plugin conformance $(BIN)/mock-engine
	$(BIN)/obversa plugin conformance --config plugins/cmd-engine/testdata/conformance.json $(BIN)/cmd-engine
	$(BIN)/obversa plugin conformance $(BIN)/node-engine
	$(BIN)/obversa plugin conformance $(BIN)/python-engine
	$(BIN)/obversa plugin conformance --config examples/plugins/guard/conformance.json $(BIN)/guard

proto-check: ## Fail if the vendored .proto files in plugin/proto drift from what the Go side compiles against
	$(GO) test -count=1 -run '^TestVendoredProtos' ./plugin/

lint: ## gofmt and go vet, on Linux and as built for macOS
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet $(PKGS)
	GOOS=darwin $(GO) vet $(PKGS)

clean: ## Remove build output
	rm -rf $(BIN) bench.out bench-scale.out bench-peers.out
