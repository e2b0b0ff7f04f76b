package images

import (
	"os"
	"path/filepath"
	"testing"

	"ceval.dev/ceval/task"
)

// The build command a missing service image's error repeats is the Harbor import's, read from
// the imported task's compose file: the build context as a string or a mapping with its
// Dockerfile; nothing for another image, a service given an image, or a context outside
// environment/.
func TestHarborBuildHintRepeatsTheImportsBuildCommand(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "environment")
	os.MkdirAll(env, 0o755)
	os.WriteFile(filepath.Join(env, "Dockerfile"), []byte("FROM ubuntu:24.04\nRUN true\n"), 0o644)
	os.WriteFile(filepath.Join(env, "docker-compose.yaml"), []byte(`services:
  main:
    depends_on: [api-server]
  api-server:
    build:
      context: ./api-server
      dockerfile: Dockerfile.dev
  kv:
    build: kv
  db:
    image: postgres:16
  out:
    build: ../../elsewhere
`), 0o644)
	tk := &task.Task{ID: "multi-container", Dir: dir}
	for image, want := range map[string]string{
		"harbor/multi-container-api-server:latest":   "ceval images build harbor/multi-container-api-server -f " + env + "/api-server/Dockerfile.dev " + env + "/api-server",
		"docker.io/harbor/multi-container-kv:latest": "ceval images build harbor/multi-container-kv -f " + env + "/kv/Dockerfile " + env + "/kv",
		"harbor/multi-container-db:latest":           "",
		"harbor/multi-container-out:latest":          "",
		"harbor/multi-container-missing:latest":      "",
		"harbor/other-api-server:latest":             "",
		"ceval.local/default:latest":                 "",
	} {
		if got := HarborBuildHint(tk, image); got != want {
			t.Errorf("%s: %q, want %q", image, got, want)
		}
	}
}
