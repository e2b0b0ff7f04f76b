package wasm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
	wasmworker "ceval.dev/ceval/wasm/worker"

	"ceval.dev/ceval/wasm/wire"
)

var (
	// standin is testdata/standin built for wasip1: a tiny shell that stands in for the
	// toolbox, so every attack runs even before the real toolbox lands.
	standin   *taskModule
	testCache string // compilation cache root shared by the tests
	testDir   string // removed when the tests end
)

func TestMain(m *testing.M) {
	// The test binary is its own worker, as cmd/ceval is ceval's: only the tests link both
	// sides (the package itself never imports wasm/worker).
	if len(os.Args) > 3 && os.Args[1] == wasmworker.Command && os.Args[3] == cacheWriteProbe {
		probeCacheWrites() // keep_test.go: what an escaped guest would try
	}
	if len(os.Args) > 1 && os.Args[1] == wasmworker.Command {
		wasmworker.Main()
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ceval-wasm-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	testDir = dir
	out := filepath.Join(dir, "standin.wasm")
	build := exec.Command("go", "build", "-o", out, "./testdata/standin")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build testdata/standin: %v\n%s", err, b)
		return 1
	}
	data, err := os.ReadFile(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	standin = newTaskModule(data)
	testCache = filepath.Join(dir, "cache")
	if err := os.Mkdir(testCache, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// toolboxes are the modules run_command attacks run against: the stand-in always, the
// real toolbox once it is embedded.
func toolboxes() map[string]*taskModule {
	tb := map[string]*taskModule{"standin": standin}
	if HasToolbox() {
		tb["toolbox"] = defaultToolbox()
	}
	return tb
}

// newExecutor starts an Executor on the shared test cache, running tb for run_command.
func newExecutor(t testing.TB, tb *taskModule, opts Options) *Executor {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = testCache
	}
	if tb != nil && tb != defaultToolbox() {
		opts.noPreload = true
	}
	e, err := NewExecutor(opts)
	if err != nil {
		t.Fatal(err)
	}
	if tb != nil {
		e.toolbox = tb
		if tb != defaultToolbox() {
			e.lite = nil // a stand-in runs every script
		}
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// canary is a secret in a host file outside every workspace; no output may ever hold it.
type canary struct {
	secret string
	path   string
}

var (
	canaryOnce sync.Once
	theCanary  canary
)

func hostCanary(t testing.TB) canary {
	canaryOnce.Do(func() {
		b := make([]byte, 12)
		rand.Read(b)
		dir, err := os.MkdirTemp(testDir, "canary")
		if err != nil {
			t.Fatal(err)
		}
		theCanary = canary{secret: "CANARY-" + hex.EncodeToString(b), path: filepath.Join(dir, "secret.txt")}
		if err := os.WriteFile(theCanary.path, []byte(theCanary.secret+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	return theCanary
}

// hostSecrets are strings that show a host file was read.
func (c canary) assertAbsent(t *testing.T, what string, outputs ...[]byte) {
	t.Helper()
	for _, out := range outputs {
		for _, secret := range []string{c.secret, "root:x:0:0"} {
			if strings.Contains(string(out), secret) {
				t.Errorf("%s: output holds host content %q:\n%s", what, secret, out)
			}
		}
	}
}

// workspace builds a workspace from files (path → content; content "->X" makes a symlink
// to X) plus setup, and snapshots it.
func workspace(t testing.TB, files map[string]string, setup func(src string)) *snapshot.Snapshot {
	t.Helper()
	parent := t.TempDir()
	src := filepath.Join(parent, "ws")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if setup != nil {
		setup(src)
	}
	s, err := snapshot.Take(src, filepath.Join(parent, "snap"), snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func command(script string) *task.Criterion {
	return &task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: script, Execution: task.Execution{Timeout: 20 * time.Second}}}
}

// runScript runs script as a run_command over s and returns the reply, failing the test on
// an executor error.
func runScript(t *testing.T, e *Executor, c *task.Criterion, s *snapshot.Snapshot, ref *task.Dir) (*wire.RunReply, float64, string) {
	t.Helper()
	r, score, details, err := replyParts(e.execute(context.Background(), c, s, ref))
	label := c.Type // a pytest criterion's; a run_command's is its command
	if sc, ok := c.Spec.(*task.RunCommandSpec); ok {
		label = sc.Command
	}
	if err != nil {
		t.Fatalf("%q: %v", label, err)
	}
	if r == nil {
		r = &wire.RunReply{}
	}
	t.Logf("%q: score %v, wall %v, details %.300s", label, score, r.Wall, details)
	return r, score, details
}

// openRef opens dir as a task's reference directory, as task.Load does.
func openRef(t *testing.T, dir string) *task.Dir {
	t.Helper()
	d, err := task.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// scoreParts and replyParts split a grader.Scored for tests that check its score and details.
func scoreParts(sc grader.Scored, err error) (float64, string, error) {
	return sc.Score, sc.Details, err
}

func replyParts(r *wire.RunReply, sc grader.Scored, err error) (*wire.RunReply, float64, string, error) {
	return r, sc.Score, sc.Details, err
}
