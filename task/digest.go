package task

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"syscall"

	"ceval.dev/ceval/internal/rootfs"
)

// Material lists the absolute paths of everything the task references, as Digest covers
// them: the files read at load and the directories and files held open since.
func Material(t *Task) []string {
	var out []string
	for abs := range t.read {
		out = append(out, abs)
	}
	for _, d := range append([]*Dir{t.Reference, t.Sandbox.Workspace.TemplateDir, t.Sandbox.PipFindLinks}, t.Sandbox.Workspace.TemplateOverlays...) {
		if d != nil {
			out = append(out, d.Path)
		}
	}
	for _, p := range t.Plugins {
		if p.Dir != nil {
			out = append(out, p.Dir.Path)
		}
	}
	for _, c := range t.Criteria {
		if s, ok := c.Spec.(*WASMSpec); ok && s.Module != nil {
			out = append(out, s.Module.Path)
		}
	}
	for _, s := range t.Services {
		if s.Files != nil {
			out = append(out, s.Files.Path)
		}
	}
	for _, s := range t.TaskSteps {
		if s.Files != nil {
			out = append(out, s.Files.Path)
		}
	}
	for _, g := range t.GraderFiles {
		out = append(out, filepath.Join(g.Root.Path, g.Rel))
	}
	sort.Strings(out)
	return out
}

// Digest returns the sha256 of the task file and everything it references (prompt file,
// fixtures, schema files, reference and template directories, plugins, modules), as ceval
// holds them: files read at load by the bytes read then, directories and modules through the
// handles opened at load, without following symlinks. So a result names exactly what it was
// graded by, whatever the task's paths name by the time it is computed.
func Digest(t *Task) (string, error) {
	type item struct {
		scope, rel string // scope "" is the task's directory, "experiment" the experiment's
		hash       func(h io.Writer, name string) error
	}
	var items []item
	add := func(abs string, hash func(io.Writer, string) error) {
		if abs == "" {
			return
		}
		if rel, err := filepath.Rel(t.Dir, abs); err == nil && filepath.IsLocal(rel) {
			items = append(items, item{"", filepath.ToSlash(rel), hash})
		} else if rel, err := filepath.Rel(t.ExperimentDir, abs); t.ExperimentDir != "" && err == nil && filepath.IsLocal(rel) {
			items = append(items, item{"experiment", filepath.ToSlash(rel), hash})
		}
	}
	for abs, sum := range t.read {
		add(abs, func(h io.Writer, name string) error {
			_, err := fmt.Fprintf(h, "f %d:%s sha256 %x\n", len(name), name, sum)
			return err
		})
	}
	addDir := func(d *Dir) {
		if d != nil {
			add(d.Path, func(h io.Writer, name string) error { return hashTree(h, d.root, name) })
		}
	}
	addDir(t.Reference)
	addDir(t.Sandbox.Workspace.TemplateDir)
	for _, d := range t.Sandbox.Workspace.TemplateOverlays {
		addDir(d)
	}
	addDir(t.Sandbox.PipFindLinks)
	for _, p := range t.Plugins {
		addDir(p.Dir)
	}
	for _, s := range t.Services {
		addDir(s.Files)
	}
	for _, s := range t.TaskSteps {
		addDir(s.Files)
	}
	for _, c := range t.Criteria {
		if s, ok := c.Spec.(*WASMSpec); ok && s.Module != nil {
			m := s.Module
			add(m.Path, func(h io.Writer, name string) error { return hashFile(h, m, name) })
		}
	}
	for _, g := range t.GraderFiles {
		add(filepath.Join(g.Root.Path, g.Rel), func(h io.Writer, name string) error { return hashEntry(h, g, name) })
	}
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].scope != items[j].scope {
			return items[i].scope < items[j].scope
		}
		return items[i].rel < items[j].rel
	})
	h := sha256.New()
	for i, it := range items {
		if i > 0 && it.scope == items[i-1].scope && it.rel == items[i-1].rel {
			continue // the same material named twice
		}
		if it.scope != "" {
			fmt.Fprintf(h, "%s %d:%s\n", it.scope, len(it.rel), it.rel)
		}
		if err := it.hash(h, it.rel); err != nil {
			return "", fmt.Errorf("digest %s: %w", it.rel, err)
		}
	}
	if t.ExperimentDir != "" {
		fmt.Fprintf(h, "config %s\nprompt %d:%s\n", t.ConfigSHA256, len(t.Prompt), t.Prompt)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashFile feeds a file held open since load into h.
func hashFile(h io.Writer, f *File, name string) error {
	if f == nil || f.f == nil {
		return fmt.Errorf("%s was not opened at load", name)
	}
	fi, err := f.f.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "f %d:%s %d\n", len(name), name, fi.Size())
	_, err = io.Copy(h, io.NewSectionReader(f.f, 0, fi.Size()))
	return err
}

// hashTree feeds the tree of root (a directory held open since load, named name) into h:
// each entry as its kind, path and content or link target, length-prefixed so no two trees
// hash alike.
func hashTree(h io.Writer, root *os.Root, name string) error {
	if root == nil {
		return fmt.Errorf("%s was not opened at load", name)
	}
	return fs.WalkDir(rootfs.NonBlocking(root), ".", func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := root.Lstat(q)
		if err != nil {
			return err
		}
		p := path.Join(name, q)
		switch {
		case fi.IsDir():
			fmt.Fprintf(h, "d %d:%s\n", len(p), p)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := root.Readlink(q)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "l %d:%s %d:%s\n", len(p), p, len(target), target)
		case fi.Mode().IsRegular():
			f, err := openRegular(func(flag int) (*os.File, error) { return root.OpenFile(q, flag|noFollow, 0) }, q)
			if err != nil {
				return err
			}
			defer f.Close()
			fmt.Fprintf(h, "f %d:%s %d\n", len(p), p, fi.Size())
			if _, err := io.CopyN(h, f, fi.Size()); err != nil {
				return err
			}
		}
		return nil
	})
}

// hashEntry hashes a grader file (a directory tree or one file) through its root's handle.
func hashEntry(h io.Writer, g GraderFile, name string) error {
	if !g.Dir {
		f, err := g.Root.root.OpenFile(g.Rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		return hashFile(h, &File{Path: name, f: f}, name)
	}
	sub, err := g.Root.Sub(g.Rel)
	if err != nil {
		return err
	}
	defer sub.Close()
	return hashTree(h, sub.root, name)
}
