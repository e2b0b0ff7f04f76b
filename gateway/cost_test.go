package gateway

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"

	"ceval.dev/ceval/gateway/transcript"
)

// sonnet is an Anthropic-shaped price: cache reads a tenth of input, cache writes 1.25x.
var sonnet = Price{Input: 3, CachedInput: 0.3, CacheCreation: 3.75, Output: 15}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestPriceCostArithmetic(t *testing.T) {
	cases := []struct {
		name  string
		price Price
		u     transcript.Usage
		want  float64
	}{
		// anthropicStream, normalised: 10 plain + 2 written + 3 read input, 7 output.
		{"anthropic cache reads and writes", sonnet, transcript.Usage{Input: 15, Cached: 3, CacheCreation: 2, Output: 7},
			(10*3 + 3*0.3 + 2*3.75 + 7*15) / 1e6},
		// openaiStream: 20 input of which 5 cached, 4 output of which 2 reasoning (billed as output).
		{"openai cached input and reasoning", Price{Input: 1.25, CachedInput: 0.125, Output: 10}, transcript.Usage{Input: 20, Cached: 5, Output: 4, Reasoning: 2},
			(15*1.25 + 5*0.125 + 4*10) / 1e6},
		{"a million output tokens cost the output rate", sonnet, transcript.Usage{Output: 1_000_000}, 15},
		{"no usage costs nothing", sonnet, transcript.Usage{}, 0},
		// A provider reporting more cached than total never yields a negative charge.
		{"inconsistent usage is not negative", sonnet, transcript.Usage{Input: 1, Cached: 5}, 5 * 0.3 / 1e6},
	}
	for _, c := range cases {
		if got := c.price.Cost(c.u); !near(got, c.want) {
			t.Errorf("%s: cost %v, want %v", c.name, got, c.want)
		}
	}
	if n := sonnet.outputTokensFor(0.0003); n != 20 {
		t.Errorf("$0.0003 buys %d output tokens at $15/Mtok, want 20", n)
	}
	if n := (Price{Input: 1}).outputTokensFor(1); n != -1 {
		t.Errorf("free output is bounded: %d", n)
	}
}

