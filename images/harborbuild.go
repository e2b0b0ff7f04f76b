package images

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/task"
)

// A task imported from Harbor names the image harbor/<task_id>:latest for its
// environment/Dockerfile, and harbor/<task_id>-<service>:latest for a compose service built
// from a context, which `ceval import harbor` said to build first. When one is missing at run
// time, HarborBuildHint repeats the import's build command, read again from the imported
// task's own copy of environment/ (its Dockerfile, its docker-compose.yaml).

// maxComposeBytes bounds the compose file read for the hint.
const maxComposeBytes = 1 << 20

// HarborBuildHint is `ceval images build NAME -f DOCKERFILE [CONTEXT]` for image when it is an
// image the Harbor import named for t ("" otherwise, or when the task's files do not say how
// to build it).
func HarborBuildHint(t *task.Task, image string) string {
	name := strings.TrimSuffix(strings.TrimPrefix(image, "docker.io/"), ":latest")
	if t.Dir == "" {
		return ""
	}
	env := filepath.Join(t.Dir, "environment")
	if name == "harbor/"+t.ID {
		// the task's own image: environment/Dockerfile, as the import printed it
		if fi, err := os.Lstat(filepath.Join(env, "Dockerfile")); err != nil || !fi.Mode().IsRegular() {
			return ""
		}
		return fmt.Sprintf("ceval images build %s -f %s", name, filepath.Join(env, "Dockerfile"))
	}
	svc, ok := strings.CutPrefix(name, "harbor/"+t.ID+"-")
	if !ok {
		return ""
	}
	data, err := readRegularCapped(filepath.Join(env, "docker-compose.yaml"), maxComposeBytes)
	if err != nil {
		return ""
	}
	var doc struct {
		Services map[string]struct {
			Build yaml.Node `yaml:"build"`
		} `yaml:"services"`
	}
	if yaml.Unmarshal(data, &doc) != nil {
		return ""
	}
	s, ok := doc.Services[svc]
	if !ok {
		return ""
	}
	context, dockerfile := s.Build.Value, "Dockerfile"
	if s.Build.Kind == yaml.MappingNode {
		context = ""
		for i := 0; i+1 < len(s.Build.Content); i += 2 {
			switch k, v := s.Build.Content[i].Value, s.Build.Content[i+1].Value; k {
			case "context":
				context = v
			case "dockerfile":
				dockerfile = v
			}
		}
	}
	if s.Build.Kind == 0 || context == "" {
		return ""
	}
	ctx := filepath.Join(env, context)
	if rel, err := filepath.Rel(env, ctx); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "" // not the task's to build from
	}
	return fmt.Sprintf("ceval images build %s -f %s %s", name, filepath.Join(ctx, dockerfile), ctx)
}

// readRegularCapped reads a regular file (no link followed) of at most max bytes.
func readRegularCapped(path string, max int64) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("%s is over %d bytes", path, max)
	}
	return data, err
}
