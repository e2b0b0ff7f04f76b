package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ControllerID names this process as the owner of the Pods and policies it creates (label
// ceval.dev/controller): "HOST.PID.START", START being the process's start time in clock
// ticks after boot, so that a later process with the same PID is not mistaken for it.
func ControllerID() string {
	return fmt.Sprintf("%s.%d.%d", controllerHost(), os.Getpid(), startTicks(os.Getpid()))
}

var notLabel = regexp.MustCompile(`[^A-Za-z0-9-]+`)

// controllerHost is this machine's name as a label part (at most 30 characters).
func controllerHost() string {
	h, _ := os.Hostname()
	h = strings.Trim(notLabel.ReplaceAllString(h, "-"), "-")
	if len(h) > 30 {
		h = strings.Trim(h[:30], "-")
	}
	if h == "" {
		h = "host"
	}
	return h
}

// startTicks is field 22 of /proc/PID/stat (0 when the process does not exist).
func startTicks(pid int) uint64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses: count from its end.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// ControllerState says whether the controller that id names is alive: local reports whether
// it ran on this machine (only then can its liveness be known).
func ControllerState(id string) (alive, local bool) {
	parts := strings.Split(id, ".")
	if len(parts) < 3 {
		return false, false
	}
	host := strings.Join(parts[:len(parts)-2], ".")
	if host != controllerHost() {
		return false, false
	}
	pid, err1 := strconv.Atoi(parts[len(parts)-2])
	start, err2 := strconv.ParseUint(parts[len(parts)-1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return false, true
	}
	return startTicks(pid) == start && start != 0, true
}

// Controllers lists the controller labels of ceval's Pods and NetworkPolicies in namespace,
// with how many objects each owns.
func (c *Cluster) Controllers(ctx context.Context, namespace string) (map[string]int, error) {
	sel := url.Values{"labelSelector": {LabelManagedBy + "=" + ManagedBy}}
	out := map[string]int{}
	var pods PodList
	if err := c.api.do(ctx, http.MethodGet, podsPath(namespace), sel, nil, &pods); err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", namespace, err)
	}
	for _, p := range pods.Items {
		out[p.Labels[LabelController]]++
	}
	var nps NetworkPolicyList
	if err := c.api.do(ctx, http.MethodGet, policiesPath(namespace), sel, nil, &nps); err != nil {
		return nil, fmt.Errorf("list network policies in %s: %w", namespace, err)
	}
	for _, np := range nps.Items {
		out[np.Labels[LabelController]]++
	}
	return out, nil
}

// SortedKeys returns m's keys in order (for stable output).
func SortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
