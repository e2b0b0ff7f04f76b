package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestImagesPullHelpSaysWhereCredentialsAndHostsComeFrom(t *testing.T) {
	r := ceval(t, "images", "pull", "--help")
	for _, want := range []string{"pull REF [--platform P]", "--docker-config", "$DOCKER_CONFIG/config.json", "--hosts-dir", "/etc/containerd/certs.d", "HOST/ca.crt", "setuid/setgid", "removed again", "runnable as it", "--pull"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("images pull --help (exit %d) lacks %q:\n%s", r.code, want, r.stdout)
		}
	}
	r = ceval(t, "images", "push", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "push NAME REF") {
		t.Errorf("images push --help (exit %d):\n%s", r.code, r.stdout)
	}
}

func TestImagesPullRefusesBadInputBeforeConnecting(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(bad, []byte(`{"auths":`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := ceval(t, "images", "pull", "reg.example/a:t", "--docker-config", bad, "--containerd-address", "/nonexistent/containerd.sock")
	if r.code != 2 || !strings.Contains(r.stderr, "docker config "+bad+": not valid JSON") {
		t.Errorf("pull with a broken docker config: exit %d, stderr %q; want 2 naming the file", r.code, r.stderr)
	}
	r = ceval(t, "images", "pull", "reg.example/a:t", "--platform", "linux/amd64/v3/x", "--containerd-address", "/nonexistent/containerd.sock")
	if r.code != 2 || !strings.Contains(r.stderr, `--platform "linux/amd64/v3/x"`) {
		t.Errorf("pull with a bad --platform: exit %d, stderr %q; want 2", r.code, r.stderr)
	}
}

// The CLI against scripts/registry.sh's registry: a wrong password exits 2 with one line
// naming the Docker config file.
func TestImagesPullWithAWrongPasswordNamesTheFile(t *testing.T) {
	reg := os.Getenv("CEVAL_TEST_REGISTRY")
	if reg == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and a registry is required: CEVAL_TEST_REGISTRY unset (scripts/registry.sh start DIR)")
		}
		t.Skip("CEVAL_TEST_REGISTRY unset: start one with scripts/registry.sh start DIR and export its env")
	}
	hosts := t.TempDir()
	ca, err := os.ReadFile(os.Getenv("CEVAL_TEST_REGISTRY_CA"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(hosts, reg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hosts, reg, "ca.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	dc := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(os.Getenv("CEVAL_TEST_REGISTRY_USER") + ":wrong"))
	if err := os.WriteFile(filepath.Join(dc, "config.json"), []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg, auth)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := ceval(t, "images", "pull", reg+"/ceval-test/none:v1", "--hosts-dir", hosts, "--docker-config", filepath.Join(dc, "config.json"))
	want := fmt.Sprintf("registry %s refused the credentials from %s", reg, filepath.Join(dc, "config.json"))
	if cmd.code != 2 || !strings.Contains(cmd.stderr, want) || strings.Contains(cmd.stderr, "level=") {
		t.Errorf("pull with a wrong password: exit %d, stderr %q; want 2, %q and no containerd log lines", cmd.code, cmd.stderr, want)
	}
}
