package task

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// DefaultVariant is the variant of an experiment that lists none: each task as written.
const DefaultVariant = "default"

// Bounds of an experiment's numbers.
const (
	MaxRepeats  = 10000
	MaxParallel = 1024
	// MaxEntries bounds the variant/task pairs an experiment expands to: each is a task
	// merged and validated, so 10000 task files under 16000 one-line variants would
	// otherwise be 1.6*10^8 loads from 1 MB of files.
	MaxEntries = 20000
)

// Experiment is a loaded experiment file: every (variant, task) pair it expands to, each a
// task fully merged (defaults under it, the variant and the -D overrides over it) and
// validated like a task file.
type Experiment struct {
	Path        string // absolute path of the experiment file
	Dir         string // its directory: task paths and the paths in defaults and variants resolve here
	ID          string
	Description string
	Repeats     int // runs of each entry; at least 1
	Parallel    int // runs at once; 0 leaves the choice to the scheduler
	// ParallelAuto is `parallel: auto`: the scheduler picks and adjusts the runs at once
	// from the host, as -j auto (the command line's -j still wins).
	ParallelAuto bool
	Tags         []string // the filter applied: a task runs when it has one of these; empty = all
	Variants     []string // variant IDs in file order
	Overrides    []string // the -D path=value overrides applied, as given
	Entries      []Entry  // variant-major, tasks in the order the tasks list names them
	// Root is the experiment's declared root (its root: field, else --root, else Dir): the
	// tasks list and the tasks' material may name anything inside it, nothing outside.
	Root string

	rootNode *yaml.Node // the root: field, when given
	rootRel  string
	// tasksFromCLI: the command line names the tasks, so the file may leave tasks out
	tasksFromCLI bool
	// ExcludeTags is the --exclude-tags filter applied.
	ExcludeTags []string
	// UserRoot is the declared root the user gave (--root), absolute; "" when none.
	UserRoot string
	// TaskFiles are the task files the command line named (absolute), which replaced the
	// file's tasks list; nil when the list was used. A resume names them again.
	TaskFiles []string
	// StopEarly, when set, stops launching runs once the compared variants' pass rates are
	// told apart (stop_early).
	StopEarly *StopEarly
	// Mutations are the variants prompt_mutations made, by variant ID.
	Mutations map[string]*PromptMutation
}

// Entry is one task under one variant.
type Entry struct {
	Variant string
	Task    *Task
	// Mutation is the prompt mutation of the entry's variant, nil for a declared variant.
	// Task.Prompt is its result, except when it rephrases (Mutation.Rephrases): then
	// Task.Prompt is the prompt before it, until the experiment starts.
	Mutation *PromptMutation
	Index    int // the entry's position among its variant's entries (a rephrase fixture's answer)
	// PromptVaried: the variant's prompt or a mutation changed the task's prompt.
	PromptVaried bool
}

// ExperimentOptions adjust an experiment as it loads.
type ExperimentOptions struct {
	Overrides []string // -D path=value, applied over every task last; value is YAML
	Tags      []string // replaces the file's tags filter when non-nil
	// Root is the user's declared root (--root): the experiment's root: may narrow it,
	// never widen it. Empty: the experiment file's directory.
	Root string
	// ExcludeTags drops the tasks that have any of these tags (after the tags filter).
	ExcludeTags []string
	// Tasks, when non-nil, are task files named on the command line (paths as the user gave
	// them): they replace the file's tasks list, which may then be left out. They are held
	// to the experiment's root like the list.
	Tasks []string
}

