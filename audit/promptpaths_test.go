package audit

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

// promptPaths runs lib.sh's prompt_paths on the host over prompt, as agent a (Builtin, then
// forTask) would in its container, with the workspace a temporary directory.
func promptPaths(t *testing.T, a Agent, prompt string) []string {
	return promptPathsIn(t, a, prompt, t.TempDir())
}

// promptPathsIn is promptPaths with the workspace ws.
func promptPathsIn(t *testing.T, a Agent, prompt, ws string) []string {
	t.Helper()
	return promptPathsEnv(t, a, prompt, ws)
}

// promptPathsEnv is promptPathsIn with the variables env (KEY=VALUE) in the agent's
// environment too, as supervisor.Options.ImageWorkdirEnv gives them.
func promptPathsEnv(t *testing.T, a Agent, prompt, ws string, env ...string) []string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".ceval"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ceval", "prompt.md"), []byte(prompt), 0o644); err != nil {
		t.Fatal(err)
	}
	script := a.Argv[2]
	const cd = "cd /workspace || exit 1\n"
	if !strings.Contains(script, cd) {
		t.Fatalf("lib.sh no longer holds %q: update this test", cd)
	}
	script = strings.Replace(script, cd, "cd \"$WS\" || exit 1\n", 1)
	// the agent's body is replaced by a call to prompt_paths
	body, _ := os.ReadFile("agents/" + a.Name + ".sh")
	script = strings.Replace(script, string(body), "prompt_paths\n", 1)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append([]string{"HOME=" + home, "WS=" + ws, "PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("prompt_paths: %v: %s", err, out)
	}
	return strings.Fields(string(out))
}

// prompt_paths names what the agent may write that the prompt names: relative paths, absolute
// ones inside /workspace made relative (a Harbor task's /app/calc.py is imported as
// /workspace/calc.py, and patch-test-runner planted nothing there), absolute ones below the
// task's sandbox.outputs as they are; never a path outside those, nor one with "..", whatever
// punctuation or quotes surround it.
func TestPromptPathsMapsAbsoluteWorkspacePathsAndDropsTheRest(t *testing.T) {
	a, err := Builtin("empty-files")
	if err != nil {
		t.Fatal(err)
	}
	prompt := "Write /workspace/calc.py, then fix `src/util.py` and \"/workspace/pkg/mod.py\".\n" +
		"Read '/workspace/data/in.txt'; see ./notes.md (and /workspace/./lib/x.py).\n" +
		"Never touch /etc/passwd, /app/other.py, /workspace/../etc/shadow, ../up.py or /workspace.\n" +
		"Save the log at /output/run.log and /outputs2/no.log, the cache in /tmp/cache.json.\n"
	got := promptPaths(t, forTask(a, &task.Task{}), prompt)
	want := []string{"calc.py", "data/in.txt", "lib/x.py", "notes.md", "pkg/mod.py", "src/util.py"}
	if !slices.Equal(got, want) {
		t.Errorf("no outputs: prompt_paths %q, want %q", got, want)
	}
	got = promptPaths(t, forTask(a, &task.Task{Sandbox: task.Sandbox{Outputs: []string{"/output", "/tmp"}}}), prompt)
	want = []string{"/output/run.log", "/tmp/cache.json", "calc.py", "data/in.txt", "lib/x.py", "notes.md", "pkg/mod.py", "src/util.py"}
	if !slices.Equal(got, want) {
		t.Errorf("outputs /output, /tmp: prompt_paths %q, want %q", got, want)
	}
	// an output no prompt word could name (a space, a glob) is not passed: the shell would split it
	if b := forTask(a, &task.Task{Sandbox: task.Sandbox{Outputs: []string{"/my out", "/o*", "/output"}}}); !strings.HasPrefix(b.Argv[2], "AUDIT_OUTPUTS='/output'\n") {
		t.Errorf("outputs [/my out, /o*, /output]: the script starts %q, want AUDIT_OUTPUTS='/output'", b.Argv[2][:40])
	}
	// the prompt's last word, with no newline after it (as a one-line initial_prompt is)
	if got := promptPaths(t, forTask(a, &task.Task{}), "Write the result to /workspace/out.txt."); !slices.Equal(got, []string{"out.txt"}) {
		t.Errorf("a last word without a newline: prompt_paths %q, want [out.txt]", got)
	}
	if got := promptPaths(t, forTask(a, &task.Task{}), "Write the result to out.txt"); !slices.Equal(got, []string{"out.txt"}) {
		t.Errorf("a last word without a newline: prompt_paths %q, want [out.txt]", got)
	}
}

