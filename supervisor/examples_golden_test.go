package supervisor

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
)

var updateResults = flag.Bool("update-results", false, "rewrite testdata/results/*.json from the replay examples' runs")

// volatile are the result.json fields whose values differ from run to run of the same task
// or from host to host (clocks, durations, IDs, digests, directories, the ID slot's host IDs,
// what the host measured, the host's own rlimits, how this host enforces limits): the golden
// keeps their presence and type, not their value. A field is named by its path (a.b, [] for
// an array's elements).
var volatile = regexp.MustCompile(`(^|\.)(run_id|task_sha256|\w*_at|\w*digest|\w*_dir|dir|hostID|host_uid|host_gid)$|` +
	`^(timings|resources|isolation\.limits_enforced_by)\.`)

// hostRlimits are the rlimits ceval leaves as the host has them (their values are the host's).
var hostRlimits = map[string]bool{"RLIMIT_NPROC": true, "RLIMIT_SIGPENDING": true}

// normalized is result.json with every volatile value replaced by its JSON type, keys sorted:
// what two runs of a deterministic task must share byte for byte.
func normalized(t *testing.T, data []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any) any
	walk = func(path string, v any) any {
		switch x := v.(type) {
		case map[string]any:
			host := path == "isolation.rlimits[]" && hostRlimits[fmt.Sprint(x["type"])]
			for k, e := range x {
				p := strings.TrimPrefix(path+"."+k, ".")
				if host && (k == "soft" || k == "hard") {
					p = "resources.host"
				}
				x[k] = walk(p, e)
			}
			return x
		case []any:
			for i, e := range x {
				x[i] = walk(path+"[]", e)
			}
			return x
		}
		if volatile.MatchString(path) {
			return fmt.Sprintf("(%T)", v)
		}
		return v
	}
	out, err := json.MarshalIndent(walk("", v), "", "  ") // maps marshal with sorted keys
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// TestResultNormalizationKeepsWhatADeterministicRunShares: the fields two runs share are
// kept, and only the volatile ones masked (so the golden comparison can fail).
func TestResultNormalizationKeepsWhatADeterministicRunShares(t *testing.T) {
	in := `{"run_id":"r1","status":"SUCCESS","timings":{"agent":1.5},"gateway":{"turns":3},"dir":"/tmp/x",` +
		`"isolation":{"host_uid":7,"uid":2000,"uid_map":[{"hostID":9,"size":65536}],` +
		`"rlimits":[{"type":"RLIMIT_NPROC","soft":5,"hard":5},{"type":"RLIMIT_NOFILE","soft":1024,"hard":1024}]}}`
	got := string(normalized(t, []byte(in)))
	for _, kept := range []string{`"status": "SUCCESS"`, `"turns": 3`, `"uid": 2000`, `"size": 65536`, `"soft": 1024`} {
		if !strings.Contains(got, kept) {
			t.Errorf("%s masked:\n%s", kept, got)
		}
	}
	for _, gone := range []string{"\"r1\"", "1.5", "/tmp/x", `"host_uid": 7`, `"hostID": 9`, `"soft": 5`} {
		if strings.Contains(got, gone) {
			t.Errorf("%s kept:\n%s", gone, got)
		}
	}
}

// The gateway-replay examples (the real Claude Code and Codex against a scripted model) are
// deterministic: their result.json, but for clocks, IDs and host measurements, is the golden
// in testdata/results byte for byte, so a result field that changes (renamed, dropped, a
// count that moves) fails here instead of passing unnoticed. go test -run
// TestReplayExamplesResultsAreTheGoldens -update-results rewrites the goldens: review the diff.
func TestReplayExamplesResultsAreTheGoldens(t *testing.T) {
	c, ctx := withAgentImage(t)
	for _, dir := range []string{"claude-code", "codex"} {
		t.Run(dir, func(t *testing.T) {
			tk, _ := loadExample(t, dir)
			res, err := runLoaded(t, ctx, c, tk, Options{LookupEnv: func(string) (string, bool) { return "", false }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Isolation != nil && res.Isolation.LimitsEnforcedBy.Memory != policy.EnforcedByCgroup {
				t.Skip("the goldens are of a run whose limits cgroups enforce; this one's: " + res.Isolation.LimitsEnforcedBy.Memory)
			}
			data, err := os.ReadFile(filepath.Join(res.Dir, record.ResultFile))
			if err != nil {
				t.Fatal(err)
			}
			got := normalized(t, data)
			golden := filepath.Join("testdata", "results", dir+".json")
			if *updateResults {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (write it with -update-results)", err)
			}
			if string(got) != string(want) {
				t.Errorf("result.json of examples/%s differs from %s (clocks and IDs left out):\n%s", dir, golden, lineDiff(string(want), string(got)))
			}
		})
	}
}

// lineDiff lists the lines only one side has, - for want and + for got.
func lineDiff(want, got string) string {
	count := map[string]int{}
	for _, l := range strings.Split(want, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(got, "\n") {
		count[l]--
	}
	var out []string
	for l, n := range count {
		switch {
		case n > 0:
			out = append(out, "- "+l)
		case n < 0:
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
