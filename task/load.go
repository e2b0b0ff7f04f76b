package task

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	jmespath "github.com/jmespath-community/go-jmespath"
	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/gateway/transcript"
	"ceval.dev/ceval/internal/lazyregexp"
	"ceval.dev/ceval/mockd/fixture"
	"ceval.dev/ceval/policy"
)

// MaxTaskFileBytes bounds a task file and each file it references for reading.
const MaxTaskFileBytes = 4 << 20

var (
	taskIDPattern  = lazyregexp.New(`^[a-z0-9][a-z0-9_-]*$`)
	envNamePattern = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	sha256Pattern  = lazyregexp.New(`^[0-9a-f]{64}$`)
)

// Load reads and validates the task file at path. Invalid input is reported as Problems
// (every problem, each with its line and column); other errors are ceval's own.
func Load(path string) (*Task, error) { return LoadWith(path, LoadOptions{}) }

// LoadOptions adjust how a task file loads.
type LoadOptions struct {
	// Root is the declared root (--root): the task may name material anywhere inside it,
	// "../" included, and nothing outside it (absolute paths, ".." past it and symlinks
	// leaving it stay problems). Empty: the task file's own directory, as without a root.
	// The user declares it, never the task: a task file cannot widen its own reach.
	Root string
}

// LoadWith is Load with options.
func LoadWith(path string, opts LoadOptions) (*Task, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	data, err := readCapped(abs)
	if err != nil {
		return nil, Problems{{File: path, Msg: err.Error()}}
	}
	return ParseWith(path, filepath.Dir(abs), data, opts)
}

// rootPrefix returns where dir lies inside the declared root (root "" is dir itself), as a
// relative path ("" for the root itself), and the root's absolute path.
func rootPrefix(dir, root string) (prefix, rootDir string, err error) {
	if root == "" {
		return "", dir, nil
	}
	rootDir, err = filepath.Abs(root)
	if err != nil {
		return "", "", err
	}
	rel, err := filepath.Rel(rootDir, dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", "", fmt.Errorf("the task file's directory %s is outside the declared root %s: give a --root that holds it", dir, rootDir)
	}
	if rel == "." {
		rel = ""
	}
	return rel, rootDir, nil
}

func readCapped(p string) ([]byte, error) {
	data, _, err := readRegular(nil, p) // a FIFO or device named as a task must not hang validate
	return data, err
}

// Parse validates a task document named name (used in messages) whose paths resolve inside
// dir.
func Parse(name, dir string, data []byte) (*Task, error) {
	return ParseWith(name, dir, data, LoadOptions{})
}

// ParseWith is Parse with options.
func ParseWith(name, dir string, data []byte, opts LoadOptions) (*Task, error) {
	d := &decoder{file: name}
	doc, err := readDoc(name, data, "task")
	if err != nil {
		return nil, err
	}
	prefix, rootDir, err := rootPrefix(dir, opts.Root)
	if err != nil {
		return nil, Problems{{File: name, Msg: err.Error()}}
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return nil, fmt.Errorf("open task directory %s: %w", rootDir, err)
	}
	defer root.Close()
	l := &loader{decoder: d, root: root, dir: rootDir, prefix: prefix, declared: opts.Root != ""}
	if top := resolve(doc.Content[0]); top.Kind == yaml.MappingNode && keyNode(top, "dataset") != nil {
		ds := keyNode(top, "dataset")
		d.errorf(ds, "this task has a dataset: it expands to one task per row, which ceval run and ceval validate load (this command takes plain tasks)")
		return nil, d.problems.sorted()
	}
	t := l.task(doc.Content[0])
	if len(d.problems) > 0 {
		t.Close()
		return nil, d.problems.sorted()
	}
	t.Path = filepath.Join(dir, filepath.Base(name))
	t.Dir = dir
	if t.read == nil {
		t.read = map[string][32]byte{}
	}
	t.read[t.Path] = sha256.Sum256(data) // the task file as parsed, not as it may read later
	return t, nil
}

// readDoc parses data as exactly one YAML document; what names the kind of file in messages.
func readDoc(name string, data []byte, what string) (*yaml.Node, error) {
	if p := boundStructure(name, data); p != nil {
		return nil, Problems{*p}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Problems{{File: name, Line: 1, Column: 1, Msg: "empty " + what + " file"}}
		}
		return nil, Problems{yamlProblem(name, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, Problems{{File: name, Line: extra.Line, Column: extra.Column, Msg: "more than one YAML document; a " + what + " file holds exactly one"}}
	}
	if d := (&decoder{file: name}); !d.checkNodes(&doc) {
		return nil, d.problems
	}
	return &doc, nil
}

var yamlLine = lazyregexp.New(`^yaml: line (\d+): (.*)$`)

func yamlProblem(name string, err error) Problem {
	p := Problem{File: name, Msg: "not valid YAML: " + contentFreeYAMLError(err.Error())}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		fmt.Sscan(m[1], &p.Line)
		p.Column = 1
		p.Msg = "not valid YAML: " + contentFreeYAMLError(m[2])
	}
	return p
}

