package report

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/chromiumtest"
	"ceval.dev/ceval/record"
)

// transcriptExperiment is hostileExperiment with a recorded gateway transcript (atif's
// Anthropic fixture: tool calls, results, hostile markup) in good/a's first run.
func transcriptExperiment(t *testing.T) (dir, runDir string) {
	t.Helper()
	dir = hostileExperiment(t)
	runDir = record.RunDir(filepath.Dir(dir), filepath.Base(dir), "good", "a", 1)
	calls, err := os.ReadFile(filepath.Join("..", "atif", "testdata", "anthropic-run", "model_calls.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, record.ModelCallsFile), calls, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, runDir
}

func TestEveryRunGetsItsPageWithTheModelTurns(t *testing.T) {
	dir, runDir := transcriptExperiment(t)
	e, _, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(runDir, TranscriptFile))
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, want := range []string{
		"tool call <code>Bash</code>",                    // the model's tool call
		"Let me look.",                                   // its text
		"The test fails; look at the files first.",       // its reasoning
		"&lt;b&gt;bold&lt;/b&gt; &amp; &#34;quotes&#34;", // the prompt, escaped
		`href="../../../report.html"`,                    // back to the experiment
	} {
		if !strings.Contains(s, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if strings.Contains(s, "<script>alert") || strings.Contains(s, "<b>bold") {
		t.Error("transcript text became markup on the run's page")
	}
	if n := len(regexp.MustCompile(`<details class="step step-`).FindAllString(s, -1)); n < 3 {
		t.Errorf("%d steps on the run's page, want the fixture's user and agent turns", n)
	}
	// Every run with a result has a page; the one without says it had no model turns.
	pages := 0
	for _, r := range e.Runs {
		if r.Result == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.Dir, TranscriptFile))
		if err != nil {
			t.Errorf("%s: %v", r.Dir, err)
			continue
		}
		pages++
		if r.Dir != runDir && !strings.Contains(string(b), "no model turns") {
			t.Errorf("%s: a run without a transcript does not say so", r.Dir)
		}
	}
	if pages != 10 {
		t.Errorf("%d run pages, want 10 (one per run with a result)", pages)
	}
	// The experiment's page links to each.
	main, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	if n := strings.Count(string(main), "/"+TranscriptFile+`">this run's page`); n != 10 {
		t.Errorf("the experiment's page links %d run pages, want 10", n)
	}
}

// The run's page in a real browser: the CSP holds (no console refusals), the tool call and
// its result are in the DOM, and nothing the transcript holds became an element.
func TestRunPageInChromium(t *testing.T) {
	bin := chromiumtest.Find(t)
	dir, runDir := transcriptExperiment(t)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	dom, console := chromiumtest.DOM(t, bin, filepath.Join(runDir, TranscriptFile))
	for _, line := range console {
		t.Errorf("console: %s", line)
	}
	if !strings.Contains(dom, `tool call <code>Bash</code>`) || !strings.Contains(dom, `class="obs"`) {
		t.Error("the run page's DOM lacks the tool call or its result")
	}
	if strings.Contains(strings.ToLower(dom), "<script") || strings.Contains(dom, "<b>bold") {
		t.Error("transcript text became elements in the DOM")
	}
	chromiumtest.Screenshot(t, bin, filepath.Join(runDir, TranscriptFile), "run-page.png")
}

// A 1,000-run experiment's page in the browser: every run listed, one mark per variant in
// each plot, and a screenshot (CEVAL_SCREENSHOTS keeps it).
func TestLargeReportInChromium(t *testing.T) {
	bin := chromiumtest.Find(t)
	dir := benchExperiment(t)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	dom, console := chromiumtest.DOM(t, bin, filepath.Join(dir, HTMLFile))
	for _, line := range console {
		t.Errorf("console: %s", line)
	}
	if n := strings.Count(dom, `<details id="run-`); n != 1000 {
		t.Errorf("%d runs in the DOM, want 1000", n)
	}
	for _, v := range []string{"v1", "v2", "v3", "v4", "v5"} {
		if n := strings.Count(dom, `<g class="mark" data-variant="`+v+`">`); n != 4 {
			t.Errorf("variant %s: %d plot marks, want 4", v, n)
		}
	}
	chromiumtest.Screenshot(t, bin, filepath.Join(dir, HTMLFile), "report-1000-runs.png")
	// Every run links its page; the last one linked opens in the browser with its tool calls.
	links := regexp.MustCompile(`href="([^"]+/`+TranscriptFile+`)"`).FindAllStringSubmatch(dom, -1)
	if len(links) != 1000 {
		t.Fatalf("%d run pages linked, want 1000", len(links))
	}
	runPage := filepath.Join(dir, filepath.FromSlash(html.UnescapeString(links[len(links)-1][1])))
	runDOM, console := chromiumtest.DOM(t, bin, runPage)
	for _, line := range console {
		t.Errorf("run page console: %s", line)
	}
	if !strings.Contains(runDOM, `tool call <code>Bash</code>`) || !strings.Contains(runDOM, `class="obs"`) || !strings.Contains(runDOM, "the experiment's report") {
		t.Errorf("the run page %s opened from the 1,000-run report lacks its tool calls or the way back", runPage)
	}
}

// The run page lists the task's steps with their logs' tails, text escaped.
func TestRunPageShowsTheTasksSteps(t *testing.T) {
	dir, runDir := transcriptExperiment(t)
	resPath := filepath.Join(runDir, record.ResultFile)
	resp, err := record.ReadResult(runDir)
	if err != nil {
		t.Fatal(err)
	}
	res := *resp
	code := 3
	res.Steps = []record.StepResult{{Kind: record.StepSetup, Index: 1, Run: "make <deps>", ExitCode: &code, Seconds: 1.5, Log: filepath.Join(record.StepsDir, "setup-1.log")}}
	if err := record.WriteJSONAtomic(resPath, &res); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(runDir, record.StepsDir), 0o700)
	os.WriteFile(filepath.Join(runDir, record.StepsDir, "setup-1.log"), []byte("installing <script>x</script>\n"), 0o600)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(runDir, TranscriptFile))
	for _, want := range []string{"setup 1: exit 3 in 1.5 s · make &lt;deps&gt;", "installing &lt;script&gt;x&lt;/script&gt;", `href="steps/setup-1.log"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("run page lacks %q", want)
		}
	}
}

// The run page shows each executed criterion's verifier output (its output_logs) beside
// its details, escaped and linked; a name outside the run's verifier/ is never read.
func TestRunPageShowsTheVerifiersOutput(t *testing.T) {
	dir, runDir := transcriptExperiment(t)
	resp, err := record.ReadResult(runDir)
	if err != nil {
		t.Fatal(err)
	}
	res := *resp
	res.Criteria = []record.CriterionResult{
		{Type: "pytest", Status: record.CriterionFail, Details: "0 of 1 tests passed", OutputLogs: []string{"verifier/criterion-1.stdout.log", "../../../outside.log"}},
	}
	res.Verifier = &record.VerifierResult{User: "root in its own user namespace", Network: "host"}
	if err := record.WriteJSONAtomic(filepath.Join(runDir, record.ResultFile), &res); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(runDir, record.VerifierDir), 0o700)
	os.WriteFile(filepath.Join(runDir, record.VerifierDir, "criterion-1.stdout.log"), []byte("FAILED test_x <script>alert(1)</script>\x1b[31m\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "outside.log"), []byte("NOT-A-VERIFIER-LOG"), 0o600)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(runDir, TranscriptFile))
	for _, want := range []string{`href="verifier/criterion-1.stdout.log"`, "FAILED test_x &lt;script&gt;alert(1)&lt;/script&gt;\n",
		"verifier containers: root in its own user namespace, network host"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if strings.Contains(string(page), "NOT-A-VERIFIER-LOG") || strings.Contains(string(page), "outside.log") || strings.Contains(string(page), "\x1b") {
		t.Error("the run page read a log outside verifier/ or kept a control sequence")
	}
}

// iterationsExperiment gives good/a's first run two iterations: the first's result.json,
// agent log and verifier output under iterations/1/ (hostile text in each), a setup step
// and an after_agent step with hostile logs, and a judge call whose prompt and answer are
// hostile (what the agent wrote reaches the judge).
func iterationsExperiment(t *testing.T) (dir, runDir string) {
	t.Helper()
	dir, runDir = transcriptExperiment(t)
	resp, err := record.ReadResult(runDir)
	if err != nil {
		t.Fatal(err)
	}
	res := *resp
	res.IterationsUsed = 2
	res.Iterations = []record.Iteration{
		{N: 1, Prompt: "initial", Status: "FAILURE", Score: 0, Agent: 3, Over: ""},
		{N: 2, Prompt: "feedback", Status: "SUCCESS", Score: 1, Agent: 2, Over: "passed"},
	}
	code0, code1 := 0, 1
	res.Steps = []record.StepResult{
		{Kind: record.StepSetup, Index: 1, Run: "make deps", ExitCode: &code0, Seconds: 0.5, Log: "steps/setup-1.log"},
		{Kind: record.StepAfterAgent, Index: 1, Iteration: 1, Run: "make check", ExitCode: &code1, Seconds: 0.7, Log: "steps/after_agent-1-iteration-1.log"},
	}
	if err := record.WriteJSONAtomic(filepath.Join(runDir, record.ResultFile), &res); err != nil {
		t.Fatal(err)
	}
	first := res
	first.Status, first.Score = "FAILURE", 0
	first.Criteria = []record.CriterionResult{{Type: "pytest", Status: record.CriterionFail, Details: "iteration one <img src=x onerror=alert(7)>",
		OutputLogs: []string{"verifier/criterion-1.stdout.log"}}}
	it1 := filepath.Join(runDir, record.IterationsDir, "1")
	os.MkdirAll(filepath.Join(it1, record.VerifierDir), 0o700)
	if err := record.WriteJSONAtomic(filepath.Join(it1, record.ResultFile), &first); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(it1, record.StdoutFile), []byte("first try "+hostileLog), 0o600)
	os.WriteFile(filepath.Join(it1, record.VerifierDir, "criterion-1.stdout.log"), []byte("FAILED first <script>alert(8)</script>\n"), 0o600)
	os.MkdirAll(filepath.Join(runDir, record.StepsDir), 0o700)
	os.WriteFile(filepath.Join(runDir, "steps", "setup-1.log"), []byte("deps ok\n"), 0o600)
	os.WriteFile(filepath.Join(runDir, "steps", "after_agent-1-iteration-1.log"), []byte("check "+hostileLog), 0o600)
	score := 0.25
	rec, _ := json.Marshal(record.JudgeCall{API: "anthropic", Model: "judge-<b>model</b>", Sample: 1, Mode: "replay", Score: &score,
		User: "the agent wrote: <script>alert(9)</script>\x1b[2J", Answer: `{"score": 0.25, "reasons": "<img src=x onerror=alert(10)>"}`})
	os.WriteFile(filepath.Join(runDir, judgeCallsFile), append(rec, '\n'), 0o600)
	return dir, runDir
}

// A run that ran the agent twice shows each iteration as a tab (its grade, criteria with
// their verifier output, agent logs; the last one open), the steps as tabs, and the judge's
// calls; everything the agent or the judge wrote stays text.
func TestRunPageShowsIterationsAndStepsAsTabsAndJudgeCallsAsText(t *testing.T) {
	dir, runDir := iterationsExperiment(t)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(runDir, TranscriptFile))
	page := string(b)
	for _, want := range []string{
		`<input type="radio" name="iteration-tab" id="iteration-tab-1"><label for="iteration-tab-1" class="iteration">iteration 1: FAILURE 0.00 (initial)</label>`,
		`<input type="radio" name="iteration-tab" id="iteration-tab-2" checked><label for="iteration-tab-2" class="iteration">iteration 2: SUCCESS 1.00 (feedback)</label>`,
		"iteration one &lt;img src=x onerror=alert(7)&gt;",
		`href="iterations/1/verifier/criterion-1.stdout.log"`, "FAILED first &lt;script&gt;alert(8)&lt;/script&gt;",
		`href="iterations/1/agent.stdout.log"`, "first try before &lt;script&gt;alert(1)&lt;/script&gt;",
		`id="step-tab-1" checked><label for="step-tab-1" class="taskstep">setup 1: exit 0 in 0.5 s · make deps</label>`,
		`after_agent 1 (after iteration 1): exit 1 in 0.7 s · make check`,
		"what the judge saw:", "the agent wrote: &lt;script&gt;alert(9)&lt;/script&gt;", "&lt;img src=x onerror=alert(10)&gt;", "judge-&lt;b&gt;model&lt;/b&gt;",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>alert", "<img src=x", "<b>model", "\x1b", "\u202e"} {
		if strings.Contains(page, bad) {
			t.Errorf("run page holds %q as markup or raw", bad)
		}
	}
}

// The same page in the browser: the tabs are elements (one checked per group), the hostile
// text is not, and the CSP refuses nothing.
func TestRunPageTabsInChromium(t *testing.T) {
	bin := chromiumtest.Find(t)
	dir, runDir := iterationsExperiment(t)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	dom, console := chromiumtest.DOM(t, bin, filepath.Join(runDir, TranscriptFile))
	for _, line := range console {
		t.Errorf("console: %s", line)
	}
	if n := strings.Count(dom, `name="iteration-tab"`); n != 2 {
		t.Errorf("%d iteration tabs in the DOM, want 2", n)
	}
	if n := strings.Count(dom, `name="step-tab"`); n != 2 {
		t.Errorf("%d step tabs in the DOM, want 2", n)
	}
	if !strings.Contains(dom, `id="iteration-tab-2" checked=""`) && !strings.Contains(dom, `id="iteration-tab-2" checked>`) {
		t.Error("the last iteration's tab is not the one open")
	}
	low := strings.ToLower(dom)
	if strings.Contains(low, "<script") || strings.Contains(low, "<img") || strings.Contains(dom, "<b>model") {
		t.Error("agent or judge text became elements in the DOM")
	}
	chromiumtest.Screenshot(t, bin, filepath.Join(runDir, TranscriptFile), "run-page-tabs.png")
}

// The run page lists the task's services with how they ended and their logs' tails, text
// escaped.
func TestRunPageShowsTheTasksServices(t *testing.T) {
	dir, runDir := transcriptExperiment(t)
	resPath := filepath.Join(runDir, record.ResultFile)
	resp, err := record.ReadResult(runDir)
	if err != nil {
		t.Fatal(err)
	}
	res := *resp
	code := 7
	log := filepath.Join(record.ServicesDir, "api.log")
	res.Services = []record.ServiceResult{{Name: "api", Image: "img<1>", Address: "127.0.10.1", Ports: []int{8080}, Ready: true, ReadySeconds: 0.25, ExitCode: &code, ExitedEarly: true, Log: log}}
	if err := record.WriteJSONAtomic(resPath, &res); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(runDir, record.ServicesDir), 0o700)
	os.WriteFile(filepath.Join(runDir, log), []byte("listening <b>8080</b>\n"), 0o600)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(runDir, TranscriptFile))
	for _, want := range []string{"api (img&lt;1&gt;): ready after 0.25 s, exited with 7 while the run went on · 127.0.10.1 ports [8080]", "listening &lt;b&gt;8080&lt;/b&gt;", `href="services/api.log"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("run page lacks %q", want)
		}
	}
}

