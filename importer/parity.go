package importer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
	"ceval.dev/ceval/task"
)

// coder_eval's defaults for the fields mapped here, which differ from ceval's own.
const (
	coderEvalStepTimeout   = "30" // pre_run/post_run timeout, seconds
	coderEvalSimulatedTurn = 8    // simulation.max_turns (agent runs, the first included)
)

// steps maps coder_eval's pre_run or post_run (a list of {command, timeout, fail_on_error})
// onto ceval's setup or after_agent (a list of {run, timeout}); nil when nothing maps.
// coder_eval's 30 s default timeout is written out, since ceval's is 5 minutes.
func (c *conv) steps(k, v *yaml.Node, to string) *yaml.Node {
	from := k.Value
	if v.Kind != yaml.SequenceNode {
		c.unmapped(v, from, "not a list of commands")
		return nil
	}
	out := &yaml.Node{Kind: yaml.SequenceNode}
	for i, item := range v.Content {
		where := fmt.Sprintf("%s[%d]", from, i)
		if item.Kind != yaml.MappingNode {
			c.unmapped(item, where, "not a mapping with a command")
			continue
		}
		cmd := get(item, "command")
		if cmd == nil || cmd.Kind != yaml.ScalarNode || strings.TrimSpace(cmd.Value) == "" {
			c.unmapped(item, where, "no command")
			continue
		}
		run := cmd.Value
		timeout := scalar(coderEvalStepTimeout)
		ok := true
		for j := 0; j+1 < len(item.Content); j += 2 {
			fk, fv := item.Content[j], item.Content[j+1]
			switch fk.Value {
			case "command":
			case "timeout":
				if _, err := strconv.ParseFloat(fv.Value, 64); err != nil || fv.Kind != yaml.ScalarNode {
					c.unmapped(fv, where+".timeout", "%q is not a number of seconds", fv.Value)
					ok = false
					continue
				}
				timeout = fv
			case "fail_on_error":
				if from != "pre_run" {
					c.unmapped(fk, where+".fail_on_error", "not a field of coder_eval's %s", from)
					continue
				}
				if fv.Value == "false" {
					// ceval ends the run on a failing setup step: keep coder_eval's
					// "carry on" by making the step's status always 0.
					run = "( " + run + "\n) || true"
					c.note(fk, where+".fail_on_error", "false: the command is wrapped as ( COMMAND ) || true, since a failing ceval setup step ends the run as ERROR")
				}
			default:
				c.unmapped(fk, where+"."+fk.Value, "not a field of coder_eval's %s", from)
			}
		}
		if !ok {
			continue
		}
		if strings.HasSuffix(strings.TrimSpace(cmd.Value), "&") {
			c.note(cmd, where+".command", "starts a background process: ceval kills everything a step started when its shell exits, so it does not outlive the step into the agent's run")
		}
		step := &yaml.Node{Kind: yaml.MappingNode, HeadComment: item.HeadComment, LineComment: item.LineComment}
		step.Content = append(step.Content, scalar("run"), str(run), scalar("timeout"), seconds(timeout))
		out.Content = append(out.Content, step)
	}
	if len(out.Content) == 0 {
		return nil
	}
	switch from {
	case "pre_run":
		c.note(k, from, "mapped to %s: run in the agent's sandbox as its user before the agent starts (coder_eval ran it in its own environment, with its variables)", to)
	case "post_run":
		c.note(k, from, "mapped to %s, which runs once the agent is gone and BEFORE the snapshot and grading (coder_eval ran post_run after grading): what it changes in the workspace is graded; drop cleanup-only steps", to)
	}
	if c.partial {
		c.note(k, from, "an experiment's %s replaces the task's %s, where coder_eval ran both", to, to)
	}
	return out
}

