package wasm

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

// The task view is /task: the task's grader_files and nothing else of the task directory,
// read by ceval through the task directory's handle held since load (no link followed out
// of it; links inside travel as target strings) and streamed to the worker like the reference view.

// sendTaskView streams the grader files as the task view. More than maxBytes of files is
// an error: the task asks for more than the sandbox holds. A failure half-way leaves the
// worker mid-view, so the caller must stop that worker.
func sendTaskView(w io.Writer, files []task.GraderFile, maxBytes int64) error {
	if err := wire.WriteJSON(w, wire.OpViewBegin, wire.ViewBegin{Slot: wire.SlotTask}); err != nil {
		return err
	}
	var total int64
	for _, f := range files {
		n, err := sendGraderFile(w, f, maxBytes-total)
		if err != nil {
			return fmt.Errorf("grader_files %s: %w", f.Rel, err)
		}
		total += n
	}
	return wire.WriteFrame(w, wire.OpViewEnd)
}

// sendGraderFile streams one entry (with the directories above it) and returns its bytes.
func sendGraderFile(w io.Writer, f task.GraderFile, maxBytes int64) (int64, error) {
	root := f.Root.Root() // the handle held since load: never the path again
	if root == nil {
		return 0, fmt.Errorf("was not opened at load")
	}
	parts := strings.Split(f.Rel, "/")
	for i := 1; i < len(parts); i++ {
		if err := wire.WriteFrame(w, wire.OpDir, []byte(path.Join(parts[:i]...))); err != nil {
			return 0, err
		}
	}
	r := referenceWalk{root: root, w: w, maxBytes: maxBytes}
	fi, err := root.Lstat(f.Rel)
	if err != nil {
		return 0, err
	}
	switch {
	case fi.IsDir():
		if err := wire.WriteFrame(w, wire.OpDir, []byte(f.Rel)); err != nil {
			return 0, err
		}
		err = r.walk(f.Rel)
	case fi.Mode().IsRegular():
		var data []byte
		var mode fs.FileMode
		if data, mode, err = r.readFile(f.Rel); err == nil {
			err = writeFile(w, f.Rel, mode, data)
		}
	default:
		err = fmt.Errorf("is neither a regular file nor a directory (a link is not followed)")
	}
	return r.bytes, err
}

// graderFilesKey identifies a set of grader files for reuse of the task view.
func graderFilesKey(files []task.GraderFile) string {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%p\x00%s\x00", f.Root, f.Rel)
	}
	return b.String()
}

// prepareTask loads the criterion's grader files as /task (unless the worker holds them)
// and sets TASK_DIR; a criterion of a task without grader_files sees no /task.
func (e *Executor) prepareTask(ctx context.Context, files []task.GraderFile, req *wire.RunRequest) error {
	if len(files) == 0 {
		return nil
	}
	req.Task = true
	req.Env = append(req.Env, "TASK_DIR=/task")
	k := graderFilesKey(files)
	if e.w.task == k {
		return nil
	}
	send := func(w io.Writer) error { return sendTaskView(w, files, e.opts.MaxViewBytes) }
	if err := e.loadView(ctx, "task", send); err != nil {
		return err
	}
	e.w.task = k
	return nil
}
