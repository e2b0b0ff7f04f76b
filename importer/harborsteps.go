package importer

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/rootfs"
)

// Harbor's multi-step tasks (task.toml schema 1.4): [[steps]] entries, each with a name and
// a directory steps/<name>/ holding its instruction.md, tests/ (merged with the task's
// top-level tests/ before verification), solution/solve.sh and workdir/ (copied into the
// WORKDIR before the step's agent); multi_step_reward_strategy (mean, the default, or
// final) makes the trial's reward. They become ceval's steps: (see docs/tasks.md).

// harborStep is one [[steps]] entry: where it starts and its keys relative to it (name,
// min_reward, agent.timeout_sec, verifier.env.X, healthcheck.command, ...).
type harborStep struct {
	line int
	cfg  map[string]tomlValue
}

// readHarborSteps reads task.toml's [[steps]] entries, each with the [steps.X] tables that
// follow its header, through readTOML over a copy of the file in which only that entry's
// lines are kept (so every key keeps its line).
func readHarborSteps(file string, data []byte) ([]harborStep, []Problem) {
	lines := strings.Split(string(data), "\n")
	var steps []harborStep
	var problems []Problem
	var cur []string // the current entry's copy of the file, nil outside one
	start := 0
	flush := func() {
		if cur == nil {
			return
		}
		cfg, ps := readTOML(file, []byte(strings.Join(cur, "\n")))
		steps = append(steps, harborStep{line: start, cfg: cfg})
		problems = append(problems, ps...)
		cur = nil
	}
	for i, raw := range lines {
		line := strings.TrimSpace(stripComment(raw))
		if strings.HasPrefix(line, "[") && !strings.Contains(line, "=") {
			name := strings.TrimSpace(strings.Trim(line, "[]"))
			switch {
			case strings.HasPrefix(line, "[[") && name == "steps":
				flush()
				cur, start = make([]string, len(lines)), i+1
				continue
			case cur != nil && strings.HasPrefix(name, "steps."):
				// a table of the current entry: [steps.verifier.env] is its [verifier.env]
				cur[i] = strings.Replace(raw, "steps.", "", 1)
				continue
			default:
				flush()
			}
		}
		if cur != nil {
			cur[i] = raw
		}
	}
	flush()
	return steps, problems
}

// harborStepName is a step's ceval name: Harbor's, lowercased, other characters as '-'.
func harborStepName(name string, i int) string {
	n := strings.Trim(notID.ReplaceAllString(strings.ToLower(name), "-"), "-_")
	if len(n) > 63 {
		n = n[:63]
	}
	if n == "" {
		return fmt.Sprintf("step-%d", i+1)
	}
	return n
}

