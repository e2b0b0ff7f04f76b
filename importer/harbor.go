package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// tomlValue is one value of the task.toml subset Harbor tasks use: a string, number or
// boolean, a list of strings, or an inline table (kept as text).
type tomlValue struct {
	raw  string
	str  string
	strs []string
	line int
}

// readTOML reads the flat subset of TOML Harbor's task.toml uses: [table] headers and
// key = value lines (strings, numbers, booleans, string arrays, inline tables). A line it
// cannot read is returned as a problem, never skipped.
func readTOML(file string, data []byte) (map[string]tomlValue, []Problem) {
	out := map[string]tomlValue{}
	var problems []Problem
	table := ""
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		n := i + 1
		line := strings.TrimSpace(stripComment(lines[i]))
		// a multi-line array: the lines up to the one that closes it
		if _, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "[") && strings.HasPrefix(strings.TrimSpace(v), "[") {
			for strings.Count(line, "[") > strings.Count(line, "]") && i+1 < len(lines) {
				i++
				line += " " + strings.TrimSpace(stripComment(lines[i]))
			}
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, "[[") && strings.HasSuffix(line, "]]"):
			table = strings.TrimSpace(line[2:len(line)-2]) + "[]" // an array of tables: [[steps]] -> steps[].KEY
			out[table] = tomlValue{line: n}
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			table = strings.TrimSpace(line[1 : len(line)-1])
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				problems = append(problems, Problem{File: file, Line: n, Field: "task.toml", Reason: "not a key = value line this importer reads", Unmapped: true})
				continue
			}
			key := strings.TrimSpace(k)
			if table != "" {
				key = table + "." + key
			}
			val := tomlValue{raw: strings.TrimSpace(v), line: n}
			switch r := val.raw; {
			case strings.HasPrefix(r, `"`):
				s, err := strconv.Unquote(r)
				if err != nil {
					problems = append(problems, Problem{File: file, Line: n, Field: key, Reason: "a string this importer cannot read: " + err.Error(), Unmapped: true})
					continue
				}
				val.str = s
			case strings.HasPrefix(r, "{") && strings.HasSuffix(r, "}"):
				// an inline table: each key = value as KEY.k
				for _, kv := range strings.Split(r[1:len(r)-1], ",") {
					ik, iv, ok := strings.Cut(kv, "=")
					if !ok {
						continue
					}
					sub := tomlValue{raw: strings.TrimSpace(iv), line: n}
					if u, err := strconv.Unquote(sub.raw); err == nil {
						sub.str = u
					} else {
						sub.str = sub.raw
					}
					out[key+"."+strings.Trim(strings.TrimSpace(ik), `"`)] = sub
				}
				continue
			case strings.HasPrefix(r, "[") && strings.HasSuffix(r, "]") && strings.HasPrefix(strings.TrimSpace(r[1:len(r)-1]), "{"):
				// a list of inline tables (Harbor's authors = [{ name = "...", email = "..." }]):
				// each table's key = value as KEY[].k, like an array of tables
				out[key+"[]"] = tomlValue{line: n}
				for _, t := range tomlInlineTable.Regexp().FindAllString(r[1:len(r)-1], -1) {
					for _, kv := range strings.Split(t[1:len(t)-1], ",") {
						if ik, iv, ok := strings.Cut(kv, "="); ok {
							sub := tomlValue{raw: strings.TrimSpace(iv), line: n}
							if u, err := strconv.Unquote(sub.raw); err == nil {
								sub.str = u
							} else {
								sub.str = sub.raw
							}
							out[key+"[]."+strings.Trim(strings.TrimSpace(ik), `"`)] = sub
						}
					}
				}
				continue
			case strings.HasPrefix(r, "[") && strings.HasSuffix(r, "]"):
				for _, item := range strings.Split(r[1:len(r)-1], ",") {
					if item = strings.TrimSpace(item); item == "" {
						continue
					}
					s, err := strconv.Unquote(item)
					if err != nil {
						problems = append(problems, Problem{File: file, Line: n, Field: key, Reason: "a list of strings this importer cannot read", Unmapped: true})
						break
					}
					val.strs = append(val.strs, s)
				}
			default:
				val.str = r
			}
			out[key] = val
		}
	}
	return out, problems
}

