package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/audit/verdict"
	"ceval.dev/ceval/experiment"
	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/report"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// experimentFlags are run's flags that only experiments take.
type experimentFlags struct {
	parallel  int
	repeats   int
	tags      []string
	overrides []string
	resume    string
	prompts   string // --prompts-from
	retries   int
	gate      gateFlags // --baseline and the gate's flags
	root      string    // --root: the user's declared root (run binds it for task files too)
	exclude   []string  // --exclude-tags
	tasks     []string  // task files named after the experiment file on the command line
	audit     string    // --audit: an audit.json whose verdicts the report shows
	agent     string    // --agent: replaces every variant's agent
	warm      int       // --warm: runs prepared ahead of their turn; < 0: as many as -j
}

func (x *experimentFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.VarP(jobsValue{&x.parallel}, "jobs", "j", "runs at once, or auto: chosen and adjusted from the host's free CPU and memory and the runs' limits (default: the experiment's parallel, else CPUs capped by available memory)")
	f.IntVar(&x.repeats, "repeats", 0, "runs of each task under each variant (default: the experiment's repeats)")
	f.StringSliceVar(&x.tags, "tags", nil, "run only tasks with one of these tags (replaces the experiment's tags)")
	f.StringSliceVar(&x.exclude, "exclude-tags", nil, "leave out tasks with any of these tags (after --tags)")
	f.StringArrayVarP(&x.overrides, "define", "D", nil, "override a task field in every run, as path=value (YAML), e.g. -D agent.model=x; applied last")
	f.StringVar(&x.resume, "resume", "", "finish the experiment in RUN_DIR: skip complete runs, re-run the rest; refuses a changed plan")
	f.StringVar(&x.prompts, "prompts-from", "", "reuse the rephrased prompts (prompts.json) of an earlier experiment directory where their input matches")
	f.IntVar(&x.retries, "retries", experiment.DefaultRetries, "tries again a run that failed before its agent started (never one whose agent started)")
	f.IntVar(&x.warm, "warm", -1, "runs prepared ahead of their turn while others execute (warm sandboxes: servers up, container created, not started); default one more than -j, 0 none")
	f.StringVar(&x.audit, "audit", "", "an audit.json from ceval audit: the experiment's reports show each task's verdict")
	x.gate.add(cmd, true)
}

// loadExperiment loads an experiment with the command line's adjustments.
func (x *experimentFlags) load(path string, cmd *cobra.Command) (*task.Experiment, error) {
	opts := task.ExperimentOptions{Overrides: x.overrides, Root: x.root, ExcludeTags: x.exclude}
	if len(x.tasks) > 0 {
		opts.Tasks = x.tasks
	}
	if cmd.Flags().Changed("tags") {
		opts.Tags = x.tags
	}
	e, err := task.LoadExperiment(path, opts)
	if err != nil {
		return nil, exitWith(exitInvalid, err)
	}
	for _, en := range e.Entries {
		if err := applyAgent(en.Task, x.agent); err != nil {
			return nil, exitWith(exitInvalid, fmt.Errorf("%s: variant %s: %w", path, en.Variant, err))
		}
	}
	if x.repeats > 0 {
		if x.repeats > task.MaxRepeats {
			return nil, exitWith(exitInvalid, fmt.Errorf("--repeats %d is over %d", x.repeats, task.MaxRepeats))
		}
		e.Repeats = x.repeats
	}
	return e, nil
}

// resumeArgs fills in, from plan.json, what a bare `ceval run --resume DIR` leaves out:
// the experiment file, and the command line it ran with (-D, --tags, --repeats, --root,
// --exclude-tags and the task files named after the experiment). A flag given again wins;
// a changed plan is refused later, by the plan's digests.
func (x *experimentFlags) resumeArgs(cmd *cobra.Command, args []string) ([]string, error) {
	plan, err := record.ReadPlan(x.resume)
	if err != nil {
		return nil, exitWith(exitInvalid, fmt.Errorf("--resume %s: %w", x.resume, err))
	}
	if len(args) > 0 {
		return args, nil
	}
	args = append([]string{plan.Experiment}, plan.Tasks...)
	if !cmd.Flags().Changed("define") {
		x.overrides = plan.Overrides
	}
	if !cmd.Flags().Changed("tags") && plan.Tags != nil {
		x.tags = plan.Tags
		_ = cmd.Flags().Set("tags", strings.Join(plan.Tags, ","))
	}
	if x.repeats == 0 {
		x.repeats = plan.Repeats
	}
	if x.root == "" {
		x.root = plan.Root
	}
	if !cmd.Flags().Changed("exclude-tags") {
		x.exclude = plan.ExcludeTags
	}
	if !cmd.Flags().Changed("agent") {
		x.agent = plan.Agent
	}
	return args, nil
}

