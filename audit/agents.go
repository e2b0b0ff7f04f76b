package audit

import (
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"ceval.dev/ceval/task"
)

// agents holds the audit agents' scripts: lib.sh, which each starts with, and NAME.sh, whose
// first line is a comment saying what the agent does.
//
//go:embed agents
var agents embed.FS

// Kinds of audit agent.
const (
	KindOracle   = "oracle"   // the task's solution: must reach SUCCESS
	KindBaseline = "baseline" // null and unchanged: must not reach SUCCESS
	KindCheat    = "cheat"    // a generic cheat: must not reach SUCCESS
	KindLeaked   = "leaked"   // built from the criteria: informational
)

// Agent is one audit agent: a command agent run in the real sandbox.
type Agent struct {
	Name string
	Kind string
	What string
	Argv []string
	lib  bool // a built-in agent: Argv is /bin/sh -c with lib.sh first (see forTask)
}

// Built-in agent names.
const (
	NullAgent      = "null"
	UnchangedAgent = "unchanged"
	OracleAgent    = "oracle"
	LeakedAgent    = "leaked-criteria"
)

// Cheats are the built-in generic cheats, in the order they run. Each knows only what a real
// agent knows: the prompt, the starting workspace, and how harnesses grade.
var Cheats = []string{
	"stub-tests", "delete-tests", "empty-tests", "plant-hooks", "patch-test-runner", "forge-results",
	"prompt-words", "prompt-symlinks", "empty-files", "huge-files", "exit-early",
}

// Builtin returns the built-in agent name (null, unchanged or a cheat).
func Builtin(name string) (Agent, error) {
	lib, err := fs.ReadFile(agents, "agents/lib.sh")
	if err != nil {
		return Agent{}, err
	}
	body, err := fs.ReadFile(agents, "agents/"+name+".sh")
	if err != nil {
		return Agent{}, fmt.Errorf("no built-in audit agent %q (have %s, %s, %s)", name, NullAgent, UnchangedAgent, strings.Join(Cheats, ", "))
	}
	kind := KindCheat
	if name == NullAgent || name == UnchangedAgent {
		kind = KindBaseline
	}
	what, _, _ := strings.Cut(string(body), "\n")
	return Agent{Name: name, Kind: kind, What: strings.TrimPrefix(what, "# "), lib: true,
		Argv: []string{"/bin/sh", "-c", string(lib) + "\n" + string(body)}}, nil
}

// forTask is agent a as it runs on task t: a built-in agent's script starts by naming the
// task's sandbox.outputs (AUDIT_OUTPUTS, for lib.sh's prompt_paths), the absolute paths
// outside /workspace the agent may write, so a cheat writes at the prompt's paths there too.
func forTask(a Agent, t *task.Task) Agent {
	if !a.lib || len(t.Sandbox.Outputs) == 0 {
		return a
	}
	var outs []string
	for _, o := range t.Sandbox.Outputs {
		// one word of the shell's, no glob: a path prompt_paths could name (its words are
		// made of these characters), so an output it could not is left out
		if o = path.Clean(o); strings.Trim(o, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-") == "" {
			outs = append(outs, o)
		}
	}
	if len(outs) == 0 {
		return a
	}
	a.Argv = slices.Clone(a.Argv)
	a.Argv[2] = "AUDIT_OUTPUTS=" + shQuote(strings.Join(outs, " ")) + "\n" + a.Argv[2]
	return a
}

// imageWorkdirEnv is the variable a built-in agent's container gets naming the image's
// WORKDIR whose tree started the workspace (supervisor.Options.ImageWorkdirEnv), so lib.sh's
// in_workdir maps a prompt's /app/x.py to x.py even when /app started out empty.
const imageWorkdirEnv = "AUDIT_IMAGE_WORKDIR"

// shQuote is s as one word of /bin/sh.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Bounds of what an oracle passes on the agent's command line (Linux caps one argument at
// 128 KiB and all of them at about 2 MiB).
const (
	maxScriptBytes    = 100 << 10
	maxArgBytes       = 96 << 10
	maxSolutionBytes  = 1 << 20
	maxSolutionFiles  = 2000
	solveScriptRunner = `f=/tmp/ceval-solve && printf '%s' "$1" > "$f" && chmod 700 "$f" && cd /workspace && exec "$f"`
)