// An absolute path below the image's WORKDIR whose tree started the workspace (sandbox.image_workdir:
// copy) is the workspace's: a directory that holds something, all of which the workspace
// holds too. A directory holding something the workspace lacks, or nothing, is not.
func TestPromptPathsMapsTheImagesWorkdirToTheWorkspace(t *testing.T) {
	a, err := Builtin("empty-files")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write := func(p string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	app, ws, other, empty := filepath.Join(root, "app"), filepath.Join(root, "ws"), filepath.Join(root, "other"), filepath.Join(root, "empty")
	write(filepath.Join(app, "data.txt"))
	write(filepath.Join(app, "src", "util.py"))
	write(filepath.Join(ws, "data.txt"))
	write(filepath.Join(ws, "src", "util.py"))
	write(filepath.Join(ws, "template.md")) // the template's, over the image's tree
	write(filepath.Join(other, "data.txt"))
	write(filepath.Join(other, "secret.txt"))
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	prompt := "Write " + app + "/calc.py and " + app + "/src/new.py, read " + app + "/data.txt.\n" +
		"Leave " + other + "/x.py, " + empty + "/y.py and " + app + "/../other/z.py alone.\n"
	got := promptPathsIn(t, forTask(a, &task.Task{}), prompt, ws)
	want := []string{"calc.py", "data.txt", "src/new.py"}
	if !slices.Equal(got, want) {
		t.Errorf("prompt_paths %q, want %q", got, want)
	}
}

// Told the image's WORKDIR (AUDIT_IMAGE_WORKDIR, from the image's config where the backend
// copied it), prompt_paths maps every path below it to the workspace's even when the WORKDIR
// started out empty, as no guess from inside the container can (an empty /app is any empty
// directory); a path outside it, or climbing out of it, is still dropped, and a WORKDIR of /
// maps nothing.
func TestPromptPathsMapsTheNamedImageWorkdirToTheWorkspace(t *testing.T) {
	a, err := Builtin("empty-files")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	app, other := filepath.Join(root, "app"), filepath.Join(root, "other")
	for _, d := range []string{app, other} { // both empty: the guess maps neither
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	prompt := "Write " + app + "/calc.py and " + app + "/src/new.py.\n" +
		"Leave " + other + "/x.py, " + app + "x/y.py, " + app + "/../other/z.py and " + app + " alone.\n"
	if got := promptPathsIn(t, forTask(a, &task.Task{}), prompt, t.TempDir()); len(got) != 0 {
		t.Errorf("without AUDIT_IMAGE_WORKDIR prompt_paths %q, want nothing (the guess sees empty directories)", got)
	}
	for _, wd := range []string{app, app + "/"} {
		got := promptPathsEnv(t, forTask(a, &task.Task{}), prompt, t.TempDir(), imageWorkdirEnv+"="+wd)
		if want := []string{"calc.py", "src/new.py"}; !slices.Equal(got, want) {
			t.Errorf("AUDIT_IMAGE_WORKDIR=%s: prompt_paths %q, want %q", wd, got, want)
		}
	}
	if got := promptPathsEnv(t, forTask(a, &task.Task{}), "Write /etc/x.py and /calc.py.", t.TempDir(), imageWorkdirEnv+"=/"); len(got) != 0 {
		t.Errorf("AUDIT_IMAGE_WORKDIR=/: prompt_paths %q, want nothing", got)
	}
}

// A file an audit agent writes at an absolute path (the leaked-criteria agent's answer to a
// criterion on a sandbox.outputs path) lands there, not below the workspace, where no
// criterion reads it; a relative one lands in the workspace.
func TestWriteFilesWritesAnAbsolutePathWhereItSays(t *testing.T) {
	tk := load(t, writeTask(t, "task_id: outputs\ninitial_prompt: Log to /output/run.log.\nsandbox: {outputs: [/output]}\n"+
		"success_criteria:\n  - {type: file_contains, path: /output/run.log, includes: [done]}\n  - {type: file_contains, path: notes.md, includes: [seen]}\n", map[string]string{}))
	a := Leaked(tk)
	if !slices.Contains(a.Argv, "/output/run.log") {
		t.Fatalf("leaked agent's argv %q: want it to write /output/run.log", a.Argv)
	}
	ws, out := t.TempDir(), t.TempDir()
	argv := slices.Clone(a.Argv)
	for i := range argv {
		argv[i] = strings.ReplaceAll(argv[i], "/output/", out+"/")
	}
	argv[2] = strings.Replace(argv[2], "cd /workspace", "cd "+ws, 1)
	if b, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if b, err := os.ReadFile(filepath.Join(out, "run.log")); err != nil || !strings.Contains(string(b), "done") {
		t.Errorf("the output's run.log: %q, %v: want the leaked answer", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes.md")); err != nil || !strings.Contains(string(b), "seen") {
		t.Errorf("the workspace's notes.md: %q, %v", b, err)
	}
}
