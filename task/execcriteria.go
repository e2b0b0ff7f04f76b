package task

import (
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Execution is what every criterion that runs code (run_command, wasm, pytest) holds: its
// time limit and the task's files and Python it runs with.
type Execution struct {
	Timeout time.Duration
	// GraderFiles are the task's grader_files (and a pytest criterion's tests), set at load.
	GraderFiles []GraderFile
	// PythonPackages are python_packages, the task's included: import names in Debian's
	// dist-packages.
	PythonPackages []string
	// PythonWheels are python_wheels, the task's included: unpacked at load.
	PythonWheels []*Wheel
}

func (e *Execution) execution() *Execution { return e }

// StdoutScoring is how run_command and wasm score their exit status and stdout.
type StdoutScoring struct {
	ExpectedExitCode int
	ExpectedStdout   *string
	StdoutMatch      string // exact | contains | regex
	ScoreFromStdout  bool
	// RewardKey, with score_from_stdout, scores named rewards ({"correctness": 1, ...},
	// Harbor's reward.json) by that one reward; "" scores them by their mean.
	RewardKey string
}

func (s *StdoutScoring) stdoutScoring() *StdoutScoring { return s }

// GraderTier is where a run_command or pytest criterion runs: in the WASM sandbox, or in a
// verifier container (sandbox: container, on the criterion or as the task's grader: default).
type GraderTier struct {
	// Verifier is set when the criterion runs in a verifier container; nil: the WASM sandbox.
	Verifier *Verifier
	// Services are the task's services a verifier criterion reaches, by name, as the agent
	// does: they still run while it does (see Task.GradesWithServices).
	Services []string
	tier     *graderSpec // what the task file wrote, until the load resolves Verifier
}

func (g *GraderTier) graderTier() *GraderTier { return g }

// RunCommandSpec is a run_command criterion: a shell command in the WASM sandbox or a
// verifier container.
type RunCommandSpec struct {
	Command string
	Execution
	StdoutScoring
	// HarborReward runs command as Harbor's tests/test.sh in a verifier container and scores
	// the reward that command's own shell writes to /tmp/logs/verifier (reward.txt's first
	// line, else reward.json), read by ceval once every process is gone: no program the
	// shell starts can write it (see verifier.HarborArgv).
	HarborReward  bool
	UsesReference bool
	GraderTier
}

// WASMSpec is a wasm criterion: the task's own WASI module, run in the WASM sandbox.
type WASMSpec struct {
	Module       *File // the task's WASI module, opened at load
	ModuleSHA256 string
	Args         []string
	Execution
	StdoutScoring
	UsesReference bool
}

// PytestSpec is a pytest criterion: the task's tests run by pytest in the WASM sandbox or a
// verifier container.
type PytestSpec struct {
	Tests        *GraderFile // the task's tests (also among GraderFiles)
	Args         []string
	AllOrNothing bool   // 1 only when every collected test passed
	Isolation    string // IsolationNone ("" too) or IsolationProcess
	Execution
	GraderTier
}

func newRunCommandSpec() *RunCommandSpec {
	return &RunCommandSpec{Execution: Execution{Timeout: DefaultCheckTimeout}}
}
func newWASMSpec() *WASMSpec { return &WASMSpec{Execution: Execution{Timeout: DefaultCheckTimeout}} }
func newPytestSpec() *PytestSpec {
	return &PytestSpec{Execution: Execution{Timeout: DefaultCheckTimeout}}
}

// Execution is the criterion's executing part (run_command, wasm, pytest), nil for a
// criterion that runs nothing.
func (c *Criterion) Execution() *Execution {
	if s, ok := c.Spec.(interface{ execution() *Execution }); ok {
		return s.execution()
	}
	return nil
}

// Executes reports whether the criterion runs code (and so runs in the WASM sandbox or a
// verifier container).
func (c *Criterion) Executes() bool { return c.Execution() != nil }

// GraderTier is where a run_command or pytest criterion runs, nil for any other type.
func (c *Criterion) GraderTier() *GraderTier {
	if s, ok := c.Spec.(interface{ graderTier() *GraderTier }); ok {
		return s.graderTier()
	}
	return nil
}

// StdoutScoring is how a run_command or wasm criterion scores its exit status and stdout,
// nil for any other type.
func (c *Criterion) StdoutScoring() *StdoutScoring {
	if s, ok := c.Spec.(interface{ stdoutScoring() *StdoutScoring }); ok {
		return s.stdoutScoring()
	}
	return nil
}

// Verifier is the verifier container a run_command or pytest criterion runs in, nil when it
// runs in the WASM sandbox or is of another type.
func (c *Criterion) Verifier() *Verifier {
	if g := c.GraderTier(); g != nil {
		return g.Verifier
	}
	return nil
}

// Services are the task's services the criterion reaches (run_command and pytest in a
// verifier container), nil for none.
func (c *Criterion) Services() []string {
	if g := c.GraderTier(); g != nil {
		return g.Services
	}
	return nil
}

func (s *RunCommandSpec) fields() []criterionField {
	f := []criterionField{
		{"command", func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".command", &s.Command) }},
		timeoutField(&s.Timeout),
		exitCodeField(&s.ExpectedExitCode),
		{"expected_stdout", func(cd *criterionDecoding, v *yaml.Node) {
			var str string
			cd.l.str(v, cd.what+".expected_stdout", &str)
			s.ExpectedStdout = &str
		}},
		{"stdout_match", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.enum(v, cd.what+".stdout_match", []string{"exact", "contains", "regex"}, &s.StdoutMatch)
		}},
		boolField("score_from_stdout", &s.ScoreFromStdout),
		rewardKeyField(&s.RewardKey),
		boolField("harbor_reward", &s.HarborReward),
		boolField("uses_reference", &s.UsesReference),
	}
	return append(append(f, pythonFields(&s.Execution)...), s.GraderTier.fields()...)
}

