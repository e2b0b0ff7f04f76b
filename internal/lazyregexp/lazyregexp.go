// Package lazyregexp is a regexp.Regexp compiled on first use. ceval's packages declare
// their patterns as package variables; compiled in init they cost every ceval command (and
// --help) ~1 ms of start-up, though most commands use a few of them or none. In tests a
// pattern is compiled as soon as it is declared, so a bad one still fails every test run.
package lazyregexp

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// inTest: this is a test binary (as Go's own internal/lazyregexp tells).
var inTest = len(os.Args) > 0 && strings.HasSuffix(os.Args[0], ".test")

// Regexp is a pattern compiled on first use, with the methods of regexp.Regexp that
// ceval's packages use.
type Regexp struct {
	str  string
	once sync.Once
	rx   *regexp.Regexp
}

// New returns str as a Regexp; an invalid str panics on first use (at once in tests), as
// regexp.MustCompile does.
func New(str string) *Regexp {
	r := &Regexp{str: str}
	if inTest {
		r.re()
	}
	return r
}

func (r *Regexp) re() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.str) })
	return r.rx
}

// Regexp returns the compiled pattern.
func (r *Regexp) Regexp() *regexp.Regexp { return r.re() }

func (r *Regexp) String() string                       { return r.str }
func (r *Regexp) MatchString(s string) bool            { return r.re().MatchString(s) }
func (r *Regexp) Match(b []byte) bool                  { return r.re().Match(b) }
func (r *Regexp) FindStringSubmatch(s string) []string { return r.re().FindStringSubmatch(s) }
func (r *Regexp) FindSubmatch(b []byte) [][]byte       { return r.re().FindSubmatch(b) }
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.re().FindAllStringSubmatch(s, n)
}
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.re().ReplaceAllString(src, repl)
}
func (r *Regexp) ReplaceAllLiteralString(src, repl string) string {
	return r.re().ReplaceAllLiteralString(src, repl)
}
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.re().ReplaceAllStringFunc(src, repl)
}
