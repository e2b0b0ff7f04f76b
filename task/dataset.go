package task

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// MaxDatasetRows bounds the rows of one dataset.
const MaxDatasetRows = 10000

// rowRef is a reference to a row's field in a dataset task.
var rowRef = lazyregexp.New(`\$\{row\.([A-Za-z0-9_-]*)\}`)

// rowIDPattern is what a row's id may be (it becomes part of the task's ID, task_id.row).
var rowIDPattern = lazyregexp.New(`^[a-z0-9][a-z0-9_.-]*$`)

// datasetFields are where ${row.field} is substituted; anywhere else it is an error.
var datasetFields = []string{"initial_prompt", "sandbox", "success_criteria"}

// LoadAll loads a task file; a task with dataset: {file: ROWS} (.jsonl, .csv, .yaml) expands
// into one task per row, each with ${row.field} substituted in its prompt (inline or file),
// its sandbox's workspace files and its criteria, and its own ID task_id.ROW (ROW: the row's
// id field, else its 1-based number). A field no row has is a validation error, as is a
// reference anywhere else. A task without a dataset loads as Load does.
func LoadAll(path string, opts LoadOptions) ([]*Task, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	data, err := readCapped(abs)
	if err != nil {
		return nil, Problems{{File: path, Msg: err.Error()}}
	}
	doc, err := readDoc(path, data, "task")
	if err != nil {
		return nil, err
	}
	top := resolve(doc.Content[0])
	var dsKey *yaml.Node
	if top.Kind == yaml.MappingNode {
		dsKey = keyNode(top, "dataset")
	}
	if dsKey == nil {
		t, err := ParseWith(path, filepath.Dir(abs), data, opts)
		if err != nil {
			return nil, err
		}
		return []*Task{t}, nil
	}
	dir := filepath.Dir(abs)
	d := &decoder{file: path}
	prefix, rootDir, err := rootPrefix(dir, opts.Root)
	if err != nil {
		return nil, Problems{{File: path, Msg: err.Error()}}
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return nil, fmt.Errorf("open task directory %s: %w", rootDir, err)
	}
	defer root.Close()
	l := &loader{decoder: d, root: root, dir: rootDir, prefix: prefix, declared: opts.Root != ""}
	var rowsFile string
	var rowsData []byte
	var fileNode *yaml.Node
	got := l.mapping(valueOf(top, "dataset"), "dataset", []field{{"file", func(v *yaml.Node) {
		fileNode = v
		rowsFile, rowsData = l.readFile(v, "dataset.file")
	}}})
	if got != nil && fileNode == nil {
		d.errorf(dsKey, "dataset: missing required field file (rows as .jsonl, .csv or .yaml next to the task)")
	}
	if len(d.problems) > 0 {
		return nil, d.problems.sorted()
	}
	if rowsFile == "" {
		return nil, d.problems.sorted()
	}
	rows, ids, msg := parseRows(rowsFile, rowsData)
	if msg != "" {
		d.errorf(resolve(fileNode), "dataset.file: %s", msg)
		return nil, d.problems.sorted()
	}
	var tasks []*Task
	var problems Problems
	for i, row := range rows {
		t, ps := loadRow(path, dir, data, doc, row, ids[i], rowsFile, rowsData, opts)
		if len(ps) > 0 {
			problems = append(problems, ps...)
			if len(problems) > 50 { // one bad reference repeats on every row
				break
			}
			continue
		}
		tasks = append(tasks, t)
	}
	if len(problems) > 0 {
		for _, t := range tasks {
			t.Close()
		}
		return nil, dedupe(problems).sorted()
	}
	return tasks, nil
}

func valueOf(m *yaml.Node, key string) *yaml.Node {
	for j := 0; j+1 < len(m.Content); j += 2 {
		if resolve(m.Content[j]).Value == key {
			return m.Content[j+1]
		}
	}
	return nil
}

