package task

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ceval.dev/ceval/internal/testtree"
)

// canary stands for host content a hostile experiment tries to reach: no problem may quote it.
const canary = "CANARY-d1-7f3a"

// loadProblems loads the experiment dir/exp.yaml and returns its Problems, failing the test
// if it loads or fails otherwise, or if any problem quotes the canary.
func loadProblems(t *testing.T, dir string) Problems {
	t.Helper()
	_, err := LoadExperiment(filepath.Join(dir, "exp.yaml"), ExperimentOptions{})
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	if strings.Contains(err.Error(), canary) {
		t.Fatalf("a problem quotes content from outside the experiment:\n%v", err)
	}
	return ps
}

func wantProblem(t *testing.T, ps Problems, want string) {
	t.Helper()
	if !strings.Contains(ps.Error(), want) {
		t.Fatalf("want a problem with %q, got:\n%v", want, ps)
	}
}

// A valid task file outside the experiment's directory, with the canary in it: loading it
// would put host content into the experiment.
const outsideTask = "task_id: " + "outside\ninitial_prompt: " + canary + "\nsuccess_criteria: [{type: file_exists, path: x}]\n" + canary + ": 1\n"

func TestExperimentTaskPathsCannotLeaveTheExperimentDirectory(t *testing.T) {
	cases := []struct {
		name, pattern, want string
	}{
		{"dotdot", "../outside/task.yaml", `"../outside/task.yaml" leaves the experiment file's directory`},
		{"dotdot inside", "tasks/../../outside/task.yaml", `leaves the experiment file's directory`},
		{"dotdot glob", "../../../../../../usr/*/*/*/*", `leaves the experiment file's directory`},
		{"absolute", "/etc/shadow", `is absolute`},
		{"symlink to root, literal", "rootlink/etc/passwd", `"rootlink" is a symlink that leaves the experiment file's directory`},
		{"symlink to root, glob", "rootlink/*/*", `"rootlink" is a symlink that leaves the experiment file's directory`},
		{"symlink to root, reached by a glob", "*/etc/passwd", `"outlink" is a symlink that leaves the experiment file's directory`},
		{"symlink to an outside directory", "outlink/*.yaml", `"outlink" is a symlink that leaves the experiment file's directory`},
		{"symlink to an outside task file", "taskfile.yaml", `taskfile.yaml: a symlink that leaves the experiment file's directory`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top := t.TempDir()
			testtree.Write(t, top, map[string]string{"outside/task.yaml": outsideTask, "exp/tasks/a/task.yaml": taskA})
			dir := filepath.Join(top, "exp")
			symlink(t, "/", filepath.Join(dir, "rootlink"))
			symlink(t, filepath.Join(top, "outside"), filepath.Join(dir, "outlink"))
			symlink(t, filepath.Join(top, "outside/task.yaml"), filepath.Join(dir, "taskfile.yaml"))
			writeFile(t, filepath.Join(dir, "exp.yaml"), fmt.Sprintf("experiment_id: e\ntasks: [tasks/a/task.yaml, %q]\n", c.pattern))
			wantProblem(t, loadProblems(t, dir), c.want)
		})
	}
}

func TestExperimentSymlinkInsideItsDirectoryStillWorks(t *testing.T) {
	dir := testtree.New(t, map[string]string{"tasks/a/task.yaml": taskA, "exp.yaml": "experiment_id: e\ntasks: [alias/*/task.yaml]\n"})
	symlink(t, "tasks", filepath.Join(dir, "alias"))
	e, err := LoadExperiment(filepath.Join(dir, "exp.yaml"), ExperimentOptions{})
	if err != nil || len(e.Entries) != 1 || e.Entries[0].Task.ID != "a" {
		t.Fatalf("got %v %+v", err, e)
	}
}

