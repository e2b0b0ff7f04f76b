package wasm

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

// liteScripts are run_command scripts the small toolbox runs: every command of
// cmds.LiteNames, its option and file errors, quoting, braces, /bin paths, && || ! and ;.
var liteScripts = []string{
	`test -f a.txt`, `[ -f a.txt ]`, `[ -d sub ] && [ ! -e nope ]`, `test -s empty.txt || echo empty`,
	`test 3 -gt 2 && test abc = abc`, `[ 1 -eq ]`, `test -f`, `[ a.txt -nt b.txt ]`, `test -x a.txt`,
	`grep -q hello a.txt`, `grep -c o a.txt b.txt`, `grep -n 'l\+' a.txt`, `grep -E "^h(e|a)llo$" a.txt`,
	`egrep -v x a.txt`, `fgrep -i HELLO a.txt`, `grep missing nofile.txt`, `grep -Z x a.txt`,
	`grep -rq hello sub`, `grep -o '[0-9]*' nums.txt`, `grep -w -x hello a.txt b.txt`, `grep -q hello -- -dash.txt`,
	`wc -l a.txt b.txt`, `wc -w lines.txt`, `cat a.txt b.txt`, `cat nope`, `cat -n lines.txt`,
	`head -n 2 lines.txt`, `tail -n 1 lines.txt`, `head -c 3 a.txt`, `tail -n +2 lines.txt`, `head -z a.txt`,
	`cut -d, -f2 data.csv`, `cut -c1-3 lines.txt`, `cut -f9`, `tr a-z A-Z`, `tr -d`,
	`sort -n nums.txt`, `sort -r -u words.txt`, `uniq -c words.txt`, `sort -t, -k2 data.csv`, `sort -q`,
	`echo -n hi`, `echo "a  b" 'c d' e\ f`, `printf '%s=%d\n' x 3`, `printf '%d\n' abc`, `echo -e 'a\tb'`,
	`seq 3`, `seq 1 2 9`, `seq x`, `basename /a/b.txt .txt`, `dirname a/b/c`,
	`/bin/grep -q hello a.txt`, `/usr/bin/test -e a.txt`, `true && false || echo fallback`,
	`! grep -q zzz a.txt`, `false; true`, `true; false`, `echo {a,b}{1,2} x{1..3}`, `# nothing`,
	`echo "\$HOME \"q\"" a\"b`, "grep -q hello a.txt &&\n  wc -l lines.txt",
	`cat a.txt | grep -q hello`, `grep o a.txt b.txt | wc -l`, `sort words.txt | uniq -c | sort -rn`,
	`! cat a.txt | grep -q zzz`, `true | false`, `false | true`, `grep zzz nofile | wc -l`,
	`seq 1 200000 | head -n 2`, `seq 1 200000 | tail -n 1`, `cat lines.txt | tr a-z A-Z | cut -c1-4`,
	`seq 3 | grep -q 2 && echo found || echo none`,
	`grep -q hello a.txt 2>/dev/null`, `grep x nofile 2>/dev/null || echo none`, `cat nofile 2>&1`,
	`cat nofile 2>&1 >/dev/null`, `cat a.txt nofile >/dev/null 2>&1`, `echo err >&2`, `cat nofile &>/dev/null`,
	`grep hello nofile a.txt 2>&1 | wc -l`, `cat nofile 2>&1 | sort`, `grep o a.txt >/dev/null && echo yes`,
	`! grep -q zzz a.txt 2>/dev/null`, `echo x 1>&1 2>&2 >>/dev/null`,
}

// fullScripts need the full toolbox: a redirection from or to a file, a substitution, a glob, a tilde, a
// builtin, a |& or subshell stage, a command outside cmds.LiteNames, a variable.
var fullScripts = []string{
	`wc -l < lines.txt`, `[ "$(echo x)" = x ]`, `cat *.txt`, `echo ~`, `cd sub && cat c.txt`,
	`grep o a.txt |& wc -l`, `grep o a.txt | (cat)`, `jq -n 1`, `echo x > out.txt`, `cat a.txt 3>/dev/null`, `echo $PWD`, `x=1 grep -q hello a.txt`, `exit 3`,
}

func liteTestTask(t *testing.T, scripts []string) *task.Task {
	t.Helper()
	var b strings.Builder
	b.WriteString("task_id: lite\ninitial_prompt: x\nsuccess_criteria:\n")
	for _, s := range scripts {
		q, _ := json.Marshal(s)
		b.WriteString("  - {type: run_command, command: " + string(q) + ", expected_stdout: \"x\", stdout_match: contains}\n")
	}
	path := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	return tk
}