// harborMultiStep writes a multi-step Harbor task's steps into root: steps:, step_score,
// the steps' tests as grader_files, the summed agent timeout. verifierEnv is the task's
// [verifier.env], exported before each step's own.
func (c *conv) harborMultiStep(dir string, cfg map[string]tomlValue, steps []harborStep, root *yaml.Node, verifierEnv []string) {
	isFile := func(rel string) bool {
		fi, err := os.Lstat(filepath.Join(dir, rel))
		return err == nil && fi.Mode().IsRegular()
	}
	isDir := func(rel string) bool {
		fi, err := os.Lstat(filepath.Join(dir, rel))
		return err == nil && fi.IsDir()
	}
	at := func(line int) *yaml.Node { return &yaml.Node{Line: max(line, 1)} }
	switch v, ok := cfg["multi_step_reward_strategy"]; {
	case !ok:
		set(root, "step_score", scalar("mean"))
		c.note(at(steps[0].line), "multi_step_reward_strategy", "not set: Harbor's default for a multi-step task, mean, became step_score: mean")
	case v.str == "mean":
		set(root, "step_score", scalar("mean"))
	case v.str == "final":
		set(root, "step_score", scalar("last"))
		c.note(at(v.line), "multi_step_reward_strategy", "final became step_score: last (the last step's score and status)")
	default:
		c.unmapped(at(v.line), "multi_step_reward_strategy", "%q is not one of Harbor's strategies (mean, final)", v.str)
	}
	mean := cfg["multi_step_reward_strategy"].str != "final"
	if isFile("instruction.md") {
		c.unmapped(at(1), "instruction.md", "a multi-step task's prompts are its steps' (steps/NAME/instruction.md): this one is not given to the agent")
	}
	topTest, usedTop := isFile("tests/test.sh"), false
	if isFile("solution/solve.sh") {
		c.note(at(1), "solution/solve.sh", "the oracle ceval audit runs for every step that has no steps/NAME/solution/solve.sh (with CEVAL_STEP set)")
		set(root, "solution", &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("script"), str("solution/solve.sh")}})
	}
	var graderFiles []string
	list := &yaml.Node{Kind: yaml.SequenceNode}
	seen := map[string]bool{}
	var total float64
	timeouts := true
	for i, st := range steps {
		name := st.cfg["name"].str
		if name == "" {
			c.unmapped(at(st.line), "steps[].name", "a Harbor step needs a name (its directory is steps/NAME/): this step cannot be found, and is not imported")
			keys := make([]string, 0, len(st.cfg))
			for k := range st.cfg {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				c.unmapped(at(st.cfg[k].line), "steps[]."+k, "in a step without a name: not imported")
			}
			continue
		}
		sdir := "steps/" + name
		if name != filepath.Base(name) || name == "." || name == ".." {
			c.unmapped(at(st.cfg["name"].line), "steps[].name", "%q does not name a directory below steps/", name)
			continue
		}
		cname := harborStepName(name, i)
		if seen[cname] {
			cname = fmt.Sprintf("%s-%d", cname, i+1)
		}
		seen[cname] = true
		if cname != name {
			c.note(at(st.cfg["name"].line), "steps[].name", "%q became step name %q", name, cname)
		}
		item := &yaml.Node{Kind: yaml.MappingNode, HeadComment: "Harbor step " + name + " (" + sdir + "/)."}
		set(item, "name", str(cname))
		if isFile(sdir + "/instruction.md") {
			set(item, "prompt_file", str(sdir+"/instruction.md"))
		} else {
			c.unmapped(at(st.line), sdir+"/instruction.md", "missing: a Harbor step's prompt is its instruction.md")
		}
		if isDir(sdir + "/workdir") {
			set(item, "files", str(sdir+"/workdir"))
			if isFile(sdir + "/workdir/setup.sh") {
				c.problems = append(c.problems, Problem{File: filepath.Join(dir, sdir, "workdir", "setup.sh"), Line: 1, Field: sdir + "/workdir/setup.sh", Unmapped: true,
					Reason: "Harbor runs a step's workdir/setup.sh before its agent and the script removes itself; ceval copies it into the workspace with the step's files and does not run it (the agent sees it, what it prepares is not done)"})
			}
		}
		crit := &yaml.Node{Kind: yaml.MappingNode}
		env := append([]string{}, verifierEnv...)
		timeout := "600s"
		if v, ok := cfg["verifier.timeout_sec"]; ok {
			if f, err := strconv.ParseFloat(v.str, 64); err == nil && f > 0 {
				timeout = strconv.FormatFloat(f, 'f', -1, 64) + "s"
			}
		}
		stepTimeout := -1.0
		if v, ok := cfg["agent.timeout_sec"]; ok {
			if f, err := strconv.ParseFloat(v.str, 64); err == nil && f > 0 {
				stepTimeout = f
			}
		}
		keys := make([]string, 0, len(st.cfg))
		for k := range st.cfg {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := st.cfg[k]
			field := "steps[]." + k
			switch {
			case k == "name":
			case k == "min_reward":
				f, err := strconv.ParseFloat(v.str, 64)
				if err != nil {
					c.unmapped(at(v.line), field, "%s is not a number", v.raw)
					continue
				}
				set(item, "stop_on_failure", scalar("true"))
				set(crit, "pass_threshold", scalar(strconv.FormatFloat(f, 'f', -1, 64)))
				c.note(at(v.line), field, "became stop_on_failure: true with the step's tests' pass_threshold %s: the steps after it are skipped when its reward is below", strconv.FormatFloat(f, 'f', -1, 64))
				if mean && i+1 < len(steps) {
					c.unmapped(at(v.line), field, "with multi_step_reward_strategy mean, Harbor averages the steps that ran; ceval's step_score mean counts a skipped step as 0 (a step never reached earns nothing), so a run stopped here scores lower than in Harbor")
				}
			case strings.HasPrefix(k, "min_reward."):
				c.unmapped(at(v.line), field, "a threshold per named reward: ceval scores a step by its reward (reward.txt, or reward.json's mean) and stops on the step's status; give one number")
			case k == "agent.timeout_sec":
				f, err := strconv.ParseFloat(v.str, 64)
				if err != nil || f <= 0 {
					c.unmapped(at(v.line), field, "not a number of seconds")
					continue
				}
				stepTimeout = f
			case k == "verifier.timeout_sec":
				if f, err := strconv.ParseFloat(v.str, 64); err == nil && f > 0 {
					timeout = strconv.FormatFloat(f, 'f', -1, 64) + "s"
				} else {
					c.unmapped(at(v.line), field, "not a number of seconds: the step's tests get %s", timeout)
				}
			case strings.HasPrefix(k, "verifier.env."):
				name := strings.TrimPrefix(k, "verifier.env.")
				if strings.Contains(v.str, "${") || !envName.MatchString(name) {
					c.unmapped(at(v.line), field, "a value read from the host at run time (%s): ceval's verifier gets nothing from the host; write the value into the step's test.sh", v.raw)
					continue
				}
				env = append(env, "export "+name+"="+shellQuote(v.str)+"; ")
				c.note(at(v.line), field, "carried: exported before the step's test.sh in its verifier's command")
			case strings.HasPrefix(k, "healthcheck."):
				c.unmapped(at(v.line), field, "ceval runs no check between a step's files and its agent: a failing pre-condition shows in the step's grade instead")
			case k == "artifacts" || strings.HasPrefix(k, "artifacts["):
				c.unmapped(at(v.line), field, "%s (each step's snapshot is kept under task_steps/N/)", harborUnmapped["artifacts"])
			default:
				top := strings.TrimSuffix(k, "[]")
				reason, ok := harborUnmapped[top]
				if !ok {
					for prefix, r := range harborUnmapped {
						if strings.HasSuffix(prefix, ".") && strings.HasPrefix(top, prefix) {
							reason, ok = r, true
						}
					}
				}
				if !ok {
					reason = "not a Harbor step setting this importer maps"
				}
				c.unmapped(at(v.line), field, "%s", reason)
			}
		}
		if stepTimeout > 0 {
			total += stepTimeout
		} else {
			timeouts = false
		}
		testSh := ""
		switch {
		case isFile(sdir + "/tests/test.sh"):
			c.problems = append(c.problems, harborStepTestsReach(dir, sdir)...)
			graderFiles = append(graderFiles, sdir+"/tests")
			testSh = "/task/" + sdir + "/tests/test.sh"
		case topTest && isDir(sdir+"/tests"):
			// the task's tests/test.sh, merged into the step's tests (harborStepsCopy)
			c.problems = append(c.problems, harborStepTestsReach(dir, sdir)...)
			graderFiles = append(graderFiles, sdir+"/tests")
			testSh, usedTop = "/task/"+sdir+"/tests/test.sh", true
			c.note(at(st.line), sdir+"/tests", "has no test.sh: the task's tests/test.sh, merged into it as Harbor merges them, verifies the step")
		case topTest:
			if !usedTop && !slices.Contains(graderFiles, "tests") {
				graderFiles = append(graderFiles, "tests")
			}
			testSh, usedTop = cevalHarborTests+"/test.sh", true
			c.note(at(st.line), sdir+"/tests", "missing: the task's tests/test.sh verifies the step, as Harbor gives a step without tests/ the task's")
		}
		if testSh != "" {
			crit.HeadComment = "Harbor's verifier for this step: " + strings.TrimPrefix(testSh, "/task/") + " (the task's tests/ merged in) in a verifier container after the step's agent; the score is the reward it writes."
			set(crit, "type", scalar("run_command"))
			set(crit, "description", str("Harbor tests ("+strings.TrimPrefix(testSh, "/task/")+"); the score is its reward"))
			set(crit, "sandbox", scalar("container"))
			set(crit, "command", str(strings.Join(env, "")+". "+testSh))
			set(crit, "harbor_reward", scalar("true"))
			set(crit, "timeout", scalar(timeout))
			// pass_threshold (min_reward), when set above, goes after the command
			if pt := get(crit, "pass_threshold"); pt != nil {
				var kept []*yaml.Node
				for j := 0; j+1 < len(crit.Content); j += 2 {
					if crit.Content[j].Value != "pass_threshold" {
						kept = append(kept, crit.Content[j], crit.Content[j+1])
					}
				}
				crit.Content = append(kept, scalar("pass_threshold"), pt)
			}
			set(item, "success_criteria", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{crit}})
		} else {
			reason := "no " + sdir + "/tests/test.sh: the step has no verifier"
			c.unmapped(at(st.line), sdir+"/tests", "%s", reason)
			if c.opt.KeepUnmapped {
				set(item, "success_criteria", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{c.placeholder(at(st.line), "harbor tests", reason)}})
			}
		}
		if isFile(sdir + "/solution/solve.sh") {
			set(item, "solution", &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("script"), str(sdir + "/solution/solve.sh")}})
		}
		list.Content = append(list.Content, item)
	}
	if topTest && !usedTop {
		c.unmapped(at(1), "tests/test.sh", "a multi-step task is verified by each step's steps/NAME/tests/test.sh (the top-level tests/ is merged into each): this one does not run by itself")
	}
	if _, ok := cfg["agent.timeout_sec"]; timeouts && total > 0 && (len(steps) > 1 || !ok) {
		sb := get(root, "sandbox")
		if sb == nil {
			sb = &yaml.Node{Kind: yaml.MappingNode}
			set(root, "sandbox", sb)
		}
		lim := get(sb, "limits")
		if lim == nil {
			lim = &yaml.Node{Kind: yaml.MappingNode}
			set(sb, "limits", lim)
		}
		set(lim, "timeout", scalar(strconv.FormatFloat(total, 'f', -1, 64)+"s"))
		c.note(at(steps[0].line), "steps[].agent.timeout_sec", "the steps' agent timeouts, %ss in all, became sandbox.limits.timeout: ceval's time limit spans every step (a step may use what an earlier one left)", strconv.FormatFloat(total, 'f', -1, 64))
	}
	if len(graderFiles) > 0 {
		set(root, "grader_files", strList(graderFiles))
	}
	set(root, "steps", list)
}