func TestExperimentTaskThatIsAFIFOIsRefusedWithoutBlocking(t *testing.T) {
	for _, pattern := range []string{"fifo.yaml", "*.yaml"} {
		t.Run(pattern, func(t *testing.T) {
			dir := testtree.New(t, map[string]string{"exp.yaml": fmt.Sprintf("experiment_id: e\ntasks: [%q]\n", pattern)})
			if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
				t.Fatal(err)
			}
			// Before the fix this blocked in open(2) forever, with no writer on the FIFO.
			ps := loadProblems(t, dir)
			wantProblem(t, ps, "tasks[0]: fifo.yaml: is a FIFO, not a regular file")
		})
	}
}

func TestTaskFileThatIsAFIFOIsRefusedWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "task.yaml")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if IsExperiment(p) {
		t.Fatal("a FIFO is not an experiment")
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "is a FIFO, not a regular file") {
		t.Fatalf("got %v", err)
	}
}

func TestExperimentDoesNotQuoteAFileThatIsNotATask(t *testing.T) {
	cases := []struct{ name, content, want string }{
		// /etc/shadow-like: lines the YAML parser reads as keys, which the task decoder would
		// echo as unknown fields.
		{"mapping without task_id", canary + ": x\nroot: " + canary + "\n", "not a task file"},
		{"scalar", canary + "\n", "not a task file"},
		{"alias to an undefined anchor", "a: *" + canary + "\n", "secret.yaml: not valid YAML: yaml: unknown anchor referenced"},
		{"bad YAML", "a: [" + canary + "\n", "not valid YAML"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testtree.New(t, map[string]string{"secret.yaml": c.content, "exp.yaml": "experiment_id: e\ntasks: [\"*.yaml\"]\n"})
			ps := loadProblems(t, dir)
			wantProblem(t, ps, c.want)
		})
	}
}

func TestExperimentRefusesAHardLinkedTaskFile(t *testing.T) {
	outside := testtree.New(t, map[string]string{"task.yaml": outsideTask})
	dir := testtree.New(t, map[string]string{"exp.yaml": "experiment_id: e\ntasks: [linked.yaml]\n"})
	if err := os.Link(filepath.Join(outside, "task.yaml"), filepath.Join(dir, "linked.yaml")); err != nil {
		t.Skipf("no hard links across these temp dirs: %v", err)
	}
	wantProblem(t, loadProblems(t, dir), "tasks[0]: linked.yaml: has 2 hard links")
}

func TestExperimentGlobIsBoundedInMatchesAndEntries(t *testing.T) {
	t.Run("matches", func(t *testing.T) {
		dir := t.TempDir()
		for i := 0; i <= MaxTaskFiles; i++ {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("t%05d.yaml", i)), "")
		}
		writeFile(t, filepath.Join(dir, "exp.yaml"), "experiment_id: e\ntasks: [\"t*.yaml\"]\n")
		wantProblem(t, loadProblems(t, dir), fmt.Sprintf("exp.yaml:2:9: tasks[0]: the tasks list names more than %d files", MaxTaskFiles))
	})
	t.Run("entries", func(t *testing.T) {
		// Every directory entry a glob reads counts, matched or not: a wide tree that matches
		// nothing still stops at the bound instead of reading the disk.
		dir := t.TempDir()
		for i := range 300 {
			testtree.Write(t, dir, map[string]string{fmt.Sprintf("d%03d/x", i): ""})
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		g := &globber{root: root, deadline: time.Now().Add(time.Hour), maxEntries: 500}
		_, err = g.glob("*/*.yaml")
		var bound *globBoundError
		if !errors.As(err, &bound) || !strings.Contains(err.Error(), "more than 500 directory entries") {
			t.Fatalf("got %v", err)
		}
	})
}

// aliasChain returns a flow list defining anchors a0..a<depth>, each a mapping {l, r}
// holding two aliases of the one before: a<depth> expands to 2^depth mappings.
func aliasChain(depth int) string {
	var b strings.Builder
	b.WriteString("[&a0 {l: 1, r: 1}")
	for i := 1; i <= depth; i++ {
		fmt.Fprintf(&b, ", &a%d {l: *a%d, r: *a%d}", i, i-1, i-1)
	}
	b.WriteString("]")
	return b.String()
}