// The small toolbox answers every script it takes exactly as the full toolbox does: the
// same stdout, stderr, exit status, score and details, over the same workspace; scripts
// outside it run in the full toolbox. Red with a command of the small toolbox that differs.
func TestSmallToolboxRunsItsScriptsAsTheFullOne(t *testing.T) {
	if !HasToolbox() || defaultToolboxLite() == nil {
		t.Skip("internal/embedded has no toolboxes: run make embedded")
	}
	s := workspace(t, map[string]string{
		"a.txt": "hello\nhallo x\n", "b.txt": "Hello world\nfoo\n", "empty.txt": "",
		"lines.txt": "one two\nthree\nfour five six\n", "nums.txt": "10\n9\n100\nx1\n",
		"words.txt": "b\na\nb\nc\na\n", "data.csv": "1,z\n2,y\n3,x\n", "sub/c.txt": "hello c\n",
		"-dash.txt": "hello dash\n",
	}, nil)
	tk := liteTestTask(t, append(slices.Clone(liteScripts), fullScripts...))
	lite := newExecutor(t, defaultToolbox(), Options{NoFullToolboxPreload: true})
	full := newExecutor(t, defaultToolbox(), Options{})
	full.lite = nil
	ranLite := 0
	for i := range tk.Criteria {
		c := &tk.Criteria[i]
		if i == len(liteScripts) && holdsToolbox(lite) {
			t.Error("the small toolbox's executor loaded the full toolbox before a script needed it")
		}
		script := c.Spec.(*task.RunCommandSpec).Command
		m, _, err := lite.module(c)
		if err != nil {
			t.Fatal(err)
		}
		small := m == defaultToolboxLite()
		if small != (i < len(liteScripts)) {
			t.Errorf("%q: runs in the small toolbox: %v, want %v", script, small, !small)
		}
		if small != !UsesFullToolbox(c) {
			t.Errorf("%q: runs in the small toolbox %v, but UsesFullToolbox says %v", script, small, UsesFullToolbox(c))
		}
		if small {
			ranLite++
		}
		rl, sl, dl := runScript(t, lite, c, s, nil)
		rf, sf, df := runScript(t, full, c, s, nil)
		if rl.ExitCode != rf.ExitCode || !bytes.Equal(rl.Stdout, rf.Stdout) || !bytes.Equal(rl.Stderr, rf.Stderr) || sl != sf || dl != df {
			t.Errorf("%q (small toolbox %v): differs from the full toolbox:\nsmall: exit %d stdout %q stderr %q score %v details %q\nfull:  exit %d stdout %q stderr %q score %v details %q",
				script, small, rl.ExitCode, rl.Stdout, rl.Stderr, sl, dl, rf.ExitCode, rf.Stdout, rf.Stderr, sf, df)
		}
	}
	if ranLite != len(liteScripts) {
		t.Errorf("%d scripts ran in the small toolbox, want the %d of liteScripts", ranLite, len(liteScripts))
	}
}

// NewExecutor loads ahead only the toolboxes its criteria's scripts need: a grade whose
// scripts all fit the small toolbox never pays for validating the full one, nor one whose
// scripts all need the full toolbox for the small one. Red with either option ignored.
func TestOnlyTheToolboxesTheScriptsNeedArePreloaded(t *testing.T) {
	if !HasToolbox() || defaultToolboxLite() == nil {
		t.Skip("internal/embedded has no toolboxes: run make embedded")
	}
	tk := liteTestTask(t, []string{"test -f a.txt", "jq -n -e true"})
	lite, full := &tk.Criteria[0], &tk.Criteria[1]
	if UsesFullToolbox(lite) || !UsesFullToolbox(full) {
		t.Fatalf("UsesFullToolbox: %v for test -f, %v for jq; want false, true", UsesFullToolbox(lite), UsesFullToolbox(full))
	}
	for _, tt := range []struct {
		noFull, noLite     bool
		wantFull, wantLite bool
	}{
		{false, false, true, true},
		{true, false, false, true},
		{false, true, true, false},
	} {
		e, err := NewExecutor(Options{CacheDir: testCache, NoFullToolboxPreload: tt.noFull, NoLiteToolboxPreload: tt.noLite})
		if err != nil {
			t.Fatal(err)
		}
		if got, got2 := holdsModule(e, defaultToolbox()), holdsModule(e, defaultToolboxLite()); got != tt.wantFull || got2 != tt.wantLite {
			t.Errorf("NoFullToolboxPreload %v, NoLiteToolboxPreload %v: full loaded %v, small loaded %v; want %v, %v",
				tt.noFull, tt.noLite, got, got2, tt.wantFull, tt.wantLite)
		}
		e.Close()
	}
}
