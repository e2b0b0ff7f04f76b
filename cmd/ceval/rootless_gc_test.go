package main

import (
	"os"
	"runtime/debug"
	"slices"
	"testing"
)

// The re-executed ceval starts with GOGC=off (its package initialisation is garbage the GC
// need not trace) and must then run, and start its own children, with the user's GOGC: a
// run left without a GC, or a WASM worker started with GOGC=off, would grow without bound.
func TestRootlessReexecRunsWithTheUsersGOGCAfterItsStart(t *testing.T) {
	for _, user := range []string{"", "50", "off"} {
		t.Run("GOGC="+user, func(t *testing.T) {
			if user == "" {
				t.Setenv("GOGC", "")
				os.Unsetenv("GOGC")
			} else {
				t.Setenv("GOGC", user)
			}
			env := withStartGCOff(append(os.Environ(), "GOGC=7"))
			if slices.Contains(env, "GOGC=7") || !slices.Contains(env, "GOGC=off") || !slices.Contains(env, rootlessGOGCEnv+"="+user) {
				t.Fatalf("the re-exec's environment: %v", env)
			}
			// The inside, as the re-exec starts it.
			t.Setenv(rootlessChildEnv, "4242")
			t.Setenv("GOGC", "off")
			t.Setenv(rootlessGOGCEnv, user)
			prev := debug.SetGCPercent(-1)
			defer debug.SetGCPercent(prev)
			restoreRootlessGC()
			got, set := os.LookupEnv("GOGC")
			if got != user || set != (user != "") {
				t.Errorf("GOGC for the children %q (set %v), want the user's %q", got, set, user)
			}
			if _, ok := os.LookupEnv(rootlessGOGCEnv); ok {
				t.Errorf("%s left in the environment", rootlessGOGCEnv)
			}
			if p := debug.SetGCPercent(prev); p != gcPercent(user) {
				t.Errorf("GC percent %d after the start, want %d", p, gcPercent(user))
			}
		})
	}
}

func TestGCPercentReadsGOGCAsTheRuntimeDoes(t *testing.T) {
	for v, want := range map[string]int{"": 100, "off": -1, "50": 50, "200": 200, "x": 100} {
		if got := gcPercent(v); got != want {
			t.Errorf("gcPercent(%q) = %d, want %d", v, got, want)
		}
	}
}

// Outside a re-exec (no rootlesskit child named), GOGC is the user's business alone.
func TestRootlessGCRestoreDoesNothingOutsideTheReexec(t *testing.T) {
	t.Setenv(rootlessChildEnv, "")
	t.Setenv("GOGC", "off")
	t.Setenv(rootlessGOGCEnv, "50")
	restoreRootlessGC()
	if os.Getenv("GOGC") != "off" || os.Getenv(rootlessGOGCEnv) != "50" {
		t.Fatalf("GOGC %q, %s %q: changed outside a re-exec", os.Getenv("GOGC"), rootlessGOGCEnv, os.Getenv(rootlessGOGCEnv))
	}
}