// tomlInlineTable is one inline table of a list of them (no nested braces).
var tomlInlineTable = lazyregexp.New(`\{[^{}]*\}`)

func stripComment(line string) string {
	in := false
	for i, c := range line {
		switch {
		case c == '"' && (i == 0 || line[i-1] != '\\'):
			in = !in
		case c == '#' && !in:
			return line[:i]
		}
	}
	return line
}

var notID = lazyregexp.New(`[^a-z0-9_-]+`)

// Harbor converts one Harbor / Terminal-Bench 2 task directory (task.toml, instruction.md,
// environment/, tests/, solution/) into a ceval task: its YAML and the problems. The tests
// become grader_files and a run_command in a verifier container whose score is the reward
// tests/test.sh writes (ImportHarbor rewrites the container paths in the copied files).
func Harbor(dir string, opt Options) (Result, error) {
	tomlPath := filepath.Join(dir, "task.toml")
	data, err := readCapped(tomlPath)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %v (a Harbor task directory holds task.toml)", dir, err)
	}
	cfg, problems := readTOML(tomlPath, data)
	var steps []harborStep // a multi-step task's [[steps]] (harborsteps.go)
	if _, ok := cfg["steps[]"]; ok {
		steps, _ = readHarborSteps(tomlPath, data) // readTOML reported its unreadable lines
	}
	c := &conv{file: tomlPath, opt: opt, problems: problems}
	at := func(key string) *yaml.Node { return &yaml.Node{Line: max(cfg[key].line, 1)} }
	exists := func(rel string) bool {
		fi, err := os.Lstat(filepath.Join(dir, rel))
		return err == nil && fi.Mode().IsRegular()
	}
	id := strings.Trim(notID.ReplaceAllString(strings.ToLower(filepath.Base(filepath.Clean(dir))), "-"), "-_")
	root := &yaml.Node{Kind: yaml.MappingNode, HeadComment: "Imported from the Harbor task " + filepath.Base(filepath.Clean(dir)) + " by ceval import harbor."}
	set(root, "task_id", str(id))
	desc := "Harbor task " + filepath.Base(filepath.Clean(dir))
	if d := cfg["task.description"].str; d != "" {
		desc = d
	}
	if d := cfg["metadata.difficulty"].str; d != "" {
		desc += " (" + d + ")"
	}
	if name := cfg["task.name"].str; name != "" {
		root.HeadComment += "\nHarbor package " + name + "."
	}
	set(root, "description", str(desc))
	var tags []string
	tags = append(tags, cfg["metadata.tags"].strs...)
	tags = append(tags, cfg["task.keywords"].strs...)
	if cat := cfg["metadata.category"].str; cat != "" {
		tags = append(tags, cat)
	}
	if len(tags) > 0 {
		set(root, "tags", strList(tags))
	}
	if len(steps) > 0 {
		// each step's prompt is its own (harborMultiStep)
	} else if !exists("instruction.md") {
		c.unmapped(&yaml.Node{Line: 1}, "instruction.md", "missing: a Harbor task's prompt is instruction.md")
	} else {
		set(root, "initial_prompt_file", str("instruction.md"))
	}
	sb := &yaml.Node{Kind: yaml.MappingNode}
	lim := &yaml.Node{Kind: yaml.MappingNode}
	switch {
	case cfg["environment.docker_image"].str != "":
		set(sb, "image", str(cfg["environment.docker_image"].str))
	case exists("environment/Dockerfile"):
		df, _ := readCapped(filepath.Join(dir, "environment", "Dockerfile"))
		if base := dockerBaseOnly(df); base != "" {
			set(sb, "image", str(base))
			c.note(&yaml.Node{Line: 1}, "environment/Dockerfile", "became sandbox.image %s, its only FROM (it builds nothing else; its WORKDIR is /workspace): runs pull it when missing and pin its digest", base)
			break
		}
		image := "harbor/" + id + ":latest"
		set(sb, "image", str(image))
		c.note(&yaml.Node{Line: 1}, "environment/Dockerfile", "became sandbox.image %s: build it first with ceval images build %s -f %s", image, strings.TrimSuffix(image, ":latest"), filepath.Join(dir, "environment", "Dockerfile"))
	default:
		c.note(&yaml.Node{Line: 1}, "environment", "no Dockerfile and no docker_image: the task runs in ceval's default image")
	}
	var facts dockerfileFacts
	dfPath := filepath.Join(dir, "environment", "Dockerfile")
	if exists("environment/Dockerfile") {
		if df, err := readCapped(dfPath); err == nil {
			facts = readDockerfile(df)
		}
	}
	outputs, outputNotes, err := harborOutputs(dir, facts.workdir)
	if err != nil {
		return Result{}, err
	}
	if len(outputs) > 0 {
		set(sb, "outputs", strList(outputs))
		for _, o := range outputs {
			c.problems = append(c.problems, outputNotes[o])
		}
	}
	if len(facts.envKeys) > 0 {
		c.problems = append(c.problems, Problem{File: dfPath, Line: facts.envLine, Field: "ENV",
			Reason: fmt.Sprintf("%s: the image's ENV applies to the agent, its steps and the verifier (ceval's own variables, proxies and model-provider settings excepted; values naming the WORKDIR point at /workspace)", strings.Join(facts.envKeys, ", "))})
	}
	if script := entrypointScript(filepath.Join(dir, "environment"), facts); script != "" && facts.entrypoint != "" {
		if why := entrypointCannotRun(script); len(why) > 0 {
			c.problems = append(c.problems, Problem{File: dfPath, Line: facts.entrypointLine, Field: "ENTRYPOINT", Unmapped: true,
				Reason: fmt.Sprintf("%s cannot run in ceval: %s; the task runs without it (its tests will likely fail)", facts.entrypoint, strings.Join(why, "; "))})
			facts.entrypoint = ""
		}
	}
	if facts.entrypoint != "" {
		set(root, "setup", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{
			{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("run"), str(facts.entrypoint), scalar("timeout"), scalar("300s")}},
		}})
		c.problems = append(c.problems, Problem{File: dfPath, Line: facts.entrypointLine, Field: "ENTRYPOINT",
			Reason: "became a setup step: it runs once, to its end, before the agent (as the agent's user, in a container of its own over the same workspace and outputs); a server that must keep running while the agent works cannot run so: declare it in services: instead (see Services in ceval's docs/tasks.md)"})
	}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var verifierEnv []string
	for _, key := range keys {
		v := cfg[key]
		switch {
		case len(steps) > 0 && (key == "multi_step_reward_strategy" || key == "steps[]" || strings.HasPrefix(key, "steps[].") || strings.HasPrefix(key, "steps.")):
			// each step's keys (harborMultiStep)
		case key == "multi_step_reward_strategy":
			c.note(at(key), key, "only for a task with [[steps]]: nothing to carry")
		case key == "version" || key == "schema_version":
			// the format's own version: nothing to carry
		case key == "metadata.difficulty" || key == "metadata.category" || key == "metadata.tags" || key == "environment.docker_image" ||
			key == "task.description" || key == "task.keywords" || key == "task.name" || key == "verifier.timeout_sec":
			// carried above or below
		case key == "agent.timeout_sec":
			if f, err := strconv.ParseFloat(v.str, 64); err == nil && f > 0 {
				set(lim, "timeout", scalar(strconv.FormatFloat(f, 'f', -1, 64)+"s"))
			} else {
				c.unmapped(at(key), key, "not a number of seconds")
			}
		case key == "environment.cpus":
			set(lim, "cpus", scalar(v.str))
		case key == "environment.memory_mb":
			set(lim, "memory_mb", scalar(v.str))
		case key == "environment.storage_mb":
			set(lim, "disk_mb", scalar(v.str))
		case key == "environment.memory" || key == "environment.storage":
			mb, err := harborSizeMB(v.str)
			if err != nil {
				c.unmapped(at(key), key, "%v", err)
				continue
			}
			to := map[string]string{"environment.memory": "memory_mb", "environment.storage": "disk_mb"}[key]
			if cfg[key+"_mb"].raw == "" {
				set(lim, to, scalar(strconv.Itoa(mb)))
			}
			c.note(at(key), key, "%q became sandbox.limits.%s: %d", v.str, to, mb)
		case key == "environment.build_timeout_sec":
			c.note(at(key), key, "dropped: ceval images build has its own timeout")
		case key == "environment.allow_internet" && v.str == "false", key == "environment.network_mode" && v.str == "no-network",
			key == "agent.network_mode" && v.str == "no-network":
			// ceval's sandbox has no network: the same
		case key == "environment.allow_internet", key == "environment.network_mode" && v.str == "public", key == "agent.network_mode" && v.str == "public":
			// reported once below
		case key == "environment.mcp_servers" && v.raw == "[]":
			c.note(at(key), key, "empty: nothing to carry")
		case strings.HasPrefix(key, "environment.mcp_servers[]"):
			// each entry is mapped (or reported) by harborMCP (harbormcp.go)
		case key == "environment.gpus" && (v.str == "0" || v.str == ""):
			// no GPU: ceval's too
		case strings.HasPrefix(key, "verifier.env."):
			name := strings.TrimPrefix(key, "verifier.env.")
			if strings.Contains(v.str, "${") || !envName.MatchString(name) {
				c.unmapped(at(key), key, "a value read from the host at run time (%s): ceval's verifier gets nothing from the host; write the value into tests/test.sh", v.raw)
				continue
			}
			verifierEnv = append(verifierEnv, "export "+name+"="+shellQuote(v.str)+"; ")
			c.note(at(key), key, "carried: exported before tests/test.sh in the verifier's command")
		case strings.HasPrefix(key, "metadata."):
			c.note(at(key), key, "metadata with no effect on the run: dropped")
		case key == "source" || strings.HasPrefix(key, "task.authors"):
			c.note(at(key), key, "metadata with no effect on the run: dropped")
		default:
			reason, ok := harborUnmapped[key]
			if !ok {
				for prefix, r := range harborUnmapped {
					if strings.HasSuffix(prefix, ".") && strings.HasPrefix(key, prefix) {
						reason, ok = r, true
					}
				}
			}
			if !ok {
				reason = "not a Harbor task setting this importer maps"
			}
			c.unmapped(at(key), key, "%s", reason)
		}
	}
	if !harborNoNetwork(cfg) {
		k := "environment.allow_internet"
		if _, set := cfg[k]; !set {
			k = "environment.network_mode"
		}
		c.note(at(k), "environment.allow_internet", "Harbor gives the agent the internet unless allow_internet = false; ceval's sandbox has none (model calls go through ceval's gateway): if the task needs the internet, add sandbox.network: host and run with --allow-host-network")
	}
	if len(lim.Content) > 0 {
		set(sb, "limits", lim)
	}
	if len(sb.Content) > 0 {
		set(root, "sandbox", sb)
	}
	for _, f := range []string{"environment/docker-compose.yaml", "environment/docker-compose.yml", "environment/compose.yaml", "tests/docker-compose.yaml", "tests/docker-compose.yml", "tests/Dockerfile"} {
		if f != HarborComposeFile && exists(f) {
			c.unmapped(&yaml.Node{Line: 1}, f, "ceval runs the agent in one container and the verifier in one from the task's image: a compose file's services (or a verifier image of its own) are not started; fold what the task needs into environment/Dockerfile, or run the services from a setup step")
		}
	}
	handled := map[int]bool{} // lines of test.sh rewritten or reported: harborReach leaves them
	if data, err := readCapped(filepath.Join(dir, "tests", "test.sh")); err == nil {
		// The Terminal-Bench preamble's lines and its uvx/uv calls are rewritten in the copy
		// (rewriteTBPreamble); an apt-get of more than its tools still needs the network.
		_, guarded, calls, _ := tbRewrite(string(data))
		for _, n := range append(guarded, calls...) {
			handled[n] = true
		}
		// a curl or wget of a compose service or loopback only (http://api:8000/) needs no network
		services, _, _ := composeReachInfo(dir)
		line, what := fetchLine(data, handled)
		for ; line > 0 && (what == "curl" || what == "wget") && localOnly(strings.Split(string(data), "\n")[line-1], services); line, what = fetchLine(data, handled) {
			handled[line] = true
		}
		if line > 0 {
			handled[line] = true
			c.problems = append(c.problems, Problem{File: filepath.Join(dir, "tests", "test.sh"), Line: line, Field: "tests/test.sh", Unmapped: true,
				Reason: fmt.Sprintf("installs or downloads at grading time (%s), as Harbor's verifier may (it has the network and root): ceval's verifier container has no network unless the user's config says verifier_network: host, so the tests would fail: install what they need into environment/Dockerfile and drop the line", what)})
		}
		if file, line := rewardWriter(dir, data); file != "" && filepath.Base(file) == "test.sh" && inlineRewardAt(data, line) {
			c.problems = append(c.problems, Problem{File: file, Line: line, Field: "reward",
				Reason: "the reward is opened by the python3 -c program test.sh starts here: rewritten in the copy so the program prints it (open(1, 'w')) and test.sh's own shell redirects it into the reward, which harbor_reward counts"})
		} else if file != "" && filepath.Base(file) == "test.sh" {
			c.problems = append(c.problems, Problem{File: file, Line: line, Field: "reward", Unmapped: true,
				Reason: "the reward is opened by a program test.sh starts here (python3 -c, a heredoc), not by a redirection of its own shell: harbor_reward counts only what test.sh's own shell writes (the program's open fails), so this task would score 0: have the program print the reward and test.sh redirect it (python3 -c '...print(json.dumps(r))' > /logs/verifier/reward.json)"})
		} else if file != "" {
			c.problems = append(c.problems, Problem{File: file, Line: line, Field: "reward", Unmapped: true,
				Reason: "writes the reward, as a program tests/test.sh starts: harbor_reward counts only what test.sh's own shell writes (its redirections, an EXIT trap, a script it sources), so this task would score 0: have test.sh write it (python3 score.py > /logs/verifier/reward.txt) or source the script (. /tests/FILE)"})
		}
	}
	if exists(HarborComposeFile) {
		if data, err := readCapped(filepath.Join(dir, HarborComposeFile)); err != nil {
			c.unmapped(&yaml.Node{Line: 1}, HarborComposeFile, "unreadable: %v", err)
		} else {
			svcs, problems := composeServices(dir, id, data, opt)
			c.problems = append(c.problems, problems...)
			if svcs != nil {
				set(root, "services", svcs)
			}
		}
	}
	if data, err := readCapped(tomlPath); err == nil {
		image := ""
		if n := get(get(root, "sandbox"), "image"); n != nil {
			image = n.Value
		}
		c.harborMCP(harborMCPEntries(data), root, image) // harbormcp.go
	}
	c.problems = append(c.problems, harborReach(dir, handled)...)
	if exists("solution/solve.sh") {
		set(root, "solution", &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("script"), str("solution/solve.sh")}})
	}
	if len(steps) > 0 {
		c.harborMultiStep(dir, cfg, steps, root, verifierEnv)
		out, err := encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}})
		return Result{Output: out, Problems: c.problems}, err
	}
	criteria := &yaml.Node{Kind: yaml.SequenceNode}
	if exists("tests/test.sh") {
		set(root, "grader_files", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{str("tests")}})
		crit := &yaml.Node{Kind: yaml.MappingNode, HeadComment: "Harbor's verifier: tests/test.sh in a verifier container after the agent is gone; the score is the reward it writes."}
		set(crit, "type", scalar("run_command"))
		set(crit, "description", str("Harbor tests (tests/test.sh); the score is its reward"))
		set(crit, "sandbox", scalar("container"))
		set(crit, "command", str(strings.Join(verifierEnv, "")+HarborVerifierCommand))
		set(crit, "harbor_reward", scalar("true"))
		if reached, notes := harborTestServices(dir, get(root, "services")); len(reached) > 0 {
			set(crit, "services", strList(reached)) // harborverifyservices.go
			c.problems = append(c.problems, notes...)
		}
		timeout := "600s" // Harbor's default verifier timeout
		if v, ok := cfg["verifier.timeout_sec"]; ok {
			if f, err := strconv.ParseFloat(v.str, 64); err == nil && f > 0 {
				timeout = strconv.FormatFloat(f, 'f', -1, 64) + "s"
			} else {
				c.unmapped(at("verifier.timeout_sec"), "verifier.timeout_sec", "not a number of seconds: the tests get Harbor's default, 600s")
			}
		}
		set(crit, "timeout", scalar(timeout))
		crit, notes := harborHardened(crit, dir, cfg, verifierEnv) // harborpytestgrade.go: the standard pytest test.sh, hardened
		c.problems = append(c.problems, notes...)
		criteria.Content = append(criteria.Content, crit)
	} else {
		reason := "no tests/test.sh: the task has no verifier"
		c.unmapped(&yaml.Node{Line: 1}, "tests", "%s", reason)
		if opt.KeepUnmapped {
			criteria.Content = append(criteria.Content, c.placeholder(&yaml.Node{Line: 1}, "harbor tests", reason))
		}
	}
	set(root, "success_criteria", criteria)
	out, err := encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}})
	if err != nil {
		return Result{}, err
	}
	return Result{Output: out, Problems: c.problems}, nil
}

