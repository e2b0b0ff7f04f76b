package wasm

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/task"
	"ceval.dev/ceval/wasm/wire"
)

// Every test here plants something hostile and checks that the guest is denied or bounded
// and that no host file is read: the canary's secret and /etc/passwd's first line never
// appear in any output. Each runs against the stand-in and, once embedded, the toolbox.

// escape is one attempt to read the host: a workspace and scripts (stand-in, toolbox).
type escape struct {
	files   map[string]string
	setup   func(t *testing.T, src string)
	standin string
	toolbox string                               // "" runs the stand-in's script
	check   func(t *testing.T, r *wire.RunReply) // for the stand-in
	tbCheck func(t *testing.T, r *wire.RunReply) // for the toolbox; nil uses check
}

func (x escape) run(t *testing.T) {
	cn := hostCanary(t)
	for name, tb := range toolboxes() {
		t.Run(name, func(t *testing.T) {
			e := newExecutor(t, tb, Options{})
			s := workspace(t, x.files, func(src string) {
				if x.setup != nil {
					x.setup(t, src)
				}
			})
			script := x.standin
			if name == "toolbox" && x.toolbox != "" {
				script = x.toolbox
			}
			r, _, details := runScript(t, e, command(script), s, nil)
			cn.assertAbsent(t, script, r.Stdout, r.Stderr, []byte(details))
			check := x.check
			if name == "toolbox" && x.tbCheck != nil {
				check = x.tbCheck
			}
			if check != nil {
				check(t, r)
			}
		})
	}
}

func TestSymlinkToEtcPasswdIsNotFollowed(t *testing.T) {
	escape{
		files:   map[string]string{"passwd": "->/etc/passwd"},
		standin: "cat passwd; cat /workspace/passwd; readlink passwd",
		toolbox: "cat passwd; cat /workspace/passwd; test -L passwd && echo is-a-link",
		check: func(t *testing.T, r *wire.RunReply) {
			if !strings.Contains(string(r.Stdout), "/etc/passwd") {
				t.Errorf("readlink should show the recorded target; stdout %q", r.Stdout)
			}
		},
		tbCheck: func(t *testing.T, r *wire.RunReply) {
			if string(r.Stdout) != "is-a-link\n" {
				t.Errorf("the link should show as a link and nothing else; stdout %q", r.Stdout)
			}
		},
	}.run(t)
}

func TestSymlinkToCanaryByAbsolutePathIsNotFollowed(t *testing.T) {
	cn := hostCanary(t)
	escape{
		files:   map[string]string{"secret": "->" + cn.path, "dir": "->" + filepath.Dir(cn.path)},
		standin: "cat secret; ls dir; cat dir/secret.txt",
	}.run(t)
}

func TestSymlinkToRootIsNotFollowed(t *testing.T) {
	escape{
		files:   map[string]string{"root": "->/"},
		standin: "ls root; cat root/etc/passwd; ls root/etc",
		check: func(t *testing.T, r *wire.RunReply) {
			if r.ExitCode == 0 || len(r.Stdout) != 0 {
				t.Errorf("a link to / must lead nowhere: exit %d, stdout %q", r.ExitCode, r.Stdout)
			}
		},
	}.run(t)
}