func TestExperimentAliasChainIsRefusedAtTheAlias(t *testing.T) {
	for _, depth := range []int{22, 24} {
		for _, where := range []string{"defaults", "variants"} {
			t.Run(fmt.Sprintf("%s depth %d", where, depth), func(t *testing.T) {
				// The chain's top is sandbox in two layers, so merging them walks both sides
				// of every alias: 2^depth merged mappings (13.8 s and 4.9 GB at depth 22,
				// out of memory at 24, before the budget).
				top := fmt.Sprintf("*a%d", depth)
				exp := "experiment_id: e\ntasks: [tasks/a/task.yaml]\n"
				if where == "defaults" {
					exp += "defaults:\n  tags: " + aliasChain(depth) + "\n  sandbox: " + top + "\nvariants:\n  - {variant_id: v, sandbox: " + top + "}\n"
				} else {
					// Anchors defined in a variant, used by defaults written after it.
					exp += "variants:\n  - {variant_id: v, tags: " + aliasChain(depth) + ", sandbox: " + top + "}\ndefaults:\n  sandbox: " + top + "\n"
				}
				dir := testtree.New(t, map[string]string{"tasks/a/task.yaml": taskA, "exp.yaml": exp})
				var before, after syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &before)
				ps := loadProblems(t, dir)
				syscall.Getrusage(syscall.RUSAGE_SELF, &after)
				wantProblem(t, ps, fmt.Sprintf("this alias takes the file past %d YAML nodes", MaxYAMLNodes))
				wantAtAlias(t, exp, ps[0])
				if grew := after.Maxrss - before.Maxrss; grew > 100<<10 { // KiB
					t.Errorf("peak RSS grew by %d MiB", grew>>10)
				}
			})
		}
	}
}

// criteriaBomb is a task of about 70 KiB whose criteria list aliases one criterion 10^4
// times, and that criterion's includes alias a list of 10^4 strings: 10^8 strings to decode
// (60 s and 3.3 GB before the budget, then "ok").
func criteriaBomb() string {
	var b strings.Builder
	b.WriteString("task_id: bomb\ninitial_prompt: p\nsuccess_criteria: [&c {type: file_contains, path: a.txt, includes: &s [")
	b.WriteString(strings.Repeat("x, ", 9999))
	b.WriteString("x]},\n  ")
	b.WriteString(strings.Repeat("*c, ", 9999))
	b.WriteString("*c]\n")
	return b.String()
}

func TestTaskCriteriaAliasBombIsRefusedAtTheAlias(t *testing.T) {
	doc := criteriaBomb()
	_, err := Parse("bomb.yaml", t.TempDir(), []byte(doc))
	var ps Problems
	if !errors.As(err, &ps) || !strings.Contains(err.Error(), "this alias takes the file past") {
		t.Fatalf("want the budget problem, got %v", err)
	}
	wantAtAlias(t, doc, ps[0])
}

func TestTaskWithHalfAMillionAliasesIsRefusedBeforeParsing(t *testing.T) {
	doc := "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - &c {type: file_exists, path: a}\n" +
		strings.Repeat("  - *c\n", 500000)
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	_, err := Parse("many.yaml", t.TempDir(), []byte(doc))
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if grew := after.Maxrss - before.Maxrss; grew > 50<<10 { // KiB; parsing it took 100 MB
		t.Errorf("peak RSS grew by %d MiB", grew>>10)
	}
	if err == nil || !strings.Contains(err.Error(), "many.yaml:49997:3: too much YAML structure") {
		t.Errorf("want the problem where the structure passes the budget, got %v", err)
	}
}

func TestAliasInsideTheNodeItNamesIsRefused(t *testing.T) {
	// In a free-form value the decoder would follow it forever.
	doc := "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {type: json_check, path: a.json, assertions: [{expression: a, expected: &a [*a]}]}\n"
	_, err := Parse("cycle.yaml", t.TempDir(), []byte(doc))
	var ps Problems
	if !errors.As(err, &ps) || !strings.Contains(err.Error(), "this alias stands inside the node it names") {
		t.Fatalf("got %v", err)
	}
	wantAtAlias(t, doc, ps[0])
}

