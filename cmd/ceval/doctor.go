package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/sandbox/local"
)

// check is one line of ceval doctor: ok, a note (does not block runs) or a failure.
type check struct {
	name   string
	status string // ok, note, FAIL
	detail string
	fix    string
}

func newDoctorCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check that this host can run agents: containerd, runc, cgroups, seccomp, images",
		Long:  "doctor prints one line per check with a fix hint, and exits 0 only when a run can proceed.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			checks := runDoctor(cmd.Context(), g)
			failed := printChecks(cmd.OutOrStdout(), checks)
			if failed > 0 {
				return exitWith(exitInfraErr, fmt.Errorf("%d check(s) failed: runs cannot proceed on this host", failed))
			}
			return nil
		},
	}
}

func printChecks(w io.Writer, checks []check) int {
	failed := 0
	for _, c := range checks {
		line := fmt.Sprintf("%-4s  %-22s %s", c.status, c.name, c.detail)
		if c.fix != "" && c.status != "ok" {
			line += "  (fix: " + c.fix + ")"
		}
		fmt.Fprintln(w, line)
		if c.status == "FAIL" {
			failed++
		}
	}
	return failed
}

func runDoctor(ctx context.Context, g *globalOptions) []check {
	var checks []check
	add := func(c check) { checks = append(checks, c) }
	root := os.Geteuid() == 0
	if root {
		add(check{"privileges", "ok", "running as root", ""})
	} else {
		add(check{"privileges", "note", "not root: rootless mode (containerd inside rootlesskit as this user)", ""})
		f := gatherRootlessFacts(g.containerdAddress)
		ucfg, _ := loadUserConfig(g.configPath, false)
		f.allowRlimit = g.allowRlimitLimits || ucfg.AllowRlimitLimits
		for _, c := range rootlessChecks(f) {
			add(c)
		}
	}
	if root {
		add(cgroupCheck())
	}
	if path, err := exec.LookPath("runc"); err != nil {
		add(check{"runc", "FAIL", "runc not found in PATH", "apt-get install runc"})
	} else {
		out, _ := exec.Command(path, "--version").Output()
		add(check{"runc", "ok", strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0], ""})
		if a := runcAdvisory(string(out)); a != "" {
			add(check{"runc CVEs", "note", a, "upgrade runc to 1.1.12 or later, or confirm your distribution's backport"})
		}
	}
	add(seccompCheck())
	if root {
		add(userNSCheck(g, root))
		add(rootOverlayCheck()) // doctor_rootoverlay.go
	}
	if _, err := exec.LookPath("git"); err != nil {
		add(check{"git", "note", "git not found: tasks whose template_dir is a git repository cannot run", "apt-get install git"})
	}
	add(buildersCheck())

	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, nctx, err := launcher.Connect(cctx, g.containerdAddress, g.namespace)
	if err != nil {
		add(check{"containerd", "FAIL", err.Error(), "scripts/containerd.sh start, or point --containerd-address at a running containerd"})
		return checks
	}
	defer c.Close()
	v, _ := c.Version(nctx)
	add(check{"containerd", "ok", fmt.Sprintf("%s %s at %s (namespace %s)", "containerd", v.Version, g.containerdAddress, g.namespace), ""})
	add(snapshotterCheck(nctx, c))
	if root {
		add(stateDirCheck(g.containerdAddress))
	}
	if _, err := images.Lookup(nctx, c, images.DefaultName); err != nil {
		var nf *images.NotFoundError
		if errors.As(err, &nf) {
			add(check{"default image", "note", images.DefaultName + " is not built yet; it is built on first use", "ceval images build-default"})
		} else {
			add(check{"default image", "FAIL", err.Error(), ""})
		}
	} else {
		add(check{"default image", "ok", images.DefaultName + " present", ""})
	}
	if _, err := images.Lookup(nctx, c, images.AgentName); err != nil {
		add(check{"agent image", "note", images.AgentName + " (the real Claude Code and Codex CLIs) is not built; claude-code and codex tasks need it", "ceval images build-agent"})
	} else {
		add(check{"agent image", "ok", images.AgentName + " present", ""})
	}
	return checks
}

