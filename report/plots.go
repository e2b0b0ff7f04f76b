package report

import (
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The page's plots are inline SVG drawn here from the summary and the runs' results: no
// script and no library (the page's Content-Security-Policy allows neither), only
// presentation attributes and the page's own stylesheet classes. Every label that came from
// a plan or a run (variant ids, phase names are ceval's own) is escaped; numbers are
// formatted here. Each variant is one element of class "mark" with its data-variant, so a
// reader (or a test) finds one mark per variant in each plot.

// Plot is one figure of the page.
type Plot struct {
	ID, Title string
	SVG       template.HTML
	Note      string // why a plot has no marks, or what it shows
}

const (
	plotWidth  = 640
	plotLeft   = 160 // room for the variant labels
	plotRight  = 24
	plotRowH   = 26
	plotTop    = 18
	plotBottom = 30
)

// variantRun is what the plots take from one run with a result.
type variantRun struct {
	score   float64
	tokens  int
	cost    float64
	costSet bool
	timings [6]float64
}

var phaseNames = [6]string{"prepare", "launch", "agent", "reap", "snapshot", "grade"}

// Plots draws the page's figures: pass rate per variant with its interval, the score
// distribution, tokens or cost against pass rate, the mean score by iteration and the
// time per phase.
func Plots(e *Experiment, s *Summary) []Plot {
	runs := map[string][]variantRun{}
	for _, r := range e.Runs {
		if r.Result == nil {
			continue
		}
		v := variantRun{score: r.Result.Score}
		for _, n := range r.Result.Agent.Tokens {
			v.tokens += n
		}
		if g := r.Result.Gateway; g != nil && g.CostUSD > 0 {
			v.cost, v.costSet = g.CostUSD, true
		}
		t := r.Result.Timings
		v.timings = [6]float64{t.Prepare, t.Launch, t.Agent, t.Reap, t.Snapshot, t.Grade}
		runs[r.Variant] = append(runs[r.Variant], v)
	}
	return []Plot{
		passRatePlot(s),
		scoresPlot(s, runs),
		costPlot(s, runs),
		iterationsPlot(s),
		phasesPlot(s, runs),
	}
}

type svgBuf struct{ strings.Builder }

func (b *svgBuf) open(id string, h int) {
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="plot" id="` + id + `-svg" width="` +
		itoa(plotWidth) + `" height="` + itoa(h) + `" viewBox="0 0 ` + itoa(plotWidth) + " " + itoa(h) +
		`" role="img">`)
}

func (b *svgBuf) text(x, y float64, anchor, class, s string) {
	b.WriteString(`<text x="` + svgNum(x) + `" y="` + svgNum(y) + `" text-anchor="` + anchor + `" class="` + class + `">` +
		template.HTMLEscapeString(s) + `</text>`)
}

func (b *svgBuf) rect(x, y, w, h float64, class string) {
	b.WriteString(`<rect x="` + svgNum(x) + `" y="` + svgNum(y) + `" width="` + svgNum(math.Max(w, 0)) + `" height="` + svgNum(h) +
		`" class="` + class + `"/>`)
}

func (b *svgBuf) line(x1, y1, x2, y2 float64, class string) {
	b.WriteString(`<line x1="` + svgNum(x1) + `" y1="` + svgNum(y1) + `" x2="` + svgNum(x2) + `" y2="` + svgNum(y2) + `" class="` + class + `"/>`)
}

func (b *svgBuf) mark(variant string) {
	b.WriteString(`<g class="mark" data-variant="` + template.HTMLEscapeString(variant) + `">`)
}

// axis draws a 0..1 (or 0..max) axis under n rows, labelled at five ticks.
func (b *svgBuf) axis(y float64, max float64, unit string) {
	span := float64(plotWidth - plotLeft - plotRight)
	b.line(plotLeft, y, plotLeft+span, y, "axis")
	for i := 0; i <= 4; i++ {
		x := plotLeft + span*float64(i)/4
		b.line(x, y, x, y+4, "axis")
		b.text(x, y+16, "middle", "tick", trimNum(max*float64(i)/4)+unit)
	}
}

func (b *svgBuf) html() template.HTML {
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built only from escaped labels and formatted numbers
}

func rowsHeight(n int) int { return plotTop + n*plotRowH + plotBottom }

func xOf(v, max float64) float64 {
	if max <= 0 {
		return plotLeft
	}
	return plotLeft + float64(plotWidth-plotLeft-plotRight)*math.Min(math.Max(v/max, 0), 1)
}

