package archtest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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

// The rules docs/ARCHITECTURE.md states, each with why it holds.
func TestPackageRules(t *testing.T) {
	_, pkgs := listPackages(t)
	for name, p := range pkgs {
		for _, imp := range p.Imports {
			if s, ok := short(imp); ok && strings.HasPrefix(s, "cmd/") {
				t.Errorf("%s imports %s: commands are the graph's roots, never imported (their logic belongs in a package)", name, s)
			}
		}
	}
	// Results are read by `ceval report`, `compare` and CI on any machine: the result schema
	// and the report must not need a daemon's client, gRPC or Kubernetes.
	for _, name := range []string{"record", "report"} {
		for _, d := range pkgs[name].Deps {
			if strings.HasPrefix(d, "github.com/containerd/") || strings.HasPrefix(d, "google.golang.org/grpc") ||
				strings.HasPrefix(d, "k8s.io/") || strings.HasPrefix(d, "github.com/tetratelabs/wazero") {
				t.Errorf("%s depends on %s: the result schema and the report stay free of containerd, gRPC, Kubernetes and wazero", name, d)
			}
		}
	}
	// oci builds the spec, pure and golden-tested: no ceval package but policy (and a lazy
	// regexp), no client.
	for _, imp := range pkgs["oci"].Imports {
		if s, ok := short(imp); ok && s != "policy" && s != "internal/lazyregexp" {
			t.Errorf("oci imports %s: the spec builder may know only policy's fixed facts", s)
		}
		if imp == "github.com/containerd/containerd/v2/client" {
			t.Errorf("oci imports the containerd client: it builds specs, it never talks to a daemon")
		}
	}
	// launcher starts containers; what a task is, how it is graded and what a run is are
	// above it.
	for _, d := range pkgs["launcher"].Deps {
		if s, ok := short(d); ok && (s == "task" || s == "grader" || s == "supervisor" || s == "record" || s == "images") {
			t.Errorf("launcher depends on %s: the containerd client knows containers, not tasks, grades or runs", s)
		}
	}
	// The container-side programs are static and small: no ceval package but their wire
	// protocols and parsers.
	allowed := map[string][]string{
		"cmd/ceval-mock": {"mockd/wire"},
		"cmd/ceval-init": {"internal/kubeproto", "internal/idmap", "policy"},
	}
	for name, ok := range allowed {
		for _, d := range pkgs[name].Deps {
			s, mine := short(d)
			if !mine {
				continue
			}
			found := false
			for _, a := range ok {
				found = found || s == a
			}
			if !found {
				t.Errorf("%s depends on %s: programs that run inside the agent's container import only %v", name, s, ok)
			}
		}
	}
	// The WASM worker is another trust domain (no capabilities, no environment, UID 65534)
	// than the host side that starts it: each side links only its own code and the wire
	// protocol, so no type or state is shared but what crosses the pipe. The host never
	// links wazero; the worker never links what a task, a snapshot or a grade is.
	for name, other := range map[string]string{"wasm": "wasm/worker", "wasm/worker": "wasm"} {
		for _, d := range pkgs[name].Deps {
			if s, ok := short(d); ok && s == other {
				t.Errorf("%s depends on %s: the WASM host side and its worker process share only wasm/wire", name, s)
			}
		}
	}
	for _, d := range pkgs["wasm/worker"].Deps {
		if s, ok := short(d); ok && s != "wasm/wire" && s != "internal/wasmdata" {
			t.Errorf("wasm/worker depends on %s: the worker process imports only the wire protocol (and the WebAssembly reader) of ceval", s)
		}
	}
	for _, d := range pkgs["wasm"].Deps {
		if strings.HasPrefix(d, "github.com/tetratelabs/wazero") {
			t.Errorf("wasm depends on %s: the host side never links the runtime that executes guest code; only wasm/worker does", d)
		}
	}
	for _, d := range pkgs["wasm/wire"].Deps {
		if _, ok := short(d); ok {
			t.Errorf("wasm/wire depends on %s: the protocol holds types and their encoding, nothing of either side", d)
		}
	}
	// The grader's verdicts never depend on a model gateway's or a judge's process state.
	for _, d := range pkgs["grader"].Deps {
		if s, ok := short(d); ok && (s == "supervisor" || s == "launcher" || s == "gateway") {
			t.Errorf("grader depends on %s: criteria grade a snapshot; running things is the executors' job", s)
		}
	}
}

const (
	tableStart = "<!-- imports: generated by internal/archtest; go test ./internal/archtest -update -->"
	tableEnd   = "<!-- end of imports -->"
)

// TestArchitectureDocIsTrue compares the document's import table with `go list`, and checks
// that it names every package.
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
	b.WriteString(tableStart + "\n\n| package | imports (ceval packages) |\n|---|---|\n")
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
	b.WriteString("\n" + tableEnd)
	path := filepath.Join(root, "docs", "ARCHITECTURE.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, tableStart), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated import table (markers %q ... %q)", path, tableStart, tableEnd)
	}
	want := s[:i] + b.String() + s[j+len(tableEnd):]
	if want != s {
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's import table is not the module's imports: run go test ./internal/archtest -update and read the diff", path)
	}
	// Every package is described in prose too (a row of the "Packages" table), not only in
	// the generated table.
	prose := s[:i]
	for _, name := range names {
		if !strings.Contains(prose, "`"+name+"`") {
			t.Errorf("%s does not describe package %s above the import table", path, name)
		}
	}
}
