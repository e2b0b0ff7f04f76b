package importer

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The conformance corpus: testdata/conformance/{coder-eval,harbor}/CASE holds one small task
// written from the format's public documentation (a coder_eval tree, or a Harbor task
// directory), and beside it what the import must produce:
//
//	want.FILE      the output of each input file the import writes or converts (FILE's
//	               path with "/" as "__"), byte for byte
//	want.problems  every problem line (paths relative to the case), then one line per
//	               output: "= FILE: valid" or "= FILE: invalid: <loader's first problem>"
//	solved/, grade.txt  workspaces and the verdicts they get (cmd/ceval's conformance test)
//
// go test ./importer -run TestConformance -update rewrites the want files; review the diff.
var update = flag.Bool("update", false, "rewrite the conformance corpus's want files")

const conformanceDir = "testdata/conformance"

// caseInput copies a case's input (everything but want.*, solved/ and grade.txt) to a fresh
// directory named after the case, and returns it.
func caseInput(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(dir))
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel != "." && (strings.HasPrefix(rel, "want.") || rel == "solved" || rel == "grade.txt") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		return os.WriteFile(filepath.Join(dst, rel), data, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// conformanceCases lists the case directories of one format.
func conformanceCases(t *testing.T, format string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(conformanceDir, format))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(conformanceDir, format, e.Name()))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s cases", format)
	}
	return out
}

// importCase imports one case and returns its results, the input copy and the output dir.
func importCase(t *testing.T, format, dir string) ([]FileResult, string, string) {
	t.Helper()
	in := caseInput(t, dir)
	out := t.TempDir()
	var rs []FileResult
	var err error
	switch format {
	case "coder-eval":
		rs, err = ImportCoderEval([]string{in}, out, Options{})
	case "harbor":
		rs, err = ImportHarbor([]string{in}, out, Options{})
	}
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return rs, in, filepath.Join(out, filepath.Base(in))
}

// caseProblems renders the results as want.problems holds them.
func caseProblems(rs []FileResult, in, out string) string {
	var b strings.Builder
	rel := func(s string) string {
		s = strings.ReplaceAll(s, out+string(filepath.Separator), "")
		s = strings.ReplaceAll(s, in+string(filepath.Separator), "")
		return s
	}
	for _, r := range rs {
		for _, p := range r.Problems {
			fmt.Fprintln(&b, rel(p.String()))
		}
	}
	for _, r := range rs {
		if r.Output == "" {
			continue
		}
		if r.Invalid != nil {
			first, _, _ := strings.Cut(r.Invalid.Error(), "\n")
			fmt.Fprintf(&b, "= %s: invalid: %s\n", rel(r.Output), rel(first))
		} else {
			fmt.Fprintf(&b, "= %s: valid\n", rel(r.Output))
		}
	}
	return b.String()
}

