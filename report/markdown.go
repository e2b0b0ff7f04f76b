package report

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"ceval.dev/ceval/record"
)

// MarkdownCellRunes caps each piece of run data a Markdown summary quotes.
const MarkdownCellRunes = 160

// MarkdownFailingRows caps the failing-task table of a run's Markdown summary.
const MarkdownFailingRows = 25

// MarkdownComparisonRows caps each table of a comparison's Markdown (regressions come
// first), keeping it under a pull-request comment's size limit (65536 characters on GitHub).
const MarkdownComparisonRows = 60

// mdCode renders run data (IDs, details, file names: anything an agent or a task file may
// have written) as one inline code span, the one Markdown construct whose content is
// shown literally everywhere: no HTML, links, images, emphasis, mentions, emoji or
// autolinks. Control and bidi characters go, line breaks become spaces (a span cannot
// end a table row or start a block), '|' becomes '¦' (renderers disagree on escaped pipes
// in table cells), the text is capped, and the fence is longer than any backtick run in it.
func mdCode(s string) string {
	s = StripControls(s)
	s = strings.NewReplacer("\r", " ", "\n", " ", "\t", " ", "|", "¦").Replace(s)
	if utf8.RuneCountInString(s) > MarkdownCellRunes {
		s = string([]rune(s)[:MarkdownCellRunes]) + "…"
	}
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	return fence + " " + s + " " + fence // one space each side is stripped by the renderer
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

// mdInterval is an interval as the other pages print it, without their brackets (link
// syntax in Markdown).
func mdInterval(format string, ci [2]float64) string { return fmt.Sprintf(format, ci[0], ci[1]) }

// Markdown renders an experiment as a compact summary for a pull-request comment or a CI
// job summary: the leaderboard, the tasks that failed (worst first, with the first failed
// criterion of one failing run), and where report.html is. Run data is quoted inert (mdCode).
func Markdown(e *Experiment, s *Summary) []byte {
	var b strings.Builder
	state := "complete"
	if !s.Complete {
		state = "incomplete"
	}
	fmt.Fprintf(&b, "### ceval: %s, run %s\n\n", mdCode(s.ExperimentID), mdCode(s.RunID))
	fmt.Fprintf(&b, "%d planned runs (%d repeats), %s.\n\n", s.Planned, s.Repeats, state)
	if st := s.StoppedEarly; st != nil {
		fmt.Fprintf(&b, "Stopped early after %d of %d runs: %s passes more often than the other of %s and %s at confidence %g.\n\n",
			st.AfterRuns, st.Planned, mdCode(st.Better), mdCode(st.Compare[0]), mdCode(st.Compare[1]), st.Confidence)
	}
	b.WriteString("| Rank | Variant | Runs | Pass rate | 95% interval | Effective runs | Mean score | Statuses |\n|---:|---|---:|---:|---|---:|---:|---|\n")
	board := append([]Stats(nil), s.Variants...)
	sort.SliceStable(board, func(i, j int) bool { return board[i].PassRate > board[j].PassRate })
	for i, v := range board {
		if i == MarkdownComparisonRows {
			fmt.Fprintf(&b, "\n%d more variants in the HTML report.\n", len(board)-i)
			break
		}
		fmt.Fprintf(&b, "| %d | %s | %d | %s | %s | %.1f | %.2f | %s |\n", i+1, mdCode(v.VariantID), v.Runs, pct(v.PassRate),
			mdInterval("%.2f to %.2f", v.PassRateCI95), v.EffectiveRuns, v.MeanScore, statusList(v.Statuses))
	}
	fmt.Fprintf(&b, "\n%s\n", IntervalNote())
	if len(s.Differences) > 0 {
		b.WriteString("\n#### Differences between variants (paired by task)\n\n| Variant | Versus | Tasks | Pass rate difference | 95% interval |\n|---|---|---:|---:|---|\n")
		for i, d := range s.Differences {
			if i == MarkdownComparisonRows {
				fmt.Fprintf(&b, "\n%d more differences in summary.json.\n", len(s.Differences)-i)
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %+.2f | %s |\n", mdCode(d.VariantID), mdCode(d.Versus), d.Tasks, d.PassRateDiff, mdInterval("%+.2f to %+.2f", d.PassRateDiffCI95))
		}
	}
	if rows := AuditRows(s); len(rows) > 0 {
		b.WriteString("\n#### Audit verdicts (ceval audit)\n\n| Variant | Task | Verdict | Why |\n|---|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdCode(r.Variant), mdCode(r.TaskID), mdCode(r.Audit.Verdict), mdCode(r.Audit.Why()))
		}
	}
	if len(s.Datasets) > 0 {
		b.WriteString("\n#### Datasets\n\n| Dataset | Variant | Runs | Pass rate | Accuracy | Macro precision | Macro recall | Macro F1 |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, d := range s.Datasets {
			for _, v := range d.Tasks {
				acc, p, r, f1 := "-", "-", "-", "-"
				if c := v.Classification; c != nil {
					acc, p, r, f1 = pct(c.Accuracy), fmt.Sprintf("%.2f", c.MacroPrecision), fmt.Sprintf("%.2f", c.MacroRecall), fmt.Sprintf("%.2f", c.MacroF1)
				}
				fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", mdCode(d.TaskID), mdCode(v.VariantID), v.Runs, pct(v.PassRate), acc, p, r, f1)
			}
		}
	}
	if steps := stepRows(s); len(steps) > 0 {
		b.WriteString("\n#### Steps of multi-step tasks\n\n| Variant | Task | Step | Ran | Skipped | Passed | Pass rate |\n|---|---|---|---:|---:|---:|---:|\n")
		for i, r := range steps {
			if i == MarkdownFailingRows {
				fmt.Fprintf(&b, "\n%d more steps in summary.json (pass_rate_by_step).\n", len(steps)-i)
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %d %s | %d | %d | %d | %s |\n", mdCode(r.variant), mdCode(r.task), r.n, mdCode(r.step.Name),
				r.step.Runs, r.step.Skipped, r.step.Passed, pct(r.step.PassRate))
		}
	}
	type failing struct {
		v, t Stats
		why  string
	}
	var fails []failing
	for _, v := range s.Variants {
		for _, t := range v.Tasks {
			if t.Runs > 0 && t.Passed < t.Runs {
				fails = append(fails, failing{v, t, firstFailure(e, v.VariantID, t.TaskID)})
			}
		}
	}
	sort.SliceStable(fails, func(i, j int) bool { return fails[i].t.PassRate < fails[j].t.PassRate })
	if len(fails) > 0 {
		fmt.Fprintf(&b, "\n#### Failing tasks (%d, worst first)\n\n", len(fails))
		b.WriteString("| Variant | Task | Passed | Mean score | First failed criterion |\n|---|---|---:|---:|---|\n")
		for i, f := range fails {
			if i == MarkdownFailingRows {
				fmt.Fprintf(&b, "\n%d more in the HTML report.\n", len(fails)-i)
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %d of %d | %.2f | %s |\n", mdCode(f.v.VariantID), mdCode(f.t.TaskID), f.t.Passed, f.t.Runs, f.t.MeanScore, f.why)
		}
	}
	if e != nil {
		fmt.Fprintf(&b, "\nHTML report: %s\n", mdCode(filepath.Join(e.Dir, HTMLFile)))
	}
	return []byte(b.String())
}

// statusList is "SUCCESS 3, FAILURE 1": status names are the supervisor's own, but a
// summary read back is input, so each goes through mdCode's filter too.
func statusList(m map[string]int) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %d", mdCode(k), m[k]))
	}
	return strings.Join(parts, ", ")
}

// firstFailure is the first failed criterion (description and details) of the first run
// of variant/task that did not pass, or its status and error.
func firstFailure(e *Experiment, variant, taskID string) string {
	if e == nil {
		return "-"
	}
	for _, r := range e.runs(variant, taskID) {
		res := r.Result
		if res == nil || passed(res) {
			continue
		}
		steps := taskStepList(res)
		for _, st := range res.TaskSteps { // a multi-step run: the criterion's step named
			for _, c := range st.Criteria {
				if !c.Passed {
					return fmt.Sprintf("repeat %d: %sstep %d %s: %s: %s", r.Repeat, steps, st.N, mdCode(st.Name), mdCode(criterionName(c)), mdCode(c.Details))
				}
			}
		}
		for _, c := range res.Criteria {
			if !c.Passed {
				return fmt.Sprintf("repeat %d: %s%s: %s", r.Repeat, steps, mdCode(criterionName(c)), mdCode(c.Details))
			}
		}
		return fmt.Sprintf("repeat %d: %s%s %s", r.Repeat, steps, mdCode(res.Status), mdCode(res.Error))
	}
	return "-"
}

// criterionName is a criterion's description, else its type.
func criterionName(c record.CriterionResult) string {
	if c.Description != "" {
		return c.Description
	}
	return c.Type
}

// taskStepList is a multi-step run's steps, each with its status and score ("steps: 1
// `scaffold` `SUCCESS` 1.00, 2 `implement` `FAILURE` 0.00; "), "" for a run without steps.
func taskStepList(res *record.Result) string {
	if len(res.TaskSteps) == 0 {
		return ""
	}
	parts := make([]string, 0, len(res.TaskSteps))
	for _, s := range res.TaskSteps {
		parts = append(parts, fmt.Sprintf("%d %s %s %.2f", s.N, mdCode(s.Name), mdCode(s.Status), s.Score))
	}
	return "steps: " + strings.Join(parts, ", ") + "; "
}

// stepRow is one step of a multi-step task inside a variant (summary.json's
// pass_rate_by_step), for Markdown's table of steps.
type stepRow struct {
	variant, task string
	n             int // 1-based
	step          StepRate
}

// stepRows lists every step of every multi-step task of every variant, in the summary's order.
func stepRows(s *Summary) []stepRow {
	var out []stepRow
	for _, v := range s.Variants {
		for _, t := range v.Tasks {
			for i, st := range t.PassRateByStep {
				out = append(out, stepRow{v.VariantID, t.TaskID, i + 1, st})
			}
		}
	}
	return out
}

// MarkdownComparison renders a comparison: the verdict counts, every row with a verdict
// (regressions first) and the rest, and the plan's differences when they were allowed.
func MarkdownComparison(c *Comparison) []byte {
	var b strings.Builder
	reg, imp := c.Regressions(), c.Improvements()
	fmt.Fprintf(&b, "### ceval compare: %d regressed, %d improved\n\n", len(reg), len(imp))
	fmt.Fprintf(&b, "Current run %s against baseline %s. Verdicts hold at %.0f%% confidence for the whole comparison "+
		"(Bonferroni over %d intervals, each at %.2f%%): pass rates by Newcombe's score interval (a variant's over its tasks paired by task, "+
		"a task's repeats counted as one task's evidence), mean scores by Welch's.\n\n",
		mdCode(c.CurrentID), mdCode(c.BaselineID), 100*c.Confidence, c.Tests, 100*c.PerTest)
	if len(c.Incomplete) > 0 {
		fmt.Fprintf(&b, "Incomplete: %s (runs without a result are left out).\n\n", strings.Join(c.Incomplete, " and "))
	}
	for _, side := range []string{"baseline", "current"} {
		if n := c.NotGraded[side]; n > 0 {
			fmt.Fprintf(&b, "The %s has %d ERROR or NOT_GRADED runs (ceval's side, not the agent's), counted as not passed.\n\n", side, n)
		}
	}
	b.WriteString("| Verdict | Variant | Task | Pass rate | Change (interval) | Mean score | Change (interval) |\n|---|---|---|---|---|---|---|\n")
	var rows []Delta
	for _, v := range c.Variants {
		rows = append(rows, v)
		rows = append(rows, v.Tasks...)
	}
	sort.SliceStable(rows, func(i, j int) bool { return verdictRank(rows[i].Verdict) < verdictRank(rows[j].Verdict) })
	shown := rows
	if len(rows) > MarkdownComparisonRows {
		shown = rows[:MarkdownComparisonRows]
	}
	for _, d := range shown {
		task := "all tasks"
		if d.TaskID != "" {
			task = mdCode(d.TaskID)
			if d.DigestChanged {
				task += " (changed)"
			}
		}
		score := "not tested"
		if d.ScoreTested {
			score = fmt.Sprintf("%+.2f (%+.2f to %+.2f)", d.MeanScoreDiff, d.MeanScoreCI[0], d.MeanScoreCI[1])
		}
		verdict := string(d.Verdict)
		if d.Verdict == Regressed {
			verdict = "**regressed**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s of %d → %s of %d | %+.0f pts (%+.0f to %+.0f) | %.2f → %.2f | %s |\n",
			verdict, mdCode(d.VariantID), task, pct(d.Baseline.PassRate), d.Baseline.Runs, pct(d.Current.PassRate), d.Current.Runs,
			100*d.PassRateDiff, 100*d.PassRateCI[0], 100*d.PassRateCI[1], d.Baseline.MeanScore, d.Current.MeanScore, score)
	}
	if left := rows[len(shown):]; len(left) > 0 {
		counts := map[Verdict]int{}
		for _, d := range left {
			counts[d.Verdict]++
		}
		fmt.Fprintf(&b, "\n%d more rows (%d regressed, %d improved, %d no evidence): see the text or JSON of ceval compare.\n",
			len(left), counts[Regressed], counts[Improved], counts[NoEvidence])
	}
	for _, v := range c.BelowRate {
		fmt.Fprintf(&b, "\nVariant %s passes %s, under the gate's %s.\n", mdCode(v.VariantID), pct(v.PassRate), pct(c.FailUnder))
	}
	if len(c.PlanChanges) > 0 {
		fmt.Fprintf(&b, "\n#### Plan changes (%d; compared: the pairs both runs hold)\n\n| Variant | Task | Change |\n|---|---|---|\n", len(c.PlanChanges))
		for i, p := range c.PlanChanges {
			if i == MarkdownComparisonRows {
				fmt.Fprintf(&b, "\n%d more plan changes: see the text or JSON of ceval compare.\n", len(c.PlanChanges)-i)
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", mdCode(p.VariantID), mdCode(p.TaskID), p.Change)
		}
	}
	return []byte(b.String())
}
