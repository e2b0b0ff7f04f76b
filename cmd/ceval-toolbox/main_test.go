package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// built is this command compiled for wasip1 with the flags mk/embedded.mk uses, once per
// test binary.
var built = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "toolbox-test")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "toolbox.wasm")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-trimpath", "-buildvcs=false",
		"-ldflags=-s -w -buildid=", "-o", out, ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build toolbox.wasm: %v\n%s", err, msg)
	}
	return os.ReadFile(out)
})

func buildWasm(t *testing.T) []byte {
	t.Helper()
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

type wasmResult struct {
	stdout, stderr string
	code           uint32
}

// runWasm runs the toolbox under wazero with workspace mounted read-only at /workspace
// and an empty writable /tmp, as package wasm does.
func runWasm(t *testing.T, rt wazero.Runtime, mod wazero.CompiledModule, workspace, script string) wasmResult {
	t.Helper()
	ctx := context.Background()
	var out, errb bytes.Buffer
	fsCfg := wazero.NewFSConfig().
		WithReadOnlyDirMount(workspace, "/workspace").
		WithDirMount(t.TempDir(), "/tmp")
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("toolbox", "-c", script).
		WithEnv("PWD", "/workspace").
		WithStdin(strings.NewReader("")).
		WithStdout(&out).
		WithStderr(&errb).
		WithFSConfig(fsCfg)
	inst, err := rt.InstantiateModule(ctx, mod, cfg)
	code := uint32(0)
	var exitErr *sys.ExitError
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run toolbox.wasm: %v", err)
	default:
		inst.Close(ctx)
	}
	return wasmResult{out.String(), errb.String(), code}
}

// TestWasmToolboxRunsPipelineAndHeredoc proves the wasip1 build end to end: the pipes,
// heredocs and here-strings that mvdan.cc/sh's interpreter cannot do on wasip1 work here.
func TestWasmToolboxRunsPipelineAndHeredoc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and compiles a wasm module")
	}
	bin := buildWasm(t)
	if len(bin) > 16<<20 {
		t.Errorf("toolbox.wasm is %d bytes; keep it under 16 MiB", len(bin))
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithDebugInfoEnabled(false))
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	instantiateNoPythonHost(t, rt)
	mod, err := rt.CompileModule(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "data.txt"), []byte("apple 3\nbanana 12\ncherry 7\napple 5\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n// TODO\n"), 0o644)

	tests := []struct {
		name, script, stdout string
		code                 uint32
	}{
		{"pipeline and heredoc", `pwd
grep apple data.txt | awk '{s += $2} END {print "sum", s}'
cat <<EOF | sort -r | head -1
alpha
gamma $(echo beta)
EOF
tr a-z A-Z <<< "here string"
seq 1 1000 | grep -c 7
`, "/workspace\nsum 8\ngamma beta\nHERE STRING\n271\n", 0},
		{"exit status", `grep -q kiwi data.txt || exit 3`, "", 3},
		{"writes tmp, not workspace", `echo x > /tmp/f && cat /tmp/f && echo y > new.txt; echo $?`, "x\n1\n", 0},
		{"jq and sha256sum", `echo '{"a":[1,2]}' | jq -c '.a|add'; printf abc | sha256sum | cut -c1-8`, "3\nba7816bf\n", 0},
		{"find and diff", `find . -name '*.go'; diff data.txt data.txt && echo same`, "./src/main.go\nsame\n", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runWasm(t, rt, mod, ws, tc.script)
			if got.stdout != tc.stdout || got.code != tc.code {
				t.Errorf("got exit %d stdout %q (stderr %q); want exit %d stdout %q",
					got.code, got.stdout, got.stderr, tc.code, tc.stdout)
			}
		})
	}
}

// TestWasmToolboxIgnoresPlantedCommandOnPath is the trojan attack: a workspace that ships
// its own "grep" and puts itself first on PATH still gets the toolbox's grep, because the
// toolbox runs no files at all.
func TestWasmToolboxIgnoresPlantedCommandOnPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and compiles a wasm module")
	}
	bin := buildWasm(t)
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithDebugInfoEnabled(false))
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	instantiateNoPythonHost(t, rt)
	mod, err := rt.CompileModule(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "grep"), []byte("#!/bin/sh\necho PWNED\nexit 0\n"), 0o755)
	os.WriteFile(filepath.Join(ws, "out.txt"), []byte("FAIL\n"), 0o644)
	got := runWasm(t, rt, mod, ws, `export PATH=/workspace:$PATH; grep -q PASS out.txt; echo $?; ./grep; echo $?`)
	if !strings.HasPrefix(got.stdout, "1\n127\n") || strings.Contains(got.stdout, "PWNED") {
		t.Errorf("planted grep ran or real grep misbehaved: stdout %q stderr %q", got.stdout, got.stderr)
	}
}

// instantiateNoPythonHost provides the "ceval" host module the toolbox imports for python,
// as a host without CPython: python_run answers 127.
func instantiateNoPythonHost(t *testing.T, rt wazero.Runtime) {
	t.Helper()
	_, err := rt.NewHostModuleBuilder("ceval").
		NewFunctionBuilder().WithFunc(func(_, _, _, _, _ uint32) uint32 { return 127 }).Export("python_run").
		NewFunctionBuilder().WithFunc(func(_, _, _ uint32) uint32 { return 0 }).Export("python_output").
		Instantiate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
}
