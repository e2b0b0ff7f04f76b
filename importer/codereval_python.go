package importer

import (
	pathpkg "path"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
	"ceval.dev/ceval/task"
)

// importCheckScript is coder_eval's import_check as a Python check: it parses the file
// (argv[1]) and asks importlib for every absolute import anywhere in it, without running the
// file; the first line printed is the score (resolved / imports; 1 with no imports, 0 when
// the file is missing or does not parse), the second says which did not resolve.
const importCheckScript = `import ast, importlib.util, sys
path = sys.argv[1]
try:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
except (OSError, SyntaxError, ValueError) as e:
    print(0)
    print("%s: %s" % (path, e))
    sys.exit(0)
names = []
for node in ast.walk(tree):
    if isinstance(node, ast.Import):
        names += [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        names.append(node.module)
names = list(dict.fromkeys(names))
def found(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
missing = [n for n in names if not found(n)]
print((len(names) - len(missing)) / len(names) if names else 1)
print("unresolved: " + ", ".join(missing) if missing else "%d imports resolve" % len(names))
`

// taskDirRef finds $TASK_DIR and ${TASK_DIR} in a command, each with the path after it.
var taskDirRef = lazyregexp.New(`\$(?:TASK_DIR\b|\{TASK_DIR\})(/[^\s'";|&)<>]*)?`)

// taskDirFiles returns the task-directory entries a command names through $TASK_DIR (the
// first component of each path after it, which becomes a grader file at /task), and whether
// it names the directory itself, which ceval never exposes whole.
func taskDirFiles(command string) (files []string, whole bool) {
	for _, m := range taskDirRef.FindAllStringSubmatch(command, -1) {
		first, _, _ := strings.Cut(strings.TrimPrefix(m[1], "/"), "/")
		if first == "" || first == "." || first == ".." {
			whole = true
			continue
		}
		if !contains(files, first) {
			files = append(files, first)
		}
	}
	return files, whole
}

// pythonCriterion rewrites coder_eval's pytest and import_check into ceval criteria in
// place and returns the fields they keep, or why they cannot map.
func (c *conv) pythonCriterion(item *yaml.Node, what, typ string) (keep []string, reason string) {
	timeout := get(item, "timeout")
	path := get(item, "path")
	for i := 0; i+1 < len(item.Content); i += 2 {
		switch k := item.Content[i]; k.Value {
		case "type", "description", "weight", "pass_threshold", "timeout", "path", "args":
		default:
			c.unmapped(k, what+"."+k.Value, "not a field of coder_eval's %s this importer maps", typ)
		}
	}
	var cmd string
	switch typ {
	case "pytest":
		p := "."
		if path != nil {
			p = path.Value
		}
		if tests := c.templateCopy(p); tests != "" {
			return c.templatePytest(item, what, tests, timeout)
		}
		cmd = "python3 -m pytest -q -p no:cacheprovider " + shellQuote(p)
		for _, a := range strValues(get(item, "args")) {
			cmd += " " + shellQuote(a)
		}
		if timeout == nil {
			timeout = scalar("60") // coder_eval's default
		}
		set(item, "sandbox", scalar(task.TierContainer))
		c.note(item, what+" (pytest)", "became a run_command in a verifier container (the task's image, which needs python3 and pytest): "+
			"the tests are in the agent's workspace, which ceval's pytest criterion (tests from the task's directory) does not take; it passes when pytest exits 0, where coder_eval scored passed/run")
	case "import_check":
		if path == nil || path.Value == "" {
			return nil, "import_check needs path (the Python file whose imports are checked)"
		}
		cmd = "python3 -c " + shellQuote(importCheckScript) + " " + shellQuote(path.Value)
		set(item, "score_from_stdout", scalar("true"))
		if c.thirdParty {
			set(item, "sandbox", scalar(task.TierContainer))
			c.note(item, what+" (import_check)", "became a Python check in a verifier container: the imports resolve against the task's image, where its packages are installed")
		} else {
			c.note(item, what+" (import_check)", "became a Python check in the WASM sandbox (standard library and the workspace: the task installs no packages)")
		}
	}
	get(item, "type").Value = "run_command"
	del(item, "path")
	del(item, "args")
	set(item, "command", str(cmd))
	if timeout != nil {
		set(item, "timeout", seconds(timeout))
	}
	return []string{"command", "timeout", "sandbox", "score_from_stdout"}, ""
}

