package launcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// v1Controllers are the cgroup v1 hierarchies checked for leftover processes: the ones that
// hold ceval's limits. Every process of the container is in the same cgroup in each.
var v1Controllers = []string{"pids", "memory"}

// cgroupProcs lists the processes in the cgroup at cgroupsPath (a spec's
// linux.cgroupsPath in cgroupfs form, e.g. /ns/id), on cgroup v2 or v1.
func cgroupProcs(root, cgroupsPath string) ([]string, error) {
	if cgroupsPath == "" {
		return nil, errors.New("spec has no cgroups path")
	}
	if strings.Contains(cgroupsPath, ":") {
		return nil, fmt.Errorf("cgroups path %q: systemd form not supported", cgroupsPath)
	}
	rel := filepath.Clean("/" + cgroupsPath)
	var dirs []string
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		dirs = []string{filepath.Join(root, rel)}
	} else {
		for _, c := range v1Controllers {
			dirs = append(dirs, filepath.Join(root, c, rel))
		}
	}
	var procs []string
	found := false
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read cgroup %s: %w", d, err)
		}
		found = true
		procs = append(procs, strings.Fields(string(b))...)
	}
	if !found {
		return nil, fmt.Errorf("no cgroup at %s", strings.Join(dirs, " or "))
	}
	return procs, nil
}

// waitCgroupEmpty polls the container's cgroup until it holds no process, for at most max.
func waitCgroupEmpty(cgroupsPath string, max time.Duration) error {
	deadline := time.Now().Add(max)
	for {
		procs, err := cgroupProcs(cgroupRoot, cgroupsPath)
		if err != nil {
			return err
		}
		if len(procs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still holds processes %s", cgroupsPath, strings.Join(procs, " "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