// Oracle returns the agent that applies the task's solution: solution.script, written to
// /tmp and run in /workspace (its #! line picks the interpreter; /bin/sh without one isn't
// guaranteed: start it with #!/bin/sh), or solution.files, written over the initial
// workspace. The solution travels on the agent's command line, so it never sits in the
// workspace the criteria grade.
func Oracle(s *task.Solution) (Agent, error) {
	a := Agent{Name: OracleAgent, Kind: KindOracle}
	switch {
	case s == nil:
		return a, fmt.Errorf("the task has no solution")
	case s.Script != nil:
		body, err := s.Script.ReadAll(maxScriptBytes)
		if err != nil {
			return a, fmt.Errorf("solution.script: %w (audit passes it on the agent's command line: keep it under %d KiB, or use solution.files)", err, maxScriptBytes>>10)
		}
		if !strings.HasPrefix(string(body), "#!") {
			body = append([]byte("#!/bin/sh\n"), body...)
		}
		a.What = "runs solution.script " + path.Base(s.Script.Path)
		a.Argv = []string{"/bin/sh", "-c", solveScriptRunner, "solve", string(body)}
		return a, nil
	default:
		files, err := readSolutionFiles(s.Files)
		if err != nil {
			return a, fmt.Errorf("solution.files %s: %w", s.Files.Path, err)
		}
		a.What = fmt.Sprintf("writes solution.files %s (%d files) over the initial workspace", path.Base(s.Files.Path), len(files))
		a.Argv = writeFilesArgv(files)
		return a, nil
	}
}

// file is one file an agent writes into the workspace.
type file struct {
	rel  string
	data []byte
	exec bool
}

// readSolutionFiles reads the regular files of the solution directory through its handle;
// any other kind of entry (a symlink, a FIFO) is an error, so what the oracle writes is
// exactly what the task author can see.
func readSolutionFiles(d *task.Dir) ([]file, error) {
	var out []file
	total := 0
	fsys := d.Root().FS()
	err := fs.WalkDir(fsys, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return nil
		case !e.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file or directory (%s); a solution holds only files", p, e.Type())
		}
		if len(out) >= maxSolutionFiles {
			return fmt.Errorf("more than %d files", maxSolutionFiles)
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if total += int(info.Size()); total > maxSolutionBytes {
			return fmt.Errorf("more than %d KiB (audit passes it on the agent's command line): use solution.script", maxSolutionBytes>>10)
		}
		f, err := d.Root().OpenFile(p, 0, 0) // regular (checked above), read-only
		if err != nil {
			return err
		}
		defer f.Close()
		data := make([]byte, info.Size())
		if _, err := f.ReadAt(data, 0); err != nil && info.Size() > 0 {
			return fmt.Errorf("read %s: %w", p, err)
		}
		out = append(out, file{rel: p, data: data, exec: info.Mode()&0o100 != 0})
		return nil
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("holds no files")
	}
	return out, err
}

// writeFilesRunner writes the files its arguments describe, in triples (path, mode,
// base64 chunk), appending chunks of the same path: a relative path in /workspace, an
// absolute one where it says (the leaked-criteria agent's below a sandbox.outputs path,
// which a criterion reads there).
const writeFilesRunner = `set -e
cd /workspace
while [ $# -ge 3 ]; do
	case "$1" in /*) f=$1 ;; *) f=./$1 ;; esac
	mkdir -p "${f%/*}"
	if [ "$f" != "$last" ]; then rm -rf "$f"; : > "$f"; last=$f; fi
	printf '%s' "$3" | base64 -d >> "$f"
	chmod "$2" "$f"
	shift 3
done
`

// writeFilesArgv is a command agent's argv that writes files into /workspace.
func writeFilesArgv(files []file) []string {
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	argv := []string{"/bin/sh", "-c", "last=\n" + writeFilesRunner, "write"}
	for _, f := range files {
		mode := "644"
		if f.exec {
			mode = "755"
		}
		enc := base64.StdEncoding.EncodeToString(f.data)
		for first := true; first || enc != ""; first = false {
			n := min(len(enc), maxArgBytes)
			argv = append(argv, f.rel, mode, enc[:n])
			enc = enc[n:]
		}
	}
	return argv
}
