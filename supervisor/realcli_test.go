package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/gateway/transcript"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// The real Claude Code and Codex binaries (pinned, from the npm registry) solve the offline
// examples through the model gateway in replay mode, inside ceval's sandbox. With a
// real-looking key in ceval's environment, nothing the agent could read holds it.
func TestRealCLIsSolveTheExamplesThroughTheGateway(t *testing.T) {
	c, ctx := withAgentImage(t)

	for _, ex := range []struct{ dir, agentType string }{
		{"claude-code", task.AgentClaudeCode},
		{"codex", task.AgentCodex},
	} {
		t.Run(ex.dir, func(t *testing.T) {
			tk, fx := loadExample(t, ex.dir)
			if tk.Agent.Type != ex.agentType {
				t.Fatalf("the example is not a %s task", ex.agentType)
			}
			wantTurns, want := fx.ScriptTotals()

			secret := "sk-ant-api03-" + canary(t)
			env := map[string]string{"ANTHROPIC_API_KEY": secret, "OPENAI_API_KEY": secret, "PATH": os.Getenv("PATH")}
			res, err := runLoaded(t, ctx, c, tk, Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "SUCCESS" {
				stdout, _ := os.ReadFile(filepath.Join(res.Dir, record.StdoutFile))
				stderr, _ := os.ReadFile(filepath.Join(res.Dir, record.StderrFile))
				t.Fatalf("status %s %+v\nstdout:\n%s\nstderr:\n%s", res.Status, res.Criteria, tail(stdout), tail(stderr))
			}

			t.Logf("%s: agent %+v; gateway %+v", ex.dir, res.Agent, *res.Gateway)
			// The gateway's metering is the script's usage, call for call.
			g := res.Gateway
			if g == nil || g.Turns != wantTurns || g.InputTokens != want.Input || g.CachedInputTokens != want.Cached ||
				g.CacheCreationInputTokens != want.CacheCreation || g.OutputTokens != want.Output || g.ReplayMisses != 0 {
				t.Fatalf("gateway totals %+v, want %d turns and %+v", g, wantTurns, want)
			}
			// The transcript holds every call: each scripted depth answered once with 200.
			depths := map[int]int{}
			for _, call := range readCalls(t, filepath.Join(res.Dir, record.ModelCallsFile)) {
				if call.Tools && call.Status == 200 {
					depths[call.Depth]++
				}
				if call.Status != 200 {
					t.Errorf("a call was refused: %+v", call)
				}
			}
			for d := 0; d < wantTurns; d++ {
				if depths[d] == 0 {
					t.Errorf("the transcript has no answered call at depth %d: %v", d, depths)
				}
			}

			// What the CLI reported about itself matches the script too.
			tok := res.Agent.Tokens
			switch ex.agentType {
			case task.AgentClaudeCode:
				if res.Agent.Turns != wantTurns || int64(tok["input_tokens"]) != want.Input-want.Cached-want.CacheCreation ||
					int64(tok["cache_read_input_tokens"]) != want.Cached || int64(tok["cache_creation_input_tokens"]) != want.CacheCreation ||
					int64(tok["output_tokens"]) != want.Output {
					t.Errorf("claude reported %d turns, tokens %v; the script has %d turns and %+v", res.Agent.Turns, tok, wantTurns, want)
				}
			case task.AgentCodex:
				// Codex's own "turn" is the whole exec; its tokens are the sum of the calls.
				if res.Agent.Turns != 1 || int64(tok["input_tokens"]) != want.Input || int64(tok["cached_input_tokens"]) != want.Cached ||
					int64(tok["output_tokens"]) != want.Output || int64(tok["reasoning_output_tokens"]) != want.Reasoning {
					t.Errorf("codex reported %d turns, tokens %v; the script has %+v", res.Agent.Turns, tok, want)
				}
			}

			// result.json says which CLI versions the agent ran.
			var clis []string
			for _, a := range images.AgentCLIs {
				clis = append(clis, a.Type+"@"+a.Version)
			}
			if want := strings.Join(clis, " "); res.Image.AgentCLIs != want {
				t.Errorf("result.json's image.agent_clis %q, want %q", res.Image.AgentCLIs, want)
			}

			// The CLI's own session files came out of its home.
			if len(res.Agent.Sessions) != 1 {
				t.Errorf("session files copied: %v", res.Agent.Sessions)
			} else {
				n := 0
				filepath.WalkDir(filepath.Join(res.Dir, res.Agent.Sessions[0]), func(p string, d os.DirEntry, err error) error {
					if err == nil && strings.HasSuffix(p, ".jsonl") {
						n++
					}
					return nil
				})
				if n == 0 {
					t.Errorf("no session transcript under %s", res.Agent.Sessions[0])
				}
			}

			// The real key is nowhere in the run directory (agent output, transcript, result).
			filepath.WalkDir(res.Dir, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
					t.Errorf("the real key is in %s", p)
				}
				return nil
			})
		})
	}
}