func TestAliasesWithinTheBudgetStillWork(t *testing.T) {
	doc := "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - &c {type: file_exists, path: a.txt}\n  - *c\n"
	tk, err := Parse("ok.yaml", t.TempDir(), []byte(doc))
	if err != nil || len(tk.Criteria) != 2 {
		t.Fatalf("got %v %+v", err, tk)
	}
}

// wantAtAlias checks that p stands at an alias in doc.
func wantAtAlias(t *testing.T, doc string, p Problem) {
	t.Helper()
	lines := strings.Split(doc, "\n")
	if p.Line < 1 || p.Line > len(lines) || p.Column < 1 || !strings.HasPrefix(lines[p.Line-1][p.Column-1:], "*") {
		t.Fatalf("problem %v does not stand at an alias", p)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestJSONSchemaFileOfTinyItemsIsRefusedBeforeParsing(t *testing.T) {
	schema := "[" + strings.Repeat("1,", 2<<20-2) + "1]"
	doc := "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: json_check, path: a.json, json_schema: s.json}]\n"
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	_, err := Load(writeTask(t, doc, map[string]string{"s.json": schema}))
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if grew := after.Maxrss - before.Maxrss; grew > 50<<10 { // KiB; parsing it took 180 MB
		t.Errorf("peak RSS grew by %d MiB", grew>>10)
	}
	if err == nil || !strings.Contains(err.Error(), "schema file") || !strings.Contains(err.Error(), "too much YAML structure") {
		t.Errorf("got %v", err)
	}
}

// A criterion repeated by aliases names its schema file once per copy; the file is parsed
// once (10^4 copies of a 4 MiB schema would be parsed 10^4 times), and so is a mock fixture
// that several mocks share.
func TestMaterialNamedManyTimesIsParsedOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString("task_id: t\ninitial_prompt: p\nprotected_mocks:\n")
	for i := range 3 {
		fmt.Fprintf(&b, "  - {tool: tool%d, fixture: fx.yaml}\n", i)
	}
	b.WriteString("success_criteria:\n  - &c {type: json_check, path: a.json, json_schema: s.json}\n  - *c\n  - *c\n  - {type: cli_called, tool: tool0}\n")
	tk, err := Load(writeTask(t, b.String(), map[string]string{
		"s.json":  `{"type": "object"}`,
		"fx.yaml": "version: 1\nresponses: []\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	first := tk.Criteria[0].Spec.(*JSONCheckSpec).JSONSchema.(map[string]any)
	for _, c := range tk.Criteria[1:3] {
		if m := c.Spec.(*JSONCheckSpec).JSONSchema.(map[string]any); fmt.Sprintf("%p", m) != fmt.Sprintf("%p", first) {
			t.Errorf("the schema file was parsed again for %+v", c)
		}
	}
	for _, m := range tk.ProtectedMocks[1:] {
		if m.Fixture != tk.ProtectedMocks[0].Fixture {
			t.Errorf("the fixture was parsed again for %s", m.Tool)
		}
	}
}

func TestExperimentExpandingToTooManyPairsIsRefusedBeforeLoadingThem(t *testing.T) {
	var b strings.Builder
	b.WriteString("experiment_id: e\ntasks: [\"t*.yaml\"]\nvariants:\n")
	for i := range MaxEntries/10 + 1 {
		fmt.Fprintf(&b, "  - {variant_id: v%d}\n", i)
	}
	files := map[string]string{"exp.yaml": b.String()}
	for i := range 10 {
		files[fmt.Sprintf("t%d.yaml", i)] = strings.Replace(taskA, "task_id: a", fmt.Sprintf("task_id: a%d", i), 1)
	}
	ps := loadProblems(t, testtree.New(t, files))
	wantProblem(t, ps, fmt.Sprintf("exp.yaml:1:1: the experiment expands to %d variant/task pairs (10 task files x %d variants), more than %d", 10*(MaxEntries/10+1), MaxEntries/10+1, MaxEntries))
}