// runCommandTier sends a run_command that calls a program only an image has (npm, go,
// dotnet, bash...) to a verifier container, and gives one that reads $TASK_DIR the files it
// names as grader files; it returns why the command cannot map, or "".
func (c *conv) runCommandTier(item *yaml.Node, what string) string {
	cmd := get(item, "command")
	if cmd == nil {
		return ""
	}
	files, whole := taskDirFiles(cmd.Value)
	if whole {
		return "the command names the task's directory itself ($TASK_DIR): ceval shows criteria only the files named in grader_files; name them ($TASK_DIR/checks/x.py)"
	}
	for _, f := range files {
		if !contains(c.graderFiles, f) {
			c.graderFiles = append(c.graderFiles, f)
		}
	}
	if len(files) > 0 {
		c.note(cmd, what+".command", "reads $TASK_DIR: %s became grader_files, read-only at /task (TASK_DIR=/task), never in the agent's container", strings.Join(files, ", "))
	}
	if get(item, "sandbox") == nil {
		if prog := task.ImageOnlyProgram(cmd.Value); prog != "" {
			set(item, "sandbox", scalar(task.TierContainer))
			c.note(cmd, what+".command", "calls %s, which only an image has: runs in a verifier container (sandbox: container) from the task's image", prog)
		}
	}
	return ""
}

// keepFields is item's common fields and those in keep, in file order.
func keepFields(item *yaml.Node, keep []string) []*yaml.Node {
	var kept []*yaml.Node
	for i := 0; i+1 < len(item.Content); i += 2 {
		switch k := item.Content[i]; {
		case k.Value == "type" || k.Value == "description" || k.Value == "weight" || k.Value == "pass_threshold", contains(keep, k.Value):
			kept = append(kept, k, item.Content[i+1])
		}
	}
	return kept
}

// templateCopy is where the task's directory holds the workspace path p as the template put
// it (the last template_dir that has it wins, as the copies are layered), "" when none does.
func (c *conv) templateCopy(p string) string {
	if c.exists == nil {
		return ""
	}
	for i := len(c.templates) - 1; i >= 0; i-- {
		if rel := pathpkg.Join(c.templates[i], p); c.exists(rel) {
			return rel
		}
	}
	return ""
}

// templatePytest maps coder_eval's pytest over tests the template put in the workspace onto
// ceval's pytest criterion over the template's own copy of them: the same tests, which the
// agent cannot edit, run by ceval's pytest (in WASM, or in a verifier container when the task
// installs packages).
func (c *conv) templatePytest(item *yaml.Node, what, tests string, timeout *yaml.Node) ([]string, string) {
	for i := 0; i+1 < len(item.Content); i += 2 {
		switch k := item.Content[i]; k.Value {
		case "type", "description", "weight", "pass_threshold", "timeout", "path", "args":
		default:
			c.unmapped(k, what+"."+k.Value, "not a field of coder_eval's pytest this importer maps")
		}
	}
	del(item, "path")
	set(item, "tests", str(tests))
	if timeout == nil {
		timeout = scalar("60") // coder_eval's default
	}
	set(item, "timeout", seconds(timeout))
	where := "in the WASM sandbox"
	if c.thirdParty {
		set(item, "sandbox", scalar(task.TierContainer))
		where = "in a verifier container (the task installs packages)"
	}
	c.note(item, what+" (pytest)", "became ceval's pytest over %s, the template's copy of the tests (the agent cannot edit them), %s; it scores passed/collected where coder_eval scored passed/(passed+failed+errors)", tests, where)
	return []string{"tests", "args", "timeout", "sandbox"}, ""
}
