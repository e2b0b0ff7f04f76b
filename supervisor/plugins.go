package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"ceval.dev/ceval/bundle"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
)

// CodexSkillsDir is where Codex looks for user skills below HOME (it follows symlinked
// skill directories there); each plugin's skills/ is linked in under the plugin's name.
const CodexSkillsDir = ".agents/skills"

// preparePlugins puts each of the task's plugins into the run directory as a verified bundle
// (a source tree is built, a built bundle verified and copied, both through the handle the
// task opened at load, never by the task's path) and returns the read-only mounts of their
// trees: what the agent sees is what was validated, whatever the task's paths name by now.
// Drift or a refused source is the task's fault (sandbox.InputError); anything else is ceval's
// (InfraError).
func preparePlugins(t *task.Task, runDir string, emit func(string, map[string]any)) ([]record.PluginResult, []oci.Mount, error) {
	var results []record.PluginResult
	var mounts []oci.Mount
	for _, p := range t.Plugins {
		src := p.Dir.Root()
		if src == nil {
			return results, nil, &sandbox.InputError{Err: fmt.Errorf("plugin %s: not opened with the task", p.Name)}
		}
		r := record.PluginResult{Name: p.Name, Source: p.Dir.Path, Bundle: filepath.Join(runDir, record.PluginsDir, p.Name)}
		r.Mount = p.Mount
		if err := os.MkdirAll(filepath.Dir(r.Bundle), 0o700); err != nil {
			return results, nil, &InfraError{err}
		}
		var err error
		if bundle.IsBundleRoot(src) {
			_, err = bundle.CopyFrom(src, p.Dir.Path, r.Bundle)
		} else {
			r.Built = true
			_, err = bundle.BuildFrom(src, p.Dir.Path, r.Bundle, bundle.Options{})
		}
		if err != nil {
			return results, nil, bundleError(p.Name, err)
		}
		m, err := bundle.Verify(r.Bundle)
		if err != nil {
			return results, nil, bundleError(p.Name, err)
		}
		r.SHA256Before = m.TreeSHA256
		for _, e := range m.Entries {
			if e.Path == "skills" && e.Kind == bundle.KindDir {
				r.HasSkills = true
			}
		}
		results = append(results, r)
		mounts = append(mounts, oci.Mount{Source: filepath.Join(r.Bundle, bundle.TreeDir), Destination: p.Mount})
		emit("plugin_verified", map[string]any{"name": r.Name, "bundle": r.Bundle, "built": r.Built, "mount": r.Mount, "tree_sha256": r.SHA256Before})
	}
	return results, mounts, nil
}

func bundleError(name string, err error) error {
	var re *bundle.RefusedError
	var ie *bundle.InputError
	var de *bundle.DriftError
	if errors.As(err, &re) || errors.As(err, &ie) || errors.As(err, &de) {
		return &sandbox.InputError{Err: fmt.Errorf("plugin %s: %w", name, err)}
	}
	return &InfraError{fmt.Errorf("plugin %s: %w", name, err)}
}

// verifyPluginsAfter verifies every bundle again once the agent is gone and records the
// digest its tree has now; any drift (which the read-only mount should make impossible
// from inside) fails the run.
func verifyPluginsAfter(results []record.PluginResult, emit func(string, map[string]any)) error {
	var errs []error
	for i := range results {
		r := &results[i]
		m, err := bundle.Verify(r.Bundle)
		var de *bundle.DriftError
		switch {
		case errors.As(err, &de):
			r.SHA256After = de.Got
			errs = append(errs, fmt.Errorf("plugin %s changed during the run: %w", r.Name, err))
		case err != nil:
			errs = append(errs, fmt.Errorf("plugin %s: %w", r.Name, err))
		default:
			r.SHA256After = m.TreeSHA256
		}
		emit("plugin_reverified", map[string]any{"name": r.Name, "tree_sha256": r.SHA256After, "unchanged": err == nil})
	}
	return errors.Join(errs...)
}

// linkCodexSkills links each plugin's skills/ into Codex's user skills directory below the
// agent's home (a host path), so Codex finds them where it looks.
func linkCodexSkills(home string, results []record.PluginResult) error {
	root, err := os.OpenRoot(home)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, r := range results {
		if !r.HasSkills {
			continue
		}
		if err := root.MkdirAll(CodexSkillsDir, 0o755); err != nil {
			return err
		}
		if err := root.Symlink(path.Join(r.Mount, "skills"), path.Join(CodexSkillsDir, r.Name)); err != nil {
			return fmt.Errorf("link skills of plugin %s: %w", r.Name, err)
		}
	}
	return nil
}