var overridePath = lazyregexp.New(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// IsExperiment reports whether the file at path looks like an experiment file (a mapping
// with experiment_id) rather than a task file. Unreadable or invalid YAML is not one, so
// the task loader reports it.
func IsExperiment(path string) bool {
	data, err := readCapped(path)
	if err != nil {
		return false
	}
	doc, err := readDoc(path, data, "experiment")
	if err != nil || len(doc.Content) == 0 {
		return false
	}
	return hasKey(resolve(doc.Content[0]), "experiment_id")
}

// rawExperiment is the experiment file before its tasks are expanded.
type rawExperiment struct {
	defaults *yaml.Node
	tasks    []*yaml.Node // the tasks list's items
	variants []rawVariant
}

type rawVariant struct {
	id       string
	node     *yaml.Node   // the variant mapping without variant_id; nil when it holds nothing else
	prompt   *PromptAffix // its prompt: {prefix, suffix}
	mutation *PromptMutation
	at       *yaml.Node // where it is declared
}

// LoadExperiment reads and validates an experiment file and every task it names. Invalid
// input anywhere (the experiment, a task file, a merged task, an override) is reported as
// Problems, each at the file and position that caused it.
func LoadExperiment(path string, opts ExperimentOptions) (*Experiment, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	data, err := readCapped(abs)
	if err != nil {
		return nil, Problems{{File: path, Msg: err.Error()}}
	}
	doc, err := readDoc(path, data, "experiment")
	if err != nil {
		return nil, err
	}
	e := &Experiment{Path: abs, Dir: filepath.Dir(abs), Repeats: 1, Overrides: opts.Overrides}
	d := &decoder{file: path}
	n0 := doc.Content[0]
	e.tasksFromCLI, e.ExcludeTags = opts.Tasks != nil, opts.ExcludeTags
	raw := e.decode(d, n0)
	origin := map[*yaml.Node]string{}
	markOrigin(raw.defaults, path, origin, false)
	for _, v := range raw.variants {
		markOrigin(v.node, path, origin, false)
	}
	overrides := parseOverrides(d, opts.Overrides, origin)
	if opts.Tags != nil {
		e.Tags = opts.Tags
	}
	if len(d.problems) > 0 {
		return nil, d.problems.sorted()
	}
	expRoot, err := os.OpenRoot(e.Dir)
	if err != nil {
		return nil, fmt.Errorf("open experiment directory %s: %w", e.Dir, err)
	}
	defer expRoot.Close()
	treeRoot, err := e.openRoot(d, opts.Root, expRoot)
	if err != nil {
		return nil, err
	}
	if len(d.problems) > 0 {
		return nil, d.problems.sorted()
	}
	if treeRoot != expRoot {
		defer treeRoot.Close()
	}
	d.readFixtures(e, raw, func(rel string) ([]byte, error) {
		data, _, err := readRegular(expRoot, rel)
		return data, err
	})
	if len(d.problems) > 0 {
		return nil, d.problems.sorted()
	}

	if opts.Tasks != nil {
		raw.tasks = nil
		for _, p := range opts.Tasks {
			abs, err := filepath.Abs(p)
			if err != nil {
				return nil, err
			}
			e.TaskFiles = append(e.TaskFiles, abs)
			rel := filepath.ToSlash(mustRel(e.Dir, abs)) // as if the file's list named it
			raw.tasks = append(raw.tasks, &yaml.Node{Kind: yaml.ScalarNode, Value: rel, Line: 1, Column: 1})
		}
		if len(raw.tasks) == 0 {
			d.errorf(n0, "no tasks: give task files after the experiment file, or a tasks list in it")
			return nil, d.problems.sorted()
		}
	}
	files := e.taskFiles(d, treeRoot, raw.tasks)
	if pairs := len(files) * len(raw.variants); pairs > MaxEntries {
		d.errorf(n0, "the experiment expands to %d variant/task pairs (%d task files x %d variants), more than %d; split it", pairs, len(files), len(raw.variants), MaxEntries)
		return nil, d.problems.sorted()
	}
	var problems Problems
	problems = append(problems, d.problems...)
	seen := map[[2]string]string{}
	read := &taskReader{root: treeRoot}
	for _, f := range files {
		tdoc, taskRoot, ps := read.task(d.file, f)
		if len(ps) > 0 {
			problems = append(problems, ps...)
			continue
		}
		docs, ps := e.datasetRows(f, tdoc, taskRoot)
		if len(ps) > 0 {
			problems = append(problems, ps...)
			taskRoot.Close()
			continue
		}
		for _, rd := range docs {
			for _, v := range raw.variants {
				layers := []*yaml.Node{raw.defaults, rd.doc.Content[0], v.node}
				merged := mergeAll(append(layers, overrides...), origin)
				t, ps := e.loadMerged(f, merged, origin, expRoot, taskRoot, treeRoot)
				if len(ps) == 0 && rd.id != "" {
					ps = rd.finish(f, t)
				}
				if len(ps) == 0 {
					ps = v.applyPrompt(t, f)
				}
				if len(ps) > 0 {
					problems = append(problems, ps...)
					continue
				}
				if !hasAnyTag(t.Tags, e.Tags) || len(e.ExcludeTags) > 0 && hasAnyTag(t.Tags, e.ExcludeTags) {
					continue
				}
				key := [2]string{v.id, t.ID}
				if prev, dup := seen[key]; dup {
					problems = append(problems, Problem{File: f.name, Msg: fmt.Sprintf("variant %q runs task_id %q twice: %s gives it too", v.id, t.ID, prev)})
					continue
				}
				seen[key] = f.name
				e.Entries = append(e.Entries, Entry{Variant: v.id, Task: t, Mutation: v.mutation, PromptVaried: v.prompt != nil || v.mutation != nil})
			}
		}
		if len(e.Entries) > MaxEntries {
			problems = append(problems, Problem{File: path, Msg: fmt.Sprintf("the experiment expands to more than %d runs with its datasets' rows; split it", MaxEntries)})
			taskRoot.Close()
			break
		}
		taskRoot.Close()
	}
	if len(problems) == 0 && len(e.Entries) == 0 {
		msg := "the experiment expands to no runs"
		if len(e.Tags) > 0 {
			msg = fmt.Sprintf("no task has any of the tags %s", strings.Join(e.Tags, ", "))
		}
		if len(e.ExcludeTags) > 0 {
			msg += fmt.Sprintf(" (after --exclude-tags %s)", strings.Join(e.ExcludeTags, ","))
		}
		problems = append(problems, Problem{File: path, Msg: msg})
	}
	if len(problems) > 0 {
		return nil, dedupe(problems).sorted()
	}
	sort.SliceStable(e.Entries, func(i, j int) bool {
		return variantIndex(e.Variants, e.Entries[i].Variant) < variantIndex(e.Variants, e.Entries[j].Variant)
	})
	if ps := e.indexEntries(path, raw); len(ps) > 0 {
		return nil, ps
	}
	return e, nil
}

func variantIndex(ids []string, id string) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return len(ids)
}

