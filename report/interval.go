package report

import "math"

// sampleSD is the sample standard deviation (n-1 in the denominator) of xs around mean;
// 0 for fewer than two values.
func sampleSD(xs []float64, mean float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// normalQuantile is the standard normal's p-quantile.
func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// wilson is the Wilson score interval of a proportion: passed of n at the two-sided
// normal quantile z. It stays inside [0, 1] and is not degenerate at 0 or n passes.
func wilson(passed, n int, z float64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	return wilsonAt(float64(passed)/float64(n), float64(n), z)
}

// wilsonAt is the Wilson score interval of proportion p observed over n (possibly an
// effective, fractional sample size) at quantile z.
func wilsonAt(p, n, z float64) (lo, hi float64) {
	z2 := z * z
	center := (p + z2/(2*n)) / (1 + z2/n)
	half := z / (1 + z2/n) * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return math.Max(0, center-half), math.Min(1, center+half)
}

// newcombe is Newcombe's hybrid score interval (his method 10) for the difference of two
// proportions, cur - base, built from each side's Wilson interval at quantile z.
func newcombe(curPassed, curN, basePassed, baseN int, z float64) (d, lo, hi float64) {
	p1 := float64(curPassed) / float64(max(curN, 1))
	p2 := float64(basePassed) / float64(max(baseN, 1))
	l1, u1 := wilson(curPassed, curN, z)
	l2, u2 := wilson(basePassed, baseN, z)
	return squareAndAdd(p1, l1, u1, p2, l2, u2, 0)
}

// squareAndAdd is Newcombe's interval of p1 - p2 from each side's interval, with phi the
// correlation of the two estimates (0 for independent samples; his paired method 10).
func squareAndAdd(p1, l1, u1, p2, l2, u2, phi float64) (d, lo, hi float64) {
	d = p1 - p2
	a, b := p1-l1, u2-p2
	lo = d - math.Sqrt(math.Max(0, a*a-2*phi*a*b+b*b))
	a, b = u1-p1, p2-l2
	hi = d + math.Sqrt(math.Max(0, a*a-2*phi*a*b+b*b))
	return d, math.Max(-1, lo), math.Min(1, hi)
}

// welch is the Welch interval of the difference of two means, cur - base, at two-sided
// confidence conf; ok is false when it is undefined (a side with under two runs, or no
// variance on either side).
func welch(curMean, curSD float64, curN int, baseMean, baseSD float64, baseN int, conf float64) (d, lo, hi float64, ok bool) {
	d = curMean - baseMean
	if curN < 2 || baseN < 2 {
		return d, 0, 0, false
	}
	v1, v2 := curSD*curSD/float64(curN), baseSD*baseSD/float64(baseN)
	se := math.Sqrt(v1 + v2)
	if se == 0 || math.IsNaN(se) {
		return d, 0, 0, false
	}
	df := (v1 + v2) * (v1 + v2) / (v1*v1/float64(curN-1) + v2*v2/float64(baseN-1))
	t := studentQuantile(1-(1-conf)/2, df)
	return d, d - t*se, d + t*se, true
}

// studentCDF is Student's t distribution's CDF with df degrees of freedom (df > 0).
func studentCDF(t, df float64) float64 {
	x := df / (df + t*t)
	tail := 0.5 * regIncBeta(df/2, 0.5, x)
	if t > 0 {
		return 1 - tail
	}
	return tail
}

// studentQuantile inverts studentCDF for p in (0.5, 1) by bisection (the CDF is monotone).
func studentQuantile(p, df float64) float64 {
	lo, hi := 0.0, 1.0
	for studentCDF(hi, df) < p && hi < 1e12 {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if studentCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by its continued
// fraction (modified Lentz), using the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) where the
// fraction converges slowly.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaFraction(b, a, 1-x)/b
	}
	return front * betaFraction(a, b, x) / a
}

func betaFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	f := d
	for m := 1; m <= 500; m++ {
		mf := float64(m)
		for _, num := range []float64{
			mf * (b - mf) * x / ((a + 2*mf - 1) * (a + 2*mf)),
			-(a + mf) * (a + b + mf) * x / ((a + 2*mf) * (a + 2*mf + 1)),
		} {
			d = 1 + num*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + num/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			f *= c * d
		}
		if math.Abs(c*d-1) < eps {
			break
		}
	}
	return f
}
