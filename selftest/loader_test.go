package selftest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

// Each loader attack's files are refused by the loader in this process with the problem the
// attack expects, quoting nothing of the canary (the child-process run, with its time and
// memory measured, is cmd/ceval's TestValidateRefusesHostileFilesQuicklyInLittleMemory).
func TestLoaderAttacksAreRefusedWithTheirProblem(t *testing.T) {
	root := t.TempDir()
	for _, a := range loaderAttacks {
		t.Run(a.name, func(t *testing.T) {
			canary := NewCanary()
			dir := filepath.Join(root, a.name)
			file, err := a.write(dir, canary)
			if err != nil {
				t.Fatal(err)
			}
			if data, err := os.ReadFile(filepath.Join(dir, "host", "task.yaml")); err == nil && !strings.Contains(string(data), canary) {
				t.Fatal("the host task lacks the canary")
			}
			if task.IsExperiment(file) {
				_, err = task.LoadExperiment(file, task.ExperimentOptions{})
			} else {
				_, err = task.Load(file)
			}
			var ps task.Problems
			if !errors.As(err, &ps) || !strings.Contains(err.Error(), a.want) {
				t.Fatalf("want a problem with %q, got %v", a.want, err)
			}
			if strings.Contains(err.Error(), canary) {
				t.Fatalf("the problem quotes the canary: %v", err)
			}
		})
	}
}

func TestJudgeLoader(t *testing.T) {
	a := loaderAttack{name: "x", want: "leaves"}
	const canary = "CEVAL-CANARY-x"
	ok := validation{code: 2, output: "exp.yaml:2:9: tasks[0]: leaves the directory\n", seconds: 0.01, maxRSS: 20 << 20}
	cases := []struct {
		name string
		v    func(v validation) validation
		want Outcome
	}{
		{"refused in bounds", func(v validation) validation { return v }, Blocked},
		{"hung", func(v validation) validation { v.hung = true; return v }, Breach},
		{"canary quoted", func(v validation) validation { v.output += "unknown field " + canary; return v }, Breach},
		{"accepted", func(v validation) validation { v.code = 0; return v }, Breach},
		{"too much memory", func(v validation) validation { v.maxRSS = 200 << 20; return v }, Breach},
		{"within the growth over the floor", func(v validation) validation { v.maxRSS = 90 << 20; return v }, Blocked},
		{"past the growth over the floor", func(v validation) validation { v.maxRSS = 110 << 20; return v }, Breach},
		{"too slow", func(v validation) validation { v.seconds = 13; return v }, Breach},
		{"other problem", func(v validation) validation { v.output = "something else"; return v }, Errored},
	}
	for _, c := range cases {
		if got, _, detail := judgeLoader(a, c.v(ok), canary, 30<<20); got != c.want {
			t.Errorf("%s: %s (%s), want %s", c.name, got, detail, c.want)
		}
	}
}