// decode reads the experiment's own fields into e and returns what needs the tasks.
func (e *Experiment) decode(d *decoder, n *yaml.Node) rawExperiment {
	var raw rawExperiment
	var tasksNode, variantsNode, mutationsNode, stopNode *yaml.Node
	seen := d.mapping(n, "experiment", []field{
		{"experiment_id", func(v *yaml.Node) {
			d.str(v, "experiment_id", &e.ID)
			if e.ID != "" && !taskIDPattern.MatchString(e.ID) {
				d.errorf(resolve(v), "experiment_id %q may hold only lowercase letters, digits, '-' and '_', starting with a letter or digit", e.ID)
			}
		}},
		{"description", func(v *yaml.Node) { d.str(v, "description", &e.Description) }},
		{"root", func(v *yaml.Node) {
			e.rootNode = v
			d.str(v, "root", &e.rootRel)
		}},
		{"tasks", func(v *yaml.Node) {
			tasksNode = v
			d.list(v, "tasks", func(i int, item *yaml.Node) {
				var s string
				d.str(item, fmt.Sprintf("tasks[%d]", i), &s)
				raw.tasks = append(raw.tasks, resolve(item))
			})
		}},
		{"defaults", func(v *yaml.Node) {
			rv := resolve(v)
			if rv.Kind != yaml.MappingNode {
				d.errorf(rv, "defaults must be a mapping of task fields, got %s", kindName(rv))
				return
			}
			if k := keyNode(rv, "task_id"); k != nil {
				d.errorf(k, "defaults cannot set task_id: each task names its own")
			}
			raw.defaults = rv
		}},
		{"variants", func(v *yaml.Node) {
			variantsNode = v
			ids := map[string]bool{}
			d.list(v, "variants", func(i int, item *yaml.Node) {
				if rv, ok := d.variant(i, item, ids); ok {
					raw.variants = append(raw.variants, rv)
					e.Variants = append(e.Variants, rv.id)
				}
			})
		}},
		{"repeats", func(v *yaml.Node) {
			var r int64
			d.integer(v, "repeats", 1, MaxRepeats, &r)
			if r > 0 {
				e.Repeats = int(r)
			}
		}},
		{"parallel", func(v *yaml.Node) {
			if v.Kind == yaml.ScalarNode && v.Tag == "!!str" && v.Value == "auto" {
				e.ParallelAuto = true
				return
			}
			var p int64
			d.integer(v, "parallel (or auto)", 1, MaxParallel, &p)
			e.Parallel = int(p)
		}},
		{"tags", func(v *yaml.Node) { d.strings(v, "tags", &e.Tags) }},
		{"prompt_mutations", func(v *yaml.Node) { mutationsNode = v }},
		{"stop_early", func(v *yaml.Node) { stopNode = v }},
	})
	if seen == nil {
		return raw
	}
	if seen["experiment_id"] == nil {
		d.errorf(n, "missing required field experiment_id")
	}
	if tasksNode == nil {
		if !e.tasksFromCLI {
			d.errorf(n, "missing required field tasks (task files and globs, relative to the experiment file; or leave it out and name the task files after the experiment file on the command line)")
		}
	} else if rt := resolve(tasksNode); rt.Kind == yaml.SequenceNode && len(rt.Content) == 0 {
		d.errorf(rt, "tasks must not be empty")
	}
	if variantsNode != nil {
		if rv := resolve(variantsNode); rv.Kind == yaml.SequenceNode && len(rv.Content) == 0 {
			d.errorf(rv, "variants must not be empty (leave it out to run each task as written)")
		}
	} else {
		raw.variants = []rawVariant{{id: DefaultVariant}}
		e.Variants = []string{DefaultVariant}
	}
	if mutationsNode != nil {
		e.decodeMutations(d, mutationsNode, &raw)
	}
	if stopNode != nil {
		var compareNode *yaml.Node
		if e.StopEarly, compareNode = d.stopEarly(stopNode); e.StopEarly != nil {
			for _, id := range e.StopEarly.Compare {
				if id != "" && !contains(e.Variants, id) {
					d.errorf(compareNode, "stop_early.compare: no variant %q (the variants: %s)", id, strings.Join(e.Variants, ", "))
				}
			}
		}
	}
	return raw
}

