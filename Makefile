# ceval — build, test and demo. Everything a fresh Debian machine with Go needs is installed
# by the `setup` target (apt packages) and started on a private socket (containerd).

GO        ?= go
BIN       ?= bin/ceval
CTRD_DIR  ?= /tmp/ceval-containerd
CTRD_SOCK := $(CTRD_DIR)/containerd.sock
# Fuzz budgets are execution counts (-fuzztime Nx), never durations: a duration races Go's
# fuzz coordinator at its deadline (golang/go#75804, fixed in Go 1.27, not in 1.26) and fails
# the target with a bare "context deadline exceeded" and no failing input. FUZZSCALE (an
# integer) multiplies every target's count; FUZZFLAGS adds go test flags.
FUZZSCALE ?= 1
FUZZFLAGS ?=
# fuzz-target PKG,NAME,EXECS: the target's seed corpus (f.Add and testdata/fuzz) as a plain
# test, then EXECS x FUZZSCALE fuzz executions.
fuzz-target = $(GO) test -count=1 -run '^$(2)$$' $(1) && \
	$(GO) test -run '^$$' -fuzz '^$(2)$$' -fuzztime $$(($(3) * $(FUZZSCALE)))x $(FUZZFLAGS) $(1)
export CEVAL_CONTAINERD_ADDRESS ?= $(CTRD_SOCK)

.PHONY: all build test unit lint demo bench setup containerd-up containerd-down fuzz setup-rootless rootless-down

all: build

build:
	$(GO) build -o $(BIN) ./cmd/ceval

# setup installs containerd, runc and busybox-static (apt, as root) if missing, and starts a
# private containerd whose socket, root and state live under $(CTRD_DIR).
setup:
	scripts/containerd.sh install
	scripts/containerd.sh start $(CTRD_DIR) >/dev/null

containerd-up: setup

# setup-rootless (as root): rootlesskit and uidmap from Debian, the user ROOTLESS_USER (created
# if missing) with a subordinate ID range for per-run slices, and containerd inside rootlesskit
# as that user, socket $(ROOTLESS_DIR)/containerd.sock. rootless-down stops it by PID.
ROOTLESS_USER ?= ceval-rootless
ROOTLESS_DIR  ?= /tmp/ceval-rootless-$(ROOTLESS_USER)
setup-rootless:
	scripts/containerd.sh rootless-start $(ROOTLESS_USER) $(ROOTLESS_DIR)

rootless-down:
	scripts/containerd.sh rootless-stop $(ROOTLESS_USER) $(ROOTLESS_DIR)

containerd-down:
	scripts/containerd.sh stop $(CTRD_DIR)

# test runs the whole suite: unit tests, integration tests against the private containerd
# (CI=true turns a missing daemon into a failure), and a short fuzz of every fuzz target.
test: setup lint
	$(GO) test -count=1 ./...
	$(MAKE) fuzz

# unit runs what needs no daemon (integration tests skip outside CI).
unit:
	CEVAL_CONTAINERD_ADDRESS=/nonexistent $(GO) test -count=1 ./...

# fuzz: each budget is a few seconds of fuzzing on this 2-core machine (4-60k execs/s measured).
fuzz:
	$(call fuzz-target,./task,FuzzParse,20000)
	$(call fuzz-target,./bundle,FuzzManifest,100000)
	$(MAKE) fuzz-mockd

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum not tidy: run go mod tidy"; exit 1; }

# demo builds ceval, the default image and the agent image (the pinned real Claude Code and
# Codex CLIs from the npm registry, cached in ~/.cache/ceval), runs every example end to end
# in its sandbox (the real-CLI ones offline, their model replayed by the gateway) and prints
# the table; then grades examples/hello offline, solved and empty.
demo: setup build
	$(BIN) doctor
	$(BIN) images build-default
	$(BIN) images build-agent
	$(BIN) run examples/*/task.yaml
	@echo "== ceval grade examples/hello --workspace examples/hello/solved (offline, no container)"
	$(BIN) grade examples/hello/task.yaml --workspace examples/hello/solved
	@echo "== the same on an empty workspace: FAILURE, exit 1"
	@d=$$(mktemp -d); $(BIN) grade examples/hello/task.yaml --workspace $$d; rc=$$?; rmdir $$d; test $$rc -eq 1

# bench: ceval run end to end beside ctr run (ratio of medians), 50 runs as an experiment at
# -j 1 and -j 2 beside 50 ctr runs (per-run time, peak RSS), a protected mock's round trip
# from inside a container beside /bin/true (p50/p99, calls/s), then the Go benchmarks (the model
# gateway's per-call p50/p99 in forward and replay mode beside a direct call to a local fake provider).
# The path shape (100,000 empty files, 255-byte names, 64 deep): `ceval grade` of it (time, peak
# RSS; target 20 s and 300 MB) and the snapshot's Take + manifest of it (manifest size, peak RSS).
bench: setup build
	BIN=$(BIN) scripts/bench-run.sh
	BIN=$(BIN) scripts/bench-experiment.sh
	BIN=$(BIN) GO=$(GO) scripts/bench-mockd.sh
	BIN=$(BIN) scripts/bench-pathshape.sh
	$(GO) test -run '^$$' -bench 'BenchmarkTake$$' -benchtime 5x ./snapshot/
	$(GO) test -run '^$$' -bench 'BenchmarkTakePathShape' -benchtime 1x ./snapshot/
	$(GO) test -run '^$$' -bench 'RoundTrip|ClientExec' -benchtime 500x ./mockd/
	$(GO) test -run '^$$' -bench 'Gateway' -benchtime 2000x -count=1 ./gateway/

-include mk/*.mk