// ImportHarbor converts each Harbor task directory into outDir/<its name>/: the directory's
// files copied (links reported, never followed) and task.yaml written beside them, then
// validated.
func ImportHarbor(dirs []string, outDir string, opt Options) ([]FileResult, error) {
	var results []FileResult
	for _, dir := range dirs {
		r, err := Harbor(dir, opt)
		if err != nil {
			return results, err
		}
		dst := filepath.Join(outDir, filepath.Base(filepath.Clean(dir)))
		copied, err := importTree(dir, dst, dst, func(string) bool { return false }, opt) // dst: YAML files copied too (tests/*.yaml, environment/docker-compose.yaml)
		if err != nil {
			return results, err
		}
		for _, cr := range copied {
			r.Problems = append(r.Problems, cr.Problems...) // links
		}
		workdir := ""
		if df, err := readCapped(filepath.Join(dir, "environment", "Dockerfile")); err == nil {
			workdir = dockerWorkdir(df)
		}
		paths := harborPaths(workdir)
		notes, err := rewriteHarborPaths(dir, dst, []string{"tests", "solution", "instruction.md"}, paths)
		if err != nil {
			return results, err
		}
		r.Problems = append(r.Problems, notes...)
		notes, err = rewriteTBPreamble(dir, dst)
		if err != nil {
			return results, err
		}
		// harborpytestgrade.go: no preamble notes for a test.sh graded as hardened pytest
		r.Problems = append(r.Problems, hardenedPreambleNotes(r.Problems, notes)...)
		if _, err := rewriteInlineReward(dst); err != nil { // harborinlinereward.go
			return results, err
		}
		if data, err := readCapped(filepath.Join(dir, "task.toml")); err == nil {
			if steps, _ := readHarborSteps(filepath.Join(dir, "task.toml"), data); len(steps) > 0 {
				notes, err = harborStepsCopy(dir, dst, steps, workdir) // harborsteps.go
				if err != nil {
					return results, err
				}
				r.Problems = append(r.Problems, notes...)
			}
		}
		out := filepath.Join(dst, "task.yaml")
		if err := os.WriteFile(out, r.Output, 0o644); err != nil {
			return results, err
		}
		fr := FileResult{Input: filepath.Join(dir, "task.toml"), Output: out, Result: r}
		if _, verr := loadTask(out); verr != nil {
			fr.Invalid = verr
		}
		results = append(results, fr)
	}
	return results, nil
}

