package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/chromiumtest"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/report"
)

// The examples' experiment, run for real, read in headless Chromium: its page has one plot
// mark per variant, every run listed and linked to its own page, the status filters, and
// the run pages open; screenshots of both are kept in $CEVAL_SCREENSHOTS (issue 37).
func TestExamplesExperimentReportInChromium(t *testing.T) {
	_, _ = ctrtest.Connect(t)
	bin := chromiumtest.Find(t)
	runs := t.TempDir()
	r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, "-j", "2", "../../examples/experiment.yaml")
	if r.code != exitFailure { // the idle variant fails by design
		t.Fatalf("exit %d, want %d\n%s", r.code, exitFailure, r.stderr)
	}
	pages, _ := filepath.Glob(filepath.Join(runs, "*", report.HTMLFile))
	if len(pages) != 1 {
		t.Fatalf("report pages %q, want one", pages)
	}
	dom, console := chromiumtest.DOM(t, bin, pages[0])
	for _, line := range console {
		t.Errorf("console: %s", line)
	}
	for _, v := range []string{"as-written", "idle"} {
		if n := strings.Count(dom, `<g class="mark" data-variant="`+v+`">`); n != 4 {
			t.Errorf("variant %s: %d plot marks in the DOM, want 4", v, n)
		}
	}
	if n := strings.Count(dom, `<details id="run-`); n != 8 {
		t.Errorf("%d runs in the DOM, want 8", n)
	}
	if n := strings.Count(dom, "/"+report.TranscriptFile+`">this run's page`); n != 8 {
		t.Errorf("%d run-page links, want 8", n)
	}
	for _, st := range []string{">SUCCESS (4)<", ">FAILURE (4)<"} {
		if !strings.Contains(dom, st) {
			t.Errorf("no status filter %s", st)
		}
	}
	chromiumtest.Screenshot(t, bin, pages[0], "examples-report.png")
	runPages, _ := filepath.Glob(filepath.Join(filepath.Dir(pages[0]), "*", "*", "*", report.TranscriptFile))
	if len(runPages) != 8 {
		t.Fatalf("%d run pages, want 8", len(runPages))
	}
	dom, console = chromiumtest.DOM(t, bin, runPages[0])
	for _, line := range console {
		t.Errorf("run page console: %s", line)
	}
	if !strings.Contains(dom, "Model turns") || !strings.Contains(dom, "Criteria") {
		t.Error("a run page lacks its sections")
	}
	chromiumtest.Screenshot(t, bin, runPages[0], "examples-run-page.png")
	if _, err := os.Stat(runPages[0]); err != nil {
		t.Fatal(err)
	}
}
