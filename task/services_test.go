package task

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestServicesLoadInDependencyOrderWithDefaults(t *testing.T) {
	doc := minimal + `services:
  - name: api
    command: [httpd, -f, -p, "8080"]
    env: {B: "2", A: x}
    files: svc/api
    ports: [8080]
    ready: {tcp: 8080, interval: 100ms, retries: 5}
    depends_on: [db]
  - name: db
    image: example.com/db:1
    command: [db]
    workdir: /var/db
    limits: {memory_mb: 64, pids: 40, cpus: 0.5, disk_mb: 10}
    ready: {command: [db, ping]}
    network: host
`
	tk, err := Load(writeTask(t, doc, map[string]string{"svc/api/www/index.html": "hi"}))
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if got := serviceNames(tk.Services); !slices.Equal(got, []string{"db", "api"}) {
		t.Fatalf("start order %v, want db before api", got)
	}
	db, api := tk.Services[0], tk.Services[1]
	if db.Workdir != "/var/db" || db.Limits != (ServiceLimits{MemoryMB: 64, CPUs: 0.5, Pids: 40, DiskMB: 10}) || !slices.Equal(db.Ready.Command, []string{"db", "ping"}) || db.Ready.Retries != DefaultReadyRetries {
		t.Errorf("db = %+v", db)
	}
	if db.Network != "host" || api.Network != "none" {
		t.Errorf("networks: db %q (said host), api %q (the default: none)", db.Network, api.Network)
	}
	if api.Image != DefaultImage || api.Workdir != "" || api.Files == nil || !slices.Equal(api.Env, []string{"A=x", "B=2"}) ||
		api.Ready.TCP != 8080 || api.Ready.Interval != 100*time.Millisecond || api.Ready.Timeout != DefaultReadyTimeout || api.Ready.Retries != 5 || !slices.Equal(api.Ports, []int{8080}) {
		t.Errorf("api = %+v", api)
	}
	if !slices.Contains(Material(tk), api.Files.Path) {
		t.Errorf("the service's files are not among the task's material: %v", Material(tk))
	}
}

