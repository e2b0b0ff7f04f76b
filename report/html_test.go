package report

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/record"
)

// hostileLog is what a hostile agent prints: markup, a terminal escape that recolours and
// clears the screen, an OSC that sets the window title, and a bidi override.
const hostileLog = "before <script>alert(1)</script> <img src=x onerror=alert(2)>\x1b[31mRED\x1b[0m\x1b[2J\x1b]0;pwned\x07\u202eevil after\n"

// hostileExperiment is writeExperiment's two variants with hostile logs in every run of
// good/b.
func hostileExperiment(t *testing.T) string {
	t.Helper()
	dir := writeExperiment(t, map[string]map[string][]string{
		"good": {"a": {"SUCCESS", "SUCCESS", "SUCCESS"}, "b": {"SUCCESS", "FAILURE", "ERROR"}},
		"bad":  {"a": {"FAILURE", "FAILURE", "TIMEOUT"}, "b": {"SUCCESS", "", ""}},
	}, []string{"good", "bad"}, []string{"a", "b"}, 3)
	for rep := 1; rep <= 3; rep++ {
		rd := record.RunDir(filepath.Dir(dir), filepath.Base(dir), "good", "b", rep)
		if err := os.WriteFile(filepath.Join(rd, record.StdoutFile), []byte(hostileLog), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestStripControlsRemovesTerminalSequences(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain\ttext\n", "plain\ttext\n"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"\x1b[2J\x1b[H\x1b[?1049hscreen", "screen"},
		{"\x1b]0;title\x07after", "after"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1bPdcs data\x1b\\ok", "ok"},
		{"\u009b31mC1 csi", "C1 csi"},
		{"\x1b(Bcharset", "charset"},
		{"a\rb\x08c\x00d\x7f", "abcd"},
		{"bidi \u202eevil\u202c", "bidi evil"},
		{"bad \xff utf8", "bad \ufffd utf8"},
		{"trailing \x1b", "trailing "},
		{"\x1b[31", ""},
		{"ünïcødé ✓", "ünïcødé ✓"},
	}
	for _, c := range cases {
		if got := StripControls(c.in); got != c.want {
			t.Errorf("StripControls(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestReportHTMLRendersHostileAgentTextAsText(t *testing.T) {
	dir := hostileExperiment(t)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	low := strings.ToLower(string(page))
	if strings.Contains(low, "<script") || strings.Contains(low, "<img") {
		t.Error("agent markup reached the page as markup")
	}
	if !strings.Contains(string(page), "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("agent markup is not shown as text")
	}
	for _, bad := range []string{"\x1b", "\x07", "\x00", "\u202e"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("control character %q reached the page", bad)
		}
	}
	if !strings.Contains(string(page), "REDevil after") {
		t.Error("log text around the escapes is missing")
	}
	// Every style element (the stylesheet, the runs list's filter rules) allowed by its hash,
	// and nothing else.
	styles := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindAllSubmatch(page, -1)
	if len(styles) != 2 {
		t.Fatalf("%d style elements, want the stylesheet and the filter rules", len(styles))
	}
	var hashes []string
	for _, m := range styles {
		sum := sha256.Sum256(m[1])
		hashes = append(hashes, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	want := "default-src 'none'; style-src " + strings.Join(hashes, " ") + "; img-src data:;"
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindSubmatch(page)
	if csp == nil || !strings.HasPrefix(html.UnescapeString(string(csp[1])), want) {
		t.Errorf("CSP missing or its style hash does not match the stylesheet: %q, want %s...", csp, want)
	}
}

func TestReportHTMLShowsTheEndOfALongLogWithALink(t *testing.T) {
	dir := hostileExperiment(t)
	rd := record.RunDir(filepath.Dir(dir), filepath.Base(dir), "good", "a", 2)
	long := strings.Repeat("x", 3*LogPreviewBytes) + "THE END"
	os.WriteFile(filepath.Join(rd, record.StderrFile), []byte("HEAD"+long), 0o600)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	if !strings.Contains(string(page), "THE END") || strings.Contains(string(page), "HEAD") {
		t.Error("the preview is not the log's end")
	}
	if !strings.Contains(string(page), `<a href="good/a/2/agent.stderr.log">`) {
		t.Error("no relative link to the whole log")
	}
	if bytes.Count(page, []byte("x")) > LogPreviewBytes+1000 {
		t.Error("the preview is not truncated")
	}
}

func TestReportDoesNotFollowSymlinkedLogOutOfTheRunDir(t *testing.T) {
	dir := hostileExperiment(t)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("TOP-SECRET-REFERENCE"), 0o600)
	rd := record.RunDir(filepath.Dir(dir), filepath.Base(dir), "bad", "a", 1)
	if err := os.Symlink(secret, filepath.Join(rd, record.StdoutFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	if strings.Contains(string(page), "TOP-SECRET-REFERENCE") {
		t.Error("report.html followed a symlinked log out of the run directory")
	}
}

// TestReportHTMLInChromium loads the page in headless Chromium: no console error (a CSP
// violation is one), the leaderboard's numbers, and the hostile log rendered as text.
func TestReportHTMLInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is missing under CI=true (apt-get install chromium)")
		}
		t.Skip("chromium not installed")
	}
	dir := hostileExperiment(t)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions", "--user-data-dir="+t.TempDir(),
		"--enable-logging=stderr", "--v=0", "--dump-dom", "file://"+filepath.Join(dir, HTMLFile))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	dom := stdout.String()
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Refused to") || strings.Contains(line, "Uncaught") {
			t.Errorf("console: %s", line)
		}
	}
	board := regexp.MustCompile(`<tr data-variant="(\w+)"><td class="num">(\d)</td><td>\w+</td><td class="num">(\d+)</td><td class="num">(\d+)</td><td class="num pass-rate">([0-9.]+)</td>`).FindAllStringSubmatch(dom, -1)
	var got []string
	for _, m := range board {
		got = append(got, strings.Join(m[1:], " "))
	}
	if want := []string{"good 1 6 4 0.67", "bad 2 4 1 0.25"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("leaderboard in the DOM = %q, want %q", got, want)
	}
	// The plots: one mark per variant in each figure drawn (iterations has none: no run
	// iterated), in the DOM as the browser parsed it.
	for _, v := range []string{"good", "bad"} {
		if n := strings.Count(dom, `<g class="mark" data-variant="`+v+`">`); n != 4 {
			t.Errorf("variant %s has %d plot marks in the DOM, want 4 (pass rate, scores, cost, phases)", v, n)
		}
	}
	for _, id := range []string{"plot-pass-rate-svg", "plot-scores-svg", "plot-cost-svg", "plot-phases-svg"} {
		if !strings.Contains(dom, `id="`+id+`"`) {
			t.Errorf("plot %s missing from the DOM", id)
		}
	}
	// The runs list's filters: a radio per status present, and no run hidden until one is checked.
	for _, st := range []string{"SUCCESS", "FAILURE", "ERROR", "TIMEOUT", "NOT_RUN"} {
		if !regexp.MustCompile(`<input type="radio" name="fs" id="fs-\d+"><label for="fs-\d+">` + st + ` \(\d+\)</label>`).MatchString(dom) {
			t.Errorf("no status filter for %s in the DOM", st)
		}
	}
	// Checking an option hides the other runs: a test copy of the page (CSP dropped, a probe
	// script added, the FAILURE option and variant "good" checked) reports how many runs the
	// browser still displays. good has one FAILURE run of its six.
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	probe := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`).ReplaceAllString(string(page), "")
	fail := regexp.MustCompile(`<input type="radio" name="fs" id="(fs-\d+)"><label for="fs-\d+">FAILURE `).FindStringSubmatch(probe)
	good := regexp.MustCompile(`<input type="radio" name="fv" id="(fv-\d+)"><label for="fv-\d+">good `).FindStringSubmatch(probe)
	if fail == nil || good == nil {
		t.Fatal("no FAILURE status or good variant filter in the page")
	}
	for _, id := range []string{fail[1], good[1]} {
		probe = strings.Replace(probe, `id="`+id+`">`, `id="`+id+`" checked>`, 1)
	}
	probe = strings.Replace(probe, "</body>", `<script>document.body.setAttribute("data-shown", [...document.querySelectorAll("#runs>details")].filter(d => getComputedStyle(d).display != "none").map(d => d.id).join(","))</script></body>`, 1)
	probePath := filepath.Join(t.TempDir(), "probe.html")
	os.WriteFile(probePath, []byte(probe), 0o600)
	pc := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions", "--user-data-dir="+t.TempDir(),
		"--dump-dom", "file://"+probePath)
	pout, err := pc.Output()
	if err != nil {
		t.Fatalf("chromium probe: %v", err)
	}
	shown := regexp.MustCompile(`data-shown="([^"]*)"`).FindSubmatch(pout)
	if shown == nil || strings.Count(string(shown[1]), "run-") != 1 {
		t.Errorf("with FAILURE and good checked, the browser shows runs %q, want the one FAILURE run of good", shown)
	}
	// A screenshot, for a reader: kept in $CEVAL_SCREENSHOTS when set.
	shots := os.Getenv("CEVAL_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	png := filepath.Join(shots, "report-hostile.png")
	shot := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions", "--user-data-dir="+t.TempDir(),
		"--hide-scrollbars", "--window-size=1280,2400", "--screenshot="+png, "file://"+filepath.Join(dir, HTMLFile))
	if out, err := shot.CombinedOutput(); err != nil {
		t.Errorf("chromium screenshot: %v\n%s", err, out)
	} else if st, err := os.Stat(png); err != nil {
		t.Errorf("screenshot %s: %v", png, err)
	} else if st.Size() < 10<<10 {
		t.Errorf("screenshot %s is %d bytes: a blank page?", png, st.Size())
	}
	if strings.Contains(strings.ToLower(dom), "<script") || strings.Contains(dom, "<img") {
		t.Error("the hostile log became elements in the DOM")
	}
	if !strings.Contains(dom, "&lt;script&gt;alert(1)&lt;/script&gt;") || strings.Contains(dom, "\x1b") {
		t.Error("the hostile log is not rendered as text")
	}
}

func TestReportHTMLShowsMockCallsOfRunsWithMocks(t *testing.T) {
	dir := hostileExperiment(t)
	rd := record.RunDir(filepath.Dir(dir), filepath.Base(dir), "bad", "a", 3)
	res, err := record.ReadResult(rd)
	if err != nil {
		t.Fatal(err)
	}
	res.Mocks = &record.MockResult{Tools: []string{"gh"}, Log: record.MockCallsFile}
	record.WriteJSONAtomic(filepath.Join(rd, record.ResultFile), res)
	os.WriteFile(filepath.Join(rd, record.MockCallsFile), []byte(`{"tool":"gh","argv":["pr","<b>list</b>"]}`+"\n"), 0o600)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	if !strings.Contains(string(page), `<a href="bad/a/3/mock_calls.jsonl">`) || !strings.Contains(string(page), `&lt;b&gt;list&lt;/b&gt;`) {
		t.Error("mock calls not shown (as text)")
	}
	if strings.Count(string(page), "mock_calls.jsonl") != 2 {
		t.Error("mock calls shown for runs without mocks")
	}
}

func TestReportHTMLShowsTheGatewayAndBudgetStatus(t *testing.T) {
	dir := hostileExperiment(t)
	rd := record.RunDir(filepath.Dir(dir), filepath.Base(dir), "bad", "a", 3)
	res, err := record.ReadResult(rd)
	if err != nil {
		t.Fatal(err)
	}
	res.Status = record.StatusTokenBudget
	res.Gateway = &record.GatewayResult{Mode: "replay", Log: record.ModelCallsFile}
	res.Gateway.Requests, res.Gateway.Turns, res.Gateway.InputTokens, res.Gateway.OutputTokens = 3, 2, 1234, 567
	res.Gateway.ExceededLimit = "max_output_tokens 500"
	record.WriteJSONAtomic(filepath.Join(rd, record.ResultFile), res)
	os.WriteFile(filepath.Join(rd, record.ModelCallsFile), []byte(`{"api":"anthropic","request":{"content":"<script>x</script>"}}`+"\n"), 0o600)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := string(must(os.ReadFile(filepath.Join(dir, HTMLFile))))
	for _, want := range []string{
		`<span class="s-TOKEN_BUDGET_EXCEEDED">TOKEN_BUDGET_EXCEEDED</span>`,
		`model gateway (replay): 3 requests, 2 answered &middot; 1234 input tokens (0 cached) &middot; 567 output`,
		`budget exceeded: <code>max_output_tokens 500</code>`,
		`<a href="bad/a/3/model_calls.jsonl">`,
		`&lt;script&gt;x&lt;/script&gt;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
	css := string(must(os.ReadFile("report.css")))
	if !strings.Contains(css, ".s-TOKEN_BUDGET_EXCEEDED") {
		t.Error("no style for the budget statuses")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The snapshot caps a run reached are on its panel (and in JUnit), with what they left out;
// an agent-chosen path in them is text, not markup.
func TestReportShowsTheSnapshotCapsHit(t *testing.T) {
	dir := hostileExperiment(t)
	rd := record.RunDir(filepath.Dir(dir), filepath.Base(dir), "bad", "a", 1)
	res, err := record.ReadResult(rd)
	if err != nil {
		t.Fatal(err)
	}
	res.LimitsHit = []string{`snapshot per-file cap 16 MiB: 1 file(s) omitted (visible, unreadable), first "<b>notes.txt"`}
	record.WriteJSONAtomic(filepath.Join(rd, record.ResultFile), res)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := string(must(os.ReadFile(filepath.Join(dir, HTMLFile))))
	if want := `<code>snapshot per-file cap 16 MiB: 1 file(s) omitted (visible, unreadable), first &#34;&lt;b&gt;notes.txt&#34;</code>`; !strings.Contains(page, want) {
		t.Errorf("report.html lacks %s", want)
	}
	junit := string(must(os.ReadFile(filepath.Join(dir, JUnitFile))))
	if !strings.Contains(junit, "limit: snapshot per-file cap 16 MiB") {
		t.Errorf("junit.xml does not name the cap:\n%s", junit)
	}
}
