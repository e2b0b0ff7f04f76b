package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/gateway/transcript"
	"ceval.dev/ceval/sandbox"
)

func TestConfigPrices(t *testing.T) {
	dir := t.TempDir()
	load := func(doc string) (userConfig, error) {
		p := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return loadUserConfig(p, true)
	}
	cfg, err := load("allow_env: [X]\nprices:\n  claude-sonnet-4-5: {input_per_mtok: 3, cached_input_per_mtok: 0.3, cache_creation_per_mtok: 3.75, output_per_mtok: 15}\n" +
		"  \"gpt-5.1\": {input_per_mtok: 1.25, output_per_mtok: 10}\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]gateway.Price{
		"claude-sonnet-4-5": {Input: 3, CachedInput: 0.3, CacheCreation: 3.75, Output: 15},
		"gpt-5.1":           {Input: 1.25, CachedInput: 1.25, CacheCreation: 1.25, Output: 10}, // cache rates left out cost as input
	}
	if len(cfg.prices) != 2 || cfg.prices["claude-sonnet-4-5"] != want["claude-sonnet-4-5"] || cfg.prices["gpt-5.1"] != want["gpt-5.1"] {
		t.Fatalf("prices %+v", cfg.prices)
	}
	for doc, msg := range map[string]string{
		"prices: {m: {input_per_mtok: 3}}\n":                             "prices.m: give input_per_mtok and output_per_mtok",
		"prices: {m: {input_per_mtok: 3, output_per_mtok: -1}}\n":        "prices.m: output_per_mtok must be a non-negative number",
		"prices: {m: {input_per_mtok: 3, output_per_mtok: 1, usd: 2}}\n": "field usd not found",
		"prices: {m: {input_per_mtok: three, output_per_mtok: 1}}\n":     "cannot unmarshal",
	} {
		if _, err := load(doc); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: got %v, want %q", doc, err, msg)
		}
	}
}

// A task with max_usd whose model has no price is refused before anything runs (no
// containerd needed), naming the config key to add.
func TestRunRefusesAnUnpricedCostBudget(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "calls.jsonl"), []byte(`{"api":"anthropic","depth":0,"status":200,"response":"{}"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "task.yaml"), []byte("task_id: priced\ninitial_prompt: p\n"+
		"agent: {type: command, command: [\"true\"], model: claude-nopriced, gateway: {mode: replay, fixture: calls.jsonl}}\n"+
		"run_limits: {max_usd: 1}\nsuccess_criteria: [{type: file_exists, path: a}]\n"), 0o644)
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte("prices: {other: {input_per_mtok: 1, output_per_mtok: 2}}\n"), 0o600)
	r := ceval(t, "run", "--config", cfg, "--containerd-address", filepath.Join(dir, "none.sock"), "--runs-dir", filepath.Join(dir, "runs"), filepath.Join(dir, "task.yaml"))
	if r.code != 2 || !strings.Contains(r.stderr, `no price for model "claude-nopriced"`) || !strings.Contains(r.stderr, "prices:") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
		t.Fatal("a refused run made a runs directory")
	}
}

// gateway_allow is read from ceval's config: a list given replaces the default's, and a
// list forwarding a credential header or an API the gateway does not serve is refused.
func TestConfigGatewayAllow(t *testing.T) {
	dir := t.TempDir()
	load := func(doc string) (userConfig, error) {
		p := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return loadUserConfig(p, true)
	}
	cfg, err := load("gateway_allow:\n  anthropic:\n    values: {service_tier: [standard_only, auto]}\n    header_values: {anthropic-beta: [claude-code-20250219]}\n")
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.gatewayAllow[transcript.Anthropic]
	if len(a.Values["service_tier"]) != 2 || len(a.HeaderValues["anthropic-beta"]) != 1 || a.Fields != nil {
		t.Fatalf("allowlist %+v", a)
	}
	for doc, msg := range map[string]string{
		"gateway_allow: {openai: {headers: [Content-Type, Authorization]}}\n": "Authorization, which carries credentials",
		"gateway_allow: {gemini: {fields: [model]}}\n":                        `"gemini", which is not an API`,
		"gateway_allow: {openai: {field: [model]}}\n":                         "field field not found",
	} {
		if _, err := load(doc); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: got %v, want %q", doc, err, msg)
		}
	}
}

// id_range comes from the user's config only; a range that maps host root, runs past
// 2^32-2 or meets a host account's IDs is refused with the key to fix.
func TestConfigIDRange(t *testing.T) {
	dir := t.TempDir()
	load := func(doc string) (userConfig, error) {
		p := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return loadUserConfig(p, true)
	}
	cfg, err := load("id_range: {start: 3221225472, slots: 16}\n")
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.idRange(); r.Start != 3221225472 || r.Slots != 16 {
		t.Fatalf("id_range %+v", r)
	}
	if cfg, err := load("allow_env: [X]\n"); err != nil || cfg.idRange() != (sandbox.IDRange{}) {
		t.Fatalf("no id_range: %+v %v, want the zero range (the default)", cfg.idRange(), err)
	}
	for doc, msg := range map[string]string{
		"id_range: {start: 0, slots: 4}\n":          "id_range",
		"id_range: {start: 4294901760, slots: 1}\n": "id_range",
		"id_range: {start: 2147483648, slots: 0}\n": "slots is 0",
		"id_range: {start: 1, slots: 1, x: 2}\n":    "field x not found",
	} {
		if _, err := load(doc); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: got %v, want %q", doc, err, msg)
		}
	}
}