func cgroupCheck() check {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return check{"cgroups", "FAIL", "/sys/fs/cgroup: " + err.Error(), "mount cgroupfs"}
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		data, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
		ctl := strings.Fields(string(data))
		if err != nil || !hasAll(ctl, "pids", "memory") {
			return check{"cgroups", "FAIL", fmt.Sprintf("cgroup v2 without the pids and memory controllers (have %v)", ctl), "enable the pids and memory controllers"}
		}
		return check{"cgroups", "ok", "cgroup v2 with pids and memory controllers", ""}
	}
	var missing []string
	for _, ctl := range []string{"pids", "memory", "cpu"} {
		if _, err := os.Stat("/sys/fs/cgroup/" + ctl); err != nil {
			missing = append(missing, ctl)
		}
	}
	if len(missing) > 0 {
		return check{"cgroups", "FAIL", "cgroup v1 without controller(s) " + strings.Join(missing, ", "), "mount the missing cgroup v1 controllers"}
	}
	return check{"cgroups", "ok", "cgroup v1 with pids, memory and cpu controllers", ""}
}

func hasAll(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, x := range list {
			found = found || x == w
		}
		if !found {
			return false
		}
	}
	return true
}

func seccompCheck() check {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil || !strings.Contains(string(data), "\nSeccomp:") {
		return check{"seccomp", "FAIL", "the kernel does not report seccomp support", "use a kernel built with CONFIG_SECCOMP_FILTER"}
	}
	if _, err := os.Stat("/proc/sys/kernel/seccomp/actions_avail"); err != nil {
		return check{"seccomp", "FAIL", "seccomp filters unavailable", "use a kernel built with CONFIG_SECCOMP_FILTER"}
	}
	return check{"seccomp", "ok", "seccomp filters available (the default profile is applied to every agent)", ""}
}

// userNSCheck makes a user namespace the way every run does, from the configured id_range.
func userNSCheck(g *globalOptions, root bool) check {
	if !root {
		return check{"user namespaces", "FAIL", "not checked: needs root", "run as root"}
	}
	ucfg, err := loadUserConfig(g.configPath, false)
	if err != nil {
		return check{"user namespaces", "FAIL", err.Error(), "fix the config file"}
	}
	detail, err := local.CheckUserNamespaces(ucfg.idRange())
	if err != nil {
		return check{"user namespaces", "FAIL", "each run needs a user namespace of its own: " + err.Error(), "see docs/security.md, Per-run user namespaces"}
	}
	return check{"user namespaces", "ok", detail, ""}
}

func snapshotterCheck(ctx context.Context, c *client.Client) check {
	resp, err := c.IntrospectionService().Plugins(ctx, `type=="io.containerd.snapshotter.v1",id=="overlayfs"`)
	if err != nil {
		return check{"overlayfs", "FAIL", "cannot list containerd plugins: " + err.Error(), ""}
	}
	for _, p := range resp.Plugins {
		if p.InitErr == nil {
			return check{"overlayfs", "ok", "overlayfs snapshotter loaded", ""}
		}
		return check{"overlayfs", "FAIL", "overlayfs snapshotter failed to load: " + p.InitErr.Message, "check that the kernel has overlayfs and containerd's root is not on overlayfs"}
	}
	return check{"overlayfs", "FAIL", "containerd has no overlayfs snapshotter", "enable the overlayfs snapshotter in containerd's config"}
}

// buildersCheck reports the image builders found: mmdebstrap for package images
// (images build --packages, sandbox.packages), buildah for Dockerfiles (images build -f).
func buildersCheck() check {
	var have, missing []string
	for _, b := range []string{"mmdebstrap", "buildah"} {
		path, err := exec.LookPath(b)
		if err != nil {
			missing = append(missing, b)
			continue
		}
		v, _ := exec.Command(path, "--version").Output()
		have = append(have, strings.TrimSpace(strings.SplitN(string(v), "\n", 2)[0]))
	}
	if len(missing) > 0 {
		return check{"image builders", "note", fmt.Sprintf("have: %s; missing: %s (tasks with sandbox.packages need mmdebstrap, images build -f needs buildah)", strings.Join(have, ", "), strings.Join(missing, ", ")),
			"apt-get install " + strings.Join(missing, " ") + " (or make setup)"}
	}
	return check{"image builders", "ok", strings.Join(have, ", "), ""}
}
