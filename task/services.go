package task

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
	"ceval.dev/ceval/policy"
)

// Service is one program the task ships beside the agent (services:): a hardened container
// of its own that ceval starts, and waits ready, before the agent, and stops before grading.
// The agent reaches it at NAME:PORT for each of Ports and nothing else of it. Its network
// is a namespace of its own (loopback only) unless it says network: host, the host's
// network, which a run gives it only when the user allows host networking, as for the
// agent's sandbox.network: host; the agent's own network stays as the task says.
type Service struct {
	Name      string
	Image     string
	Command   []string // argv, run by ceval's init as the service's process; nil: the image's entrypoint and command
	Env       []string // KEY=VALUE, sorted by key, over the image's environment
	Workdir   string   // absolute; "": the image's working directory, else DefaultServiceWorkdir
	Files     *Dir     // copied into the service's /workspace before it starts; nil when none
	Ports     []int    // TCP ports the agent may connect to
	Limits    ServiceLimits
	Ready     Readiness
	DependsOn []string   // names of services started (and ready) before this one
	MCP       *MCPServer // non-nil: an MCP server the agent's CLI is configured with (mcp.go)
	Network   string     // policy.NetworkNone (default) or NetworkHost, only if the user allows it (see below)
	Line      int        // where the service starts in the task file
	Column    int
}

// ServiceLimits bound a service's container.
type ServiceLimits struct {
	MemoryMB int64
	CPUs     float64
	Pids     int64
	DiskMB   int64 // its /workspace
}

// Readiness is how ceval knows a service is ready: TCP (a port that accepts a connection
// inside the service's network namespace) or Command (an argv run inside the service's
// container that exits 0), tried every Interval, each try within Timeout, Retries times.
type Readiness struct {
	TCP      int
	Command  []string
	Interval time.Duration
	Timeout  time.Duration
	Retries  int64
}

// Defaults and bounds of services.
const (
	DefaultServiceWorkdir  = "/workspace"
	DefaultServiceMemoryMB = 512
	DefaultServiceCPUs     = 1
	DefaultServicePids     = 128
	DefaultServiceDiskMB   = 256
	DefaultReadyInterval   = 250 * time.Millisecond
	DefaultReadyTimeout    = 2 * time.Second
	DefaultReadyRetries    = 120 // 30s at the default interval
	MaxServices            = 8
	MaxServicePorts        = 16
	MaxReadyRetries        = 100_000
)

var serviceNameRe = lazyregexp.New(`^[a-z][a-z0-9-]{0,30}[a-z0-9]$|^[a-z]$`)

// reservedServiceNames already mean something in the agent's /etc/hosts.
var reservedServiceNames = []string{"localhost", "ceval", "ip6-localhost", "ip6-loopback"}

// services reads services: a list of mappings, returned in start order (every service
// after the ones it depends on).
func (l *loader) services(n *yaml.Node) []Service {
	var out []Service
	nodes := map[string]*yaml.Node{}
	before := len(l.problems)
	if rn := resolve(n); rn.Kind == yaml.SequenceNode && len(rn.Content) > MaxServices {
		l.errorf(rn, "services has %d services; at most %d are allowed", len(rn.Content), MaxServices)
		return nil
	}
	l.list(n, "services", func(i int, item *yaml.Node) {
		s, ok := l.service(i, item)
		if !ok {
			return
		}
		if prev := nodes[s.Name]; prev != nil {
			l.errorf(resolve(item), "services[%d]: name %q is taken by the service at line %d; give each service its own name", i, s.Name, prev.Line)
			return
		}
		nodes[s.Name] = resolve(item)
		out = append(out, s)
	})
	for _, s := range out {
		for _, d := range s.DependsOn {
			if nodes[d] == nil {
				l.errorf(nodes[s.Name], "services: %s depends_on %q, which is not a service of this task (services: %s)", s.Name, d, strings.Join(serviceNames(out), ", "))
			}
		}
	}
	if len(l.problems) > before {
		return nil
	}
	ordered, cycle := startOrder(out)
	if cycle != nil {
		l.errorf(nodes[cycle[0]], "services: depends_on forms a cycle (%s): no service of it could start first", strings.Join(append(cycle, cycle[0]), " -> "))
		return nil
	}
	return ordered
}

func serviceNames(ss []Service) []string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Name
	}
	return names
}