// variant reads one item of variants: variant_id plus task fields merged over each task.
func (d *decoder) variant(i int, item *yaml.Node, ids map[string]bool) (rawVariant, bool) {
	what := fmt.Sprintf("variants[%d]", i)
	rn := resolve(item)
	if rn.Kind != yaml.MappingNode {
		d.errorf(rn, "%s must be a mapping (variant_id and task fields such as agent), got %s", what, kindName(rn))
		return rawVariant{}, false
	}
	var v rawVariant
	rest := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: rn.Line, Column: rn.Column}
	for j := 0; j+1 < len(rn.Content); j += 2 {
		k := resolve(rn.Content[j])
		switch k.Value {
		case "variant_id":
			if v.id != "" {
				d.errorf(k, "duplicate field \"variant_id\" in %s", what)
				continue
			}
			d.str(rn.Content[j+1], what+".variant_id", &v.id)
			val := resolve(rn.Content[j+1])
			switch {
			case v.id == "":
				d.errorf(val, "%s.variant_id must not be empty", what)
				return rawVariant{}, false
			case !taskIDPattern.MatchString(v.id):
				d.errorf(val, "%s.variant_id %q may hold only lowercase letters, digits, '-' and '_', starting with a letter or digit", what, v.id)
				return rawVariant{}, false
			case ids[v.id]:
				d.errorf(val, "%s.variant_id %q is given twice", what, v.id)
				return rawVariant{}, false
			}
			ids[v.id] = true
		case "task_id":
			d.errorf(k, "%s cannot set task_id: each task names its own", what)
		case "prompt":
			v.prompt = d.promptAffix(rn.Content[j+1], what+".prompt")
		default:
			rest.Content = append(rest.Content, rn.Content[j], rn.Content[j+1])
		}
	}
	if v.id == "" {
		d.errorf(rn, "%s: missing required field variant_id", what)
		return rawVariant{}, false
	}
	if len(rest.Content) > 0 {
		v.node = rest
	}
	v.at = rn
	return v, true
}

