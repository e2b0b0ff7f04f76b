package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/audit"
	"ceval.dev/ceval/audit/verdict"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/task"
)

func newAuditCmd(g *globalOptions) *cobra.Command {
	var (
		asJSON  bool
		jobs    int
		leaked  bool
		runsDir string
		busybox string
		only    []string
		pf      pullFlags
	)
	cmd := &cobra.Command{
		Use:   "audit TASK|EXPERIMENT... [--json] [-j N] [--leaked-criteria]",
		Short: "Prove each task solvable and not hackable: run its oracle, a null agent and generic cheats",
		Long: "audit runs, per task and in the real sandbox (the same path as ceval run), command agents\n" +
			"in place of the task's own:\n" +
			"  oracle     the task's solution (solution: {script: F} or {files: DIR}); must reach SUCCESS\n" +
			"  null       does nothing; must not reach SUCCESS\n" +
			"  unchanged  hands the start back unchanged; must not reach SUCCESS\n" +
			"  cheats     generic cheats that know only the prompt, the starting workspace and how\n" +
			"             harnesses grade (" + strings.Join(audit.Cheats, ", ") + ");\n" +
			"             none may reach SUCCESS\n" +
			"and gives each task a verdict: ok, hackable (a baseline or cheat reached SUCCESS; the\n" +
			"criteria it fooled are named), broken (no oracle, or the oracle fails: unsolvable as\n" +
			"written) or error (a run failed on ceval's side). Cheats that raised the score above the\n" +
			"null agent's without reaching SUCCESS are shown too. --leaked-criteria adds an\n" +
			"informational agent that writes only the criteria's literal expectations.\n\n" +
			"Exit 0 when every task is ok, 1 when any is hackable or broken, 2 on invalid input, 3 on\n" +
			"an error.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return exitWith(exitInvalid, errors.New("give task or experiment files to audit"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if jobs < 1 || jobs > task.MaxParallel {
				return exitWith(exitInvalid, fmt.Errorf("-j %d: want 1..%d", jobs, task.MaxParallel))
			}
			var names []string
			for _, o := range only {
				names = append(names, strings.Split(o, ",")...)
			}
			targets, closeTasks, err := auditTargets(args)
			defer closeTasks()
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			ucfg, err := g.config(cmd)
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			// What every audit run shares; each task, as audited, is checked against it before
			// containerd is reached.
			run := runOptions(ucfg, runsDir, busybox)
			if err := audit.Check(targets, run); err != nil {
				return exitWith(exitInvalid, err)
			}
			pins, err := pf.pinner(ucfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			sess, err := g.openSession(cmd)
			if err != nil {
				return err
			}
			defer sess.Close()
			var tasks []*task.Task
			for _, t := range targets {
				tasks = append(tasks, t.Task)
			}
			tier := sessionTier(sess, g, run.Busybox, run.IDs, run.Allow.HostNetwork, run.VerifierNetwork)
			tier.pins = pins
			ex, closeEx, err := executorFor(tier, tasks...)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer closeEx()
			errOut := cmd.ErrOrStderr()
			run.Client, run.Preflight, run.Executor, run.Pins = sess.client, sess.preflight, ex, pins
			o := audit.Options{
				Run:  run,
				Jobs: jobs, LeakedCriteria: leaked,
				Progress: func(t audit.Target, r audit.Run) {
					fmt.Fprintf(errOut, "%-24s %-18s %-10s %.2f\n", auditName(t.Task.ID, t.Variant), r.Agent, orDash(r.Status), r.Score)
				},
			}
			if len(names) > 0 {
				o.Agents = names
			}
			reps, err := audit.Audit(sess.ctx, targets, o)
			if err != nil && reps == nil {
				return exitWith(exitInvalid, err)
			}
			auditDir := filepath.Join(runsDir, o.Run.RunID)
			if werr := writeAuditJSON(auditDir, reps); werr != nil {
				fmt.Fprintf(errOut, "ceval: %v\n", werr)
			} else {
				fmt.Fprintf(errOut, "verdicts in %s: an experiment's reports show them with ceval report RUN_DIR --audit FILE (or ceval run EXPERIMENT --audit FILE)\n", filepath.Join(auditDir, verdict.File))
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(reps); err != nil {
					return exitWith(exitInfraErr, err)
				}
			} else {
				printAudit(cmd.OutOrStdout(), reps)
			}
			switch {
			case err != nil:
				return exitWith(exitInfraErr, fmt.Errorf("audit interrupted: %w", err))
			case audit.Passed(reps):
				return nil
			}
			for _, r := range reps {
				if r.Verdict == audit.Error {
					return exitWith(exitInfraErr, errors.New("an audit run failed on ceval's side, so it proved nothing (see the reasons above)"))
				}
			}
			return exitWith(exitFailure, errors.New("not every task is ok: fix the criteria or the solution, then audit again"))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, `print [{"task_id", "verdict", "reasons", "oracle", "runs", ...}]`)
	f.IntVarP(&jobs, "jobs", "j", 1, "runs at once")
	f.BoolVar(&leaked, "leaked-criteria", false, "also run an informational agent built from the criteria's literal expectations")
	f.StringVar(&runsDir, "runs-dir", "runs", "where the audit's run directories go (RUNS/<run_id>/<variant>-audit-<agent>/...)")
	f.StringVar(&busybox, "busybox", images.DefaultBusybox, "static busybox used to build the default image on first use")
	f.StringArrayVar(&only, "only", nil, "run only these cheats (repeatable, or comma-separated); the oracle, null and unchanged agents always run")
	pf.add(cmd)
	return cmd
}