func (s *RunCommandSpec) check(cd *criterionDecoding) {
	cd.tierRead(&s.GraderTier, "")
	cd.need("command")
	if cd.keys["command"] != nil && strings.TrimSpace(s.Command) == "" {
		cd.errorf(cd.n, "command must not be empty")
	}
	cd.checkScoring(&s.StdoutScoring, s.HarborReward)
}

func (s *WASMSpec) fields() []criterionField {
	return []criterionField{
		{"module", func(cd *criterionDecoding, v *yaml.Node) { s.Module = cd.l.openFile(v, cd.what+".module") }},
		{"sha256", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.str(v, cd.what+".sha256", &s.ModuleSHA256)
			if s.ModuleSHA256 != "" && !sha256Pattern.MatchString(s.ModuleSHA256) {
				cd.l.errorf(resolve(v), "%s.sha256 must be 64 lowercase hex digits", cd.what)
			}
		}},
		argsField(&s.Args),
		timeoutField(&s.Timeout),
		exitCodeField(&s.ExpectedExitCode),
		boolField("score_from_stdout", &s.ScoreFromStdout),
		rewardKeyField(&s.RewardKey),
		boolField("uses_reference", &s.UsesReference),
	}
}

func (s *WASMSpec) check(cd *criterionDecoding) {
	cd.need("module")
	cd.need("sha256")
	cd.checkScoring(&s.StdoutScoring, false)
}

func (s *PytestSpec) fields() []criterionField {
	f := []criterionField{
		{"tests", func(cd *criterionDecoding, v *yaml.Node) { cd.l.pytestTests(v, cd.what+".tests", &s.Tests) }},
		argsField(&s.Args),
		timeoutField(&s.Timeout),
		boolField("all_or_nothing", &s.AllOrNothing),
		{"isolation", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.enum(v, cd.what+".isolation", []string{IsolationNone, IsolationProcess}, &s.Isolation)
		}},
	}
	return append(append(f, pythonFields(&s.Execution)...), s.GraderTier.fields()...)
}

func (s *PytestSpec) check(cd *criterionDecoding) {
	cd.tierRead(&s.GraderTier, s.Isolation)
	cd.need("tests")
}

// fields are the grader: section's fields (graderFieldNames), read into the tier's
// graderSpec, then services.
func (g *GraderTier) fields() []criterionField {
	var f []criterionField
	for _, name := range graderFieldNames {
		f = append(f, criterionField{name, func(cd *criterionDecoding, v *yaml.Node) { cd.tier[name](v) }})
	}
	return append(f, criterionField{"services", func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.strings(v, cd.what+".services", &g.Services)
	}})
}