// loader holds what resolving a task's paths needs.
type loader struct {
	*decoder
	root *os.Root // the task's root; every task path is opened through it
	dir  string
	// prefix is the task file's directory relative to root ("" when it is the root, as
	// without a declared root); declared says a root was declared (--root).
	prefix   string
	declared bool
	// expRoot and expDir are the experiment file's directory, where the paths of nodes with
	// an origin (defaults, variants, -D) resolve; nil outside an experiment.
	expRoot *os.Root
	expDir  string
	// read is the sha256 of every file of task material read at load, by absolute path: what
	// Digest names.
	read map[string][32]byte
	// files holds the bytes of each file read, by absolute path, so a file named many
	// times is opened and read once.
	files map[string][]byte
	// baseDirs are the handles grader files are read through, by directory (baseDir).
	baseDirs map[string]*Dir
	// wheels are the python_wheels unpacked so far, by sha256, so a wheel named by many
	// criteria is unpacked (and held) once; wheelBytes is what they hold in all.
	wheels     map[string]*Wheel
	wheelBytes int64
	// absPaths are criteria's absolute paths, checked against sandbox.outputs at the end.
	absPaths []absPath
}

// base returns the directory a path written at n resolves in, and its root.
func (l *loader) base(n *yaml.Node) (*os.Root, string) {
	if _, ok := l.origin[resolve(n)]; ok && l.expRoot != nil {
		return l.expRoot, l.expDir
	}
	return l.root, l.dir
}

func (l *loader) task(n *yaml.Node) *Task {
	t := &Task{
		Sandbox: Sandbox{
			Image:   DefaultImage,
			Network: policy.NetworkNone,
			Limits: Limits{Timeout: policy.DefaultTimeout, MemoryMB: policy.DefaultMemoryMB, CPUs: policy.DefaultCPUs,
				Pids: policy.DefaultPids, DiskMB: policy.DefaultDiskMB},
		},
	}
	var promptNode, promptFileNode, criteriaNode *yaml.Node
	var graderDefault graderSpec
	var graderTimeout graderTimeout
	seen := l.mapping(n, "task", []field{
		{"task_id", func(v *yaml.Node) {
			l.str(v, "task_id", &t.ID)
			if t.ID != "" && !taskIDPattern.MatchString(t.ID) {
				l.errorf(resolve(v), "task_id %q may hold only lowercase letters, digits, '-' and '_', starting with a letter or digit", t.ID)
			}
		}},
		{"description", func(v *yaml.Node) { l.str(v, "description", &t.Description) }},
		{"tags", func(v *yaml.Node) { l.strings(v, "tags", &t.Tags) }},
		{"initial_prompt", func(v *yaml.Node) { promptNode = v; l.str(v, "initial_prompt", &t.Prompt) }},
		{"initial_prompt_file", func(v *yaml.Node) {
			promptFileNode = v
			l.str(v, "initial_prompt_file", &t.PromptFile)
		}},
		{"agent", func(v *yaml.Node) { t.Agent = l.agent(v) }},
		{"sandbox", func(v *yaml.Node) { l.sandbox(v, &t.Sandbox) }},
		{"reference", func(v *yaml.Node) {
			l.mapping(v, "reference", []field{{"directory", func(v *yaml.Node) {
				t.Reference = l.openDir(v, "reference.directory")
			}}})
		}},
		{"success_criteria", func(v *yaml.Node) { criteriaNode = v; t.Criteria = l.criteria(v) }},
		{"protected_mocks", func(v *yaml.Node) { t.ProtectedMocks = l.protectedMocks(v) }},
		{"plugins", func(v *yaml.Node) { t.Plugins = l.plugins(v) }},
		{"run_limits", func(v *yaml.Node) { t.RunLimits = l.runLimits(v) }},
		{"iterations", func(v *yaml.Node) { t.Iterations = l.iterations(v) }},
		{"simulated_user", func(v *yaml.Node) { t.SimulatedUser = l.simulatedUser(v) }},
		{"solution", func(v *yaml.Node) { t.Solution = l.solution(v) }},
		{"grader", func(v *yaml.Node) { l.grader(v, &graderDefault, &graderTimeout) }},
		{"grader_files", func(v *yaml.Node) { t.GraderFiles = l.graderFiles(v) }},
		{"python_packages", func(v *yaml.Node) { l.pythonPackages(v, "python_packages", &t.PythonPackages) }},
		{"setup", func(v *yaml.Node) { t.Setup = l.steps(v, "setup") }},
		{"after_agent", func(v *yaml.Node) { t.AfterAgent = l.steps(v, "after_agent") }},
		{"python_wheels", func(v *yaml.Node) { l.pythonWheels(v, "python_wheels", &t.PythonWheels) }},
		{"services", func(v *yaml.Node) { t.Services = l.services(v) }},
		// A multi-step task (multistep.go).
		{"steps", func(v *yaml.Node) { l.taskSteps(v, t) }},
		{"step_score", func(v *yaml.Node) { l.stepScoreRule(v, t) }},
		{"stop_on_failure", func(v *yaml.Node) { l.boolean(v, "stop_on_failure", &t.StopOnFailure) }},
	})
	if seen == nil {
		return t
	}
	attachGraderFiles(t)
	if _, ok := seen["task_id"]; !ok {
		l.errorf(n, "missing required field task_id")
	}
	l.checkTaskSteps(t, n, seen)
	switch {
	case seen["steps"] != nil: // each step has its own prompt and criteria (checkTaskSteps)
	case promptNode != nil && promptFileNode != nil:
		l.errorf(resolve(promptFileNode), "give initial_prompt or initial_prompt_file, not both")
	case promptNode == nil && promptFileNode == nil:
		l.errorf(n, "missing required field initial_prompt (or initial_prompt_file)")
	case promptFileNode != nil && t.PromptFile != "":
		if p, data := l.readFile(promptFileNode, "initial_prompt_file"); p != "" {
			t.Prompt = string(data)
		}
	}
	if criteriaNode == nil && seen["steps"] == nil {
		l.errorf(n, "missing required field success_criteria (a non-empty list)")
	}
	t.read = l.read
	l.resolveTiers(t, &graderDefault, &graderTimeout)
	l.checkMockCriteria(t)
	l.checkToolCriteria(t)
	l.checkSolutionHidden(t)
	l.checkWheelPackages(t)
	l.checkOutputPaths(t)
	if key := seen["services"]; key != nil {
		l.checkServices(t, key)
	}
	l.checkServiceCriteria(t)
	if key := seen["run_limits"]; key != nil {
		l.checkRunLimits(t, key)
	}
	return t
}

