package selftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"ceval.dev/ceval/internal/tempdir"
)

// Loader attacks play a hostile task or experiment author: no agent runs. Each writes
// files and names one for `ceval validate`, which runs as a child process so its time
// and peak memory are its own. It is blocked when validate refuses the file with the
// expected problem, quickly, in little memory, and quotes nothing of the canary (which
// sits in host files outside the experiment).
type loaderAttack struct {
	name, tried string
	write       func(dir, canary string) (string, error) // returns the file to validate
	want        string                                   // in the problem validate must report
}

// Bounds a hostile file's validation must stay within (measured: tens of milliseconds and
// 10-40 MB over the binary's own floor). The time bound is generous because the host may be
// busy. The memory bound is over the floor: the peak RSS of the same binary validating a
// trivial task, measured in the same run, since what the binary links (its size) moves the
// floor of every process and says nothing of what a hostile file costs.
const (
	loaderMaxGrowth  = 72 << 20
	loaderMaxSeconds = 5.0
	loaderHang       = 60 * time.Second // a validate still running then is killed: a breach
)

var loaderAttacks = []loaderAttack{
	{"load-experiment-dotdot", "an experiment names a task file outside its directory with ..",
		experiment(`tasks: ["../host/task.yaml"]`), "leaves the experiment file's directory"},
	{"load-experiment-usr-glob", "an experiment globs ../../../../../../usr/*/*/*/*, reading every file it matches",
		experiment(`tasks: ["../../../../../../usr/*/*/*/*"]`), "leaves the experiment file's directory"},
	{"load-experiment-rootlink", "an experiment reaches a host file through a shipped symlink rootlink -> /",
		rootlink, "is a symlink that leaves the experiment file's directory"},
	{"load-experiment-symlinked-glob", "an experiment's glob walks through a symlink to a host directory",
		symlinkedGlob, "is a symlink that leaves the experiment file's directory"},
	{"load-experiment-fifo", "an experiment names a FIFO as a task, to hang validate",
		fifoTask, "is a FIFO, not a regular file"},
	{"load-experiment-quotes-file", "an experiment globs a non-task file (like /etc/shadow) so that its keys are echoed as unknown fields",
		notATask, "not a task file"},
	{"load-experiment-hardlink", "an experiment ships a hard link to a host task file holding the canary",
		hardLink, "hard links"},
	{"load-alias-chain-defaults", "an alias chain of depth 24 in an experiment's defaults, merged with a variant's (4.9 GB at depth 22)",
		aliasChain("defaults", 24), "this alias takes the file past"},
	{"load-alias-chain-variants", "an alias chain of depth 24 anchored in a variant and merged under defaults",
		aliasChain("variants", 24), "this alias takes the file past"},
	{"load-criteria-alias-bomb", "a 70 KiB task whose criteria alias a criterion whose includes alias a list: 10^8 strings",
		criteriaBomb, "this alias takes the file past"},
	{"load-criteria-500k-aliases", "a task whose criteria list is 500000 aliases",
		manyAliases, "too much YAML structure"},
}

// hostTask is a valid task in the host directory outside the experiment, the canary in its
// prompt and as a key the task decoder would quote as an unknown field.
func hostTask(dir, canary string) (string, error) {
	p := filepath.Join(dir, "host", "task.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	doc := fmt.Sprintf("task_id: host\ninitial_prompt: %s\nsuccess_criteria: [{type: file_exists, path: x}]\n%s: 1\n", canary, canary)
	return p, os.WriteFile(p, []byte(doc), 0o644)
}

// writeExperiment writes dir/exp/exp.yaml with tasks and the host task beside exp/.
func writeExperiment(dir, canary, body string) (string, error) {
	if _, err := hostTask(dir, canary); err != nil {
		return "", err
	}
	p := filepath.Join(dir, "exp", "exp.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	return p, os.WriteFile(p, []byte("experiment_id: hostile\n"+body+"\n"), 0o644)
}

func experiment(body string) func(dir, canary string) (string, error) {
	return func(dir, canary string) (string, error) { return writeExperiment(dir, canary, body) }
}

func rootlink(dir, canary string) (string, error) {
	host := filepath.Join(dir, "host", "task.yaml")
	p, err := writeExperiment(dir, canary, fmt.Sprintf("tasks: [%q]", "rootlink"+host))
	if err != nil {
		return "", err
	}
	return p, os.Symlink("/", filepath.Join(dir, "exp", "rootlink"))
}

func symlinkedGlob(dir, canary string) (string, error) {
	p, err := writeExperiment(dir, canary, `tasks: ["tasks/*/task.yaml"]`)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "exp", "tasks"), 0o755); err != nil {
		return "", err
	}
	return p, os.Symlink(filepath.Join(dir, "host"), filepath.Join(dir, "exp", "tasks", "shared"))
}

