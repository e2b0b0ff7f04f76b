package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"ceval.dev/ceval/gateway/transcript"
	"ceval.dev/ceval/record"
)

// Modes.
const (
	Forward = "forward" // to the provider, with the real credential added
	Record  = "record"  // forward; the transcript (full requests and answers, as in every mode) is the fixture to replay
	Replay  = "replay"  // answer from a fixture; no network at all
)

// Defaults of Config's caps.
const (
	DefaultMaxRequestBytes   = 16 << 20
	DefaultMaxConns          = 8
	DefaultMaxConcurrent     = 4
	DefaultRetries           = 3
	DefaultRetryBackoff      = 500 * time.Millisecond
	DefaultUpstreamTimeout   = 15 * time.Minute
	DefaultWriteTimeout      = time.Minute
	DefaultMaxLogBytes       = 256 << 20
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 2 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
	maxErrorBody             = 64 << 10
	maxRecordedBody          = 32 << 20
	maxRetryAfter            = 30 * time.Second
	defaultUpstreamAnthropc  = "https://api.anthropic.com"
	defaultUpstreamOpenAI    = "https://api.openai.com"
)

// Provider is where one API is forwarded to.
type Provider struct {
	BaseURL string // without /v1, e.g. https://api.anthropic.com; "" takes the provider's own
	Key     string // the real credential; sent upstream only
	// Header carries Key; "" sends x-api-key for Anthropic and Authorization: Bearer for
	// OpenAI. "Authorization" always gets the Bearer prefix.
	Header string
}

// Limits are the run's budgets; zero means unlimited.
type Limits struct {
	MaxTurns        int64 // model calls answered
	MaxInputTokens  int64
	MaxOutputTokens int64
	MaxTotalTokens  int64
	MaxUSD          float64 // cost, priced from Config.Prices at the pinned model's price
}

// Config is one run's gateway.
type Config struct {
	Mode      string
	Key       string // the per-run dummy key the agent must present
	Model     string // pinned: every request is rewritten to it; "" lets the agent choose
	Providers map[string]Provider
	Fixture   *transcript.Fixture // for Replay
	Log       io.Writer           // model_calls.jsonl; nil: none
	Limits    Limits
	// Prices are USD per million tokens by model name; a call is priced at its (pinned)
	// model's. MaxUSD needs the pinned model's price.
	Prices map[string]Price
	// OnExceeded (may be nil) hears once, as soon as a budget is exceeded, which kind
	// (ExceededTurns, ExceededTokens, ExceededCost) and which limit; it must not block.
	OnExceeded func(kind, limit string)
	// AllowServerTools keeps provider-side tools (web search/fetch, code execution, MCP
	// connectors, file search) in requests; by default they are stripped.
	AllowServerTools bool
	// Allow is, per API, what of the agent's requests is forwarded (ceval's config, never
	// the task's); a list it leaves out (nil) is DefaultAllowlist's.
	Allow map[string]Allowlist

	MaxRequestBytes int64         // request body cap
	MaxConns        int           // concurrent connections from the agent
	MaxConcurrent   int           // concurrent upstream requests per provider
	Retries         int           // retries of an upstream 429/5xx or transport error; <0: none
	RetryBackoff    time.Duration // first retry delay, doubled each time
	UpstreamTimeout time.Duration // one upstream request, body included
	WriteTimeout    time.Duration // one write to the agent (a slow reader is cut off)
	MaxLogBytes     int64         // transcript bytes with bodies; lines stop at twice this
	// ReadHeaderTimeout, ReadTimeout and IdleTimeout bound a request's headers, a whole
	// request (a slow sender is cut off) and a kept-alive connection's wait for the next.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	IdleTimeout       time.Duration
	Client            *http.Client // upstream; nil builds one
}

// Budget kinds in record.GatewayTotals.Exceeded.
const (
	ExceededTurns  = record.ExceededTurns
	ExceededTokens = record.ExceededTokens
	ExceededCost   = record.ExceededCost
)

// Totals are what passed through the gateway: the only usage ceval trusts. They are the
// run record's (result.json's "gateway"), which the gateway fills.
type Totals = record.GatewayTotals

// Server is one run's gateway.
type Server struct {
	cfg    Config
	srv    *http.Server
	sem    map[string]chan struct{}
	mu     sync.Mutex
	totals Totals
	replay map[transcript.Key]int
	// allow is Config.Allow with the defaults filled in; secrets are the credentials the
	// gateway adds upstream, scrubbed from all it returns and records.
	allow   map[string]Allowlist
	secrets [][]byte
	// inflight and reservedOut are the model calls under way and the output tokens they may
	// still produce: budgets count them, so concurrent calls cannot overspend together.
	inflight    int64
	reservedOut int64
	reservedIn  int64
	logMu       sync.Mutex
	logged      int64 // transcript bytes written (under logMu)
	// handlers counts the requests being served; closing (under hmu) turns new ones away.
	handlers sync.WaitGroup
	hmu      sync.Mutex
	closing  bool
	closed   chan struct{}
	// notified makes OnExceeded fire once.
	notified sync.Once
	wg       sync.WaitGroup
}

