package importer

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Harbor's environment/docker-compose.yaml is merged over Harbor's own base: `main` is the
// agent's container and every other service a sidecar the agent reaches by name. Each
// sidecar becomes a ceval service (services:); what ceval runs differently, or not at all,
// is a note or an unmapped problem at its FILE:LINE, so a task whose meaning changed is
// never "ok".

// HarborComposeFile is where a Harbor task keeps its compose overrides.
const HarborComposeFile = "environment/docker-compose.yaml"

var (
	serviceName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}[a-z0-9]$|^[a-z]$`)
	portSpec    = regexp.MustCompile(`^(?:(?:[0-9.]+:)?[0-9]+(?:-[0-9]+)?:)?([0-9]+)(/tcp)?$`)
	memSpec     = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([bkmg]?)b?$`)
)

// composeServices converts the compose file of the Harbor task in dir (task id id) into
// ceval's services list; nil when the file is missing or has no sidecar.
func composeServices(dir, id string, data []byte, opt Options) (*yaml.Node, []Problem) {
	file := filepath.Join(dir, HarborComposeFile)
	c := &conv{file: file, opt: opt}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		c.unmapped(&yaml.Node{Line: 1}, "docker-compose.yaml", "not YAML this importer reads: %v", err)
		return nil, c.problems
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		c.unmapped(&yaml.Node{Line: 1}, "docker-compose.yaml", "not a mapping")
		return nil, c.problems
	}
	root := doc.Content[0]
	var svcs *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "services":
			svcs = v
		case "version", "name":
			c.note(k, k.Value, "ignored: ceval needs no compose version or project name")
		default:
			c.unmapped(k, k.Value, "a top-level compose section ceval does not map (services share only a private network with the agent)")
		}
	}
	if svcs == nil || svcs.Kind != yaml.MappingNode {
		return nil, c.problems
	}
	out := &yaml.Node{Kind: yaml.SequenceNode}
	for i := 0; i+1 < len(svcs.Content); i += 2 {
		k, v := svcs.Content[i], svcs.Content[i+1]
		if k.Value == "main" {
			c.composeMain(v)
			continue
		}
		if s := c.composeService(dir, id, k, v); s != nil {
			out.Content = append(out.Content, s)
		}
	}
	if len(out.Content) == 0 {
		return nil, c.problems
	}
	if len(out.Content) > 1 {
		c.note(svcs, "services", "each service reaches only the services in its depends_on (compose puts them all on one network): add depends_on where one talks to another")
	}
	return out, c.problems
}

// composeMain reads the overrides of `main`, the agent's container: depends_on holds by
// construction (every service is ready before the agent starts); nothing else is mapped.
func (c *conv) composeMain(m *yaml.Node) {
	if m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Value == "depends_on" {
			c.note(k, "services.main.depends_on", "ceval starts every service, ready, before the agent")
			continue
		}
		c.unmapped(k, "services.main."+k.Value, "the agent's container takes its settings from task.toml and ceval's sandbox, not from compose")
	}
}