// startOrder sorts services so each comes after those it depends on, keeping the task's
// order otherwise; on a cycle it returns the names of one.
func startOrder(ss []Service) ([]Service, []string) {
	byName := map[string]int{}
	for i, s := range ss {
		byName[s.Name] = i
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := make([]int, len(ss))
	var out []Service
	var stack []string
	var cycle []string
	var visit func(i int) bool
	visit = func(i int) bool {
		switch state[i] {
		case done:
			return true
		case visiting:
			at := slices.Index(stack, ss[i].Name)
			cycle = slices.Clone(stack[at:])
			return false
		}
		state[i] = visiting
		stack = append(stack, ss[i].Name)
		for _, d := range ss[i].DependsOn {
			if !visit(byName[d]) {
				return false
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
		out = append(out, ss[i])
		return true
	}
	for i := range ss {
		if !visit(i) {
			return nil, cycle
		}
	}
	return out, nil
}

func (l *loader) service(i int, item *yaml.Node) (Service, bool) {
	where := fmt.Sprintf("services[%d]", i)
	rn := resolve(item)
	s := Service{
		Image: DefaultImage, Network: policy.NetworkNone, Line: rn.Line, Column: rn.Column,
		Limits: ServiceLimits{MemoryMB: DefaultServiceMemoryMB, CPUs: DefaultServiceCPUs, Pids: DefaultServicePids, DiskMB: DefaultServiceDiskMB},
		Ready:  Readiness{Interval: DefaultReadyInterval, Timeout: DefaultReadyTimeout, Retries: DefaultReadyRetries},
	}
	var nameNode, commandNode, workdirNode, readyNode, networkNode *yaml.Node
	got := l.mapping(item, where, []field{
		{"name", func(v *yaml.Node) { nameNode = v; l.str(v, where+".name", &s.Name) }},
		{"image", func(v *yaml.Node) {
			l.str(v, where+".image", &s.Image)
			if s.Image == "" {
				l.errorf(resolve(v), "%s.image must not be empty (leave it out for the default image)", where)
			}
		}},
		{"command", func(v *yaml.Node) { commandNode = v; l.strings(v, where+".command", &s.Command) }},
		{"env", func(v *yaml.Node) { s.Env = l.serviceEnv(v, where+".env") }},
		{"workdir", func(v *yaml.Node) { workdirNode = v; l.str(v, where+".workdir", &s.Workdir) }},
		{"files", func(v *yaml.Node) { s.Files = l.openDir(v, where+".files") }},
		{"ports", func(v *yaml.Node) { s.Ports = l.ports(v, where+".ports") }},
		{"limits", func(v *yaml.Node) {
			lim := &s.Limits
			w := where + ".limits"
			l.mapping(v, w, []field{
				{"memory_mb", func(v *yaml.Node) { l.integer(v, w+".memory_mb", 16, 1<<20, &lim.MemoryMB) }},
				{"cpus", func(v *yaml.Node) { l.number(v, w+".cpus", 0.01, 1024, &lim.CPUs) }},
				{"pids", func(v *yaml.Node) { l.integer(v, w+".pids", 32, 1<<22, &lim.Pids) }},
				{"disk_mb", func(v *yaml.Node) { l.integer(v, w+".disk_mb", 1, 1<<20, &lim.DiskMB) }},
			})
		}},
		{"ready", func(v *yaml.Node) { readyNode = v; l.readiness(v, where+".ready", &s.Ready) }},
		{"depends_on", func(v *yaml.Node) { l.strings(v, where+".depends_on", &s.DependsOn) }},
		{"mcp", func(v *yaml.Node) { l.mcp(v, where+".mcp", &s) }},
		{"network", func(v *yaml.Node) {
			networkNode = v
			l.enum(v, where+".network", []string{policy.NetworkNone, policy.NetworkHost}, &s.Network)
		}},
	})
	if got == nil {
		return s, false
	}
	ok := true
	bad := func(n *yaml.Node, format string, args ...any) {
		l.errorf(n, format, args...)
		ok = false
	}
	switch {
	case nameNode == nil:
		bad(rn, "%s: missing required field name (the name the agent reaches it by)", where)
	case !serviceNameRe.MatchString(s.Name):
		bad(resolve(nameNode), "%s.name %q: want 1-32 lowercase letters, digits and '-', starting with a letter (a host name)", where, s.Name)
	case slices.Contains(reservedServiceNames, s.Name):
		bad(resolve(nameNode), "%s.name %q already names the agent's own host; choose another", where, s.Name)
	}
	switch {
	case commandNode == nil:
	case len(s.Command) == 0 || s.Command[0] == "":
		bad(resolve(commandNode), "%s.command must name a program", where)
	case slices.ContainsFunc(s.Command, func(a string) bool { return strings.ContainsRune(a, 0) }):
		bad(resolve(commandNode), "%s.command holds a NUL byte, which no argv can carry", where)
	}
	if workdirNode != nil && (!path.IsAbs(s.Workdir) || path.Clean(s.Workdir) != s.Workdir || strings.ContainsRune(s.Workdir, 0)) {
		bad(resolve(workdirNode), "%s.workdir %q: want an absolute, clean path in the service's container", where, s.Workdir)
	}
	if s.Network == policy.NetworkHost && len(s.DependsOn) > 0 {
		// ceval relays a dependency's ports into the dependent's own network namespace; the
		// host's is not the run's to change.
		bad(resolve(networkNode), "%s.network: host with depends_on (%s): a service on the host's network cannot be given the services it depends on; drop depends_on, or network: host", where, strings.Join(s.DependsOn, ", "))
	}
	if slices.Contains(s.DependsOn, s.Name) {
		bad(rn, "%s: %s depends_on itself", where, s.Name)
	}
	if !l.checkMCP(s, where) {
		ok = false
	}
	if readyNode == nil {
		bad(rn, "%s: missing required field ready ({tcp: PORT} or {command: [argv]}): the agent starts only once every service is ready", where)
	}
	return s, ok
}

// serviceEnv reads env: a mapping of names to scalar values, returned as sorted KEY=VALUE.
func (l *loader) serviceEnv(n *yaml.Node, what string) []string {
	rn := resolve(n)
	if rn.Kind != yaml.MappingNode {
		l.errorf(rn, "%s must be a mapping of NAME: value, got %s", what, kindName(rn))
		return nil
	}
	var env []string
	seen := map[string]bool{}
	for i := 0; i+1 < len(rn.Content); i += 2 {
		k := resolve(rn.Content[i])
		if k.Kind != yaml.ScalarNode || !envNameRe.MatchString(k.Value) {
			l.errorf(k, "%s: %q is not an environment variable name (letters, digits and _, not starting with a digit)", what, k.Value)
			continue
		}
		if seen[k.Value] {
			l.errorf(k, "duplicate field %q in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		var v string
		l.str(rn.Content[i+1], what+"."+k.Value, &v)
		if strings.ContainsRune(v, 0) {
			l.errorf(resolve(rn.Content[i+1]), "%s.%s holds a NUL byte", what, k.Value)
			continue
		}
		env = append(env, k.Value+"="+v)
	}
	slices.Sort(env)
	return env
}

var envNameRe = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (l *loader) ports(n *yaml.Node, what string) []int {
	var out []int
	rn := resolve(n)
	if rn.Kind == yaml.SequenceNode && len(rn.Content) > MaxServicePorts {
		l.errorf(rn, "%s has %d ports; at most %d are allowed", what, len(rn.Content), MaxServicePorts)
		return nil
	}
	l.list(n, what, func(i int, item *yaml.Node) {
		var p int64
		l.integer(item, fmt.Sprintf("%s[%d]", what, i), 1, 65535, &p)
		if p == 0 {
			return
		}
		if slices.Contains(out, int(p)) {
			l.errorf(resolve(item), "%s[%d]: port %d is listed twice", what, i, p)
			return
		}
		out = append(out, int(p))
	})
	return out
}

func (l *loader) readiness(n *yaml.Node, what string, r *Readiness) {
	var tcp int64
	got := l.mapping(n, what, []field{
		{"tcp", func(v *yaml.Node) { l.integer(v, what+".tcp", 1, 65535, &tcp) }},
		{"command", func(v *yaml.Node) {
			l.strings(v, what+".command", &r.Command)
			if len(r.Command) == 0 || r.Command[0] == "" {
				l.errorf(resolve(v), "%s.command must name a program", what)
			}
		}},
		{"interval", func(v *yaml.Node) { l.duration(v, what+".interval", &r.Interval) }},
		{"timeout", func(v *yaml.Node) { l.duration(v, what+".timeout", &r.Timeout) }},
		{"retries", func(v *yaml.Node) { l.integer(v, what+".retries", 1, MaxReadyRetries, &r.Retries) }},
	})
	if got == nil {
		return
	}
	r.TCP = int(tcp)
	if (got["tcp"] == nil) == (got["command"] == nil) {
		l.errorf(resolve(n), "%s: give exactly one of tcp (a port that must accept a connection) or command (an argv run in the service that must exit 0)", what)
	}
}

// checkServices holds services to what the run can give them: a private network (never
// the host's) and no grading material among their files, either way round (a service
// directory holding the reference, or lying inside it).
func (l *loader) checkServices(t *Task, n *yaml.Node) {
	if len(t.Services) == 0 {
		return
	}
	if t.Sandbox.Network == policy.NetworkHost {
		l.errorf(resolve(n), "services need sandbox.network: none: the agent reaches them through its own private network namespace (remove network: host)")
	}
	materials, done := gradingMaterial(t)
	defer done()
	for _, s := range t.Services {
		if s.Files == nil {
			continue
		}
		sn := &yaml.Node{Line: s.Line, Column: s.Column}
		what := fmt.Sprintf("services %s: files %s", s.Name, s.Files.Path)
		own, err := statID(s.Files.root.Stat("."))
		if err != nil {
			l.errorf(sn, "%s: %v", what, err)
			continue
		}
		for _, m := range materials {
			id, err := statID(m.stat())
			if err != nil {
				l.errorf(sn, "%s: cannot make sure it holds no grading material: %s: %v", what, m.name, err)
				continue
			}
			p, err := findID(s.Files.root, id)
			if err == nil && p == "" && m.root != nil {
				if p, err = findID(m.root, own); p != "" {
					l.errorf(sn, "%s lies inside %s (at %s): a service must never see the grading material; keep the service's files in a directory of their own", what, m.name, p)
					continue
				}
			}
			switch {
			case err != nil:
				l.errorf(sn, "%s: cannot make sure it holds no grading material: %v", what, err)
			case p != "":
				l.errorf(sn, "%s holds %s (at %s): a service must never see the grading material; keep the service's files in a directory of their own", what, m.name, p)
			}
		}
	}
}

// material is one piece of grading material: its identity, and its tree when a directory.
type material struct {
	name string
	stat func() (fs.FileInfo, error)
	root *os.Root
}

// gradingMaterial is what only the grader may see: the reference, the solution and the
// grader's files. done closes the handles it opened.
func gradingMaterial(t *Task) (out []material, done func()) {
	var opened []*os.Root
	dir := func(name string, d *Dir) {
		out = append(out, material{name, func() (fs.FileInfo, error) { return d.root.Stat(".") }, d.root})
	}
	if t.Reference != nil {
		dir("reference.directory", t.Reference)
	}
	if s := t.Solution; s != nil {
		if s.Files != nil {
			dir("solution.files", s.Files)
		}
		if s.Script != nil {
			out = append(out, material{"solution.script", s.Script.f.Stat, nil})
		}
	}
	for _, g := range t.GraderFiles {
		m := material{"grader_files " + g.Rel, func() (fs.FileInfo, error) { return g.Root.root.Lstat(g.Rel) }, nil}
		if g.Dir {
			if sub, err := g.Root.root.OpenRoot(g.Rel); err == nil {
				m.root = sub
				opened = append(opened, sub)
			}
		}
		out = append(out, m)
	}
	return out, func() {
		for _, r := range opened {
			r.Close()
		}
	}
}

// checkServiceCriteria holds a criterion's services to the task's: each is a service of the
// task with a port to reach, and only a verifier container reaches them.
func (l *loader) checkServiceCriteria(t *Task) {
	for i := range t.Criteria {
		c := &t.Criteria[i]
		if len(c.Services()) == 0 {
			continue
		}
		n := &yaml.Node{Line: c.Line, Column: c.Column}
		what := fmt.Sprintf("success_criteria[%d] (%s).services", i, c.Type)
		if c.Tier() != TierContainer {
			l.errorf(n, "%s: only a verifier container reaches the task's services: add sandbox: container", what)
		}
		for _, name := range c.Services() {
			j := slices.IndexFunc(t.Services, func(s Service) bool { return s.Name == name })
			switch {
			case j < 0:
				l.errorf(n, "%s: %q is not a service of this task (services: %s)", what, name, strings.Join(serviceNames(t.Services), ", "))
			case len(t.Services[j].Ports) == 0:
				l.errorf(n, "%s: service %s declares no ports, so nothing of it can be reached", what, name)
			}
		}
	}
}

// GradesWithServices reports whether a criterion reaches the task's services, which then
// run until the run is graded instead of stopping with the agent.
func (t *Task) GradesWithServices() bool {
	for i := range t.Criteria {
		if len(t.Criteria[i].Services()) > 0 {
			return true
		}
	}
	return false
}
