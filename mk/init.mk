# ceval-init: the static PID 1 of every agent container, committed at $(INIT_BIN) and embedded
# by package launcher/initbin so that a plain `go build ./cmd/ceval` works. Everything that
# changes its bytes is pinned here; CI runs `make check-init`. Run from the module root.

GO ?= go
INIT_BIN := launcher/initbin/ceval-init
INIT_TOOLCHAIN := go1.26.8
# A clean, fixed environment: no cgo (images may lack libc), baseline amd64, no user GOFLAGS,
# experiments, FIPS module or go.work, and the exact toolchain (GOTOOLCHAIN fetches it if the
# local go differs; bump it together with go.mod's go line, then `make init`).
INIT_GOENV := CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOAMD64=v1 GOFLAGS=-mod=readonly \
	GOEXPERIMENT= GOFIPS140=off GOWORK=off GOTOOLCHAIN=$(INIT_TOOLCHAIN)
INIT_BUILDFLAGS := -trimpath -buildvcs=false -ldflags='-s -w -buildid='

.PHONY: init check-init

init:
	$(INIT_GOENV) $(GO) build $(INIT_BUILDFLAGS) -o $(INIT_BIN) ./cmd/ceval-init

check-init:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(INIT_GOENV) $(GO) build $(INIT_BUILDFLAGS) -o "$$tmp/ceval-init" ./cmd/ceval-init && \
	if ! cmp -s "$$tmp/ceval-init" $(INIT_BIN); then \
		echo "check-init: $(INIT_BIN) is not the build of ./cmd/ceval-init;" \
			"run 'make init' and commit $(INIT_BIN)" >&2; \
		exit 1; \
	fi
