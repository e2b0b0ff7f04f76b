package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"ceval.dev/ceval/internal/kubeproto"
)

// procFiles are read from /proc/self into Attest.Files under their own names.
var procFiles = []string{"status", "uid_map", "gid_map", "limits", "cgroup", "net/dev"}

// collectAttest reads the init's own isolation as the controller checks it, and runs the
// probes (all at once, probeTimeout each) before anything of the agent's has run.
func collectAttest(probes []string) *kubeproto.Attest {
	a := &kubeproto.Attest{Files: map[string]string{}, PID: os.Getpid(), Exe: exeSHA256()}
	for _, name := range procFiles {
		if b, err := os.ReadFile("/proc/self/" + name); err == nil {
			a.Files[name] = string(b)
		}
	}
	for _, p := range cgroupFiles(a.Files["cgroup"]) {
		if b, err := os.ReadFile(p); err == nil {
			a.Files["cgroup:"+p] = string(b)
		}
	}
	if ifs, err := net.Interfaces(); err == nil {
		for _, ifc := range ifs {
			desc := ifc.Name + " " + ifc.Flags.String()
			if addrs, err := ifc.Addrs(); err == nil {
				for _, addr := range addrs {
					desc += " " + addr.String()
				}
			}
			a.Interfaces = append(a.Interfaces, desc)
		}
	}
	a.Probes = make([]kubeproto.Probe, len(probes))
	var wg sync.WaitGroup
	for i, addr := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.Probes[i] = kubeproto.Probe{Addr: addr}
			conn, err := net.DialTimeout("tcp", addr, probeTimeout)
			if err != nil {
				a.Probes[i].Err = err.Error()
				return
			}
			conn.Close()
		}()
	}
	wg.Wait()
	return a
}

// exeSHA256 hashes the init's own executable (the file the kernel runs, whatever name the
// image gave it), or "" when it cannot be read.
func exeSHA256() string {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cgroupRoot is where the container sees its cgroups.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupFiles lists the limit files of the cgroups /proc/self/cgroup names, v2 ("0::PATH")
// or v1 (the pids and memory hierarchies), built as the controller's parser builds them.
func cgroupFiles(cgroup string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(cgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			dir := filepath.Join(cgroupRoot, parts[2])
			out = append(out, filepath.Join(dir, "pids.max"), filepath.Join(dir, "memory.max"))
			continue
		}
		// On v1 without a cgroup namespace the runtime mounts the container's own cgroup at
		// each hierarchy's root: the path /proc/self/cgroup names exists only on the node.
		for _, ctl := range strings.Split(parts[1], ",") {
			switch ctl {
			case "pids":
				out = append(out, filepath.Join(cgroupRoot, "pids", parts[2], "pids.max"), filepath.Join(cgroupRoot, "pids", "pids.max"))
			case "memory":
				out = append(out, filepath.Join(cgroupRoot, "memory", parts[2], "memory.limit_in_bytes"), filepath.Join(cgroupRoot, "memory", "memory.limit_in_bytes"))
			}
		}
	}
	return out
}

// memoryCounts reads the container's memory cgroup as the container sees it (its own
// cgroup at the root: v2 with a cgroup namespace, v1's per-hierarchy mount): OOM kills and
// the peak usage, 0 for what it cannot read.
func memoryCounts() (oomKills, peak int64) {
	for _, f := range []string{cgroupRoot + "/memory.events", cgroupRoot + "/memory/memory.oom_control"} {
		if b, err := os.ReadFile(f); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
					oomKills, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				}
			}
			break
		}
	}
	for _, f := range []string{cgroupRoot + "/memory.peak", cgroupRoot + "/memory/memory.max_usage_in_bytes"} {
		if b, err := os.ReadFile(f); err == nil {
			peak, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			break
		}
	}
	return oomKills, peak
}
