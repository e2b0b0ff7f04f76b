package main

import "testing"

// A program the host did not write (truncated, a count past its end, an unknown token) is
// refused with status 2 before any command runs; a well-formed one exits with its last
// statement's status.
func TestProgramIsCheckedAndRunsToItsLastStatus(t *testing.T) {
	for _, tt := range []struct {
		prog []string
		want int
	}{
		{[]string{}, 0},
		{[]string{"c", "1", "false"}, 1},
		{[]string{"c", "1", "false", "c", "1", "true"}, 0},
		{[]string{"!", "c", "1", "true"}, 1},
		{[]string{"&&", "c", "1", "false", "c", "2", "nosuch", "x"}, 1},
		{[]string{"||", "c", "1", "false", "!", "c", "1", "false"}, 0},
		{[]string{"|", "2", "c", "1", "false", "c", "1", "true"}, 0},
		{[]string{"|", "2", "c", "1", "true", "r", "1", "e-", "c", "1", "false"}, 1},
		{[]string{"c", "1", "nosuch"}, 127},
		{[]string{"c"}, 2},
		{[]string{"c", "3", "true"}, 2},
		{[]string{"c", "0"}, 2},
		{[]string{"c", "x", "true"}, 2},
		{[]string{"&&", "c", "1", "true"}, 2},
		{[]string{"|", "1", "c", "1", "true"}, 2},
		{[]string{"r", "1", "o-"}, 2},
		{[]string{"r", "1", "x", "c", "1", "true"}, 2},
		{[]string{"sh", "-c", "true"}, 2},
	} {
		if got := run(tt.prog); got != tt.want {
			t.Errorf("run(%q) = %d, want %d", tt.prog, got, tt.want)
		}
	}
}