// runLimits reads run_limits: positive whole numbers, and max_usd a positive number.
func (l *loader) runLimits(n *yaml.Node) *RunLimits {
	r := &RunLimits{}
	count := func(name string, max int64, dst *int64) field {
		return field{name, func(v *yaml.Node) { l.integer(v, "run_limits."+name, 1, max, dst) }}
	}
	got := l.mapping(n, "run_limits", []field{
		count("max_turns", MaxRunTurns, &r.MaxTurns),
		count("max_input_tokens", MaxRunTokens, &r.MaxInputTokens),
		count("max_output_tokens", MaxRunTokens, &r.MaxOutputTokens),
		count("max_total_tokens", MaxRunTokens, &r.MaxTotalTokens),
		{"max_usd", func(v *yaml.Node) {
			usd := -1.0 // stays when number reports a problem
			l.number(v, "run_limits.max_usd", 0, MaxRunUSD, &usd)
			if usd == 0 {
				l.errorf(resolve(v), "run_limits.max_usd must be more than 0 (USD), got %s", resolve(v).Value)
			}
			r.MaxUSD = max(usd, 0)
		}},
	})
	if got == nil {
		return nil
	}
	if len(got) == 0 {
		l.errorf(n, "run_limits is empty: give at least one of max_turns, max_input_tokens, max_output_tokens, max_total_tokens, max_usd (or leave run_limits out)")
	}
	return r
}

// checkRunLimits refuses budgets nothing could enforce (key is run_limits' key): they are
// metered by the model gateway, and max_usd prices calls at the pinned model's price.
func (l *loader) checkRunLimits(t *Task, n *yaml.Node) {
	a := t.Agent
	if a == nil || t.RunLimits == nil {
		return
	}
	if a.Gateway == nil {
		l.errorf(n, "run_limits are metered by the model gateway, and this %s agent has none: add agent.gateway (mode forward, record or replay) and point the agent at $CEVAL_GATEWAY_URL, or remove run_limits", a.Type)
		return
	}
	if t.RunLimits.MaxUSD > 0 && a.Model == "" {
		l.errorf(n, "run_limits.max_usd needs agent.model: the gateway pins every call to it and prices the call at that model's price (prices in ceval's config)")
	}
}

// checkMockCriteria makes sure criteria graded on the mock call log have mocks to log, and
// that cli_called names a mocked tool.
func (l *loader) checkMockCriteria(t *Task) {
	mocked := map[string]bool{}
	for _, m := range t.ProtectedMocks {
		mocked[m.Tool] = true
	}
	for i, c := range t.Criteria {
		var tool string
		switch s := c.Spec.(type) {
		case *CLICalledSpec:
			tool = s.Tool
		case *CommandExecutedSpec:
		default:
			continue
		}
		n := &yaml.Node{Line: c.Line, Column: c.Column}
		switch {
		case len(t.ProtectedMocks) == 0:
			l.errorf(n, "success_criteria[%d] (%s): graded on the protected mocks' call log, but the task has no protected_mocks", i, c.Type)
		case tool != "" && !mocked[tool]:
			l.errorf(n, "success_criteria[%d] (cli_called): tool %q is not among protected_mocks", i, tool)
		}
	}
}

func (l *loader) agent(n *yaml.Node) *Agent {
	var fixture *transcript.Fixture
	var fixtureNode *yaml.Node
	a := &Agent{}
	var typeNode, commandNode *yaml.Node
	seen := l.mapping(n, "agent", []field{
		{"type", func(v *yaml.Node) {
			typeNode = v
			l.enum(v, "agent.type", []string{AgentCommand, AgentClaudeCode, AgentCodex}, &a.Type)
		}},
		{"command", func(v *yaml.Node) { commandNode = v; l.strings(v, "agent.command", &a.Command) }},
		{"model", func(v *yaml.Node) { l.str(v, "agent.model", &a.Model) }},
		{"args", func(v *yaml.Node) { l.strings(v, "agent.args", &a.Args) }},
		{"env_passthrough", func(v *yaml.Node) {
			l.list(v, "agent.env_passthrough", func(i int, item *yaml.Node) {
				var s string
				l.str(item, fmt.Sprintf("agent.env_passthrough[%d]", i), &s)
				if s != "" && !envNamePattern.MatchString(s) {
					l.errorf(resolve(item), "agent.env_passthrough[%d]: %q is not an environment variable name", i, s)
				}
				a.EnvPassthrough = append(a.EnvPassthrough, s)
			})
		}},
		{"gateway", func(v *yaml.Node) { a.Gateway, fixture, fixtureNode = l.gateway(v) }},
	})
	if seen == nil {
		return a
	}
	if api := agentAPI[a.Type]; fixture != nil && api != "" && !fixture.Answers(api) {
		l.errorf(resolve(fixtureNode), "agent.gateway.fixture answers no %s requests, but a %s agent calls only that API; write the fixture with api: %s", api, a.Type, api)
	}
	if a.Gateway == nil && (a.Type == AgentClaudeCode || a.Type == AgentCodex) {
		a.Gateway = &Gateway{Mode: GatewayForward}
	}
	if typeNode == nil {
		l.errorf(n, "missing required field agent.type (command, claude-code or codex)")
	}
	switch {
	case a.Type == AgentCommand && commandNode == nil:
		l.errorf(n, "agent.command is required for agent type command (an argv list)")
	case a.Type == AgentCommand && len(a.Command) == 0:
		l.errorf(resolve(commandNode), "agent.command must not be empty")
	case a.Type != AgentCommand && a.Type != "" && commandNode != nil:
		l.errorf(resolve(commandNode), "agent.command is only for agent type command; use agent.args for %s", a.Type)
	}
	return a
}

