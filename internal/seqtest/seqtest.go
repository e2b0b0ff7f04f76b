// Package seqtest decides, after every run, whether two variants' pass rates differ: a
// sequential test that stays valid however often it is checked. It is pure arithmetic over
// outcomes; it never reads a file or a clock.
package seqtest

import "math"

// Pair is one task run under both variants (the same task and repeat): whether each passed.
type Pair struct{ A, B bool }

// Decision is the test's state after some pairs.
type Decision struct {
	Pairs      int     `json:"pairs"`      // pairs looked at
	Discordant int     `json:"discordant"` // pairs where exactly one variant passed
	AOnly      int     `json:"a_only"`     // discordant pairs where A passed
	LogE       float64 `json:"log_e"`      // log of the e-value (mixture likelihood ratio)
	LogBound   float64 `json:"log_bound"`  // log(1/(1-confidence)): LogE at or above it decides
	Decided    bool    `json:"decided"`
	Better     string  `json:"better,omitempty"` // "a" or "b" once decided
}

// SignTest is a mixture sequential probability ratio test on the discordant pairs (a
// sequential McNemar test). Under the null hypothesis that the variant makes no difference
// to any task's pass probability, each discordant pair is A-only with probability 1/2,
// independently; the alternative puts a uniform prior on that probability. The likelihood
// ratio of the mixture against the null,
//
//	E_n = 2^n * B(s+1, n-s+1)   (n discordant pairs, s of them A-only),
//
// is a nonnegative martingale under the null with E_0 = 1, so by Ville's inequality the
// chance that it ever reaches 1/alpha is at most alpha: stopping the first time it does,
// after any number of looks, keeps the false-positive rate at or below alpha = 1-confidence.
// minPairs only delays the first look, which keeps the guarantee. Pairs must be given in an
// order fixed before their outcomes are known (the plan's), never in finishing order.
func SignTest(pairs []Pair, confidence float64, minPairs int) Decision {
	d := Decision{LogBound: math.Log(1 / (1 - confidence))}
	for _, p := range pairs {
		d.Pairs++
		if p.A != p.B {
			d.Discordant++
			if p.A {
				d.AOnly++
			}
		}
		if d.Pairs < minPairs {
			continue
		}
		if d.LogE = logE(d.Discordant, d.AOnly); d.LogE >= d.LogBound {
			d.Decided = true
			d.Better = "b"
			if 2*d.AOnly > d.Discordant {
				d.Better = "a"
			}
			return d
		}
	}
	d.LogE = logE(d.Discordant, d.AOnly)
	return d
}

// logE is log(2^n * B(s+1, n-s+1)) = n log 2 + lgamma(s+1) + lgamma(n-s+1) - lgamma(n+2).
func logE(n, s int) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x)); return v }
	return float64(n)*math.Ln2 + lg(s+1) + lg(n-s+1) - lg(n+2)
}
