package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
)

func TestMeanScoreByIterationCarriesEachRunsLastScore(t *testing.T) {
	iter := func(scores ...float64) *record.Result {
		r := &record.Result{}
		for i, s := range scores {
			r.Iterations = append(r.Iterations, record.Iteration{N: i + 1, Score: s})
		}
		r.Score = scores[len(scores)-1]
		return r
	}
	once := &record.Result{}
	once.Score = 0.5
	runs := []Run{{Result: iter(0, 1)}, {Result: iter(0.5, 0.5, 1)}, {Result: iter(1)}, {Result: once}, {}}
	want := []float64{(0 + 0.5 + 1 + 0.5) / 4, (1 + 0.5 + 1 + 0.5) / 4, (1 + 1 + 1 + 0.5) / 4}
	if got := meanScoreByIteration(runs); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := meanScoreByIteration([]Run{{Result: once}, {Result: iter(1)}}); got != nil {
		t.Fatalf("no run iterated, got %v", got)
	}
}

func TestReportShowsTheScorePerIteration(t *testing.T) {
	dir := hostileExperiment(t)
	rd := record.RunDir(filepath.Dir(dir), filepath.Base(dir), "bad", "a", 3)
	res, err := record.ReadResult(rd)
	if err != nil {
		t.Fatal(err)
	}
	res.Iterations = []record.Iteration{{N: 1, Prompt: "initial", Status: "FAILURE", Score: 0.25}, {N: 2, Prompt: "feedback", Status: "SUCCESS", Score: 1, Over: "SUCCESS"}}
	res.IterationsUsed, res.Status, res.Score = 2, "SUCCESS", 1
	if err := record.WriteJSONAtomic(filepath.Join(rd, record.ResultFile), res); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := string(must(os.ReadFile(filepath.Join(dir, HTMLFile))))
	if want := `score per iteration: <code>1: FAILURE 0.25 (initial)</code> <code>2: SUCCESS 1.00 (feedback) - SUCCESS</code>`; !strings.Contains(page, want) {
		t.Errorf("report.html lacks %s", want)
	}
	var s Summary
	if err := json.Unmarshal(must(os.ReadFile(filepath.Join(dir, SummaryFile))), &s); err != nil {
		t.Fatal(err)
	}
	for _, v := range s.Variants {
		if v.VariantID == "bad" && len(v.MeanScoreByIteration) != 2 {
			t.Errorf("summary.json: variant bad has mean_score_by_iteration %v", v.MeanScoreByIteration)
		}
	}
}
