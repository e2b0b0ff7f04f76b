package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/importer"
	"ceval.dev/ceval/task"
)

func newImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Convert task files written for other harnesses into ceval's format",
	}
	cmd.AddCommand(newImportCoderEvalCmd(), newImportHarborCmd())
	return cmd
}

func newImportCoderEvalCmd() *cobra.Command {
	var out string
	var keep bool
	var root, report string
	cmd := &cobra.Command{
		Use:   "coder-eval SRC... --out DIR",
		Short: "Convert coder_eval task files (files, or directories searched for *.yaml)",
		Long: "coder-eval converts each coder_eval task file into a ceval task file under --out, one output\n" +
			"file per input, keeping comments on the fields it carries over. A directory is mirrored under\n" +
			"DIR/<its name> with its other files (prompts, references, templates) copied along; links are\n" +
			"never followed. Every field that has no ceval equivalent is listed as FILE:LINE: unmapped: with\n" +
			"a reason, and an unmappable criterion is left out, or kept as a placeholder that always fails\n" +
			"with --keep-unmapped. Each output is then validated as ceval would load it. With --root ROOT\n" +
			"(tasks naming templates elsewhere in the tree, e.g. ../../skills/x), ROOT is mirrored into DIR\n" +
			"and the outputs validate (and later run) with --root DIR.\n" +
			"Exit 0 when everything mapped and validated, 1 when something did not, 2 on bad arguments.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return exitWith(exitInvalid, errors.New("--out DIR is required (where the converted files go)"))
			}
			results, err := importer.ImportCoderEval(args, out, importer.Options{KeepUnmapped: keep, Root: root})
			if report != "" {
				if werr := writeImportReport(report, results); werr != nil {
					return exitWith(exitInvalid, werr)
				}
			}
			return reportImport(cmd, results, err)
		},
	}
	cmd.Flags().StringVar(&report, "report", "", "write a JSON report to this file: per input, its mapped (noted) and unmapped fields with reasons, the output path, and whether it validates")
	cmd.Flags().StringVar(&out, "out", "", "directory to write the converted files into")
	cmd.Flags().StringVar(&root, "root", "", "declared root of the inputs: the whole tree is mirrored into --out (material anywhere in it comes along) and the outputs validate with --root OUT")
	cmd.Flags().BoolVar(&keep, "keep-unmapped", false, "keep each unmappable criterion as a placeholder that always fails")
	return cmd
}

// reportImport prints each file's problems and outcome; exit 1 unless every file mapped
// completely and validates.
func reportImport(cmd *cobra.Command, results []importer.FileResult, err error) error {
	bad := 0
	for _, r := range results {
		for _, p := range r.Problems {
			fmt.Fprintln(cmd.ErrOrStderr(), p)
		}
		if !r.OK() {
			bad++
		}
		if r.Output == "" {
			continue
		}
		if r.Invalid != nil {
			printProblems(cmd.ErrOrStderr(), r.Output, r.Invalid)
			continue
		}
		if r.Unmapped() == 0 {
			fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s: ok\n", r.Input, r.Output)
		} else {
			fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s: valid, %d field(s) unmapped\n", r.Input, r.Output, r.Unmapped())
		}
	}
	fmt.Fprintln(cmd.OutOrStdout(), importSummary(results))
	if err != nil {
		return exitWith(exitInvalid, err)
	}
	if bad > 0 {
		return exitWith(exitFailure, fmt.Errorf("%d of %d file(s) did not map completely: see the list above", bad, len(results)))
	}
	return nil
}

// rootHelp describes --root on every command that loads task files.
const rootHelp = "declared root: task files may name material anywhere inside DIR (\"../\" included), nothing outside it (default: each task file's own directory)"