func keyNode(n *yaml.Node, key string) *yaml.Node {
	for j := 0; j+1 < len(n.Content); j += 2 {
		if k := resolve(n.Content[j]); k.Value == key {
			return k
		}
	}
	return nil
}

type taskFile struct {
	name string // as shown in messages: the experiment-relative path joined to the experiment's name
	rel  string // slash-separated, relative to the experiment's directory
	abs  string
	what string     // tasks[i], the entry that named it
	node *yaml.Node // that entry, where problems about the file itself are reported
}

// taskFiles expands the tasks list: paths and globs inside the experiment file's directory,
// each file once, in the order the list names them (a glob's matches sorted). Nothing is
// read outside that directory: see globber.
func (e *Experiment) taskFiles(d *decoder, root *os.Root, items []*yaml.Node) []taskFile {
	var out []taskFile
	seen := map[string]bool{}
	g := &globber{root: root, deadline: time.Now().Add(globTimeout), maxEntries: maxGlobEntries}
	prefix := ""
	if e.Root != e.Dir {
		prefix = filepath.ToSlash(mustRel(e.Root, e.Dir))
	}
	for i, n := range items {
		p := n.Value
		what := fmt.Sprintf("tasks[%d]", i)
		if prefix != "" && p != "" && !strings.HasPrefix(p, "/") && !strings.ContainsRune(p, 0) {
			if q := path.Join(prefix, p); q == ".." || strings.HasPrefix(q, "../") {
				d.errorf(n, "%s: %q leaves the experiment's root %s", what, p, e.Root)
				continue
			} else {
				p = q
			}
		}
		if msg := checkPattern(p); msg != "" {
			d.errorf(n, "%s: %s", what, msg)
			continue
		}
		matches, err := g.glob(p)
		if err != nil {
			d.errorf(n, "%s: %v", what, err)
			var bound *globBoundError
			if errors.As(err, &bound) {
				return nil // every later entry would pass the same bound
			}
			continue
		}
		if len(matches) == 0 {
			d.errorf(n, "%s: %q matches no file next to the experiment file", what, p)
			continue
		}
		for _, m := range matches {
			abs := filepath.Join(e.Root, filepath.FromSlash(m))
			if seen[m] || abs == e.Path { // a glob such as *.yaml finds the experiment too
				continue
			}
			seen[m] = true
			out = append(out, taskFile{
				name: filepath.Join(filepath.Dir(d.file), mustRel(e.Dir, abs)), // as the user named the experiment
				rel:  m, abs: abs, what: what, node: n,
			})
		}
	}
	return out
}

// taskReader reads an experiment's task files through its root, within a total byte bound.
type taskReader struct {
	root  *os.Root
	bytes int
}

// task reads one task file and opens its directory through the root. A file that is not a
// task file (a YAML mapping with task_id) is refused at the tasks entry that named it, with
// nothing of its content quoted: it may be any file the glob reached.
func (r *taskReader) task(expName string, f taskFile) (*yaml.Node, *os.Root, Problems) {
	refuse := func(format string, args ...any) (*yaml.Node, *os.Root, Problems) {
		p := Problem{File: expName, Line: f.node.Line, Column: f.node.Column,
			Msg: fmt.Sprintf("%s: %s: ", f.what, f.rel) + fmt.Sprintf(format, args...)}
		return nil, nil, Problems{p}
	}
	data, fi, err := readRegular(r.root, filepath.FromSlash(f.rel))
	if err != nil {
		var pe *fs.PathError
		switch {
		case strings.Contains(err.Error(), "escapes"):
			return refuse("a symlink that leaves the experiment file's directory")
		case errors.As(err, &pe):
			return refuse("%v", pe.Err)
		}
		return refuse("%v", err)
	}
	if n := hardLinks(fi); n > 1 {
		return refuse("has %d hard links; a task file must be the experiment tree's own file, not another name for one elsewhere (copy it)", n)
	}
	if r.bytes += len(data); r.bytes > maxExperimentBytes {
		return refuse("the task files together pass %d bytes", maxExperimentBytes)
	}
	doc, err := readDoc(f.name, data, "task")
	if err != nil {
		return nil, nil, err.(Problems) // positions and fixed messages only: see readDoc
	}
	if top := resolve(doc.Content[0]); top.Kind != yaml.MappingNode || keyNode(top, "task_id") == nil {
		return refuse("not a task file (a task file is a YAML mapping with task_id); nothing of its content is shown")
	}
	dir, err := r.root.OpenRoot(filepath.FromSlash(path.Dir(f.rel)))
	if err != nil {
		return refuse("open its directory: %v", err)
	}
	return doc, dir, nil
}

