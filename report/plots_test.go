package report

import (
	"regexp"
	"strings"
	"testing"
)

// Every plot draws one mark per variant, from the summary's own numbers.
func TestPlotsHaveOneMarkPerVariantFromTheSummary(t *testing.T) {
	dir := hostileExperiment(t)
	e, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(e)
	plots := Plots(e, s)
	if len(plots) != 5 {
		t.Fatalf("%d plots, want 5", len(plots))
	}
	marks := regexp.MustCompile(`<g class="mark" data-variant="([^"]*)">`)
	for _, p := range plots {
		if p.SVG == "" {
			if p.ID != "plot-iterations" || p.Note == "" {
				t.Errorf("%s: no figure and no note", p.ID)
			}
			continue
		}
		var got []string
		for _, m := range marks.FindAllStringSubmatch(string(p.SVG), -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, ",") != "good,bad" {
			t.Errorf("%s: marks %q, want one per variant in the plan's order", p.ID, got)
		}
	}
	// good passed 4 of 6: its bar is 2/3 of the axis's 456 px; bad 1 of 4.
	bars := regexp.MustCompile(`<rect x="160.0" y="[0-9.]+" width="([0-9.]+)" height="16.0" class="bar"/>`).FindAllStringSubmatch(string(plots[0].SVG), -1)
	if len(bars) != 2 || bars[0][1] != "304.0" || bars[1][1] != "114.0" {
		t.Errorf("pass-rate bars %q, want widths 304.0 and 114.0", bars)
	}
	// The score histogram: good's 4 runs at 1 and 2 at 0.5 (a failure, an error) land in the last and the sixth bins.
	if !strings.Contains(string(plots[1].SVG), "good: 0.5-0.6: 2, 0.9-1: 4") {
		t.Errorf("score distribution of good not as graded:\n%s", plots[1].SVG)
	}
}

// Labels are plan text: escaped, never markup.
func TestPlotsEscapeVariantLabels(t *testing.T) {
	s := &Summary{Variants: []Stats{{VariantID: `<script>alert(1)</script>"x`, Runs: 1, Passed: 1, PassRate: 1, PassRateCI95: [2]float64{0.2, 1}}}}
	for _, p := range Plots(&Experiment{}, s) {
		if strings.Contains(string(p.SVG), "<script") || strings.Contains(string(p.SVG), `"x"`) {
			t.Errorf("%s: a label became markup:\n%s", p.ID, p.SVG)
		}
	}
}
