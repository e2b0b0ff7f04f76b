package importer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/task"
)

// TestImportHarborComposeSidecarBecomesAService: the sidecar of the compose file becomes a
// service (image, command, env, exposed port, healthcheck as its ready check with
// start_period's tries added); main's depends_on holds by construction. Nothing is unmapped.
func TestImportHarborComposeSidecarBecomesAService(t *testing.T) {
	rs, err := ImportHarbor([]string{"testdata/harbor/with-service"}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if !r.OK() {
		t.Fatalf("not OK: invalid %v; %v", r.Invalid, r.Problems)
	}
	tk, err := task.Load(r.Output)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if len(tk.Services) != 1 {
		t.Fatalf("services %+v", tk.Services)
	}
	s := tk.Services[0]
	if s.Name != "quotes" || s.Image != "ceval.local/default:latest" || len(s.Command) != 3 || s.Command[0] != "sh" ||
		!slices.Equal(s.Ports, []int{5000}) || !slices.Equal(s.Env, []string{"LANG=C"}) {
		t.Errorf("service %+v", s)
	}
	rd := s.Ready
	if !slices.Equal(rd.Command, []string{"wget", "-q", "-O", "/dev/null", "http://127.0.0.1:5000/quote.txt"}) ||
		rd.Interval != time.Second || rd.Timeout != 3*time.Second || rd.Retries != 12 {
		t.Errorf("ready %+v: want the healthcheck, 10 retries plus start_period's 2", rd)
	}
}

// TestImportHarborComposeReportsWhatItCannotMap: every compose setting ceval runs
// differently or not at all is unmapped at its line, so the task is never "ok".
func TestImportHarborComposeReportsWhatItCannotMap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sidecars")
	writeFile(t, filepath.Join(dir, "task.toml"), "version = \"1.0\"\n")
	writeFile(t, filepath.Join(dir, "instruction.md"), "do it")
	writeFile(t, filepath.Join(dir, "tests", "test.sh"), "echo 1 >/logs/verifier/reward.txt\n")
	writeFile(t, filepath.Join(dir, HarborComposeFile), `services:
  main:
    volumes:
      - ./resolv.conf:/etc/resolv.conf:ro
    depends_on: [dns]
  dns:
    build:
      context: ./dns
      args: {X: "1"}
    cap_add: [NET_ADMIN]
    restart: always
    expose: ["53/udp"]
  api:
    image: example.com/api:1
    ports: ["8080:80"]
    environment: [TOKEN]
  db:
    image: example.com/db:1
  Bad_Name:
    image: x
networks:
  dnsnet: {driver: bridge}
`)
	rs, err := ImportHarbor([]string{dir}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	got := map[string]int{}
	for _, p := range r.Problems {
		if p.Unmapped {
			if !strings.HasSuffix(p.File, HarborComposeFile) {
				t.Errorf("problem %+v is not at the compose file", p)
			}
			got[p.Field] = p.Line
		}
	}
	want := map[string]int{
		"services.main.volumes":    3,
		"services.dns.build.args":  9,
		"services.dns.cap_add":     10,
		"services.dns.restart":     11,
		"services.dns.expose":      12,
		"services.dns.healthcheck": 6,
		"services.api.environment": 16,
		"services.db.healthcheck":  17,
		"services.Bad_Name":        19,
		"networks":                 21,
	}
	for f, line := range want {
		if got[f] != line {
			t.Errorf("%s unmapped at line %d, want %d (all: %v)", f, got[f], line, got)
		}
	}
	if r.OK() {
		t.Fatal("a task whose meaning changed is OK")
	}
	// api, without a healthcheck, waits for its (published) port 80.
	out, err := os.ReadFile(r.Output)
	if err != nil || !strings.Contains(string(out), "tcp: 80") {
		t.Errorf("api's ready check is not its port (%v):\n%s", err, out)
	}
}
