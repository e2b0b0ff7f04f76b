# wasm: benchmarks of the WASM sandbox. `make bench` runs one run_command criterion warm
# (worker and compiled module reused), cold (a new worker process loading the module from the
# on-disk compilation cache) and natively under `sh -c`, printed as ratios (targets: warm
# within 10x of native, cold under 250 ms); then the price of WithCloseOnContextDone on a
# CPU-bound guest (on/off).

GO ?= go
WASM_BENCHTIME ?= 20x

.PHONY: bench bench-wasm

bench: bench-wasm

bench-wasm:
	$(GO) test -run '^$$' -bench '^BenchmarkRunCommand$$' -benchtime $(WASM_BENCHTIME) -count=1 ./wasm
	$(GO) test -run '^$$' -bench '^BenchmarkCloseOnContextDone$$' -benchtime 3x -count=1 ./wasm

# Python in the sandbox (needs the pinned CPython, fetched on first use): python3 -c warm
# and cold beside the host's python3 (target: warm under 150 ms). The 20-test pytest
# criterion beside native pytest is a row of make bench's table (scripts/bench-pytest.sh).
bench: bench-python

.PHONY: bench-python
bench-python:
	$(GO) test -run '^$$' -bench '^BenchmarkPython$$' -benchtime 15x -count=1 ./wasm
