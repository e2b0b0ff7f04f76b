package task

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"ceval.dev/ceval/internal/rootfs"
)

// A template_dir may hold git repositories (at any depth); ceval rebuilds each with its
// HEAD's history only, from a private copy of its HEAD, refs and objects (see the supervisor).
// Validation refuses a repository that reaches anything outside the template: git would
// follow a symlinked objects/ or refs/, an objects/info/alternates, a commondir or gitdir file
// and some config paths to another repository on the host, whose history would then land in
// the agent's workspace.

// maxTemplateEntries bounds the walk of a template at validation.
const maxTemplateEntries = 1_000_000

// maxGitConfigBytes bounds a repository file read at validation (config, gitdir, commondir,
// alternates).
const maxGitConfigBytes = 1 << 20

// gitPathKeys are config keys (lowercase; includeif.* by prefix) whose value is a path git
// follows.
var gitPathKeys = map[string]bool{"include.path": true, "core.worktree": true, "core.hookspath": true,
	"core.excludesfile": true, "core.attributesfile": true}

// checkTemplateGit walks the template through its handle and returns every reason a git
// repository in it reaches outside the template, each naming the path in the template.
func checkTemplateGit(root *os.Root) []string {
	var out []string
	entries := 0
	err := fs.WalkDir(rootfs.NonBlocking(root), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entries++; entries > maxTemplateEntries {
			return fmt.Errorf("more than %d entries", maxTemplateEntries)
		}
		if d.Name() != ".git" {
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			out = append(out, checkGitDir(root, p)...)
			return fs.SkipDir
		case t&fs.ModeSymlink != 0:
			target, _ := root.Readlink(p)
			out = append(out, fmt.Sprintf("%s is a symlink (to %q); a repository's .git must be a directory of its own", p, clipped(target)))
		case t.IsRegular():
			// A worktree or submodule pointer: never copied, but it must not name another
			// repository on the host either.
			if msg := checkGitPointer(root, p, "gitdir: "); msg != "" {
				out = append(out, msg)
			}
		}
		return nil
	})
	if err != nil {
		out = append(out, fmt.Sprintf("cannot walk the template: %v", err))
	}
	return out
}

// checkGitDir checks one .git directory: no symlink anywhere in it, no alternates, and no
// commondir, gitdir or config path leaving the template.
func checkGitDir(root *os.Root, g string) []string {
	var out []string
	err := fs.WalkDir(rootfs.NonBlocking(root), g, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, g+"/")
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			target, _ := root.Readlink(p)
			where := "inside the template"
			if _, err := root.Stat(p); err != nil {
				where = "outside the task's directory"
			}
			out = append(out, fmt.Sprintf("%s is a symlink to %q (%s); a template's .git must hold no links (git never makes them, and they can reach another repository on the host); put the real directory or file there", p, clipped(target), where))
		case !t.IsRegular():
		case rel == "objects/info/alternates" || rel == "objects/info/http-alternates":
			if data, err := readSmall(root, p); err != nil || len(bytes.TrimSpace(data)) > 0 {
				out = append(out, fmt.Sprintf("%s names other object stores; a template's repository must hold its own objects (run git repack -a -d in it, then delete that file)", p))
			}
		case rel == "commondir":
			out = append(out, fmt.Sprintf("%s shares another repository's objects and refs; a template's repository must be whole (use a standalone clone)", p))
		case path.Base(rel) == "commondir" || path.Base(rel) == "gitdir":
			if msg := checkGitPointer(root, p, ""); msg != "" {
				out = append(out, msg)
			}
		case rel == "config" || path.Base(rel) == "config.worktree":
			out = append(out, checkGitConfig(root, p)...)
		}
		return nil
	})
	if err != nil {
		out = append(out, fmt.Sprintf("cannot walk %s: %v", g, err))
	}
	return out
}

// checkGitPointer checks a file holding one path (a .git file's "gitdir: X", a worktree's
// gitdir or commondir): it must stay inside the template.
func checkGitPointer(root *os.Root, p, prefix string) string {
	data, err := readSmall(root, p)
	if err != nil {
		return fmt.Sprintf("%s: %v", p, err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	target, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	if !ok {
		return fmt.Sprintf("%s does not start with %q", p, prefix)
	}
	if !inside(path.Dir(p), target) {
		return fmt.Sprintf("%s points to %q, outside the template", p, clipped(target))
	}
	return ""
}

// checkGitConfig reports config values that name a path outside the template. (No setting
// of a template's config is ever honoured: ceval's copy has a config of its own.)
func checkGitConfig(root *os.Root, p string) []string {
	data, err := readSmall(root, p)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", p, err)}
	}
	var out []string
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxGitConfigBytes)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.Index(line, "]")
			if end < 0 {
				continue
			}
			name, sub, _ := strings.Cut(line[1:end], " ")
			section = strings.ToLower(name)
			if sub != "" {
				section += "." + strings.Trim(strings.TrimSpace(sub), `"`)
			}
			line = strings.TrimSpace(line[end+1:])
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			continue
		}
		key = section + "." + strings.ToLower(strings.TrimSpace(key))
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if !gitPathKeys[key] && !(strings.HasPrefix(key, "includeif.") && strings.HasSuffix(key, ".path")) {
			continue
		}
		if !inside(path.Dir(p), value) {
			out = append(out, fmt.Sprintf("%s sets %s = %q, outside the template", p, clipped(key), clipped(value)))
		}
	}
	return out
}

// inside reports whether target, relative to dir (both in the template), stays inside it.
func inside(dir, target string) bool {
	if target == "" || path.IsAbs(target) || strings.HasPrefix(target, "~") || strings.Contains(target, "\\") {
		return target == ""
	}
	j := path.Join(dir, target)
	return j != ".." && !strings.HasPrefix(j, "../")
}

// readSmall reads a small regular file below root, following no link and never blocking.
func readSmall(root *os.Root, p string) ([]byte, error) {
	f, err := openRegular(func(flag int) (*os.File, error) { return root.OpenFile(p, flag|noFollow, 0) }, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxGitConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxGitConfigBytes {
		return nil, errors.New("larger than 1 MiB")
	}
	return data, nil
}

// clipped shortens a string quoted from the template in a message.
func clipped(s string) string {
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}
