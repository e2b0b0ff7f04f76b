package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJudgeConfig(t *testing.T) {
	dir := t.TempDir()
	load := func(doc string) (userConfig, error) {
		p := filepath.Join(dir, "config.yaml")
		os.WriteFile(p, []byte(doc), 0o600)
		return loadUserConfig(p, true)
	}
	cfg, err := load("judge: {api: openai, model: gpt-5.5, timeout: 30s, max_calls_per_run: 5}\n")
	if err != nil || cfg.judge == nil || !cfg.judge.Live() {
		t.Fatalf("judge config: %+v %v", cfg.judge, err)
	}
	for doc, want := range map[string]string{
		"judge: {api: gemini, model: x}\n":                        "give anthropic or openai",
		"judge: {api: anthropic}\n":                               "judge.model is required",
		"judge: {api: anthropic, model: m, max_usd_per_run: 1}\n": "needs a price",
		"judge: {api: anthropic, model: m, key: sk-inline}\n":     "field key not found",
	} {
		if _, err := load(doc); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", doc, err, want)
		}
	}
	if _, err := load("prices: {m: {input_per_mtok: 3, output_per_mtok: 15}}\njudge: {api: anthropic, model: m, max_usd_per_run: 1}\n"); err != nil {
		t.Errorf("priced judge: %v", err)
	}
}
