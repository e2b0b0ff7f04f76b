package shell

import (
	"slices"
	"testing"
)

// LiteProgram takes only scripts whose every word expands to fixed fields and whose every
// command is the small toolbox's, and writes them as its prefix program.
func TestLiteProgramTakesOnlyWhatRunsTheSame(t *testing.T) {
	for _, tt := range []struct {
		script string
		want   []string // nil: the full toolbox
	}{
		{`test -f a.txt`, []string{"c", "3", "test", "-f", "a.txt"}},
		{`[ -f a.txt ]`, []string{"c", "4", "[", "-f", "a.txt", "]"}},
		{`# only a comment`, []string{}},
		{"true\nfalse; true", []string{"c", "1", "true", "c", "1", "false", "c", "1", "true"}},
		{`! grep -q x a && wc -l a || echo no`, []string{"||", "&&", "!", "c", "4", "grep", "-q", "x", "a", "c", "3", "wc", "-l", "a", "c", "2", "echo", "no"}},
		{`echo "a  b" 'c $d' e\ f`, []string{"c", "4", "echo", "a  b", "c $d", "e f"}},
		{`echo x{1,2} {1..3}`, []string{"c", "6", "echo", "x1", "x2", "1", "2", "3"}},
		{`/bin/grep -q x a`, []string{"c", "4", "grep", "-q", "x", "a"}},
		{`echo ""`, []string{"c", "2", "echo", ""}},
		{`grep x a | wc -l`, []string{"|", "2", "c", "3", "grep", "x", "a", "c", "2", "wc", "-l"}},
		{`! cat a | sort | uniq -c && true`, []string{"&&", "!", "|", "3", "c", "2", "cat", "a", "c", "1", "sort", "c", "2", "uniq", "-c", "c", "1", "true"}},
		{`grep x a |& wc -l`, nil},
		{`grep x a | (wc -l)`, nil},
		{`grep x a | wc -l > n`, nil},
		{`cat a | jq .`, nil},
		{`wc -l < a`, nil},
		{`grep x a > /dev/null`, []string{"r", "1", "o-", "c", "3", "grep", "x", "a"}},
		{`cat a >/dev/null 2>&1; echo x >&2`, []string{"r", "2", "o-", "e>o", "c", "2", "cat", "a", "r", "1", "o>e", "c", "2", "echo", "x"}},
		{`cat a 2>&1 &>/dev/null 1>&1 | wc -l 2>/dev/null`, []string{"|", "2", "r", "3", "e>o", "o-", "e-", "c", "2", "cat", "a", "r", "1", "e-", "c", "2", "wc", "-l"}},
		{`grep x a > out`, nil},
		{`grep x a 2> err`, nil},
		{`grep x a 0>/dev/null`, nil},
		{`grep x a 3>/dev/null`, nil},
		{`grep x a >&3`, nil},
		{`grep x a <<< x`, nil},
		{`grep x <<EOF` + "\nx\nEOF", nil},
		{`grep x a > "$F"`, nil},
		{`{ grep x a; } > /dev/null`, nil},
		{`grep x a && wc -l a > /dev/null`, []string{"&&", "c", "3", "grep", "x", "a", "r", "1", "o-", "c", "3", "wc", "-l", "a"}},
		{`echo $HOME`, nil},
		{`echo "$HOME"`, nil},
		{`echo $(cat a)`, nil},
		{`echo $((1+2))`, nil},
		{`cat *.txt`, nil},
		{`cat a?.txt`, nil},
		{`cat [ab].txt`, nil},
		{`echo ~`, nil},
		{`echo $'a\tb'`, nil},
		{`X=1 grep x a`, nil},
		{`X=1`, nil},
		{`grep x a &`, nil},
		{`cd sub && cat a`, nil},
		{`exit 1`, nil},
		{`jq . a.json`, nil},
		{`python3 -c 1`, nil},
		{`sh -c 'true'`, nil},
		{`f() { true; }; f`, nil},
		{`if true; then true; fi`, nil},
		{`{ true; }`, nil},
		{`(true)`, nil},
		{`[[ -f a ]]`, nil},
		{`echo "unterminated`, nil},
		{`./grep x a`, nil},
	} {
		got, ok := LiteProgram(tt.script)
		if ok != (tt.want != nil) || !slices.Equal(got, tt.want) {
			t.Errorf("LiteProgram(%q) = %q, %v; want %q, %v", tt.script, got, ok, tt.want, tt.want != nil)
		}
	}
}