// outputsOf maps each output file the import wrote or changed (relative to out) to its
// content: the converted task files, and files that are not a copy of an input (rows).
func outputsOf(t *testing.T, in, out string) map[string][]byte {
	t.Helper()
	got := map[string][]byte{}
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		orig, err := os.ReadFile(filepath.Join(in, rel))
		if err == nil && bytes.Equal(orig, data) {
			return nil // copied as it was
		}
		// the temporary input's path, where an output names it, as the case's own
		got[rel] = bytes.ReplaceAll(data, []byte(in+string(filepath.Separator)), nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func wantName(rel string) string {
	return "want." + strings.ReplaceAll(filepath.ToSlash(rel), "/", "__")
}

// TestConformance imports every case of the corpus and compares each output, every problem
// line and whether each output validates with the case's want files.
func TestConformance(t *testing.T) {
	for _, format := range []string{"coder-eval", "harbor"} {
		for _, dir := range conformanceCases(t, format) {
			t.Run(format+"/"+filepath.Base(dir), func(t *testing.T) {
				rs, in, out := importCase(t, format, dir)
				got := outputsOf(t, in, out)
				got["problems"] = []byte(caseProblems(rs, in, out))
				if *update {
					old, _ := filepath.Glob(filepath.Join(dir, "want.*"))
					for _, f := range old {
						os.Remove(f)
					}
					for rel, data := range got {
						name := "want.problems"
						if rel != "problems" {
							name = wantName(rel)
						}
						if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
							t.Fatal(err)
						}
					}
					return
				}
				wants, _ := filepath.Glob(filepath.Join(dir, "want.*"))
				var wantNames []string
				for _, w := range wants {
					wantNames = append(wantNames, filepath.Base(w))
				}
				var gotNames []string
				for rel := range got {
					name := "want.problems"
					if rel != "problems" {
						name = wantName(rel)
					}
					gotNames = append(gotNames, name)
					want, err := os.ReadFile(filepath.Join(dir, name))
					if err != nil {
						t.Errorf("the import wrote %s, which the case has no %s for (run with -update and review)", rel, name)
						continue
					}
					if !bytes.Equal(want, got[rel]) {
						t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", rel, name, got[rel], want)
					}
				}
				slices.Sort(wantNames)
				slices.Sort(gotNames)
				if !slices.Equal(wantNames, gotNames) {
					t.Errorf("outputs %v, want %v", gotNames, wantNames)
				}
			})
		}
	}
}

// leafKeys lists every key of a YAML tree whose value holds no mapping (a scalar, a list of
// scalars, an empty mapping), with its path (a.b[0].c) and its value decoded.
func leafKeys(n *yaml.Node, path string, out map[string]any) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			leafKeys(c, path, out)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if hasMapping(v) {
				leafKeys(v, p, out)
				continue
			}
			var val any
			v.Decode(&val)
			out[p] = val
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			leafKeys(c, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

func hasMapping(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.MappingNode:
		return len(n.Content) > 0
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if hasMapping(c) {
				return true
			}
		}
	}
	return false
}

// carried says the output holds key (its last name) with the same value under the same
// top-level field: kept, if perhaps at another index of a list (a criterion left out
// before it) or another depth of the same field.
func carried(path string, val any, out map[string]any) bool {
	top, _, _ := strings.Cut(path, ".")
	top, _, _ = strings.Cut(top, "[")
	name := path[strings.LastIndexAny(path, ".]")+1:]
	for p, v := range out {
		t, _, _ := strings.Cut(p, ".")
		t, _, _ = strings.Cut(t, "[")
		same := fmt.Sprint(v) == fmt.Sprint(val) || fmt.Sprint(v) == fmt.Sprint(val)+"s" // seconds as a duration
		if t == top && p[strings.LastIndexAny(p, ".]")+1:] == name && same {
			return true
		}
	}
	return false
}

// accountedFor says a problem (note or unmapped) names path or a field holding it.
func accountedFor(path string, problems []Problem) bool {
	norm := func(s string) string { // "success_criteria[1] (cli_called)" -> "success_criteria[1]"
		s, _, _ = strings.Cut(s, " ")
		return s
	}
	for _, p := range problems {
		f := norm(p.Field)
		if f == path || strings.HasPrefix(path, f+".") || strings.HasPrefix(path, f+"[") {
			return true
		}
	}
	return false
}

