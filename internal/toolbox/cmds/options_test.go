package cmds

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// dashFiles are the workspace files an agent plants to be read as options, in the order a
// glob expands them. Each holds a JSON string naming itself, so that every command (jq too)
// can read it and show that it did.
var dashFiles = []string{"--help", "-e", "-n5", "-r", "-rf", "-v"}

const notes = `"TODO: finish"` + "\n"

func dashContent(name string) string { return `"dash ` + name + `"` + "\n" }

// dashWorkspace is a directory holding notes.txt (with a TODO) and every dash file.
func dashWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"notes.txt": notes}
	for _, n := range dashFiles {
		files[n] = dashContent(n)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// glob is what `*` expands to in the dash workspace: every name, sorted bytewise.
func glob() []string { return append(append([]string(nil), dashFiles...), "notes.txt") }

type ran struct {
	stdout, stderr string
	status         int
	dir            string
}

// runCmd runs one toolbox command in dir with stdin, as the shell would.
func runCmd(t *testing.T, dir, stdin string, argv ...string) ran {
	t.Helper()
	var out, errb bytes.Buffer
	e := &Env{Ctx: context.Background(), Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Dir: dir,
		Getenv: func(string) string { return "" }, Environ: func() []string { return nil }}
	e.Run = func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		f, ok := Lookup(args[0])
		if !ok {
			return 127
		}
		sub := *e
		sub.Stdin, sub.Stdout, sub.Stderr = stdin, stdout, stderr
		return f(&sub, args[1:])
	}
	f, ok := Lookup(argv[0])
	if !ok {
		t.Fatalf("no command %q", argv[0])
	}
	st := f(e, argv[1:])
	return ran{out.String(), errb.String(), st, dir}
}

func (r ran) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(r.dir, name))
	return err == nil
}

func (r ran) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(r.dir, name))
	return string(b)
}

// all concatenates f(name) over names.
func all(names []string, f func(string) string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(f(n))
	}
	return b.String()
}

func contents(names []string) string {
	return all(names, func(n string) string {
		if n == "notes.txt" {
			return notes
		}
		return dashContent(n)
	})
}

