package report

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"ceval.dev/ceval/record"
)

// hostileMD is run data written to break out of a Markdown summary: HTML, a link, an image,
// a mention, an issue reference, a heading and a fence on a new line, a cell boundary,
// code spans of every length, a backslash before a pipe, terminal escapes and a bidi override.
var hostileMD = []string{
	"t`<img src=x onerror=alert(1)>`",
	"@org/team [click](https://evil.example/PWNED) ![i](http://evil.example/x.png) #1",
	"a\\|b|</td><script>PWNED</script>\n# heading\n```\n<details open>",
	"``` `` ` \x1b]8;;http://evil\x07link\x1b]8;;\x07 \u202eevil",
	"www.evil.example <http://evil.example> &lt;b&gt; *em* _em_ ~~s~~ :smile: \\",
}

// stripCodeSpans removes every inline code span (a backtick run up to the next run of
// the same length) and fails on a backtick left unmatched, which a renderer would show
// as text and which would change how the rest of the line parses.
func stripCodeSpans(t *testing.T, line string) string {
	t.Helper()
	var out strings.Builder
	for i := 0; i < len(line); {
		if line[i] != '`' {
			out.WriteByte(line[i])
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		end := -1
		for j := i + n; j < len(line); {
			if line[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(line) && line[j+m] == '`' {
				m++
			}
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 {
			t.Fatalf("unmatched backtick run in %q", line)
		}
		out.WriteString("CODE")
		i = end
	}
	return out.String()
}

// checkInert asserts that every hostileMD character sits inside a code span and that each
// table row has its header's number of cells.
func checkInert(t *testing.T, md string) {
	t.Helper()
	cells := 0
	for _, line := range strings.Split(strings.TrimSuffix(md, "\n"), "\n") {
		rest := stripCodeSpans(t, line)
		if i := strings.IndexAny(rest, "<>[]@!&\\~_\x1b\u202e"); i >= 0 {
			t.Errorf("outside a code span, %q in line %q", rest[i:], line)
		}
		for _, word := range []string{"PWNED", "evil", "script", "heading", "details", "smile"} {
			if strings.Contains(rest, word) {
				t.Errorf("outside a code span, %q in line %q", word, line)
			}
		}
		if strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "### ceval") && !strings.HasPrefix(line, "#### ") {
			t.Errorf("a heading run data made: %q", line)
		}
		if !strings.HasPrefix(line, "|") {
			cells = 0
			continue
		}
		n := strings.Count(line, "|") // a table splits cells before it parses code spans
		if cells == 0 {
			cells = n
		} else if n != cells {
			t.Errorf("row with %d pipes, header %d: %q", n, cells, line)
		}
	}
}

func hostileMarkdownExperiment() (*Experiment, *Summary) {
	plan := &record.Plan{ExperimentID: hostileMD[1], Repeats: 1}
	e := &Experiment{Dir: "/runs/" + hostileMD[0] + "/" + hostileMD[4], Plan: plan}
	for i, v := range []string{hostileMD[2], hostileMD[3]} {
		plan.Variants = append(plan.Variants, v)
		for j, id := range hostileMD {
			plan.Entries = append(plan.Entries, record.PlanEntry{Variant: v, TaskID: id, TaskSHA256: "d"})
			res := &record.Result{Complete: true}
			res.TaskID, res.Status, res.Error = id, "FAILURE", hostileMD[(j+1)%len(hostileMD)]
			res.Criteria = []record.CriterionResult{{Type: "file_contains", Description: hostileMD[j], Details: "missing in " + hostileMD[(j+i+2)%len(hostileMD)]}}
			if j == 1 {
				res.Criteria = nil // the status and error are quoted instead
			}
			e.Runs = append(e.Runs, Run{PlannedRun: record.PlannedRun{Entry: len(plan.Entries) - 1, Repeat: 1}, Variant: v, TaskID: id, Result: res})
		}
	}
	s := Summarize(e)
	s.RunID = hostileMD[3]
	s.Variants[0].Statuses[hostileMD[0]] = 1
	return e, s
}

func TestMarkdownSummaryKeepsHostileIDsDetailsAndFileNamesInert(t *testing.T) {
	e, s := hostileMarkdownExperiment()
	md := string(Markdown(e, s))
	checkInert(t, md)
	for _, want := range []string{"| 1 |", "Failing tasks (10, worst first)", "HTML report: ", "missing in", "0 of 1"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	if t.Failed() {
		t.Log("\n" + md)
	}
}

func TestMarkdownComparisonKeepsHostileIDsInert(t *testing.T) {
	_, base := hostileMarkdownExperiment()
	_, cur := hostileMarkdownExperiment()
	for i := range cur.Variants[0].Tasks {
		cur.Variants[0].Tasks[i].TaskSHA256 = "other"
	}
	c, err := Compare(base, cur, CompareOptions{AllowPlanChange: true})
	if err != nil {
		t.Fatal(err)
	}
	md := string(MarkdownComparison(c))
	checkInert(t, md)
	if !strings.Contains(md, "Plan changes (5;") || !strings.Contains(md, "(changed)") {
		t.Errorf("plan changes missing:\n%s", md)
	}
	if t.Failed() {
		t.Log("\n" + md)
	}
}

func TestMdCodeFenceOutgrowsEveryBacktickRun(t *testing.T) {
	for in, want := range map[string]string{
		"plain":   "` plain `",
		"a`b":     "`` a`b ``",
		"``x```":  "```` ``x``` ````",
		"a|b\nc":  "` a¦b c `",
		"":        "-",
		"\x1b[2J": "-",
	} {
		if got := mdCode(in); got != want {
			t.Errorf("mdCode(%q) = %q, want %q", in, got, want)
		}
	}
}

// A comparison of hundreds of long hostile task IDs stays under a pull-request comment's
// 65536 characters, with its one regression shown first.
func TestMarkdownComparisonFitsAPullRequestComment(t *testing.T) {
	long := strings.Repeat("𝕏`|<", 100)
	var baseTasks, curTasks []taskRuns
	for i := range 300 {
		id := fmt.Sprintf("%03d%s", i, long)
		baseTasks = append(baseTasks, taskRuns{id: id, scores: outcomes(10, 0)})
		cur := outcomes(10, 0)
		if i == 299 {
			cur = outcomes(0, 10)
		}
		curTasks = append(curTasks, taskRuns{id: id, scores: cur})
	}
	base := synthetic("b", map[string][]taskRuns{long: baseTasks}, long)
	cur := synthetic("c", map[string][]taskRuns{long: curTasks}, long)
	for i := range cur.Variants[0].Tasks {
		cur.Variants[0].Tasks[i].TaskSHA256 = "changed"
	}
	c, err := Compare(base, cur, CompareOptions{AllowPlanChange: true})
	if err != nil {
		t.Fatal(err)
	}
	md := string(MarkdownComparison(c))
	checkInert(t, md)
	if n := utf8.RuneCountInString(md); n >= 65536 {
		t.Errorf("%d characters", n)
	}
	rows := strings.Split(md, "\n")
	if !strings.HasPrefix(rows[6], "| **regressed** |") || !strings.Contains(rows[6], "` 299") {
		t.Errorf("first row %q, want the regression of task 299", rows[6])
	}
	if !strings.Contains(md, "241 more rows (0 regressed, 0 improved, 241 no evidence)") || !strings.Contains(md, "240 more plan changes") {
		t.Errorf("no note of the rows left out:\n%s", md[len(md)-2000:])
	}
}

// multiStepMarkdownExperiment is one variant over a two-step task (scaffold, implement)
// run three times: both steps passed; implement failed; scaffold failed and implement was
// skipped. stepName names the second step.
func multiStepMarkdownExperiment(stepName string) (*Experiment, *Summary) {
	plan := &record.Plan{ExperimentID: "exp", Repeats: 3, Variants: []string{"base"},
		Entries: []record.PlanEntry{{Variant: "base", TaskID: "greet", TaskSHA256: "d"}}}
	e := &Experiment{Dir: "/runs/exp", Plan: plan}
	crit := func(desc string, ok bool) []record.CriterionResult {
		c := record.CriterionResult{Type: "run_command", Description: desc, Passed: ok, Details: "exit 1"}
		if ok {
			c.Details = ""
		}
		return []record.CriterionResult{c}
	}
	type step struct {
		status string
		score  float64
	}
	for rep, steps := range [][2]step{
		{{"SUCCESS", 1}, {"SUCCESS", 1}},
		{{"SUCCESS", 1}, {"FAILURE", 0.5}},
		{{"FAILURE", 0}, {record.StatusSkipped, 0}},
	} {
		res := &record.Result{Complete: true, StepScore: record.StepScoreAll}
		res.TaskID, res.Status, res.Score = "greet", "SUCCESS", 1
		for i, st := range steps {
			name := []string{"scaffold", stepName}[i]
			ts := record.TaskStep{N: i + 1, Name: name, Status: st.status, Score: st.score,
				Criteria: crit(name+" check", st.status == "SUCCESS"), Skipped: st.status == record.StatusSkipped}
			res.TaskSteps = append(res.TaskSteps, ts)
			res.Criteria = append(res.Criteria, ts.Criteria...)
			if st.status != "SUCCESS" {
				res.Status, res.Score = "FAILURE", min(res.Score, st.score)
			}
		}
		e.Runs = append(e.Runs, Run{PlannedRun: record.PlannedRun{Entry: 0, Repeat: rep + 1}, Variant: "base", TaskID: "greet", Result: res})
	}
	return e, Summarize(e)
}

func TestMarkdownShowsEachStepsPassRateAndEachFailingRunsSteps(t *testing.T) {
	e, s := multiStepMarkdownExperiment("implement")
	md := string(Markdown(e, s))
	for _, want := range []string{
		"#### Steps of multi-step tasks",
		"| ` base ` | ` greet ` | 1 ` scaffold ` | 3 | 0 | 2 | 67% |",
		"| ` base ` | ` greet ` | 2 ` implement ` | 2 | 1 | 1 | 33% |",
		// the failing task's first failing run (repeat 2): every step's status and score,
		// and the failed criterion's step
		"repeat 2: steps: 1 ` scaffold ` ` SUCCESS ` 1.00, 2 ` implement ` ` FAILURE ` 0.50; step 2 ` implement `: ` implement check `: ` exit 1 `",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	checkInert(t, md)

	// a task without steps shows no steps table and no steps in its failure
	e, s = hostileMarkdownExperiment()
	if md := string(Markdown(e, s)); strings.Contains(md, "Steps of multi-step") || strings.Contains(md, "steps: ") {
		t.Errorf("steps shown for a task without them:\n%s", md)
	}
}

func TestMarkdownKeepsHostileStepNamesInert(t *testing.T) {
	for _, name := range hostileMD {
		e, s := multiStepMarkdownExperiment(name)
		checkInert(t, string(Markdown(e, s)))
	}
}