// harborStepsCopy finishes a multi-step task's copy in dst: each step's tests, solution and
// instruction get the step's container paths (/tests is the step's merged tests directory,
// /task/steps/NAME/tests), then the task's top-level tests/ files are merged into each
// step's tests where the step has no file of that name, as Harbor merges them.
func harborStepsCopy(src, dst string, steps []harborStep, workdir string) ([]Problem, error) {
	var problems []Problem
	for _, st := range steps {
		name := st.cfg["name"].str
		if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
			continue
		}
		sdir := filepath.Join("steps", name)
		// the task's tests/ as written, merged first: their /tests is the step's merged tests
		merged, err := mergeHarborTests(src, filepath.Join(src, "tests"), filepath.Join(dst, sdir, "tests"), sdir)
		problems = append(problems, merged...)
		if err != nil {
			return problems, err
		}
		paths := harborPaths(workdir)
		for i := range paths {
			if paths[i][0] == harborTests {
				paths[i][1] = "/task/steps/" + name + "/tests"
			}
		}
		ps, err := rewriteHarborPaths(src, dst, []string{filepath.Join(sdir, "tests"), filepath.Join(sdir, "solution"), filepath.Join(sdir, "instruction.md")}, paths)
		problems = append(problems, ps...)
		if err != nil {
			return problems, err
		}
	}
	return problems, nil
}