func TestGatewayPricesEachCallAndCountsUnpriced(t *testing.T) {
	var log bytes.Buffer
	s, url := start(t, Config{Model: "claude-x", Prices: map[string]Price{"claude-x": sonnet}, Log: &log}, &fakeProvider{})
	for range 2 {
		if code, body := post(t, url+"/v1/messages", dummyKey, msgReq); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	one := (10*3 + 3*0.3 + 2*3.75 + 7*15) / 1e6
	if tot := s.Totals(); !near(tot.CostUSD, 2*one) || tot.UnpricedCalls != 0 {
		t.Fatalf("totals %+v, want cost %v", tot, 2*one)
	}
	first, _, _ := strings.Cut(log.String(), "\n")
	var c transcript.Call
	if err := json.Unmarshal([]byte(first), &c); err != nil || c.Usage == nil || !near(c.Usage.CostUSD, one) {
		t.Fatalf("the transcript does not price the call: %s (%v)", first, err)
	}

	s2, url2 := start(t, Config{Model: "claude-unlisted", Prices: map[string]Price{"claude-x": sonnet}}, &fakeProvider{})
	post(t, url2+"/v1/messages", dummyKey, msgReq)
	if tot := s2.Totals(); tot.CostUSD != 0 || tot.UnpricedCalls != 1 {
		t.Fatalf("an unpriced model: totals %+v", tot)
	}
}

func TestCostBudgetClampsOutputThenRefusesAndNotifiesOnce(t *testing.T) {
	fp := &fakeProvider{}
	var mu sync.Mutex
	var heard []string
	// Each call costs $0.0001434: the third passes $0.0003.
	s, url := start(t, Config{Model: "claude-x", Prices: map[string]Price{"claude-x": sonnet}, Limits: Limits{MaxUSD: 0.0003},
		OnExceeded: func(kind, limit string) { mu.Lock(); heard = append(heard, kind+" "+limit); mu.Unlock() }}, fp)
	for i := range 6 {
		code, body := post(t, url+"/v1/messages", dummyKey, msgReq)
		if (i < 3) != (code == 200) {
			t.Fatalf("call %d: %d %s", i, code, body)
		}
		if i >= 3 && !strings.Contains(body, "budget is exhausted: max_usd 0.0003") {
			t.Fatalf("call %d refused with %s", i, body)
		}
	}
	if fp.count() != 3 {
		t.Fatalf("%d calls reached the provider after the budget was spent", fp.count())
	}
	// $0.0003 buys 20 output tokens at $15/Mtok: the first request's 4096 is clamped.
	if got := fp.bodies[0]["max_tokens"]; got != float64(20) {
		t.Fatalf("max_tokens upstream %v, want 20", got)
	}
	tot := s.Totals()
	if tot.Exceeded != ExceededCost || tot.ExceededLimit != "max_usd 0.0003" || tot.Refused != 3 {
		t.Fatalf("totals %+v", tot)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 1 || heard[0] != "cost max_usd 0.0003" {
		t.Fatalf("OnExceeded heard %q, want once", heard)
	}
}

// Every kind of budget tells OnExceeded once, the moment it is exceeded: after the call
// that passed a token or cost limit, or at the call one past max_turns; concurrent calls
// after that never reach the provider.
func TestEveryBudgetNotifiesOnceWhenExceeded(t *testing.T) {
	cases := []struct {
		limits   Limits
		answered int // calls answered before the notification
		kind     string
	}{
		{Limits{MaxTurns: 2}, 2, ExceededTurns},
		{Limits{MaxInputTokens: 40}, 3, ExceededTokens},  // 15 per call
		{Limits{MaxOutputTokens: 20}, 3, ExceededTokens}, // 7 per call
		{Limits{MaxTotalTokens: 50}, 3, ExceededTokens},  // 22 per call
		{Limits{MaxUSD: 0.0002}, 2, ExceededCost},        // $0.0001434 per call
		{Limits{MaxTurns: 100, MaxUSD: 0.0001}, 1, ExceededCost},
	}
	for _, c := range cases {
		fp := &fakeProvider{}
		notified := make(chan string, 10)
		s, url := start(t, Config{Model: "claude-x", Prices: map[string]Price{"claude-x": sonnet}, Limits: c.limits,
			OnExceeded: func(kind, limit string) { notified <- kind }}, fp)
		for i := 0; i < c.answered; i++ {
			if len(notified) > 0 {
				t.Fatalf("%+v: notified after %d calls, want %d", c.limits, i, c.answered)
			}
			if code, body := post(t, url+"/v1/messages", dummyKey, msgReq); code != 200 {
				t.Fatalf("%+v: call %d: %d %s", c.limits, i, code, body)
			}
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() { defer wg.Done(); post(t, url+"/v1/messages", dummyKey, msgReq) }()
		}
		wg.Wait()
		if len(notified) != 1 || <-notified != c.kind {
			t.Fatalf("%+v: want one %s notification", c.limits, c.kind)
		}
		if fp.count() != c.answered || s.Totals().Exceeded != c.kind {
			t.Fatalf("%+v: %d calls reached the provider; totals %+v", c.limits, fp.count(), s.Totals())
		}
	}
}

func TestCostBudgetNeedsAPricedPinnedModel(t *testing.T) {
	base := Config{Mode: Replay, Fixture: &transcript.Fixture{}, Key: dummyKey}
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no pinned model", func(c *Config) { c.Limits.MaxUSD = 1; c.Prices = map[string]Price{"m": sonnet} }, "pinned model"},
		{"no price", func(c *Config) { c.Limits.MaxUSD = 1; c.Model = "m" }, "price for the pinned model m"},
		{"negative rate", func(c *Config) { c.Prices = map[string]Price{"m": {Input: -1}} }, "input_per_mtok"},
		{"NaN budget", func(c *Config) { c.Limits.MaxUSD = math.NaN() }, "MaxUSD"},
	} {
		cfg := base
		c.mod(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	cfg := base
	cfg.Model, cfg.Prices, cfg.Limits.MaxUSD = "m", map[string]Price{"m": sonnet}, 1
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
}

func TestNoPriceTableCountsNothingUnpriced(t *testing.T) {
	s, url := start(t, Config{Model: "claude-x"}, &fakeProvider{})
	post(t, url+"/v1/messages", dummyKey, msgReq)
	if tot := s.Totals(); tot.CostUSD != 0 || tot.UnpricedCalls != 0 || tot.Turns != 1 {
		t.Fatalf("totals %+v", tot)
	}
}
