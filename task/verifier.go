package task

import (
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/policy"
)

// Grading tiers of an executing criterion.
const (
	// TierWASM runs the criterion in the WebAssembly sandbox on the host (the default).
	TierWASM = "wasm"
	// TierContainer runs it in a verifier container: a fresh hardened container from a
	// pristine image, started after the agent's container is gone (package verifier).
	TierContainer = "container"
)

// Defaults of a verifier container's limits.
const (
	DefaultVerifierMemoryMB = 2048
	DefaultVerifierPids     = 512
	MaxVerifierMemoryMB     = 1 << 20
	MaxVerifierPids         = 1 << 20
)

// Verifier is where a container-tier criterion runs (sandbox: container). The criterion's
// Timeout bounds it.
type Verifier struct {
	Image    string // default: the task's own sandbox.image
	Network  string // policy.NetworkNone, or policy.NetworkHost (run only with the user's --allow-host-network)
	MemoryMB int64
	Pids     int64
	DiskMB   int64 // the workspace copy's cap: the task's sandbox.limits.disk_mb, as the agent's
	// Packages, Pip and PipFindLinks ask for a package image (built once, cached, like
	// sandbox.packages); Image is then its name (Sandbox.PackageImage).
	Packages     []string
	Pip          []string
	PipFindLinks *Dir
	// GraderFiles are the task's grader_files (and a pytest criterion's tests): the verifier
	// sees a read-only copy of each at /task/Rel.
	GraderFiles []GraderFile
}

// The isolation values of a pytest criterion: none runs the agent's modules in the test
// process (the default); process runs them in a process of their own, behind plain-data
// proxies, so they cannot reach the verdict (verifier tier).
const (
	IsolationNone    = "none"
	IsolationProcess = "process"
)

// HarborLogs is where a harbor_reward criterion's tests/test.sh writes its reward: Harbor's
// /logs/verifier, under the verifier container's writable /tmp.
const HarborLogs = "/tmp/logs/verifier"

// Tier says where the criterion runs when it executes anything: TierContainer when it
// declared (or the task's grader defaulted it to) sandbox: container, else TierWASM; ""
// for the criteria that execute nothing.
func (c *Criterion) Tier() string {
	switch {
	case !c.Executes():
		return ""
	case c.Verifier() != nil:
		return TierContainer
	}
	return TierWASM
}

// SharesNoPrivilegeWithItsTests reports whether the criterion's verdict is written by a
// process its tests' code must not be able to reach (harbor_reward's test.sh shell, pytest's
// isolation: process): such a criterion's verifier runs as the unprivileged GraderUID, never
// as root of its user namespace, whose capabilities (CAP_DAC_OVERRIDE: reading the
// unreadable copy of bash that makes the shell non-dumpable, listing the reward's hidden
// directory) would let that code reach the verdict.
func (c *Criterion) SharesNoPrivilegeWithItsTests() bool {
	switch s := c.Spec.(type) {
	case *RunCommandSpec:
		return s.HarborReward
	case *PytestSpec:
		return s.Isolation == IsolationProcess
	}
	return false
}

// NeedsVerifier reports whether any criterion of the task runs in a verifier container.
func (t *Task) NeedsVerifier() bool {
	for i := range t.Criteria {
		if t.Criteria[i].Verifier() != nil {
			return true
		}
	}
	return false
}

// graderSpec is what a run_command criterion or the task's grader: section wrote about the
// tier; resolve merges the two once the whole task is read.
type graderSpec struct {
	nodes    map[string]*yaml.Node // the fields given, by name
	sandbox  string
	image    string
	network  string
	memoryMB int64
	pids     int64
	// pkgs holds packages, pip and pip_find_links; pkgNodes their nodes, read together
	// once the mapping is read (pip needs pip_find_links).
	pkgs     Sandbox
	pkgNodes [3]*yaml.Node
	// pyNode is the criterion's own python_packages or python_wheels, which apply to the
	// WASM sandbox only.
	pyNode *yaml.Node
	// harborNode is the criterion's harbor_reward, isolationNode its isolation: process;
	// both need a verifier container.
	harborNode, isolationNode *yaml.Node
	// ownTimeout: the criterion set its own timeout, which the grader: section's does not
	// replace.
	ownTimeout bool
}

