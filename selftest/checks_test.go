package selftest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

func TestChecksFlagWhatTheCriteriaCannotSee(t *testing.T) {
	gw := func(tot gateway.Totals) *record.Result {
		return &record.Result{Gateway: &record.GatewayResult{Mode: "replay", GatewayTotals: tot}}
	}
	plug := func(before, after string) *record.Result {
		return &record.Result{Plugins: []record.PluginResult{{Name: "kit", SHA256Before: before, SHA256After: after}}}
	}
	for _, tc := range []struct {
		name   string
		check  func(*record.Result) string
		res    *record.Result
		breach bool
	}{
		{"every endpoint refused, tool stripped", checkGatewayRefusedEndpoints, gw(gateway.Totals{Turns: 1, Refused: 6, StrippedTools: 2}), false},
		{"an endpoint was served", checkGatewayRefusedEndpoints, gw(gateway.Totals{Turns: 1, Refused: 5, StrippedTools: 2}), true},
		{"server tool kept", checkGatewayRefusedEndpoints, gw(gateway.Totals{Turns: 1, Refused: 6}), true},
		{"no gateway record", checkGatewayRefusedEndpoints, &record.Result{}, true},
		{"metered usage", checkGatewayUsage, gw(gateway.Totals{Turns: 1, InputTokens: 11, OutputTokens: 5}), false},
		{"forged usage took", checkGatewayUsage, gw(gateway.Totals{Turns: 1}), true},
		{"forged turns took", checkGatewayUsage, gw(gateway.Totals{Turns: 0, InputTokens: 11, OutputTokens: 5}), true},
		{"plugin unchanged", checkPluginUnchanged, plug("a", "a"), false},
		{"plugin changed", checkPluginUnchanged, plug("a", "b"), true},
		{"plugin not verified after", checkPluginUnchanged, plug("a", ""), true},
		{"no plugin record", checkPluginUnchanged, &record.Result{}, true},
	} {
		if got := tc.check(tc.res); (got != "") != tc.breach {
			t.Errorf("%s: %q, want breach=%v", tc.name, got, tc.breach)
		}
	}
}

func TestAttackEnvironmentCarriesTheCanaryOverTheHosts(t *testing.T) {
	if lookupEnv(nil, "c") != nil {
		t.Error("an attack without variables must keep ceval's own environment")
	}
	t.Setenv("CEVAL_SELFTEST_PROBE", "host")
	l := lookupEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-ant-api03-" + canaryPlaceholder}, "CN")
	if v, _ := l("ANTHROPIC_API_KEY"); v != "sk-ant-api03-CN" {
		t.Errorf("key = %q", v)
	}
	if v, ok := l("CEVAL_SELFTEST_PROBE"); !ok || v != "host" {
		t.Errorf("host variable = %q, %v", v, ok)
	}
}

func TestRunDirLeaksFindsTheKeyInCevalsFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "result.json"), []byte(`{"ok":1}`), 0o600)
	os.WriteFile(filepath.Join(dir, "model_calls.jsonl"), []byte(`{"x-api-key":"sk-ant-api03-SECRET"}`), 0o600)
	leaks := runDirLeaks(&record.Result{Dir: dir}, "sk-ant-api03-SECRET")
	if len(leaks) != 1 || !strings.Contains(leaks[0], "model_calls.jsonl") {
		t.Fatalf("leaks = %q", leaks)
	}
}

// Attacks that must be refused say with what, and everything with a setup names an attack
// of the suite.
func TestSetupsNameSuiteAttacks(t *testing.T) {
	all, err := Attacks()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, a := range all {
		have[a.Name] = true
	}
	for name := range setups {
		if !have[name] {
			t.Errorf("setup for %s, which the suite lacks", name)
		}
	}
	if setups["plugin-source-grading"].refused == "" {
		t.Error("plugin-source-grading must expect a refusal")
	}
}

// author-hostile-wheel's task ships a wheel, declared py3-none-any and pinned by its
// sha256, whose payload is a top-level .pth: loading the task must refuse it at the wheel's
// line, before any agent runs. With the loader's .pth rule removed, the task loads and the
// attack's run would go ahead (a breach).
func TestHostileWheelAttackIsRefusedAtLoad(t *testing.T) {
	all, err := Select([]string{"author-hostile-wheel"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "task")
	if err := materialize(all[0], dir, NewCanary()); err != nil {
		t.Fatal(err)
	}
	want := setups["author-hostile-wheel"].refused
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err == nil {
		tk.Close()
		t.Fatalf("the task loaded: its wheel's .pth was accepted (want a refusal holding %q)", want)
	}
	if want == "" || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "task.yaml:12") {
		t.Fatalf("err %v, want a refusal holding %q at the wheel's line (task.yaml:12)", err, want)
	}
}