// agentAPI is the one model API each agent CLI calls.
var agentAPI = map[string]string{AgentClaudeCode: transcript.Anthropic, AgentCodex: transcript.OpenAI}

// gateway reads agent.gateway; a replay fixture is parsed now, so a bad one is a
// validation error. It returns the parsed fixture and its node, if any.
func (l *loader) gateway(n *yaml.Node) (g *Gateway, fixture *transcript.Fixture, fixtureNode *yaml.Node) {
	g = &Gateway{Mode: GatewayForward}
	got := l.mapping(n, "agent.gateway", []field{
		{"mode", func(v *yaml.Node) {
			l.enum(v, "agent.gateway.mode", []string{GatewayForward, GatewayRecord, GatewayReplay}, &g.Mode)
		}},
		{"fixture", func(v *yaml.Node) { fixtureNode = v }},
		{"server_tools", func(v *yaml.Node) { l.boolean(v, "agent.gateway.server_tools", &g.ServerTools) }},
	})
	if got == nil {
		return g, nil, nil
	}
	switch {
	case g.Mode == GatewayReplay && fixtureNode == nil:
		l.errorf(n, "agent.gateway.fixture is required for mode replay (a script of turns, or a model_calls.jsonl of an earlier run)")
	case g.Mode != GatewayReplay && fixtureNode != nil:
		l.errorf(resolve(fixtureNode), "agent.gateway.fixture is only for mode replay")
	case fixtureNode != nil:
		// Read once: the fixture replay serves is the one validated here.
		var data []byte
		if g.FixturePath, data = l.readFile(fixtureNode, "agent.gateway.fixture"); g.FixturePath == "" {
			break
		}
		var err error
		if fixture, err = transcript.ParseFixture(bytes.NewReader(data)); err != nil {
			p := Problem{File: g.FixturePath, Msg: "gateway fixture: " + err.Error()}
			var fe *transcript.FixtureError
			if errors.As(err, &fe) {
				p.Line, p.Column, p.Msg = fe.Line, 1, "gateway fixture: "+fe.Msg
			}
			l.problems = append(l.problems, p)
		}
		g.Fixture = fixture
	}
	return g, fixture, fixtureNode
}

// pluginName is what a plugin's directory must be called to get a default mount.
var pluginName = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// reservedMounts are container paths the sandbox mounts itself; a plugin may neither
// replace, cover nor sit inside one (the oci package enforces the same).
var reservedMounts = []string{"/workspace", "/home/agent", "/.ceval", "/tmp", "/proc", "/sys", "/dev", "/run"}

func (l *loader) plugins(n *yaml.Node) []Plugin {
	var out []Plugin
	names := map[string]int{}
	l.list(n, "plugins", func(i int, item *yaml.Node) {
		what := fmt.Sprintf("plugins[%d]", i)
		var p Plugin
		var mountNode *yaml.Node
		got := l.mapping(item, what, []field{
			{"path", func(v *yaml.Node) { p.Dir = l.openDir(v, what+".path") }},
			{"mount", func(v *yaml.Node) { mountNode = v; l.str(v, what+".mount", &p.Mount) }},
		})
		if got == nil {
			return
		}
		if got["path"] == nil {
			l.errorf(item, "%s: missing required field path (a plugin bundle or source tree next to the task)", what)
			return
		}
		if p.Dir == nil {
			return
		}
		p.Name = filepath.Base(p.Dir.Path)
		if !pluginName.MatchString(p.Name) {
			l.errorf(resolve(got["path"]), "%s.path: the directory's name %q must be 1-64 of [A-Za-z0-9._-], starting alphanumeric", what, p.Name)
			return
		}
		if j, dup := names[p.Name]; dup {
			l.errorf(resolve(got["path"]), "%s.path: plugins[%d] is also named %q (the directory's name); rename one", what, j, p.Name)
			return
		}
		names[p.Name] = i
		if mountNode == nil {
			p.Mount = PluginMountRoot + "/" + p.Name
		} else if msg := checkMount(p.Mount); msg != "" {
			l.errorf(resolve(mountNode), "%s.mount: %q %s", what, p.Mount, msg)
			return
		}
		for j, q := range out {
			if q.Mount == p.Mount || strings.HasPrefix(p.Mount, q.Mount+"/") || strings.HasPrefix(q.Mount, p.Mount+"/") {
				l.errorf(item, "%s: mount %s overlaps plugins[%d]'s %s", what, p.Mount, j, q.Mount)
				return
			}
		}
		out = append(out, p)
	})
	return out
}