// simulation maps coder_eval's simulation (persona, goal, constraints, max_turns, ...) onto
// ceval's simulated_user; nil when disabled or when nothing maps.
func (c *conv) simulation(k, v *yaml.Node, root *yaml.Node) *yaml.Node {
	if v.Kind != yaml.MappingNode {
		c.unmapped(v, "simulation", "not a mapping")
		return nil
	}
	if e := get(v, "enabled"); e == nil || e.Value != "true" {
		if !c.partial {
			c.note(k, "simulation (enabled: false)", "not enabled: dropped (coder_eval runs the agent once)")
			return nil
		}
	}
	var parts []string
	turns := coderEvalSimulatedTurn
	for i := 0; i+1 < len(v.Content); i += 2 {
		fk, fv := v.Content[i], v.Content[i+1]
		where := "simulation." + fk.Value
		switch fk.Value {
		case "enabled":
		case "persona":
			parts = append(parts, "Persona:\n"+strings.TrimSpace(fv.Value))
		case "goal":
			parts = append(parts, "Goal:\n"+strings.TrimSpace(fv.Value))
		case "constraints":
			var rules []string
			for _, r := range strValues(fv) {
				rules = append(rules, "- "+strings.TrimSpace(r))
			}
			if len(rules) > 0 {
				parts = append(parts, "Rules:\n"+strings.Join(rules, "\n"))
			}
		case "max_turns":
			n, err := strconv.Atoi(fv.Value)
			if err != nil || n < 1 {
				c.unmapped(fv, where, "%q is not a positive number of turns", fv.Value)
				return nil
			}
			turns = n
			if n > task.MaxIterations {
				c.note(fv, where, "%d clamped to %d: ceval runs the agent at most %d times (simulated_user.max_turns %d follow-ups)", n, task.MaxIterations, task.MaxIterations, task.MaxIterations-1)
				turns = task.MaxIterations
			}
		case "stop_token":
			c.note(fk, where, "dropped: ceval's simulated user ends the conversation by answering done, not with a token")
		case "stop_on_criteria_pass", "check_criteria":
			c.note(fk, where, "ceval grades after every turn and ends the conversation at SUCCESS")
		case "max_total_tokens":
			c.unmapped(fk, where, "a budget over the agent and the simulator together has no ceval equivalent: run_limits.max_total_tokens bounds the agent's tokens")
		case "n_trials":
			c.unmapped(fk, where, "run the task repeatedly with the experiment's repeats")
		default:
			c.unmapped(fk, where, "not a field of coder_eval's simulation")
		}
	}
	if c.partial {
		c.unmapped(k, "simulation", "ceval takes simulated_user from the task: a variant cannot change part of it; give each variant's task its own")
		return nil
	}
	if get(root, "initial_prompt") == nil && get(root, "initial_prompt_file") == nil {
		goal := get(v, "goal")
		if goal == nil || strings.TrimSpace(goal.Value) == "" {
			c.unmapped(k, "simulation", "no initial_prompt: ceval's simulated user answers the agent, it does not open the conversation; write the opening message as initial_prompt")
			return nil
		}
		set(root, "initial_prompt", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.LiteralStyle, Value: strings.TrimSpace(goal.Value) + "\n"})
		c.note(goal, "simulation.goal", "no initial_prompt: coder_eval's simulated user opened the conversation, ceval's agent starts from initial_prompt, so the goal became initial_prompt: reword it as the user's first message")
	}
	if len(parts) == 0 {
		c.unmapped(k, "simulation", "no persona or goal to instruct the simulated user with")
		return nil
	}
	if turns == 1 {
		c.note(k, "simulation.max_turns", "1: the agent runs once, as without a simulated user")
		return nil
	}
	c.note(k, "simulation", "mapped to simulated_user; its model is the judge of ceval's config (or simulated_user.fixture in replay), and the task's description is not shown to it")
	out := &yaml.Node{Kind: yaml.MappingNode}
	// coder_eval counts agent runs, the first included; ceval counts the simulated user's
	// follow-up prompts.
	out.Content = append(out.Content,
		scalar("instructions"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.LiteralStyle, Value: strings.Join(parts, "\n\n") + "\n"},
		scalar("max_turns"), scalar(strconv.Itoa(turns-1)))
	return out
}

// mutationChain is one coder_eval variant's prompt_mutations (the defaults' first), applied
// in order to each task's prompt.
type mutationChain struct {
	where string
	steps []*yaml.Node // coder_eval's mutation mappings
	names []string     // each step's field name in the input, for problems
}

// newChain is a variant's own chain (where: variants[j]).
func newChain(where string, steps []*yaml.Node) mutationChain {
	ch := mutationChain{where: where, steps: steps}
	for i := range steps {
		ch.names = append(ch.names, fmt.Sprintf("%s.prompt_mutations[%d]", where, i))
	}
	return ch
}

// promptMutations maps coder_eval's per-variant mutation chains. A chain of prefixes and
// suffixes becomes the variant's prompt: {prefix, suffix} (exact: coder_eval applies each
// in turn, content+separator before or separator+content after). Any other chain becomes one
// item of ceval's experiment-level prompt_mutations, which is a variant of its own: the
// coder_eval variant may then set nothing else, and it leaves the variants list.
func (c *conv) promptMutations(variants *yaml.Node, chains map[*yaml.Node]mutationChain) (items []*yaml.Node) {
	var kept []*yaml.Node
	for _, v := range variants.Content {
		ch, ok := chains[v]
		if !ok || len(ch.steps) == 0 {
			kept = append(kept, v)
			continue
		}
		steps, affix, ok := c.mutationSteps(ch)
		if !ok {
			kept = append(kept, v)
			continue
		}
		if affix != nil {
			set(v, "prompt", affix)
			c.note(v, ch.where+".prompt_mutations", "became the variant's prompt: {prefix, suffix} (the defaults' chain first, as coder_eval applied it)")
			kept = append(kept, v)
			continue
		}
		if len(v.Content) > 2 { // variant_id and more
			c.unmapped(v, ch.where+".prompt_mutations", "a replace, template or rephrase mutation is a variant of its own in ceval (experiment-level prompt_mutations), which cannot also change other fields: split this variant in two experiments")
			kept = append(kept, v)
			continue
		}
		item := &yaml.Node{Kind: yaml.MappingNode, HeadComment: v.HeadComment}
		item.Content = append(item.Content, scalar("variant_id"), get(v, "variant_id"), scalar("steps"), &yaml.Node{Kind: yaml.SequenceNode, Content: steps})
		items = append(items, item)
		c.note(v, ch.where, "becomes an item of prompt_mutations: ceval lists it after the declared variants")
	}
	variants.Content = kept
	return items
}

