package importer

import (
	"os"
	"path/filepath"
	"testing"
)

// A Harbor import copies the task's YAML files as they are, as it does every other file: a
// test's tests/fixtures.yaml, and environment/docker-compose.yaml, whose build contexts a run
// reads again to repeat the build command of a missing service image. Red without the fix:
// both were left out (the tests then failed on a missing file).
func TestImportHarborCopiesTheTasksYAMLFiles(t *testing.T) {
	src := t.TempDir()
	task := filepath.Join(src, "yaml-files")
	for rel, text := range map[string]string{
		"task.toml":                          "version = \"1.0\"\n",
		"instruction.md":                     "Do it.\n",
		"tests/test.sh":                      "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
		"tests/fixtures.yaml":                "answer: 42\n",
		"environment/Dockerfile":             "FROM debian:bookworm-slim\nRUN true\n",
		"environment/docker-compose.yaml":    "services:\n  kv:\n    build: kv\n    expose: [\"7000\"]\n",
		"environment/kv/Dockerfile":          "FROM busybox:1.36\n",
		"environment/kv/config/settings.yml": "port: 7000\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(task, rel)), 0o755)
		os.WriteFile(filepath.Join(task, rel), []byte(text), 0o644)
	}
	out := t.TempDir()
	if _, err := ImportHarbor([]string{task}, out, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"tests/fixtures.yaml", "environment/docker-compose.yaml", "environment/kv/config/settings.yml"} {
		want, _ := os.ReadFile(filepath.Join(task, rel))
		if got, err := os.ReadFile(filepath.Join(out, "yaml-files", rel)); err != nil || string(got) != string(want) {
			t.Errorf("%s: %q, %v; want a copy", rel, got, err)
		}
	}
}
