package seqtest

import (
	"math"
	"math/rand/v2"
	"testing"
)

// simulate runs experiments of up to maxPairs pairs, checking after every pair, and returns
// the fraction that decided and the mean number of pairs at the decision.
func simulate(seed uint64, trials, maxPairs int, pA, pB func(task int) float64, confidence float64, minPairs int) (rate, meanPairs float64) {
	r := rand.New(rand.NewPCG(seed, 1))
	decided, sum := 0, 0
	for range trials {
		pairs := make([]Pair, 0, maxPairs)
		for i := range maxPairs {
			task := i % 7
			pairs = append(pairs, Pair{A: r.Float64() < pA(task), B: r.Float64() < pB(task)})
		}
		if d := SignTest(pairs, confidence, minPairs); d.Decided {
			decided++
			sum += d.Pairs
		}
	}
	if decided > 0 {
		meanPairs = float64(sum) / float64(decided)
	}
	return float64(decided) / float64(trials), meanPairs
}

// The false-positive rate under no difference stays below 1-confidence even though the test
// looks after every pair, for tasks of very different difficulty.
func TestSignTestFalsePositiveRateStaysBelowAlphaWhenCheckedAfterEveryRun(t *testing.T) {
	same := func(task int) float64 { return []float64{0.1, 0.5, 0.9, 0.3, 0.7, 0.5, 0.2}[task] }
	for _, conf := range []float64{0.9, 0.95, 0.99} {
		rate, _ := simulate(42, 4000, 300, same, same, conf, 1)
		if alpha := 1 - conf; rate > alpha {
			t.Errorf("confidence %v: %.4f of 4000 null experiments stopped, more than %v", conf, rate, alpha)
		}
		t.Logf("confidence %v: false-positive rate %.4f", conf, rate)
	}
}

// A naive test (a fixed-sample z-test on the difference, looked at after every pair) is what
// the sign test replaces: under the same null it stops far more often than alpha, which shows
// the simulation can catch an invalid test.
func TestPeekingZTestWouldBreakTheSameBound(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 1))
	stopped := 0
	for range 2000 {
		var a, b int
		for n := 1; n <= 300; n++ {
			if r.Float64() < 0.5 {
				a++
			}
			if r.Float64() < 0.5 {
				b++
			}
			pa, pb := float64(a)/float64(n), float64(b)/float64(n)
			p := (pa + pb) / 2
			se := math.Sqrt(2 * p * (1 - p) / float64(n))
			if n >= 10 && se > 0 && math.Abs(pa-pb)/se > 1.96 {
				stopped++
				break
			}
		}
	}
	if rate := float64(stopped) / 2000; rate < 0.1 {
		t.Fatalf("peeking z-test stopped %.3f of null experiments; the simulation should show it above 0.1", rate)
	}
}

// A clear difference (0.9 against 0.2) is decided early, for the better variant.
func TestSignTestStopsEarlyOnAClearDifference(t *testing.T) {
	hi, lo := func(int) float64 { return 0.9 }, func(int) float64 { return 0.2 }
	rate, mean := simulate(7, 1000, 100, hi, lo, 0.95, 1)
	if rate < 0.99 || mean > 20 {
		t.Errorf("decided in %.3f of experiments after %.1f pairs on average; want nearly all, within 20", rate, mean)
	}
	pairs := make([]Pair, 10)
	for i := range pairs {
		pairs[i] = Pair{A: false, B: true}
	}
	d := SignTest(pairs, 0.95, 1)
	if !d.Decided || d.Better != "b" || d.Pairs != 8 {
		t.Errorf("B passing alone 8 times: %+v, want decided for b after 8 pairs (2^8/9 > 20)", d)
	}
}

func TestSignTestWaitsForMinPairsAndIgnoresConcordantPairs(t *testing.T) {
	pairs := []Pair{}
	for range 8 {
		pairs = append(pairs, Pair{A: true, B: false}, Pair{A: true, B: true}, Pair{A: false, B: false})
	}
	d := SignTest(pairs, 0.95, 23)
	if !d.Decided || d.Pairs != 23 || d.Discordant != 8 || d.Better != "a" {
		t.Errorf("%+v, want decided for a at pair 23 (min) with 8 discordant", d)
	}
	if d := SignTest(pairs[:6], 0.95, 1); d.Decided || d.Discordant != 2 {
		t.Errorf("2 discordant pairs decided: %+v", d)
	}
}
