package atif

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"ceval.dev/ceval/record"
)

// SkipError says why a run has no trajectory: it has no model gateway transcript, or one
// without a model call (a command agent with no model). Such a run gets no trajectory.json
// (the user's prompt alone is not in the run directory to make one of).
type SkipError struct{ Why string }

func (e *SkipError) Error() string { return e.Why }

// MetaOf is what a run's result.json says of the trajectory: the agent's type as its name,
// the pinned version of its CLI in the image (else "unknown"), its model; the run's path
// (run ID, variant, task, repeat) as the session.
func MetaOf(res *record.Result) Meta {
	a := Agent{Name: res.Agent.Type, Version: "unknown", ModelName: res.Agent.Model}
	if a.Name == "" {
		a.Name = "unknown"
	}
	for _, cli := range strings.Fields(res.Image.AgentCLIs) {
		if name, v, ok := strings.Cut(cli, "@"); ok && name == res.Agent.Type && v != "" {
			a.Version = v
		}
	}
	a.Extra = map[string]any{"ceval_version": res.CevalVersion}
	if res.Image.Name != "" {
		a.Extra["image"] = res.Image.Name
	}
	session := strings.Join([]string{res.RunID, res.Variant, res.TaskID, strconv.Itoa(res.Repeat)}, "/")
	extra := map[string]any{"producer": "ceval", "task_id": res.TaskID, "variant": res.Variant,
		"repeat": res.Repeat, "status": res.Status, "score": res.Score}
	return Meta{Agent: a, SessionID: session, Extra: extra}
}

// FromRun builds the trajectory of the run in dir, whose result.json is res. A run without
// a transcript, or whose transcript holds no model call, is a *SkipError.
func FromRun(dir string, res *record.Result) (*Trajectory, error) {
	path := filepath.Join(dir, record.ModelCallsFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &SkipError{fmt.Sprintf("%s: no model gateway transcript (%s): the agent had no model gateway, so there are no model turns to export", dir, record.ModelCallsFile)}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	meta := MetaOf(res)
	t, err := Build(f, meta)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if fm := t.FinalMetrics; fm != nil && fm.Extra["model_calls"] == 0 {
		return nil, &SkipError{fmt.Sprintf("%s: the transcript holds no readable model call: no model turns to export", path)}
	}
	if t.Agent.ModelName == "" {
		for _, s := range t.Steps {
			if s.ModelName != "" {
				t.Agent.ModelName = s.ModelName
				break
			}
		}
	}
	return t, nil
}

// Marshal encodes a trajectory as indented JSON, every string as it is (no HTML escaping).
func Marshal(t *Trajectory) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteRun writes trajectory.json into the run directory dir (through a temporary file and
// a rename, not synced: the run's result.json write makes it durable). redact, if not nil,
// replaces secrets in the encoded file as it does in result.json. A run without model turns
// gets no file and a *SkipError.
func WriteRun(dir string, res *record.Result, redact func(string) string, sync bool) error {
	t, err := FromRun(dir, res)
	if err != nil {
		return err
	}
	if err := Check(t); err != nil {
		return err
	}
	data, err := Marshal(t)
	if err != nil {
		return err
	}
	if redact != nil {
		data = []byte(redact(string(data)))
	}
	if sync {
		return record.WriteFileAtomic(filepath.Join(dir, File), data, 0o600)
	}
	f, err := os.CreateTemp(dir, "."+File+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // no-op once renamed
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, File))
	}
	return err
}