// TestEveryCoderEvalKeyIsCarriedNotedOrUnmapped: the importer never changes a task's meaning
// silently. For every key of every coder_eval input of the corpus (and the older fixtures),
// the output holds it with its value, or a note says what it became, or it is listed as
// unmapped with what to do.
func TestEveryCoderEvalKeyIsCarriedNotedOrUnmapped(t *testing.T) {
	var files []string
	for _, root := range []string{filepath.Join(conformanceDir, "coder-eval"), "testdata/coder-eval"} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && isYAML(p) && !strings.HasPrefix(d.Name(), "want.") && !strings.Contains(p, "/solved/") {
				files = append(files, p)
			}
			return nil
		})
	}
	if len(files) < 40 {
		t.Fatalf("only %d coder_eval inputs", len(files))
	}
	keys := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var in, out yaml.Node
		if err := yaml.Unmarshal(data, &in); err != nil {
			t.Fatal(err)
		}
		r, err := CoderEval(f, data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(r.Output, &out); err != nil {
			t.Fatal(err)
		}
		inKeys, outKeys := map[string]any{}, map[string]any{}
		leafKeys(&in, "", inKeys)
		leafKeys(&out, "", outKeys)
		for _, path := range slices.Sorted(maps.Keys(inKeys)) {
			keys++
			if !carried(path, inKeys[path], outKeys) && !accountedFor(path, r.Problems) {
				t.Errorf("%s: %s (%v) is neither in the output nor named by a note or an unmapped line", f, path, inKeys[path])
			}
		}
	}
	t.Logf("%d keys of %d files accounted for", keys, len(files))
}

// coderEvalInputs lists the coder_eval task and experiment files of the corpus and the older
// fixtures.
func coderEvalInputs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, root := range []string{filepath.Join(conformanceDir, "coder-eval"), "testdata/coder-eval"} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && isYAML(p) && !strings.HasPrefix(d.Name(), "want.") && !strings.Contains(p, "/solved/") {
				files = append(files, p)
			}
			return nil
		})
	}
	if len(files) < 40 {
		t.Fatalf("only %d coder_eval inputs", len(files))
	}
	return files
}

// mappings lists every mapping node under n, with its path (a.b[0]).
func mappings(n *yaml.Node, path string) (nodes []*yaml.Node, paths []string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			ns, ps := mappings(c, path)
			nodes, paths = append(nodes, ns...), append(paths, ps...)
		}
	case yaml.MappingNode:
		nodes, paths = append(nodes, n), append(paths, path)
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if path != "" {
				p = path + "." + p
			}
			ns, ps := mappings(n.Content[i+1], p)
			nodes, paths = append(nodes, ns...), append(paths, ps...)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			ns, ps := mappings(c, fmt.Sprintf("%s[%d]", path, i))
			nodes, paths = append(nodes, ns...), append(paths, ps...)
		}
	}
	return nodes, paths
}

// TestAKeyTheImporterDoesNotKnowIsNeverDroppedSilently: a field coder_eval may add tomorrow,
// put into every mapping of every corpus input in turn (the task, agent, sandbox, each
// criterion, pattern, assertion, template source, step, mutation, dataset, simulation...),
// is reported as unmapped, or kept in the output where ceval's loader refuses it by name.
func TestAKeyTheImporterDoesNotKnowIsNeverDroppedSilently(t *testing.T) {
	const unknown = "zz_field_from_the_future"
	tried := 0
	for _, f := range coderEvalInputs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		nodes, _ := mappings(&doc, "")
		for i := range nodes {
			var d yaml.Node
			yaml.Unmarshal(data, &d)
			ns, ps := mappings(&d, "")
			m, path := ns[i], ps[i]
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: unknown}, &yaml.Node{Kind: yaml.ScalarNode, Value: "1"})
			in, err := yaml.Marshal(&d)
			if err != nil {
				t.Fatal(err)
			}
			r, err := CoderEval(f, in, Options{})
			if err != nil {
				t.Fatalf("%s with %s in mapping %d: %v", f, unknown, i, err)
			}
			tried++
			if strings.Contains(string(r.Output), unknown) {
				continue // the loader names it: unknown field
			}
			found := false
			for _, data := range r.Files {
				found = found || bytes.Contains(data, []byte(unknown)) // a dataset row's field
			}
			for _, p := range r.Problems {
				// named, or inside a field reported (or left out with a note) as a whole
				whole := p.Unmapped || strings.HasSuffix(p.Field, "(enabled: false)") // reported, or left out, whole
				found = found || p.Unmapped && strings.Contains(p.Field, unknown) || whole && path != "" && accountedFor(path+".x", []Problem{p})
			}
			if !found {
				t.Errorf("%s: %s in %s (line %d) vanished without an unmapped line", f, unknown, cmp.Or(path, "the top level"), m.Line)
			}
		}
	}
	t.Logf("%s tried in %d mappings", unknown, tried)
}

