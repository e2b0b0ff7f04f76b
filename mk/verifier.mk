# verifier: `make bench` grades one sandbox: container criterion beside `ctr run --rm
# --seccomp` of the same command (target within 1.3x) and beside the same check in WASM.

.PHONY: bench bench-verifier

bench: bench-verifier

bench-verifier:
	BIN=$(BIN) scripts/bench-verifier.sh