// operandCases covers every toolbox command that takes operands: each row puts the dash
// files after the command's first operand, where POSIX getopt has stopped reading options,
// and checks that they were taken as operands (read, written, named) and never as options.
var operandCases = []struct {
	name  string
	stdin string
	argv  []string
	ok    func(r ran) bool
}{
	{name: "grep -c TODO *", argv: append([]string{"grep", "-c", "TODO"}, glob()...), ok: func(r ran) bool {
		return r.status == 0 && r.stdout == all(dashFiles, func(n string) string { return n + ":0\n" })+"notes.txt:1\n"
	}},
	{name: "grep -q TODO * finds the TODO", argv: append([]string{"grep", "-q", "TODO"}, glob()...), ok: func(r ran) bool {
		return r.status == 0
	}},
	{name: "egrep -l TODO *", argv: append([]string{"egrep", "-l", "TODO"}, glob()...), ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "notes.txt\n"
	}},
	{name: "fgrep -L TODO *", argv: append([]string{"fgrep", "-L", "TODO"}, glob()...), ok: func(r ran) bool {
		return r.stdout == strings.Join(dashFiles, "\n")+"\n"
	}},
	{name: "grep -r TODO . -v", argv: []string{"grep", "-r", "TODO", ".", "-v"}, ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "./notes.txt:"+notes
	}},
	{name: "cat", argv: append([]string{"cat", "notes.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && r.stdout == contents(append([]string{"notes.txt"}, dashFiles...))
	}},
	{name: "head", argv: append([]string{"head", "-n", "1", "notes.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && strings.Count(r.stdout, "==> ") == 7 && strings.Contains(r.stdout, "==> -n5 <==\n"+dashContent("-n5"))
	}},
	{name: "tail", argv: append([]string{"tail", "notes.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && strings.Count(r.stdout, "==> ") == 7 && strings.Contains(r.stdout, "==> -rf <==\n"+dashContent("-rf"))
	}},
	{name: "wc", argv: append([]string{"wc", "-l", "notes.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && strings.Contains(r.stdout, "1 --help\n") && strings.HasSuffix(r.stdout, "7 total\n")
	}},
	{name: "sha256sum", argv: append([]string{"sha256sum", "notes.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && strings.Count(r.stdout, "\n") == 7 && strings.Contains(r.stdout, "  -v\n")
	}},
	{name: "md5sum", argv: append([]string{"md5sum", "notes.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && strings.Count(r.stdout, "\n") == 7 && strings.Contains(r.stdout, "  -e\n")
	}},
	{name: "sort", argv: append([]string{"sort", "notes.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && r.stdout == contents(append([]string{"notes.txt"}, dashFiles...))
	}},
	{name: "uniq writes its second operand", argv: []string{"uniq", "notes.txt", "-v"}, ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "" && r.read("-v") == notes
	}},
	{name: "cut", argv: append([]string{"cut", "-c", "2-5", "notes.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "TODO\n"+strings.Repeat("dash\n", len(dashFiles))
	}},
	{name: "tr takes -v as its second set", stdin: "abc\n", argv: []string{"tr", "ab", "-v"}, ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "-vc\n"
	}},
	{name: "sed", argv: append([]string{"sed", "s/^/>/", "notes.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && r.stdout == all(append([]string{"notes.txt"}, dashFiles...), func(n string) string {
			return ">" + contents([]string{n})
		})
	}},
	{name: "awk", argv: append([]string{"awk", "{print FILENAME}", "notes.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "notes.txt\n"+strings.Join(dashFiles, "\n")+"\n"
	}},
	{name: "diff", argv: []string{"diff", "notes.txt", "-e"}, ok: func(r ran) bool {
		return r.status == 1 && strings.Contains(r.stdout, "> "+dashContent("-e"))
	}},
	{name: "diff names a third operand", argv: []string{"diff", "notes.txt", "-e", "-u"}, ok: func(r ran) bool {
		return r.status == 2 && strings.Contains(r.stderr, "extra operand '-u' (options go before the first operand")
	}},
	{name: "a missing dash-named operand says it was one", argv: []string{"cat", "notes.txt", "-z"}, ok: func(r ran) bool {
		return r.status == 1 && r.stdout == notes && strings.Contains(r.stderr, "cat: -z: No such file or directory (read as an operand")
	}},
	{name: "cmp", argv: []string{"cmp", "notes.txt", "-v"}, ok: func(r ran) bool {
		return r.status == 1 && strings.Contains(r.stdout, "differ")
	}},
	{name: "ls", argv: append([]string{"ls", "notes.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && r.stdout == strings.Join(glob(), "\n")+"\n"
	}},
	{name: "jq", argv: append([]string{"jq", "-r", "."}, glob()...), ok: func(r ran) bool {
		return r.status == 0 && r.stdout == all(glob(), func(n string) string {
			return strings.Trim(strings.TrimSpace(contents([]string{n})), `"`) + "\n"
		})
	}},
	{name: "jq -e over * with a planted -n", argv: append([]string{"jq", "-e", `. == "TODO: finish"`}, glob()...), ok: func(r ran) bool {
		return r.status == 0 && r.stdout == strings.Repeat("false\n", len(dashFiles))+"true\n"
	}},
	{name: "xargs passes -r to its command", stdin: "notes.txt\n", argv: []string{"xargs", "echo", "-r"}, ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "-r notes.txt\n"
	}},
	{name: "xargs grep over planted names", stdin: strings.Join(glob(), "\n") + "\n", argv: []string{"xargs", "grep", "-c", "TODO"}, ok: func(r ran) bool {
		return r.status == 0 && strings.HasSuffix(r.stdout, "-v:0\nnotes.txt:1\n")
	}},
	{name: "tee", stdin: "in\n", argv: append([]string{"tee", "out.txt"}, dashFiles...), ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "in\n" && r.read("out.txt") == "in\n" && r.read("-rf") == "in\n"
	}},
	{name: "mkdir", argv: []string{"mkdir", "new", "-p", "-v"}, ok: func(r ran) bool {
		st, err := os.Stat(filepath.Join(r.dir, "-p"))
		return r.status == 1 && r.exists("new") && err == nil && st.IsDir() && r.stdout == "" &&
			strings.Contains(r.stderr, "cannot create directory '-v'")
	}},
	{name: "rm", argv: []string{"rm", "notes.txt", "-rf", "-v"}, ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "" && !r.exists("notes.txt") && !r.exists("-rf") && !r.exists("-v") && r.exists("-r")
	}},
	{name: "touch", argv: []string{"touch", "new.txt", "-c"}, ok: func(r ran) bool {
		return r.status == 0 && r.exists("new.txt") && r.exists("-c")
	}},
	{name: "basename takes -s as the suffix", argv: []string{"basename", "a/b-s", "-s"}, ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "b\n"
	}},
	{name: "dirname", argv: []string{"dirname", "a/b", "-v"}, ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "a\n.\n"
	}},
	{name: "seq", argv: []string{"seq", "3", "-1", "1"}, ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "3\n2\n1\n"
	}},
	{name: "echo", argv: []string{"echo", "a", "-n", "-e"}, ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "a -n -e\n"
	}},
	{name: "printf", argv: []string{"printf", `%s\n`, "-v", "--help"}, ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "-v\n--help\n"
	}},
	{name: "find's own grammar: a -name value", argv: []string{"find", ".", "-name", "-n5"}, ok: func(r ran) bool {
		return r.status == 0 && r.stdout == "./-n5\n"
	}},
}

