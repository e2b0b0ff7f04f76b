package importer

import (
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

// TestImportHarborComposeNetworkMode: network_mode: host becomes the service's network:
// host (a note says the run needs the user's --allow-host-network), and such a service may
// fetch at start; none is a note; a bridge, or host with depends_on, is unmapped at its line.
func TestImportHarborComposeNetworkMode(t *testing.T) {
	write := func(compose string) string {
		dir := filepath.Join(t.TempDir(), "hostnet")
		writeFile(t, filepath.Join(dir, "task.toml"), "version = \"1.0\"\n")
		writeFile(t, filepath.Join(dir, "instruction.md"), "do it")
		writeFile(t, filepath.Join(dir, "tests", "test.sh"), "echo 1 >/logs/verifier/reward.txt\n")
		writeFile(t, filepath.Join(dir, HarborComposeFile), compose)
		return dir
	}
	rs, err := ImportHarbor([]string{write(`services:
  main: {}
  api:
    image: example.com/api:1
    command: ["uvx", "some-mcp-server", "--port", "8000"]
    network_mode: host
    expose: ["8000"]
  quiet:
    image: example.com/q:1
    network_mode: none
    expose: ["9000"]
`)}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if !r.OK() {
		t.Fatalf("not OK: invalid %v; %v", r.Invalid, r.Problems)
	}
	var notes []string
	for _, p := range r.Problems {
		notes = append(notes, p.Field+": "+p.Reason)
	}
	all := strings.Join(notes, "\n")
	if !strings.Contains(all, "services.api.network_mode: became network: host") || !strings.Contains(all, "--allow-host-network") ||
		!strings.Contains(all, "services.quiet.network_mode: a ceval service's network is loopback only") {
		t.Errorf("notes:\n%s", all)
	}
	tk, err := task.Load(r.Output)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if len(tk.Services) != 2 || tk.Services[0].Network != "host" || tk.Services[1].Network != "none" {
		t.Fatalf("services %+v", tk.Services)
	}

	rs, err = ImportHarbor([]string{write(`services:
  main: {}
  db:
    image: example.com/db:1
    expose: ["5432"]
  api:
    image: example.com/api:1
    network_mode: host
    depends_on: [db]
    expose: ["8000"]
  other:
    image: example.com/o:1
    network_mode: bridge
    expose: ["7000"]
`)}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r = rs[0]
	got := map[string]int{}
	for _, p := range r.Problems {
		if p.Unmapped {
			got[p.Field] = p.Line
		}
	}
	if got["services.api.depends_on"] != 9 || got["services.other.network_mode"] != 13 {
		t.Errorf("unmapped %v: want api's depends_on at 9 and other's network_mode at 13", got)
	}
	if r.OK() {
		t.Fatal("a task whose meaning changed is OK")
	}
}
