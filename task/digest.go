package task

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Digest returns the sha256 of the task file and everything it references (prompt file,
// reference and template directories, schema files, modules), read through the task's
// directory without following symlinks, so a result names exactly what it was graded by.
func Digest(t *Task) (string, error) {
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	paths := map[string]bool{filepath.Base(t.Path): true}
	outside := map[string]bool{} // material an experiment's defaults or variants named
	add := func(abs string) {
		if abs == "" {
			return
		}
		if rel, err := filepath.Rel(t.Dir, abs); err == nil && filepath.IsLocal(rel) {
			paths[rel] = true
		} else if rel, err := filepath.Rel(t.ExperimentDir, abs); t.ExperimentDir != "" && err == nil && filepath.IsLocal(rel) {
			outside[rel] = true
		}
	}
	// An experiment's prompt file may sit beside the experiment; its text is hashed instead.
	if t.PromptFile != "" && t.ExperimentDir == "" {
		add(filepath.Join(t.Dir, t.PromptFile))
	}
	add(t.Reference)
	add(t.Sandbox.Workspace.TemplateDir)
	for _, m := range t.ProtectedMocks {
		add(m.FixturePath)
	}
	for _, c := range t.Criteria {
		add(c.SchemaFile)
		add(c.Module)
	}
	for _, g := range t.GraderFiles {
		add(filepath.Join(g.Root, g.Rel))
	}
	if t.Agent != nil && t.Agent.Gateway != nil {
		add(t.Agent.Gateway.Fixture)
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	h := sha256.New()
	for _, p := range sorted {
		if err := hashTree(h, root, filepath.ToSlash(p)); err != nil {
			return "", fmt.Errorf("digest %s: %w", p, err)
		}
	}
	if t.ExperimentDir != "" {
		fmt.Fprintf(h, "config %s\nprompt %d:%s\n", t.ConfigSHA256, len(t.Prompt), t.Prompt)
		if err := hashOutside(h, t.ExperimentDir, outside); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashTree feeds p (a file, link or directory tree) into h: each entry as its kind, path
// and content or link target, length-prefixed so no two trees hash alike.
func hashTree(h io.Writer, root *os.Root, p string) error {
	return fs.WalkDir(root.FS(), p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := root.Lstat(q)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			fmt.Fprintf(h, "d %d:%s\n", len(q), q)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := root.Readlink(q)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "l %d:%s %d:%s\n", len(q), q, len(target), target)
		case fi.Mode().IsRegular():
			f, err := root.Open(q)
			if err != nil {
				return err
			}
			defer f.Close()
			fmt.Fprintf(h, "f %d:%s %d\n", len(q), q, fi.Size())
			if _, err := io.CopyN(h, f, fi.Size()); err != nil {
				return err
			}
		}
		return nil
	})
}

// hashOutside feeds the experiment directory's material (relative paths) into h, sorted.
func hashOutside(h io.Writer, dir string, rels map[string]bool) error {
	if len(rels) == 0 {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	sorted := make([]string, 0, len(rels))
	for p := range rels {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	for _, p := range sorted {
		fmt.Fprintf(h, "experiment %d:%s\n", len(p), p)
		if err := hashTree(h, root, filepath.ToSlash(p)); err != nil {
			return fmt.Errorf("digest %s: %w", filepath.Join(dir, p), err)
		}
	}
	return nil
}