// operandFree are the commands outside operandCases, and why.
var operandFree = map[string]string{
	"true": "takes no operands", "false": "takes no operands", "pwd": "takes no operands",
	"env":    "runs nothing, so takes no operands",
	"python": "hands its argv to CPython, whose own parser reads it", "python3": "hands its argv to CPython, whose own parser reads it",
	"test": "its operands are an expression with its own grammar", "[": "its operands are an expression with its own grammar",
}

func TestDashNamedFilesAfterAnOperandAreNeverOptions(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range operandCases {
		covered[c.argv[0]] = true
		t.Run(c.name, func(t *testing.T) {
			r := runCmd(t, dashWorkspace(t), c.stdin, c.argv...)
			if !c.ok(r) {
				t.Errorf("%q: exit %d\nstdout:\n%s\nstderr:\n%s", c.argv, r.status, r.stdout, r.stderr)
			}
		})
	}
	for _, n := range Names() {
		if !covered[n] && operandFree[n] == "" {
			t.Errorf("command %s has no row in operandCases: add one, or say in operandFree why it takes no operands", n)
		}
	}
}

func TestFlagSetStopsAtTheFirstOperandAndAtDoubleDash(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		operands []string
		set      string // the options found, in any order
		err      string
	}{
		{"options before operands", []string{"-rn", "pat", "dir"}, []string{"pat", "dir"}, "nr", ""},
		{"an option after an operand is an operand", []string{"-q", "TODO", "-v", "-e", "x"}, []string{"TODO", "-v", "-e", "x"}, "q", ""},
		{"a bundle after an operand is an operand", []string{"a", "-rf", "--help"}, []string{"a", "-rf", "--help"}, "", ""},
		{"-- ends options", []string{"-n", "--", "-v", "f"}, []string{"-v", "f"}, "n", ""},
		{"a lone - is an operand", []string{"-", "-v"}, []string{"-", "-v"}, "", ""},
		{"values attached and apart", []string{"-k2", "-t", ",", "f"}, []string{"f"}, "kt", ""},
		{"a value that looks like an option is a value", []string{"-e", "-v", "f"}, []string{"f"}, "e", ""},
		{"long value with = and apart", []string{"--key=1", "--key", "2", "f"}, []string{"f"}, "k", ""},
		{"unknown option says what to do", []string{"-x", "f"}, nil, "", "invalid option -- 'x' (options go before the first operand; put -- before operands that start with '-')"},
		{"unknown long option", []string{"--help", "f"}, nil, "", "unrecognized option '--help'"},
		{"missing value", []string{"-k"}, nil, "", "option requires an argument -- 'k'"},
		{"a flag long option takes no value", []string{"--verbose=1"}, nil, "", "doesn't allow an argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl := newFlags("t", "nrqv", "ekt")
			fl.longVals["key"] = 'k'
			fl.longs["verbose"] = 'v'
			got, err := fl.parse(tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			var set []byte
			for c := range fl.set {
				set = append(set, c)
			}
			if err != nil || !reflect.DeepEqual(got, tt.operands) || len(set) != len(tt.set) || strings.Trim(string(set), tt.set) != "" {
				t.Errorf("parse(%q) = %q, %v with %q set; want %q with %q", tt.args, got, err, set, tt.operands, tt.set)
			}
		})
	}
}

