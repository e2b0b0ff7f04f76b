// Package importer converts task files written for other harnesses into ceval's format.
// It works on yaml.v3 node trees, so comments on the fields it keeps survive, and it
// reports every field it cannot carry over with FILE:LINE and a reason: nothing is
// dropped silently.
package importer

import (
	"cmp"
	"encoding/json"
	"fmt"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// Problem is one field of an input that has no ceval equivalent (Unmapped) or that was
// mapped with a change of meaning worth knowing (a note).
type Problem struct {
	File, Field, Reason string
	Line                int
	Unmapped            bool
	// Skipped is the kind of an entry of the input tree that was not copied (a FIFO, a
	// socket, a device): not a regular file, directory or link.
	Skipped string
}

func (p Problem) String() string {
	if p.Skipped != "" {
		return fmt.Sprintf("%s: skipped: %s (not a regular file)", p.File, p.Skipped)
	}
	kind := "note"
	if p.Unmapped {
		kind = "unmapped"
	}
	return fmt.Sprintf("%s:%d: %s: %s: %s", p.File, p.Line, kind, p.Field, p.Reason)
}

// Options tune a conversion.
type Options struct {
	// KeepUnmapped keeps each unmappable criterion as a placeholder that always fails,
	// instead of leaving it out of the output.
	KeepUnmapped bool
	// Root, when set, is the declared root of the inputs (--root): every SRC lies inside it,
	// the whole tree is mirrored into the output directory (so material the tasks name
	// anywhere in it, "../" included, comes along) and the outputs are validated with the
	// mirror as their root.
	Root string
}

// Result is one converted file.
type Result struct {
	Output []byte // the ceval YAML; nil when the input is not a task file
	// Files are written beside the output (base name -> content): a dataset's inline rows.
	Files      map[string][]byte
	Problems   []Problem
	Experiment bool // the input is a coder_eval experiment file
}

// Unmapped counts the problems that lost something.
func (r Result) Unmapped() int {
	n := 0
	for _, p := range r.Problems {
		if p.Unmapped {
			n++
		}
	}
	return n
}

type conv struct {
	partial  bool // converting an experiment's defaults or a variant: partial task fields
	file     string
	opt      Options
	problems []Problem
	// graderFiles are the task-directory entries criteria read through $TASK_DIR.
	graderFiles []string
	// thirdParty: the task installs Python packages or names an image, so checks that
	// import must resolve against the image rather than the WASM sandbox.
	thirdParty bool
	// hasReference: the task has a reference, which coder_eval's judges see by default.
	hasReference bool
	// files are written beside the output (name -> content): a dataset's inline rows.
	files map[string][]byte
	// templates are the task's template_dir paths, in order (the sandbox's initial files).
	templates []string
	// prefix names the experiment layer being converted ("defaults.", "variants[1].").
	prefix string
	// read reads a file the task names, relative to the task file (nil: the import has
	// only the task file's bytes).
	read func(rel string) ([]byte, error)
	// exists says a file or directory (not a link) is there, relative to the task file.
	exists func(rel string) bool
}

func (c *conv) unmapped(n *yaml.Node, field, format string, args ...any) {
	c.problems = append(c.problems, Problem{File: c.file, Line: n.Line, Field: c.prefix + field, Reason: fmt.Sprintf(format, args...), Unmapped: true})
}

func (c *conv) note(n *yaml.Node, field, format string, args ...any) {
	c.problems = append(c.problems, Problem{File: c.file, Line: n.Line, Field: c.prefix + field, Reason: fmt.Sprintf(format, args...)})
}

// CoderEval converts one coder_eval task file (name is how problems name it).
func CoderEval(name string, data []byte, opt Options) (Result, error) {
	return coderEval(name, data, opt, taskFiles{})
}

// taskFiles reads the files a task names, relative to the task file (the zero value: none
// can be read).
type taskFiles struct {
	read   func(rel string) ([]byte, error)
	exists func(rel string) bool
}

// coderEval converts one task file; read, when not nil, reads the files it names (a system
// prompt file, dataset rows), relative to the task file.
func coderEval(name string, data []byte, opt Options, files taskFiles) (Result, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Result{}, fmt.Errorf("%s: not YAML: %v", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return Result{}, fmt.Errorf("%s:1: a coder_eval task file is a YAML mapping", name)
	}
	root := doc.Content[0]
	c := &conv{file: name, opt: opt, read: files.read, exists: files.exists}
	exp := isExperiment(root)
	if exp {
		c.experiment(root)
	} else {
		c.task(root)
	}
	out, err := encode(&doc)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %v", name, err)
	}
	return Result{Output: out, Files: c.files, Problems: c.problems, Experiment: exp}, nil
}

func isExperiment(root *yaml.Node) bool {
	if get(root, "task_id") != nil {
		return false
	}
	return get(root, "experiment_id") != nil || get(root, "variants") != nil || get(root, "defaults") != nil
}

func encode(doc *yaml.Node) ([]byte, error) {
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// taskTopLevel says why a coder_eval top-level field has no ceval equivalent.
var taskTopLevel = map[string]string{
	"skip":              "ceval has no per-task skip switch: leave the task out of the experiment, or tag it and run with a tag filter",
	"expected_commands": "orchestrator-level efficiency tracking has no ceval equivalent: add a tool_calls_budget (commands_efficiency) criterion instead",
	"suite_id":          "set by coder_eval's dataset expander, never by an author: ceval names each row's task task_id.ROW itself",
	"row_id":            "set by coder_eval's dataset expander, never by an author: ceval names each row's task task_id.ROW itself",
	"llm_reviewer":      "stale field that coder_eval itself ignores",
}

func (c *conv) task(root *yaml.Node) {
	var agent, sandbox, limits *yaml.Node
	var extra struct {
		args         []string
		plugins      []*yaml.Node
		timeout      *yaml.Node
		timeoutField string
		envPass      []string
		maxTurns     *yaml.Node
	}
	sbIn := get(root, "sandbox")
	c.thirdParty = len(strValues(get(get(sbIn, "python"), "env_packages"))) > 0 || get(get(sbIn, "docker"), "image") != nil
	c.hasReference = c.hasReference || get(root, "reference") != nil
	if ts := get(sbIn, "template_sources"); ts != nil {
		c.templates = nil
		for _, src := range ts.Content {
			if t := get(src, "type"); (t == nil || t.Value == "template_dir") && get(src, "path") != nil {
				c.templates = append(c.templates, get(src, "path").Value)
			}
		}
	}
	var kept []*yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "task_id", "description", "tags", "initial_prompt", "initial_prompt_file", "reference":
			kept = append(kept, k, v)
		case "agent":
			agent = v
			kept = append(kept, k, v)
		case "sandbox":
			sandbox = v
			kept = append(kept, k, v)
		case "run_limits":
			limits = v
			kept = append(kept, k, v)
		case "success_criteria":
			c.criteria(v)
			kept = append(kept, k, v)
		case "dataset":
			if ds := c.dataset(v); ds != nil {
				kept = append(kept, k, ds)
			}
		case "pre_run", "post_run":
			to := map[string]string{"pre_run": "setup", "post_run": "after_agent"}[k.Value]
			if steps := c.steps(k, v, to); steps != nil {
				kept = append(kept, scalar(to), steps)
			}
		case "simulation":
			if u := c.simulation(k, v, root); u != nil {
				kept = append(kept, scalar("simulated_user"), u)
			}
		case "max_iterations":
			c.note(k, k.Value, "dropped: coder_eval ignores it and runs the agent once; for its old feedback loop write iterations: {max: %s, feedback: details}", v.Value)
		default:
			reason, ok := taskTopLevel[k.Value]
			if !ok {
				reason = "not a coder_eval task field known to this importer"
			}
			c.unmapped(k, k.Value, "%s", reason)
		}
	}
	root.Content = kept
	if len(c.graderFiles) > 0 {
		set(root, "grader_files", strList(c.graderFiles))
	}

	if agent != nil {
		a := c.agent(agent)
		extra.args, extra.plugins, extra.envPass = a.args, a.plugins, a.envPass
		if a.timeout != nil {
			extra.timeout, extra.timeoutField = a.timeout, "agent.turn_timeout"
		}
		if a.maxTurns != nil {
			extra.maxTurns = a.maxTurns
		}
	}
	var sb sandboxOut
	if sandbox != nil {
		sb = c.sandbox(sandbox)
		extra.envPass = append(extra.envPass, sb.envPass...)
	}
	if limits != nil {
		t, field := c.runLimits(limits, agent)
		if t != nil {
			extra.timeout, extra.timeoutField = t, field
		}
		if len(limits.Content) == 0 {
			del(root, "run_limits")
		}
	}
	if extra.timeout != nil {
		if sandbox == nil {
			sandbox = &yaml.Node{Kind: yaml.MappingNode}
			set(root, "sandbox", sandbox)
		}
		lim := get(sandbox, "limits")
		if lim == nil {
			lim = &yaml.Node{Kind: yaml.MappingNode}
			set(sandbox, "limits", lim)
		}
		if old := get(lim, "timeout"); old == nil || extra.timeoutField == "run_limits.task_timeout" {
			if old != nil {
				c.note(keyNode(lim, "timeout"), "sandbox.limits.timeout", "%s replaced by %s: %s (the whole run's limit)", old.Value, extra.timeoutField, extra.timeout.Value)
			}
			set(lim, "timeout", seconds(extra.timeout))
		} else {
			c.note(extra.timeout, extra.timeoutField, "dropped: sandbox.limits.timeout (%s) bounds the run", get(lim, "timeout").Value)
		}
	}
	if sandbox != nil && len(sandbox.Content) == 0 {
		del(root, "sandbox")
	}
	if agent != nil {
		if len(extra.args) > 0 {
			set(agent, "args", strList(append(strValues(get(agent, "args")), extra.args...)))
		}
		if len(extra.envPass) > 0 {
			set(agent, "env_passthrough", strList(append(strValues(get(agent, "env_passthrough")), extra.envPass...)))
		}
	}
	if len(extra.plugins) > 0 {
		set(root, "plugins", &yaml.Node{Kind: yaml.SequenceNode, Content: extra.plugins})
	}
}

