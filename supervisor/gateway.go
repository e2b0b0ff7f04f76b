package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"

	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/gateway/transcript"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
)

// providerEnv names, per provider, the variables of ceval's own environment that hold the
// real credential and an optional upstream base URL (a LiteLLM or Bedrock proxy). The
// credential is read by the gateway in this process and never enters the container.
var providerEnv = map[string]struct{ key, baseURL string }{
	transcript.Anthropic: {"ANTHROPIC_API_KEY", "CEVAL_ANTHROPIC_BASE_URL"},
	transcript.OpenAI:    {"OPENAI_API_KEY", "CEVAL_OPENAI_BASE_URL"},
}

// gatewayRun is the model gateway of one run.
type gatewayRun struct {
	srv    *gateway.Server
	key    string // the per-run dummy key the agent presents
	log    *os.File
	result *record.GatewayResult
	once   sync.Once
	err    error
	// exceeded is closed when a run budget is exceeded: the sandbox then ends the agent.
	exceeded chan struct{}

	// mem serves the connections the kubernetes backend relays from the agent's Pod (Dial).
	memOnce sync.Once
	mem     *memListener
}

// CheckRunLimits refuses run_limits the run could not enforce: budgets without a model
// gateway, and max_usd without a price for the task's model in ceval's config.
func CheckRunLimits(t *task.Task, prices map[string]gateway.Price) error {
	r := t.RunLimits
	if r == nil || t.Agent == nil {
		return nil
	}
	if t.Agent.Gateway == nil {
		return fmt.Errorf("task %s sets run_limits, which the model gateway meters, but its agent has no agent.gateway", t.ID)
	}
	if r.MaxUSD == 0 {
		return nil
	}
	m := t.Agent.Model
	if m == "" {
		return fmt.Errorf("task %s sets run_limits.max_usd but no agent.model: the gateway prices calls at the pinned model's price", t.ID)
	}
	if _, ok := prices[m]; !ok {
		return fmt.Errorf("task %s sets run_limits.max_usd %g, but ceval's config has no price for model %q: "+
			"add prices.%s (USD per million tokens) to the config file (--config; default ~/.config/ceval/config.yaml), e.g.\n"+
			"  prices:\n    %s: {input_per_mtok: 3, cached_input_per_mtok: 0.3, cache_creation_per_mtok: 3.75, output_per_mtok: 15}",
			t.ID, r.MaxUSD, m, m, strconv.Quote(m))
	}
	return nil
}

// newGatewayKey returns a fresh per-run key; it opens nothing but this run's gateway.
func newGatewayKey() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "ceval-run-" + hex.EncodeToString(b[:])
}

// startGateway prepares the task's model gateway (nil when it has none); it serves once
// listen is called with the container's pid, from BeforeStart.
func startGateway(t *task.Task, runDir string, lookup func(string) (string, bool), prices map[string]gateway.Price, allow map[string]gateway.Allowlist) (*gatewayRun, error) {
	g := t.Agent.Gateway
	if g == nil {
		return nil, nil
	}
	if t.Sandbox.Network == policy.NetworkHost {
		return nil, &sandbox.InputError{Err: fmt.Errorf("task %s: the model gateway needs the container's own network namespace; it cannot be used with sandbox.network: host", t.ID)}
	}
	exceeded := make(chan struct{}) // Run has checked the limits (CheckRunLimits)
	cfg := gateway.Config{Mode: g.Mode, Key: newGatewayKey(), Model: t.Agent.Model, AllowServerTools: g.ServerTools,
		Providers: map[string]gateway.Provider{}, Prices: prices, Allow: allow,
		// The gateway calls this once; the sandbox ends the agent when it is closed.
		OnExceeded: func(string, string) { close(exceeded) }}
	if r := t.RunLimits; r != nil {
		cfg.Limits = gateway.Limits{MaxTurns: r.MaxTurns, MaxInputTokens: r.MaxInputTokens,
			MaxOutputTokens: r.MaxOutputTokens, MaxTotalTokens: r.MaxTotalTokens, MaxUSD: r.MaxUSD}
	}
	if g.Mode == task.GatewayReplay {
		// Parsed at load: replay serves the fixture that was validated, whatever its
		// path names by now.
		if g.Fixture == nil {
			return nil, &sandbox.InputError{Err: fmt.Errorf("task %s: replay mode without a fixture read at load", t.ID)}
		}
		cfg.Fixture = g.Fixture
	} else {
		keys := 0
		for api, names := range providerEnv {
			var p gateway.Provider
			p.Key, _ = lookup(names.key)
			p.BaseURL, _ = lookup(names.baseURL)
			cfg.Providers[api] = p
			if p.Key != "" {
				keys++
			}
		}
		// The gateway refuses an API it holds no key for; a run whose agent could reach
		// none is refused here, before the agent starts, not turned into the agent's failure.
		if name := missingCredential(t.Agent.Type, lookup); name != "" {
			return nil, &sandbox.InputError{Err: fmt.Errorf("task %s: agent.gateway mode %s forwards %s's calls with ceval's %s, which is not set in ceval's environment (or use mode replay)", t.ID, g.Mode, t.Agent.Type, name)}
		} else if _, real := defaultCredential[t.Agent.Type]; !real && keys == 0 {
			return nil, &sandbox.InputError{Err: fmt.Errorf("task %s: agent.gateway mode %s needs a model provider key in ceval's environment (ANTHROPIC_API_KEY or OPENAI_API_KEY), or use mode replay", t.ID, g.Mode)}
		}
	}
	log, err := os.OpenFile(runDir+"/"+record.ModelCallsFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, &InfraError{fmt.Errorf("model gateway transcript: %w", err)}
	}
	cfg.Log = log
	srv, err := gateway.New(cfg)
	if err != nil {
		log.Close()
		return nil, &InfraError{err}
	}
	return &gatewayRun{srv: srv, key: cfg.Key, log: log, result: &record.GatewayResult{Mode: g.Mode, Log: record.ModelCallsFile}, exceeded: exceeded}, nil
}

