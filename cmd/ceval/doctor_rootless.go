package main

import (
	"fmt"
	"os"
	"os/user"
	"strconv"

	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
)

// rootlessFacts is what doctor learns about a non-root user's rootless setup.
type rootlessFacts struct {
	user      string
	address   string
	daemon    *launcher.RootlessDaemon // nil when detectErr is set
	detectErr error
	delegated string // the delegated cgroup subtree, "" when none
	noCgroup  string // why there is none
	subIDRuns int    // per-run ID slices in the user's subordinate range
	subIDErr  error
	// allowRlimit: the user allowed the rlimit mode (--allow-rlimit-limits or the config).
	allowRlimit bool
}

func gatherRootlessFacts(address string) rootlessFacts {
	f := rootlessFacts{user: strconv.Itoa(os.Getuid()), address: address}
	if u, err := user.Current(); err == nil {
		f.user = u.Username
	}
	if a := os.Getenv(launcher.RootlessAddressEnv); a != "" {
		f.address = a
	}
	f.daemon, f.detectErr = launcher.DetectRootless(f.address)
	f.delegated, f.noCgroup = launcher.DelegatedCgroup("/sys/fs/cgroup", f.user)
	if data, err := os.ReadFile("/etc/subuid"); err != nil {
		f.subIDErr = err
	} else {
		_, _, f.subIDRuns, f.subIDErr = launcher.SubordinateIDs(data, f.user, os.Getuid(), oci.IDRangeSize)
	}
	return f
}

// rootlessChecks explains to a non-root user which rootless mode applies and how to get the
// strict one.
func rootlessChecks(f rootlessFacts) []check {
	var out []check
	start := fmt.Sprintf("as root once: scripts/containerd.sh rootless-start %s DIR (make setup-rootless), then export CEVAL_CONTAINERD_ADDRESS=DIR/containerd.sock", f.user)
	if f.detectErr != nil {
		out = append(out, check{"rootless daemon", "FAIL", fmt.Sprintf("not root, and no rootless containerd at %s: %v", f.address, f.detectErr), start})
	} else {
		out = append(out, check{"rootless daemon", "ok", fmt.Sprintf("containerd inside rootlesskit (child PID %d) at %s", f.daemon.ChildPID, f.address), ""})
	}
	if f.delegated != "" {
		out = append(out, check{"rootless limits", "ok", "strict mode: pids, memory and cpu by the cgroup subtree " + f.delegated + " root delegated to " + f.user + "; disk by capped tmpfs", ""})
	} else if f.allowRlimit {
		out = append(out, check{"rootless limits", "note",
			"rlimit mode, as you allowed: pids held by RLIMIT_NPROC per run UID, memory by RLIMIT_AS per process (not the container's total; runtimes that reserve address space, Go's ~700 MiB, need a larger memory_mb), disk by capped tmpfs, cpu not limited",
			"for the strict mode, as root once: ceval rootless setup --user " + f.user})
	} else {
		out = append(out, check{"rootless limits", "FAIL",
			"no cgroup subtree is delegated to " + f.user + " (" + f.noCgroup + "): only the weaker rlimit mode is possible, and only when you allow it: pids held by RLIMIT_NPROC per run UID, memory by RLIMIT_AS per process (not the container's total), disk by capped tmpfs, cpu not limited",
			"for the strict mode, as root once: ceval rootless setup --user " + f.user})
	}
	if f.subIDErr != nil {
		out = append(out, check{"rootless IDs", "FAIL", "subordinate IDs: " + f.subIDErr.Error(), start})
	} else if f.subIDRuns < 1 {
		out = append(out, check{"rootless IDs", "FAIL", fmt.Sprintf("%s's subordinate range holds no per-run slice of %d IDs beyond the daemon's own", f.user, oci.IDRangeSize), start + " (it grows the range)"})
	} else {
		out = append(out, check{"rootless IDs", "ok", fmt.Sprintf("%s's subordinate range holds %d per-run slices of %d IDs beside the daemon's own, one per concurrent run", f.user, f.subIDRuns, oci.IDRangeSize), ""})
	}
	if _, err := os.Stat(nsenterPath); err != nil {
		out = append(out, check{"rootless run", "FAIL", "ceval run enters the daemon's namespaces with " + nsenterPath + ": " + err.Error(), "install util-linux"})
	} else {
		out = append(out, check{"rootless run", "ok", "ceval run, experiment, selftest, sandbox and gc re-execute themselves with nsenter inside the daemon's user and mount namespaces, as root there", ""})
	}
	return out
}