// harborKeys is every task.toml key Harbor documents (schema 1.0 to 1.4), each with a value,
// and what the import must do with it: "carried" (the output holds want), "note" or
// "unmapped" (a problem names the key).
var harborKeys = []struct{ table, key, value, want, outcome string }{
	{"", "version", `"1.0"`, "", "format"},
	{"", "schema_version", `"1.4"`, "", "format"},
	{"", "source", `"terminal-bench"`, "", "note"},
	{"", "artifacts", `["/app/out.log"]`, "", "unmapped"},
	{"", "multi_step_reward_mode", `"mean"`, "", "unmapped"},
	{"task", "name", `"org/hello"`, "Harbor package org/hello", "carried"},
	{"task", "description", `"Say hello"`, "description: Say hello", "carried"},
	{"task", "keywords", `["kw1"]`, "- kw1", "carried"},
	{"metadata", "author_name", `"Ada"`, "", "note"},
	{"metadata", "author_email", `"ada@example.com"`, "", "note"},
	{"metadata", "difficulty", `"hard"`, "(hard)", "carried"},
	{"metadata", "category", `"systems"`, "- systems", "carried"},
	{"metadata", "tags", `["t1"]`, "- t1", "carried"},
	{"metadata", "anything_else", `"x"`, "", "note"},
	{"verifier", "timeout_sec", "45.0", "timeout: 45s", "carried"},
	{"verifier", "user", `"root"`, "", "unmapped"},
	{"verifier", "network_mode", `"public"`, "", "unmapped"},
	{"verifier", "allowed_hosts", `["pypi.org"]`, "", "unmapped"},
	{"verifier", "environment_mode", `"separate"`, "", "unmapped"},
	{"verifier.env", "MODE", `"strict"`, "export MODE='strict'", "carried"},
	{"verifier.env", "TOKEN", `"${HOST_TOKEN}"`, "", "unmapped"},
	{"verifier.environment", "docker_image", `"v:1"`, "", "unmapped"},
	{"agent", "timeout_sec", "90", "timeout: 90s", "carried"},
	{"agent", "user", `"root"`, "", "unmapped"},
	{"agent", "network_mode", `"allowlist"`, "", "unmapped"},
	{"agent", "allowed_hosts", `["pypi.org"]`, "", "unmapped"},
	{"environment", "build_timeout_sec", "600.0", "", "note"},
	{"environment", "docker_image", `"ghcr.io/x/y:1"`, "image: ghcr.io/x/y:1", "carried"},
	{"environment", "cpus", "3", "cpus: 3", "carried"},
	{"environment", "memory_mb", "1536", "memory_mb: 1536", "carried"},
	{"environment", "storage_mb", "4096", "disk_mb: 4096", "carried"},
	{"environment", "memory", `"2G"`, "memory_mb: 2048", "carried"},
	{"environment", "storage", `"512M"`, "disk_mb: 512", "carried"},
	{"environment", "gpus", "2", "", "unmapped"},
	{"environment", "gpu_types", `["H100"]`, "", "unmapped"},
	{"environment", "allow_internet", "true", "", "note"},
	{"environment", "network_mode", `"allowlist"`, "", "unmapped"},
	{"environment", "allowed_hosts", `["pypi.org"]`, "", "unmapped"},
	{"environment", "mcp_servers", `[{ name = "docs", url = "http://d" }]`, "", "unmapped"},
	{"environment", "skills_dir", `"/skills"`, "", "unmapped"},
	{"environment", "workdir", `"/app"`, "", "unmapped"},
	{"environment.env", "KEY", `"${KEY}"`, "", "unmapped"},
	{"environment.healthcheck", "command", `"true"`, "", "unmapped"},
	{"solution.env", "SEED", `"1"`, "", "unmapped"},
	{"", "multi_step_reward_strategy", `"final"`, "", "note"},
	{"[steps]", "instruction", `"one.md"`, "", "unmapped"},
	{"[steps]", "name", `"one"`, "name: one", "carried"},
	{"[steps]", "min_reward", "0.5", "pass_threshold: 0.5", "carried"},
	{"[steps]", "artifacts", `["/app/x"]`, "", "unmapped"},
	{"steps.agent", "timeout_sec", "30", "timeout: 30s", "carried"},
	{"steps.agent", "user", `"root"`, "", "unmapped"},
	{"steps.agent", "network_mode", `"allowlist"`, "", "unmapped"},
	{"steps.agent", "allowed_hosts", `["pypi.org"]`, "", "unmapped"},
	{"steps.verifier", "timeout_sec", "30", "timeout: 30s", "carried"},
	{"steps.verifier", "user", `"root"`, "", "unmapped"},
	{"steps.verifier", "network_mode", `"public"`, "", "unmapped"},
	{"steps.verifier", "allowed_hosts", `["pypi.org"]`, "", "unmapped"},
	{"steps.verifier", "environment_mode", `"separate"`, "", "unmapped"},
	{"steps.verifier.env", "MODE", `"strict"`, "export MODE='strict'", "carried"},
	{"steps.verifier.env", "TOKEN", `"${HOST_TOKEN}"`, "", "unmapped"},
	{"steps.verifier.environment", "docker_image", `"v:1"`, "", "unmapped"},
	{"steps.healthcheck", "command", `"true"`, "", "unmapped"},
	{"verifier.collect", "command", `"true"`, "", "unmapped"},
	{"", "a_key_from_the_future", "1", "", "unmapped"},
	{"environment", "a_key_from_the_future", "1", "", "unmapped"},
}