// harborUnmapped says, per task.toml key (or table prefix ending in "."), why ceval cannot
// carry it and what to do instead.
var harborUnmapped = map[string]string{
	"verifier.user":             "ceval's verifier runs tests/test.sh as an unprivileged user, never root: install what test.sh installs (apt-get, pip, uv) into the image instead",
	"verifier.network_mode":     "ceval's verifier has no network: bake what tests/test.sh downloads into the image",
	"verifier.allowed_hosts":    "ceval's verifier has no network: bake what tests/test.sh downloads into the image",
	"verifier.environment_mode": "ceval's verifier always runs in a fresh container from the task's image, after the agent's is gone",
	"verifier.environment.":     "ceval's verifier always runs in a fresh container from the task's image: a verifier environment of its own is not built",
	"verifier.collect[].":       "ceval copies only the workspace out of the agent's container: run the collect command in an after_agent step that writes into /workspace",
	"agent.user":                "ceval runs the agent as UID 2000, never root: give the image what the task needs at build time",
	"agent.allowed_hosts":       "ceval's sandbox has no network (loopback only): an allowlist has no equivalent",
	"agent.network_mode":        "ceval's sandbox has no network (loopback only): an allowlist has no equivalent",
	"environment.network_mode":  "ceval's sandbox has no network (loopback only): an allowlist has no equivalent",
	"environment.allowed_hosts": "ceval's sandbox has no network (loopback only): an allowlist has no equivalent",
	"environment.gpus":          "ceval gives containers no GPU: the task cannot run as written",
	"environment.gpu_types":     "ceval gives containers no GPU: the task cannot run as written",
	"environment.mcp_servers":   "an MCP server list this importer does not read: write each server as an [[environment.mcp_servers]] table",
	"environment.env.":          "the environment's variables are resolved from the host at run time in Harbor; ceval passes only agent.env_passthrough, named by the user: list them there",
	"environment.skills_dir":    "give the skills as a plugin (plugins: [{path}]) beside the task",
	"environment.healthcheck.":  "ceval starts no service from the image: run the service and wait for its health in a setup step",
	"environment.workdir":       "the agent's workspace is always /workspace in ceval",
	"solution.env.":             "ceval runs solution/solve.sh with no environment from the task: export the values at the top of solve.sh",
	"artifacts":                 "ceval keeps the workspace snapshot only: copy the artifact into /workspace in an after_agent step",
	"artifacts[]":               "ceval keeps the workspace snapshot only: copy the artifact into /workspace in an after_agent step",
	"artifacts[].":              "ceval keeps the workspace snapshot only: copy the artifact into /workspace in an after_agent step",
	"multi_step_reward_mode":    "not a key of Harbor's task.toml (its multi-step reward is multi_step_reward_strategy: mean or final)",
}

