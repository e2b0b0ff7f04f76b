package task

import (
	"sort"

	"ceval.dev/ceval/policy"
)

// JSON Schema (draft 2020-12) of the task file, for editors (ceval schema task). A test
// probes the loader at every mapping and holds the two to the same field names.

func jsObj(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func jsType(t, desc string) map[string]any {
	m := map[string]any{"type": t}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

func jsEnum(desc string, values ...string) map[string]any {
	return map[string]any{"type": "string", "enum": values, "description": desc}
}

func jsList(item any, desc string) map[string]any {
	return map[string]any{"type": "array", "items": item, "description": desc}
}

var (
	jsStr      = jsType("string", "")
	jsStrs     = jsList(jsStr, "")
	jsDuration = map[string]any{"type": "string", "pattern": `^[0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h)([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))*$`, "description": "a duration such as 30s, 5m or 1h30m"}
	// jsStep is a setup or after_agent step: a shell command, or {run, timeout} (the object
	// keywords apply to an object only).
	jsStep = map[string]any{"type": []string{"string", "object"}, "minLength": 1, "description": "a shell command (sh -c), or {run: COMMAND, timeout: DURATION}; default timeout 5m",
		"properties": map[string]any{"run": jsType("string", "a shell command (sh -c)"), "timeout": jsDuration}, "required": []string{"run"}, "additionalProperties": false}
	jsPath  = jsType("string", "a path relative to the task file's directory (inside the declared root)")
	jsWheel = jsObj(map[string]any{"path": jsPath, "sha256": map[string]any{"type": "string", "pattern": "^[0-9a-f]{64}$"}}, "path", "sha256")
)

// jsService is one of services.
var jsService = jsObj(map[string]any{
	"name":    map[string]any{"type": "string", "pattern": `^[a-z][a-z0-9-]{0,30}[a-z0-9]$|^[a-z]$`, "description": "the host name the agent reaches the service by"},
	"image":   jsType("string", "the service's image (default: ceval's default image)"),
	"command": map[string]any{"type": "array", "items": jsStr, "minItems": 1, "description": "the service's argv (default: the image's entrypoint and command)"},
	"env":     map[string]any{"type": "object", "additionalProperties": map[string]any{"type": []string{"string", "number", "boolean"}}, "description": "NAME: value"},
	"workdir": jsType("string", "an absolute path in the service's container (default: the image's working directory, else /workspace)"),
	"files":   jsType("string", "a directory relative to the task file, copied into the service's /workspace (never grading material)"),
	"ports":   map[string]any{"type": "array", "items": map[string]any{"type": "integer", "minimum": 1, "maximum": 65535}, "maxItems": MaxServicePorts, "description": "the TCP ports the agent may connect to"},
	"limits": jsObj(map[string]any{
		"memory_mb": map[string]any{"type": "integer", "minimum": 16},
		"cpus":      map[string]any{"type": "number", "minimum": 0.01},
		"pids":      map[string]any{"type": "integer", "minimum": 32},
		"disk_mb":   map[string]any{"type": "integer", "minimum": 1},
	}),
	"ready": jsObj(map[string]any{
		"tcp":      map[string]any{"type": "integer", "minimum": 1, "maximum": 65535, "description": "a port that must accept a connection inside the service"},
		"command":  map[string]any{"type": "array", "items": jsStr, "minItems": 1, "description": "an argv run inside the service that must exit 0"},
		"interval": jsDuration,
		"timeout":  jsDuration,
		"retries":  map[string]any{"type": "integer", "minimum": 1, "maximum": MaxReadyRetries},
	}),
	"depends_on": jsList(jsStr, "services started and ready before this one"),
	"network":    jsEnum("none (its own namespace: loopback only, the default) or host (the host's network: run only with the user's --allow-host-network, as the agent's sandbox.network: host; not with depends_on)", policy.NetworkNone, policy.NetworkHost),
	"mcp": jsObj(map[string]any{
		"transport": jsEnum("http (streamable HTTP, the default), sse (HTTP+SSE, Claude Code only) or stdio (the command speaks MCP on stdin/stdout)", MCPTransports...),
		"port":      map[string]any{"type": "integer", "minimum": 1, "maximum": 65535, "description": "one of ports: the HTTP endpoint's, or where ceval serves the stdio command"},
		"path":      jsType("string", "http, sse: the URL path (default /mcp, /sse)"),
	}, "port"),
}, "name", "ready")

// criterionFieldSchema types every criterion field the loader knows.
var criterionFieldSchema = map[string]any{
	"type":               nil, // filled with the enum of types
	"description":        jsStr,
	"weight":             jsType("number", "the criterion's weight in the score"),
	"pass_threshold":     map[string]any{"type": "number", "minimum": 0, "maximum": 1},
	"path":               jsType("string", "a workspace path (relative to /workspace), or an absolute path below one of sandbox.outputs"),
	"includes":           jsStrs,
	"excludes":           jsStrs,
	"pattern":            jsType("string", "a regular expression (RE2)"),
	"patterns":           jsList(jsObj(map[string]any{"pattern": jsStr, "must_match": jsType("boolean", "")}, "pattern"), ""),
	"json_schema":        map[string]any{"type": []string{"object", "string"}, "description": "an inline JSON Schema, or a schema file next to the task"},
	"assertions":         jsList(jsObj(map[string]any{"expression": jsType("string", "a JMESPath expression"), "operator": jsStr, "expected": map[string]any{}}, "expression"), ""),
	"expected_label":     jsStr,
	"allowed_labels":     jsStrs,
	"case_sensitive":     jsType("boolean", "classification_match: false matches the label up to case (default true: exact)"),
	"command":            jsType("string", "a shell command run in the WASM toolbox over the snapshot"),
	"timeout":            jsDuration,
	"expected_exit_code": map[string]any{"type": "integer", "minimum": 0, "maximum": 255},
	"expected_stdout":    jsStr,
	"stdout_match":       jsEnum("", "exact", "contains", "regex"),
	"score_from_stdout":  jsType("boolean", ""),
	"reward_key":         jsType("string", "with score_from_stdout or harbor_reward: the named reward that is the score (default: the mean of all)"),
	"harbor_reward":      jsType("boolean", "sandbox: container: run command as Harbor's tests/test.sh and score the reward its own shell writes to /tmp/logs/verifier"),
	"uses_reference":     jsType("boolean", ""),
	"module":             jsPath,
	"sha256":             map[string]any{"type": "string", "pattern": "^[0-9a-f]{64}$"},
	"args":               jsStrs,
	"tool":               jsStr,
	"argv":               jsObj(map[string]any{"positional": jsStrs, "flags": jsType("object", "flag -> {equals|contains|regex|present|absent: value}")}),
	"min_count":          map[string]any{"type": "integer", "minimum": 0},
	"max_count":          map[string]any{"type": "integer", "minimum": 0},
	"tool_pattern":       jsStr,
	"input_field":        jsStr,
	"input_pattern":      jsStr,
	"exclude_pattern":    jsStr,
	"outcome":            jsEnum("", "any", "ok", "error"),
	"target":             map[string]any{"type": "integer", "minimum": 0},
	"max":                map[string]any{"type": "integer", "minimum": 0},
	"skill":              jsStr,
	"expect_used":        jsType("boolean", ""),
	"tool_name":          jsStr,
	"command_pattern":    jsStr,
	"require_success":    jsType("boolean", ""),
	"expected_commands":  map[string]any{"type": "integer", "minimum": 1},
	"skill_name":         jsStr,
	"expected_skill":     jsStr,
	"rubric":             jsStr,
	"rubric_file":        jsPath,
	"files":              jsStrs,
	"max_file_bytes":     map[string]any{"type": "integer", "minimum": 1},
	"reference_files":    jsStrs,
	"samples":            map[string]any{"type": "integer", "minimum": 1},
	"judge_fixture":      jsPath,
	"judge_agent":        jsStr,
	"judge_model":        jsStr,
	"agent_fixture":      jsPath,
	"max_turns":          map[string]any{"type": "integer", "minimum": 1},
	"sandbox":            jsEnum("where the command runs: the WASM sandbox (default) or a verifier container", TierWASM, TierContainer),
	"image":              jsType("string", "the verifier container's image (sandbox: container); default the task's"),
	"network":            jsEnum("", policy.NetworkNone, policy.NetworkHost),
	"memory_mb":          map[string]any{"type": "integer", "minimum": 16},
	"pids":               map[string]any{"type": "integer", "minimum": 8},
	"python_packages":    jsList(jsStr, "Debian pure-Python packages (import names) the check can import"),
	"packages":           jsList(jsStr, "Debian packages of the verifier's package image (sandbox: container; instead of image)"),
	"pip":                jsList(jsStr, "pinned pip requirements installed into the verifier's package image from pip_find_links"),
	"pip_find_links":     jsType("string", "a directory of wheels beside the task, for pip"),
	"python_wheels":      jsList(jsWheel, "pure-Python wheels (py3-none-any) beside the task the check can import"),
	"services":           jsList(jsStr, "the task's services this verifier criterion reaches by name; they run until it is graded (sandbox: container only)"),
	"tests":              jsPath,
	"all_or_nothing":     jsType("boolean", "pytest: 1 only when every collected test passed"),
	"isolation":          jsType("string", "pytest, sandbox: container: process runs the agent's modules in a process of their own behind plain-data proxies, so they cannot rewrite the verdict (none: in the test process)"),
}

var criterionCommon = []string{"type", "description", "weight", "pass_threshold"}

// criterionSchema: every field of every type, then per type only its own (if/then).
func criterionSchema() map[string]any {
	props := map[string]any{}
	for name, s := range criterionFieldSchema {
		props[name] = s
	}
	props["type"] = jsEnum("the criterion's type", CriterionTypes...)
	var rules []any
	types := append([]string{}, CriterionTypes...)
	sort.Strings(types)
	for _, t := range types {
		names := append(append([]string{}, criterionCommon...), lookupCriterionType(t).fieldNames()...)
		rules = append(rules, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": t}}, "required": []string{"type"}},
			"then": map[string]any{"propertyNames": map[string]any{"enum": names}},
		})
	}
	s := jsObj(props, "type")
	s["allOf"] = rules
	return s
}

// jsTaskStep is one of steps.
func jsTaskStep() map[string]any {
	return jsObj(map[string]any{
		"name":             map[string]any{"type": "string", "pattern": taskStepNamePattern.String(), "description": "names the step in the result and the run directory (default step-N)"},
		"prompt":           jsType("string", "what the agent is asked in this step"),
		"prompt_file":      jsPath,
		"files":            jsType("string", "a directory relative to the task file, copied into the workspace before this step's agent starts (never grading material)"),
		"success_criteria": map[string]any{"type": "array", "minItems": 1, "items": criterionSchema()},
		"stop_on_failure":  jsType("boolean", "skip the steps after this one when it is not SUCCESS (default: the task's stop_on_failure)"),
		"solution":         jsObj(map[string]any{"script": jsPath}, "script"),
	}, "success_criteria")
}

// TaskSchema is the JSON Schema of a task file.
func TaskSchema() map[string]any {
	pos := map[string]any{"type": "integer", "minimum": 1}
	s := jsObj(map[string]any{
		"task_id":             map[string]any{"type": "string", "pattern": taskIDPattern.String()},
		"description":         jsStr,
		"tags":                jsStrs,
		"initial_prompt":      jsStr,
		"initial_prompt_file": jsPath,
		"agent": jsObj(map[string]any{
			"type":            jsEnum("the agent: any CLI (command), or a known one", AgentCommand, AgentClaudeCode, AgentCodex),
			"command":         jsList(jsStr, "argv of a command agent"),
			"model":           jsStr,
			"args":            jsList(jsStr, "extra arguments to the agent CLI"),
			"env_passthrough": jsList(map[string]any{"type": "string", "pattern": envNamePattern.String()}, ""),
			"gateway": jsObj(map[string]any{
				"mode":         jsEnum("", GatewayForward, GatewayRecord, GatewayReplay),
				"fixture":      jsPath,
				"server_tools": jsType("boolean", ""),
			}),
		}, "type"),
		"sandbox": jsObj(map[string]any{
			"packages":       jsList(jsStr, "Debian packages of the package image"),
			"pip":            jsList(jsStr, "pinned NAME==VERSION requirements"),
			"pip_find_links": jsPath,
			"image":          jsStr,
			"network":        jsEnum("", policy.NetworkNone, policy.NetworkHost),
			"image_workdir":  jsEnum("copy (the default when the image names a WorkingDir other than /): the workspace starts from the image's WorkingDir tree; ignore: it starts empty", ImageWorkdirCopy, ImageWorkdirIgnore),
			"outputs":        jsList(jsStr, "absolute container paths outside /workspace (e.g. /tmp, /output) the agent may write, capped and copied out like the workspace; a criterion's absolute path below one reads that copy"),
			"limits": jsObj(map[string]any{
				"timeout":   jsDuration,
				"memory_mb": map[string]any{"type": "integer", "minimum": 16},
				"cpus":      map[string]any{"type": "number", "minimum": 0.01},
				"pids":      map[string]any{"type": "integer", "minimum": 32},
				"disk_mb":   map[string]any{"type": "integer", "minimum": 1},
			}),
			"workspace": jsObj(map[string]any{
				"starter_files": jsList(jsObj(map[string]any{"path": jsStr, "content": jsStr}, "path", "content"), ""),
				"template_dir":  map[string]any{"anyOf": []any{jsPath, map[string]any{"type": "array", "minItems": 1, "items": jsPath}}, "description": "a directory, or a list copied in order (later entries replace earlier ones)"},
			}),
		}),
		"reference":        jsObj(map[string]any{"directory": jsPath}),
		"success_criteria": map[string]any{"type": "array", "minItems": 1, "items": criterionSchema()},
		"protected_mocks": jsList(jsObj(map[string]any{
			"tool":         jsStr,
			"fixture":      jsPath,
			"max_requests": pos,
		}, "tool"), ""),
		"plugins": jsList(jsObj(map[string]any{"path": jsPath, "mount": jsStr}, "path"), ""),
		"run_limits": jsObj(map[string]any{
			"max_turns":         pos,
			"max_input_tokens":  pos,
			"max_output_tokens": pos,
			"max_total_tokens":  pos,
			"max_usd":           map[string]any{"type": "number", "exclusiveMinimum": 0},
		}),
		"iterations": jsObj(map[string]any{
			"max":      map[string]any{"type": "integer", "minimum": 1, "maximum": MaxIterations, "description": "agent runs in all, the first included"},
			"feedback": jsEnum("what a follow-up prompt reveals of the failed criteria: none, their descriptions, or also their type, status, score, weight and parts met (never a check's output or an expected value)", FeedbackNone, FeedbackDescriptions, FeedbackDetails),
		}, "max"),
		"simulated_user": jsObj(map[string]any{
			"instructions": map[string]any{"type": "string", "minLength": 1, "maxLength": MaxUserInstructions},
			"max_turns":    map[string]any{"type": "integer", "minimum": 1, "maximum": MaxIterations - 1, "description": "follow-up prompts the simulated user may write"},
			"fixture":      jsPath,
		}, "instructions", "max_turns"),
		"solution": jsObj(map[string]any{"script": jsPath, "files": jsPath}),
		"grader": jsObj(map[string]any{
			"sandbox":        jsEnum("the default tier of the task's run_command and pytest criteria", TierWASM, TierContainer),
			"image":          jsStr,
			"network":        jsEnum("", policy.NetworkNone, policy.NetworkHost),
			"memory_mb":      map[string]any{"type": "integer", "minimum": 16},
			"pids":           map[string]any{"type": "integer", "minimum": 8},
			"timeout":        jsDuration,
			"packages":       jsList(jsStr, "Debian packages of the verifier's package image (instead of image)"),
			"pip":            jsList(jsStr, "pinned pip requirements installed into the package image from pip_find_links"),
			"pip_find_links": jsPath,
		}),
		"grader_files":    jsList(jsPath, "task files (or directories) executing criteria see read-only at /task"),
		"python_packages": jsList(jsStr, "Debian pure-Python packages (import names) every Python criterion can import"),
		"setup":           jsList(jsStep, "commands run in the agent's sandbox before the agent starts; a failing one makes the run ERROR"),
		"after_agent":     jsList(jsStep, "commands run in the agent's sandbox after the agent is gone, before the snapshot (e.g. a build); a failure is recorded"),
		"python_wheels":   jsList(jsWheel, "pure-Python wheels (py3-none-any) beside the task every Python criterion can import"),
		"services":        map[string]any{"type": "array", "items": jsService, "maxItems": MaxServices, "description": "the task's own programs beside the agent, each a hardened container started and ready before the agent; the agent reaches NAME:PORT"},
		"steps": map[string]any{"type": "array", "minItems": 1, "maxItems": MaxTaskSteps, "items": jsTaskStep(),
			"description": "a multi-step task: the agent's turns, in order, in one workspace (and session), each graded after it (instead of initial_prompt and success_criteria)"},
		"step_score":      jsEnum("how a multi-step task's score and status come from its steps': all (the lowest step's score; SUCCESS when every step is), mean (their mean; SUCCESS when it reaches 0.9), last (the last step's)", StepScoreRules...),
		"stop_on_failure": jsType("boolean", "a multi-step task: skip the steps after one that is not SUCCESS (each step may say otherwise)"),
		// read by LoadAll before the loader: one task per row
		"dataset": jsObj(map[string]any{"file": jsType("string", "rows as .jsonl, .csv or .yaml, relative to the task file; ${row.field} is substituted in initial_prompt, sandbox and success_criteria")}, "file"),
	}, "task_id")
	s["oneOf"] = []any{map[string]any{"required": []string{"success_criteria"}}, map[string]any{"required": []string{"steps"}}}
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["title"] = "ceval task file"
	return s
}

// ExperimentSchema is the JSON Schema of an experiment file. defaults and each variant hold
// task fields (all optional; task_id is each task's own), merged over every task.
func ExperimentSchema() map[string]any {
	t := TaskSchema()
	fields := map[string]any{}
	for k, v := range t["properties"].(map[string]any) {
		if k != "task_id" && k != "dataset" {
			fields[k] = v
		}
	}
	layer := func(extra map[string]any, required ...string) map[string]any {
		props := map[string]any{}
		for k, v := range fields {
			props[k] = v
		}
		for k, v := range extra {
			props[k] = v
		}
		return jsObj(props, required...)
	}
	s := jsObj(map[string]any{
		"experiment_id": map[string]any{"type": "string", "pattern": taskIDPattern.String()},
		"description":   jsStr,
		"root":          jsType("string", "the experiment's root, relative to the file: inside the user's --root (default: the file's directory), never wider"),
		"tasks":         map[string]any{"type": "array", "minItems": 1, "items": jsStr, "description": "task files and globs relative to the experiment file; leave out to name them on the command line"},
		"defaults":      layer(nil),
		"variants": map[string]any{"type": "array", "minItems": 1, "items": layer(map[string]any{
			"variant_id": map[string]any{"type": "string", "pattern": taskIDPattern.String()},
			"prompt": jsObj(map[string]any{
				"prefix": jsType("string", "text before each task's prompt, as written (no separator added)"),
				"suffix": jsType("string", "text after each task's prompt, as written"),
			}),
		}, "variant_id")},
		"prompt_mutations": map[string]any{"type": "array", "minItems": 1, "maxItems": MaxPromptMutations, "items": mutationSchema(),
			"description": "each item is one more variant whose tasks' prompts pass through its step (or steps)"},
		"stop_early": jsObj(map[string]any{
			"compare":    map[string]any{"type": "array", "items": jsStr, "minItems": 2, "maxItems": 2, "description": "the two variants whose pass rates the sequential test compares"},
			"metric":     jsEnum("what is compared", "pass_rate"),
			"confidence": map[string]any{"type": "number", "minimum": 0.5, "maximum": 0.9999, "description": "1 - the false-positive rate the test keeps (default 0.95)"},
			"min_runs":   map[string]any{"type": "integer", "minimum": 1, "description": "runs of each compared variant before the first look (default 1)"},
		}, "compare"),
		"repeats": map[string]any{"type": "integer", "minimum": 1, "maximum": MaxRepeats},
		"parallel": map[string]any{"oneOf": []any{
			map[string]any{"type": "integer", "minimum": 1, "maximum": MaxParallel},
			map[string]any{"const": "auto"}}},
		"tags": jsStrs,
	}, "experiment_id")
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["title"] = "ceval experiment file"
	return s
}

// mutationSchema is one item of prompt_mutations: variant_id, base, and one step's fields
// or steps.
func mutationSchema() map[string]any {
	step := promptStepFields()
	item := map[string]any{
		"variant_id": map[string]any{"type": "string", "pattern": taskIDPattern.String(), "description": "default: TYPE-N (N its 1-based place in the list)"},
		"base":       jsType("string", "a declared variant whose fields and prompt it starts from (default: the tasks as written)"),
		"steps":      map[string]any{"type": "array", "minItems": 1, "items": jsObj(step, "type"), "description": "several steps, applied in order"},
	}
	for k, v := range step {
		item[k] = v
	}
	return jsObj(item)
}

func promptStepFields() map[string]any {
	return map[string]any{
		"type":         jsEnum("what the step does", mutationKinds...),
		"content":      jsType("string", "prefix, suffix: the text to add"),
		"separator":    jsType("string", "prefix, suffix: between the text and the prompt (default a blank line)"),
		"pattern":      jsType("string", "replace: the text (or, with regex, the RE2 expression) to find"),
		"replacement":  jsType("string", "replace: what replaces it ($1 with regex)"),
		"regex":        jsType("boolean", "replace: pattern is an RE2 regular expression"),
		"variables":    map[string]any{"type": "object", "additionalProperties": jsStr, "description": "template: {name} placeholders and their text"},
		"instructions": jsType("string", "rephrase: how the judge model of ceval's config rewrites the prompt"),
		"fixture":      jsType("string", "rephrase: replay file {answers: [the rewritten prompt of each task, in order]}, relative to the experiment file"),
	}
}