// composeService converts one sidecar; nil when it cannot be one.
func (c *conv) composeService(dir, id string, name, m *yaml.Node) *yaml.Node {
	field := "services." + name.Value
	if !serviceName.MatchString(name.Value) {
		c.unmapped(name, field, "%q is not a service name ceval accepts (a host name of lowercase letters, digits and '-')", name.Value)
		return nil
	}
	if m.Kind != yaml.MappingNode {
		c.unmapped(name, field, "not a mapping")
		return nil
	}
	s := &yaml.Node{Kind: yaml.MappingNode}
	set(s, "name", str(name.Value))
	var image, build, command, entrypoint, health, healthKey, depsKey *yaml.Node
	hostNet := false
	var ports []int
	lim := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		f := field + "." + k.Value
		switch k.Value {
		case "image":
			image = v
		case "build":
			build = v
		case "command":
			command = v
		case "entrypoint":
			entrypoint = v
		case "environment":
			if env := c.composeEnv(k, v, f); env != nil {
				set(s, "env", env)
			}
		case "working_dir":
			set(s, "workdir", str(v.Value))
		case "expose", "ports":
			ports = append(ports, c.composePorts(k, v, f)...)
			if k.Value == "ports" {
				c.note(k, f, "published ports become ports the agent reaches by the service's name; nothing is published on the host")
			}
		case "healthcheck":
			health, healthKey = v, k
		case "depends_on":
			depsKey = k
			if deps := c.composeDepends(k, v, f); deps != nil {
				set(s, "depends_on", deps)
			}
		case "mem_limit":
			if mb, ok := memMB(v.Value); ok {
				set(lim, "memory_mb", scalar(strconv.FormatInt(mb, 10)))
			} else {
				c.unmapped(k, f, "%q is not a size this importer reads", v.Value)
			}
		case "cpus":
			set(lim, "cpus", scalar(v.Value))
		case "pids_limit":
			set(lim, "pids", scalar(v.Value))
		case "container_name", "hostname":
			c.note(k, f, "ignored: the agent reaches the service as %s", name.Value)
		case "restart":
			c.unmapped(k, f, "ceval never restarts a service: one that exits while the agent runs is recorded (exited_early)")
		case "cap_add", "privileged", "security_opt", "devices":
			c.unmapped(k, f, "a service runs with no capabilities, no_new_privs and seccomp, like the agent")
		case "user":
			c.unmapped(k, f, "a service runs as UID 4000 in a user namespace of its own")
		case "network_mode":
			hostNet = c.composeNetworkMode(s, k, v, f) // harborcompose_network.go
		default:
			c.unmapped(k, f, "not a compose setting this importer maps")
		}
	}
	switch {
	case image != nil:
		set(s, "image", str(image.Value))
		if build != nil {
			c.note(build, field+".build", "the service runs image %s: build it from this context first if it is not present", image.Value)
		}
	case build != nil:
		context, dockerfile := build.Value, "Dockerfile"
		if build.Kind == yaml.MappingNode {
			context, dockerfile = "", "Dockerfile"
			for i := 0; i+1 < len(build.Content); i += 2 {
				k, v := build.Content[i], build.Content[i+1]
				switch k.Value {
				case "context":
					context = v.Value
				case "dockerfile":
					dockerfile = v.Value
				default:
					c.unmapped(k, field+".build."+k.Value, "ceval images build takes a context and a Dockerfile only")
				}
			}
		}
		img := "harbor/" + id + "-" + name.Value
		set(s, "image", str(img+":latest"))
		ctx := filepath.Join(dir, "environment", context)
		c.note(build, field+".build", "became image %s:latest: build it first with ceval images build %s -f %s %s", img, img, filepath.Join(ctx, dockerfile), ctx)
	default:
		c.unmapped(name, field, "no image and no build: the service has nothing to run")
		return nil
	}
	argv := append(c.composeArgv(entrypoint, field+".entrypoint"), c.composeArgv(command, field+".command")...)
	if len(argv) > 0 {
		set(s, "command", strList(argv))
	}
	// A service that fetches at start (uv run over a script's inline dependencies, npx, pip
	// install) cannot start in ceval: a service has no network.
	start, from := strings.Join(argv, " "), field+".command"
	if start == "" && build != nil {
		start, from = serviceImageStart(filepath.Join(dir, "environment", buildContext(build)), buildDockerfile(build))
	}
	const noFetch = "a ceval service has no network, so it would never become ready; install what it fetches into its image at build time and start it without fetching (python3 server.py)"
	if hostNet {
		c.composeHostNetDeps(depsKey, field) // a service on the host's network may fetch
	} else if m := fetchCommand.FindStringSubmatch(start); m != nil {
		c.unmapped(name, field, "the service starts with %q (%s), which fetches at start (%s): %s", start, from, m[2], noFetch)
	} else if f := strings.Fields(start); len(f) > 0 && build != nil {
		// a script of the build context it starts (CMD ["./entrypoint.sh"])
		script := filepath.Join(dir, "environment", buildContext(build), filepath.Base(f[0]))
		if info, err := os.Lstat(script); err == nil && info.Mode().IsRegular() && !strings.HasSuffix(script, ".py") {
			if data, err := readCapped(script); err == nil {
				if line, what := fetchLine(data, nil); line > 0 {
					c.unmapped(name, field, "the service starts %s, which fetches at start (%s at %s:%d): %s", f[0], what, script, line, noFetch)
				}
			}
		}
	}
	if len(ports) > 0 {
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, p := range ports {
			n.Content = append(n.Content, scalar(strconv.Itoa(p)))
		}
		set(s, "ports", n)
	}
	if len(lim.Content) > 0 {
		set(s, "limits", lim)
	}
	if ready := c.composeReady(healthKey, health, field, ports); ready != nil {
		set(s, "ready", ready)
	} else if health == nil {
		c.unmapped(name, field+".healthcheck", "no healthcheck and no port: ceval needs a ready check (services[].ready) before the agent starts")
	}
	return s
}

