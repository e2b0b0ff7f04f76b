package archtest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/ARCHITECTURE.md's generated import table")

const module = "ceval.dev/ceval/"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Name       string
	Dir        string
	GoFiles    []string
}

// listPackages runs `go list -json -deps=false` over the module (not its tests).
func listPackages(t *testing.T) (root string, pkgs map[string]*pkg) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root = filepath.Dir(strings.TrimSpace(string(out)))
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs = map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = &p
	}
	return root, pkgs
}

func short(path string) (string, bool) {
	if strings.HasPrefix(path, module) {
		return strings.TrimPrefix(path, module), true
	}
	return path, false
}

// documented is every package the table lists: all of them but scripts' helper programs
// and the benchmarks (neither is part of the product).
func documented(name string) bool {
	return !strings.HasPrefix(name, "scripts/") && !strings.HasPrefix(name, "bench")
}

// A rule of the import graph: what it says, why it holds, and the check that finds every
// import breaking it. docs/ARCHITECTURE.md lists exactly these (TestArchitectureDocIsTrue).
type rule struct {
	name string // the subtest's name and the rule's name in the document
	says string // the rule as the document states it (Markdown)
	why  string
	// check returns one line per import that breaks the rule.
	check func(pkgs map[string]*pkg) []string
}

// rules are the package rules, each named for why it holds. Add one here and run
// go test ./internal/archtest -update: the document's rule list is generated from this table.
var rules = []rule{
	{
		name: "commands-are-roots",
		says: "Nothing imports a `cmd/...` package.",
		why:  "commands are the graph's roots: their logic belongs in a package a test can reach without the CLI.",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for _, name := range sortedNames(pkgs) {
				for _, imp := range pkgs[name].Imports {
					if s, ok := short(imp); ok && strings.HasPrefix(s, "cmd/") {
						bad = append(bad, name+" imports "+s)
					}
				}
			}
			return bad
		},
	},
	{
		name: "results-need-no-daemon",
		says: "`record` and `report` depend on no containerd, gRPC, Kubernetes (client-go) or wazero package.",
		why:  "results are read by `ceval report`, `compare` and CI on any machine, without a daemon's client.",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for _, name := range []string{"record", "report"} {
				for _, d := range pkgs[name].Deps {
					for _, prefix := range []string{"github.com/containerd/", "google.golang.org/grpc", "k8s.io/", "sigs.k8s.io/", "github.com/tetratelabs/wazero"} {
						if strings.HasPrefix(d, prefix) {
							bad = append(bad, name+" depends on "+d)
						}
					}
				}
			}
			return bad
		},
	},
	{
		name: "oci-is-pure",
		says: "`oci` imports, of ceval, only `policy` and `internal/lazyregexp`; of containerd, only the spec types and options " +
			"(`pkg/oci`, `contrib/seccomp`, `core/containers`, `pkg/namespaces`) and the runtime spec; of the standard library, " +
			"nothing that reaches a file, a process or the network (`os` and `os/...`, `net` and `net/...`, `syscall`, `unsafe`, `io/ioutil`, `plugin`, `runtime/cgo`).",
		why: "it turns a sandbox configuration into a spec and nothing else, so the policy is tested by golden specs without a daemon (runc's specconv split).",
		check: func(pkgs map[string]*pkg) (bad []string) {
			third := map[string]bool{
				"github.com/containerd/containerd/v2/pkg/oci":         true,
				"github.com/containerd/containerd/v2/contrib/seccomp": true,
				"github.com/containerd/containerd/v2/core/containers": true,
				"github.com/containerd/containerd/v2/pkg/namespaces":  true,
				"github.com/opencontainers/runtime-spec/specs-go":     true,
			}
			for _, imp := range pkgs["oci"].Imports {
				s, mine := short(imp)
				switch {
				case mine:
					if s != "policy" && s != "internal/lazyregexp" {
						bad = append(bad, "oci imports "+s)
					}
				case strings.Contains(strings.SplitN(imp, "/", 2)[0], "."):
					if !third[imp] {
						bad = append(bad, "oci imports "+imp)
					}
				case imp == "os" || strings.HasPrefix(imp, "os/") || imp == "net" || strings.HasPrefix(imp, "net/") ||
					imp == "syscall" || imp == "unsafe" || imp == "io/ioutil" || imp == "plugin" || imp == "runtime/cgo":
					bad = append(bad, "oci imports "+imp)
				}
			}
			return bad
		},
	},
	{
		name: "launcher-knows-containers",
		says: "`launcher` depends on no `task`, `grader`, `supervisor`, `record` or `images`.",
		why:  "the containerd client starts containers from a spec; what a task is, how it is graded and what a run is are above it.",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for _, d := range pkgs["launcher"].Deps {
				if s, ok := short(d); ok && (s == "task" || s == "grader" || s == "supervisor" || s == "record" || s == "images") {
					bad = append(bad, "launcher depends on "+s)
				}
			}
			return bad
		},
	},
	{
		name: "container-programs-stay-small",
		says: "`cmd/ceval-mock` depends, of ceval, only on `mockd/wire`; `cmd/ceval-init` only on `internal/kubeproto`, `internal/idmap` and `policy`.",
		why:  "they run inside the agent's container, static: nothing host-side (keys, fixtures, the grader) may be linked into them.",
		check: func(pkgs map[string]*pkg) (bad []string) {
			allowed := map[string][]string{
				"cmd/ceval-mock": {"mockd/wire"},
				"cmd/ceval-init": {"internal/kubeproto", "internal/idmap", "policy"},
			}
			for _, name := range []string{"cmd/ceval-init", "cmd/ceval-mock"} {
				for _, d := range pkgs[name].Deps {
					if s, mine := short(d); mine && !slices.Contains(allowed[name], s) {
						bad = append(bad, name+" depends on "+s)
					}
				}
			}
			return bad
		},
	},
	{
		name: "leaves-serve-nothing",
		says: "The leaf packages `policy`, `gateway/transcript`, `mockd/fixture` and `mockd/wire` depend on no ceval package but one another, " +
			"and on no `net/http`, containerd, gRPC, Kubernetes or wazero package.",
		why: "they are the fixed facts and formats both sides of a boundary share (the container's static programs, the host's servers, the reports): a server or a client linked into one reaches all of them.",
		check: func(pkgs map[string]*pkg) (bad []string) {
			leaves := []string{"policy", "gateway/transcript", "mockd/fixture", "mockd/wire"}
			for _, name := range leaves {
				for _, d := range pkgs[name].Deps {
					if s, mine := short(d); mine && !slices.Contains(leaves, s) {
						bad = append(bad, name+" depends on "+s)
					}
					for _, prefix := range []string{"net/http", "github.com/containerd/", "google.golang.org/grpc", "k8s.io/", "sigs.k8s.io/", "github.com/tetratelabs/wazero"} {
						if d == prefix || strings.HasPrefix(d, strings.TrimSuffix(prefix, "/")+"/") {
							bad = append(bad, name+" depends on "+d)
						}
					}
				}
			}
			return bad
		},
	},
	{
		name: "record-is-a-leaf",
		says: "`record` imports, of ceval, only `policy` and `toolcalls`.",
		why:  "every reader of results (report, compare, CI, importers, the image builder's pins) links it without the run machinery: a type it records is its own, filled by the package that counts it (gateway, mockd, grader import record, never the other way round).",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for _, imp := range pkgs["record"].Imports {
				if s, ok := short(imp); ok && s != "policy" && s != "toolcalls" {
					bad = append(bad, "record imports "+s)
				}
			}
			return bad
		},
	},
	{
		name: "results-serve-nothing",
		says: "`record` and `report` depend on no server package: `gateway`, `mockd`, `judge` (a model client) or `net/http`.",
		why:  "a report is rendered from a run directory's files on any machine; what served or judged the run (the model gateway, the mocks, the judge's HTTP client) is no part of reading what it recorded, and a reader that links them grows back into the run machinery (report read judge_calls.jsonl through judge and so linked net/http).",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for _, name := range []string{"record", "report"} {
				for _, d := range pkgs[name].Deps {
					if s, ok := short(d); ok && (s == "gateway" || s == "mockd" || s == "judge") || d == "net/http" {
						bad = append(bad, name+" depends on "+d)
					}
				}
			}
			return bad
		},
	},
	{
		name: "images-build-no-servers",
		says: "`images` depends on no `gateway`, `mockd`, `grader` or `judge`.",
		why:  "the servers and judges that run beside and after an agent are no part of an image, so building, pulling or pinning one never links them.",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for _, d := range pkgs["images"].Deps {
				if s, ok := short(d); ok && (s == "gateway" || s == "mockd" || s == "grader" || s == "judge") {
					bad = append(bad, "images depends on "+s)
				}
			}
			return bad
		},
	},
	{
		name: "ceval-links-no-kubernetes-client",
		says: "`cmd/ceval` depends on no `k8s.io/*` or `sigs.k8s.io/*` package but port-forward's SPDY stream stack (`k8s.io/streaming`, with `k8s.io/klog` and `k8s.io/utils`).",
		why:  "every command pays for what the binary links, at every start: the Kubernetes backend, which most runs never use, talks to the API server through kube's own small REST client; client-go, k8s.io/api and apimachinery doubled the binary (56 -> 111 MB) and `--help`'s RSS (29 -> 59 MiB).",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for _, d := range pkgs["cmd/ceval"].Deps {
				if (strings.HasPrefix(d, "k8s.io/") || strings.HasPrefix(d, "sigs.k8s.io/")) &&
					!strings.HasPrefix(d, "k8s.io/streaming/") && !strings.HasPrefix(d, "k8s.io/klog/") && !strings.HasPrefix(d, "k8s.io/utils/") {
					bad = append(bad, "cmd/ceval depends on "+d)
				}
			}
			return bad
		},
	},
	{
		name: "wasm-worker-apart",
		says: "`wasm` and `wasm/worker` never depend on each other and share only `wasm/wire`, which imports no ceval package; " +
			"`wasm/worker` depends, of ceval, only on `wasm/wire` and `internal/wasmdata`; `wasm` never links wazero.",
		why: "the WASM worker is another trust domain (no capabilities, no environment, UID 65534) than the host side that starts it: " +
			"no type or state is shared but what crosses the pipe; the host never links the runtime that executes guest code, the worker never what a task, a snapshot or a grade is.",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for name, other := range map[string]string{"wasm": "wasm/worker", "wasm/worker": "wasm"} {
				for _, d := range pkgs[name].Deps {
					if s, ok := short(d); ok && s == other {
						bad = append(bad, name+" depends on "+s)
					}
				}
			}
			for _, d := range pkgs["wasm/worker"].Deps {
				if s, ok := short(d); ok && s != "wasm/wire" && s != "internal/wasmdata" {
					bad = append(bad, "wasm/worker depends on "+s)
				}
			}
			for _, d := range pkgs["wasm"].Deps {
				if strings.HasPrefix(d, "github.com/tetratelabs/wazero") {
					bad = append(bad, "wasm depends on "+d)
				}
			}
			for _, d := range pkgs["wasm/wire"].Deps {
				if s, ok := short(d); ok {
					bad = append(bad, "wasm/wire depends on "+s)
				}
			}
			return bad
		},
	},
	{
		name: "runs-parse-no-files",
		says: "`supervisor` imports no YAML or TOML parser (`go.yaml.in/yaml`, `gopkg.in/yaml`, `sigs.k8s.io/yaml`, `github.com/pelletier/go-toml`, `github.com/BurntSushi/toml`).",
		why: "what a user writes (task and experiment YAML, an imported Harbor task's compose file) is parsed where it is loaded (task, importer) or built (images), which report FILE:LINE; " +
			"a run takes what was loaded as data, so a file's format can never fail a run half-way, and a run's phases are not where a format grows a second reader.",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for _, imp := range pkgs["supervisor"].Imports {
				for _, prefix := range []string{"go.yaml.in/yaml", "gopkg.in/yaml", "sigs.k8s.io/yaml", "github.com/pelletier/go-toml", "github.com/BurntSushi/toml"} {
					if strings.HasPrefix(imp, prefix) {
						bad = append(bad, "supervisor imports "+imp)
					}
				}
			}
			return bad
		},
	},
	{
		name: "backends-are-handed-in",
		says: "`supervisor` imports no `sandbox/kubernetes` or `kube`: of the backends, only `sandbox/local` (its default, and the task's services).",
		why: "the caller constructs the backend (cmd/ceval's --backend, selftest) and hands it in as `Options.Backend`, and `supervisor.Check` asks the backend for its own refusals, " +
			"so a new backend (a remote provider, gVisor as a runtime class) is one package and no edit to the run's phases; supervisor choosing by an `Options.Kube` had every backend grow into it.",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for _, imp := range pkgs["supervisor"].Imports {
				if s, ok := short(imp); ok && (s == "sandbox/kubernetes" || s == "kube") {
					bad = append(bad, "supervisor imports "+s)
				}
			}
			return bad
		},
	},
	{
		name: "verifier-runs-no-experiment",
		says: "`verifier` and the sandbox packages (`sandbox`, `sandbox/local`, `sandbox/kubernetes`) depend on no `supervisor` or `experiment`.",
		why: "an executor of the grader runs one container in the local backend's sandbox: the run orchestrator and the experiment scheduler sit above it " +
			"(they hand the grader its executors), so a verifier never links a run's phases, servers or scheduling, and a backend is one package below them.",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for _, name := range []string{"verifier", "sandbox", "sandbox/local", "sandbox/kubernetes"} {
				for _, d := range pkgs[name].Deps {
					if s, ok := short(d); ok && (s == "supervisor" || s == "experiment") {
						bad = append(bad, name+" depends on "+s)
					}
				}
			}
			return bad
		},
	},
	{
		name: "names-have-one-home",
		says: "No package re-exports a name of `sandbox`, `sandbox/local`, `sandbox/kubernetes` or `images` (a type alias of it, a constant or variable set to it, an exported function whose body only calls it); callers import the package that declares it.",
		why: "supervisor kept the names that moved to the sandbox packages as aliases, so `cmd/ceval`, `selftest` and `images`' tests reached the local sandbox and the Kubernetes backend through the run orchestrator: " +
			"a name with two homes hides in the import graph who depends on a backend, and the old home grows back around it.",
		check: reExports,
	},
	{
		name: "grader-runs-nothing",
		says: "`grader` depends on no `supervisor`, `launcher` or `gateway`.",
		why:  "criteria grade a snapshot; running things (containers, a model gateway) is the executors' job.",
		check: func(pkgs map[string]*pkg) (bad []string) {
			for _, d := range pkgs["grader"].Deps {
				if s, ok := short(d); ok && (s == "supervisor" || s == "launcher" || s == "gateway") {
					bad = append(bad, "grader depends on "+s)
				}
			}
			return bad
		},
	},
}