func pythonFields(e *Execution) []criterionField {
	return []criterionField{
		{"python_packages", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.pythonPackages(v, cd.what+".python_packages", &e.PythonPackages)
		}},
		{"python_wheels", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.pythonWheels(v, cd.what+".python_wheels", &e.PythonWheels)
		}},
	}
}

func boolField(name string, dst *bool) criterionField {
	return criterionField{name, func(cd *criterionDecoding, v *yaml.Node) { cd.l.boolean(v, cd.what+"."+name, dst) }}
}

func argsField(dst *[]string) criterionField {
	return criterionField{"args", func(cd *criterionDecoding, v *yaml.Node) { cd.l.strings(v, cd.what+".args", dst) }}
}

func rewardKeyField(dst *string) criterionField {
	return criterionField{"reward_key", func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".reward_key", dst) }}
}

func exitCodeField(dst *int) criterionField {
	return criterionField{"expected_exit_code", func(cd *criterionDecoding, v *yaml.Node) {
		var code int64
		cd.l.integer(v, cd.what+".expected_exit_code", 0, 255, &code)
		*dst = int(code)
	}}
}

// tierRead finishes a tier type's grader: fields once the mapping is read (the load
// resolves Verifier from them); isolation is pytest's.
func (cd *criterionDecoding) tierRead(t *GraderTier, isolation string) {
	g := t.tier
	_, g.ownTimeout = cd.keys["timeout"]
	cd.l.packageFields(cd.what, g)
	if n := cd.keys["python_packages"]; n != nil {
		g.pyNode = n
	} else if n := cd.keys["python_wheels"]; n != nil {
		g.pyNode = n
	}
	g.harborNode = cd.vals["harbor_reward"]
	if isolation == IsolationProcess {
		g.isolationNode = cd.vals["isolation"]
	}
}

// checkScoring refuses the combinations of an executing criterion's scoring fields that
// contradict each other, and defaults stdout_match.
func (cd *criterionDecoding) checkScoring(c *StdoutScoring, harborReward bool) {
	expectedStdout, stdoutMatch, scoreFromStdout := cd.vals["expected_stdout"], cd.vals["stdout_match"], cd.vals["score_from_stdout"]
	if expectedStdout != nil && scoreFromStdout != nil && c.ScoreFromStdout {
		cd.errorf(resolve(scoreFromStdout), "give expected_stdout or score_from_stdout, not both")
	}
	if cd.vals["harbor_reward"] != nil && harborReward {
		for _, n := range []*yaml.Node{expectedStdout, stdoutMatch} {
			if n != nil {
				cd.errorf(resolve(n), "harbor_reward scores the reward tests/test.sh writes, not its stdout: remove this field")
			}
		}
		if scoreFromStdout != nil && c.ScoreFromStdout {
			cd.errorf(resolve(scoreFromStdout), "harbor_reward scores the reward tests/test.sh writes, not its stdout: remove score_from_stdout")
		}
		if cd.keys["expected_exit_code"] != nil {
			cd.errorf(resolve(cd.keys["expected_exit_code"]), "harbor_reward ignores test.sh's exit status as Harbor does (only a signal's fails it): remove expected_exit_code")
		}
	}
	if rk := cd.vals["reward_key"]; rk != nil && (!(c.ScoreFromStdout || harborReward) || c.RewardKey == "") {
		cd.errorf(resolve(rk), "reward_key names one of the rewards score_from_stdout or harbor_reward reads: give score_from_stdout: true (or harbor_reward: true) and a non-empty key")
	}
	if stdoutMatch != nil && expectedStdout == nil {
		cd.errorf(resolve(stdoutMatch), "stdout_match needs expected_stdout")
	}
	if expectedStdout != nil && c.StdoutMatch == "" {
		c.StdoutMatch = "exact"
	}
	if c.StdoutMatch == "regex" && c.ExpectedStdout != nil {
		if _, err := regexp.Compile(*c.ExpectedStdout); err != nil {
			cd.l.errorf(resolve(expectedStdout), "%s.expected_stdout: regular expression does not compile: %v", cd.what, err)
		}
	}
}