// New checks cfg and returns a server that has not started serving.
func New(cfg Config) (*Server, error) {
	switch cfg.Mode {
	case Forward, Record:
	case Replay:
		if cfg.Fixture == nil {
			return nil, errors.New("gateway: replay mode needs a fixture")
		}
	default:
		return nil, fmt.Errorf("gateway: unknown mode %q", cfg.Mode)
	}
	if err := checkPrices(&cfg); err != nil {
		return nil, err
	}
	if len(cfg.Key) < 16 {
		return nil, errors.New("gateway: the per-run key must be at least 16 characters")
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.MaxLogBytes <= 0 {
		cfg.MaxLogBytes = DefaultMaxLogBytes
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   30 * time.Second,
			ResponseHeaderTimeout: 10 * time.Minute,
			MaxIdleConnsPerHost:   cfg.MaxConcurrent,
			ForceAttemptHTTP2:     true,
		}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	providers := map[string]Provider{}
	for _, api := range []string{transcript.Anthropic, transcript.OpenAI} {
		p := cfg.Providers[api]
		if p.BaseURL == "" {
			p.BaseURL = map[string]string{transcript.Anthropic: defaultUpstreamAnthropc, transcript.OpenAI: defaultUpstreamOpenAI}[api]
		}
		p.BaseURL = strings.TrimRight(p.BaseURL, "/")
		providers[api] = p
	}
	cfg.Providers = providers
	if err := CheckAllowlists(cfg.Allow); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	allow := map[string]Allowlist{}
	for _, api := range []string{transcript.Anthropic, transcript.OpenAI} {
		a := cfg.Allow[api].merged(api)
		for _, h := range a.Headers {
			if credentialHeader(h, providers[api]) {
				return nil, fmt.Errorf("gateway: the %s allowlist forwards header %s, which carries the provider's credential: take it out", api, h)
			}
		}
		allow[api] = a
	}
	s := &Server{cfg: cfg, replay: map[transcript.Key]int{}, closed: make(chan struct{}), allow: allow, secrets: secretsOf(providers),
		sem: map[string]chan struct{}{transcript.Anthropic: make(chan struct{}, cfg.MaxConcurrent), transcript.OpenAI: make(chan struct{}, cfg.MaxConcurrent)}}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	return s, nil
}

// Serve serves ln until Close, with at most MaxConns connections at once; it takes
// ownership of ln and returns at once.
func (s *Server) Serve(ln net.Listener) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(&limitListener{Listener: ln, slots: make(chan struct{}, s.cfg.MaxConns)})
	}()
}

// Close stops serving, cuts open connections and in-flight upstream requests, and waits
// for Serve to return. It is safe to call more than once, and from several goroutines: one
// closes, the others return at once.
func (s *Server) Close() error {
	s.hmu.Lock()
	select {
	case <-s.closed:
		s.hmu.Unlock()
		return nil
	default:
	}
	s.closing = true
	close(s.closed)
	s.hmu.Unlock()
	err := s.srv.Close()
	s.wg.Wait()
	// Calls under way end now (their upstream context is cancelled); wait for them, so the
	// totals and the transcript are complete when Close returns.
	s.handlers.Wait()
	// The upstream connections kept alive for the next call would outlive the run.
	s.cfg.Client.CloseIdleConnections()
	return err
}

// Totals returns the usage so far.
func (s *Server) Totals() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals
}

// enter counts a request in, unless the server is closing.
func (s *Server) enter() bool {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if s.closing {
		return false
	}
	s.handlers.Add(1)
	return true
}

// limitListener holds each accepted connection's slot until the connection is closed.
type limitListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
}

type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// credentialHeader says whether a request header carries credentials: the agent's, or the
// one the gateway adds for p.
func credentialHeader(name string, p Provider) bool {
	for _, c := range []string{"Authorization", "X-Api-Key", "Proxy-Authorization", "Cookie", p.Header} {
		if c != "" && strings.EqualFold(name, c) {
			return true
		}
	}
	return false
}

// closing says whether Close has begun: a call cut off now was cut by the run's end.
func (s *Server) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// keyMatches compares the presented key with the run's in constant time.
func (s *Server) keyMatches(r *http.Request) bool {
	got := r.Header.Get("x-api-key")
	if got == "" {
		if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			got = a[7:]
		}
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Key)) == 1
}

// ctxUntilClosed is ctx, also cancelled by Close.
func (s *Server) ctxUntilClosed(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