type agentOut struct {
	args              []string
	plugins           []*yaml.Node
	envPass           []string
	timeout, maxTurns *yaml.Node
}

// claudePermissionModes are the modes the claude CLI's --permission-mode takes.
var claudePermissionModes = map[string]bool{"default": true, "acceptEdits": true, "bypassPermissions": true, "plan": true}

// agent maps coder_eval's agent settings onto the agent CLI's flags (claude-code) and
// reports what the agent type cannot take.
func (c *conv) agent(a *yaml.Node) agentOut {
	var out agentOut
	typ, placeholder := "", false
	if t := get(a, "type"); t != nil {
		typ = t.Value
	}
	switch typ {
	case "claude-code", "codex":
	case "":
		if c.partial {
			break // the task or another layer gives it
		}
		// coder_eval takes it from the experiment or --type; the task's settings are the
		// claude CLI's (permission_mode, allowed_tools, ...), so claude-code it is, said
		a.Content = append([]*yaml.Node{scalar("type"), scalar("claude-code")}, a.Content...)
		c.note(a, "agent.type", "missing (coder_eval took it from the experiment or --type): written as claude-code; change it, or replace the agent at run time with ceval run --agent")
		typ = "claude-code"
	default:
		tn := get(a, "type")
		c.unmapped(tn, "agent.type", "agent %q has no ceval agent type: written as a type command placeholder that fails; put the %s CLI's argv in agent.command (it reads the prompt from $CEVAL_PROMPT_FILE and runs in the workspace) and its image in sandbox.image", typ, typ)
		msg := fmt.Sprintf("ceval import: agent %q (%s:%d) has no ceval agent type: replace agent.command with the %s CLI's argv", typ, c.file, tn.Line, typ)
		tn.Value, tn.Tag, tn.Style = "command", "!!str", 0
		tn.LineComment = "PLACEHOLDER: was " + strconv.Quote(typ)
		del(a, "command")
		a.Content = append(a.Content, scalar("command"), strList([]string{"sh", "-c", "echo " + shellQuote(msg) + " >&2; exit 1"}))
		typ, placeholder = "command", true
	}
	claude := typ == "claude-code"
	if claude && !c.partial && get(a, "permission_mode") == nil {
		// coder_eval's default; ceval's own is to skip permission prompts
		out.args = append(out.args, "--permission-mode", "acceptEdits")
		c.note(a, "agent.permission_mode", "not set: coder_eval's default acceptEdits written as --permission-mode acceptEdits in agent.args (ceval's claude-code otherwise skips every permission prompt)")
	}
	var kept []*yaml.Node
	flag := func(k, v *yaml.Node, name string, value string) {
		if !claude {
			c.unmapped(k, "agent."+k.Value, "mapped only for claude-code (its CLI flag %s); give the %s CLI's own flag in agent.args", name, typ)
			return
		}
		out.args = append(out.args, name, value)
		c.note(k, "agent."+k.Value, "became %s in agent.args (the claude CLI's flag)", name)
	}
	for i := 0; i+1 < len(a.Content); i += 2 {
		k, v := a.Content[i], a.Content[i+1]
		switch k.Value {
		case "type", "model", "args", "env_passthrough":
			kept = append(kept, k, v)
		case "command":
			if placeholder && v.Kind == yaml.SequenceNode && v.Line == 0 {
				kept = append(kept, k, v)
			} else {
				c.unmapped(k, "agent.command", "%s", agentReason(k.Value))
			}
		case "permission_mode":
			if claude && !claudePermissionModes[v.Value] {
				c.unmapped(v, "agent.permission_mode", "%q is not a claude CLI permission mode (default, acceptEdits, bypassPermissions, plan)", v.Value)
				continue
			}
			flag(k, v, "--permission-mode", v.Value)
		case "allowed_tools":
			flag(k, v, "--allowedTools", strings.Join(strValues(v), ","))
		case "disallowed_tools":
			flag(k, v, "--disallowedTools", strings.Join(strValues(v), ","))
		case "setting_sources":
			flag(k, v, "--setting-sources", strings.Join(strValues(v), ","))
		case "max_turns":
			if claude {
				flag(k, v, "--max-turns", v.Value)
			} else {
				c.unmapped(k, "agent.max_turns", "mapped only for claude-code (--max-turns); for %s use run_limits.max_turns, which the model gateway meters", typ)
			}
		case "system_prompt":
			mode := ""
			if m := get(a, "system_prompt_mode"); m != nil {
				mode = m.Value
			}
			if mode == "replace" {
				flag(k, v, "--system-prompt", v.Value)
			} else {
				flag(k, v, "--append-system-prompt", v.Value)
			}
		case "system_prompt_file":
			if c.read == nil {
				c.unmapped(k, "agent.system_prompt_file", "%s", agentReason(k.Value))
				continue
			}
			data, err := c.read(v.Value)
			if err != nil {
				c.unmapped(k, "agent.system_prompt_file", "%s: %v: inline the prompt as agent.system_prompt", v.Value, err)
				continue
			}
			name := "--append-system-prompt"
			if m := get(a, "system_prompt_mode"); m != nil && m.Value == "replace" {
				name = "--system-prompt"
			}
			flag(k, v, name, string(data))
			c.note(k, "agent.system_prompt_file", "read from %s at import (coder_eval read it at load)", v.Value)
		case "system_prompt_mode":
			// read with system_prompt, which says what it chose
			if claude && (get(a, "system_prompt") != nil || get(a, "system_prompt_file") != nil) {
				c.note(k, "agent.system_prompt_mode", "%s: system_prompt became %s", v.Value, map[bool]string{true: "--system-prompt", false: "--append-system-prompt"}[v.Value == "replace"])
			} else if get(a, "system_prompt") == nil && get(a, "system_prompt_file") == nil {
				c.note(k, "agent.system_prompt_mode", "dropped: there is no system_prompt")
			} else {
				c.unmapped(k, "agent.system_prompt_mode", "mapped only for claude-code, with system_prompt")
			}
		case "claude_settings":
			if v.Kind != yaml.MappingNode {
				c.unmapped(k, "agent.claude_settings", "a settings file path is read from the host at run time: inline the settings as a mapping")
				continue
			}
			var m any
			if err := v.Decode(&m); err != nil {
				c.unmapped(k, "agent.claude_settings", "cannot read: %v", err)
				continue
			}
			j, err := json.Marshal(m)
			if err != nil {
				c.unmapped(k, "agent.claude_settings", "cannot encode as JSON: %v", err)
				continue
			}
			flag(k, v, "--settings", string(j))
		case "turn_timeout":
			// one ceval run is one agent turn: its timeout is the sandbox's
			out.timeout = v
			c.note(k, "agent.turn_timeout", "became sandbox.limits.timeout: ceval runs the agent for one turn")
		case "plugins":
			for j, p := range v.Content {
				path := get(p, "path")
				c.unknownKeys(p, fmt.Sprintf("agent.plugins[%d]", j), []string{"type", "path"}, "coder_eval's plugin")
				if t := get(p, "type"); t != nil && t.Value != "local" {
					c.unmapped(t, fmt.Sprintf("agent.plugins[%d].type", j), "plugin type %q: ceval installs local plugins only (a directory beside the task)", t.Value)
					continue
				}
				switch {
				case path == nil:
					c.unmapped(p, fmt.Sprintf("agent.plugins[%d]", j), "no path")
				case strings.Contains(path.Value, "$"):
					c.unmapped(path, fmt.Sprintf("agent.plugins[%d]", j), "path %q names the plugin through an environment variable read on the host at run time: copy the plugin under the task root and give its relative path", path.Value)
				default:
					out.plugins = append(out.plugins, &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("path"), path}})
					c.note(p, fmt.Sprintf("agent.plugins[%d]", j), "became plugins: [{path: %s}] at the top level (ceval installs local plugins only)", path.Value)
				}
			}
		default:
			c.unmapped(k, "agent."+k.Value, "%s", agentReason(k.Value))
		}
	}
	a.Content = kept
	return out
}

