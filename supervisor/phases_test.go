package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
)

// TestRedactLogsUnwritableLogFailsTheRun: a log the secrets cannot be scrubbed from must
// fail the run (the secret would stay on disk), not be dropped silently.
func TestRedactLogsUnwritableLogFailsTheRun(t *testing.T) {
	dir := t.TempDir()
	secret := "sk-ant-SECRET-0123456789"
	if err := os.WriteFile(filepath.Join(dir, record.StdoutFile), []byte("key "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory where the stderr log should be: reading it fails.
	if err := os.Mkdir(filepath.Join(dir, record.StderrFile), 0o700); err != nil {
		t.Fatal(err)
	}
	r := &run{dir: dir, secrets: []string{secret}, redact: Redactor([]string{secret}), res: &record.Result{Complete: true}}
	err := r.redactLogs(context.Background())
	if err == nil || !strings.Contains(err.Error(), record.StderrFile) {
		t.Fatalf("redactLogs = %v, want an error naming %s", err, record.StderrFile)
	}
	var ie *InfraError
	if !errors.As(err, &ie) || r.res.Complete {
		t.Fatalf("err %T, complete %v: want an InfraError and an incomplete run", err, r.res.Complete)
	}
	data, _ := os.ReadFile(filepath.Join(dir, record.StdoutFile))
	if strings.Contains(string(data), secret) {
		t.Fatalf("stdout log still holds the secret: %q", data)
	}
}

// TestRedactLogsMissingLogIsNothingToRedact: no log, no secret in it.
func TestRedactLogsMissingLogIsNothingToRedact(t *testing.T) {
	r := &run{dir: t.TempDir(), secrets: []string{"x-secret"}, redact: Redactor([]string{"x-secret"}), res: &record.Result{}}
	if err := r.redactLogs(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestPhaseErrorNamesThePhaseOnce: a failure says which phase it came from, keeps whose
// fault it was, and is not renamed by a later phase.
func TestPhaseErrorNamesThePhaseOnce(t *testing.T) {
	err := inPhase(PhaseSnapshot, &InfraError{errors.New("disk full")})
	err = inPhase(PhaseRecord, err)
	if err.Error() != "snapshot: disk full" {
		t.Fatalf("error %q, want %q", err, "snapshot: disk full")
	}
	var ie *InfraError
	var pe *PhaseError
	if !errors.As(err, &ie) || !errors.As(err, &pe) || pe.Phase != PhaseSnapshot {
		t.Fatalf("error %#v lost its phase or its kind", err)
	}
	if inPhase(PhaseGrade, nil) != nil {
		t.Fatal("inPhase(nil) is not nil")
	}
}
