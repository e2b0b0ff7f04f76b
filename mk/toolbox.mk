# ceval-toolbox: the WASI shell and commands that run_command criteria run, committed at
# $(TOOLBOX_WASM) and embedded by package wasm so that a plain `go build ./cmd/ceval` works.
# Everything that changes its bytes is pinned here; CI runs `make check-toolbox`. Run from
# the module root.

GO ?= go
TOOLBOX_WASM := wasm/toolbox.wasm
TOOLBOX_TOOLCHAIN := go1.26.8
# A clean, fixed environment: no cgo, no user GOFLAGS, experiments, FIPS module or go.work,
# and the exact toolchain (bump it together with go.mod's go line, then `make toolbox`).
TOOLBOX_GOENV := CGO_ENABLED=0 GOOS=wasip1 GOARCH=wasm GOFLAGS=-mod=readonly \
	GOEXPERIMENT= GOFIPS140=off GOWORK=off GOTOOLCHAIN=$(TOOLBOX_TOOLCHAIN)
TOOLBOX_BUILDFLAGS := -trimpath -buildvcs=false -ldflags='-s -w -buildid='

.PHONY: toolbox check-toolbox

toolbox:
	$(TOOLBOX_GOENV) $(GO) build $(TOOLBOX_BUILDFLAGS) -o $(TOOLBOX_WASM) ./cmd/ceval-toolbox

check-toolbox:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(TOOLBOX_GOENV) $(GO) build $(TOOLBOX_BUILDFLAGS) -o "$$tmp/toolbox.wasm" ./cmd/ceval-toolbox && \
	if ! cmp -s "$$tmp/toolbox.wasm" $(TOOLBOX_WASM); then \
		echo "check-toolbox: $(TOOLBOX_WASM) is not the build of ./cmd/ceval-toolbox;" \
			"run make toolbox and commit $(TOOLBOX_WASM)" >&2; \
		exit 1; \
	fi