// beforeStart opens the gateway's socket inside the created container's network namespace
// and serves it from this process.
func (g *gatewayRun) beforeStart(_ context.Context, pid uint32) error {
	ln, err := gateway.ListenInNetns(pid, gateway.DefaultAddr)
	if err != nil {
		return err
	}
	g.srv.Serve(ln)
	return nil
}

// Dial connects to the gateway from this process through an in-memory pipe: the
// kubernetes backend relays each of the agent's connections here (a Pod has no network,
// and the gateway never listens anywhere the cluster could reach).
func (g *gatewayRun) Dial() (net.Conn, error) {
	g.memOnce.Do(func() {
		g.mem = newMemListener()
		g.srv.Serve(g.mem)
	})
	return g.mem.dial()
}

// memListener is a net.Listener whose connections are in-memory pipes made by dial.
type memListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *memListener) dial() (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.closed:
		c.Close()
		s.Close()
		return nil, net.ErrClosed
	}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr{} }

type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "ceval-gateway" }

// stop closes the gateway (its listener releases the container's namespace) and records
// its totals; it is idempotent and a no-op on nil.
func (g *gatewayRun) stop() error {
	if g == nil {
		return nil
	}
	g.once.Do(func() {
		g.err = g.srv.Close()
		g.result.GatewayTotals = g.srv.Totals()
		if err := g.log.Close(); g.err == nil {
			g.err = err
		}
	})
	return g.err
}

// stopAgent is closed when a run budget is exceeded; nil (never) without a gateway.
func (g *gatewayRun) stopAgent() <-chan struct{} {
	if g == nil {
		return nil
	}
	return g.exceeded
}

// GatewayEnv is the agent's environment for reaching the gateway with the per-run key:
// every agent gets CEVAL_GATEWAY_URL and CEVAL_GATEWAY_KEY; Claude Code gets them as its
// own variables, Codex through the config.toml written by writeCodexConfig.
func GatewayEnv(t *task.Task, key string) []string {
	env := []string{"CEVAL_GATEWAY_URL=" + sandbox.GatewayURL, "CEVAL_GATEWAY_KEY=" + key}
	if t.Agent.Type == task.AgentClaudeCode {
		env = append(env, "ANTHROPIC_BASE_URL="+sandbox.GatewayURL, "ANTHROPIC_API_KEY="+key)
	}
	return env
}

// CodexConfig is $CODEX_HOME/config.toml for a run through the gateway: a model provider at
// the gateway whose key is read from CEVAL_GATEWAY_KEY, and no background traffic.
func CodexConfig(model string) string {
	s := ""
	if model != "" {
		s += "model = " + strconv.Quote(model) + "\n"
	}
	return s + `model_provider = "ceval"

[model_providers.ceval]
name = "ceval gateway"
base_url = "` + sandbox.GatewayURL + `/v1"
wire_api = "responses"
env_key = "CEVAL_GATEWAY_KEY"

[analytics]
enabled = false

[otel]
metrics_exporter = "none"

[features]
plugins = false
`
}

// writeCodexConfig writes CodexConfig into the home scratch directory's .codex.
func writeCodexConfig(home, model string) error {
	root, err := os.OpenRoot(home)
	if err != nil {
		return err
	}
	defer root.Close()
	return writeInRoot(root, ".codex/config.toml", []byte(CodexConfig(model)), 0o644)
}

// missingCredential is the variable a real agent CLI's forwarded calls need from ceval's
// environment when it is not set there; "" when it is, or for an agent of another type.
func missingCredential(agentType string, lookup func(string) (string, bool)) string {
	name, ok := defaultCredential[agentType]
	if !ok {
		return ""
	}
	if v, _ := lookup(name); v == "" {
		return name
	}
	return ""
}

// CheckJudgeAgents refuses, before the agent under test starts, a task whose agent_judge
// criteria would forward their judge's calls with a key ceval does not hold: found only
// when grading, it cost a whole run of the agent (and its model calls).
func CheckJudgeAgents(t *task.Task, lookup func(string) (string, bool)) error {
	for i, c := range t.Criteria {
		s, ok := c.Spec.(*task.AgentJudgeSpec)
		if !ok || s.AgentFixture != nil {
			continue
		}
		if name := missingCredential(s.JudgeAgent, lookup); name != "" {
			return fmt.Errorf("task %s: success_criteria[%d] (agent_judge) forwards its judge agent %s's calls with ceval's %s, which is not set in ceval's environment: export it, or give the criterion an agent_fixture", t.ID, i, s.JudgeAgent, name)
		}
	}
	return nil
}