// TestRunPageShowsEachStepOfAMultiStepRun: a multi-step run's page has a tab per step (its
// status, score, criteria and agent logs; a skipped step's reason), and summary.json each
// step's pass rate.
func TestRunPageShowsEachStepOfAMultiStepRun(t *testing.T) {
	dir, runDir := transcriptExperiment(t)
	resp, err := record.ReadResult(runDir)
	if err != nil {
		t.Fatal(err)
	}
	res := *resp
	res.TaskSteps = []record.TaskStep{
		{N: 1, Name: "scaffold", Status: "SUCCESS", Score: 1, Criteria: []record.CriterionResult{{Type: "file_exists", Description: "greet.sh <exists>", Status: "PASS", Score: 1}},
			Iterations: []record.Iteration{{N: 1, Prompt: "initial", Status: "FAILURE"}, {N: 2, Prompt: "feedback", Status: "SUCCESS", Score: 1, Over: "SUCCESS"}}},
		{N: 2, Name: "implement", Status: "FAILURE", Score: 0, Over: "step 2 (implement) is FAILURE and stop_on_failure is set", Criteria: []record.CriterionResult{{Type: "file_contains", Status: "FAIL"}}},
		{N: 3, Name: "document", Status: record.StatusSkipped, Skipped: true, Criteria: []record.CriterionResult{{Type: "file_exists", Status: "FAIL", Details: "step 3 (document) did not run"}}},
	}
	if err := record.WriteJSONAtomic(filepath.Join(runDir, record.ResultFile), &res); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(runDir, record.TaskStepsDir, "1"), 0o700)
	os.WriteFile(filepath.Join(runDir, record.TaskStepsDir, "1", record.StdoutFile), []byte("step one said <hi>\n"), 0o600)
	os.MkdirAll(filepath.Join(runDir, record.TaskStepsDir, "1", record.IterationsDir, "1"), 0o700)
	os.WriteFile(filepath.Join(runDir, record.TaskStepsDir, "1", record.IterationsDir, "1", record.StdoutFile), []byte("step one first tried\n"), 0o600)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(runDir, TranscriptFile))
	for _, want := range []string{`<h2 id="iterations">Steps</h2>`, "step 1 scaffold: SUCCESS 1.00 after 2 runs", "step one first tried", "task_steps/1/iterations/1/agent.stdout.log", "step 2 implement: FAILURE 0.00", "step 3 document: SKIPPED 0.00",
		"greet.sh &lt;exists&gt;", "step one said &lt;hi&gt;", "no step followed: step 2 (implement) is FAILURE", "step 3 (document) did not run"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	sum, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil || !strings.Contains(string(sum), `"pass_rate_by_step"`) || !strings.Contains(string(sum), `"name": "implement"`) {
		t.Errorf("summary.json lacks the steps' pass rates: %v\n%s", err, sum)
	}
}