// buildContext and buildDockerfile read a compose build: (a context string, or a mapping
// with context and dockerfile).
func buildContext(build *yaml.Node) string {
	if build.Kind != yaml.MappingNode {
		return build.Value
	}
	for i := 0; i+1 < len(build.Content); i += 2 {
		if build.Content[i].Value == "context" {
			return build.Content[i+1].Value
		}
	}
	return ""
}

func buildDockerfile(build *yaml.Node) string {
	if build.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(build.Content); i += 2 {
			if build.Content[i].Value == "dockerfile" {
				return build.Content[i+1].Value
			}
		}
	}
	return "Dockerfile"
}

// serviceImageStart is what a service built from ctx/dockerfile runs when compose names no
// command: its last ENTRYPOINT and CMD (exec form's words joined), and where they are.
func serviceImageStart(ctx, dockerfile string) (string, string) {
	p := filepath.Join(ctx, dockerfile)
	data, err := readCapped(p)
	if err != nil {
		return "", ""
	}
	var entry, cmd string
	line := 0
	lines, nums := logicalLines(string(data))
	for i, l := range lines {
		word, rest, _ := strings.Cut(strings.TrimSpace(l), " ")
		var words []string
		if err := json.Unmarshal([]byte(strings.TrimSpace(rest)), &words); err == nil {
			rest = strings.Join(words, " ")
		}
		switch strings.ToUpper(word) {
		case "ENTRYPOINT":
			entry, line = strings.TrimSpace(rest), nums[i]
		case "CMD":
			cmd, line = strings.TrimSpace(rest), nums[i]
		}
	}
	return strings.TrimSpace(entry + " " + cmd), fmt.Sprintf("%s:%d", p, line)
}

// composeArgv reads a command or entrypoint: a list is the argv, a string runs in sh -c.
func (c *conv) composeArgv(n *yaml.Node, field string) []string {
	switch {
	case n == nil:
		return nil
	case n.Kind == yaml.SequenceNode:
		return strValues(n)
	case n.Kind == yaml.ScalarNode && n.Value != "":
		return []string{"/bin/sh", "-c", n.Value}
	}
	c.unmapped(n, field, "neither a list nor a string")
	return nil
}

func (c *conv) composeEnv(k, v *yaml.Node, field string) *yaml.Node {
	env := &yaml.Node{Kind: yaml.MappingNode}
	switch v.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			set(env, v.Content[i].Value, str(v.Content[i+1].Value))
		}
	case yaml.SequenceNode:
		for _, it := range v.Content {
			name, val, ok := strings.Cut(it.Value, "=")
			if !ok {
				c.unmapped(it, field, "%q takes its value from the host's environment, which a service never sees", it.Value)
				continue
			}
			set(env, name, str(val))
		}
	default:
		c.unmapped(k, field, "neither a mapping nor a list")
		return nil
	}
	return env
}

func (c *conv) composePorts(k, v *yaml.Node, field string) []int {
	if v.Kind != yaml.SequenceNode {
		c.unmapped(k, field, "not a list")
		return nil
	}
	var out []int
	for _, it := range v.Content {
		spec := it.Value
		if it.Kind == yaml.MappingNode {
			spec = ""
			if t := get(it, "target"); t != nil {
				spec = t.Value
			}
			if p := get(it, "protocol"); p != nil && p.Value != "tcp" {
				spec = "udp"
			}
		}
		m := portSpec.FindStringSubmatch(spec)
		p, err := strconv.Atoi(safeIndex(m, 1))
		if m == nil || err != nil || p < 1 || p > 65535 {
			c.unmapped(it, field, "%q: ceval relays single TCP ports only", spec)
			continue
		}
		out = append(out, p)
	}
	return out
}