// mergeHarborTests copies the regular files of the task's tests/ (top) into a step's tests
// copy (to) where the step has no file of that name (links are never followed or made);
// nothing when the step has no tests/ directory (its verifier is the task's own tests/).
func mergeHarborTests(src, top, to, sdir string) ([]Problem, error) {
	var problems []Problem
	if fi, err := os.Lstat(to); err != nil || !fi.IsDir() {
		return nil, nil
	}
	if fi, err := os.Lstat(top); err != nil || !fi.IsDir() {
		return nil, nil
	}
	from, err := os.OpenRoot(top)
	if err != nil {
		return nil, err
	}
	defer from.Close()
	dst, err := os.OpenRoot(to)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	err = fs.WalkDir(from.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		if d.IsDir() {
			if err := dst.Mkdir(p, 0o755); err != nil && !os.IsExist(err) {
				return err
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // links were reported by the copy and not made
		}
		if _, err := dst.Lstat(p); err == nil {
			return nil // the step's own file wins
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := rootfs.CopyFile(from, dst, p, info.Mode().Perm()); err != nil {
			return err
		}
		problems = append(problems, Problem{File: filepath.Join(src, "tests", p), Line: 1, Field: "tests",
			Reason: fmt.Sprintf("merged into %s/tests/%s: Harbor merges the task's tests/ into each step's before verifying it", filepath.ToSlash(sdir), filepath.ToSlash(p))})
		return nil
	})
	return problems, err
}

// harborStepTestsReach holds a step's tests to what the task's own are held to: a test.sh
// line that downloads (unless it reaches a compose service or loopback only), code that
// reaches an internet host or a model provider, a reward written by a program test.sh
// starts; each at its FILE:LINE.
func harborStepTestsReach(dir, sdir string) []Problem {
	var problems []Problem
	testSh := filepath.Join(dir, sdir, "tests", "test.sh")
	data, err := readCapped(testSh)
	if err != nil {
		return nil
	}
	services, _, _ := composeReachInfo(dir)
	handled := map[int]bool{}
	line, what := fetchLine(data, handled)
	for ; line > 0 && (what == "curl" || what == "wget") && localOnly(strings.Split(string(data), "\n")[line-1], services); line, what = fetchLine(data, handled) {
		handled[line] = true
	}
	if line > 0 {
		handled[line] = true
		problems = append(problems, Problem{File: testSh, Line: line, Field: sdir + "/tests/test.sh", Unmapped: true,
			Reason: fmt.Sprintf("installs or downloads at grading time (%s): ceval's verifier container has no network unless the user's config says verifier_network: host: install what the step's tests need into environment/Dockerfile and drop the line", what)})
	}
	_ = walkTextFiles(filepath.Join(dir, sdir, "tests"), func(p string, _ fs.FileMode, data []byte) error {
		if reachCode(p, data) {
			var skip map[int]bool
			if p == testSh {
				skip = handled
			}
			problems = append(problems, reachProblems(p, sdir+"/tests", false, data, services, skip)...)
		}
		return nil
	})
	if file, line := rewardWriter(filepath.Join(dir, sdir), data); file != "" {
		problems = append(problems, Problem{File: file, Line: line, Field: "reward", Unmapped: true,
			Reason: "the step's reward is written by a program its test.sh starts, not by test.sh's own shell: harbor_reward counts only what test.sh's own shell writes (its redirections, an EXIT trap, a script it sources), so this step would score 0: have test.sh write it"})
	}
	return problems
}
