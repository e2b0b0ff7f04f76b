# ceval-mock: the static client of protected mocks, committed at $(MOCKCLIENT_BIN) and embedded
# by package mockd/clientbin so that a plain `go build ./cmd/ceval` works. It is built exactly
# like ceval-init (mk/init.mk's pinned environment and flags); CI runs `make check-mockclient`.

MOCKCLIENT_BIN := mockd/clientbin/ceval-mock

.PHONY: mockclient check-mockclient fuzz-mockd

mockclient:
	$(INIT_GOENV) $(GO) build $(INIT_BUILDFLAGS) -o $(MOCKCLIENT_BIN) ./cmd/ceval-mock

check-mockclient:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(INIT_GOENV) $(GO) build $(INIT_BUILDFLAGS) -o "$$tmp/ceval-mock" ./cmd/ceval-mock && \
	if ! cmp -s "$$tmp/ceval-mock" $(MOCKCLIENT_BIN); then \
		echo "check-mockclient: $(MOCKCLIENT_BIN) is not the build of ./cmd/ceval-mock;" \
			"run 'make mockclient' and commit $(MOCKCLIENT_BIN)" >&2; \
		exit 1; \
	fi

# fuzz-mockd: the protocol decoder and the fixture parser, briefly (make fuzz runs them too;
# fuzz-target and the budgets are explained in the Makefile).
fuzz-mockd:
	$(call fuzz-target,./mockd,FuzzDecodeRequest,80000)
	$(call fuzz-target,./mockd/fixture,FuzzParseFixture,40000)