// harborMCPReason is why an [[environment.mcp_servers]] entry is not carried: its mapping
// onto an MCP service (harbormcp.go) found a problem, which the entry's own lines name.
const harborMCPReason = "an MCP server entry this importer could not map (see the entry's own problems)"

// mcpServer describes the (last) [[environment.mcp_servers]] entry: its keys as KEY=VALUE.
func mcpServer(cfg map[string]tomlValue) []string {
	var out []string
	for k, v := range cfg {
		if sub, ok := strings.CutPrefix(k, "environment.mcp_servers[]."); ok {
			out = append(out, sub+"="+v.str)
		}
	}
	sort.Strings(out)
	return out
}

// envName is a variable name a shell export takes.
var envName = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// harborNoNetwork says the task.toml takes the internet from the agent (allow_internet = false
// or network_mode = "no-network"), as ceval's sandbox always does.
func harborNoNetwork(cfg map[string]tomlValue) bool {
	if m := cfg["environment.network_mode"].str; m != "" {
		return m == "no-network"
	}
	return cfg["environment.allow_internet"].str == "false"
}

// harborSizeMB reads Harbor's deprecated memory/storage sizes ("2G", "512M") in MB.
func harborSizeMB(s string) (int, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	mult := map[byte]float64{'G': 1024, 'M': 1, 'K': 1.0 / 1024}
	if u == "" || mult[u[len(u)-1]] == 0 {
		return 0, fmt.Errorf("%q is not a size like 2G or 512M", s)
	}
	f, err := strconv.ParseFloat(u[:len(u)-1], 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%q is not a size like 2G or 512M", s)
	}
	return int(f * mult[u[len(u)-1]]), nil
}

