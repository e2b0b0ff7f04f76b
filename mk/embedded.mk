# The five static programs ceval embeds, committed in package internal/embedded so that a
# plain `go build ./cmd/ceval` works:
#   ceval-init    PID 1 of every agent container
#   ceval-mock    the protected mocks' client in the container
#   ceval-probe   the agent of the selftest attack kernel-syscalls
#   ceval-toolbox (toolbox.wasm) the WASI shell and commands of run_command
#   ceval-toolbox-lite (toolbox-lite.wasm) the small toolbox: the common commands, no shell
#     parser (-tags toolboxlite links only cmds.LiteNames), for the scripts the host finds in it
# One recipe builds them all, in one pinned environment: everything that changes their bytes
# is here. `make embedded` rebuilds them (commit the result); `make check-embedded` (run by
# `make test`) rebuilds each into a temporary directory and fails when a committed binary
# differs from what its sources build. Run from the module root.

GO ?= go
# The exact toolchain (GOTOOLCHAIN fetches it if the local go differs); bump it together with
# go.mod's go line, then `make embedded`.
EMBED_TOOLCHAIN := go1.26.8
# A clean, fixed environment: no cgo (images may lack libc), no user GOFLAGS, experiments,
# FIPS module or go.work.
EMBED_GOENV := CGO_ENABLED=0 GOFLAGS=-mod=readonly GOEXPERIMENT= GOFIPS140=off GOWORK=off \
	GOTOOLCHAIN=$(EMBED_TOOLCHAIN)
EMBED_LINUX := GOOS=linux GOARCH=amd64 GOAMD64=v1
EMBED_WASI := GOOS=wasip1 GOARCH=wasm
EMBED_BUILDFLAGS := -trimpath -buildvcs=false -ldflags='-s -w -buildid='

EMBED_DIR := internal/embedded
INIT_BIN := $(EMBED_DIR)/ceval-init
MOCKCLIENT_BIN := $(EMBED_DIR)/ceval-mock
PROBE_BIN := $(EMBED_DIR)/ceval-probe
TOOLBOX_WASM := $(EMBED_DIR)/toolbox.wasm
TOOLBOX_LITE_WASM := $(EMBED_DIR)/toolbox-lite.wasm

# embed-build PROGRAM,OUT,PLATFORM: the one build recipe of an embedded program. The toolboxes'
# data segments are then merged (internal/wasmdata: Go's linker writes 84,507, which wazero
# evaluated one by one on every run).
embed-build = $(EMBED_GOENV) $(3) $(GO) build $(EMBED_BUILDFLAGS) \
	$(if $(filter ceval-toolbox-lite,$(1)),-tags toolboxlite) -o $(2) ./cmd/$(1) \
	$(if $(filter ceval-toolbox ceval-toolbox-lite,$(1)),&& $(EMBED_GOENV) $(GO) run ./internal/wasmdata/mergedata $(2))
# embed-check PROGRAM,COMMITTED,PLATFORM: rebuild into a temporary directory and compare.
embed-check = tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(call embed-build,$(1),"$$tmp/$(1)",$(3)) && \
	if ! cmp -s "$$tmp/$(1)" $(2); then \
		echo "check-embedded: $(2) is not the build of ./cmd/$(1); run 'make embedded' and commit it" >&2; \
		exit 1; \
	fi

.PHONY: embedded check-embedded init mockclient probe toolbox toolbox-lite

embedded: init mockclient probe toolbox toolbox-lite

init:
	$(call embed-build,ceval-init,$(INIT_BIN),$(EMBED_LINUX))
mockclient:
	$(call embed-build,ceval-mock,$(MOCKCLIENT_BIN),$(EMBED_LINUX))
probe:
	$(call embed-build,ceval-probe,$(PROBE_BIN),$(EMBED_LINUX))
toolbox:
	$(call embed-build,ceval-toolbox,$(TOOLBOX_WASM),$(EMBED_WASI))
toolbox-lite:
	$(call embed-build,ceval-toolbox-lite,$(TOOLBOX_LITE_WASM),$(EMBED_WASI))

check-embedded:
	@$(call embed-check,ceval-init,$(INIT_BIN),$(EMBED_LINUX))
	@$(call embed-check,ceval-mock,$(MOCKCLIENT_BIN),$(EMBED_LINUX))
	@$(call embed-check,ceval-probe,$(PROBE_BIN),$(EMBED_LINUX))
	@$(call embed-check,ceval-toolbox,$(TOOLBOX_WASM),$(EMBED_WASI))
	@$(call embed-check,ceval-toolbox-lite,$(TOOLBOX_LITE_WASM),$(EMBED_WASI))