// TestEveryHarborKeyIsCarriedNotedOrUnmapped: each task.toml key Harbor documents, in a task
// of its own, is carried into the output (and found there), or named by a note or an
// unmapped line; a key this importer does not know is unmapped.
func TestEveryHarborKeyIsCarriedNotedOrUnmapped(t *testing.T) {
	for _, k := range harborKeys {
		name := strings.Trim(k.table+"."+k.key, ".")
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "task")
			toml := "version = \"1.0\"\n"
			if k.key == "version" || k.key == "schema_version" {
				toml = ""
			}
			step := k.table == "[steps]" || strings.HasPrefix(k.table, "steps.")
			switch {
			case step && k.key != "instruction":
				// a step of its own, named, with its directory (a step without a name is not imported)
				toml += "[[steps]]\n"
				if k.key != "name" {
					toml += "name = \"one\"\n"
				}
				if k.table != "[steps]" {
					toml += "[" + k.table + "]\n"
				}
				toml += k.key + " = " + k.value + "\n"
				writeFile(t, filepath.Join(dir, "steps", "one", "instruction.md"), "do one")
				writeFile(t, filepath.Join(dir, "steps", "one", "tests", "test.sh"), "echo 1 > /logs/verifier/reward.txt\n")
			case k.table == "":
				toml += k.key + " = " + k.value + "\n"
			case strings.HasPrefix(k.table, "["):
				toml += "[" + k.table + "]\n" + k.key + " = " + k.value + "\n"
			default:
				toml += "[" + k.table + "]\n" + k.key + " = " + k.value + "\n"
			}
			writeFile(t, filepath.Join(dir, "task.toml"), toml)
			writeFile(t, filepath.Join(dir, "instruction.md"), "do it")
			writeFile(t, filepath.Join(dir, "tests", "test.sh"), "echo 1 > /logs/verifier/reward.txt\n")
			r, err := Harbor(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if step { // a step's keys are reported as steps[].KEY
				name = "steps[]." + strings.TrimPrefix(strings.TrimPrefix(name, "[steps]."), "steps.")
			}
			var named *Problem
			for i, p := range r.Problems {
				if p.Field == name || strings.HasPrefix(p.Field, name) || name == "steps[].instruction" && strings.HasPrefix(p.Field, "steps") {
					named = &r.Problems[i]
				}
			}
			switch k.outcome {
			case "carried":
				if !strings.Contains(string(r.Output), k.want) {
					t.Errorf("output lacks %q:\n%s", k.want, r.Output)
				}
				if named != nil && named.Unmapped {
					t.Errorf("carried but reported unmapped: %s", named)
				}
			case "note", "unmapped":
				if named == nil || named.Unmapped != (k.outcome == "unmapped") {
					t.Errorf("want a %s line for %s, got %v", k.outcome, name, r.Problems)
				}
			case "format":
				if r.Unmapped() != 0 {
					t.Errorf("the format's version reported: %v", r.Problems)
				}
			}
		})
	}
}