func fifoTask(dir, canary string) (string, error) {
	p, err := writeExperiment(dir, canary, `tasks: ["task.yaml"]`)
	if err != nil {
		return "", err
	}
	return p, syscall.Mkfifo(filepath.Join(dir, "exp", "task.yaml"), 0o644)
}

func notATask(dir, canary string) (string, error) {
	p, err := writeExperiment(dir, canary, `tasks: ["*.yaml"]`)
	if err != nil {
		return "", err
	}
	shadow := fmt.Sprintf("root: %s\n%s: x\n", canary, canary)
	return p, os.WriteFile(filepath.Join(dir, "exp", "shadow.yaml"), []byte(shadow), 0o644)
}

func hardLink(dir, canary string) (string, error) {
	p, err := writeExperiment(dir, canary, `tasks: ["linked.yaml"]`)
	if err != nil {
		return "", err
	}
	return p, os.Link(filepath.Join(dir, "host", "task.yaml"), filepath.Join(dir, "exp", "linked.yaml"))
}

// aliasChain anchors a0..a<depth>, each a mapping {l, r} of two aliases of the one before,
// and gives the top as sandbox in defaults and in a variant, so merging them walks both
// sides of every alias (2^depth mappings). where says which layer defines the anchors.
func aliasChain(where string, depth int) func(dir, canary string) (string, error) {
	return func(dir, canary string) (string, error) {
		var chain strings.Builder
		chain.WriteString("[&a0 {l: 1, r: 1}")
		for i := 1; i <= depth; i++ {
			fmt.Fprintf(&chain, ", &a%d {l: *a%d, r: *a%d}", i, i-1, i-1)
		}
		chain.WriteString("]")
		top := fmt.Sprintf("*a%d", depth)
		body := "tasks: [task.yaml]\n"
		if where == "defaults" {
			body += fmt.Sprintf("defaults:\n  tags: %s\n  sandbox: %s\nvariants:\n  - {variant_id: v, sandbox: %s}", chain.String(), top, top)
		} else {
			body += fmt.Sprintf("variants:\n  - {variant_id: v, tags: %s, sandbox: %s}\ndefaults:\n  sandbox: %s", chain.String(), top, top)
		}
		p, err := writeExperiment(dir, canary, body)
		if err != nil {
			return "", err
		}
		task := "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: x}]\n"
		return p, os.WriteFile(filepath.Join(dir, "exp", "task.yaml"), []byte(task), 0o644)
	}
}

func writeTaskFile(dir, doc string) (string, error) {
	p := filepath.Join(dir, "task.yaml")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return p, os.WriteFile(p, []byte(doc), 0o644)
}

func criteriaBomb(dir, _ string) (string, error) {
	var b strings.Builder
	b.WriteString("task_id: bomb\ninitial_prompt: p\nsuccess_criteria: [&c {type: file_contains, path: a.txt, includes: &s [")
	b.WriteString(strings.Repeat("x, ", 9999))
	b.WriteString("x]},\n  ")
	b.WriteString(strings.Repeat("*c, ", 9999))
	b.WriteString("*c]\n")
	return writeTaskFile(dir, b.String())
}

func manyAliases(dir, _ string) (string, error) {
	doc := "task_id: many\ninitial_prompt: p\nsuccess_criteria:\n  - &c {type: file_exists, path: a}\n" + strings.Repeat("  - *c\n", 500000)
	return writeTaskFile(dir, doc)
}

// validation is one child `ceval validate`, measured.
type validation struct {
	code    int
	output  string
	seconds float64
	maxRSS  int64 // bytes
	hung    bool
}

// validate runs `bin validate file` in a child and measures its wall time and peak RSS
// (getrusage of the child); one still running after loaderHang is killed.
func validate(ctx context.Context, bin, file string) (validation, error) {
	ctx, cancel := context.WithTimeout(ctx, loaderHang)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "validate", file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	v := validation{output: out.String(), seconds: time.Since(start).Seconds(), hung: ctx.Err() != nil}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return v, err
	}
	v.code = cmd.ProcessState.ExitCode()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		v.maxRSS = ru.Maxrss << 10 // KiB on Linux
	}
	return v, nil
}