func runExperiment(cmd *cobra.Command, g *globalOptions, path string, x *experimentFlags, base supervisor.Options) error {
	e, err := x.load(path, cmd)
	if err != nil {
		return err
	}
	if x.parallel != experiment.AutoParallel && (x.parallel < 0 || x.parallel > task.MaxParallel) {
		return exitWith(exitInvalid, fmt.Errorf("-j %d: want 1..%d", x.parallel, task.MaxParallel))
	}
	if x.audit != "" {
		if _, err := verdict.Read(x.audit); err != nil {
			return exitWith(exitInvalid, fmt.Errorf("--audit: %w", err))
		}
	}
	baseline, err := x.gate.baselineFor(e)
	if err != nil {
		return err
	}
	sess, err := g.openSession(cmd)
	if err != nil {
		return err
	}
	defer sess.Close()
	c, cctx := sess.client, sess.ctx
	base.Preflight = sess.preflight
	base.Client, base.Version = c, cevalVersion()
	tier := sessionTier(sess, g, base.Busybox, base.IDs, base.Allow.HostNetwork, base.VerifierNetwork)
	tier.pins = base.Pins
	executor, closeExecutor, err := executorFor(tier, experimentTasks(e)...)
	if err != nil {
		return exitWith(exitInfraErr, err)
	}
	defer closeExecutor()
	base.Executor = executor
	base.RunID = record.NewRunID(time.Now())
	base.AgentOverride = x.agent
	if x.resume != "" {
		abs, err := filepath.Abs(x.resume)
		if err != nil {
			return exitWith(exitInvalid, err)
		}
		base.RunsDir, base.RunID = filepath.Dir(abs), filepath.Base(abs)
	}
	errOut := cmd.ErrOrStderr()
	prog := newProgress(errOut, e.Repeats*len(e.Entries))
	res, err := experiment.Run(cctx, e, experiment.Options{
		Run: base, Parallel: x.parallel, Ahead: warmAhead(x.warm), Retries: x.retries, Resume: x.resume != "", PromptsFrom: x.prompts, Agent: x.agent,
		OnStart:  func(record.PlannedRun, *record.PlanEntry) { prog.started() },
		OnFinish: prog.finished, OnConcurrency: prog.concurrency,
		OnRetry: func(r *experiment.RunRecord, err error) {
			prog.line(fmt.Sprintf("retry %s/%s #%d (the agent had not started): %s", r.Variant, r.TaskID, r.Repeat, clean(err.Error())))
		},
	})
	prog.close()
	if err != nil && res == nil {
		var ie *sandbox.InputError
		if errors.As(err, &ie) {
			return exitWith(exitInvalid, err)
		}
		return exitWith(exitInfraErr, err)
	}
	if x.audit != "" {
		if err := keepAudit(x.audit, res.Dir); err != nil {
			return err
		}
	}
	ex, sum, err := report.Write(res.Dir)
	if err != nil {
		return exitWith(exitInfraErr, fmt.Errorf("write the summary: %w", err))
	}
	printSummary(cmd.OutOrStdout(), res.Dir, sum)
	if err != nil { // the runs are recorded; what failed after them is ceval's
		return exitWith(exitInfraErr, err)
	}
	if s := res.StoppedEarly; s != nil {
		fmt.Fprintf(cmd.OutOrStdout(), "stopped early: %s\ncomplete it with: ceval run --resume %s\n", s.Reason, res.Dir)
	}
	if res.Interrupted {
		done := 0
		for _, r := range ex.Runs {
			if r.Result != nil && r.Result.Complete {
				done++
			}
		}
		return exitWith(exitInfraErr, fmt.Errorf("interrupted: %d of %d runs complete; nothing of the stopped runs is left in containerd.\nresume with: ceval run --resume %s", done, len(ex.Runs), res.Dir))
	}
	if baseline != nil {
		code, err := x.gate.compare(cmd.OutOrStdout(), baseline, sum, "text")
		if err != nil {
			return err
		}
		return exitCode(worseExit(code, infraExit(ex)))
	}
	if x.gate.failUnder > 0 {
		return exitCode(worseExit(x.gate.gateWithoutBaseline(cmd.OutOrStdout(), sum), infraExit(ex)))
	}
	return exitCode(experimentExit(ex))
}