func sortedNames(pkgs map[string]*pkg) []string {
	var names []string
	for name := range pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// TestPackageRules checks every rule against `go list`, one subtest per rule.
func TestPackageRules(t *testing.T) {
	_, pkgs := listPackages(t)
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			for _, b := range r.check(pkgs) {
				t.Errorf("%s: breaks %q: %s", b, r.says, r.why)
			}
		})
	}
}

// TestRulesCatchWhatTheyForbid feeds each rule a graph that breaks it, so no rule passes
// because its check looks at nothing (a renamed package, a prefix that matches no import).
func TestRulesCatchWhatTheyForbid(t *testing.T) {
	_, real := listPackages(t)
	breaks := map[string]func(map[string]*pkg){
		"commands-are-roots": func(p map[string]*pkg) { add(p, "task", "Imports", module+"cmd/ceval") },
		"results-need-no-daemon": func(p map[string]*pkg) {
			add(p, "report", "Deps", "k8s.io/client-go/kubernetes")
		},
		"oci-is-pure": func(p map[string]*pkg) { add(p, "oci", "Imports", "os") },
		"launcher-knows-containers": func(p map[string]*pkg) {
			add(p, "launcher", "Deps", module+"task")
		},
		"container-programs-stay-small": func(p map[string]*pkg) {
			add(p, "cmd/ceval-init", "Deps", module+"gateway")
		},
		"grader-runs-nothing":  func(p map[string]*pkg) { add(p, "grader", "Deps", module+"launcher") },
		"leaves-serve-nothing": func(p map[string]*pkg) { add(p, "mockd/wire", "Deps", "net/http") },
		"ceval-links-no-kubernetes-client": func(p map[string]*pkg) {
			add(p, "cmd/ceval", "Deps", "k8s.io/client-go/kubernetes")
		},
		"wasm-worker-apart":     func(p map[string]*pkg) { add(p, "wasm", "Deps", module+"wasm/worker") },
		"record-is-a-leaf":      func(p map[string]*pkg) { add(p, "record", "Imports", module+"judge") },
		"results-serve-nothing": func(p map[string]*pkg) { add(p, "report", "Deps", "net/http") },
		"images-build-no-servers": func(p map[string]*pkg) {
			add(p, "images", "Deps", module+"mockd")
		},
		"runs-parse-no-files":    func(p map[string]*pkg) { add(p, "supervisor", "Imports", "go.yaml.in/yaml/v3") },
		"backends-are-handed-in": func(p map[string]*pkg) { add(p, "supervisor", "Imports", module+"sandbox/kubernetes") },
		"verifier-runs-no-experiment": func(p map[string]*pkg) {
			add(p, "verifier", "Deps", module+"supervisor")
		},
		"names-have-one-home": func(p map[string]*pkg) {
			dir := t.TempDir()
			src := "package supervisor\n\nimport \"ceval.dev/ceval/sandbox\"\n\ntype IDRange = sandbox.IDRange\n"
			if err := os.WriteFile(filepath.Join(dir, "alias.go"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			p["supervisor"].Dir, p["supervisor"].GoFiles = dir, []string{"alias.go"}
		},
	}
	for _, r := range rules {
		brk, ok := breaks[r.name]
		if !ok {
			t.Errorf("rule %s has no case here that breaks it", r.name)
			continue
		}
		if bad := r.check(real); len(bad) > 0 {
			continue // TestPackageRules reports it
		}
		p := map[string]*pkg{}
		for name, q := range real {
			c := *q
			c.Imports, c.Deps = slices.Clone(q.Imports), slices.Clone(q.Deps)
			p[name] = &c
		}
		brk(p)
		if bad := r.check(p); len(bad) == 0 {
			t.Errorf("rule %s does not see the import that breaks it", r.name)
		}
	}
}

func add(p map[string]*pkg, name, field, imp string) {
	if field == "Imports" {
		p[name].Imports = append(p[name].Imports, imp)
	}
	p[name].Deps = append(p[name].Deps, imp)
}

const (
	tableStart = "<!-- imports: generated by internal/archtest; go test ./internal/archtest -update -->"
	tableEnd   = "<!-- end of imports -->"
	rulesStart = "<!-- rules: generated by internal/archtest from its rule table; go test ./internal/archtest -update -->"
	rulesEnd   = "<!-- end of rules -->"
)

// replaceBetween returns doc with the text between the markers start and end (kept) replaced
// by body.
func replaceBetween(t *testing.T, doc, start, end, body string) string {
	t.Helper()
	i, j := strings.Index(doc, start), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/ARCHITECTURE.md has no generated section between %q and %q", start, end)
	}
	return doc[:i+len(start)] + "\n\n" + body + "\n" + doc[j:]
}

// TestArchitectureDocIsTrue compares the document's rule list with the rules TestPackageRules
// checks and its import table with `go list`, and checks that it names every package.
func TestArchitectureDocIsTrue(t *testing.T) {
	root, pkgs := listPackages(t)
	var names []string
	for name := range pkgs {
		if documented(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| package | imports (ceval packages) |\n|---|---|\n")
	for _, name := range names {
		var imps []string
		for _, imp := range pkgs[name].Imports {
			if s, ok := short(imp); ok {
				imps = append(imps, "`"+s+"`")
			}
		}
		sort.Strings(imps)
		b.WriteString("| `" + name + "` | " + strings.Join(imps, " ") + " |\n")
	}
	var r strings.Builder
	for _, rl := range rules {
		r.WriteString("- **" + rl.name + "**: " + rl.says + " Why: " + rl.why + "\n")
	}
	path := filepath.Join(root, "docs", "ARCHITECTURE.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	want := replaceBetween(t, s, rulesStart, rulesEnd, r.String())
	want = replaceBetween(t, want, tableStart, tableEnd, b.String())
	if want != s {
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's rule list or import table is not the test's rules and the module's imports: run go test ./internal/archtest -update and read the diff", path)
	}
	// Every package is described in prose too (a row of the "Packages" table), not only in
	// the generated table.
	prose := s[:strings.Index(s, tableStart)]
	for _, name := range names {
		if !strings.Contains(prose, "`"+name+"`") {
			t.Errorf("%s does not describe package %s above the import table", path, name)
		}
	}
}

// TestPackagesTableListsEveryPackage: the "Packages" table names every package of the module
// (`go list ./...`, the scripts' helper programs included) in a row's first cell, so a
// newcomer finds where each piece lives (the README's Layout once listed 13 of 26).
func TestPackagesTableListsEveryPackage(t *testing.T) {
	root, pkgs := listPackages(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\n## Packages\n")
	if !ok {
		t.Fatal("docs/ARCHITECTURE.md has no ## Packages section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	// The first cell of each table row: "| `a`, `b` | owns | must not |".
	var first string
	for _, line := range strings.Split(sec, "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 2 && strings.HasPrefix(line, "| ") {
			first += cells[1]
		}
	}
	for _, name := range sortedNames(pkgs) {
		if !strings.Contains(first, "`"+name+"`") {
			t.Errorf("docs/ARCHITECTURE.md's Packages table does not list package %s", name)
		}
	}
}

// homes are the packages whose names rule names-have-one-home keeps from being re-exported.
var homes = []string{"sandbox", "sandbox/local", "sandbox/kubernetes", "images"}

// reExports finds, in every package but the homes themselves, a type alias of a home's name,
// a package-level constant or variable set to one, and an exported function (not a method:
// those implement interfaces) whose body is one call of a home's function.
func reExports(pkgs map[string]*pkg) (bad []string) {
	for _, name := range sortedNames(pkgs) {
		if slices.Contains(homes, name) {
			continue
		}
		p := pkgs[name]
		for _, f := range p.GoFiles {
			file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				bad = append(bad, name+": "+err.Error())
				continue
			}
			local := map[string]string{} // the file's name for each home it imports
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				s, ok := short(path)
				if !ok || !slices.Contains(homes, s) {
					continue
				}
				id := s[strings.LastIndex(s, "/")+1:]
				if imp.Name != nil {
					id = imp.Name.Name
				}
				local[id] = s
			}
			if len(local) == 0 {
				continue
			}
			// home names the home a selector expression x.Y refers to, if any.
			home := func(e ast.Expr) string {
				if sel, ok := e.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && local[id.Name] != "" {
						return local[id.Name] + "." + sel.Sel.Name
					}
				}
				return ""
			}
			for _, d := range file.Decls {
				switch d := d.(type) {
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						switch s := spec.(type) {
						case *ast.TypeSpec:
							if h := home(s.Type); s.Assign.IsValid() && h != "" {
								bad = append(bad, fmt.Sprintf("%s/%s: type %s = %s", name, f, s.Name.Name, h))
							}
						case *ast.ValueSpec:
							for i, v := range s.Values {
								if h := home(v); h != "" && s.Names[i].IsExported() {
									bad = append(bad, fmt.Sprintf("%s/%s: %s = %s", name, f, s.Names[i].Name, h))
								}
							}
						}
					}
				case *ast.FuncDecl:
					if d.Recv != nil || !d.Name.IsExported() || d.Body == nil || len(d.Body.List) != 1 {
						continue
					}
					var call ast.Expr
					switch st := d.Body.List[0].(type) {
					case *ast.ReturnStmt:
						if len(st.Results) == 1 {
							call = st.Results[0]
						}
					case *ast.ExprStmt:
						call = st.X
					}
					if c, ok := call.(*ast.CallExpr); ok {
						if h := home(c.Fun); h != "" {
							bad = append(bad, fmt.Sprintf("%s/%s: func %s only calls %s", name, f, d.Name.Name, h))
						}
					}
				}
			}
		}
	}
	return bad
}
