package report

import "sort"

// Classification is precision, recall and F1 over the classification_match criteria of a
// group of runs (a dataset's rows), one-vs-rest per expected label. The labels are the ones
// the tasks expect: a prediction of any other label (agent output) counts only as a miss,
// so the table's size is the task author's, never the agent's.
type Classification struct {
	Predictions    int          `json:"predictions"` // classification_match results counted
	Accuracy       float64      `json:"accuracy"`    // predictions equal to the expected label
	MacroPrecision float64      `json:"macro_precision"`
	MacroRecall    float64      `json:"macro_recall"`
	MacroF1        float64      `json:"macro_f1"`
	Labels         []LabelStats `json:"labels"` // sorted by label
}

// LabelStats are one expected label's numbers; a ratio with a zero denominator is 0.
type LabelStats struct {
	Label     string  `json:"label"`
	Support   int     `json:"support"` // predictions that expected it
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
}

// classification computes the runs' Classification; nil when none has a classification_match.
func classification(runs []Run) *Classification {
	type pair struct{ expected, predicted string }
	var pairs []pair
	for _, r := range runs {
		if r.Result == nil {
			continue
		}
		for _, c := range r.Result.Criteria {
			if c.Label != nil {
				pairs = append(pairs, pair{c.Label.Expected, c.Label.Predicted})
			}
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	type counts struct{ tp, fp, fn, support int }
	by := map[string]*counts{}
	for _, p := range pairs {
		if by[p.expected] == nil {
			by[p.expected] = &counts{}
		}
	}
	c := &Classification{Predictions: len(pairs)}
	correct := 0
	for _, p := range pairs {
		by[p.expected].support++
		if p.predicted == p.expected {
			by[p.expected].tp++
			correct++
			continue
		}
		by[p.expected].fn++
		if other, ok := by[p.predicted]; ok {
			other.fp++
		}
	}
	c.Accuracy = float64(correct) / float64(len(pairs))
	for label, n := range by {
		ls := LabelStats{Label: label, Support: n.support, Precision: ratio(n.tp, n.tp+n.fp), Recall: ratio(n.tp, n.tp+n.fn)}
		if ls.Precision+ls.Recall > 0 {
			ls.F1 = 2 * ls.Precision * ls.Recall / (ls.Precision + ls.Recall)
		}
		c.Labels = append(c.Labels, ls)
		c.MacroPrecision += ls.Precision
		c.MacroRecall += ls.Recall
		c.MacroF1 += ls.F1
	}
	sort.Slice(c.Labels, func(i, j int) bool { return c.Labels[i].Label < c.Labels[j].Label })
	k := float64(len(c.Labels))
	c.MacroPrecision, c.MacroRecall, c.MacroF1 = c.MacroPrecision/k, c.MacroRecall/k, c.MacroF1/k
	return c
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