// graderFieldNames are the fields of the tier, on a run_command criterion and in the task's
// grader: section (which also takes timeout).
var graderFieldNames = strings.Fields(graderFieldList)

const graderFieldList = "sandbox image network memory_mb pids packages pip pip_find_links"

// graderFields decodes the tier's fields into g.
func (l *loader) graderFields(what string, g *graderSpec) map[string]func(*yaml.Node) {
	g.nodes = map[string]*yaml.Node{}
	at := func(name string, f func(v *yaml.Node)) func(*yaml.Node) {
		return func(v *yaml.Node) { g.nodes[name] = resolve(v); f(v) }
	}
	return map[string]func(*yaml.Node){
		"sandbox": at("sandbox", func(v *yaml.Node) {
			l.enum(v, what+".sandbox", []string{TierWASM, TierContainer}, &g.sandbox)
		}),
		"image": at("image", func(v *yaml.Node) {
			l.str(v, what+".image", &g.image)
			if g.image == "" {
				l.errorf(resolve(v), "%s.image must not be empty (leave it out for the task's own sandbox.image)", what)
			}
		}),
		"network": at("network", func(v *yaml.Node) {
			l.enum(v, what+".network", []string{policy.NetworkNone, policy.NetworkHost}, &g.network)
		}),
		"memory_mb":      at("memory_mb", func(v *yaml.Node) { l.integer(v, what+".memory_mb", 16, MaxVerifierMemoryMB, &g.memoryMB) }),
		"pids":           at("pids", func(v *yaml.Node) { l.integer(v, what+".pids", 8, MaxVerifierPids, &g.pids) }),
		"packages":       at("packages", func(v *yaml.Node) { g.pkgNodes[0] = v }),
		"pip":            at("pip", func(v *yaml.Node) { g.pkgNodes[1] = v }),
		"pip_find_links": at("pip_find_links", func(v *yaml.Node) { g.pkgNodes[2] = v }),
	}
}

// packageFields reads the package image request of g once its mapping is read, and
// refuses one given beside an image.
func (l *loader) packageFields(what string, g *graderSpec) {
	n := g.pkgNodes
	if n[0] == nil && n[1] == nil && n[2] == nil {
		return
	}
	l.packageRequest(what, &g.pkgs, n[0], n[1], n[2])
	if img := g.nodes["image"]; img != nil {
		l.errorf(img, "%s: give image or packages/pip, not both (packages and pip build an image of their own)", what)
	}
}

// grader reads the task's grader: section, the default tier of its run_command criteria.
func (l *loader) grader(n *yaml.Node, g *graderSpec, timeout *graderTimeout) {
	fields := l.graderFields("grader", g)
	var fs []field
	for _, name := range graderFieldNames {
		fs = append(fs, field{name, fields[name]})
	}
	fs = append(fs, field{"timeout", func(v *yaml.Node) {
		timeout.node = resolve(v)
		l.duration(v, "grader.timeout", &timeout.d)
	}})
	l.mapping(n, "grader", fs)
	l.packageFields("grader", g)
}

// graderTimeout is the grader: section's timeout, applied to run_command criteria that set
// none of their own.
type graderTimeout struct {
	node *yaml.Node
	d    time.Duration
}

