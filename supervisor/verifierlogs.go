package supervisor

import (
	"fmt"
	"os"
	"path/filepath"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
)

// saveCriterionOutputs writes what each executed criterion's container printed (as the
// verifier kept it) into the run directory's verifier/, redacted, replacing an earlier
// grade's, and names the files in the criterion's output_logs. A file that cannot be
// written is said in the criterion's details; it never changes the grade.
func saveCriterionOutputs(dir string, g *grader.Result, redact func(string) string) {
	vdir := filepath.Join(dir, record.VerifierDir)
	_ = os.RemoveAll(vdir) // a regrade's outputs replace the run's
	made := false
	for i := range g.Criteria {
		cr := &g.Criteria[i]
		out := cr.Output
		cr.Output = nil
		if out == nil {
			continue
		}
		if !made {
			if err := os.MkdirAll(vdir, 0o700); err != nil {
				cr.Details += fmt.Sprintf("; output not saved: %v", err)
				continue
			}
			made = true
		}
		for _, s := range []struct {
			name string
			data []byte
		}{{"stdout", out.Stdout}, {"stderr", out.Stderr}} {
			rel := filepath.Join(record.VerifierDir, fmt.Sprintf("criterion-%d.%s.log", i+1, s.name))
			if err := record.WriteFileAtomic(filepath.Join(dir, rel), []byte(redact(string(s.data))), 0o600); err != nil {
				cr.Details += fmt.Sprintf("; %s not saved: %v", s.name, err)
				continue
			}
			cr.OutputLogs = append(cr.OutputLogs, rel)
		}
	}
}
