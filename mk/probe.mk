# ceval-probe: the static agent of the selftest attack kernel-syscalls, committed at
# $(PROBE_BIN) and embedded by package selftest/probebin so that a plain `go build ./cmd/ceval`
# works. It is built exactly like ceval-init (mk/init.mk's pinned environment and flags); CI
# runs `make check-probe`.

PROBE_BIN := selftest/probebin/ceval-probe

.PHONY: probe check-probe

probe:
	$(INIT_GOENV) $(GO) build $(INIT_BUILDFLAGS) -o $(PROBE_BIN) ./cmd/ceval-probe

check-probe:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(INIT_GOENV) $(GO) build $(INIT_BUILDFLAGS) -o "$$tmp/ceval-probe" ./cmd/ceval-probe && \
	if ! cmp -s "$$tmp/ceval-probe" $(PROBE_BIN); then \
		echo "check-probe: $(PROBE_BIN) is not the build of ./cmd/ceval-probe;" \
			"run 'make probe' and commit $(PROBE_BIN)" >&2; \
		exit 1; \
	fi
