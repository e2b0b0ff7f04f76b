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

# The release build strips the symbol table and DWARF (-s -w), as Debian builds ctr beside which
# the binary's size is measured (scripts/bench-startup.sh); stack traces and `go version -m` keep.
CEVAL_BUILDFLAGS := -trimpath -ldflags='-s -w'

build:
	$(GO) build $(CEVAL_BUILDFLAGS) -o $(BIN) ./cmd/ceval

# setup installs containerd, runc, busybox-static and the image builders mmdebstrap and buildah
# (apt, as root) if missing, and starts a
# private containerd whose socket, root and state live under $(CTRD_DIR).
setup:
	scripts/containerd.sh install
	scripts/containerd.sh start $(CTRD_DIR) >/dev/null
# -- a system containerd (issue 33): one line saying which daemon is used, and why --
	@scripts/system-containerd.sh $(CTRD_SOCK)

containerd-up: setup

# setup-rootless (as root): rootlesskit and uidmap from Debian, the user ROOTLESS_USER (created
# if missing) with a subordinate ID range for per-run slices, containerd inside rootlesskit
# as that user, socket $(ROOTLESS_DIR)/containerd.sock, and the strict limit mode's cgroup
# subtree (ceval rootless setup). rootless-down stops the daemon by PID.
ROOTLESS_USER ?= ceval-rootless
ROOTLESS_DIR  ?= /tmp/ceval-rootless-$(ROOTLESS_USER)
setup-rootless: build
	scripts/containerd.sh rootless-start $(ROOTLESS_USER) $(ROOTLESS_DIR)
	$(BIN) rootless setup --user $(ROOTLESS_USER) >/dev/null

rootless-down:
	scripts/containerd.sh rootless-stop $(ROOTLESS_USER) $(ROOTLESS_DIR)

containerd-down:
	scripts/containerd.sh stop $(CTRD_DIR)

# test runs the whole suite: the committed embedded binaries rebuilt and compared
# (mk/embedded.mk), unit tests, integration tests against the private containerd (CI=true
# turns a missing daemon into a failure), and a short fuzz of every fuzz target. A package's
# alarm is 60 min, not go test's 10: it catches a hang, never a slow host. wasm (CPython
# compiled cold) takes ~3 min on an idle 2-core machine and passed 10 min at load 24;
# cmd/ceval (the CLI end to end, every command against containerd) passed 30 min at load 60
# (stress-ng --cpu 4 --io 2 and seven builds beside it). Each test bounds its own waits.
test: setup lint check-embedded
	$(GO) test -count=1 -timeout 60m ./...
	$(MAKE) fuzz

# unit runs what needs no daemon (integration tests skip outside CI).
unit:
	CEVAL_CONTAINERD_ADDRESS=/nonexistent $(GO) test -count=1 ./...

# fuzz: each budget is a few seconds of fuzzing on this 2-core machine (4-60k execs/s measured).
fuzz:
	$(call fuzz-target,./task,FuzzParse,20000)
	$(call fuzz-target,./bundle,FuzzManifest,100000)
	$(call fuzz-target,./launcher,FuzzContainerID,50000)
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

# bench: one table (scripts/bench.sh) of every workload beside its anchor measured in the same
# run, with the ratio and the target: ceval run vs ctr run and its reap, an experiment at -j 1
# and -j 2 vs ctr run, a protected mock call vs /bin/true, a cold grade with run_command vs a
# static criterion, package images (build cold/cached, run in one vs ctr run), a 100 MB
# registry pull vs ctr images pull and a digest-pinned run with the registry stopped, the
# path shape of issue 14 (ceval grade: time and peak RSS), and the Go benchmarks (model gateway vs a direct call). The full output
# goes to a log whose path it prints.
bench: setup build
	BIN=$(BIN) GO=$(GO) scripts/bench.sh

-include mk/*.mk
