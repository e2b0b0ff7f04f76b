package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Only a test.sh that is exactly the standard pattern becomes a hardened pytest criterion;
// every variant that does more (or other) than install pytest, run it over tests/'s test
// files and write 1/0 by its status keeps harbor_reward.
func TestHarborStandardPytestShape(t *testing.T) {
	tests := t.TempDir()
	for _, f := range []string{"test_outputs.py", "test_more.py", "helper.py"} {
		if err := os.WriteFile(filepath.Join(tests, f), []byte("def test_x(): pass\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const pre = "#!/bin/bash\napt-get update\napt-get install -y curl\ncurl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh\nsource $HOME/.local/bin/env\n"
	const ifR = "\nif [ $? -eq 0 ]; then\n  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n"
	for _, c := range []struct {
		name, script, tests string
	}{
		{"terminal-bench uvx", pre + "uvx \\\n  -p 3.13 \\\n  -w pytest==8.4.1 \\\n  -w pytest-json-ctrf==0.3.5 \\\n  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA" + ifR, "tests/test_outputs.py"},
		{"and-or one line", "#!/bin/bash\npython3 -m pytest /tests/test_outputs.py -q && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n", "tests/test_outputs.py"},
		{"status variable", pre + "set +e\nuv run --with pytest pytest /tests/test_outputs.py -q\nstatus=$?\nmkdir -p /logs/verifier\n[ $status -eq 0 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\nexit 0\n", "tests/test_outputs.py"},
		{"if over the call", "#!/bin/bash\nset -euo pipefail\nif uvx --python 3.12 --with pytest python -m pytest /tests/test_outputs.py; then\n  echo 1.0 > /logs/verifier/reward.txt\nelse\n  echo 0.0 > /logs/verifier/reward.txt\nfi\n", "tests/test_outputs.py"},
		{"fi redirected", "python3 -m pytest /tests/test_outputs.py\nif [ $? -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n", "tests/test_outputs.py"},
		{"every test file", "pytest /tests/test_outputs.py /tests/test_more.py" + ifR, "tests"},
		{"the directory", "pytest /tests" + ifR, "tests"},
		{"pip install pytest", "pip install pytest==8.4.1\npytest /tests/test_outputs.py" + ifR, "tests/test_outputs.py"},
		{"curl only on debian", "#!/bin/bash\nif [ -f /etc/debian_version ]; then\n    apt-get update && apt-get install -y curl\nfi\n\ncurl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh\nsource $HOME/.local/bin/env\nuvx -p 3.13 -w pytest==8.4.1 pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA\nstatus=$?\nif [ $status -eq 0 ]; then\n  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\nexit 0\n", "tests/test_outputs.py"},
		{"debian block, then on its own line", "if [ -e /etc/debian_version ]\nthen\n  apt-get update\n  apt-get install -y --no-install-recommends curl ca-certificates\nfi\npytest /tests/test_outputs.py" + ifR, "tests/test_outputs.py"},
		{"debian block on one line", "if [ -f /etc/debian_version ]; then apt-get update; apt-get install -y curl; fi\npytest /tests/test_outputs.py" + ifR, "tests/test_outputs.py"},

		{"debian block installing jq", "if [ -f /etc/debian_version ]; then\n  apt-get update && apt-get install -y curl jq\nfi\npytest /tests/test_outputs.py" + ifR, ""},
		{"debian block running a command", "if [ -f /etc/debian_version ]; then\n  apt-get update\n  cp /tests/fixture /app/\nfi\npytest /tests/test_outputs.py" + ifR, ""},
		{"debian block with an else", "if [ -f /etc/debian_version ]; then\n  apt-get update\nelse\n  apk add curl\nfi\npytest /tests/test_outputs.py" + ifR, ""},
		{"debian block never closed", "if [ -f /etc/debian_version ]; then\n  apt-get update\npytest /tests/test_outputs.py" + ifR, ""},
		{"another file tested", "if [ -f /app/ready ]; then\n  apt-get update\nfi\npytest /tests/test_outputs.py" + ifR, ""},
		{"pytest inside the debian block", "if [ -f /etc/debian_version ]; then\n  pytest /tests/test_outputs.py\nfi" + ifR, ""},

		{"a download first", "curl -fsS http://inventory:7100/items > /tmp/items.json || true\npython3 -m pytest /tests/test_outputs.py" + ifR, ""},
		{"another package", pre + "uvx --with pytest==8.4.1 --with numpy pytest /tests/test_outputs.py" + ifR, ""},
		{"pip requirements", "pip install -r /tests/requirements.txt\npytest /tests/test_outputs.py" + ifR, ""},
		{"apt-get jq", "apt-get update && apt-get install -y curl jq\npytest /tests/test_outputs.py" + ifR, ""},
		{"some of the files", "pytest /tests/test_outputs.py -k answer" + ifR, ""},
		{"not every file", "pytest /tests/test_outputs.py /tests/helper.py" + ifR, ""},
		{"a missing file", "pytest /tests/test_gone.py" + ifR, ""},
		{"rewards inverted", "pytest /tests/test_outputs.py\nif [ $? -eq 0 ]; then echo 0 > /logs/verifier/reward.txt; else echo 1 > /logs/verifier/reward.txt; fi\n", ""},
		{"status of another command", "pytest /tests/test_outputs.py\ntrue\nif [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n", ""},
		{"another variable", "pytest /tests/test_outputs.py\ns=$?\nif [ $t -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n", ""},
		{"reward.json", "pytest /tests/test_outputs.py && echo 1 > /logs/verifier/reward.json || echo 0 > /logs/verifier/reward.json\n", ""},
		{"extra check", "pytest /tests/test_outputs.py" + ifR + "grep -q ok /app/log || echo 0 > /logs/verifier/reward.txt\n", ""},
		{"a conftest plugin", "pytest -p myplugin /tests/test_outputs.py" + ifR, ""},
		{"no pytest", "if [ -f /app/a ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n", ""},
		{"a subshell", "(cd /app && pytest /tests/test_outputs.py)" + ifR, ""},
	} {
		g, ok := harborStandardPytest([]byte(c.script), tests)
		if ok != (c.tests != "") || ok && g.tests != c.tests {
			t.Errorf("%s: standard %v, tests %q; want %v, %q", c.name, ok, g.tests, c.tests != "", c.tests)
		}
	}
}

// The import emits the standard pattern as the hardened pytest criterion with the same
// services and timeout, with a note at the pytest line; an image known to have no python3
// keeps harbor_reward.
func TestImportHarborHardensTheStandardPytestTestSh(t *testing.T) {
	r, err := Harbor("testdata/harbor/tb-pytest", Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := string(r.Output)
	for _, want := range []string{"type: pytest\n", "tests: tests/test_outputs.py\n", "sandbox: container\n", "isolation: process\n", "all_or_nothing: true\n", "timeout: 120s\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("task.yaml lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "harbor_reward") {
		t.Errorf("task.yaml still has harbor_reward:\n%s", out)
	}
	noted := false
	for _, p := range r.Problems {
		noted = noted || p.Field == "tests/test.sh" && p.Line == 11 && !p.Unmapped && strings.Contains(p.Reason, "isolation: process")
	}
	if !noted {
		t.Errorf("no note at test.sh:11: %v", r.Problems)
	}

	// ImportHarbor keeps no note of the preamble's rewrite: no criterion runs that test.sh
	rs, err := ImportHarbor([]string{"testdata/harbor/tb-pytest"}, t.TempDir(), Options{})
	if err != nil || !rs[0].OK() {
		t.Fatalf("import: %v %v", err, rs)
	}
	for _, p := range rs[0].Problems {
		if p.Field == "preamble" {
			t.Errorf("a preamble note for the hardened test.sh: %v", p)
		}
	}

	dir := t.TempDir()
	copyDir(t, "testdata/harbor/tb-pytest", dir)
	if err := os.WriteFile(filepath.Join(dir, "environment", "Dockerfile"), []byte("FROM debian:bookworm-slim\nWORKDIR /app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = Harbor(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Output), "harbor_reward: true") {
		t.Errorf("an image without python3 lost harbor_reward:\n%s", r.Output)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