// runLoaderAttack lays out attack a under dir and validates it with bin.
func runLoaderAttack(ctx context.Context, a loaderAttack, bin, dir string) Row {
	start := time.Now()
	row := Row{Name: a.name, Tried: a.tried}
	done := func(out Outcome, score float64, detail string) Row {
		row.Outcome, row.Score, row.Detail = out, score, detail
		row.Seconds = time.Since(start).Seconds()
		return row
	}
	canary := NewCanary()
	file, err := a.write(dir, canary)
	if err != nil {
		return done(Errored, 0, "preparing the attack: "+err.Error())
	}
	floor, err := validateFloor(ctx, bin)
	if err != nil {
		return done(Errored, 0, err.Error())
	}
	v, err := validate(ctx, bin, file)
	if err != nil {
		return done(Errored, 0, fmt.Sprintf("running %s validate: %v", bin, err))
	}
	if ctx.Err() != nil {
		return done(Errored, 0, "selftest interrupted")
	}
	return done(judgeLoader(a, v, canary, floor))
}

// floors caches validateFloor by binary.
var floors sync.Map // bin -> int64

// validateFloor is the peak RSS of bin validating a trivial valid task: the floor the memory
// bound of a hostile file's validation is counted from.
func validateFloor(ctx context.Context, bin string) (int64, error) {
	if f, ok := floors.Load(bin); ok {
		return f.(int64), nil
	}
	dir, err := tempdir.Make("", "ceval-loader-floor-")
	if err != nil {
		return 0, err
	}
	defer tempdir.Remove(dir)
	file := filepath.Join(dir, "task.yaml")
	doc := "task_id: floor\ninitial_prompt: x\nagent: {type: command, command: [\"true\"]}\nsuccess_criteria: [{type: file_exists, path: x}]\n"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		return 0, err
	}
	v, err := validate(ctx, bin, file)
	if err != nil || v.code != 0 {
		return 0, fmt.Errorf("measuring %s validate of a trivial task (the memory floor): exit %d, %v: %s", bin, v.code, err, clip(v.output, 200))
	}
	floors.Store(bin, v.maxRSS)
	return v.maxRSS, nil
}

// judgeLoader classifies one validation of a hostile file.
func judgeLoader(a loaderAttack, v validation, canary string, floor int64) (Outcome, float64, string) {
	measured := fmt.Sprintf("%.2f s, peak RSS %d MiB", v.seconds, v.maxRSS>>20)
	switch {
	case v.hung:
		return Breach, 1, fmt.Sprintf("validate was still running after %s and was killed", loaderHang)
	case strings.Contains(v.output, canary):
		return Breach, 1, "validate quoted the canary from a host file: " + clip(v.output, 300)
	case v.code == 0:
		return Breach, 1, "validate accepted the file (" + measured + ")"
	case v.maxRSS > floor+loaderMaxGrowth || v.seconds > loaderMaxSeconds:
		return Breach, 1, fmt.Sprintf("validate took %s; the bound is %.0f s and %d MiB (a trivial task's %d MiB + %d MiB)", measured, loaderMaxSeconds, (floor+loaderMaxGrowth)>>20, floor>>20, loaderMaxGrowth>>20)
	case v.code != 2 || !strings.Contains(v.output, a.want):
		return Errored, 0, fmt.Sprintf("validate exited %d without the expected problem (%q): %s", v.code, a.want, clip(v.output, 300))
	}
	return Blocked, 0, "refused in " + measured + ": " + clip(firstLine(v.output), 200)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// RunLoaderAttacks runs the loader attacks named (all when names is empty) against the
// ceval binary bin, each under a fresh directory in dir; for tests of the binary.
func RunLoaderAttacks(ctx context.Context, bin, dir string, names []string) ([]Row, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var rows []Row
	for _, a := range loaderAttacks {
		if len(names) > 0 && !want[a.name] {
			continue
		}
		delete(want, a.name)
		rows = append(rows, runLoaderAttack(ctx, a, bin, filepath.Join(dir, a.name)))
	}
	if len(want) > 0 {
		var unknown []string
		for n := range want {
			unknown = append(unknown, n)
		}
		return nil, &UnknownAttackError{unknown}
	}
	return rows, nil
}