func safeIndex(m []string, i int) string {
	if i < len(m) {
		return m[i]
	}
	return ""
}

func (c *conv) composeDepends(k, v *yaml.Node, field string) *yaml.Node {
	var names []string
	switch v.Kind {
	case yaml.SequenceNode:
		names = strValues(v)
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			if cond := get(v.Content[i+1], "condition"); cond != nil && cond.Value == "service_completed_successfully" {
				c.unmapped(cond, field+"."+v.Content[i].Value, "ceval waits for a dependency to be ready, never for it to exit")
			}
			names = append(names, v.Content[i].Value)
		}
	default:
		c.unmapped(k, field, "neither a list nor a mapping")
		return nil
	}
	for _, n := range names {
		if n == "main" {
			c.unmapped(k, field, "a service cannot wait for the agent's container: every service starts before it")
			return nil
		}
	}
	return strList(names)
}

// composeReady converts a healthcheck into ceval's ready check. Docker counts retries as
// consecutive failures after start_period; ceval counts every try, so start_period's tries
// are added. Without a healthcheck, the first port must accept.
func (c *conv) composeReady(k, h *yaml.Node, field string, ports []int) *yaml.Node {
	ready := &yaml.Node{Kind: yaml.MappingNode}
	if h == nil {
		if len(ports) == 0 {
			return nil
		}
		set(ready, "tcp", scalar(strconv.Itoa(ports[0])))
		c.note(&yaml.Node{Line: 1}, field+".healthcheck", "none: compose starts dependants at once; ceval waits until port %d accepts", ports[0])
		return ready
	}
	interval, timeout, retries, start := 30*time.Second, 30*time.Second, 3, time.Duration(0)
	var test *yaml.Node
	for i := 0; i+1 < len(h.Content); i += 2 {
		hk, v := h.Content[i], h.Content[i+1]
		f := field + ".healthcheck." + hk.Value
		dur := func(dst *time.Duration) {
			d, err := time.ParseDuration(v.Value)
			if err != nil || d <= 0 {
				c.unmapped(hk, f, "%q is not a duration this importer reads", v.Value)
				return
			}
			*dst = d
		}
		switch hk.Value {
		case "test":
			test = v
		case "interval":
			dur(&interval)
		case "timeout":
			dur(&timeout)
		case "start_period":
			dur(&start)
		case "retries":
			n, err := strconv.Atoi(v.Value)
			if err != nil || n < 1 {
				c.unmapped(hk, f, "%q is not a positive whole number", v.Value)
				continue
			}
			retries = n
		case "disable":
			if v.Value == "true" {
				c.unmapped(hk, f, "ceval needs a ready check")
				return nil
			}
		default:
			c.unmapped(hk, f, "not a healthcheck setting this importer maps")
		}
	}
	var argv []string
	switch {
	case test == nil:
		c.unmapped(k, field+".healthcheck", "no test")
		return nil
	case test.Kind == yaml.ScalarNode:
		argv = []string{"/bin/sh", "-c", test.Value}
	case test.Kind == yaml.SequenceNode && len(test.Content) > 1 && test.Content[0].Value == "CMD":
		argv = strValues(test)[1:]
	case test.Kind == yaml.SequenceNode && len(test.Content) == 2 && test.Content[0].Value == "CMD-SHELL":
		argv = []string{"/bin/sh", "-c", test.Content[1].Value}
	default:
		c.unmapped(test, field+".healthcheck.test", "not CMD, CMD-SHELL or a command string")
		return nil
	}
	set(ready, "command", strList(argv))
	set(ready, "interval", scalar(interval.String()))
	set(ready, "timeout", scalar(timeout.String()))
	tries := retries + int(math.Ceil(float64(start)/float64(interval)))
	set(ready, "retries", scalar(strconv.Itoa(tries)))
	if start > 0 {
		c.note(k, field+".healthcheck.start_period", "ceval has no start period: %d tries every %s cover it and the %d retries", tries, interval, retries)
	}
	return ready
}

// memMB reads a compose size ("512m", "1g", "1073741824") as whole MiB, rounded up.
func memMB(s string) (int64, bool) {
	m := memSpec.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m[2]]
	mb := int64(math.Ceil(f * mult / (1 << 20)))
	return mb, mb >= 16
}