// mockTool is what a mocked tool may be called: a plain command name.
var mockTool = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func (l *loader) protectedMocks(n *yaml.Node) []ProtectedMock {
	var out []ProtectedMock
	tools := map[string]int{}
	fixtures := map[string]*fixture.Fixture{} // by path, parsed once: mocks may share a file
	l.list(n, "protected_mocks", func(i int, item *yaml.Node) {
		what := fmt.Sprintf("protected_mocks[%d]", i)
		m := ProtectedMock{MaxRequests: DefaultMockRequests}
		var fixtureNode *yaml.Node
		got := l.mapping(item, what, []field{
			{"tool", func(v *yaml.Node) {
				l.str(v, what+".tool", &m.Tool)
				if m.Tool != "" && (!mockTool.MatchString(m.Tool) || m.Tool == "ceval-mock") {
					l.errorf(resolve(v), "%s.tool %q: want a command name of 1-64 of [A-Za-z0-9._-], starting alphanumeric (not ceval-mock)", what, m.Tool)
					m.Tool = ""
				}
			}},
			{"fixture", func(v *yaml.Node) { fixtureNode = v }},
			{"max_requests", func(v *yaml.Node) {
				n := int64(m.MaxRequests)
				l.integer(v, what+".max_requests", 1, MaxMockRequests, &n)
				m.MaxRequests = int(n)
			}},
		})
		if got == nil {
			return
		}
		for _, f := range []string{"tool", "fixture"} {
			if got[f] == nil {
				l.errorf(item, "%s: missing required field %s", what, f)
			}
		}
		if m.Tool != "" {
			if j, dup := tools[m.Tool]; dup {
				l.errorf(resolve(got["tool"]), "%s.tool: protected_mocks[%d] already mocks %q", what, j, m.Tool)
				return
			}
			tools[m.Tool] = i
		}
		if fixtureNode == nil {
			return
		}
		var data []byte
		if m.FixturePath, data = l.readFile(fixtureNode, what+".fixture"); m.FixturePath == "" || m.Tool == "" {
			return
		}
		fx, parsed := fixtures[m.FixturePath]
		if !parsed {
			fx = l.mockFixture(m.FixturePath, data)
			fixtures[m.FixturePath] = fx
		}
		if fx == nil {
			return
		}
		m.Fixture = fx
		out = append(out, m)
	})
	return out
}

// mockFixture parses a protected mock's fixture file; nil when it has problems, all
// reported at their line in that file.
func (l *loader) mockFixture(path string, data []byte) *fixture.Fixture {
	fx, probs := fixture.ParseFixture(data)
	for _, p := range probs {
		l.problems = append(l.problems, Problem{File: path, Line: p.Line, Column: p.Column, Msg: "fixture: " + p.Msg})
	}
	return fx
}

func checkMount(m string) string {
	switch {
	case !strings.HasPrefix(m, "/") || path.Clean(m) != m || strings.ContainsAny(m, ":\x00"):
		return "must be an absolute, clean container path without ':'"
	case m == "/":
		return "would cover the whole container"
	}
	for _, r := range reservedMounts {
		if m == r || strings.HasPrefix(m, r+"/") || strings.HasPrefix(r, m+"/") {
			return "overlaps " + r + ", which the sandbox mounts itself"
		}
	}
	return ""
}

// outputs reads sandbox.outputs: absolute, clean container paths, none "/", none
// overlapping another or a mount the sandbox makes itself (but /tmp, which an output
// replaces), at most MaxOutputs.
func (l *loader) outputs(n *yaml.Node) []string {
	var out []string
	l.list(n, "sandbox.outputs", func(i int, item *yaml.Node) {
		what := fmt.Sprintf("sandbox.outputs[%d]", i)
		var p string
		l.str(item, what, &p)
		rn := resolve(item)
		if p == "" {
			return
		}
		if msg := checkOutput(p); msg != "" {
			l.errorf(rn, "%s: %q %s", what, p, msg)
			return
		}
		for _, o := range out {
			if OutputOf([]string{o}, p) != "" || OutputOf([]string{p}, o) != "" {
				l.errorf(rn, "%s: %q overlaps sandbox.outputs entry %q: give each directory once", what, p, o)
				return
			}
		}
		if len(out) == MaxOutputs {
			l.errorf(rn, "%s: at most %d outputs", what, MaxOutputs)
			return
		}
		out = append(out, p)
	})
	return out
}

// checkOutput says what is wrong with an output's path, or "".
func checkOutput(p string) string {
	switch {
	case !strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.ContainsAny(p, ":\x00\\"):
		return "must be an absolute, clean container path without ':' or '\\'"
	case strings.ContainsAny(p, "*?["):
		return "has glob characters"
	case p == "/":
		return "would cover the whole container"
	}
	for _, r := range reservedMounts {
		if r == "/tmp" && (p == r || strings.HasPrefix(p, r+"/")) {
			continue // an output at /tmp (or below) replaces the sandbox's own /tmp
		}
		if p == r || strings.HasPrefix(p, r+"/") || strings.HasPrefix(r, p+"/") {
			return "overlaps " + r + ", which the sandbox mounts itself"
		}
	}
	for _, r := range outputNever {
		if p == r || strings.HasPrefix(p, r+"/") || strings.HasPrefix(r, p+"/") {
			return "overlaps " + r + ": an output there would put what the agent wrote where verifiers and the WASM sandbox run their own code or read the grading material"
		}
	}
	return ""
}

// outputNever are where no output may be: the system's programs and libraries (a verifier
// runs its image's, and an output is the agent's copy), and the grading material's and
// ceval's own mounts in verifiers (/task, /reference), the WASM sandbox (/ceval) and plugins.
var outputNever = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/boot",
	"/task", "/reference", "/ceval", PluginMountRoot}

