package mockd

import (
	"os"
	"testing"

	"ceval.dev/ceval/mockd/fixture"
)

// ghFixture is the fixture package's test fixture for tool gh (a rule of each match mode, a
// stdin rule and a default).
var ghFixture = func() string {
	b, err := os.ReadFile("fixture/testdata/gh.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func mustFixture(t testing.TB, src string) *fixture.Fixture {
	t.Helper()
	f, probs := fixture.ParseFixture([]byte(src))
	if probs != nil {
		t.Fatalf("ParseFixture: %v", probs)
	}
	return f
}
