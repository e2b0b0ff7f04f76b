package shell

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func runIn(t *testing.T, dir, script string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := New(dir, []string{"PATH=/usr/bin:/bin"}, strings.NewReader(""), &out, &errb).Run(ctx, script)
	return out.String(), errb.String(), code
}

func TestUnknownCommandExits127AndListsTheToolbox(t *testing.T) {
	_, stderr, code := runIn(t, t.TempDir(), "perl -e 'print 1'")
	if code != 127 {
		t.Fatalf("exit %d, want 127", code)
	}
	for _, want := range []string{"perl: command not found", "runs no programs", "grep", "jq", "awk"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("message %q lacks %q", stderr, want)
		}
	}
}

// TestPlantedGrepOnPathIsNotRun is the trojan attack: the workspace ships "grep" and puts
// itself first on PATH; the toolbox's own grep must still answer.
func TestPlantedGrepOnPathIsNotRun(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "grep"), []byte("#!/bin/sh\necho PWNED\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "result.txt"), []byte("FAIL\n"), 0o644)
	out, _, code := runIn(t, dir, `PATH="$PWD:$PATH"; export PATH; grep -q PASS result.txt && echo passed; ./grep; `+dir+`/grep; echo $?`)
	if strings.Contains(out, "PWNED") || strings.Contains(out, "passed") || out != "127\n" || code != 0 {
		t.Fatalf("planted grep influenced the result: stdout %q exit %d", out, code)
	}
}

func TestAbsoluteSystemPathsMapToToolboxCommands(t *testing.T) {
	out, _, code := runIn(t, t.TempDir(), `echo hi | /usr/bin/tr a-z A-Z; /bin/echo ok`)
	if out != "HI\nok\n" || code != 0 {
		t.Fatalf("stdout %q exit %d", out, code)
	}
}

func TestInfiniteLoopStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- New(t.TempDir(), nil, strings.NewReader(""), &out, &out).Run(ctx, `while true; do :; done`)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("runner did not stop after its context ended")
	}
}

func TestRunawayRecursionIsBounded(t *testing.T) {
	_, stderr, code := runIn(t, t.TempDir(), `f() { f; }; f`)
	if code == 0 || !strings.Contains(stderr, "nesting level") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}

func TestSyntaxErrorExits2(t *testing.T) {
	_, stderr, code := runIn(t, t.TempDir(), `if then fi`)
	if code != 2 || stderr == "" {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}

func TestPipelineOfManyStagesDoesNotDeadlock(t *testing.T) {
	out, _, code := runIn(t, t.TempDir(), `seq 1 50000 | cat | grep 9 | sort -n | uniq | tail -1 | cat`)
	if out != "49999\n" || code != 0 {
		t.Fatalf("stdout %q exit %d", out, code)
	}
}

// TestDashNamedFilesDoNotTurnAGlobIntoOptions is the planted-options attack: files named
// like options sit next to a file with a TODO, so `*` expands to `-e -v ... notes.txt` after
// the pattern. Each negative check must still see the TODO.
func TestDashNamedFilesDoNotTurnAGlobIntoOptions(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"-e", "-v", "-r", "--help", "-rf", "-n5", "-l", "-c", "-L", "-s", "-x"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("clean\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("TODO: finish\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{
		`! grep -q TODO *`,
		`! grep -qr TODO *`,
		`! egrep -q 'TODO|FIXME' *`,
		`! fgrep -q TODO *`,
		`test "$(grep -c TODO * | grep -v ':0$')" = ""`,
		`test -z "$(grep -l TODO *)"`,
		`! cat notes.txt * | grep -q TODO`,
		`! sed -n /TODO/p notes.txt * | grep -q .`,
		`! awk '/TODO/ {f=1} END {exit !f}' notes.txt *`,
		`! ls | xargs grep -q TODO`,
	} {
		out, stderr, code := runIn(t, dir, script)
		if code == 0 {
			t.Errorf("%s: exit 0, want a failure (a planted file was read as an option)\nstdout %q\nstderr %q", script, out, stderr)
		}
	}
}

// dashDir is a workspace with files named like options, notes.txt and, with stdin, a file
// named "-"; the file todoIn holds a TODO.
func dashDir(t *testing.T, todoIn string, stdin bool) string {
	t.Helper()
	dir := t.TempDir()
	names := []string{"-e", "-v", "-r", "--help", "-rf", "-n5", "-c", "notes.txt"}
	if stdin {
		names = append(names, "-")
	}
	for _, n := range names {
		body := "clean\n"
		if n == todoIn {
			body = "TODO: finish\n"
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestGlobNeverYieldsAnOptionOrStdin is the same attack on a glob that comes first, where
// options are still read (`cat *`), and on a file named "-" (standard input to most
// commands): a glob's dash-named matches become ./NAME.
func TestGlobNeverYieldsAnOptionOrStdin(t *testing.T) {
	for _, todoIn := range []string{"notes.txt", "--help", "-"} {
		dir := dashDir(t, todoIn, todoIn == "-")
		for _, script := range []string{
			`! cat * | grep -q TODO`,
			`! head -n 5 * | grep -q TODO`,
			`! tail * | grep -q TODO`,
			`! sort * | grep -q TODO`,
			`! grep -q TODO *`,
			`! grep -q TODO ./*`,
			`for f in *; do grep -q TODO "$f" && exit 1; done; exit 0`,
			`! awk '/TODO/ {f=1} END {exit !f}' *`,
		} {
			out, stderr, code := runIn(t, dir, script)
			if code == 0 {
				t.Errorf("TODO in %s: %s: exit 0, want a failure\nstdout %q\nstderr %q", todoIn, script, out, stderr)
			}
		}
	}
}

func TestGlobRewritesOnlyItsOwnDashNamedMatches(t *testing.T) {
	for script, want := range map[string]string{
		`echo *`:                    "./- ./--help ./-c ./-e ./-n5 ./-r ./-rf ./-v notes.txt\n",
		`echo -r*`:                  "./-r ./-rf\n",
		`echo '-'r?`:                "./-rf\n",
		`echo -v -[z]* -[z]`:        "-v -[z]* -[z]\n",
		`x=-r; echo $x*`:            "-r -rf\n",
		`echo {-v,-e}`:              "-v -e\n",
		`set -f; echo -*`:           "-*\n",
		`echo "-*"`:                 "-*\n",
		`mkdir d && cd d && echo *`: "*\n",
	} {
		out, stderr, code := runIn(t, dashDir(t, "", true), script)
		if out != want || code != 0 {
			t.Errorf("%s: stdout %q exit %d (stderr %q), want %q", script, out, code, stderr, want)
		}
	}
}

func TestUnavailableNamesProgramsTheToolboxCannotRun(t *testing.T) {
	got, err := Unavailable(`f() { echo hi; }; f; python3 -c 'print(1)' | grep 1 && node x.js; /usr/bin/cat a; $CMD; if true; then perl -e 1; fi; sh -c "ruby x"`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "node perl" {
		t.Errorf("Unavailable = %q, want [node perl]", got)
	}
}
