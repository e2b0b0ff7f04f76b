package cmds

import "testing"

func TestTranslateRegex(t *testing.T) {
	tests := []struct {
		pat  string
		ere  bool
		want string
	}{
		{`a\(b\)c`, false, `a(b)c`},
		{`(a)`, false, `\(a\)`},
		{`a\{2,3\}`, false, `a{2,3}`},
		{`a{2}`, false, `a\{2\}`},
		{`a\|b`, false, `a|b`},
		{`a|b`, false, `a\|b`},
		{`a+b?`, false, `a\+b\?`},
		{`a\+`, false, `a+`},
		{`*a`, false, `\*a`},
		{`\(*a\)`, false, `(\*a)`},
		{`a^b$c`, false, `a\^b\$c`},
		{`^a$`, false, `^a$`},
		{`[]a\]`, false, `[\]a\\]`},
		{`[[:digit:]]+`, true, `[[:digit:]]+`},
		{`\<word\>`, true, `\bword\b`},
		{`a{`, true, `a\{`},
		{`(a|b){2}`, true, `(a|b){2}`},
		{`\.`, false, `\.`},
	}
	for _, tc := range tests {
		got, err := translateRegex(tc.pat, tc.ere)
		if err != nil || got != tc.want {
			t.Errorf("translateRegex(%q, ere=%v) = %q, %v; want %q", tc.pat, tc.ere, got, err, tc.want)
		}
	}
}

func TestBackReferencesAreRejected(t *testing.T) {
	if _, err := translateRegex(`\(a\)\1`, false); err == nil {
		t.Fatal("a back-reference compiled; RE2 cannot match it")
	}
}
