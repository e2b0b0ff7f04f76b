package report

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"ceval.dev/ceval/record"
)

// HTMLFile is the experiment's self-contained page, beside summary.json.
const HTMLFile = "report.html"

// LogPreviewBytes is how much of each agent log and mock call log the page shows (the end
// of it); the page links to the whole file.
const LogPreviewBytes = 8 << 10

//go:embed report.css
var reportCSS string

//go:embed report.html.tmpl
var reportTemplate string

// contentSecurityPolicy allows nothing but the page's own stylesheet (by hash) and data:
// images: no script, no fetch, no frame, no form, no remote font or image.
var contentSecurityPolicy = pageCSP("")

// pageCSP is contentSecurityPolicy with a second stylesheet (the page's filter rules, built
// from indices only) allowed by its hash too.
func pageCSP(extra string) string {
	hash := func(css string) string {
		sum := sha256.Sum256([]byte(css))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	src := hash(reportCSS)
	if extra != "" {
		src += " " + hash(extra)
	}
	return "default-src 'none'; style-src " + src + "; img-src data:; base-uri 'none'; form-action 'none'"
}

// pageTemplate is parsed on first use: only HTML reports need it, and parsing it cost every
// ceval start (and every re-exec of it) ~0.4 ms of init.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"pct": func(f float64) string { return strconv.FormatFloat(100*f, 'f', 0, 64) + "%" },
		"f2":  func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
		"f1":  func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
		"ci":  CIText,
		"dci": DiffCIText,
		// css returns the constant stylesheet; it is never built from run data.
		"css": func() template.CSS { return template.CSS(reportCSS) },
	}).Parse(reportTemplate))
})

type htmlPage struct {
	CSP      string
	Summary  *Summary
	Ks       []string
	Board    []boardRow
	Variants []string
	Matrix   []matrixRow
	Audits   []AuditRow
	Runs     []runPanel
	// IntervalNote and Differences: what the intervals are, and the variants' paired differences.
	IntervalNote string
	Differences  []Difference
	// Plots are the page's inline SVG figures (plots.go).
	Plots []Plot
	// Filters are the runs list's radio groups; FilterCSS hides the runs a checked option
	// excludes (built from indices only, allowed by its hash in CSP).
	Filters   []filterGroup
	FilterCSS template.CSS
}

type filterGroup struct {
	Name, ID string
	Options  []filterOption
}

type filterOption struct {
	ID, Label string
	Runs      int
}

type boardRow struct {
	Rank     int
	Stats    Stats
	PassAtK  []string
	Statuses string
	Tokens   string
}

type matrixRow struct {
	TaskID string
	Cells  []matrixCell
}

type matrixCell struct {
	Runs, Passed int
	Rate         float64
	CI           [2]float64 // the task's Wilson interval
	Class        string     // rate bucket r0..r10, or "none"
}

type runPanel struct {
	ID        string // anchor
	Variant   string
	TaskID    string
	Repeat    int
	Status    string
	Score     float64
	Seconds   float64
	Result    *record.Result
	Error     string
	Criteria  []criterionRow
	Isolation [][2]string
	Logs      []logPreview
	Limits    []string
	Notes     []string
	ToolCalls string // the tool-call sequence, one a line
	// Classes name the filter options the run belongs to (fs-0 fv-1 ...).
	Classes string
	// Transcript links to the run's own page (transcript.html), when it has a result.
	Transcript string
	// Iterations are the score of each iteration of the agent, when it ran more than once.
	Iterations []string
}

type criterionRow struct {
	Type, Description, Status, Details string
	Score, Weight                      float64
	Gating                             bool
	// Logs are what the criterion's verifier container printed (its output_logs), on the
	// run's page only.
	Logs []logPreview
}

type logPreview struct {
	Name  string
	Href  string // relative to the page
	Size  int64
	Cut   bool
	Text  string
	Error string
}