// loadRow loads the task for one row: a copy of the document without dataset, substituted.
func loadRow(path, dir string, data []byte, doc *yaml.Node, row map[string]string, id, rowsFile string, rowsData []byte, opts LoadOptions) (*Task, Problems) {
	d := &decoder{file: path}
	c := cloneNode(doc, map[*yaml.Node]*yaml.Node{})
	top := resolve(c.Content[0])
	for j := 0; j+1 < len(top.Content); j += 2 {
		if resolve(top.Content[j]).Value == "dataset" {
			top.Content = append(top.Content[:j], top.Content[j+2:]...)
			break
		}
	}
	for j := 0; j+1 < len(top.Content); j += 2 {
		key := resolve(top.Content[j]).Value
		substitute(d, top.Content[j+1], row, contains(datasetFields, key), key)
	}
	if len(d.problems) > 0 {
		return nil, d.problems
	}
	prefix, rootDir, err := rootPrefix(dir, opts.Root)
	if err != nil {
		return nil, Problems{{File: path, Msg: err.Error()}}
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return nil, Problems{{File: path, Msg: err.Error()}}
	}
	defer root.Close()
	l := &loader{decoder: d, root: root, dir: rootDir, prefix: prefix, declared: opts.Root != ""}
	t := l.task(c.Content[0])
	if len(d.problems) > 0 {
		t.Close()
		return nil, d.problems
	}
	if t.PromptFile != "" { // the prompt file's text is substituted too
		at := &yaml.Node{Line: 1, Column: 1}
		if k := keyNode(top, "initial_prompt_file"); k != nil {
			at = k
		}
		t.Prompt = substituteString(d, at, t.Prompt, row)
		if len(d.problems) > 0 {
			t.Close()
			return nil, d.problems
		}
	}
	t.Dataset, t.ID = t.ID, t.ID+"."+id // "." (not "@"): run IDs and paths take [A-Za-z0-9_.-]; task_ids hold no "."
	t.Path, t.Dir = filepath.Join(dir, filepath.Base(path)), dir
	if t.read == nil {
		t.read = map[string][32]byte{}
	}
	t.read[t.Path] = sha256.Sum256(data)
	t.read[rowsFile] = sha256.Sum256(rowsData)
	return t, nil
}

// substitute replaces ${row.field} in every scalar under n; where is false outside the
// fields that take them, and any reference there is an error.
func substitute(d *decoder, n *yaml.Node, row map[string]string, where bool, key string) {
	switch n.Kind {
	case yaml.ScalarNode:
		if !rowRef.MatchString(n.Value) {
			return
		}
		if !where {
			d.errorf(n, "%s: ${row.…} is substituted only in %s", key, strings.Join(datasetFields, ", "))
			return
		}
		n.Value = substituteString(d, n, n.Value, row)
	case yaml.MappingNode, yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			substitute(d, c, row, where, key)
		}
	}
}

func substituteString(d *decoder, at *yaml.Node, s string, row map[string]string) string {
	return rowRef.ReplaceAllStringFunc(s, func(m string) string {
		name := rowRef.FindStringSubmatch(m)[1]
		v, ok := row[name]
		if !ok {
			d.errorf(at, "${row.%s}: the dataset's rows have no field %q", name, name)
			return m
		}
		return v
	})
}

// cloneNode deep-copies a node tree, keeping aliases pointing at their copied anchors.
func cloneNode(n *yaml.Node, seen map[*yaml.Node]*yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if c, ok := seen[n]; ok {
		return c
	}
	c := *n
	seen[n] = &c
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = cloneNode(x, seen)
	}
	c.Alias = cloneNode(n.Alias, seen)
	return &c
}

// parseRows reads the rows (every row must have the same fields) and their IDs; it returns a
// message on bad input.
func parseRows(name string, data []byte) ([]map[string]string, []string, string) {
	var raw []map[string]any
	switch ext := strings.ToLower(filepath.Ext(name)); ext {
	case ".jsonl":
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				return nil, nil, fmt.Sprintf("line %d: not a JSON object: %v", i+1, err)
			}
			raw = append(raw, m)
		}
	case ".csv":
		recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
		if err != nil {
			return nil, nil, err.Error()
		}
		if len(recs) < 2 {
			return nil, nil, "a CSV dataset needs a header line and at least one row"
		}
		for _, r := range recs[1:] {
			m := map[string]any{}
			for j, h := range recs[0] {
				m[h] = r[j]
			}
			raw = append(raw, m)
		}
	case ".yaml", ".yml":
		if err := yaml.Unmarshal(data, &raw); err != nil {
			return nil, nil, "not a YAML list of mappings: " + err.Error()
		}
	default:
		return nil, nil, fmt.Sprintf("%q: give rows as .jsonl, .csv or .yaml", filepath.Base(name))
	}
	if len(raw) == 0 {
		return nil, nil, "no rows"
	}
	if len(raw) > MaxDatasetRows {
		return nil, nil, fmt.Sprintf("%d rows, more than %d", len(raw), MaxDatasetRows)
	}
	rows := make([]map[string]string, len(raw))
	ids := make([]string, len(raw))
	seen := map[string]bool{}
	for i, m := range raw {
		rows[i] = map[string]string{}
		for k, v := range m {
			switch x := v.(type) {
			case string:
				rows[i][k] = x
			case float64:
				rows[i][k] = strconv.FormatFloat(x, 'f', -1, 64)
			case int:
				rows[i][k] = strconv.Itoa(x)
			case bool:
				rows[i][k] = strconv.FormatBool(x)
			case nil:
				rows[i][k] = ""
			default:
				return nil, nil, fmt.Sprintf("row %d: field %q is not a string, number or boolean", i+1, k)
			}
		}
		ids[i] = strconv.Itoa(i + 1)
		if id, ok := rows[i]["id"]; ok {
			if !rowIDPattern.MatchString(id) {
				return nil, nil, fmt.Sprintf("row %d: id %q may hold only lowercase letters, digits, '.', '_' and '-'", i+1, id)
			}
			ids[i] = id
		}
		if seen[ids[i]] {
			return nil, nil, fmt.Sprintf("row %d: id %q is given twice", i+1, ids[i])
		}
		seen[ids[i]] = true
	}
	return rows, ids, ""
}