// warmAhead is experiment.Options.Ahead for --warm N: 0 none, < 0 the default.
func warmAhead(n int) int {
	switch {
	case n < 0:
		return 0
	case n == 0:
		return -1
	}
	return n
}

// experimentExit is the worst outcome over the runs: 3 for ERROR/NOT_GRADED (or a run
// missing, unless stop_early left it out and no resume has started), 1 for
// FAILURE/TIMEOUT, else 0.
func experimentExit(e *report.Experiment) int {
	worst := exitOK
	for _, r := range e.Runs {
		if r.Result == nil && e.StoppedEarly != nil && e.StoppedEarly.Resumed == "" {
			continue // stop_early left it out on purpose
		}
		code := exitInfraErr
		if r.Result != nil {
			code = exitCodeFor(r.Result, nil)
		}
		worst = worseExit(worst, code)
	}
	return worst
}

func printSummary(w io.Writer, dir string, s *report.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	ks := make([]string, 0, s.Repeats)
	for k := 1; k <= s.Repeats; k++ {
		ks = append(ks, "PASS@"+strconv.Itoa(k))
	}
	fmt.Fprintf(tw, "VARIANT\tRUNS\tPASS RATE\t95%% INTERVAL\tEFFECTIVE RUNS\tMEAN SCORE\t%s\tSTATUSES\n", strings.Join(ks, "\t"))
	for _, v := range s.Variants {
		var pk []string
		for k := 1; k <= s.Repeats; k++ {
			if p, ok := v.PassAtK[strconv.Itoa(k)]; ok {
				pk = append(pk, fmt.Sprintf("%.2f", p))
			} else {
				pk = append(pk, "-")
			}
		}
		var st []string
		for name, n := range v.Statuses {
			st = append(st, fmt.Sprintf("%s=%d", name, n))
		}
		sort.Strings(st)
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%.1f\t%.2f\t%s\t%s\n", v.VariantID, v.Runs, v.PassRate, report.CIText(v.PassRateCI95),
			v.EffectiveRuns, v.MeanScore, strings.Join(pk, "\t"), strings.Join(st, " "))
	}
	tw.Flush()
	for _, d := range s.Differences {
		fmt.Fprintf(w, "%s - %s: %+.2f %s over %d tasks (%s)\n", d.VariantID, d.Versus, d.PassRateDiff, report.DiffCIText(d.PassRateDiffCI95), d.Tasks, d.Method)
	}
	fmt.Fprintln(w, report.IntervalNote())
	fmt.Fprintf(w, "%s\n%s\n%s\n", filepath.Join(dir, report.SummaryFile), filepath.Join(dir, report.JUnitFile), filepath.Join(dir, report.HTMLFile))
}

