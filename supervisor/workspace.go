package supervisor

import (
	"fmt"
	"os"
	"path"

	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/task"
)

// PrepareWorkspace fills an empty workspace directory: the task's template_dir first (a git
// repository arrives with HEAD and its ancestors only), then its starter_files on top, then
// a multi-step task's first step's files.
// Ownership is left to the caller, which hands the tree to the agent without following links.
func PrepareWorkspace(ws string, t *task.Task) error {
	for i, tpl := range t.Sandbox.Workspace.Templates() {
		what := "template_dir"
		if len(t.Sandbox.Workspace.TemplateOverlays) > 0 {
			what = fmt.Sprintf("template_dir[%d] (%s)", i, tpl.Path)
		}
		if err := copyTemplate(tpl, ws); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, f := range t.Sandbox.Workspace.StarterFiles {
		if err := writeInRoot(root, f.Path, []byte(f.Content), 0o644); err != nil {
			return fmt.Errorf("starter file %s: %w", f.Path, err)
		}
	}
	if t.MultiStep() && t.TaskSteps[0].Files != nil {
		return copyStepFiles(t.TaskSteps[0], ws) // the first step's files, over the rest
	}
	return nil
}

// writeInRoot writes a file below root, creating parent directories; os.Root refuses any
// path (or planted symlink) that would leave it.
func writeInRoot(root *os.Root, rel string, data []byte, perm os.FileMode) error {
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyTemplate copies the template tree (task material from a third party) into ws through
// the handle the task opened at load (never by its path, which may name something else by
// now), over whatever ws already holds (the image's working directory): see copyTree.
func copyTemplate(tpl *task.Dir, ws string) error {
	src := tpl.Root()
	if src == nil {
		return fmt.Errorf("%s was not opened with the task", tpl.Path)
	}
	return local.CopyTree(src, ws)
}
