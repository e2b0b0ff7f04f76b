// Package chromiumtest drives Debian's headless chromium for tests: a page's DOM as the
// browser parsed it, its console's complaints, and screenshots kept in $CEVAL_SCREENSHOTS.
package chromiumtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Find finds Debian's chromium: a failure under CI=true, else a skip.
func Find(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is missing under CI=true (apt-get install chromium)")
		}
		t.Skip("chromium not installed")
	}
	return bin
}

func args(t *testing.T, extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions", "--user-data-dir=" + t.TempDir()}, extra...)
}

// DOM loads a file and returns the DOM as parsed and the console's complaints.
func DOM(t *testing.T, bin, path string) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args(t, "--enable-logging=stderr", "--v=0", "--dump-dom", "file://"+path)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	var console []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Refused to") || strings.Contains(line, "Uncaught") {
			console = append(console, line)
		}
	}
	return stdout.String(), console
}

// Screenshot saves a screenshot of path as name in $CEVAL_SCREENSHOTS (a temporary
// directory when unset) and checks it is not blank.
func Screenshot(t *testing.T, bin, path, name string) {
	t.Helper()
	shots := os.Getenv("CEVAL_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	png := filepath.Join(shots, name)
	out, err := exec.CommandContext(ctx, bin, args(t, "--hide-scrollbars", "--window-size=1280,2400", "--screenshot="+png, "file://"+path)...).CombinedOutput()
	if err != nil {
		t.Errorf("chromium screenshot: %v\n%s", err, out)
		return
	}
	if st, err := os.Stat(png); err != nil {
		t.Errorf("screenshot %s: %v", png, err)
	} else if st.Size() < 10<<10 {
		t.Errorf("screenshot %s is %d bytes: a blank page?", png, st.Size())
	}
}