func passRatePlot(s *Summary) Plot {
	p := Plot{ID: "plot-pass-rate", Title: "Pass rate per variant, with its 95% interval"}
	var b svgBuf
	b.open(p.ID, rowsHeight(len(s.Variants)))
	for i, v := range s.Variants {
		y := float64(plotTop + i*plotRowH)
		b.mark(v.VariantID)
		b.text(plotLeft-8, y+plotRowH/2+4, "end", "label", v.VariantID)
		b.rect(plotLeft, y+5, xOf(v.PassRate, 1)-plotLeft, plotRowH-10, "bar")
		lo, hi := xOf(v.PassRateCI95[0], 1), xOf(v.PassRateCI95[1], 1)
		mid := y + plotRowH/2
		b.line(lo, mid, hi, mid, "whisker")
		b.line(lo, mid-5, lo, mid+5, "whisker")
		b.line(hi, mid-5, hi, mid+5, "whisker")
		b.WriteString(`<title>` + template.HTMLEscapeString(v.VariantID+": "+strconv.Itoa(v.Passed)+" of "+
			strconv.Itoa(v.Runs)+" passed, 95% interval "+CIText(v.PassRateCI95)) + `</title></g>`)
	}
	b.axis(float64(plotTop+len(s.Variants)*plotRowH), 1, "")
	p.SVG = b.html()
	return p
}

// scoreBins is the histogram's resolution: [0, 0.1), ..., [0.9, 1].
const scoreBins = 10

func scoresPlot(s *Summary, runs map[string][]variantRun) Plot {
	p := Plot{ID: "plot-scores", Title: "Score distribution per variant (runs per score tenth)"}
	var b svgBuf
	b.open(p.ID, rowsHeight(len(s.Variants)))
	span := float64(plotWidth - plotLeft - plotRight)
	for i, v := range s.Variants {
		var bins [scoreBins]int
		most := 0
		for _, r := range runs[v.VariantID] {
			k := int(math.Floor(r.score * scoreBins))
			k = min(max(k, 0), scoreBins-1)
			bins[k]++
			most = max(most, bins[k])
		}
		y := float64(plotTop + i*plotRowH)
		b.mark(v.VariantID)
		b.text(plotLeft-8, y+plotRowH/2+4, "end", "label", v.VariantID)
		for k, n := range bins {
			if n == 0 {
				continue
			}
			h := float64(plotRowH-6) * float64(n) / float64(most)
			b.rect(plotLeft+span*float64(k)/scoreBins+1, y+plotRowH-3-h, span/scoreBins-2, h, "bar")
		}
		b.WriteString(`<title>` + template.HTMLEscapeString(v.VariantID+": "+binsText(bins)) + `</title></g>`)
	}
	b.axis(float64(plotTop+len(s.Variants)*plotRowH), 1, "")
	p.SVG = b.html()
	return p
}

func binsText(bins [scoreBins]int) string {
	var parts []string
	for k, n := range bins {
		if n > 0 {
			parts = append(parts, trimNum(float64(k)/scoreBins)+"-"+trimNum(float64(k+1)/scoreBins)+": "+strconv.Itoa(n))
		}
	}
	if parts == nil {
		return "no graded runs"
	}
	return strings.Join(parts, ", ")
}

// costPlot places each variant at its mean cost per run (gateway-priced USD when every
// graded run of every variant has it, else the agent's reported tokens) against its pass
// rate.
func costPlot(s *Summary, runs map[string][]variantRun) Plot {
	useCost := true
	graded := false
	for _, v := range s.Variants {
		for _, r := range runs[v.VariantID] {
			graded = true
			useCost = useCost && r.costSet
		}
	}
	unit, what := " tok", "tokens"
	if useCost && graded {
		unit, what = " $", "cost (USD)"
	}
	p := Plot{ID: "plot-cost", Title: "Mean " + what + " per run against pass rate"}
	mean := map[string]float64{}
	top := 0.0
	for _, v := range s.Variants {
		rs := runs[v.VariantID]
		if len(rs) == 0 {
			continue
		}
		sum := 0.0
		for _, r := range rs {
			if useCost {
				sum += r.cost
			} else {
				sum += float64(r.tokens)
			}
		}
		mean[v.VariantID] = sum / float64(len(rs))
		top = math.Max(top, mean[v.VariantID])
	}
	if top == 0 {
		p.Note = "no run reported tokens or cost: each variant is drawn at 0"
		top = 1
	} else {
		top = niceCeil(top)
	}
	const h = 220
	var b svgBuf
	b.open(p.ID, h)
	plotH := float64(h - plotTop - plotBottom)
	yOf := func(rate float64) float64 { return plotTop + plotH*(1-rate) }
	b.line(plotLeft, plotTop, plotLeft, plotTop+plotH, "axis")
	for i := 0; i <= 4; i++ {
		y := yOf(float64(i) / 4)
		b.text(plotLeft-6, y+4, "end", "tick", trimNum(float64(i)/4))
	}
	b.text(plotLeft-40, plotTop+plotH/2, "end", "tick", "pass rate")
	for _, v := range s.Variants {
		x, y := xOf(mean[v.VariantID], top), yOf(v.PassRate)
		b.mark(v.VariantID)
		b.WriteString(`<circle cx="` + svgNum(x) + `" cy="` + svgNum(y) + `" r="5" class="dot"/>`)
		if x > plotLeft+0.7*float64(plotWidth-plotLeft-plotRight) { // near the right edge: label to the left
			b.text(x-8, y-6, "end", "label", v.VariantID)
		} else {
			b.text(x+8, y-6, "start", "label", v.VariantID)
		}
		b.WriteString(`<title>` + template.HTMLEscapeString(v.VariantID+": pass rate "+strconv.FormatFloat(v.PassRate, 'f', 2, 64)+
			", mean "+what+" "+trimNum(mean[v.VariantID])) + `</title></g>`)
	}
	b.axis(plotTop+plotH, top, unit)
	p.SVG = b.html()
	return p
}