// mutationSteps converts a chain into ceval steps, and into a prompt affix when it holds only
// prefixes and suffixes; ok is false when a step cannot be carried over (reported).
func (c *conv) mutationSteps(ch mutationChain) (steps []*yaml.Node, affix *yaml.Node, ok bool) {
	prefix, suffix := "", ""
	onlyAffix := true
	for i, m := range ch.steps {
		where := ch.names[i]
		if m.Kind != yaml.MappingNode {
			c.unmapped(m, where, "not a mapping with a type")
			return nil, nil, false
		}
		typ := ""
		if t := get(m, "type"); t != nil {
			typ = t.Value
		}
		fields := map[string][]string{
			"prefix":   {"content", "separator"},
			"suffix":   {"content", "separator"},
			"replace":  {"pattern", "replacement", "regex"},
			"template": {"variables"},
			"rephrase": {"instructions"},
		}[typ]
		if fields == nil {
			c.unmapped(m, where, "mutation type %q is not one of coder_eval's prefix, suffix, replace, template, rephrase", typ)
			return nil, nil, false
		}
		step := &yaml.Node{Kind: yaml.MappingNode}
		step.Content = append(step.Content, scalar("type"), str(typ))
		sep, content := "\n\n", ""
		regex := false
		for j := 0; j+1 < len(m.Content); j += 2 {
			k, v := m.Content[j], m.Content[j+1]
			switch {
			case k.Value == "type":
			case typ == "rephrase" && (k.Value == "model" || k.Value == "temperature" || k.Value == "max_tokens"):
				c.note(k, where+"."+k.Value, "dropped: ceval rephrases with the judge model of the user's config, never one a file chooses")
			case slices.Contains(fields, k.Value):
				switch k.Value {
				case "separator":
					sep = v.Value
				case "content":
					content = v.Value
				case "regex":
					regex = v.Value == "true"
				}
				step.Content = append(step.Content, scalar(k.Value), v)
			default:
				c.unmapped(k, where+"."+k.Value, "not a field of coder_eval's %s mutation", typ)
				return nil, nil, false
			}
		}
		if typ == "replace" && regex {
			if r := get(step, "replacement"); r != nil {
				conv := pythonReplacement(r.Value)
				if conv != r.Value {
					c.note(r, where+".replacement", "Python's \\1 and \\g<name> written as RE2's ${1} and ${name} (a literal $ as $$)")
					set(step, "replacement", str(conv))
				}
			}
			c.note(m, where+".pattern", "ceval's regular expressions are RE2: Python-only syntax (lookarounds, backreferences in the pattern) fails validation")
		}
		switch typ {
		case "prefix":
			prefix = content + sep + prefix
		case "suffix":
			suffix = suffix + sep + content
		default:
			onlyAffix = false
		}
		steps = append(steps, step)
	}
	if onlyAffix {
		a := &yaml.Node{Kind: yaml.MappingNode}
		if prefix != "" {
			a.Content = append(a.Content, scalar("prefix"), str(prefix))
		}
		if suffix != "" {
			a.Content = append(a.Content, scalar("suffix"), str(suffix))
		}
		return nil, a, true
	}
	return steps, nil, true
}

// pythonBackref matches Python's group references in a re.sub replacement.
var pythonBackref = lazyregexp.New(`\\(\d+)|\\g<(\w+)>`)

// pythonReplacement turns a Python re.sub replacement into Go's regexp expansion: \1 and
// \g<name> become ${1} and ${name}, and a literal $ becomes $$.
func pythonReplacement(s string) string {
	s = strings.ReplaceAll(s, "$", "$$")
	return pythonBackref.ReplaceAllStringFunc(s, func(m string) string {
		g := pythonBackref.FindStringSubmatch(m)
		name := g[1]
		if name == "" {
			name = g[2]
		}
		return "${" + name + "}"
	})
}