func TestRelativeDotDotLinkIsNotFollowed(t *testing.T) {
	escape{
		// The snapshot sits beside the canary's directory only by chance; ../.. and a
		// relative path to the canary would both land outside the workspace if followed.
		files: map[string]string{"up": "->../..", "deep/up": "->../../../../../../../../..", "rel": "->../secret.txt"},
		setup: func(t *testing.T, src string) {
			if err := os.WriteFile(filepath.Join(filepath.Dir(src), "secret.txt"), []byte(hostCanary(t).secret), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		standin: "cat rel; ls up; ls deep/up; cat deep/up/etc/passwd; cat ../secret.txt; cat ../../../../etc/passwd",
	}.run(t)
}

func TestHardLinkToHostFileShowsOnlyTheSnapshotCopy(t *testing.T) {
	// A hard link the agent made is its file: the snapshot copies what it held then. What
	// the host writes into that inode later never reaches the guest, which reads the copy.
	outside := filepath.Join(t.TempDir(), "outside.txt")
	for name, tb := range toolboxes() {
		t.Run(name, func(t *testing.T) {
			e := newExecutor(t, tb, Options{})
			s := workspace(t, nil, func(src string) {
				if err := os.WriteFile(outside, []byte("innocent\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Link(outside, filepath.Join(src, "hl")); err != nil {
					t.Fatal(err)
				}
			})
			if err := os.WriteFile(outside, []byte(hostCanary(t).secret+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, _, details := runScript(t, e, command("cat hl"), s, nil)
			hostCanary(t).assertAbsent(t, "cat hl", r.Stdout, r.Stderr, []byte(details))
			if string(r.Stdout) != "innocent\n" {
				t.Errorf("stdout %q, want the snapshot's copy", r.Stdout)
			}
		})
	}
}

func TestHardLinkPlantedInSnapshotDirIsRefused(t *testing.T) {
	// Only ceval writes the snapshot directory; a hard link there is tampering, refused
	// before anything is read from it.
	cn := hostCanary(t)
	e := newExecutor(t, standin, Options{})
	s := workspace(t, map[string]string{"f": strings.Repeat("x", len(cn.secret)+1)}, nil)
	if err := os.Remove(filepath.Join(s.Dir, "f")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(cn.path, filepath.Join(s.Dir, "f")); err != nil {
		t.Skipf("cannot hard-link across these directories: %v", err)
	}
	_, _, details, err := replyParts(e.execute(t.Context(), command("cat f"), s, nil))
	if err == nil || !strings.Contains(err.Error(), "links") {
		t.Fatalf("err = %v (details %q), want a refusal of the tampered snapshot", err, details)
	}
	cn.assertAbsent(t, "cat f", []byte(err.Error()), []byte(details))
}

func TestCatEtcPasswdFindsNothing(t *testing.T) {
	escape{
		standin: "cat /etc/passwd; cat ../../etc/passwd; cat /workspace/../etc/passwd; cat /proc/self/environ",
		check: func(t *testing.T, r *wire.RunReply) {
			if r.ExitCode == 0 {
				t.Errorf("cat of host files succeeded: %q", r.Stdout)
			}
		},
	}.run(t)
}

func TestListingRootShowsOnlyTheSandbox(t *testing.T) {
	for name, tb := range toolboxes() {
		t.Run(name, func(t *testing.T) {
			e := newExecutor(t, tb, Options{})
			s := workspace(t, map[string]string{"a": "a"}, nil)
			ref := openRef(t, t.TempDir())
			for _, tt := range []struct {
				usesRef bool
				want    string
			}{
				{false, "tmp\nworkspace\n"},
				{true, "reference\ntmp\nworkspace\n"},
			} {
				c := command("ls /")
				c.Spec.(*task.RunCommandSpec).UsesReference = tt.usesRef
				r, _, _ := runScript(t, e, c, s, ref)
				if string(r.Stdout) != tt.want {
					t.Errorf("uses_reference=%v: ls / = %q, want %q", tt.usesRef, r.Stdout, tt.want)
				}
			}
		})
	}
}

func TestSymlinkMadeInTmpToHostFileReadsNothing(t *testing.T) {
	cn := hostCanary(t)
	escape{
		standin: "ln -s " + cn.path + " /tmp/x; cat /tmp/x; ln -s /etc/passwd /tmp/p; cat /tmp/p; readlink /tmp/x",
		// The toolbox has no ln; its attempt still runs, and reads nothing.
		toolbox: "ln -s " + cn.path + " /tmp/x; cat /tmp/x; ln -s /etc/passwd /tmp/p; cat /tmp/p",
		tbCheck: func(t *testing.T, r *wire.RunReply) {
			if len(r.Stdout) != 0 || r.ExitCode == 0 {
				t.Errorf("exit %d, stdout %q; want nothing read", r.ExitCode, r.Stdout)
			}
		},
		check: func(t *testing.T, r *wire.RunReply) {
			if !strings.Contains(string(r.Stdout), cn.path) {
				t.Errorf("the link should exist as a string; stdout %q stderr %q", r.Stdout, r.Stderr)
			}
		},
	}.run(t)
}

func TestWriteIntoWorkspaceIsDenied(t *testing.T) {
	for name, tb := range toolboxes() {
		t.Run(name, func(t *testing.T) {
			e := newExecutor(t, tb, Options{})
			s := workspace(t, map[string]string{"keep.txt": "original\n"}, nil)
			c := command("echo pwned > /workspace/new.txt; echo pwned > keep.txt; cat keep.txt")
			r, score, _ := runScript(t, e, c, s, nil)
			if string(r.Stdout) != "original\n" {
				t.Errorf("keep.txt reads %q after the write attempts", r.Stdout)
			}
			if !bytes.Contains(bytes.ToLower(r.Stderr), []byte("read-only")) {
				t.Errorf("stderr %q does not say the file system is read-only", r.Stderr)
			}
			if _, err := os.Lstat(filepath.Join(s.Dir, "new.txt")); err == nil {
				t.Error("new.txt appeared in the snapshot directory")
			}
			if b, _ := s.ReadFile("keep.txt"); string(b) != "original\n" {
				t.Errorf("snapshot keep.txt = %q", b)
			}
			r, score, _ = runScript(t, e, command("cat new.txt"), s, nil)
			if score != 0 || len(r.Stdout) != 0 {
				t.Errorf("a later run sees new.txt: %q", r.Stdout)
			}
		})
	}
}

func TestTmpIsPrivateToOneRunAndCapped(t *testing.T) {
	e := newExecutor(t, standin, Options{MaxTmpBytes: 4 << 20})
	s := workspace(t, nil, nil)
	if _, score, _ := runScript(t, e, command("echo left > /tmp/x; cat /tmp/x"), s, nil); score != 1 {
		t.Fatal("cannot write /tmp")
	}
	if r, _, _ := runScript(t, e, command("cat /tmp/x"), s, nil); r.ExitCode == 0 {
		t.Errorf("the next run sees the last run's /tmp: %q", r.Stdout)
	}
	r, score, details := runScript(t, e, command("fill /tmp/big 16"), s, nil)
	if score != 0 || !r.TmpFull || !strings.Contains(details, "/tmp reached its 4 MiB cap") {
		t.Errorf("filling /tmp: score %v, tmp full %v, details %q", score, r.TmpFull, details)
	}
}

func TestInfiniteLoopStopsAtTimeout(t *testing.T) {
	for name, tb := range toolboxes() {
		t.Run(name, func(t *testing.T) {
			e := newExecutor(t, tb, Options{})
			s := workspace(t, nil, nil)
			script := "spin"
			if name == "toolbox" {
				script = "while true; do :; done"
			}
			c := command(script)
			c.Execution().Timeout = time.Second
			// The worker's own timer stops the loop and says so in its reply (Limit); a loop
			// it could not stop would be killed by ceval runGrace later, with no reply. That
			// is the property, checked without a wall-clock bound on how long the stop took:
			// one (5 s) measured the host's speed, not the stop.
			r, score, details := runScript(t, e, c, s, nil)
			if r.Limit != wire.LimitTimeout || score != 0 || !strings.Contains(details, "timeout") {
				t.Errorf("limit %q, score %v, details %q; want 0 and the timeout named by the sandbox", r.Limit, score, details)
			}
			// The worker survives the timeout and grades the next criterion.
			if _, score, _ := runScript(t, e, command("echo ok"), s, nil); score != 1 {
				t.Error("the worker did not recover after a timeout")
			}
		})
	}
}

func TestMemoryBombStopsAtMemoryLimit(t *testing.T) {
	for name, tb := range toolboxes() {
		t.Run(name, func(t *testing.T) {
			e := newExecutor(t, tb, Options{MemoryLimit: 64 << 20})
			s := workspace(t, nil, nil)
			script := "alloc 1024"
			if name == "toolbox" {
				script = "x=0123456789abcdef; while true; do x=$x$x; done"
			}
			r, score, details := runScript(t, e, command(script), s, nil)
			if score != 0 || !strings.Contains(details, "memory limit") {
				t.Errorf("score %v, details %q; want 0 naming the memory limit", score, details)
			}
			if r.PeakMemory > 64<<20 {
				t.Errorf("guest memory peaked at %d bytes, over the 64 MiB limit", r.PeakMemory)
			}
		})
	}
}

func TestOutputFloodIsCutAtTheCap(t *testing.T) {
	for name, tb := range toolboxes() {
		t.Run(name, func(t *testing.T) {
			e := newExecutor(t, tb, Options{})
			s := workspace(t, nil, nil)
			for _, stream := range []string{"stdout", "stderr"} {
				script := "flood " + stream
				if name == "toolbox" {
					// A 64 KiB line, so the endless loop passes the 1 MiB cap in 17 writes:
					// the interpreted shell under wazero runs ~3,000 loop turns a second
					// unloaded, and 49-byte lines took 6.6 s to reach the cap (over the
					// 20 s timeout at load 11-17). Now 0.45 s unloaded, 1.2-5.3 s at load 11.
					redirect := ""
					if stream == "stderr" {
						redirect = " >&2"
					}
					script = "x=yyyyyyyyyyyyyyyy; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do x=$x$x; done; " +
						"while true; do echo $x" + redirect + "; done"
				}
				// The flood ends at the cap whatever the timeout; the timeout only ends a
				// run whose cap never cuts (the details then name it, and the test fails),
				// so it is long: a loaded machine never meets it while the cap works.
				c := command(script)
				c.Execution().Timeout = 2 * time.Minute
				r, score, details := runScript(t, e, c, s, nil)
				got := len(r.Stdout)
				if stream == "stderr" {
					got = len(r.Stderr)
				}
				if score != 0 || !strings.Contains(details, stream+" limit") || got != DefaultMaxOutput {
					t.Errorf("%s flood: score %v, kept %d bytes, details %.200q", stream, score, got, details)
				}
			}
		})
	}
}

func TestTrojanGrepInWorkspaceIsNeverRun(t *testing.T) {
	files := map[string]string{"data.txt": "wire.Hello\n"}
	setup := func(src string) {
		if err := os.MkdirAll(filepath.Join(src, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "bin", "grep"), []byte("#!/bin/sh\necho TROJAN\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("standin", func(t *testing.T) {
		e := newExecutor(t, standin, Options{})
		s := workspace(t, files, setup)
		r, _, _ := runScript(t, e, command("bin/grep wire.Hello data.txt; /workspace/bin/grep wire.Hello data.txt"), s, nil)
		if bytes.Contains(r.Stdout, []byte("TROJAN")) || r.ExitCode == 0 {
			t.Errorf("a workspace file ran: exit %d, stdout %q", r.ExitCode, r.Stdout)
		}
	})
	t.Run("toolbox", func(t *testing.T) {
		if !HasToolbox() {
			t.Skip("internal/embedded/toolbox.wasm is not a WebAssembly module")
		}
		e := newExecutor(t, nil, Options{})
		s := workspace(t, files, setup)
		c := command("PATH=/workspace/bin:$PATH; export PATH; grep -c nomatch data.txt")
		c.StdoutScoring().ExpectedExitCode = 1
		r, score, details := runScript(t, e, c, s, nil)
		if bytes.Contains(r.Stdout, []byte("TROJAN")) || strings.TrimSpace(string(r.Stdout)) != "0" || score != 1 {
			t.Errorf("grep on a PATH the script set: stdout %q, score %v, details %q; want the toolbox's grep", r.Stdout, score, details)
		}
	})
}

func TestReferenceIsMountedOnlyWhenDeclaredAndItsLinksAreNotFollowed(t *testing.T) {
	cn := hostCanary(t)
	ref := t.TempDir()
	if err := os.WriteFile(filepath.Join(ref, "answer.txt"), []byte("42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cn.path, filepath.Join(ref, "leak")); err != nil {
		t.Fatal(err)
	}
	e := newExecutor(t, standin, Options{})
	s := workspace(t, nil, nil)

	c := command("cat /reference/answer.txt; cat /reference/leak")
	c.Spec.(*task.RunCommandSpec).UsesReference = true
	r, _, details := runScript(t, e, c, s, openRef(t, ref))
	cn.assertAbsent(t, c.Spec.(*task.RunCommandSpec).Command, r.Stdout, r.Stderr, []byte(details))
	if string(r.Stdout) != "42\n" {
		t.Errorf("with uses_reference: stdout %q, want the reference's answer", r.Stdout)
	}
	c = command("env")
	c.Spec.(*task.RunCommandSpec).UsesReference = true
	if r, _, _ := runScript(t, e, c, s, openRef(t, ref)); !bytes.Contains(r.Stdout, []byte("REFERENCE_DIR=/reference\n")) {
		t.Errorf("REFERENCE_DIR not set: %q", r.Stdout)
	}
	if r, _, _ := runScript(t, e, command("cat /reference/answer.txt"), s, openRef(t, ref)); r.ExitCode == 0 {
		t.Errorf("without uses_reference the reference is readable: %q", r.Stdout)
	}
}

func TestGuestSeesNoHostEnvironment(t *testing.T) {
	t.Setenv("CEVAL_SECRET_TOKEN", hostCanary(t).secret)
	e := newExecutor(t, standin, Options{})
	s := workspace(t, nil, nil)
	r, _, _ := runScript(t, e, command("env"), s, nil)
	if want := "PWD=/workspace\nHOME=/tmp\nTMPDIR=/tmp\n"; string(r.Stdout) != want {
		t.Errorf("env = %q, want %q", r.Stdout, want)
	}
	if e.w.hello.EnvCount != 0 {
		t.Errorf("the worker has %d environment variables", e.w.hello.EnvCount)
	}
}

// TestPooledMemoryIsZero: the worker reuses the linear memory of a finished instance for
// the next one (memPool); a run must still find nothing an earlier run left there. The
// first run fills 16 MiB with ones; the next allocates 16 MiB fresh from memory.grow, which
// Go's runtime does not clear (it trusts WebAssembly's zeroed memory), and counts what is
// not zero: without the pool's zeroing Go's runtime itself crashed on the stale memory.
func TestPooledMemoryIsZero(t *testing.T) {
	e := newExecutor(t, standin, Options{MemoryLimit: 256 << 20})
	s := workspace(t, nil, nil)
	for i := range 3 {
		if r, _, _ := runScript(t, e, command("alloc 16"), s, nil); string(r.Stdout) != "16 MiB\n" {
			t.Fatalf("alloc 16: %q %q", r.Stdout, r.Stderr)
		}
		if r, _, _ := runScript(t, e, command("dirty 16"), s, nil); string(r.Stdout) != "0 dirty\n" {
			t.Fatalf("round %d: a run read what the run before it left in memory: %q %q", i, r.Stdout, r.Stderr)
		}
	}
}

func TestWorkerKilledBetweenCriteriaIsReplaced(t *testing.T) {
	e := newExecutor(t, standin, Options{})
	s := workspace(t, map[string]string{"a": "a"}, nil)
	if _, score, _ := runScript(t, e, command("cat a"), s, nil); score != 1 {
		t.Fatal("first run failed")
	}
	if err := e.w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.w.waited
	if _, score, _ := runScript(t, e, command("cat a"), s, nil); score != 1 {
		t.Error("no new worker after the old one died")
	}
}

func TestWorkerDyingMidRunScoresZero(t *testing.T) {
	e := newExecutor(t, standin, Options{})
	s := workspace(t, nil, nil)
	if _, score, _ := runScript(t, e, command("echo warm"), s, nil); score != 1 {
		t.Fatal("warm-up run failed")
	}
	w := e.w
	go func() {
		time.Sleep(time.Second)
		w.cmd.Process.Kill()
	}()
	_, score, details := runScript(t, e, command("sleep 10"), s, nil)
	if score != 0 || !strings.Contains(details, "died") {
		t.Errorf("score %v details %q; want 0 saying the worker died", score, details)
	}
	if _, score, _ := runScript(t, e, command("echo ok"), s, nil); score != 1 {
		t.Error("no new worker after the old one died")
	}
}

func TestModuleNotMatchingPinnedSHA256IsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "check.wasm")
	if err := os.WriteFile(path, standin.data, 0o644); err != nil {
		t.Fatal(err)
	}
	e := newExecutor(t, standin, Options{})
	s := workspace(t, nil, nil)
	module, err := task.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer module.Close()
	c := &task.Criterion{Type: task.WASMCheck, Spec: &task.WASMSpec{Module: module, ModuleSHA256: strings.Repeat("0", 64), Args: []string{"exit", "0"}}}
	score, details, err := scoreParts(e.Execute(t.Context(), c, s, nil))
	if err == nil || !strings.Contains(err.Error(), "not graded as success") || score != 0 {
		t.Fatalf("score %v, details %q, err %v; want an error", score, details, err)
	}
	c.Spec.(*task.WASMSpec).ModuleSHA256 = standin.digest
	for _, tt := range []struct {
		args      []string
		fromOut   bool
		wantScore float64
	}{
		{[]string{"exit", "0"}, false, 1},
		{[]string{"exit", "3"}, false, 0},
		{[]string{"echo", "0.25"}, true, 0.25},
		{[]string{"echo", "lots"}, true, 0},
	} {
		c.Spec.(*task.WASMSpec).Args, c.StdoutScoring().ScoreFromStdout = tt.args, tt.fromOut
		score, details, err := scoreParts(e.Execute(t.Context(), c, s, nil))
		if err != nil || score != tt.wantScore {
			t.Errorf("wasm %v: score %v, details %q, err %v; want %v", tt.args, score, details, err, tt.wantScore)
		}
	}
	// The module is re-checked on each use: changing the file after the first read does
	// not get a different module run under the old pin.
	c.Spec.(*task.WASMSpec).ModuleSHA256 = strings.Repeat("a", 64)
	if _, _, err := scoreParts(e.Execute(t.Context(), c, s, nil)); err == nil {
		t.Error("a wrong pin passed once the module was cached")
	}
}

func TestRunCommandWithoutToolboxIsAnError(t *testing.T) {
	e := newExecutor(t, nil, Options{})
	e.toolbox, e.lite = newTaskModule(nil), nil // a build without the toolbox has neither
	_, _, err := scoreParts(e.Execute(t.Context(), command("true"), workspace(t, nil, nil), nil))
	if err == nil || !strings.Contains(err.Error(), "toolbox") {
		t.Errorf("err = %v, want one naming the missing toolbox", err)
	}
}

func TestWorkspaceViewIsLoadedOncePerGrading(t *testing.T) {
	e := newExecutor(t, standin, Options{})
	s := workspace(t, map[string]string{"a": "first\n"}, nil)
	if r, _, _ := runScript(t, e, command("cat a"), s, nil); string(r.Stdout) != "first\n" {
		t.Fatalf("stdout %q", r.Stdout)
	}
	// The worker holds the view: later criteria of the same snapshot do not read it again.
	if err := os.Remove(filepath.Join(s.Dir, "a")); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := runScript(t, e, command("cat a"), s, nil); string(r.Stdout) != "first\n" {
		t.Errorf("second criterion: stdout %q, want the view loaded for the first", r.Stdout)
	}
	// A different snapshot replaces it.
	s2 := workspace(t, map[string]string{"b": "second\n"}, nil)
	if r, _, _ := runScript(t, e, command("cat a; cat b"), s2, nil); string(r.Stdout) != "second\n" {
		t.Errorf("new snapshot: stdout %q, want only the new snapshot's files", r.Stdout)
	}
}
