package main

import (
	"errors"
	"strings"
	"testing"

	"ceval.dev/ceval/launcher"
)

func findCheck(t *testing.T, checks []check, name string) check {
	t.Helper()
	for _, c := range checks {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", name, checks)
	return check{}
}

func TestDoctorRootlessWithoutDelegationSaysWhatRlimitModeLosesAndHowToGetTheStrictMode(t *testing.T) {
	checks := rootlessChecks(rootlessFacts{user: "u", address: "/d/containerd.sock", daemon: &launcher.RootlessDaemon{ChildPID: 7}, noCgroup: "missing", subIDRuns: 16})
	c := findCheck(t, checks, "rootless limits")
	if c.status != "FAIL" || !strings.Contains(c.detail, "RLIMIT_AS per process") || !strings.Contains(c.detail, "cpu not limited") ||
		!strings.Contains(c.fix, "ceval rootless setup --user u") {
		t.Fatalf("%+v", c)
	}
	if c := findCheck(t, checks, "rootless daemon"); c.status != "ok" {
		t.Fatalf("%+v", c)
	}
}

func TestDoctorSaysTheStrictModeAppliesWithADelegatedSubtree(t *testing.T) {
	checks := rootlessChecks(rootlessFacts{user: "u", daemon: &launcher.RootlessDaemon{ChildPID: 7}, delegated: "ceval-rootless-u", subIDRuns: 16})
	if c := findCheck(t, checks, "rootless limits"); c.status != "ok" || !strings.Contains(c.detail, "strict") {
		t.Fatalf("%+v", c)
	}
	if c := findCheck(t, checks, "rootless run"); c.status != "ok" || !strings.Contains(c.detail, "nsenter") {
		t.Fatalf("%+v", c)
	}
}

func TestDoctorRootlessWithoutDaemonOrSubIDsSaysHowToStartOne(t *testing.T) {
	checks := rootlessChecks(rootlessFacts{user: "u", address: "/x.sock", detectErr: launcher.ErrNotRootless, subIDErr: errors.New("no subordinate IDs")})
	for _, name := range []string{"rootless daemon", "rootless IDs"} {
		if c := findCheck(t, checks, name); c.status != "FAIL" || !strings.Contains(c.fix, "rootless-start u") {
			t.Fatalf("%+v", c)
		}
	}
}

func TestDoctorSaysTheRlimitModeAppliesWhenTheUserAllowedIt(t *testing.T) {
	checks := rootlessChecks(rootlessFacts{user: "u", daemon: &launcher.RootlessDaemon{ChildPID: 7}, noCgroup: "missing", subIDRuns: 16, allowRlimit: true})
	c := findCheck(t, checks, "rootless limits")
	if c.status != "note" || !strings.Contains(c.detail, "as you allowed") || !strings.Contains(c.detail, "cpu not limited") || !strings.Contains(c.fix, "ceval rootless setup --user u") {
		t.Fatalf("%+v", c)
	}
}