// migratingSection is docs/migrating.md's text from the heading start up to the next line
// starting with end, and the set of words inside its backticks.
func migratingSection(t *testing.T, start, end string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("../docs/migrating.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "\n"+start+"\n")
	if i < 0 {
		t.Fatalf("docs/migrating.md has no %q", start)
	}
	s = s[i+1:]
	if j := strings.Index(s, "\n"+end); j >= 0 {
		s = s[:j]
	}
	words := map[string]bool{}
	parts := strings.Split(s, "`")
	for k := 1; k < len(parts); k += 2 {
		for _, w := range strings.FieldsFunc(parts[k], func(r rune) bool {
			return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) {
			words[w] = true
		}
	}
	return words
}

// dataKeys are subtrees whose keys are the author's data, not coder_eval's fields.
var dataKeys = []string{"dataset.rows", "claude_settings", "thresholds", "suite_thresholds", "build.args", ".flags.", "stop_early", "sdk_options"}

// TestMigratingMappingTablesNameEveryKey: docs/migrating.md's "Migrating from coder_eval" names
// every field (and criterion, agent, template and mutation type) of the conformance corpus, and
// "Migrating from Harbor" every task.toml key and table the importer knows, so the tables say
// what each becomes.
func TestMigratingMappingTablesNameEveryKey(t *testing.T) {
	words := migratingSection(t, "## Migrating from coder_eval", "## Migrating from Harbor")
	missing := map[string][]string{}
	for _, f := range coderEvalInputs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		keys := map[string]any{}
		leafKeys(&doc, "", keys)
		_, paths := mappings(&doc, "")
		for p := range keys {
			paths = append(paths, p)
		}
	next:
		for _, p := range paths {
			for _, d := range dataKeys {
				if strings.Contains(p+".", d) && !strings.HasSuffix(p, d) && !strings.HasSuffix(p+".", d) {
					continue next
				}
			}
			name := p[strings.LastIndexAny(p, ".")+1:]
			name, _, _ = strings.Cut(name, "[")
			if name != "" && !words[name] {
				missing[name] = append(missing[name], f)
			}
			if strings.HasSuffix(p, ".type") || p == "type" {
				if v, ok := keys[p].(string); ok && !words[v] {
					missing[v] = append(missing[v], f)
				}
			}
		}
	}
	for name, files := range missing {
		t.Errorf("Migrating from coder_eval does not name %q (in %s)", name, files[0])
	}
	words = migratingSection(t, "## Migrating from Harbor / Terminal-Bench 2", "## ")
	for _, k := range harborKeys {
		if k.key == "a_key_from_the_future" || k.key == "anything_else" {
			continue
		}
		if strings.HasSuffix(k.table, "healthcheck") || strings.HasSuffix(k.table, "collect") || strings.HasSuffix(k.table, "environment.env") {
			k.key = "" // a table reported whole: its name is enough
		}
		for _, w := range append(strings.FieldsFunc(k.table, func(r rune) bool { return r == '.' || r == '[' || r == ']' }), k.key) {
			if w != "" && !words[w] && w != "KEY" && w != "MODE" && w != "TOKEN" && w != "SEED" {
				t.Errorf("Migrating from Harbor does not name %q (%s.%s)", w, k.table, k.key)
			}
		}
	}
}
