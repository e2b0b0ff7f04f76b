package report

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"ceval.dev/ceval/audit/verdict"
)

// TaskAudit is a task's `ceval audit` verdict as a report shows it (from verdict.File in the
// experiment's directory: ceval report --audit FILE or ceval run --audit FILE put it there).
type TaskAudit struct {
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons,omitempty"`
	// Stale: the audit saw another version of the task (another digest: the task file,
	// its material, the experiment's defaults or the variant changed, or the task file was
	// audited alone), so the verdict may not hold for these runs.
	Stale bool `json:"stale,omitempty"`
}

// maxAuditReasons caps the reasons carried per task.
const maxAuditReasons = 20

// loadAudit reads expDir's audit.json; nil when there is none.
func loadAudit(expDir string) ([]verdict.Report, error) {
	reps, err := verdict.Read(filepath.Join(expDir, verdict.File))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return reps, err
}

// auditFor finds the verdict for a task under a variant: the audit of that variant's task,
// else of the task file; one of the same digest first.
func auditFor(reps []verdict.Report, variant, taskID, sha string) *TaskAudit {
	var best *verdict.Report
	for _, want := range []string{variant, ""} {
		for i := range reps {
			r := &reps[i]
			if r.TaskID != taskID || r.Variant != want {
				continue
			}
			if r.TaskSHA256 != "" && r.TaskSHA256 == sha {
				return taskAudit(r, false)
			}
			if best == nil {
				best = r
			}
		}
	}
	if best == nil {
		return nil
	}
	return taskAudit(best, true)
}

func taskAudit(r *verdict.Report, stale bool) *TaskAudit {
	a := &TaskAudit{Verdict: r.Verdict, Stale: stale}
	a.Reasons = r.Reasons[:min(len(r.Reasons), maxAuditReasons)]
	return a
}

// AuditRow is one task's verdict under one variant, for the report's audit table.
type AuditRow struct {
	Variant, TaskID string
	Audit           *TaskAudit
}

// AuditRows lists the summary's verdicts, variant by variant in plan order; none when the
// experiment has no audit.json.
func AuditRows(s *Summary) []AuditRow {
	var out []AuditRow
	for _, v := range s.Variants {
		for _, t := range v.Tasks {
			if t.Audit != nil {
				out = append(out, AuditRow{Variant: v.VariantID, TaskID: t.TaskID, Audit: t.Audit})
			}
		}
	}
	return out
}

// Why is the verdict's first reason, with "(stale)" when the audit saw another version.
func (a *TaskAudit) Why() string {
	why := ""
	if len(a.Reasons) > 0 {
		why = a.Reasons[0]
		if len(a.Reasons) > 1 {
			why += fmt.Sprintf(" (and %d more)", len(a.Reasons)-1)
		}
	}
	if a.Stale {
		why = strings.TrimSpace("audited another version of the task: run ceval audit again. " + why)
	}
	return why
}