// rowDoc is one task document of an experiment's task file: the file itself (id "") or
// one row of its dataset, substituted.
type rowDoc struct {
	doc      *yaml.Node
	id       string
	row      map[string]string
	rowsFile string
	rowsSum  [32]byte
}

// datasetRows expands an experiment's task file by its dataset, if it has one: the rows file
// is read through the task's directory (taskRoot), and each row's copy of the document is
// substituted like LoadAll's.
func (e *Experiment) datasetRows(f taskFile, tdoc *yaml.Node, taskRoot *os.Root) ([]rowDoc, Problems) {
	top := resolve(tdoc.Content[0])
	ds := valueOf(top, "dataset")
	if ds == nil {
		return []rowDoc{{doc: tdoc}}, nil
	}
	d := &decoder{file: f.name}
	var fileNode *yaml.Node
	var rel string
	got := d.mapping(ds, "dataset", []field{{"file", func(v *yaml.Node) { fileNode = v; d.str(v, "dataset.file", &rel) }}})
	switch {
	case got == nil:
	case fileNode == nil:
		d.errorf(keyNode(top, "dataset"), "dataset: missing required field file (rows as .jsonl, .csv or .yaml next to the task)")
	case rel == "" || filepath.IsAbs(rel) || !filepath.IsLocal(rel):
		d.errorf(resolve(fileNode), "dataset.file: %q must be a path inside the task file's directory", rel)
	}
	if len(d.problems) > 0 {
		return nil, d.problems
	}
	data, _, err := readRegular(taskRoot, filepath.FromSlash(rel))
	if err != nil {
		d.errorf(resolve(fileNode), "dataset.file: %s", describeRootErr(rel, err))
		return nil, d.problems
	}
	rows, ids, msg := parseRows(rel, data)
	if msg != "" {
		d.errorf(resolve(fileNode), "dataset.file: %s", msg)
		return nil, d.problems
	}
	rowsFile := filepath.Join(filepath.Dir(f.abs), filepath.FromSlash(rel))
	var out []rowDoc
	for i, row := range rows {
		c := cloneNode(tdoc, map[*yaml.Node]*yaml.Node{})
		ct := resolve(c.Content[0])
		for j := 0; j+1 < len(ct.Content); j += 2 {
			if resolve(ct.Content[j]).Value == "dataset" {
				ct.Content = append(ct.Content[:j], ct.Content[j+2:]...)
				break
			}
		}
		for j := 0; j+1 < len(ct.Content); j += 2 {
			key := resolve(ct.Content[j]).Value
			substitute(d, ct.Content[j+1], row, contains(datasetFields, key), key)
		}
		if len(d.problems) > 0 {
			return nil, dedupe(d.problems)
		}
		out = append(out, rowDoc{doc: c, id: ids[i], row: row, rowsFile: rowsFile, rowsSum: sha256.Sum256(data)})
	}
	return out, nil
}

// finish makes a loaded row task the row's: its prompt file's text substituted, its ID
// task_id.ROW, the rows file among what it read.
func (rd rowDoc) finish(f taskFile, t *Task) Problems {
	d := &decoder{file: f.name}
	if t.PromptFile != "" {
		t.Prompt = substituteString(d, &yaml.Node{Line: 1, Column: 1}, t.Prompt, rd.row)
	}
	if len(d.problems) > 0 {
		t.Close()
		return d.problems
	}
	t.Dataset, t.ID = t.ID, t.ID+"."+rd.id
	if t.read == nil {
		t.read = map[string][32]byte{}
	}
	t.read[rd.rowsFile] = rd.rowsSum
	return nil
}