func newImportHarborCmd() *cobra.Command {
	var out, report string
	var keep bool
	cmd := &cobra.Command{
		Use:   "harbor DIR... --out OUT",
		Short: "Convert Harbor / Terminal-Bench 2 task directories",
		Long: "harbor converts each task directory (task.toml, instruction.md, environment/Dockerfile,\n" +
			"tests/test.sh, solution/solve.sh) into OUT/<name>/task.yaml beside a copy of its files:\n" +
			"instruction.md is the prompt, the Dockerfile names an image to build with ceval images build,\n" +
			"the agent's timeout and the environment's cpus/memory/storage become sandbox limits, and\n" +
			"solution/solve.sh becomes solution.script (what ceval audit runs as the oracle). tests/ becomes\n" +
			"grader_files and a run_command in a verifier container (sandbox: container) scored by the\n" +
			"reward tests/test.sh writes; the copies' container paths (the WORKDIR, /tests, /logs/verifier)\n" +
			"are rewritten to ceval's (/workspace, /task/tests, /tmp/logs/verifier), each line a note. A task\n" +
			"without tests/test.sh is reported (a failing placeholder with --keep-unmapped).\n" +
			"Exit 0 when everything mapped, else 1.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return exitWith(exitInvalid, errors.New("--out DIR is required (where the converted tasks go)"))
			}
			results, err := importer.ImportHarbor(args, out, importer.Options{KeepUnmapped: keep})
			if report != "" {
				if werr := writeImportReport(report, results); werr != nil {
					return exitWith(exitInvalid, werr)
				}
			}
			return reportImport(cmd, results, err)
		},
	}
	cmd.Flags().StringVar(&report, "report", "", "write a JSON report to this file: per task, its mapped (noted) and unmapped fields with reasons, the output path, and whether it validates")
	cmd.Flags().StringVar(&out, "out", "", "directory to write the converted tasks into")
	cmd.Flags().BoolVar(&keep, "keep-unmapped", false, "keep a task without tests/test.sh valid with a placeholder criterion that always fails")
	return cmd
}

// needsOutsideRoot says the output does not load only because material it names is not in
// the imported tree: outside the task file's directory or the declared root, or absent from
// the copy (rerun with a --root that holds it, or put it there).
func needsOutsideRoot(err error) bool {
	if err == nil {
		return false
	}
	var ps task.Problems
	if !errors.As(err, &ps) || len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		if !missingMaterial(p.Msg) {
			return false
		}
	}
	return true
}

// missingMaterial says a loader problem is a file or directory the task names that is not
// in the tree it may read.
func missingMaterial(m string) bool {
	for _, s := range []string{"leaves the task file's directory", "leaves the declared root", "outside the declared root", "not found next to the task file", "not found in the declared root"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// unmappedCriteria says a criterion (or a field of one) did not map.
func unmappedCriteria(r importer.FileResult) bool {
	for _, p := range r.Problems {
		if p.Unmapped && strings.HasPrefix(p.Field, "success_criteria") {
			return true
		}
	}
	return false
}

// importSummary is the last line of an import: how many outputs validate, how many need
// material outside --root, how many lost part of a criterion.
func importSummary(results []importer.FileResult) string {
	var n, m, k, j int
	for _, r := range results {
		if r.Output == "" {
			continue
		}
		m++
		if r.Invalid == nil {
			n++
		}
		if needsOutsideRoot(r.Invalid) {
			k++
		}
		if unmappedCriteria(r) {
			j++
		}
	}
	return fmt.Sprintf("%d of %d tasks validate, %d need material outside --root, %d have unmapped criteria", n, m, k, j)
}

type reportField struct {
	Field  string `json:"field"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

type reportFile struct {
	Input            string        `json:"input"`
	Output           string        `json:"output,omitempty"`
	Experiment       bool          `json:"experiment,omitempty"`
	Validates        bool          `json:"validates"`
	Invalid          string        `json:"invalid,omitempty"`
	NeedsOutsideRoot bool          `json:"needs_outside_root,omitempty"`
	Mapped           []reportField `json:"mapped"`   // mapped with a change of meaning (notes)
	Unmapped         []reportField `json:"unmapped"` // lost, with what to do
	Skipped          []string      `json:"skipped,omitempty"`
}

// writeImportReport writes --report: one entry per input file.
func writeImportReport(path string, results []importer.FileResult) error {
	files := []reportFile{}
	for _, r := range results {
		f := reportFile{Input: r.Input, Output: r.Output, Experiment: r.Experiment, Validates: r.Output != "" && r.Invalid == nil,
			NeedsOutsideRoot: needsOutsideRoot(r.Invalid), Mapped: []reportField{}, Unmapped: []reportField{}}
		if r.Invalid != nil {
			f.Invalid = r.Invalid.Error()
		}
		for _, p := range r.Problems {
			switch {
			case p.Skipped != "":
				f.Skipped = append(f.Skipped, p.File+": "+p.Skipped)
			case p.Unmapped:
				f.Unmapped = append(f.Unmapped, reportField{p.Field, p.Line, p.Reason})
			default:
				f.Mapped = append(f.Mapped, reportField{p.Field, p.Line, p.Reason})
			}
		}
		files = append(files, f)
	}
	data, err := json.MarshalIndent(map[string]any{"files": files, "summary": importSummary(results)}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("--report %s: %v", path, err)
	}
	return nil
}
