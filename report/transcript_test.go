package report

import (
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
