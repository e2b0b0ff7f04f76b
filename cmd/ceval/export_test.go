package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exportFixtureRun copies atif's recorded Anthropic run into dir.
func exportFixtureRun(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"result.json", "model_calls.jsonl"} {
		data, err := os.ReadFile(filepath.Join("../../atif/testdata/anthropic-run", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestExportRunDir(t *testing.T) {
	dir := t.TempDir()
	exportFixtureRun(t, dir)
	r := ceval(t, "export", dir, "--format", "atif")
	if r.code != 0 || !strings.Contains(r.stdout, "wrote "+filepath.Join(dir, "trajectory.json")) {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "trajectory.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		SchemaVersion string            `json:"schema_version"`
		Steps         []json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal(data, &tr); err != nil || tr.SchemaVersion != "ATIF-v1.7" || len(tr.Steps) != 6 {
		t.Errorf("trajectory.json: %v, %s with %d steps", err, tr.SchemaVersion, len(tr.Steps))
	}
}

func TestExportExperimentDir(t *testing.T) {
	exp := t.TempDir()
	plan := `{"experiment_id":"x","experiment":"/x.yaml","repeats":1,"variants":["default"],"entries":[
		{"variant_id":"default","task_id":"demo.calc","task_path":"/t1.yaml","task_sha256":""},
		{"variant_id":"default","task_id":"demo.cmd","task_path":"/t2.yaml","task_sha256":""},
		{"variant_id":"default","task_id":"demo.pending","task_path":"/t3.yaml","task_sha256":""}]}`
	if err := os.WriteFile(filepath.Join(exp, "plan.json"), []byte(plan), 0o600); err != nil {
		t.Fatal(err)
	}
	calc := filepath.Join(exp, "default", "demo.calc", "1")
	exportFixtureRun(t, calc)
	cmdRun := filepath.Join(exp, "default", "demo.cmd", "1")
	exportFixtureRun(t, cmdRun)
	os.Remove(filepath.Join(cmdRun, "model_calls.jsonl")) // a command agent with no model
	r := ceval(t, "export", exp)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"wrote " + filepath.Join(calc, "trajectory.json"),
		"skipped " + cmdRun + ": no model gateway transcript",
		"skipped " + filepath.Join(exp, "default", "demo.pending", "1") + ": no result.json",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(cmdRun, "trajectory.json")); !os.IsNotExist(err) {
		t.Errorf("the run without model turns got a trajectory: %v", err)
	}
	// A run whose result.json is garbage fails the export (exit 1) and names the run.
	if err := os.WriteFile(filepath.Join(cmdRun, "result.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = ceval(t, "export", exp)
	if r.code != 1 || !strings.Contains(r.stderr, cmdRun) || !strings.Contains(r.stderr, "1 of 3 runs could not be exported") {
		t.Errorf("garbage result.json: exit %d, stderr %s", r.code, r.stderr)
	}
}

func TestExportRefusesBadArguments(t *testing.T) {
	empty := t.TempDir()
	file := filepath.Join(empty, "f")
	os.WriteFile(file, []byte("x"), 0o600)
	garbagePlan := t.TempDir()
	os.WriteFile(filepath.Join(garbagePlan, "plan.json"), []byte("\x00garbage"), 0o600)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", filepath.Join(empty, "missing")}, 2, "no such file or directory: give a run directory"},
		{[]string{"export", file}, 2, "not a directory"},
		{[]string{"export", empty}, 2, "neither a run directory (no result.json) nor an experiment directory (no plan.json)"},
		{[]string{"export", empty, "--format", "inspect"}, 2, "--format inspect: not supported. Inspect's .eval log is a zip archive whose members and their fields are defined only by inspect_ai's Python code"},
		{[]string{"export", empty, "--format", "csv"}, 2, `--format "csv": want one of atif`},
		{[]string{"export"}, 2, "accepts 1 arg"},
		{[]string{"export", garbagePlan}, 1, "the experiment's plan is unreadable"},
	} {
		r := ceval(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", c.args, r.code, c.code, r.stderr, c.want)
		}
	}
}
