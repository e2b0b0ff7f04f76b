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
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.TrimSpace(stripComment(line))
		switch {
		case line == "":
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
	c := &conv{file: tomlPath, opt: opt, problems: problems}
	at := func(key string) *yaml.Node { return &yaml.Node{Line: cfg[key].line} }
	exists := func(rel string) bool {
		fi, err := os.Lstat(filepath.Join(dir, rel))
		return err == nil && fi.Mode().IsRegular()
	}
	id := strings.Trim(notID.ReplaceAllString(strings.ToLower(filepath.Base(filepath.Clean(dir))), "-"), "-_")
	root := &yaml.Node{Kind: yaml.MappingNode, HeadComment: "Imported from the Harbor task " + filepath.Base(filepath.Clean(dir)) + " by ceval import harbor."}
	set(root, "task_id", str(id))
	desc := "Harbor task " + filepath.Base(filepath.Clean(dir))
	if d := cfg["metadata.difficulty"].str; d != "" {
		desc += " (" + d + ")"
	}
	set(root, "description", str(desc))
	var tags []string
	tags = append(tags, cfg["metadata.tags"].strs...)
	if cat := cfg["metadata.category"].str; cat != "" {
		tags = append(tags, cat)
	}
	if len(tags) > 0 {
		set(root, "tags", strList(tags))
	}
	if !exists("instruction.md") {
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
		image := "harbor/" + id + ":latest"
		set(sb, "image", str(image))
		c.note(&yaml.Node{Line: 1}, "environment/Dockerfile", "became sandbox.image %s: build it first with ceval images build %s -f %s", image, strings.TrimSuffix(image, ":latest"), filepath.Join(dir, "environment", "Dockerfile"))
	default:
		c.note(&yaml.Node{Line: 1}, "environment", "no Dockerfile and no docker_image: the task runs in ceval's default image")
	}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		v := cfg[key]
		switch key {
		case "version", "metadata.author_name", "metadata.author_email", "metadata.difficulty", "metadata.category", "metadata.tags", "environment.docker_image":
		case "agent.timeout_sec":
			if f, err := strconv.ParseFloat(v.str, 64); err == nil && f > 0 {
				set(lim, "timeout", scalar(strconv.FormatFloat(f, 'f', -1, 64)+"s"))
			} else {
				c.unmapped(at(key), key, "not a number of seconds")
			}
		case "environment.cpus":
			set(lim, "cpus", scalar(v.str))
		case "environment.memory_mb":
			set(lim, "memory_mb", scalar(v.str))
		case "environment.storage_mb":
			set(lim, "disk_mb", scalar(v.str))
		case "environment.build_timeout_sec":
			c.note(at(key), key, "ceval images build has its own timeout")
		case "verifier.timeout_sec":
			// the tests' criterion's timeout, set below
		case "verifier.env":
			c.unmapped(at(key), key, "the verifier container gets no environment from the task; set what the tests need in tests/test.sh")
		default:
			c.unmapped(at(key), key, "not a Harbor task setting this importer maps")
		}
	}
	if len(lim.Content) > 0 {
		set(sb, "limits", lim)
	}
	if len(sb.Content) > 0 {
		set(root, "sandbox", sb)
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
	if exists("solution/solve.sh") {
		set(root, "solution", &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("script"), str("solution/solve.sh")}})
	}
	criteria := &yaml.Node{Kind: yaml.SequenceNode}
	if exists("tests/test.sh") {
		set(root, "grader_files", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{str("tests")}})
		crit := &yaml.Node{Kind: yaml.MappingNode, HeadComment: "Harbor's verifier: tests/test.sh in a verifier container after the agent is gone; the score is the reward it writes."}
		set(crit, "type", scalar("run_command"))
		set(crit, "description", str("Harbor tests (tests/test.sh); the score is its reward"))
		set(crit, "sandbox", scalar("container"))
		set(crit, "command", str(HarborVerifierCommand))
		set(crit, "score_from_stdout", scalar("true"))
		timeout := "600s" // Harbor's default verifier timeout
		if v, ok := cfg["verifier.timeout_sec"]; ok {
			if f, err := strconv.ParseFloat(v.str, 64); err == nil && f > 0 {
				timeout = strconv.FormatFloat(f, 'f', -1, 64) + "s"
			} else {
				c.unmapped(at("verifier.timeout_sec"), "verifier.timeout_sec", "not a number of seconds: the tests get Harbor's default, 600s")
			}
		}
		set(crit, "timeout", scalar(timeout))
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
		copied, err := importTree(dir, dst, "", func(string) bool { return false }, opt)
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