// fetchCommand matches a shell line that installs or downloads (curl, wget, apt-get install,
// pip install, uv, npm install, go install...).
var fetchCommand = lazyregexp.New(`(^|[\s;|&(])(curl|wget|apt-get install|apt install|apk add|pip3? install|python3? -m pip install|uv (pip|venv|run|sync|tool|add)|uvx|npm (install|i|ci)|npx|go (get|install))(\s|$)`)

// fetchLine is the first line of a shell script that installs or downloads, and what it runs;
// 0 when none does (comments and the lines in skip, 1-based, skipped).
func fetchLine(script []byte, skip map[int]bool) (int, string) {
	for i, line := range strings.Split(string(script), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || skip[i+1] {
			continue
		}
		if m := fetchCommand.FindStringSubmatch(line); m != nil {
			return i + 1, m[2]
		}
	}
	return 0, ""
}

// rewardRedirect matches a shell redirection into reward.txt or reward.json.
var rewardRedirect = lazyregexp.New(`>\s*["']?\S*reward\.(txt|json)`)

// rewardSourced matches a script test.sh runs in its own shell (. FILE, source FILE).
var rewardSourced = lazyregexp.New(`(?m)^\s*(?:\.|source)\s+["']?(\S+?)["']?\s*$`)

// rewardWriter finds, for a Harbor task whose tests/test.sh (data) writes no reward itself,
// the line of test.sh (an inline program: python3 -c "...") or the other file of tests/ that
// names reward.txt or reward.json: the reward is then written by a program test.sh starts, which harbor_reward never counts. It returns that file and
// the line naming the reward ("" when test.sh, or a script it sources, redirects into one).
func rewardWriter(dir string, data []byte) (string, int) {
	tests := filepath.Join(dir, "tests")
	own := []string{string(data)}
	for _, m := range rewardSourced.FindAllStringSubmatch(string(data), -1) {
		if b, err := readCapped(filepath.Join(tests, filepath.Base(m[1]))); err == nil {
			own = append(own, string(b))
		}
	}
	for _, text := range own {
		if rewardRedirect.MatchString(text) || strings.Contains(text, "trap ") {
			return "", 0
		}
	}
	// a program test.sh starts inline (python3 -c "...", a heredoc) that opens the reward
	for i, line := range strings.Split(string(data), "\n") {
		if t := strings.TrimSpace(line); !strings.HasPrefix(t, "#") && (strings.Contains(t, "reward.txt") || strings.Contains(t, "reward.json")) {
			return filepath.Join(tests, "test.sh"), i + 1
		}
	}
	ents, err := os.ReadDir(tests)
	if err != nil {
		return "", 0
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "test.sh" {
			continue
		}
		b, err := readCapped(filepath.Join(tests, e.Name()))
		if err != nil {
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "reward.txt") || strings.Contains(line, "reward.json") {
				return filepath.Join(tests, e.Name()), i + 1
			}
		}
	}
	return "", 0
}