// loadMerged validates one merged task document with the task loader; paths of nodes from
// the experiment resolve in its directory, the others in the task file's (taskRoot). The
// merged document is held to the node budget like a file.
func (e *Experiment) loadMerged(f taskFile, merged *yaml.Node, origin map[*yaml.Node]string, expRoot, taskRoot, treeRoot *os.Root) (*Task, Problems) {
	dir := filepath.Dir(f.abs)
	d := &decoder{file: f.name, origin: origin}
	if !d.checkNodes(merged) {
		return nil, d.problems
	}
	l := &loader{decoder: d, root: taskRoot, dir: dir, expRoot: expRoot, expDir: e.Dir}
	if e.Root != e.Dir { // a declared root: the task's paths resolve inside it
		l.root, l.dir, l.declared = treeRoot, e.Root, true
		if l.prefix = filepath.FromSlash(path.Dir(f.rel)); l.prefix == "." {
			l.prefix = ""
		}
	}
	t := l.task(merged)
	if len(d.problems) > 0 {
		return nil, d.problems
	}
	t.Path, t.Dir, t.ExperimentDir = f.abs, dir, e.Dir
	plain := &decoder{file: f.name}
	v, _ := plain.value(merged)
	canon, err := json.Marshal(v)
	if err != nil {
		return nil, Problems{{File: f.name, Msg: fmt.Sprintf("merged task: %v", err)}}
	}
	sum := sha256.Sum256(canon)
	t.ConfigSHA256 = hex.EncodeToString(sum[:])
	return t, nil
}

// parseOverrides turns each -D path=value into a mapping node {path: value}; its nodes
// carry the override as their origin (positions zeroed: they come from the command line).
func parseOverrides(d *decoder, specs []string, origin map[*yaml.Node]string) []*yaml.Node {
	var out []*yaml.Node
	for _, spec := range specs {
		name := "-D " + spec
		path, value, ok := strings.Cut(spec, "=")
		if !ok || !overridePath.MatchString(path) {
			d.problems = append(d.problems, Problem{File: name, Msg: "want -D path=value, with a dotted path of field names such as agent.model"})
			continue
		}
		val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ""}
		if strings.TrimSpace(value) != "" {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(value), &doc); err != nil || len(doc.Content) != 1 {
				d.problems = append(d.problems, Problem{File: name, Msg: fmt.Sprintf("value is not YAML: %v", err)})
				continue
			}
			val = doc.Content[0]
		}
		node := val
		keys := strings.Split(path, ".")
		for i := len(keys) - 1; i >= 0; i-- {
			k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: keys[i]}
			node = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{k, node}}
		}
		markOrigin(node, name, origin, true)
		out = append(out, node)
	}
	return out
}

// markOrigin records file as the origin of n and everything below it (aliases followed);
// zero clears positions, for nodes that come from the command line.
func markOrigin(n *yaml.Node, file string, origin map[*yaml.Node]string, zero bool) {
	if n == nil {
		return
	}
	if _, done := origin[n]; done {
		return
	}
	origin[n] = file
	if zero {
		n.Line, n.Column = 0, 0
	}
	for _, c := range n.Content {
		markOrigin(c, file, origin, zero)
	}
	markOrigin(n.Alias, file, origin, zero)
}

// mergeAll merges layers bottom to top (nil layers skipped).
func mergeAll(layers []*yaml.Node, origin map[*yaml.Node]string) *yaml.Node {
	var out *yaml.Node
	for _, l := range layers {
		if l == nil {
			continue
		}
		if out == nil {
			out = l
			continue
		}
		out = merge(out, l, origin)
	}
	return out
}