func (l *loader) sandbox(n *yaml.Node, sb *Sandbox) {
	var pkgs, pip, links *yaml.Node
	imageGiven := false
	l.mapping(n, "sandbox", []field{
		{"packages", func(v *yaml.Node) { pkgs = v }},
		{"pip", func(v *yaml.Node) { pip = v }},
		{"pip_find_links", func(v *yaml.Node) { links = v }},
		{"image", func(v *yaml.Node) {
			imageGiven = true
			l.str(v, "sandbox.image", &sb.Image)
			if sb.Image == "" {
				l.errorf(resolve(v), "sandbox.image must not be empty")
			}
		}},
		{"network", func(v *yaml.Node) {
			l.enum(v, "sandbox.network", []string{policy.NetworkNone, policy.NetworkHost}, &sb.Network)
		}},
		{"image_workdir", func(v *yaml.Node) {
			l.enum(v, "sandbox.image_workdir", []string{ImageWorkdirCopy, ImageWorkdirIgnore}, &sb.ImageWorkdir)
		}},
		{"outputs", func(v *yaml.Node) { sb.Outputs = l.outputs(v) }},
		{"limits", func(v *yaml.Node) {
			lim := &sb.Limits
			l.mapping(v, "sandbox.limits", []field{
				{"timeout", func(v *yaml.Node) { l.duration(v, "sandbox.limits.timeout", &lim.Timeout) }},
				{"memory_mb", func(v *yaml.Node) { l.integer(v, "sandbox.limits.memory_mb", 16, 1<<20, &lim.MemoryMB) }},
				{"cpus", func(v *yaml.Node) { l.number(v, "sandbox.limits.cpus", 0.01, 1024, &lim.CPUs) }},
				// pids is at least 32: the init alone keeps about 8 threads.
				{"pids", func(v *yaml.Node) { l.integer(v, "sandbox.limits.pids", 32, 1<<22, &lim.Pids) }},
				{"disk_mb", func(v *yaml.Node) { l.integer(v, "sandbox.limits.disk_mb", 1, 1<<20, &lim.DiskMB) }},
			})
		}},
		{"workspace", func(v *yaml.Node) {
			ws := &sb.Workspace
			l.mapping(v, "sandbox.workspace", []field{
				{"starter_files", func(v *yaml.Node) {
					seen := map[string]bool{}
					l.list(v, "sandbox.workspace.starter_files", func(i int, item *yaml.Node) {
						what := fmt.Sprintf("sandbox.workspace.starter_files[%d]", i)
						var f StarterFile
						var content bool
						got := l.mapping(item, what, []field{
							{"path", func(v *yaml.Node) { f.Path = l.workspacePath(v, what+".path", false) }},
							{"content", func(v *yaml.Node) { content = true; l.str(v, what+".content", &f.Content) }},
						})
						if got == nil {
							return
						}
						if _, ok := got["path"]; !ok {
							l.errorf(item, "%s: missing required field path", what)
						}
						if !content {
							l.errorf(item, "%s: missing required field content", what)
						}
						if f.Path != "" && seen[f.Path] {
							l.errorf(item, "%s: path %q is given twice", what, f.Path)
						}
						seen[f.Path] = true
						ws.StarterFiles = append(ws.StarterFiles, f)
					})
				}},
				{"template_dir", func(v *yaml.Node) {
					open := func(n *yaml.Node, what string) *Dir {
						d := l.openDir(n, what)
						if d != nil {
							for _, msg := range checkTemplateGit(d.root) {
								l.errorf(resolve(n), "%s: %s", what, msg)
							}
						}
						return d
					}
					if resolve(v).Kind != yaml.SequenceNode {
						ws.TemplateDir = open(v, "sandbox.workspace.template_dir")
						return
					}
					if len(resolve(v).Content) == 0 {
						l.errorf(resolve(v), "sandbox.workspace.template_dir: an empty list: give a directory, or a list of directories copied in order")
					}
					l.list(v, "sandbox.workspace.template_dir", func(i int, item *yaml.Node) {
						d := open(item, fmt.Sprintf("sandbox.workspace.template_dir[%d]", i))
						switch {
						case d == nil:
						case ws.TemplateDir == nil:
							ws.TemplateDir = d
						default:
							ws.TemplateOverlays = append(ws.TemplateOverlays, d)
						}
					})
				}},
			})
		}},
	})
	l.packages(sb, pkgs, pip, links, imageGiven)
}

func (l *loader) criteria(n *yaml.Node) []Criterion {
	var out []Criterion
	rn := resolve(n)
	l.list(n, "success_criteria", func(i int, item *yaml.Node) {
		if c, ok := l.criterion(i, item); ok {
			out = append(out, c)
		}
	})
	if rn.Kind == yaml.SequenceNode && len(rn.Content) == 0 {
		l.errorf(rn, "success_criteria must not be empty")
	}
	return out
}

// flagOps are the predicates of a cli_called flag check.
var flagOps = []string{"equals", "contains", "regex", "present", "absent"}

