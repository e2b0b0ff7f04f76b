package lazyregexp

import "testing"

func TestPatternMatchesLikeRegexp(t *testing.T) {
	r := New(`^([a-z]+)-([0-9]+)$`)
	if !r.MatchString("abc-12") || r.MatchString("abc-") || r.String() != `^([a-z]+)-([0-9]+)$` {
		t.Fatal("MatchString or String differ from regexp's")
	}
	if m := r.FindStringSubmatch("abc-12"); len(m) != 3 || m[1] != "abc" || m[2] != "12" {
		t.Fatalf("FindStringSubmatch = %q", m)
	}
	if got := New(`o+`).ReplaceAllStringFunc("foo boo", func(s string) string { return "0" }); got != "f0 b0" {
		t.Fatalf("ReplaceAllStringFunc = %q", got)
	}
}

// In tests a bad pattern fails where it is declared, not on some later first use.
func TestBadPatternPanicsAtDeclarationInTests(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted an invalid pattern")
		}
	}()
	New(`(`)
}