// merge lays over on top of base: mappings merge key by key, recursively; anything else
// (lists included) is replaced by over. Neither input is modified, and duplicate keys
// survive so the loader still reports them.
func merge(base, over *yaml.Node, origin map[*yaml.Node]string) *yaml.Node {
	b, o := resolve(base), resolve(over)
	if b == nil || b.Kind != yaml.MappingNode || o.Kind != yaml.MappingNode {
		return over
	}
	// The merged mapping stands where the task file wrote it, when the task file did.
	src := b
	if _, fromExp := origin[b]; fromExp {
		if _, overFromExp := origin[o]; !overFromExp {
			src = o
		}
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: src.Tag, Style: src.Style, Line: src.Line, Column: src.Column}
	if f, ok := origin[src]; ok {
		origin[out] = f
	}
	used := make([]bool, len(o.Content)/2)
	// over's key positions, each key's taken in order, so merging wide mappings is linear.
	byKey, taken := map[string][]int{}, map[string]int{}
	for j := 0; j+1 < len(o.Content); j += 2 {
		k := resolve(o.Content[j]).Value
		byKey[k] = append(byKey[k], j)
	}
	find := func(key string) int {
		if i := taken[key]; i < len(byKey[key]) {
			taken[key] = i + 1
			return byKey[key][i]
		}
		return -1
	}
	for i := 0; i+1 < len(b.Content); i += 2 {
		k, v := b.Content[i], b.Content[i+1]
		if j := find(resolve(k).Value); j >= 0 {
			used[j/2] = true
			v = merge(v, o.Content[j+1], origin)
		}
		out.Content = append(out.Content, k, v)
	}
	for j := 0; j+1 < len(o.Content); j += 2 {
		if !used[j/2] {
			out.Content = append(out.Content, o.Content[j], o.Content[j+1])
		}
	}
	return out
}

func hasAnyTag(have, want []string) bool {
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if contains(have, w) {
			return true
		}
	}
	return false
}

func dedupe(ps Problems) Problems {
	seen := map[Problem]bool{}
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// mustRel is filepath.Rel of two absolute paths (which cannot fail).
func mustRel(base, target string) string {
	r, err := filepath.Rel(base, target)
	if err != nil {
		return target
	}
	return r
}

// openRoot settles the experiment's root. The user bounds it (--root, else the experiment
// file's directory); the file's root: may name a directory inside that bound, never one
// outside, so an experiment file cannot widen what it may read. The experiment file must lie
// inside its root. The root is opened through the bound's handle, so a symlink leaving the
// bound is refused too. It returns expRoot itself when the root is the experiment's directory.
func (e *Experiment) openRoot(d *decoder, userRoot string, expRoot *os.Root) (*os.Root, error) {
	bound := e.Dir
	if userRoot != "" {
		abs, err := filepath.Abs(userRoot)
		if err != nil {
			return nil, err
		}
		bound = abs
		e.UserRoot = abs
	}
	e.Root = bound
	at := e.rootNode
	if at == nil {
		at = &yaml.Node{Line: 1, Column: 1}
	}
	if e.rootNode != nil && e.rootRel != "" {
		if filepath.IsAbs(e.rootRel) {
			d.errorf(resolve(e.rootNode), "root %q is absolute: give it relative to the experiment file", e.rootRel)
			return expRoot, nil
		}
		e.Root = filepath.Join(e.Dir, e.rootRel)
	}
	rel, err := filepath.Rel(bound, e.Root)
	if err != nil || rel != "." && !filepath.IsLocal(rel) {
		d.errorf(resolve(at), "root %s is outside %s: an experiment file may narrow its root, never widen it; the user declares a wider one with --root DIR", e.Root, bound)
		return expRoot, nil
	}
	if r := mustRel(e.Root, e.Dir); r != "." && !filepath.IsLocal(r) {
		d.errorf(resolve(at), "root %s does not hold the experiment file: its tasks list is read relative to the file", e.Root)
		return expRoot, nil
	}
	if e.Root == e.Dir {
		return expRoot, nil
	}
	b, err := os.OpenRoot(bound)
	if err != nil {
		return nil, fmt.Errorf("open the declared root %s: %w", bound, err)
	}
	defer b.Close()
	r, err := b.OpenRoot(rel + "/.")
	if err != nil {
		d.errorf(resolve(at), "root %s: %v", e.Root, err)
		return expRoot, nil
	}
	return r, nil
}
