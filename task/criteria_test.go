package task

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// minimalCriteria is one valid criterion of each type, as a task file writes it.
var minimalCriteria = map[string]string{
	FileExists:          "{type: file_exists, path: a.txt}",
	FileContains:        "{type: file_contains, path: a.txt, includes: [x]}",
	FileMatchesRegex:    "{type: file_matches_regex, path: a.txt, pattern: 'x+'}",
	FileCheck:           "{type: file_check, path: a.txt, patterns: [{pattern: x}]}",
	JSONCheck:           "{type: json_check, path: a.json, assertions: [{expression: a, expected: 1}]}",
	ClassificationMatch: "{type: classification_match, path: a.txt, expected_label: yes}",
	RunCommand:          "{type: run_command, command: 'true'}",
	WASMCheck:           "{type: wasm, module: m.wasm, sha256: '" + strings.Repeat("0", 64) + "'}",
	CLICalled:           "{type: cli_called, tool: git}",
	CommandExecuted:     "{type: command_executed, pattern: 'git push'}",
	Pytest:              "{type: pytest, tests: tests}",
	AgentJudge:          "{type: agent_judge, rubric: r}",
	LLMJudge:            "{type: llm_judge, rubric: r}",
	ToolCalled:          "{type: tool_called, tool: Bash}",
	ToolCallsBudget:     "{type: tool_calls_budget, target: 2, max: 5}",
	SkillUsed:           "{type: skill_used, skill: pdf}",
	CommandsEfficiency:  "{type: commands_efficiency, expected_commands: 3}",
	SkillTriggered:      "{type: skill_triggered, skill_name: pdf, expected_skill: pdf}",
}