func TestBadServicesAreReportedAtTheirPosition(t *testing.T) {
	svc := func(extra string) string {
		return "services:\n  - name: api\n    command: [srv]\n    ready: {tcp: 80}\n" + extra
	}
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"not a list", "services: api\n", "5:11: services must be a list"},
		{"no name", "services:\n  - {command: [x], ready: {tcp: 1}}\n", "6:5: services[0]: missing required field name"},
		{"bad name", "services:\n  - {name: Api_1, command: [x], ready: {tcp: 1}}\n", `6:12: services[0].name "Api_1": want 1-32 lowercase`},
		{"reserved name", "services:\n  - {name: localhost, command: [x], ready: {tcp: 1}}\n", `services[0].name "localhost" already names`},
		{"empty command", "services:\n  - {name: a, command: [], ready: {tcp: 1}}\n", "6:24: services[0].command must name a program"},
		{"no ready", "services:\n  - {name: a, command: [x]}\n", "6:5: services[0]: missing required field ready"},
		{"both readies", "services:\n  - {name: a, command: [x], ready: {tcp: 1, command: [x]}}\n", "6:36: services[0].ready: give exactly one of tcp"},
		{"neither ready", "services:\n  - {name: a, command: [x], ready: {retries: 3}}\n", "6:36: services[0].ready: give exactly one of tcp"},
		{"bad port", svc("    ports: [0]\n"), "9:13: services[0].ports[0] must be between 1 and 65535"},
		{"port twice", svc("    ports: [80, 80]\n"), "9:17: services[0].ports[1]: port 80 is listed twice"},
		{"relative workdir", svc("    workdir: srv\n"), `9:14: services[0].workdir "srv": want an absolute, clean path`},
		{"bad env", svc("    env: {1X: a}\n"), `9:11: services[0].env: "1X" is not an environment variable name`},
		{"unknown field", svc("    build: .\n"), `9:5: unknown field "build" in services[0]`},
		{"duplicate name", svc("  - {name: api, command: [y], ready: {tcp: 1}}\n"), `9:5: services[1]: name "api" is taken by the service at line 6`},
		{"unknown dependency", svc("    depends_on: [db]\n"), `6:5: services: api depends_on "db", which is not a service of this task`},
		{"self dependency", svc("    depends_on: [api]\n"), "6:5: services[0]: api depends_on itself"},
		{"cycle", "services:\n  - {name: a, command: [x], ready: {tcp: 1}, depends_on: [b]}\n  - {name: b, command: [x], ready: {tcp: 1}, depends_on: [a]}\n", "6:5: services: depends_on forms a cycle (a -> b -> a)"},
		{"host network", "sandbox: {network: host}\n" + svc(""), "6:1: services need sandbox.network: none"},
		{"bad service network", svc("    network: bridge\n"), `9:14: services[0].network`},
		{"host service with dependencies", svc("    network: host\n    depends_on: [db]\n  - {name: db, command: [x], ready: {tcp: 1}}\n"), "9:14: services[0].network: host with depends_on (db)"},
		{"files leave the task", svc("    files: ../x\n"), `9:12: services[0].files: "../x" leaves the task file's directory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTask(t, minimal+tc.doc, nil)
			_, err := Load(p)
			ps, ok := err.(Problems)
			if !ok {
				t.Fatalf("want Problems, got %v", err)
			}
			if !strings.Contains(ps.Error(), p+":"+tc.want) && !(tc.name == "reserved name" && strings.Contains(ps.Error(), tc.want)) {
				t.Errorf("want %q at its position in:\n%s", tc.want, ps.Error())
			}
		})
	}
}

// A service's files are what its container sees: a directory that holds the reference, the
// solution or a grader file, or that lies inside the reference, would hand the grading
// material to a program the agent talks to.
func TestServiceFilesNeverHoldGradingMaterial(t *testing.T) {
	files := map[string]string{"svc/app.sh": "x", "svc/ref/expected.txt": "42", "ref2/svc/app.sh": "y", "svc3/tests/test_x.py": "assert 1", "svc4/sol.sh": "echo"}
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"holds the reference", "reference: {directory: svc/ref}\nservices:\n  - {name: a, command: [x], ready: {tcp: 1}, files: svc}\n", "holds reference.directory (at ref)"},
		{"inside the reference", "reference: {directory: ref2}\nservices:\n  - {name: a, command: [x], ready: {tcp: 1}, files: ref2/svc}\n", "lies inside reference.directory (at svc)"},
		{"holds a grader file", "grader_files: [svc3/tests]\nservices:\n  - {name: a, command: [x], ready: {tcp: 1}, files: svc3}\n", "holds grader_files svc3/tests (at tests)"},
		{"holds the solution", "solution: {script: svc4/sol.sh}\nservices:\n  - {name: a, command: [x], ready: {tcp: 1}, files: svc4}\n", "holds solution.script (at sol.sh)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTask(t, minimal+tc.doc, files)
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
	ok := writeTask(t, minimal+"reference: {directory: ref2}\nservices:\n  - {name: a, command: [x], ready: {tcp: 1}, files: svc4}\n", files)
	if tk, err := Load(ok); err != nil {
		t.Fatalf("a service directory apart from the grading material is refused: %v", err)
	} else {
		tk.Close()
	}
}

func TestCriterionServicesAreTheTasksAndOnlyInAVerifier(t *testing.T) {
	svc := "services:\n  - {name: api, command: [x], ports: [80], ready: {tcp: 80}}\n  - {name: quiet, command: [x], ready: {tcp: 1}}\n"
	ok := svc + minimal + "  - {type: run_command, command: \"wget -qO- http://api/\", sandbox: container, services: [api]}\n"
	tk, err := Load(writeTask(t, ok, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !tk.GradesWithServices() || !slices.Equal(tk.Criteria[1].Services(), []string{"api"}) {
		t.Errorf("criterion services %v", tk.Criteria[1].Services())
	}
	tk.Close()
	for _, tc := range []struct{ name, crit, want string }{
		{"wasm tier", "  - {type: run_command, command: x, services: [api]}\n", "only a verifier container reaches the task's services"},
		{"unknown", "  - {type: run_command, command: x, sandbox: container, services: [db]}\n", `"db" is not a service of this task`},
		{"no ports", "  - {type: run_command, command: x, sandbox: container, services: [quiet]}\n", "service quiet declares no ports"},
		{"file criterion", "  - {type: file_exists, path: a, services: [api]}\n", `unknown field "services"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTask(t, svc+minimal+tc.crit, nil)
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), p+":8:") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want %q at line 8, got %v", tc.want, err)
			}
		})
	}
}