func iterationsPlot(s *Summary) Plot {
	p := Plot{ID: "plot-iterations", Title: "Mean score after at most n iterations"}
	n := 0
	for _, v := range s.Variants {
		n = max(n, len(v.MeanScoreByIteration))
	}
	if n == 0 {
		p.Note = "no run iterated (iterations or simulated_user)"
		return p
	}
	const h = 200
	var b svgBuf
	b.open(p.ID, h)
	plotH := float64(h - plotTop - plotBottom)
	span := float64(plotWidth - plotLeft - plotRight)
	xAt := func(i int) float64 {
		if n == 1 {
			return plotLeft + span/2
		}
		return plotLeft + span*float64(i)/float64(n-1)
	}
	yOf := func(v float64) float64 { return plotTop + plotH*(1-math.Min(math.Max(v, 0), 1)) }
	b.line(plotLeft, plotTop, plotLeft, plotTop+plotH, "axis")
	b.line(plotLeft, plotTop+plotH, plotLeft+span, plotTop+plotH, "axis")
	for i := 0; i < n; i++ {
		b.text(xAt(i), plotTop+plotH+16, "middle", "tick", strconv.Itoa(i+1))
	}
	for i := 0; i <= 4; i++ {
		b.text(plotLeft-6, yOf(float64(i)/4)+4, "end", "tick", trimNum(float64(i)/4))
	}
	for vi, v := range s.Variants {
		b.mark(v.VariantID)
		var pts []string
		for i, m := range v.MeanScoreByIteration {
			pts = append(pts, svgNum(xAt(i))+","+svgNum(yOf(m)))
		}
		if len(pts) > 0 {
			b.WriteString(`<polyline points="` + strings.Join(pts, " ") + `" class="series s` + itoa(vi%6) + `"/>`)
			last := v.MeanScoreByIteration[len(v.MeanScoreByIteration)-1]
			b.text(xAt(len(pts)-1)+6, yOf(last)+4, "start", "label", v.VariantID)
		}
		b.WriteString(`<title>` + template.HTMLEscapeString(v.VariantID) + `</title></g>`)
	}
	p.SVG = b.html()
	return p
}

func phasesPlot(s *Summary, runs map[string][]variantRun) Plot {
	p := Plot{ID: "plot-phases", Title: "Mean seconds per phase of a run (prepare, launch, agent, reap, snapshot, grade)"}
	means := map[string][6]float64{}
	top := 0.0
	for _, v := range s.Variants {
		rs := runs[v.VariantID]
		var m [6]float64
		total := 0.0
		for k := range m {
			for _, r := range rs {
				m[k] += r.timings[k]
			}
			if len(rs) > 0 {
				m[k] /= float64(len(rs))
			}
			total += m[k]
		}
		means[v.VariantID] = m
		top = math.Max(top, total)
	}
	if top == 0 {
		top = 1
	} else {
		top = niceCeil(top)
	}
	var b svgBuf
	b.open(p.ID, rowsHeight(len(s.Variants))+24)
	for i, v := range s.Variants {
		y := float64(plotTop + i*plotRowH)
		m := means[v.VariantID]
		b.mark(v.VariantID)
		b.text(plotLeft-8, y+plotRowH/2+4, "end", "label", v.VariantID)
		x := float64(plotLeft)
		var parts []string
		for k, sec := range m {
			w := xOf(sec, top) - plotLeft
			b.rect(x, y+5, w, plotRowH-10, "phase p"+itoa(k))
			x += w
			parts = append(parts, phaseNames[k]+" "+strconv.FormatFloat(sec, 'f', 2, 64)+" s")
		}
		b.WriteString(`<title>` + template.HTMLEscapeString(v.VariantID+": "+strings.Join(parts, ", ")) + `</title></g>`)
	}
	y := float64(plotTop + len(s.Variants)*plotRowH)
	b.axis(y, top, " s")
	for k, name := range phaseNames {
		x := float64(plotLeft + k*75)
		b.rect(x, y+30, 10, 10, "phase p"+itoa(k))
		b.text(x+14, y+39, "start", "tick", name)
	}
	p.SVG = b.html()
	return p
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*e {
			return m * e
		}
	}
	return 10 * e
}

func svgNum(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func itoa(i int) string { return strconv.Itoa(i) }

func trimNum(v float64) string {
	if v != 0 && math.Abs(v) < 0.01 {
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	t := strconv.FormatFloat(v, 'f', 2, 64)
	t = strings.TrimRight(t, "0")
	return strings.TrimSuffix(t, ".")
}