func parseCriteria(t *testing.T, criteria ...string) (*Task, error) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"a.txt", "a.json", "m.wasm", "tests/test_a.py"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "git.json"), []byte(`{"version": 1, "default": {"exit_code": 0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n"
	for _, c := range criteria {
		doc += "  - " + c + "\n"
	}
	doc += "protected_mocks: [{tool: git, fixture: git.json}]\n" // cli_called and command_executed grade its calls
	return Parse(filepath.Join(dir, "task.yaml"), dir, []byte(doc))
}

// TestCriterionRegistryCoversEveryType holds the registry whole: each type has its struct
// and fields, a grader tier's type every grader: field, and loads from a minimal task file;
// a type added without a struct or an example fails here.
func TestCriterionRegistryCoversEveryType(t *testing.T) {
	seen := map[string]bool{}
	for _, ct := range criterionRegistry {
		if seen[ct.name] {
			t.Errorf("type %s is registered twice", ct.name)
		}
		seen[ct.name] = true
		if ct.spec == nil {
			t.Errorf("type %s has no struct", ct.name)
			continue
		}
		names := ct.fieldNames()
		if len(names) == 0 {
			t.Errorf("type %s takes no field of its own", ct.name)
		}
		for i, f := range names {
			if slices.Contains(names[:i], f) {
				t.Errorf("type %s lists the field %s twice", ct.name, f)
			}
			if slices.Contains(criterionCommon, f) {
				t.Errorf("type %s lists the common field %s", ct.name, f)
			}
		}
		n := 0
		for _, f := range graderFieldNames {
			if slices.Contains(names, f) {
				n++
			}
		}
		_, tier := ct.spec().(interface{ graderTier() *GraderTier })
		if tier && n != len(graderFieldNames) || !tier && n != 0 {
			t.Errorf("type %s: tier %v but %d of the %d grader: fields", ct.name, tier, n, len(graderFieldNames))
		}
		doc, ok := minimalCriteria[ct.name]
		if !ok {
			t.Errorf("type %s has no minimal example in minimalCriteria", ct.name)
			continue
		}
		tk, err := parseCriteria(t, doc)
		if err != nil {
			t.Errorf("type %s: the minimal %s does not load: %v", ct.name, doc, err)
			continue
		}
		if got := tk.Criteria[0]; got.Type != ct.name && got.Alias != ct.name {
			t.Errorf("type %s loaded as type %q alias %q", ct.name, got.Type, got.Alias)
		}
	}
	for name := range minimalCriteria {
		if !seen[name] {
			t.Errorf("minimalCriteria has %s, which is not registered", name)
		}
	}
}

// TestCriterionFieldOfAnotherTypeIsRefusedNamingItsTypes: a field that belongs to another
// type is refused at its key's FILE:LINE:COL with the type's fields and the types that take it.
func TestCriterionFieldOfAnotherTypeIsRefusedNamingItsTypes(t *testing.T) {
	for _, tc := range []struct{ criterion, want string }{
		{"{type: file_exists, path: a.txt, pattern: x}",
			`:4:38: unknown field "pattern" in success_criteria[0] (file_exists) (known fields: description, pass_threshold, path, type, weight); pattern is a field of file_matches_regex, command_executed`},
		{"{type: tool_called, tool: Bash, command_pattern: x}",
			`:4:37: unknown field "command_pattern" in success_criteria[0] (tool_called) (known fields: description, exclude_pattern, input_field, input_pattern, max_count, min_count, outcome, pass_threshold, tool, tool_pattern, type, weight); command_pattern is a field of command_executed`},
		{"{type: llm_judge, rubric: r, timeout: 5s}",
			`; timeout is a field of run_command, wasm, pytest, agent_judge`},
		{"{type: run_command, command: 'true', judge_model: m}", `; judge_model is a field of agent_judge`},
	} {
		_, err := parseCriteria(t, tc.criterion)
		var ps Problems
		if !errors.As(err, &ps) || len(ps) != 1 {
			t.Errorf("%s: want one problem, got %v", tc.criterion, err)
			continue
		}
		if got := ps[0].String(); !strings.HasSuffix(got, tc.want) || !strings.HasPrefix(got, ps[0].File+":") {
			t.Errorf("%s:\n got %s\nwant FILE%s", tc.criterion, got, tc.want)
		}
	}
	// a field of no type is refused as before, without a hint
	_, err := parseCriteria(t, "{type: file_exists, path: a.txt, colour: red}")
	if err == nil || !strings.HasSuffix(err.Error(), "(known fields: description, pass_threshold, path, type, weight)") {
		t.Errorf("a field of no type: %v", err)
	}
}

// TestCriterionTypesOrderIsDeclared: CriterionTypes is criterionRegistry's order, which help,
// messages and the JSON Schema print; it was once whatever order init functions of three
// files ran in (that of their file names).
func TestCriterionTypesOrderIsDeclared(t *testing.T) {
	want := []string{FileExists, FileContains, FileMatchesRegex, FileCheck, JSONCheck, ClassificationMatch, RunCommand,
		WASMCheck, CLICalled, CommandExecuted, Pytest, AgentJudge, LLMJudge, ToolCalled, ToolCallsBudget, SkillUsed,
		CommandsEfficiency, SkillTriggered}
	if !slices.Equal(CriterionTypes, want) {
		t.Errorf("CriterionTypes = %v, want %v", CriterionTypes, want)
	}
	enum := TaskSchema()["properties"].(map[string]any)["success_criteria"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["enum"]
	if !slices.Equal(enum.([]string), want) {
		t.Errorf("the JSON Schema's type enum is %v, want %v", enum, want)
	}
	_, err := parseCriteria(t, "{path: a.txt}")
	if err == nil || !strings.Contains(err.Error(), "missing required field type (one of "+strings.Join(want, ", ")+")") {
		t.Errorf("a criterion without type: %v", err)
	}
	// Nothing but the registry's declaration sets the list: no init function, no
	// assignment to CriterionTypes or criterionRegistry in the package.
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv == nil && n.Name.Name == "init" {
					t.Errorf("%s: func init in package task: declare a criterion type in criterionRegistry", fset.Position(n.Pos()))
				}
			case *ast.AssignStmt:
				for _, lhs := range n.Lhs {
					for {
						if ix, ok := lhs.(*ast.IndexExpr); ok {
							lhs = ix.X
							continue
						}
						break
					}
					if id, ok := lhs.(*ast.Ident); ok && (id.Name == "CriterionTypes" || id.Name == "criterionRegistry") {
						t.Errorf("%s: %s assigned outside its declaration", fset.Position(n.Pos()), id.Name)
					}
				}
			}
			return true
		})
	}
}
