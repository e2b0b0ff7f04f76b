package gateway

import (
	"errors"
	"fmt"
	"math"

	"ceval.dev/ceval/gateway/transcript"
)

// Price is one model's price in USD per million tokens. Input is the price of input tokens
// that were neither read from nor written to the provider's prompt cache.
type Price struct {
	Input         float64 `json:"input_per_mtok"`
	CachedInput   float64 `json:"cached_input_per_mtok"`
	CacheCreation float64 `json:"cache_creation_per_mtok"`
	Output        float64 `json:"output_per_mtok"`
}

// Check says what is wrong with a price, if anything: every rate must be a finite,
// non-negative number.
func (p Price) Check() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"input_per_mtok", p.Input}, {"cached_input_per_mtok", p.CachedInput}, {"cache_creation_per_mtok", p.CacheCreation}, {"output_per_mtok", p.Output}} {
		if math.IsNaN(r.v) || math.IsInf(r.v, 0) || r.v < 0 {
			return fmt.Errorf("%s must be a non-negative number of USD per million tokens, got %v", r.name, r.v)
		}
	}
	return nil
}

// Cost is what a call with usage u costs at p, in USD. Usage is normalised (Input counts
// every input token), so the uncached input is what is left after cache reads and writes;
// reasoning tokens are part of Output, as both providers bill them.
func (p Price) Cost(u transcript.Usage) float64 {
	plain := max(u.Input-u.Cached-u.CacheCreation, 0)
	return (float64(plain)*p.Input + float64(u.Cached)*p.CachedInput +
		float64(u.CacheCreation)*p.CacheCreation + float64(u.Output)*p.Output) / 1e6
}

// outputTokensFor is how many output tokens usd still buys at p (-1: unbounded, when
// output is free).
func (p Price) outputTokensFor(usd float64) int64 {
	if p.Output <= 0 {
		return -1
	}
	if usd <= 0 {
		return 0
	}
	n := usd * 1e6 / p.Output
	if n >= math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(n)
}

// checkPrices refuses a price table with a bad rate, and a cost budget without a price for
// the pinned model: the gateway could not tell when it is spent.
func checkPrices(cfg *Config) error {
	for m, p := range cfg.Prices {
		if err := p.Check(); err != nil {
			return fmt.Errorf("gateway: price of %s: %w", m, err)
		}
	}
	l := cfg.Limits.MaxUSD
	if math.IsNaN(l) || math.IsInf(l, 0) || l < 0 {
		return fmt.Errorf("gateway: MaxUSD %v is not a budget", l)
	}
	if l == 0 {
		return nil
	}
	if cfg.Model == "" {
		return errors.New("gateway: a cost budget needs a pinned model, to price every call")
	}
	if _, ok := cfg.Prices[cfg.Model]; !ok {
		return fmt.Errorf("gateway: a cost budget needs a price for the pinned model %s", cfg.Model)
	}
	return nil
}