// argvCheck reads cli_called's argv: {positional: [..], flags: {--flag: {OP: value}}}.
func (l *loader) argvCheck(n *yaml.Node, what string, c *CLICalledSpec) {
	l.mapping(n, what, []field{
		{"positional", func(v *yaml.Node) { l.strings(v, what+".positional", &c.Positional) }},
		{"flags", func(v *yaml.Node) {
			rv := resolve(v)
			if rv.Kind != yaml.MappingNode {
				l.errorf(rv, "%s.flags must be a mapping of flag to check", what)
				return
			}
			for j := 0; j+1 < len(rv.Content); j += 2 {
				flag := resolve(rv.Content[j]).Value
				fw := fmt.Sprintf("%s.flags[%q]", what, flag)
				if !strings.HasPrefix(flag, "-") {
					l.errorf(resolve(rv.Content[j]), "%s: a flag starts with '-'", fw)
					continue
				}
				var fields []field
				var checks []FlagCheck
				for _, op := range flagOps {
					fields = append(fields, field{op, func(v *yaml.Node) {
						fc := FlagCheck{Flag: flag, Op: op}
						switch op {
						case "present", "absent":
							var b bool
							l.boolean(v, fw+"."+op, &b)
							if !b {
								l.errorf(resolve(v), "%s.%s takes only true", fw, op)
							}
						case "regex":
							l.regex(v, fw+".regex", &fc.Value)
						default:
							l.str(v, fw+"."+op, &fc.Value)
						}
						checks = append(checks, fc)
					}})
				}
				if got := l.mapping(rv.Content[j+1], fw, fields); got != nil && len(got) != 1 {
					l.errorf(resolve(rv.Content[j+1]), "%s: give exactly one of %s", fw, strings.Join(flagOps, ", "))
					continue
				}
				c.Flags = append(c.Flags, checks...)
			}
		}},
	})
}

