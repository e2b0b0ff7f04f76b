package report

import (
	"fmt"

	"ceval.dev/ceval/record"
)

// meanScoreByIteration is, for k = 1..the most iterations any run used, the mean over the
// runs with a result of the score they had after at most k iterations (a run that stopped
// earlier, or ran once, counts with its last score); nil when no run iterated.
func meanScoreByIteration(runs []Run) []float64 {
	most := 0
	for _, r := range runs {
		if r.Result != nil {
			most = max(most, len(r.Result.Iterations))
		}
	}
	if most < 2 {
		return nil
	}
	out := make([]float64, most)
	n := 0
	for _, r := range runs {
		res := r.Result
		if res == nil {
			continue
		}
		n++
		for k := range out {
			out[k] += scoreAfter(res, k+1)
		}
	}
	for k := range out {
		out[k] /= float64(n)
	}
	return out
}

// scoreAfter is a run's score after at most k iterations.
func scoreAfter(res *record.Result, k int) float64 {
	it := res.Iterations
	if len(it) == 0 {
		return res.Score
	}
	if k > len(it) {
		return res.Score // the final grade is the last iteration's
	}
	return it[k-1].Score
}

// iterationScores shows a run's iterations for its panel: "1: FAILURE 0.00".
func iterationScores(res *record.Result) []string {
	var out []string
	for _, it := range res.Iterations {
		s := fmt.Sprintf("%d: %s %.2f (%s)", it.N, StripControls(it.Status), it.Score, StripControls(it.Prompt))
		if it.Over != "" {
			s += " - " + StripControls(it.Over)
		}
		out = append(out, s)
	}
	return out
}