// resolveTiers sets each run_command and pytest criterion's Verifier from its own fields
// over the task's grader: defaults, and refuses a container field on a criterion left in
// WASM.
func (l *loader) resolveTiers(t *Task, def *graderSpec, defTimeout *graderTimeout) {
	for i := range t.Criteria {
		c := &t.Criteria[i]
		g := c.GraderTier()
		if g == nil || g.tier == nil {
			continue
		}
		cs := g.tier
		g.tier = nil
		e := c.Execution()
		var tests *GraderFile
		harborReward := false
		switch s := c.Spec.(type) {
		case *RunCommandSpec:
			harborReward = s.HarborReward
		case *PytestSpec:
			tests = s.Tests
		}
		pick := func(name string, own, fallback string) string {
			if _, ok := cs.nodes[name]; ok {
				return own
			}
			if _, ok := def.nodes[name]; ok {
				return fallback
			}
			return ""
		}
		sandbox := pick("sandbox", cs.sandbox, def.sandbox)
		if sandbox != TierContainer {
			if cs.harborNode != nil && harborReward {
				l.errorf(cs.harborNode, "success_criteria[%d] (%s).harbor_reward runs tests/test.sh in a verifier container: add sandbox: container", i, c.Type)
			}
			if cs.isolationNode != nil {
				l.errorf(cs.isolationNode, "success_criteria[%d] (%s).isolation: process runs the tests in a verifier container (the agent's code in a process of its own): add sandbox: container", i, c.Type)
			}
			for _, name := range graderFieldNames[1:] {
				if n, ok := cs.nodes[name]; ok {
					l.errorf(n, "success_criteria[%d] (%s).%s applies only to a verifier container: add sandbox: container (or leave %s out for the WASM sandbox)", i, c.Type, name, name)
				}
			}
			continue
		}
		if cs.pyNode != nil {
			l.errorf(cs.pyNode, "success_criteria[%d] (%s): python_packages and python_wheels apply to the WASM sandbox; in a verifier container use packages (e.g. [python3-yaml]) or pip", i, c.Type)
		}
		v := &Verifier{Image: t.Sandbox.Image, Network: policy.NetworkNone, MemoryMB: DefaultVerifierMemoryMB, Pids: DefaultVerifierPids, DiskMB: t.Sandbox.Limits.DiskMB}
		// The criterion's image or packages replace the grader: section's image or packages.
		own := cs.nodes["image"] != nil || cs.hasPackages()
		switch {
		case own && cs.hasPackages():
			v.setPackages(cs.pkgs)
		case own:
			v.Image = cs.image
		case def.hasPackages():
			v.setPackages(def.pkgs)
		case def.nodes["image"] != nil:
			v.Image = def.image
		}
		if s := pick("network", cs.network, def.network); s != "" {
			v.Network = s
		}
		if _, ok := cs.nodes["memory_mb"]; ok {
			v.MemoryMB = cs.memoryMB
		} else if _, ok := def.nodes["memory_mb"]; ok {
			v.MemoryMB = def.memoryMB
		}
		if _, ok := cs.nodes["pids"]; ok {
			v.Pids = cs.pids
		} else if _, ok := def.nodes["pids"]; ok {
			v.Pids = def.pids
		}
		if !cs.ownTimeout && defTimeout.node != nil {
			e.Timeout = defTimeout.d
		}
		v.GraderFiles = withTests(t.GraderFiles, tests)
		g.Verifier = v
	}
	hasRunCommand := false
	for i := range t.Criteria {
		hasRunCommand = hasRunCommand || t.Criteria[i].Type == RunCommand || t.Criteria[i].Type == Pytest
	}
	if !hasRunCommand && def.sandbox == TierContainer {
		n := def.nodes["sandbox"]
		if n == nil {
			return
		}
		l.errorf(n, "grader.sandbox: container applies to run_command and pytest criteria, and the task has none: remove the grader section or add such a criterion")
	}
}

func (g *graderSpec) hasPackages() bool {
	return g.nodes["packages"] != nil || g.nodes["pip"] != nil || g.nodes["pip_find_links"] != nil
}

// setPackages makes v ask for the package image of p.
func (v *Verifier) setPackages(p Sandbox) {
	v.Packages, v.Pip, v.PipFindLinks = p.Packages, p.Pip, p.PipFindLinks
	v.Image = p.PackageImage()
}