func TestFlagSetShorthandsAndOrder(t *testing.T) {
	head := newFlags("head", "qv", "nc")
	head.numShorthand = true
	if got, err := head.parse([]string{"-5", "f", "-3"}); err != nil || head.numFlag != "5" || !reflect.DeepEqual(got, []string{"f", "-3"}) {
		t.Errorf("head -5 f -3: %q %v numFlag %q", got, err, head.numFlag)
	}
	seq := newFlags("seq", "w", "s")
	seq.negNumbers = true
	if got, err := seq.parse([]string{"-w", "-5", "-.5", "-s"}); err != nil || !seq.has('w') || !reflect.DeepEqual(got, []string{"-5", "-.5", "-s"}) {
		t.Errorf("seq -w -5 -.5 -s: %q %v", got, err)
	}
	sed := newFlags("sed", "n", "ef")
	sed.optional = "i"
	sed.longs["in-place"] = 'i'
	got, err := sed.parse([]string{"-e", "1", "-f", "s", "-ibak", "--in-place=x", "-e2", "f"})
	want := []optValue{{'e', []string{"1"}}, {'f', []string{"s"}}, {'i', []string{"bak"}}, {'e', []string{"2"}}}
	if err != nil || !reflect.DeepEqual(sed.order, want) || !reflect.DeepEqual(got, []string{"f"}) {
		t.Errorf("sed: %q %v order %v", got, err, sed.order)
	}
	jq := newFlags("jq", "n", "")
	jq.longVals["arg"] = 1
	jq.longArgs["arg"] = 2
	got, err = jq.parse([]string{"--arg", "a", "-v", ".", "--arg", "x", "y"})
	if err != nil || !reflect.DeepEqual(jq.order, []optValue{{1, []string{"a", "-v"}}}) || !reflect.DeepEqual(got, []string{".", "--arg", "x", "y"}) {
		t.Errorf("jq: %q %v order %v", got, err, jq.order)
	}
	if _, err := jq.parse([]string{"--arg", "a"}); err == nil {
		t.Error("jq --arg with one value: no error")
	}
}

// LiteNames lists exactly the small toolbox's commands, sorted, each one the full
// toolbox's own function under the same name.
func TestLiteNamesAreTheLiteCommands(t *testing.T) {
	var names []string
	for n := range liteCommands() {
		names = append(names, n)
		if _, ok := Lookup(n); !ok {
			t.Errorf("%s: in the small toolbox but not the full one", n)
		}
	}
	sort.Strings(names)
	if !slices.Equal(names, LiteNames) || !slices.IsSorted(LiteNames) {
		t.Errorf("LiteNames = %q, the small toolbox's commands are %q", LiteNames, names)
	}
}