func agentReason(field string) string {
	switch field {
	case "system_prompt_file":
		return "inline the prompt as agent.system_prompt before importing (ceval passes it as a CLI flag)"
	case "sdk_options":
		return "SDK pass-through options have no CLI equivalent ceval can check: give the matching agent CLI flags in agent.args"
	case "ignore_patterns", "additional_ignore_patterns":
		return "judge sub-agent copy patterns have no ceval equivalent (ceval's judges see the snapshot's files)"
	}
	return "not an agent setting ceval can map"
}

type sandboxOut struct{ envPass []string }

var limitNames = map[string]string{"max_memory_mb": "memory_mb", "max_cpus": "cpus", "max_pids": "pids", "max_disk_mb": "disk_mb"}

// pinned is a requirement ceval's package images take: NAME==VERSION.
var pinned = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+$`)

func (c *conv) sandbox(s *yaml.Node) sandboxOut {
	var out sandboxOut
	var kept []*yaml.Node
	var ws *yaml.Node
	workspace := func() *yaml.Node {
		if ws == nil {
			ws = &yaml.Node{Kind: yaml.MappingNode}
		}
		return ws
	}
	for i := 0; i+1 < len(s.Content); i += 2 {
		k, v := s.Content[i], s.Content[i+1]
		switch k.Value {
		case "driver":
			if v.Value == "tempdir" {
				c.note(k, "sandbox.driver", "tempdir ran the agent on the host; ceval always runs it in a hardened container")
			} else {
				c.note(k, "sandbox.driver", "dropped: ceval always runs the agent in a hardened container")
			}
		case "limits":
			var lk []*yaml.Node
			for j := 0; j+1 < len(v.Content); j += 2 {
				lkey, lval := v.Content[j], v.Content[j+1]
				switch {
				case lkey.Value == "timeout":
					lk = append(lk, lkey, seconds(lval))
				case limitNames[lkey.Value] != "":
					if lval.Tag == "!!null" {
						continue
					}
					c.note(lkey, "sandbox.limits."+lkey.Value, "became sandbox.limits.%s", limitNames[lkey.Value])
					lkey.Value = limitNames[lkey.Value]
					lk = append(lk, lkey, lval)
				default:
					c.unmapped(lkey, "sandbox.limits."+lkey.Value, "not a limit ceval knows")
				}
			}
			v.Content = lk
			if len(lk) > 0 {
				kept = append(kept, k, v)
			}
		case "python":
			c.unknownKeys(v, "sandbox.python", []string{"env_packages"}, "coder_eval's sandbox.python")
			pkgs := strValues(get(v, "env_packages"))
			if len(pkgs) == 0 {
				continue
			}
			for _, p := range pkgs {
				if !pinned.MatchString(p) {
					c.unmapped(get(v, "env_packages"), "sandbox.python.env_packages", "%q is not pinned: ceval's package images install pinned NAME==VERSION wheels from a directory beside the task (sandbox.pip, sandbox.pip_find_links), never from an index", p)
					pkgs = nil
					break
				}
			}
			if pkgs != nil {
				kept = append(kept, scalar("pip"), strList(pkgs), scalar("pip_find_links"), str("wheels"))
				c.note(k, "sandbox.python", "became sandbox.pip with pip_find_links: wheels; put the wheels (pip download --only-binary=:all:) in wheels/ beside the task")
			}
		case "node":
			c.unknownKeys(v, "sandbox.node", []string{"env_packages"}, "coder_eval's sandbox.node")
			if len(strValues(get(v, "env_packages"))) == 0 {
				c.note(k, "sandbox.node", "no npm packages: nothing to install")
			} else {
				c.unmapped(get(v, "env_packages"), "sandbox.node.env_packages", "ceval's package images take Debian packages and pinned pip wheels, not npm packages: bake them into an image (sandbox.image)")
			}
		case "docker":
			for j := 0; j+1 < len(v.Content); j += 2 {
				dk, dv := v.Content[j], v.Content[j+1]
				switch dk.Value {
				case "image":
					kept = append(kept, scalar("image"), dv)
					c.note(dk, "sandbox.docker.image", "became sandbox.image")
				case "network":
					if dv.Value == "bridge" {
						c.note(dv, "sandbox.docker.network", "bridge became ceval's default (no network): model calls go through ceval's gateway; add sandbox.network: host only if the task needs the internet")
					}
				case "env_passthrough":
					c.note(dk, "sandbox.docker.env_passthrough", "dropped: its default forwards API keys into the container, which ceval's gateway keeps on the host; name other variables in agent.env_passthrough")
				case "env_passthrough_extra":
					out.envPass = append(out.envPass, strValues(dv)...)
					c.note(dk, "sandbox.docker.env_passthrough_extra", "became agent.env_passthrough (each variable still needs the user's --allow-env)")
				default:
					c.unmapped(dk, "sandbox.docker."+dk.Value, "%s", dockerReason(dk.Value))
				}
			}
		case "template_sources":
			for j, src := range v.Content {
				field := fmt.Sprintf("sandbox.template_sources[%d]", j)
				typ := "template_dir"
				if t := get(src, "type"); t != nil {
					typ = t.Value
				}
				c.unknownKeys(src, field, map[string][]string{"template_dir": {"type", "path", "mount_point"}, "starter_files": {"type", "files"}, "repo": {"type", "url", "commit"}}[typ], "coder_eval's "+typ+" template source")
				switch typ {
				case "template_dir":
					mount := get(src, "mount_point")
					switch {
					case mount != nil && mount.Value != "." && mount.Value != "./":
						c.unmapped(mount, field, "mount_point %s: ceval copies a template into the workspace's root only: move the template's files under a %s/ directory inside it", mount.Value, mount.Value)
					case get(src, "path") == nil:
						c.unmapped(src, field, "no path")
					default:
						if get(workspace(), "starter_files") != nil {
							c.note(src, field, "ceval writes starter_files after every template_dir, so a starter file listed before this template wins over it where coder_eval let the template replace it")
						}
						c.note(src, field, "became sandbox.workspace.template_dir %s (copied in coder_eval's order)", get(src, "path").Value)
						switch prev := get(workspace(), "template_dir"); {
						case prev == nil:
							set(workspace(), "template_dir", get(src, "path"))
						case prev.Kind == yaml.SequenceNode:
							prev.Content = append(prev.Content, get(src, "path"))
						default: // a list: copied in order, later entries replace earlier ones, as coder_eval applied them
							set(workspace(), "template_dir", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{prev, get(src, "path")}})
						}
					}
				case "starter_files":
					files := get(workspace(), "starter_files")
					if files == nil {
						files = &yaml.Node{Kind: yaml.SequenceNode}
						set(workspace(), "starter_files", files)
					}
					if f := get(src, "files"); f != nil {
						files.Content = append(files.Content, f.Content...)
					}
					c.note(src, field, "became sandbox.workspace.starter_files")
				default:
					c.unmapped(src, field, "template source %q has no ceval equivalent: ceval never clones repositories at run time; check the repository out under the task root and use it as template_dir", typ)
				}
			}
		case "mock_path_dirs":
			c.unmapped(k, "sandbox.mock_path_dirs", "ceval puts nothing from the workspace on the agent's PATH: serve each mocked CLI as a protected mock (protected_mocks: [{tool, fixture}]), which the agent cannot read or change")
		case "ignore_patterns", "additional_ignore_patterns":
			c.unmapped(k, "sandbox."+k.Value, "ceval copies every file of a template: remove the files you do not want from the template directory")
		default:
			c.unmapped(k, "sandbox."+k.Value, "not a sandbox setting ceval can map")
		}
	}
	if ws != nil {
		kept = append(kept, scalar("workspace"), ws)
	}
	s.Content = kept
	return out
}

func dockerReason(field string) string {
	switch field {
	case "dockerfile_path", "build":
		return "build the image with ceval's Dockerfile builder and name it in sandbox.image"
	case "extra_mounts":
		return "ceval mounts nothing from the host into the agent's container"
	case "working_dir":
		return "the agent's workspace is always /workspace in ceval"
	}
	return "not a container setting ceval can map"
}

// runLimits keeps the model budgets, moves the wall-clock limits to the sandbox's timeout
// (returned with the field it came from) and reports the rest.
func (c *conv) runLimits(r *yaml.Node, agent *yaml.Node) (*yaml.Node, string) {
	var kept []*yaml.Node
	var timeout *yaml.Node
	field := ""
	for i := 0; i+1 < len(r.Content); i += 2 {
		k, v := r.Content[i], r.Content[i+1]
		if v.Tag == "!!null" {
			continue
		}
		switch k.Value {
		case "max_usd":
			if !c.partial && (agent == nil || get(agent, "model") == nil) {
				c.unmapped(k, "run_limits.max_usd", "ceval prices the agent's calls at agent.model's price: give agent.model (and its price in ceval's config), then put max_usd back")
				continue
			}
			kept = append(kept, k, v)
		case "max_turns", "max_input_tokens", "max_output_tokens", "max_total_tokens":
			kept = append(kept, k, v)
		case "task_timeout":
			timeout, field = v, "run_limits.task_timeout"
			c.note(k, "run_limits.task_timeout", "became sandbox.limits.timeout")
		case "turn_timeout":
			if timeout == nil {
				timeout, field = v, "run_limits.turn_timeout"
			}
			c.note(k, "run_limits.turn_timeout", "became sandbox.limits.timeout (ceval runs one turn)")
		case "expected_turns":
			c.note(k, "run_limits.expected_turns", "dropped: a soft target that only warned in coder_eval; run_limits.max_turns is ceval's hard cap")
		case "stop_early", "stop_early_gate_threshold":
			c.note(k, "run_limits."+k.Value, "dropped: coder_eval's per-criterion early stop has no ceval equivalent, so there is nothing to switch or gate")
		case "count_cached_input", "count_cache_creation":
			if v.Value != "true" {
				c.note(k, "run_limits."+k.Value, "false, coder_eval's default: dropped")
			} else {
				c.unmapped(k, "run_limits."+k.Value, "ceval's gateway meters input tokens as the provider reports them: check the Model gateway section of ceval's docs/agents.md for what max_input_tokens counts and set the budget accordingly")
			}
		default:
			c.unmapped(k, "run_limits."+k.Value, "not a run limit ceval can enforce")
		}
	}
	r.Content = kept
	return timeout, field
}

// criterionKeep lists, per coder_eval criterion type ceval also has, the fields that carry
// over unchanged (besides the common type, description, weight and pass_threshold).
var criterionKeep = map[string][]string{
	"file_exists":          {"path"},
	"file_contains":        {"path", "includes", "excludes"},
	"file_matches_regex":   {"path", "pattern"},
	"file_check":           {"path", "includes", "excludes", "patterns"},
	"json_check":           {"path", "json_schema", "assertions"},
	"classification_match": {"path", "expected_label", "allowed_labels", "case_sensitive"},
	"run_command":          {"command", "timeout", "expected_exit_code", "expected_stdout", "stdout_match", "score_from_stdout"},
	"cli_called":           {"tool", "argv", "min_count", "max_count"},
	"commands_efficiency":  {"expected_commands"},
	"skill_triggered":      {"skill_name", "expected_skill"},
	"llm_judge":            {"rubric", "samples", "reference_files"},
	"agent_judge":          {"rubric", "max_turns", "timeout", "judge_model"},
	"tool_called":          {"tool", "tool_pattern", "input_field", "input_pattern", "exclude_pattern", "outcome", "min_count", "max_count"},
}

// unmappedTypes says why a coder_eval criterion type has no ceval equivalent.
var unmappedTypes = map[string]string{
	"uipath_eval":          "a proprietary UiPath evaluator: ceval cannot run it",
	"system_one_judge":     "a proprietary judge service: use llm_judge with a rubric",
	"pylint_score":         "rewrite it as a run_command with score_from_stdout",
	"reference_comparison": "use llm_judge with reference_files",
}

func (c *conv) criteria(list *yaml.Node) {
	if list.Kind != yaml.SequenceNode {
		c.unmapped(list, "success_criteria", "not a list")
		return
	}
	var kept []*yaml.Node
	for i, item := range list.Content {
		what := fmt.Sprintf("success_criteria[%d]", i)
		if item.Kind != yaml.MappingNode || get(item, "type") == nil {
			c.unmapped(item, what, "not a mapping with a type")
			continue
		}
		if en := get(item, "enabled"); en != nil {
			if en.Value == "false" {
				c.note(en, what+" (enabled: false)", "the criterion is left out (coder_eval does not grade it either)")
				continue
			}
			del(item, "enabled")
		}
		if reason := c.criterion(item, what); reason != "" {
			typ := get(item, "type").Value
			c.unmapped(item, what+" ("+typ+")", "%s", reason)
			if c.opt.KeepUnmapped {
				kept = append(kept, c.placeholder(item, typ, reason))
			}
			continue
		}
		kept = append(kept, item)
	}
	list.Content = kept
}

// placeholder is a criterion that always fails, standing in for an unmapped one.
func (c *conv) placeholder(item *yaml.Node, typ, reason string) *yaml.Node {
	msg := fmt.Sprintf("unmapped criterion %s (%s:%d): %s", typ, c.file, item.Line, reason)
	n := &yaml.Node{Kind: yaml.MappingNode, HeadComment: "UNMAPPED: " + msg, Content: []*yaml.Node{
		scalar("type"), scalar("run_command"),
		scalar("description"), str(msg),
		scalar("command"), str("echo " + shellQuote(msg) + "; exit 1"),
	}}
	if w := get(item, "weight"); w != nil {
		set(n, "weight", w)
	}
	return n
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// criterion converts one criterion in place; it returns why it cannot, or "".
func (c *conv) criterion(item *yaml.Node, what string) string {
	typ := get(item, "type").Value
	if reason, ok := unmappedTypes[typ]; ok {
		return reason
	}
	if typ == "command_executed" || typ == "command_not_executed" {
		if get(item, "pattern") == nil { // coder_eval's form: the model's tool calls
			if typ == "command_not_executed" {
				set(item, "min_count", scalar("0"))
				set(item, "max_count", scalar("0"))
			}
			c.note(item, what+" ("+typ+")", "became tool_called over the agent's tool calls: tool_name -> tool, command_pattern -> input_pattern, require_success: true -> outcome: ok")
			get(item, "type").Value = "tool_called"
			typ = "tool_called"
			rename(item, "tool_name", "tool")
			rename(item, "command_pattern", "input_pattern")
			if rs := get(item, "require_success"); rs != nil {
				if rs.Value == "true" {
					set(item, "outcome", scalar("ok"))
				}
				del(item, "require_success")
			}
		} else if typ == "command_not_executed" {
			return "ceval's protected-mock command_executed takes min_count/max_count: write command_executed with max_count: 0"
		} else {
			typ = "command_executed_mock"
		}
	}
	if typ == "pytest" || typ == "import_check" {
		keep, reason := c.pythonCriterion(item, what, typ)
		if reason != "" {
			return reason
		}
		item.Content = keepFields(item, keep)
		return ""
	}
	keep, ok := criterionKeep[typ]
	if typ == "command_executed_mock" {
		keep, ok = []string{"pattern", "min_count", "max_count"}, true
	}
	if !ok {
		return fmt.Sprintf("criterion type %q has no ceval equivalent", typ)
	}
	if typ == "llm_judge" || typ == "agent_judge" {
		c.judgePrompt(item, what)
	}
	if typ == "cli_called" {
		// coder_eval's cli_called reads the JSONL log a recording mock on the agent's PATH
		// (sandbox.mock_path_dirs) writes in the sandbox; ceval's counts the calls of a
		// protected mock, which ceval serves itself and the agent cannot forge.
		tool := "NAME"
		if t := get(item, "tool"); t != nil && strings.TrimSpace(t.Value) != "" {
			tool = t.Value
		}
		return fmt.Sprintf("coder_eval's cli_called reads the invocation log its recording mocks write in the sandbox (log, verb, positional, flags); ceval's counts the calls of a protected mock it serves itself: declare protected_mocks: [{tool: %s, fixture: ...}] and write cli_called with tool: %s and argv patterns (one per argument)", tool, tool)
	}
	if typ == "file_matches_regex" && (get(item, "must_match") != nil || get(item, "flags") != nil) {
		if reason := c.regexAsFileCheck(item, what); reason != "" {
			return reason
		}
		typ, keep = "file_check", criterionKeep["file_check"]
	}
	if typ == "file_check" {
		if reason := c.patternFlags(item, what); reason != "" {
			return reason
		}
	}
	c.pythonDollars(item, typ, what)
	if typ == "classification_match" && get(item, "case_sensitive") == nil {
		set(item, "case_sensitive", scalar("false"))
		c.note(item, what+".case_sensitive", "coder_eval matches labels up to case by default: written out as case_sensitive: false (ceval's default is exact)")
	}
	c.commonFields(item, what)
	if typ == "json_check" {
		c.schemaPath(item, what)
	}
	if typ == "llm_judge" {
		c.judgeFiles(item, what)
		if ir := get(item, "include_reference"); c.hasReference && ir == nil {
			c.note(item, what+".include_reference", "coder_eval showed its judge the whole reference directory by default; ceval's llm_judge sees only the files listed in reference_files: list those the judge needs")
		}
	}
	if typ == "agent_judge" {
		c.agentJudge(item, what)
	}
	if typ == "run_command" || typ == "agent_judge" {
		if t := get(item, "timeout"); t != nil {
			set(item, "timeout", seconds(t))
		}
	}
	if typ == "run_command" {
		if reason := c.runCommandTier(item, what); reason != "" {
			return reason
		}
		keep = append(keep, "sandbox")
	}
	if cmd := get(item, "command"); cmd != nil && typ == "run_command" && strings.Contains(cmd.Value, "REFERENCE_DIR") {
		// ceval mounts the reference read-only for the criterion and names it $REFERENCE_DIR too
		set(item, "uses_reference", scalar("true"))
		keep = append(keep, "uses_reference")
	}
	var kept []*yaml.Node
	for i := 0; i+1 < len(item.Content); i += 2 {
		k, v := item.Content[i], item.Content[i+1]
		switch {
		case k.Value == "type" || k.Value == "description" || k.Value == "weight" || k.Value == "pass_threshold":
			kept = append(kept, k, v)
		case contains(keep, k.Value):
			kept = append(kept, k, v)
		case (typ == "llm_judge" || typ == "agent_judge") && judgeOption(c, typ, item, k, v, what, &kept):
		default:
			c.unmapped(k, what+"."+k.Value, "not a field of ceval's %s", strings.TrimSuffix(typ, "_mock"))
		}
	}
	item.Content = kept
	return ""
}

// regexFlags are Python's re flags RE2 spells inline, by name and by letter.
var regexFlags = map[string]string{"i": "i", "ignorecase": "i", "m": "m", "multiline": "m", "s": "s", "dotall": "s"}

// patternFlags folds each file_check pattern's flags (IGNORECASE, "re.M", "is", ...) into
// the pattern as RE2's inline (?ims); it returns why it cannot, or "".
func (c *conv) patternFlags(item *yaml.Node, what string) string {
	ps := get(item, "patterns")
	if ps == nil || ps.Kind != yaml.SequenceNode {
		return ""
	}
	for j, p := range ps.Content {
		fk, f := keyNode(p, "flags"), get(p, "flags")
		if p.Kind != yaml.MappingNode || f == nil {
			continue
		}
		field := fmt.Sprintf("%s.patterns[%d].flags", what, j)
		inline, bad := inlineFlags(f)
		if bad != "" {
			c.unmapped(fk, field, "flag %q has no RE2 inline form (ceval knows IGNORECASE=2, MULTILINE=8, DOTALL=16): rewrite the pattern without it", bad)
			return fmt.Sprintf("patterns[%d] uses regex flag %q, which ceval cannot apply", j, bad)
		}
		if pat := get(p, "pattern"); pat != nil && inline != "" {
			pat.Value = "(?" + inline + ")" + pat.Value
			pat.Tag, pat.Style = "!!str", 0
			c.note(fk, strings.TrimSuffix(field, ".flags"), "flags mapped to the inline flags (?%s) at the start of the pattern", inline)
		} else {
			c.note(fk, field, "%s sets no flag RE2 needs: dropped", f.Value)
		}
		del(p, "flags")
	}
	return ""
}

// pythonFlagBits are Python's re flag values (coder_eval's flags: int) RE2 spells inline;
// re.UNICODE (32) is Python 3's default for text patterns and RE2's too.
var pythonFlagBits = []struct {
	bit    int
	letter string
}{{2, "i"}, {8, "m"}, {16, "s"}, {32, ""}}

// inlineFlags reads a pattern's flags (an int bitmask as coder_eval's models take it, or
// names and letters: IGNORECASE, "re.M|re.S", "is") as RE2's inline letters, sorted; bad is
// the first flag RE2 has no inline form for.
func inlineFlags(f *yaml.Node) (inline, bad string) {
	words := strValues(f)
	if f.Kind == yaml.ScalarNode {
		words = strings.FieldsFunc(f.Value, func(r rune) bool { return r == '|' || r == ',' || r == ' ' || r == '+' })
	}
	var letters []string
	for _, w := range words {
		w = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(w)), "re.")
		if w == "" {
			continue
		}
		if n, err := strconv.Atoi(w); err == nil && n >= 0 {
			for _, b := range pythonFlagBits {
				if n&b.bit != 0 {
					n &^= b.bit
					if b.letter != "" {
						letters = append(letters, b.letter)
					}
				}
			}
			if n != 0 {
				names := map[int]string{1: "re.TEMPLATE", 4: "re.LOCALE", 64: "re.VERBOSE", 128: "re.DEBUG", 256: "re.ASCII"}
				var left []string
				for bit := 1; bit <= n; bit <<= 1 {
					if n&bit != 0 {
						left = append(left, cmp.Or(names[bit], strconv.Itoa(bit)))
					}
				}
				return "", fmt.Sprintf("%s (%s)", w, strings.Join(left, "|"))
			}
			continue
		}
		if fl, ok := regexFlags[w]; ok {
			letters = append(letters, fl)
			continue
		}
		if w == "u" || w == "unicode" {
			continue
		}
		if len(w) > 1 && strings.Trim(w, "ims") == "" { // letters: "is"
			letters = append(letters, strings.Split(w, "")...)
			continue
		}
		return "", w
	}
	slices.Sort(letters)
	return strings.Join(slices.Compact(letters), ""), ""
}

// regexAsFileCheck rewrites a file_matches_regex with must_match or flags (which ceval's
// file_matches_regex lacks) as the file_check with one pattern that means the same; it
// returns why it cannot, or "".
func (c *conv) regexAsFileCheck(item *yaml.Node, what string) string {
	pat := get(item, "pattern")
	if pat == nil {
		return "" // the loader reports the missing pattern
	}
	p := &yaml.Node{Kind: yaml.MappingNode}
	p.Content = append(p.Content, scalar("pattern"), pat)
	if mm := get(item, "must_match"); mm != nil {
		p.Content = append(p.Content, scalar("must_match"), mm)
	}
	if f := get(item, "flags"); f != nil {
		p.Content = append(p.Content, keyNode(item, "flags"), f)
	}
	del(item, "pattern")
	del(item, "must_match")
	del(item, "flags")
	get(item, "type").Value = "file_check"
	set(item, "patterns", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{p}})
	c.note(item, what+" (file_matches_regex)", "became a file_check with one pattern {pattern, must_match}: ceval's file_matches_regex takes neither must_match nor flags")
	return ""
}

// schemaPath points a json_check's json_schema file, which coder_eval read from the sandbox,
// at the template's copy: ceval reads a schema file from the task's directory.
func (c *conv) schemaPath(item *yaml.Node, what string) {
	js := get(item, "json_schema")
	if js == nil || js.Kind != yaml.ScalarNode || strings.Contains(js.Value, "$") {
		return
	}
	switch len(c.templates) {
	case 0:
		c.note(js, what+".json_schema", "coder_eval read %s from the sandbox, ceval reads it beside the task file: put the schema there", js.Value)
	case 1:
		p := pathpkg.Join(c.templates[0], js.Value)
		c.note(js, what+".json_schema", "coder_eval read %s from the sandbox: ceval reads the template's copy, %s (which the agent cannot change)", js.Value, p)
		js.Value = p
	default:
		c.note(js, what+".json_schema", "coder_eval read %s from the sandbox, ceval reads it beside the task file: give the path of the template that holds it (one of %s)", js.Value, strings.Join(c.templates, ", "))
	}
}

// pythonEnd is what Python's re.search makes of a pattern's final "$" without MULTILINE: the
// end of the text, or just before a newline that ends it. RE2's "$" is the end only, so
// "^ok$" would miss "ok\n", the stdout of echo ok.
const pythonEnd = `(?:\n?\z)`

// trailingDollar says pattern ends with a "$" that is no escaped character.
func trailingDollar(pattern string) bool {
	if !strings.HasSuffix(pattern, "$") {
		return false
	}
	n := 0
	for i := len(pattern) - 2; i >= 0 && pattern[i] == '\\'; i-- {
		n++
	}
	return n%2 == 0
}

// pythonDollars rewrites the final "$" of the criterion's regular expressions (run_command's
// regex expected_stdout, file_matches_regex's and file_check's patterns), which coder_eval
// searched with Python's re, as Python reads it; a pattern with (?m) means the same in both.
func (c *conv) pythonDollars(item *yaml.Node, typ, what string) {
	fix := func(n *yaml.Node, field string) {
		if n == nil || n.Kind != yaml.ScalarNode || !trailingDollar(n.Value) || strings.HasPrefix(n.Value, "(?") && strings.Contains(n.Value[:strings.Index(n.Value, ")")+1], "m") {
			return
		}
		n.Value = n.Value[:len(n.Value)-1] + pythonEnd
		n.Tag, n.Style = "!!str", 0
		c.note(n, field, "the final $ became %s: Python's $ also matches before the newline that ends the text, RE2's only at the end", pythonEnd)
	}
	switch typ {
	case "run_command":
		if m := get(item, "stdout_match"); m != nil && m.Value == "regex" {
			fix(get(item, "expected_stdout"), what+".expected_stdout")
		}
	case "file_matches_regex":
		fix(get(item, "pattern"), what+".pattern")
	case "file_check":
		if ps := get(item, "patterns"); ps != nil {
			for j, p := range ps.Content {
				fix(get(p, "pattern"), fmt.Sprintf("%s.patterns[%d].pattern", what, j))
			}
		}
	}
}

// coderEvalJudgeTurns is coder_eval's agent_judge max_turns default (ceval's is 30).
const coderEvalJudgeTurns = "50"

// agentJudge maps coder_eval's agent_judge settings that differ from ceval's in name or
// default: turn_timeout is ceval's timeout, max_turns defaults to 50, and the judge agent's
// model (agent.model) is judge_model.
func (c *conv) agentJudge(item *yaml.Node, what string) {
	if k := keyNode(item, "turn_timeout"); k != nil && get(item, "timeout") == nil {
		c.note(k, what+".turn_timeout", "became timeout (the judge agent's wall-clock limit)")
		k.Value = "timeout"
	}
	if get(item, "max_turns") == nil {
		set(item, "max_turns", scalar(coderEvalJudgeTurns))
		c.note(item, what+".max_turns", "not set: coder_eval's default %s written out (ceval's is 30)", coderEvalJudgeTurns)
	}
	ak := keyNode(item, "agent")
	a := get(item, "agent")
	if ak == nil {
		return
	}
	for i := 0; a != nil && i+1 < len(a.Content); i += 2 {
		k, v := a.Content[i], a.Content[i+1]
		if k.Value == "model" && get(item, "model") == nil && get(item, "judge_model") == nil {
			set(item, "judge_model", v)
			c.note(k, what+".agent.model", "became judge_model")
			continue
		}
		if k.Value == "type" && v.Value == "claude-code" {
			c.note(k, what+".agent.type", "claude-code: ceval's judge agent too")
			continue
		}
		c.unmapped(k, what+".agent."+k.Value, "ceval's judge agent is set by ceval's config (judge_agent, judge:), not by the task: remove it")
	}
	del(item, "agent")
}

// unknownKeys reports each key of m that is not in known (what: the thing m is), when m is
// read field by field rather than carried whole.
func (c *conv) unknownKeys(m *yaml.Node, where string, known []string, what string) {
	if m == nil || m.Kind != yaml.MappingNode || known == nil {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; !contains(known, k.Value) {
			c.unmapped(k, where+"."+k.Value, "not a field of %s this importer maps", what)
		}
	}
}

// commonFields reports the fields every coder_eval criterion may carry that ceval's criteria
// lack (suite-level gates, early stop), with what to do.
func (c *conv) commonFields(item *yaml.Node, what string) {
	for _, f := range []struct{ name, reason string }{
		{"suite_thresholds", "ceval gates no run on a dataset's aggregate: summary.json's datasets section has the accuracy, precision, recall and F1 per dataset; check them in CI (ceval report --format markdown, or jq over summary.json)"},
		{"stop_early", "ceval ends a run early only on the experiment's sequential test (stop_early at the experiment's top level); a per-criterion live stop has no equivalent: remove it"},
	} {
		if k := keyNode(item, f.name); k != nil {
			c.unmapped(k, what+"."+f.name, "%s", f.reason)
			del(item, f.name)
		}
	}
}

// judgeFiles splits an llm_judge's files: $REFERENCE_DIR/P entries become reference_files
// (P inside reference.directory, as coder_eval read them); $TASK_DIR/P ones are reported.
func (c *conv) judgeFiles(item *yaml.Node, what string) {
	files := get(item, "files")
	if files == nil || files.Kind != yaml.SequenceNode {
		return
	}
	var ws, ref []*yaml.Node
	changed := false
	defer func() {
		if changed && len(ws) > 0 {
			c.note(files, what+".files", "kept the workspace files: %s", strings.Join(strValues(&yaml.Node{Kind: yaml.SequenceNode, Content: ws}), ", "))
		}
	}()
	for j, f := range files.Content {
		v := f.Value
		switch {
		case strings.HasPrefix(v, "$REFERENCE_DIR/"), strings.HasPrefix(v, "${REFERENCE_DIR}/"):
			changed = true
			_, rel, _ := strings.Cut(v, "/")
			ref = append(ref, str(rel))
			c.note(f, fmt.Sprintf("%s.files[%d]", what, j), "became reference_files: %s (read from reference.directory, never shown to the agent)", rel)
		case strings.Contains(v, "TASK_DIR"):
			changed = true
			c.unmapped(f, fmt.Sprintf("%s.files[%d]", what, j), "ceval's llm_judge reads workspace files and reference_files only: move %s under reference.directory and list it in reference_files, or paste it into the rubric", v)
		default:
			ws = append(ws, f)
		}
	}
	files.Content = ws
	if len(ws) == 0 {
		del(item, "files")
	}
	if len(ref) > 0 {
		set(item, "reference_files", &yaml.Node{Kind: yaml.SequenceNode, Content: ref})
	}
}

// judgePrompt maps coder_eval's grading prompt (prompt:) to ceval's rubric, which is the
// same thing: the text that tells the judge what to grade and how to score it.
func (c *conv) judgePrompt(item *yaml.Node, what string) {
	pk := keyNode(item, "prompt")
	if pk == nil {
		return
	}
	p := get(item, "prompt")
	if r := get(item, "rubric"); r != nil {
		r.Value = strings.TrimRight(p.Value, "\n") + "\n\nRubric:\n" + r.Value
		r.Tag, r.Style = "!!str", yaml.LiteralStyle
		c.note(pk, what+" (prompt, rubric)", "ceval's judge takes one text: the prompt and the rubric are joined into rubric (prompt first)")
	} else {
		pk.Value = "rubric"
		c.note(pk, what+".prompt", "mapped to rubric: ceval's judge instructions (what to grade and how it maps to a score from 0 to 1)")
		return
	}
	del(item, "prompt")
}

// judgeOption handles one of coder_eval's judge options (files, include_*, model, ...): it
// keeps or maps it into kept, or reports it, and says whether k was one of them.
func judgeOption(c *conv, typ string, item, k, v *yaml.Node, what string, kept *[]*yaml.Node) bool {
	field := what + "." + k.Value
	switch k.Value {
	case "include_reference":
		if v.Value != "true" {
			c.note(k, field, "false: ceval's judge sees no reference file unless reference_files lists one, the same")
		} else {
			if typ == "llm_judge" {
				c.note(k, field, "dropped: ceval's llm_judge sees only the reference files named in reference_files: list them there (paths under reference.directory)")
			} else {
				c.note(k, field, "dropped: ceval's judge agent sees the workspace only; copy what it must compare against into the rubric")
			}
		}
	case "capture_transcript":
		if v.Value == "true" {
			c.unmapped(k, field, "ceval's %s keeps no judge transcript beside the result: remove it", typ)
		} else {
			c.note(k, field, "false: dropped (ceval keeps no judge transcript)")
		}
	case "include_agent_output", "include_tool_calls", "include_dialog":
		if v.Value != "true" {
			c.note(k, field, "false: dropped (ceval's judge sees the workspace files only)")
		} else {
			c.unmapped(k, field, "ceval's %s sees the workspace files, not the agent's output, tool calls or dialog: grade tool calls with a tool_called criterion, or have the agent write what the judge needs to a file and list it in files", typ)
		}
	case "max_dialog_chars", "max_transcript_chars":
		c.unmapped(k, field, "ceval's %s is shown no dialog or transcript, so there is nothing to cap: remove it", typ)
	case "max_file_chars":
		if typ != "llm_judge" {
			c.unmapped(k, field, "ceval's agent_judge reads the files itself: remove it")
			break
		}
		n, err := strconv.Atoi(v.Value)
		if err != nil || n < 1 {
			c.unmapped(k, field, "%q is not a positive whole number: give max_file_bytes (1 to %d)", v.Value, 256<<10)
			break
		}
		if n > 256<<10 {
			c.note(k, field, "%d clamped to ceval's cap of %d bytes per file", n, 256<<10)
			n = 256 << 10
		}
		c.note(k, field, "mapped to max_file_bytes: ceval caps each file in bytes, not characters")
		*kept = append(*kept, scalar("max_file_bytes"), scalar(strconv.Itoa(n)))
	case "model":
		if typ == "agent_judge" {
			*kept = append(*kept, scalar("judge_model"), v)
			c.note(k, field, "mapped to judge_model")
		} else {
			c.unmapped(k, field, "ceval's llm_judge asks the one judge model of ceval's config (judge: {api, model}): set it there")
		}
	case "temperature", "max_tokens":
		c.unmapped(k, field, "ceval's judge calls are set by ceval's config (judge:), not per criterion: remove it")
	case "files":
		if typ == "llm_judge" {
			*kept = append(*kept, k, v)
		} else {
			c.unmapped(k, field, "ceval's judge agent reads the workspace itself: name the files in the rubric")
		}
	default:
		return false
	}
	return true
}

// keyNode is the key node of key in mapping m, or nil.
func keyNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

// seconds turns coder_eval's whole seconds into a ceval duration ("300" -> "300s").
func seconds(v *yaml.Node) *yaml.Node {
	if _, err := strconv.ParseFloat(v.Value, 64); err == nil && v.Kind == yaml.ScalarNode {
		n := scalar(v.Value + "s")
		n.LineComment = v.LineComment
		return n
	}
	return v
}

// YAML node helpers.

// scalar is a plain scalar whose type YAML infers (keys, numbers, durations).
func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

// str is a scalar that stays a string whatever it holds.
func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func strList(items []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode}
	for _, s := range items {
		n.Content = append(n.Content, str(s))
	}
	return n
}

func strValues(n *yaml.Node) []string {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	var out []string
	for _, it := range n.Content {
		out = append(out, it.Value)
	}
	return out
}

func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func set(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, scalar(key), v)
}

func del(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

func rename(m *yaml.Node, from, to string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == from {
			m.Content[i].Value = to
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// experiment converts a coder_eval experiment: defaults and each variant are partial task
// fields, converted like a task's; repeats moves to the experiment; coder_eval names the
// tasks on the command line, so the output has no tasks list (a note: ceval takes them there too).
func (c *conv) experiment(root *yaml.Node) {
	var kept []*yaml.Node
	var repeats, variants *yaml.Node
	var defaultsChain *yaml.Node
	chains := map[*yaml.Node]mutationChain{}
	layer := func(where string, m *yaml.Node) {
		if m.Kind != yaml.MappingNode {
			c.unmapped(m, where, "not a mapping")
			return
		}
		var rest []*yaml.Node
		var templates *yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			switch k.Value {
			case "repeats":
				if where == "defaults" {
					repeats = v
					c.note(k, "defaults.repeats", "became the experiment's repeats")
				} else {
					c.unmapped(k, where+".repeats", "ceval repeats every variant the same number of times (the experiment's repeats): split the variant into its own experiment")
				}
			case "driver":
				c.note(k, where+".driver", "dropped: ceval always runs a hardened container")
			case "template_sources":
				templates = v
			case "prompt_mutations":
				if v.Kind != yaml.SequenceNode {
					c.unmapped(v, where+".prompt_mutations", "not a list of mutations")
				} else if where == "defaults" {
					defaultsChain = v
				} else {
					chains[m] = newChain(where, v.Content)
				}
			case "description":
				if where != "defaults" {
					m.HeadComment = strings.TrimSpace(m.HeadComment + "\n" + v.Value)
					c.note(k, where+".description", "became a comment on the variant")
					continue
				}
				rest = append(rest, k, v)
			default:
				rest = append(rest, k, v)
			}
		}
		m.Content = rest
		if templates != nil {
			sb := get(m, "sandbox")
			if sb == nil {
				sb = &yaml.Node{Kind: yaml.MappingNode}
				set(m, "sandbox", sb)
			}
			set(sb, "template_sources", templates)
			c.note(templates, where+".template_sources", "replaces the task's template, where coder_eval appended to it")
		}
		c.partial, c.prefix = true, where+"."
		c.task(m)
		c.partial, c.prefix = false, ""
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "experiment_id", "description":
			kept = append(kept, k, v)
		case "defaults":
			layer("defaults", v)
			kept = append(kept, k, v)
		case "variants":
			for j, item := range v.Content {
				where := fmt.Sprintf("variants[%d]", j)
				id := get(item, "variant_id")
				if id == nil {
					c.unmapped(item, where, "no variant_id")
					continue
				}
				// variant_id is not a task field: convert the rest, then put it back first
				del(item, "variant_id")
				layer(where, item)
				item.Content = append([]*yaml.Node{scalar("variant_id"), id}, item.Content...)
			}
			variants = v
			kept = append(kept, k, v)
		default:
			c.unmapped(k, k.Value, "not a coder_eval experiment field known to this importer")
		}
	}
	if repeats != nil {
		kept = append(kept, scalar("repeats"), repeats)
	}
	// Mutation chains: the defaults' first, then the variant's own (coder_eval's order).
	if defaultsChain != nil {
		if variants == nil || len(variants.Content) == 0 {
			c.unmapped(defaultsChain, "defaults.prompt_mutations", "no variants to apply them to: ceval applies prompt changes per variant")
		}
		if variants != nil {
			c.note(defaultsChain, "defaults.prompt_mutations", "applied to every variant before its own mutations, as coder_eval does")
			defaults := newChain("defaults", defaultsChain.Content)
			for j, item := range variants.Content {
				own, ok := chains[item]
				if !ok {
					own = newChain(fmt.Sprintf("variants[%d]", j), nil)
				}
				chains[item] = mutationChain{where: own.where,
					steps: append(append([]*yaml.Node{}, defaults.steps...), own.steps...),
					names: append(append([]string{}, defaults.names...), own.names...)}
			}
		}
	}
	if variants != nil {
		if items := c.promptMutations(variants, chains); len(items) > 0 {
			kept = append(kept, scalar("prompt_mutations"), &yaml.Node{Kind: yaml.SequenceNode, Content: items})
		}
		if len(variants.Content) == 0 {
			for i := 0; i+1 < len(kept); i += 2 {
				if kept[i+1] == variants {
					kept = append(kept[:i], kept[i+2:]...)
					break
				}
			}
		}
	}
	root.Content = kept
	c.note(root, "tasks", "none in the file, as in coder_eval: name the converted task files after it (ceval run EXPERIMENT TASK...), or add tasks: [...]")
}

// dataset maps coder_eval's dataset onto ceval's (one rows file, rows keyed by id); inline
// rows are written to a rows file beside the output (c.files). nil when it cannot map.
func (c *conv) dataset(v *yaml.Node) *yaml.Node {
	if v.Kind != yaml.MappingNode {
		c.unmapped(v, "dataset", "not a mapping")
		return nil
	}
	paths, rows := get(v, "paths"), get(v, "rows")
	idField := "id"
	ok := true
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		switch k.Value {
		case "paths", "rows":
		case "id_field":
			idField = val.Value
			if idField != "id" && rows == nil && c.read == nil {
				c.unmapped(k, "dataset", "id_field %s: ceval names rows by their id field: rename %q to id in the rows file (the dataset is left out)", val.Value, val.Value)
				ok = false
			}
		case "split_field", "stratify_field", "sample_seed":
			c.note(k, "dataset."+k.Value, "dropped: it only steers coder_eval's --split and stratified sampling, and ceval runs every row")
		case "sample_per_stratum":
			c.unmapped(k, "dataset.sample_per_stratum", "ceval runs every row, where coder_eval ran at most %s per stratum: cut the rows file to the sample you want", val.Value)
		default:
			c.unmapped(k, "dataset."+k.Value, "not a field of coder_eval's dataset this importer maps")
		}
	}
	switch {
	case !ok:
		return nil
	case rows != nil && paths != nil:
		c.unmapped(v, "dataset", "both rows and paths: coder_eval refuses it; keep one")
		return nil
	case rows != nil:
		var list []map[string]any
		if err := rows.Decode(&list); err != nil || len(list) == 0 {
			c.unmapped(rows, "dataset.rows", "not a non-empty list of mappings")
			return nil
		}
		return c.writeRows(rows, "dataset.rows", list, idField, "the inline rows")
	case paths == nil || paths.Kind != yaml.SequenceNode || len(paths.Content) == 0:
		c.unmapped(v, "dataset", "no paths and no rows")
		return nil
	case c.read != nil && (len(paths.Content) > 1 || idField != "id" || c.upperIDs(paths.Content[0].Value)):
		// the rows files are at hand: concatenate them, in coder_eval's order
		var list []map[string]any
		var names []string
		for _, p := range paths.Content {
			data, err := c.read(p.Value)
			if err != nil {
				c.unmapped(p, "dataset.paths", "%s: %v", p.Value, err)
				return nil
			}
			for i, line := range strings.Split(string(data), "\n") {
				if strings.TrimSpace(line) == "" {
					continue
				}
				var row map[string]any
				if err := json.Unmarshal([]byte(line), &row); err != nil {
					c.unmapped(p, "dataset.paths", "%s:%d: not a JSON object: %v", p.Value, i+1, err)
					return nil
				}
				list = append(list, row)
			}
			names = append(names, p.Value)
		}
		return c.writeRows(paths, "dataset.paths", list, idField, strings.Join(names, ", "))
	case len(paths.Content) > 1:
		c.unmapped(paths, "dataset.paths", "ceval takes one rows file: concatenate them (cat A.jsonl B.jsonl > rows.jsonl) and name it in dataset.file")
		return nil
	}
	c.note(paths, "dataset.paths", "became dataset.file: %s", paths.Content[0].Value)
	return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("file"), paths.Content[0]}}
}

// upperIDs says the JSONL rows file rel holds an id ceval's lowercase row ids cannot take as
// it is (so the rows are rewritten); false when it cannot be read (the loader says why).
func (c *conv) upperIDs(rel string) bool {
	data, err := c.read(rel)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		var row struct {
			ID any `json:"id"`
		}
		if json.Unmarshal([]byte(line), &row) == nil {
			if id, ok := row.ID.(string); ok && strings.ToLower(id) != id {
				return true
			}
		}
	}
	return false
}

// writeRows writes dataset rows (inline, or read from the rows files: from) as a JSONL file
// beside the output, each row's id field copied to id, and returns the dataset: {file}
// naming it.
func (c *conv) writeRows(at *yaml.Node, field string, list []map[string]any, idField, from string) *yaml.Node {
	rows := at
	var b strings.Builder
	lowered := false
	for i, row := range list {
		if idField != "id" {
			id, has := row[idField]
			if !has {
				c.unmapped(rows, field, "row %d has no %s (the id_field)", i+1, idField)
				return nil
			}
			if _, clash := row["id"]; clash {
				c.unmapped(rows, "dataset.id_field", "the rows have both %s and id: ceval names rows by id only", idField)
				return nil
			}
			row["id"] = id
		}
		if id, ok := row["id"].(string); ok && strings.ToLower(id) != id {
			row["id"] = strings.ToLower(id)
			lowered = true
		}
		line, err := json.Marshal(row)
		if err != nil {
			c.unmapped(rows, field, "row %d: %v", i+1, err)
			return nil
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	name := strings.TrimSuffix(filepath.Base(c.file), filepath.Ext(c.file)) + ".rows.jsonl"
	if c.files == nil {
		c.files = map[string][]byte{}
	}
	c.files[name] = []byte(b.String())
	c.note(rows, field, "%s written to %s beside the task (ceval reads rows from one file)", from, name)
	if idField != "id" {
		c.note(rows, "dataset.id_field", "each row's %s copied to id in %s (ceval names rows by id)", idField, name)
	}
	if lowered {
		c.note(rows, field, "row ids lowercased in %s: ceval's row ids (part of the task ID) are lowercase", name)
	}
	return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("file"), str(name)}}
}