func newPlanCmd() *cobra.Command {
	x := &experimentFlags{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan EXPERIMENT [TASK...]",
		Short: "Print the runs an experiment expands to, without running anything",
		Long: "plan prints the runs an experiment expands to. Task files named after the experiment\n" +
			"file replace its tasks list (which may then be left out, as coder_eval's experiments do).",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			x.tasks = args[1:]
			e, err := x.load(args[0], cmd)
			if err != nil {
				return err
			}
			var reuse *record.Prompts
			if x.prompts != "" {
				if reuse, err = record.ReadPrompts(x.prompts); err != nil {
					return exitWith(exitInvalid, fmt.Errorf("--prompts-from %s: %w", x.prompts, err))
				}
			}
			_, pending, err := experiment.ResolvePrompts(cmd.Context(), e, experiment.PromptsOptions{Replay: true, Reuse: reuse})
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			plan, err := experiment.NewPlan(e)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			for _, i := range pending {
				plan.Entries[i].Prompt, plan.Entries[i].StepPrompts = "", nil
				plan.Entries[i].PromptPending = e.Entries[i].Mutation.Describe() + ", when the run starts"
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(plan)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "VARIANT\tTASK\tREPEATS\tAGENT\tIMAGE\tGRADING\tTASK FILE")
			for i, en := range plan.Entries {
				a := e.Entries[i].Task.Agent
				agent := "-"
				if a != nil {
					agent = a.Type
					if a.Model != "" {
						agent += " " + a.Model
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", en.Variant, en.TaskID, plan.Repeats, agent, e.Entries[i].Task.Sandbox.Image, gradingTiers(e.Entries[i].Task), en.TaskPath)
			}
			tw.Flush()
			fmt.Fprintf(cmd.OutOrStdout(), "%d runs (%d tasks x %d variants x %d repeats)\n", len(plan.Runs()),
				len(plan.Entries)/max(len(plan.Variants), 1), len(plan.Variants), plan.Repeats)
			printPlanPrompts(cmd.OutOrStdout(), e, plan)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&x.repeats, "repeats", 0, "runs of each task under each variant")
	f.StringSliceVar(&x.tags, "tags", nil, "only tasks with one of these tags")
	f.StringSliceVar(&x.exclude, "exclude-tags", nil, "leave out tasks with any of these tags (after --tags)")
	f.StringArrayVarP(&x.overrides, "define", "D", nil, "override a task field, as path=value (YAML)")
	f.BoolVar(&asJSON, "json", false, "print the plan as JSON (what plan.json will hold)")
	f.StringVar(&x.prompts, "prompts-from", "", "show the rephrased prompts an earlier experiment directory recorded (prompts.json) where their input matches")
	f.StringVar(&x.root, "root", "", rootHelp)
	return cmd
}

func newReportCmd() *cobra.Command {
	var format, auditFile string
	cmd := &cobra.Command{
		Use:   "report RUN_DIR [--audit AUDIT_JSON]",
		Short: "Re-render an experiment's summary.json, junit.xml and report.html from its run files",
		Long: "report re-renders an experiment's summary.json, junit.xml and report.html from its run files\n" +
			"and prints the leaderboard; --format markdown prints instead a compact Markdown summary for a\n" +
			"pull-request comment or a CI job summary, with every piece of run data quoted inert.\n" +
			"--audit FILE (the audit.json ceval audit wrote) is kept in RUN_DIR, and every report shows\n" +
			"each task's audit verdict (stale when the audit saw another version of the task).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "markdown"); err != nil {
				return err
			}
			if auditFile != "" {
				if err := keepAudit(auditFile, args[0]); err != nil {
					return err
				}
			}
			e, s, err := report.Write(args[0])
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			if format == "markdown" {
				_, err := cmd.OutOrStdout().Write(report.Markdown(e, s))
				return err
			}
			printSummary(cmd.OutOrStdout(), args[0], s)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "text or markdown")
	cmd.Flags().StringVar(&auditFile, "audit", "", "an audit.json from ceval audit: show each task's verdict in the reports")
	return cmd
}

// keepAudit checks an audit.json and copies it into an experiment's directory, where
// report.Write reads it.
func keepAudit(src, expDir string) error {
	reps, err := verdict.Read(src)
	if err != nil {
		return exitWith(exitInvalid, fmt.Errorf("--audit: %w", err))
	}
	if err := record.WriteJSONAtomic(filepath.Join(expDir, verdict.File), reps); err != nil {
		return exitWith(exitInfraErr, fmt.Errorf("--audit: %w", err))
	}
	return nil
}

func newRegradeCmd(g *globalOptions) *cobra.Command {
	var allowHostNet bool
	cmd := &cobra.Command{
		Use:   "regrade RUN_DIR",
		Short: "Grade an experiment's saved snapshots again with the current criteria; no agent runs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			plan, err := record.ReadPlan(dir)
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			e, err := task.LoadExperiment(plan.Experiment, task.ExperimentOptions{Overrides: plan.Overrides, Tags: plan.Tags,
				Root: plan.Root, ExcludeTags: plan.ExcludeTags, Tasks: plan.Tasks})
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			e.Repeats = plan.Repeats
			if prompts, err := record.ReadPrompts(dir); err == nil { // the rephrased prompts the runs had
				if _, _, err := experiment.ResolvePrompts(cmd.Context(), e, experiment.PromptsOptions{Reuse: prompts, Replay: true}); err != nil {
					return exitWith(exitInfraErr, err)
				}
			}
			ucfg, err := g.config(cmd)
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			ex, closeEx, err := executorFor(dialTier(cmd, g, allowHostNet, ucfg.VerifierNetwork), experimentTasks(e)...)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer closeEx()
			done, err := experiment.Regrade(context.WithoutCancel(cmd.Context()), e, dir, grader.Options{Executor: ex, Judge: ucfg.judge})
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			changed, regraded := 0, 0
			for _, r := range done {
				if r.Skipped == "" {
					regraded++
				}
				switch {
				case r.Skipped != "":
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: skipped: %s\n", r.Dir, r.Skipped)
				case r.Result.Status != r.OldStatus:
					changed++
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %s -> %s\n", r.Dir, r.OldStatus, r.Result.Status)
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "regraded %d of %d runs, %d changed status\n", regraded, len(done), changed)
			_, s, err := report.Write(dir)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			printSummary(cmd.OutOrStdout(), dir, s)
			return nil
		},
	}
	cmd.Flags().BoolVar(&allowHostNet, "allow-host-network", false, "let sandbox: container criteria with network: host use the host's network")
	return cmd
}

// changed reports whether any experiment-only flag was given.
func (x *experimentFlags) changed(cmd *cobra.Command) bool {
	for _, name := range []string{"jobs", "repeats", "tags", "exclude-tags", "define", "resume", "prompts-from", "warm", "baseline", "fail-on", "fail-under", "allow-plan-change", "confidence", "audit"} {
		if cmd.Flags().Changed(name) {
			return true
		}
	}
	return false
}

// printProblems prints every problem of an invalid file, one FILE:LINE:COL line each.
func printProblems(w io.Writer, file string, err error) {
	var ps task.Problems
	if !errors.As(err, &ps) {
		fmt.Fprintf(w, "%s: %v\n", file, err)
		return
	}
	for _, p := range ps {
		fmt.Fprintln(w, p)
	}
}

// printPlanPrompts lists the prompts variants and prompt mutations make, and stop_early.
func printPlanPrompts(w io.Writer, e *task.Experiment, plan *record.Plan) {
	header := false
	for i, en := range plan.Entries {
		if en.Prompt == "" && en.PromptPending == "" {
			continue
		}
		if !header {
			fmt.Fprintln(w, "prompts the variants make (plan --json holds them whole):")
			header = true
		}
		how := ""
		if m := e.Entries[i].Mutation; m != nil {
			how = " (" + m.Describe() + ")"
		}
		if en.PromptPending != "" {
			fmt.Fprintf(w, "  %s/%s: rephrased by the judge model of ceval's config when the run starts%s\n", en.Variant, en.TaskID, how)
			continue
		}
		if len(en.StepPrompts) > 0 { // a multi-step task: each step's
			for k, p := range en.StepPrompts {
				fmt.Fprintf(w, "  %s/%s step %d: %s%s\n", en.Variant, en.TaskID, k+1, clipQuoted(p, 160), how)
			}
			continue
		}
		fmt.Fprintf(w, "  %s/%s: %s%s\n", en.Variant, en.TaskID, clipQuoted(en.Prompt, 160), how)
	}
	if s := plan.StopEarly; s != nil {
		fmt.Fprintf(w, "stop early: once %s and %s differ in %s at confidence %g (a sequential sign test over paired runs, checked after every run; first look after %d pairs); ceval run --resume completes a stopped experiment\n",
			s.Compare[0], s.Compare[1], s.Metric, s.Confidence, s.MinRuns)
	}
}

// clipQuoted quotes s, keeping its beginning and end when it is longer than n runes
// (where prefixes and suffixes show).
func clipQuoted(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return strconv.Quote(string(r[:n*2/3])) + "…" + strconv.Quote(string(r[len(r)-n/3:]))
	}
	return strconv.Quote(s)
}
