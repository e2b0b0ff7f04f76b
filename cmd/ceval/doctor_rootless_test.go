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

func TestDoctorNeverReportsARootlessHostReadyForRuns(t *testing.T) {
	checks := rootlessChecks(rootlessFacts{user: "u", daemon: &launcher.RootlessDaemon{ChildPID: 7}, delegated: "ceval-rootless-u", subIDRuns: 16})
	if c := findCheck(t, checks, "rootless limits"); c.status != "ok" || !strings.Contains(c.detail, "strict") {
		t.Fatalf("%+v", c)
	}
	if c := findCheck(t, checks, "rootless run"); c.status != "FAIL" {
		t.Fatalf("ceval run is not wired for rootless daemons yet, but doctor says %+v", c)
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

func TestRunByANonRootUserIsRefusedBeforeAnyWork(t *testing.T) {
	if err := refuseNonRootRun(1001); !errors.Is(err, errRootlessRun) {
		t.Fatalf("euid 1001: %v, want errRootlessRun", err)
	}
	if err := refuseNonRootRun(0); err != nil {
		t.Fatalf("root: %v", err)
	}
}