func readCalls(t *testing.T, p string) []transcript.Call {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var calls []transcript.Call
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var c transcript.Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("transcript line: %v", err)
		}
		calls = append(calls, c)
	}
	return calls
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Each real CLI loads a plugin bundle the way ceval hands it over (Claude Code: --plugin-dir
// per bundle; Codex: the bundle's skills linked under ~/.agents/skills): the skill's
// description reaches the model's context, which the gateway's transcript shows. The agent
// reads the projected files, cannot write them, and the source's grading files are absent.
func TestRealCLIsLoadPluginBundles(t *testing.T) {
	withAgentImage(t)

	const probe = `ls -aR /opt/ceval/plugins > /workspace/ls.txt 2>&1; ` +
		`cat /opt/ceval/plugins/greeter-plugin/skills/greeter/SKILL.md > /workspace/skill.txt; ` +
		`touch /opt/ceval/plugins/greeter-plugin/skills/greeter/planted 2> /workspace/write.txt; ` +
		`echo done >> /workspace/write.txt`
	for _, ex := range []struct{ agentType, api, model, tool, input string }{
		{task.AgentClaudeCode, "anthropic", "claude-sonnet-4-5", "Bash", `{command: ` + quote(probe) + `}`},
		{task.AgentCodex, "openai", "gpt-5.5", "exec_command", `{cmd: ` + quote(probe) + `}`},
	} {
		t.Run(ex.agentType, func(t *testing.T) {
			marker, answer := canary(t), canary(t)
			files := map[string]string{
				"greeter-plugin/.claude-plugin/plugin.json": `{"name": "greeter-plugin", "version": "1.0.0", "description": "ceval test plugin"}`,
				"greeter-plugin/skills/greeter/SKILL.md":    "---\nname: greeter\ndescription: Greets in the " + marker + " style. Use when asked to greet.\n---\nGreet warmly.\n",
				"greeter-plugin/commands/shout.md":          "---\ndescription: Shout a greeting\n---\nShout it.\n",
				"greeter-plugin/tests/check_greeting.py":    "assert answer == '" + answer + "'\n",
				"model.yaml": "version: 1\napi: " + ex.api + "\nturns:\n" +
					"  - tool_calls: [{name: " + ex.tool + ", input: " + ex.input + "}]\n    usage: {input_tokens: 10, output_tokens: 5}\n" +
					"  - text: Done.\n    usage: {input_tokens: 20, output_tokens: 2}\n",
			}
			doc := "task_id: plugins-" + ex.agentType + "\ninitial_prompt: greet\n" +
				"agent:\n  type: " + ex.agentType + "\n  model: " + ex.model + "\n  gateway: {mode: replay, fixture: model.yaml}\n" +
				"plugins:\n  - path: greeter-plugin\n" +
				"sandbox:\n  image: " + images.AgentName + "\n  limits: {timeout: 2m, memory_mb: 1024, pids: 128, disk_mb: 64}\n" +
				"success_criteria:\n" +
				"  - {type: file_contains, path: skill.txt, includes: [\"" + marker + "\"]}\n" +
				"  - {type: file_contains, path: write.txt, includes: [Read-only, done]}\n" +
				"  - {type: file_contains, path: ls.txt, includes: [SKILL.md, shout.md, plugin.json], excludes: [check_greeting, tests]}\n"
			res, err := runTask(t, doc, files, Options{LookupEnv: func(string) (string, bool) { return "", false }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "SUCCESS" {
				stdout, _ := os.ReadFile(filepath.Join(res.Dir, record.StdoutFile))
				t.Fatalf("status %s %+v\nstdout:\n%s", res.Status, res.Criteria, tail(stdout))
			}
			if len(res.Plugins) != 1 || res.Plugins[0].SHA256Before == "" || res.Plugins[0].SHA256Before != res.Plugins[0].SHA256After {
				t.Fatalf("plugin digests %+v", res.Plugins)
			}
			// The CLI put the skill in front of the model: its first request carries the
			// skill's description.
			seen := false
			for _, call := range readCalls(t, filepath.Join(res.Dir, record.ModelCallsFile)) {
				if call.Depth == 0 && call.Tools && strings.Contains(string(call.Request), marker) {
					seen = true
				}
				if strings.Contains(string(call.Request), answer) {
					t.Errorf("the source's grading file reached the model: %.200s", call.Request)
				}
			}
			if !seen {
				t.Errorf("%s did not load the plugin's skill: no request at depth 0 mentions its description", ex.agentType)
			}
		})
	}
}

// loadExample loads examples/DIR/task.yaml, a replay task, and its model script.
func loadExample(t *testing.T, dir string) (*task.Task, *transcript.Fixture) {
	t.Helper()
	tk, err := task.Load(filepath.Join("..", "examples", dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Agent.Gateway == nil || tk.Agent.Gateway.Mode != task.GatewayReplay {
		t.Fatalf("examples/%s is not a replay task", dir)
	}
	return tk, tk.Agent.Gateway.Fixture
}

// withAgentImage connects to containerd and builds the agent image in the test's namespace
// (the npm downloads are cached in ~/.cache/ceval; the layer is shared across namespaces).
func withAgentImage(t *testing.T) (*client.Client, context.Context) {
	t.Helper()
	c, ctx := ctrtest.Connect(t)
	if _, err := images.BuildAgent(ctx, c, images.AgentOptions{}); err != nil {
		t.Fatalf("build the agent image (needs the npm registry once): %v", err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.AgentName) })
	return c, ctx
}

// The real CLIs in record mode, forwarding to a provider (here a local one speaking from the
// example's script), leave a transcript that replays the same run offline.
func TestRealCLIsRecordThenReplay(t *testing.T) {
	c, ctx := withAgentImage(t)
	for _, dir := range []string{"claude-code", "codex"} {
		t.Run(dir, func(t *testing.T) {
			tk, fx := loadExample(t, dir)
			wantTurns, want := fx.ScriptTotals()
			// "The provider": it wants the real key, which only ceval's gateway holds.
			realKey := "sk-provider-" + canary(t)
			provider, err := gateway.New(gateway.Config{Mode: gateway.Replay, Key: realKey, Fixture: fx})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			provider.Serve(ln)
			defer provider.Close()
			url := "http://" + ln.Addr().String()
			env := map[string]string{"ANTHROPIC_API_KEY": realKey, "OPENAI_API_KEY": realKey,
				"CEVAL_ANTHROPIC_BASE_URL": url, "CEVAL_OPENAI_BASE_URL": url}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

			tk.Agent.Gateway = &task.Gateway{Mode: task.GatewayRecord}
			rec, err := runLoaded(t, ctx, c, tk, Options{LookupEnv: lookup})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != "SUCCESS" || rec.Gateway.Turns != wantTurns || rec.Gateway.OutputTokens != want.Output {
				stdout, _ := os.ReadFile(filepath.Join(rec.Dir, record.StdoutFile))
				t.Fatalf("record run: status %s, gateway %+v\n%s", rec.Status, rec.Gateway, tail(stdout))
			}
			if pt := provider.Totals(); pt.Turns != wantTurns || pt.Refused != 0 {
				t.Fatalf("the provider answered %+v", pt)
			}

			// Offline: the recorded transcript is the fixture; no provider, no key.
			provider.Close()
			recorded, err := os.Open(filepath.Join(rec.Dir, record.ModelCallsFile))
			if err != nil {
				t.Fatal(err)
			}
			replayed, err := transcript.ParseFixture(recorded)
			recorded.Close()
			if err != nil {
				t.Fatal(err)
			}
			tk.Agent.Gateway = &task.Gateway{Mode: task.GatewayReplay, FixturePath: recorded.Name(), Fixture: replayed}
			rep, err := runLoaded(t, ctx, c, tk, Options{LookupEnv: func(string) (string, bool) { return "", false }})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Status != "SUCCESS" || rep.Gateway.Turns != wantTurns || rep.Gateway.InputTokens != want.Input ||
				rep.Gateway.OutputTokens != want.Output || rep.Gateway.ReplayMisses != 0 {
				stdout, _ := os.ReadFile(filepath.Join(rep.Dir, record.StdoutFile))
				t.Fatalf("replay of the recording: status %s, gateway %+v\n%s", rep.Status, rep.Gateway, tail(stdout))
			}
			for _, p := range []string{filepath.Join(rec.Dir, record.ModelCallsFile), filepath.Join(rec.Dir, record.ResultFile)} {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), realKey) {
					t.Errorf("the real key is in %s", p)
				}
			}
		})
	}
}

// A budget ends the real CLI: Claude Code asking for a turn past max_turns, Codex's answer
// going past max_output_tokens. The snapshot is still graded, nothing is left running.
func TestRealCLIsAreEndedByTheirBudget(t *testing.T) {
	c, ctx := withAgentImage(t)
	for _, tc := range []struct {
		dir    string
		limits task.RunLimits
		status string
	}{
		{"claude-code", task.RunLimits{MaxTurns: 1}, record.StatusMaxTurns},
		{"codex", task.RunLimits{MaxOutputTokens: 20}, record.StatusTokenBudget},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			tk, _ := loadExample(t, tc.dir)
			tk.RunLimits = &tc.limits
			res, err := runLoaded(t, ctx, c, tk, Options{LookupEnv: func(string) (string, bool) { return "", false }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status || res.Gateway == nil || res.Gateway.Exceeded == "" || res.Agent.TimedOut {
				stdout, _ := os.ReadFile(filepath.Join(res.Dir, record.StdoutFile))
				t.Fatalf("status %s (want %s), gateway %+v, agent %+v\n%s", res.Status, tc.status, res.Gateway, res.Agent, tail(stdout))
			}
			if len(res.Criteria) != len(tk.Criteria) || res.Timings.Agent > 60 { // every criterion graded
				t.Fatalf("criteria %+v, agent time %.1fs", res.Criteria, res.Timings.Agent)
			}
			if err := ctrtest.Leftovers(ctx, c); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Claude Code with no model named (its own default, as most users run it) sends what it
// sends for that model, which the gateway's default allowlist must forward: a judge
// engineer found every run of the pinned CLI's default model refused at its first call
// (the effort beta and output_config). The replay script answers whatever the model.
func TestRealClaudeCodeWithItsDefaultModelIsForwarded(t *testing.T) {
	c, ctx := withAgentImage(t)
	tk, _ := loadExample(t, "claude-code")
	tk.Agent.Model = ""
	secret := "sk-ant-api03-" + canary(t)
	env := map[string]string{"ANTHROPIC_API_KEY": secret, "PATH": os.Getenv("PATH")}
	res, err := runLoaded(t, ctx, c, tk, Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range readCalls(t, filepath.Join(res.Dir, record.ModelCallsFile)) {
		if call.Status != 200 {
			t.Errorf("a call of the default model was refused: %+v", call)
		}
		t.Logf("model %q", call.Model)
	}
	if res.Status != "SUCCESS" {
		stderr, _ := os.ReadFile(filepath.Join(res.Dir, record.StderrFile))
		t.Fatalf("status %s %+v\nstderr:\n%s", res.Status, res.Criteria, tail(stderr))
	}
}