// HTML renders report.html for an experiment and its summary. Everything that came from a
// run (logs, criteria details, errors, mock calls) is stripped of control sequences and
// escaped by html/template; the page carries a Content-Security-Policy that allows no script
// and no network.
func HTML(e *Experiment, s *Summary) ([]byte, error) {
	panels := make([]runPanel, len(e.Runs))
	for i, r := range e.Runs {
		panels[i] = panelFor(e.Dir, i, r)
	}
	var buf bytes.Buffer
	if err := writeHTML(&buf, e, s, panels); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeHTML renders HTML's page to w, over the runs' panels (panelFor of each run, made once
// for this page and the runs' own).
func writeHTML(w io.Writer, e *Experiment, s *Summary, panels []runPanel) error {
	p := &htmlPage{CSP: contentSecurityPolicy, Summary: s, Variants: e.Plan.Variants, IntervalNote: IntervalNote(), Differences: s.Differences}
	for k := 1; k <= s.Repeats; k++ {
		p.Ks = append(p.Ks, strconv.Itoa(k))
	}
	board := append([]Stats(nil), s.Variants...)
	sort.SliceStable(board, func(i, j int) bool {
		if board[i].PassRate != board[j].PassRate {
			return board[i].PassRate > board[j].PassRate
		}
		return board[i].MeanScore > board[j].MeanScore
	})
	for i, v := range board {
		row := boardRow{Rank: i + 1, Stats: v, Statuses: countsText(v.Statuses), Tokens: countsText(v.Tokens)}
		for _, k := range p.Ks {
			if f, ok := v.PassAtK[k]; ok {
				row.PassAtK = append(row.PassAtK, strconv.FormatFloat(f, 'f', 2, 64))
			} else {
				row.PassAtK = append(row.PassAtK, "-")
			}
		}
		p.Board = append(p.Board, row)
	}
	for _, t := range s.Tasks {
		row := matrixRow{TaskID: t.TaskID}
		for _, v := range s.Variants {
			cell := matrixCell{Class: "none"}
			for _, vt := range v.Tasks {
				if vt.TaskID == t.TaskID && vt.Runs > 0 {
					cell = matrixCell{Runs: vt.Runs, Passed: vt.Passed, Rate: vt.PassRate, CI: vt.PassRateCI95,
						Class: "r" + strconv.Itoa(int(math.Round(10*vt.PassRate)))}
				}
			}
			row.Cells = append(row.Cells, cell)
		}
		p.Matrix = append(p.Matrix, row)
	}
	p.Audits = AuditRows(s)
	p.Plots = Plots(e, s)
	p.Runs = panels
	p.Filters, p.FilterCSS = runFilters(p.Runs)
	p.CSP = pageCSP(string(p.FilterCSS))
	if err := pageTemplate().Execute(w, p); err != nil {
		return fmt.Errorf("render %s: %w", HTMLFile, err)
	}
	return nil
}

func panelFor(expDir string, i int, r Run) runPanel {
	p := runPanel{ID: "run-" + strconv.Itoa(i+1), Variant: r.Variant, TaskID: r.TaskID, Repeat: r.Repeat,
		Status: StatusNotRun, Result: r.Result}
	res := r.Result
	if res == nil {
		return p
	}
	p.Status, p.Score, p.Seconds = StripControls(res.Status), res.Score, res.Timings.Total
	p.Error = StripControls(res.Error)
	for _, c := range res.Criteria {
		p.Criteria = append(p.Criteria, criterionRow{Type: StripControls(c.Type), Description: StripControls(c.Description),
			Status: StripControls(string(c.Status)), Details: StripControls(c.Details), Score: c.Score, Weight: c.Weight, Gating: c.Gating})
	}
	for _, l := range res.LimitsHit {
		p.Limits = append(p.Limits, StripControls(l))
	}
	for _, n := range res.SnapshotNotes {
		p.Notes = append(p.Notes, StripControls(fmt.Sprint(n)))
	}
	if a := res.Isolation; a != nil {
		p.Isolation = [][2]string{
			{"uid:gid", fmt.Sprintf("%d:%d", a.UID, a.GID)},
			{"groups", fmt.Sprint(a.Groups)},
			{"CapInh / CapPrm / CapEff", a.CapInh + " / " + a.CapPrm + " / " + a.CapEff},
			{"CapBnd / CapAmb", a.CapBnd + " / " + a.CapAmb},
			{"no_new_privs", strconv.Itoa(a.NoNewPrivs)},
			{"seccomp", strconv.Itoa(a.Seccomp)},
			{"pids.max", a.PidsMax},
			{"network", a.Network + " " + strings.Join(a.Interfaces, ",")},
		}
		for j := range p.Isolation {
			p.Isolation[j][1] = StripControls(p.Isolation[j][1])
		}
	}
	p.ToolCalls = toolCallSequence(r.Dir, res)
	if r.Dir != "" {
		if rel, err := filepath.Rel(expDir, r.Dir); err == nil {
			p.Transcript = relHref(rel, TranscriptFile)
		}
	}
	p.Iterations = iterationScores(res)
	rel, err := filepath.Rel(expDir, r.Dir)
	if err != nil {
		rel = ""
	}
	logs := []string{record.StdoutFile, record.StderrFile}
	if res.Mocks != nil {
		logs = append(logs, record.MockCallsFile)
	}
	if res.Gateway != nil {
		logs = append(logs, record.ModelCallsFile)
	}
	for _, name := range logs {
		p.Logs = append(p.Logs, preview(r.Dir, rel, name))
	}
	return p
}

// preview reads the last LogPreviewBytes of a run's file without following a symlink.
func preview(runDir, rel, name string) logPreview {
	lp := logPreview{Name: name, Href: relHref(rel, name)}
	f, err := os.OpenFile(filepath.Join(runDir, name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if os.IsNotExist(err) {
			lp.Error = "no such file"
		} else {
			lp.Error = StripControls(err.Error())
		}
		return lp
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		lp.Error = "not a regular file"
		return lp
	}
	lp.Size = fi.Size()
	off := max(fi.Size()-LogPreviewBytes, 0)
	lp.Cut = off > 0
	data, err := io.ReadAll(io.NewSectionReader(f, off, LogPreviewBytes))
	if err != nil {
		lp.Error = StripControls(err.Error())
	}
	lp.Text = StripControls(string(data))
	return lp
}

// relHref is a relative URL to dir/name, each segment escaped.
func relHref(rel, name string) string {
	var segs []string
	if rel != "" && rel != "." {
		for _, s := range strings.Split(filepath.ToSlash(rel), "/") {
			segs = append(segs, url.PathEscape(s))
		}
	}
	return strings.Join(append(segs, url.PathEscape(name)), "/")
}

func countsText[V int](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", StripControls(k), m[k]))
	}
	return strings.Join(parts, " ")
}

// runFilters makes the runs list's filters, without script: per group (status, variant,
// task, failed criterion) one radio input per value present, and a rule per option that
// hides the runs without its class. Checked options of different groups combine (AND).
// Identifiers and CSS are built from indices, never from run text; labels are escaped by
// the template.
func runFilters(runs []runPanel) ([]filterGroup, template.CSS) {
	type group struct {
		name, id string
		keys     func(r runPanel) []string
	}
	groups := []group{
		{"status", "fs", func(r runPanel) []string { return []string{r.Status} }},
		{"variant", "fv", func(r runPanel) []string { return []string{r.Variant} }},
		{"task", "ft", func(r runPanel) []string { return []string{r.TaskID} }},
		{"failed criterion", "fc", func(r runPanel) []string {
			var ks []string
			for _, c := range r.Criteria {
				if c.Status == string(record.CriterionFail) || c.Status == string(record.CriterionError) {
					ks = append(ks, c.Type)
				}
			}
			return ks
		}},
	}
	classes := make([][]string, len(runs))
	var out []filterGroup
	var css strings.Builder
	for _, g := range groups {
		index := map[string]int{}
		fg := filterGroup{Name: g.name, ID: g.id}
		for i, r := range runs {
			seen := map[string]bool{}
			for _, k := range g.keys(r) {
				if seen[k] {
					continue
				}
				seen[k] = true
				n, ok := index[k]
				if !ok {
					n = len(fg.Options)
					index[k] = n
					fg.Options = append(fg.Options, filterOption{ID: g.id + "-" + strconv.Itoa(n), Label: k})
				}
				fg.Options[n].Runs++
				classes[i] = append(classes[i], g.id+"-"+strconv.Itoa(n))
			}
		}
		if len(fg.Options) < 2 && g.id != "fc" {
			continue // one value: nothing to filter by
		}
		if len(fg.Options) == 0 {
			continue
		}
		for _, o := range fg.Options {
			css.WriteString("#" + o.ID + ":checked~#runs>details:not(." + o.ID + "){display:none}\n")
		}
		out = append(out, fg)
	}
	for i := range runs {
		runs[i].Classes = strings.Join(classes[i], " ")
	}
	return out, template.CSS(css.String())
}