// strictHelp is validate --strict's part of validate's help.
const strictHelp = "--strict adds warnings, as FILE:LINE:COL, for weak criteria a cheat can pass without solving\n" +
	"the task (the static part of ceval audit): no solution, no gating criterion, only existence\n" +
	"checks, includes without excludes, a pattern that matches an empty file, JSON checked for\n" +
	"fields but not values, and run_command checking only the exit code of code the agent\n" +
	"controls. With --strict, exit 1 when there is any warning."

// printWarnings prints the weak patterns of each task not already in seen (a task file named
// again, or by an experiment) and returns how many it printed. Paths below the working
// directory are printed relative to it.
func printWarnings(w io.Writer, seen map[string]bool, tasks ...*task.Task) int {
	n := 0
	wd, _ := os.Getwd()
	for _, t := range tasks {
		for _, wr := range audit.Lint(t) {
			if rel, err := filepath.Rel(wd, wr.File); err == nil && filepath.IsLocal(rel) {
				wr.File = rel
			}
			if s := wr.String(); !seen[s] {
				seen[s] = true
				fmt.Fprintln(w, s)
				n++
			}
		}
	}
	return n
}

// auditTargets loads every task file and experiment named; close releases them all.
func auditTargets(args []string) ([]audit.Target, func(), error) {
	var targets []audit.Target
	var closers []func() error
	closeAll := func() {
		for _, c := range closers {
			_ = c()
		}
	}
	var problems []error
	given := map[string]bool{}
	for _, a := range args {
		if abs, err := filepath.Abs(a); err == nil {
			if given[abs] {
				continue // named twice: its runs would share their directories
			}
			given[abs] = true
		}
		if task.IsExperiment(a) {
			e, err := task.LoadExperiment(a, task.ExperimentOptions{})
			if err != nil {
				problems = append(problems, err)
				continue
			}
			closers = append(closers, e.Close)
			for _, en := range e.Entries {
				targets = append(targets, audit.Target{Task: en.Task, Variant: en.Variant})
			}
			continue
		}
		t, err := task.Load(a)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		closers = append(closers, t.Close)
		targets = append(targets, audit.Target{Task: t})
	}
	return targets, closeAll, errors.Join(problems...)
}

func criterionNames(cs []audit.Criterion) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

// writeAuditJSON keeps the reports beside the audit's run directories.
func writeAuditJSON(dir string, reps []audit.Report) error {
	data, err := json.MarshalIndent(reps, "", "  ")
	if err == nil {
		err = os.MkdirAll(dir, 0o700)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, verdict.File), append(data, '\n'), 0o600)
	}
	if err != nil {
		return fmt.Errorf("audit.json: %w", err)
	}
	return nil
}

func auditName(id, variant string) string {
	if variant == "" {
		return id
	}
	return variant + "/" + id
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printAudit(w io.Writer, reps []audit.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tVERDICT\tORACLE\tNULL\tCHEATS AT SUCCESS\tCHEATS ABOVE NULL")
	for _, r := range reps {
		oracle := "none"
		if r.Oracle != nil {
			oracle = fmt.Sprintf("%s %.2f", orDash(r.Oracle.Status), r.Oracle.Score)
		}
		null := "-"
		var won, above []string
		for _, run := range r.Runs {
			switch {
			case run.Agent == audit.NullAgent:
				null = fmt.Sprintf("%s %.2f", orDash(run.Status), run.Score)
			case run.Success:
				won = append(won, run.Agent)
			case run.AboveNull:
				above = append(above, fmt.Sprintf("%s %.2f", run.Agent, run.Score))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", auditName(r.TaskID, r.Variant), r.Verdict, oracle, null,
			orDash(strings.Join(won, ", ")), orDash(strings.Join(above, ", ")))
	}
	tw.Flush()
	for _, r := range reps {
		for _, why := range r.Reasons {
			fmt.Fprintf(w, "%s: %s: %s\n", auditName(r.TaskID, r.Variant), r.Verdict, why)
		}
		for _, warn := range r.Warnings {
			fmt.Fprintln(w, warn)
		}
		for _, run := range r.Runs {
			if run.AboveNull && !run.Success && len(run.Fooled) > 0 {
				fmt.Fprintf(w, "%s: note: %s scores %.2f, over the null agent's, passing %s\n",
					auditName(r.TaskID, r.Variant), run.Agent, run.Score, strings.Join(criterionNames(run.Fooled), ", "))
			}
		}
		if l := r.Leaked; l != nil {
			var passed []string
			for _, c := range l.Criteria {
				if c.Passed {
					passed = append(passed, c.String())
				}
			}
			fmt.Fprintf(w, "%s: leaked criteria (informational): %s %.2f; literal expectations alone pass %d of %d criteria",
				auditName(r.TaskID, r.Variant), orDash(l.Status), l.Score, len(passed), len(l.Criteria))
			if len(passed) > 0 {
				fmt.Fprintf(w, ": %s", strings.Join(passed, "; "))
			}
			fmt.Fprintln(w)
		}
	}
}
