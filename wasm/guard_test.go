package wasm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

// CPython runs without wazero's context checks, so only the worker's exit stops a Python
// loop that never calls the host. Each attack here must end at its limit with the reply
// the sandbox itself wrote (the limit named, what was printed before kept, score 0), not a
// worker ceval had to kill runGrace later; the next criterion runs on a new worker.
func TestPythonThatNeverYieldsIsStoppedAtItsLimitByEndingTheWorker(t *testing.T) {
	e := pyExecutor(t, Options{MaxOutput: 64 << 10})
	s := workspace(t, map[string]string{"solution.py": goodSolution}, nil)
	dir, pt := pytestTask(t)
	if err := os.WriteFile(filepath.Join(dir, "tests", "test_spin.py"), []byte("def test_spin():\n    print('spinning', flush=True)\n    while True:\n        pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pt.Execution().Timeout = 20 * time.Second // the first pytest run also compiles pytest's packages, before its timer
	ok := command(`python3 -c 'print(6 * 7)'`)
	for _, tc := range []struct {
		name   string
		c      *task.Criterion
		limit  string
		stdout string // printed before the limit, kept in the reply
	}{
		{"loop in python -c", command(`echo before; python3 -c 'print("spinning", flush=True)
while True: pass'`), wire.LimitTimeout, "before\nspinning\n"},
		{"loop in a python pipeline stage", command(`python3 -c 'while True: pass' | cat; echo never`), wire.LimitTimeout, ""},
		{"flood from python", command(`python3 -c 'while True: print("x" * 1000)'`), wire.LimitStdout, "xxxx"},
		{"loop in a pytest test", pt, wire.LimitTimeout, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.c.Type == task.RunCommand && tc.limit == wire.LimitTimeout {
				// Only a loop meets its timeout, so only a loop gets a short one: the flood,
				// which the stdout cap stops (a count), once had 3 s too, and CPython's start
				// (~0.1 s of CPU) at a twentieth of a core (load 40 on 2 cores) nearly met it.
				tc.c.Execution().Timeout = 3 * time.Second
			}
			before := 0
			if e.w != nil {
				before = e.w.hello.PID
			}
			r, score, details := runScript(t, e, tc.c, s, nil)
			if r.Limit != tc.limit || score != 0 || !strings.Contains(details, strings.SplitN(tc.limit, " ", 2)[0]) {
				t.Fatalf("limit %q, score %v, details %q: want the %s limit named by the sandbox", r.Limit, score, details, tc.limit)
			}
			if !r.WorkerExits || e.w != nil {
				t.Errorf("worker_exits %v, worker kept %v: the worker running an unstoppable guest must end", r.WorkerExits, e.w != nil)
			}
			if !strings.HasPrefix(string(r.Stdout), tc.stdout) {
				t.Errorf("stdout %.80q, want it to start with %q (what ran before the limit)", r.Stdout, tc.stdout)
			}
			r, score, details = runScript(t, e, ok, s, nil)
			if score != 1 || string(r.Stdout) != "42\n" || e.w.hello.PID == before {
				t.Errorf("next criterion: score %v, stdout %q, details %q, worker pid %d (was %d): want it run by a new worker", score, r.Stdout, details, e.w.hello.PID, before)
			}
		})
	}
}
