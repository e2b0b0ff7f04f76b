package audit

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

func crit(passed ...bool) []Criterion {
	var out []Criterion
	for i, p := range passed {
		out = append(out, Criterion{Index: i, Type: task.FileContains, Line: 10 + i, Gating: true, Passed: p})
	}
	return out
}

func TestVerdicts(t *testing.T) {
	null := Run{Agent: NullAgent, Kind: KindBaseline, Status: "FAILURE", Criteria: crit(false, false)}
	oracle := &Run{Agent: OracleAgent, Kind: KindOracle, Status: "SUCCESS", Success: true, Score: 1, Criteria: crit(true, true)}
	failed := &Run{Agent: OracleAgent, Kind: KindOracle, Status: "FAILURE", Criteria: crit(true, false)}
	cheat := func(success bool, score float64, passed ...bool) Run {
		st := "FAILURE"
		if success {
			st = "SUCCESS"
		}
		return Run{Agent: "stub-tests", Kind: KindCheat, Status: st, Success: success, Score: score, Criteria: crit(passed...)}
	}
	for _, tc := range []struct {
		name    string
		r       Report
		verdict string
		reason  string
	}{
		{"ok", Report{Oracle: oracle, Runs: []Run{null, cheat(false, 0, false, false)}}, OK, ""},
		{"a cheat above the null agent stays ok", Report{Oracle: oracle, Runs: []Run{null, cheat(false, 0.5, true, false)}}, OK, ""},
		{"a cheat at SUCCESS", Report{Oracle: oracle, Runs: []Run{null, cheat(true, 1, true, true)}}, Hackable,
			"cheat stub-tests (…) reaches SUCCESS; it fooled success_criteria[0] (file_contains, line 10), success_criteria[1] (file_contains, line 11)"},
		{"the null agent at SUCCESS", Report{Oracle: oracle, Runs: []Run{{Agent: NullAgent, Kind: KindBaseline, Status: "SUCCESS", Success: true}}}, Hackable,
			"the null agent (…) reaches SUCCESS"},
		{"no oracle", Report{Runs: []Run{null}}, Broken, "no oracle"},
		{"the oracle fails, even with a cheat at SUCCESS", Report{Oracle: failed, Runs: []Run{null, cheat(true, 1, true, true)}}, Broken, "unsolvable as written"},
		{"a run errs", Report{Oracle: oracle, Runs: []Run{null, {Agent: "huge-files", Error: "containerd is gone"}}}, Error, "huge-files: containerd is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.r.Runs {
				tc.r.Runs[i].What = "…"
			}
			judge(&tc.r)
			if tc.r.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s (reasons %q)", tc.r.Verdict, tc.verdict, tc.r.Reasons)
			}
			if got := strings.Join(tc.r.Reasons, "\n"); !strings.Contains(got, tc.reason) || (tc.reason == "") != (got == "") {
				t.Errorf("reasons %q, want %q", got, tc.reason)
			}
		})
	}
	r := Report{Oracle: oracle, Runs: []Run{null, cheat(false, 0.5, true, false)}}
	judge(&r)
	if c := r.Runs[1]; !c.AboveNull || len(c.Fooled) != 1 || c.Fooled[0].Index != 0 {
		t.Errorf("cheat above null: %+v", c)
	}
}

func TestMatchingStringsMatchTheirPattern(t *testing.T) {
	for _, p := range []string{`^Hello, [a-z]+!$`, `(?m)^done\n`, `\d{3}-\d+`, `(foo|bar)baz?`, `^43\n?$`, `[A-Z][a-z]*\s\w+`, `.+@example\.com`} {
		s := matching(p)
		if !regexp.MustCompile(p).MatchString(s) {
			t.Errorf("matching(%q) = %q, which it does not match", p, s)
		}
	}
}

func TestLeakedAgentWritesTheLiteralExpectations(t *testing.T) {
	tk := &task.Task{Criteria: []task.Criterion{
		{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "out.txt", Includes: []string{"alpha", "beta"}}},
		{Type: task.ClassificationMatch, Spec: &task.ClassificationMatchSpec{Path: "label.txt", ExpectedLabel: "fixed"}},
		{Type: task.JSONCheck, Spec: &task.JSONCheckSpec{Path: "r.json", Assertions: []task.Assertion{
			{Expression: "status", Operator: "equals", Expected: "done"},
			{Expression: "stats.files", Operator: "gt", Expected: 2.0},
			{Expression: "items[0]", Operator: "equals", Expected: "x"}, // not plain fields: skipped
		}}},
	}}
	a := Leaked(tk)
	files := map[string]string{}
	for rest := a.Argv[4:]; len(rest) >= 3; rest = rest[3:] {
		data, err := base64.StdEncoding.DecodeString(rest[2])
		if err != nil {
			t.Fatal(err)
		}
		files[rest[0]] += string(data)
	}
	want := map[string]string{
		"out.txt":   "alpha\nbeta\n",
		"label.txt": "fixed\n",
		"r.json":    "{\n  \"stats\": {\n    \"files\": 3\n  },\n  \"status\": \"done\"\n}\n",
	}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("files = %q, want %q", files, want)
	}
	if !strings.Contains(a.What, "out.txt") {
		t.Errorf("what = %q", a.What)
	}
}

// An audit cancelled before its runs start must not read as ok: the runs that never ran say
// so, and the verdict is error.
func TestInterruptedAuditIsNotOK(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tk := &task.Task{ID: "t"} // no solution: broken, were the unrun runs not errors
	reps, err := Audit(ctx, []Target{{Task: tk}}, Options{})
	if err == nil || len(reps) != 1 || reps[0].Verdict != Error {
		t.Fatalf("err %v, reports %+v", err, reps)
	}
}

// A solution directory holding a symlink (to a host file, say) or too many bytes is refused
// with a message saying what to do, never followed or cut.
func TestOracleRefusesSolutionFilesItCannotPassFaithfully(t *testing.T) {
	for _, tc := range []struct {
		name string
		prep func(dir string) error
		want string
	}{
		{"symlink", func(dir string) error { return os.Symlink("/etc/passwd", filepath.Join(dir, "sol", "passwd")) }, "not a regular file or directory"},
		{"too big", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "sol", "big"), make([]byte, maxSolutionBytes+1), 0o644)
		}, "use solution.script"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTask(t, "task_id: t\ninitial_prompt: p\nsolution: {files: sol}\nsuccess_criteria: [{type: file_exists, path: a}]\n",
				map[string]string{"sol/a": "x"})
			if err := tc.prep(filepath.Dir(p)); err != nil {
				t.Fatal(err)
			}
			_, err := Oracle(load(t, p).Solution)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