func hasKey(n *yaml.Node, key string) bool {
	for j := 0; j+1 < len(n.Content); j += 2 {
		if resolve(n.Content[j]).Value == key {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (l *loader) assertions(n *yaml.Node, what string, c *JSONCheckSpec) {
	l.list(n, what, func(i int, item *yaml.Node) {
		aw := fmt.Sprintf("%s[%d]", what, i)
		a := Assertion{}
		var exprNode, expectedNode *yaml.Node
		got := l.mapping(item, aw, []field{
			{"expression", func(v *yaml.Node) {
				exprNode = v
				l.str(v, aw+".expression", &a.Expression)
				if a.Expression != "" {
					if _, err := jmespath.Compile(a.Expression); err != nil {
						l.errorf(resolve(v), "%s.expression: JMESPath does not parse: %v", aw, err)
					}
				}
			}},
			{"operator", func(v *yaml.Node) { l.enum(v, aw+".operator", Operators, &a.Operator) }},
			{"expected", func(v *yaml.Node) {
				expectedNode = v
				a.Expected, _ = l.value(v)
			}},
		})
		if got == nil {
			return
		}
		if exprNode == nil {
			l.errorf(item, "%s: missing required field expression", aw)
		}
		if got["operator"] == nil {
			a.Operator = "equals"
		}
		if expectedNode == nil && a.Operator != "exists" {
			l.errorf(item, "%s: missing required field expected (operator %s compares with it)", aw, a.Operator)
		}
		switch a.Operator {
		case "regex":
			if s, ok := a.Expected.(string); !ok {
				l.errorf(item, "%s: operator regex needs a string pattern in expected", aw)
			} else if _, err := regexp.Compile(s); err != nil {
				l.errorf(resolve(expectedNode), "%s.expected: regular expression does not compile: %v", aw, err)
			}
		case "gt", "gte", "lt", "lte":
			if _, ok := a.Expected.(float64); !ok && expectedNode != nil {
				l.errorf(resolve(expectedNode), "%s: operator %s needs a number in expected", aw, a.Operator)
			}
		case "type":
			if s, _ := a.Expected.(string); !contains(jsonTypes, s) {
				l.errorf(item, "%s: operator type needs expected to be one of %s", aw, strings.Join(jsonTypes, ", "))
			}
		case "exists":
			if expectedNode != nil {
				if _, ok := a.Expected.(bool); !ok {
					l.errorf(resolve(expectedNode), "%s: operator exists takes expected true or false (or none, meaning true)", aw)
				}
			} else {
				a.Expected = true
			}
		}
		c.Assertions = append(c.Assertions, a)
	})
}

var jsonTypes = []string{"string", "number", "boolean", "array", "object", "null"}

// taskRel checks a path the task names for its own material: relative, and not leaving
// the task's directory.
func (l *loader) taskRel(n *yaml.Node, what string) (string, bool) {
	var p string
	l.str(n, what, &p)
	rn := resolve(n)
	switch {
	case p == "":
		l.errorf(rn, "%s must not be empty", what)
		return "", false
	case filepath.IsAbs(p):
		l.errorf(rn, "%s: %q is absolute; task paths are relative to the task file's directory", what, p)
		return "", false
	}
	if _, ok := l.origin[rn]; ok && l.expRoot != nil {
		if !filepath.IsLocal(p) {
			l.errorf(rn, "%s: %q leaves the experiment file's directory", what, p)
			return "", false
		}
		return filepath.Clean(p), true
	}
	rel := filepath.Join(l.prefix, p) // relative to the root
	if !filepath.IsLocal(rel) {
		if l.declared {
			l.errorf(rn, "%s: %q leaves the declared root %s", what, p, l.dir)
		} else {
			l.errorf(rn, "%s: %q leaves the task file's directory (to name material elsewhere in your tree, declare the tree with --root DIR)", what, p)
		}
		return "", false
	}
	return rel, true
}

// openDir opens a directory of task material through the root its path resolves in and
// keeps the handle: what ceval reads from it later is this directory, whatever the path
// names by then. Symlinks that leave the root are refused.
func (l *loader) openDir(n *yaml.Node, what string) *Dir {
	rel, ok := l.taskRel(n, what)
	if !ok {
		return nil
	}
	root, base := l.base(n)
	r, err := root.OpenRoot(rel + "/.") // "/.": a FIFO there fails as not a directory, never blocks
	if err != nil {
		if fi, serr := root.Stat(rel); serr == nil && !fi.IsDir() {
			l.errorf(resolve(n), "%s: %q is not a directory", what, rel)
		} else {
			l.errorf(resolve(n), "%s: %s", what, describeRootErr(rel, err))
		}
		return nil
	}
	return &Dir{Path: filepath.Join(base, rel), root: r}
}

// openFile opens a regular file of task material (never a FIFO, device or socket) through
// the root its path resolves in and keeps the handle.
func (l *loader) openFile(n *yaml.Node, what string) *File {
	rel, ok := l.taskRel(n, what)
	if !ok {
		return nil
	}
	root, base := l.base(n)
	f, err := openRegular(func(flag int) (*os.File, error) { return root.OpenFile(rel, flag, 0) }, rel)
	if err != nil {
		l.errorf(resolve(n), "%s: %s", what, describeRootErr(rel, err))
		return nil
	}
	return &File{Path: filepath.Join(base, rel), f: f}
}

// readFile reads a regular file of task material once, capped, through the root its path
// resolves in; it returns the file's absolute path (for messages) and its bytes, or "" after
// reporting a problem at n.
func (l *loader) readFile(n *yaml.Node, what string) (string, []byte) {
	// A file named many times (criteria repeated by an alias) is read once per task file.
	rel, ok := l.taskRel(n, what)
	if !ok {
		return "", nil
	}
	if _, base := l.base(n); l.files[filepath.Join(base, rel)] != nil {
		p := filepath.Join(base, rel)
		return p, l.files[p]
	}
	f := l.openFile(n, what)
	if f == nil {
		return "", nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f.f, MaxTaskFileBytes+1))
	if err == nil && len(data) > MaxTaskFileBytes {
		err = fmt.Errorf("larger than %d bytes", MaxTaskFileBytes)
	}
	if err != nil {
		l.errorf(resolve(n), "%s: %s: %v", what, filepath.Base(f.Path), err)
		return "", nil
	}
	if l.read == nil {
		l.read = map[string][32]byte{}
	}
	l.read[f.Path] = sha256.Sum256(data)
	if l.files == nil {
		l.files = map[string][]byte{}
	}
	if data == nil {
		data = []byte{}
	}
	l.files[f.Path] = data
	return f.Path, data
}

func describeRootErr(rel string, err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("%q not found next to the task file", rel)
	}
	if strings.Contains(err.Error(), "escapes") {
		return fmt.Sprintf("%q is a symlink that leaves the task file's directory", rel)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%q: %v", rel, pe.Err)
	}
	return err.Error()
}

// criterionPath is workspacePath, or an absolute path that checkOutputPaths later finds
// below one of sandbox.outputs.
func (l *loader) criterionPath(n *yaml.Node, what string, glob bool) string {
	var p string
	l.str(n, what, &p)
	if !strings.HasPrefix(p, "/") {
		return l.workspacePath(n, what, glob)
	}
	rn := resolve(n)
	clean := path.Clean(p)
	switch {
	case strings.Contains(p, "\x00") || strings.Contains(p, `\`) || clean != strings.TrimSuffix(p, "/"):
		l.errorf(rn, "%s: %q is not a clean absolute path", what, p)
		return ""
	case !glob && strings.ContainsAny(clean, "*?["):
		l.errorf(rn, "%s: %q has glob characters; only file_exists takes a glob", what, p)
		return ""
	case glob:
		if _, err := path.Match(strings.ReplaceAll(clean, "**", "*"), ""); err != nil {
			l.errorf(rn, "%s: bad glob %q: %v", what, p, err)
			return ""
		}
	}
	l.absPaths = append(l.absPaths, absPath{rn, what, clean})
	return clean
}

// absPath is a criterion's absolute path, checked against sandbox.outputs once both are read.
type absPath struct {
	n    *yaml.Node
	what string
	p    string
}

// checkOutputPaths refuses a criterion's absolute path that is not below one of
// sandbox.outputs: only those are copied out after the agent.
func (l *loader) checkOutputPaths(t *Task) {
	for _, a := range l.absPaths {
		if o := OutputOf(t.Sandbox.Outputs, a.p); o == "" || o == a.p {
			l.errorf(a.n, "%s: %q is absolute; workspace paths are relative to /workspace, and an absolute path must be below one of sandbox.outputs (%s): declare its directory there", a.what, a.p, strings.Join(t.Sandbox.Outputs, ", "))
		}
	}
}

// workspacePath checks a path inside the agent's workspace: relative, slash-separated, not
// leaving it. With glob, the path may hold glob metacharacters (checked for syntax).
func (l *loader) workspacePath(n *yaml.Node, what string, glob bool) string {
	var p string
	l.str(n, what, &p)
	rn := resolve(n)
	clean := path.Clean(strings.TrimPrefix(p, "./"))
	switch {
	case p == "":
		l.errorf(rn, "%s must not be empty", what)
	case strings.HasPrefix(p, "/"):
		l.errorf(rn, "%s: %q is absolute; workspace paths are relative to /workspace", what, p)
	case clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(p, "\x00") || strings.Contains(p, `\`):
		l.errorf(rn, "%s: %q does not name a path inside the workspace", what, p)
	default:
		if glob {
			if _, err := path.Match(strings.ReplaceAll(clean, "**", "*"), ""); err != nil {
				l.errorf(rn, "%s: bad glob %q: %v", what, p, err)
				return ""
			}
		} else if strings.ContainsAny(clean, "*?[") {
			l.errorf(rn, "%s: %q has glob characters, which this path does not take", what, p)
			return ""
		}
		return clean
	}
	return ""
}

// containsLabel says label is among labels, up to case when fold is set.
func containsLabel(labels []string, label string, fold bool) bool {
	for _, l := range labels {
		if l == label || fold && strings.EqualFold(l, label) {
			return true
		}
	}
	return false
}
