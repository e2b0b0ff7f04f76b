package judge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"ceval.dev/ceval/record"
)

// APIs a judge speaks.
const (
	Anthropic = "anthropic" // Messages API
	OpenAI    = "openai"    // Responses API
)

// Defaults and bounds.
const (
	DefaultTimeout   = 60 * time.Second
	DefaultMaxCalls  = 20   // per run, retries included
	DefaultMaxTokens = 1024 // per answer
	MaxSamples       = 9
	maxAnswerBytes   = 1 << 20
	maxRawInDetails  = 500
)

// Config is the judge of ceval's user config, with the key from the user's environment.
type Config struct {
	API       string
	Model     string
	BaseURL   string // "" for the provider's
	Key       string
	KeyEnv    string        // the variable Key came from, for messages
	Timeout   time.Duration // per call
	MaxCalls  int           // per run, retries included
	MaxTokens int
	MaxUSD    float64 // per run; 0: none
	// Price in USD per million tokens; zero leaves cost_usd out.
	InputPerMTok, OutputPerMTok float64
}

// Verdict is a criterion's judgment.
type Verdict struct {
	Score   float64   // the median of the samples
	Samples []float64 // each sample's score
	Reasons string    // the median sample's reasons
	// Malformed is the raw answer of a sample that was not strict JSON twice: the
	// criterion FAILs with it.
	Malformed string
	Reused    int // samples taken from a recorded judgment
}

// ErrBudget is returned when the run's judge budget is spent.
var ErrBudget = errors.New("the run's judge budget is spent")

// ErrInputTooLong is the judge model refusing the request as longer than it takes: the files
// the criterion hands it are the workspace's, so the criterion fails rather than errs.
var ErrInputTooLong = errors.New("the judge's input is longer than its model takes")

// tooLongMarks are what the providers say when a request is over the model's context.
var tooLongMarks = []string{"prompt is too long", "context_length_exceeded", "maximum context length", "too many tokens", "input is too long", "request too large"}

// inputTooLong reports whether a refused request's status and body say it was too long.
func inputTooLong(status int, body []byte) bool {
	if status == http.StatusRequestEntityTooLarge {
		return true
	}
	if status != http.StatusBadRequest {
		return false
	}
	b := strings.ToLower(string(body))
	for _, m := range tooLongMarks {
		if strings.Contains(b, m) {
			return true
		}
	}
	return false
}

// Fixture is a replay script: answers given in order, each a raw answer text.
type Fixture struct {
	Answers []string
}

// Judge makes one run's judge calls. It is safe for concurrent use.
type Judge struct {
	cfg      Config
	fixture  *Fixture // replay: no network
	http     *http.Client
	log      io.Writer
	recorded map[string]record.JudgeCall // input digest -> a valid recorded judgment (regrade)

	mu    sync.Mutex
	calls int
	usd   float64
	next  int // fixture answer
}

// New returns the judge of a run. log receives judge_calls.jsonl (nil: none); recorded are
// the records of an earlier grade of the same run, reused when the inputs match.
func New(cfg Config, log io.Writer, recorded []record.JudgeCall) *Judge {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxCalls <= 0 {
		cfg.MaxCalls = DefaultMaxCalls
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	j := &Judge{cfg: cfg, log: log, recorded: map[string]record.JudgeCall{},
		http: &http.Client{Timeout: cfg.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	for _, r := range recorded {
		if r.Score != nil { // the digest covers the API and model
			j.recorded[r.InputSHA256] = r
		}
	}
	return j
}

// ForRun returns a judge with j's configuration for one run: its own budget, log and
// recorded judgments.
func (j *Judge) ForRun(log io.Writer, recorded []record.JudgeCall) *Judge {
	return New(j.cfg, log, recorded)
}

// WithFixture returns a judge of the same run that answers from f instead of a model; it
// shares the run's log and recorded judgments.
func (j *Judge) WithFixture(f *Fixture) *Judge {
	return &Judge{cfg: j.cfg, fixture: f, http: j.http, log: j.log, recorded: j.recorded}
}

// NewReplay returns a judge that answers only from fixtures (no judge configured).
func NewReplay(log io.Writer, recorded []record.JudgeCall) *Judge {
	return New(Config{API: "replay", Model: "replay"}, log, recorded)
}

// Ready says why the judge cannot call its model (its key is not set), or nil.
func (j *Judge) Ready() error {
	if !j.Live() {
		return errors.New("no judge is configured: add judge: {api: anthropic|openai, model: ...} to ceval's config, or give the criterion a judge_fixture")
	}
	if j.cfg.Key == "" {
		return fmt.Errorf("the judge's key is not set: export %s in ceval's environment (judge.key_env in ceval's config names another variable)", j.cfg.KeyEnv)
	}
	return nil
}

// Live reports whether the judge can call a model.
func (j *Judge) Live() bool { return j.cfg.API == Anthropic || j.cfg.API == OpenAI }

// Judge asks for r.Samples verdicts (at least one) and returns their median. An error is a
// failure on ceval's side (the provider, the budget); a malformed answer is a Verdict.
func (j *Judge) Judge(ctx context.Context, r Request) (*Verdict, error) {
	system, user := Prompt(r)
	n := min(max(r.Samples, 1), MaxSamples)
	v := &Verdict{}
	var reasons []string
	for s := 0; s < n; s++ {
		score, why, raw, reused, err := j.sample(ctx, system, user, s)
		if err != nil {
			return nil, err
		}
		if raw != "" {
			v.Malformed = raw
			return v, nil
		}
		if reused {
			v.Reused++
		}
		v.Samples = append(v.Samples, score)
		reasons = append(reasons, why)
	}
	idx := make([]int, len(v.Samples))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v.Samples[idx[a]] < v.Samples[idx[b]] })
	m := len(idx) / 2
	if len(idx)%2 == 1 {
		v.Score, v.Reasons = v.Samples[idx[m]], reasons[idx[m]]
	} else {
		v.Score, v.Reasons = (v.Samples[idx[m-1]]+v.Samples[idx[m]])/2, reasons[idx[m]]
	}
	return v, nil
}

// InputDigest identifies a judge call's inputs.
func InputDigest(api, model, system, user string, sample int) string {
	h := sha256.New()
	for _, s := range []string{api, model, system, user, fmt.Sprint(sample)} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sample gets one valid verdict: a recorded one for the same inputs, else an answer, with
// one retry when the answer is not strict JSON. raw is set when both answers were not.
func (j *Judge) sample(ctx context.Context, system, user string, s int) (score float64, reasons, raw string, reused bool, err error) {
	api, model := j.cfg.API, j.cfg.Model
	if j.fixture != nil {
		api, model = "replay", "replay"
	}
	digest := InputDigest(api, model, system, user, s)
	if rec, ok := j.recorded[digest]; ok {
		rec.Time, rec.Mode, rec.DurationMS = time.Now().UTC().Format(time.RFC3339Nano), "reused", 0
		rec.CostUSD, rec.InputTokens, rec.OutputTokens = 0, 0, 0
		j.write(rec)
		return *rec.Score, rec.Reasons, "", true, nil
	}
	var prev string
	for attempt := 1; attempt <= 2; attempt++ {
		rec := record.JudgeCall{API: api, Model: model, InputSHA256: digest, Sample: s, Attempt: attempt, System: system, User: user}
		answer, err := j.ask(ctx, system, user, prev, &rec)
		if err != nil {
			rec.Error = err.Error()
			j.write(rec)
			return 0, "", "", false, err
		}
		rec.Answer = capText(answer, maxAnswerBytes)
		sc, why, perr := ParseAnswer(answer)
		if perr == nil {
			rec.Score, rec.Reasons = &sc, why
			j.write(rec)
			return sc, why, "", false, nil
		}
		rec.Error = "not a strict JSON verdict: " + perr.Error()
		j.write(rec)
		prev = answer
	}
	return 0, "", capText(prev, maxRawInDetails), false, nil
}

func (j *Judge) write(rec record.JudgeCall) {
	if j.log == nil {
		return
	}
	if rec.Time == "" {
		rec.Time = time.Now().UTC().Format(time.RFC3339Nano)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(rec) == nil {
		j.mu.Lock()
		_, _ = j.log.Write(b.Bytes())
		j.mu.Unlock()
	}
}

// ParseAnswer reads a strict verdict: one JSON object with a score in [0, 1] and reasons,
// nothing else around it and no other field.
func ParseAnswer(answer string) (float64, string, error) {
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(answer)))
	dec.DisallowUnknownFields()
	var v struct {
		Score   *float64 `json:"score"`
		Reasons *string  `json:"reasons"`
	}
	if err := dec.Decode(&v); err != nil {
		return 0, "", err
	}
	if dec.More() {
		return 0, "", errors.New("text after the JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, "", errors.New("text after the JSON object")
	}
	switch {
	case v.Score == nil || v.Reasons == nil:
		return 0, "", errors.New(`want both "score" and "reasons"`)
	case math.IsNaN(*v.Score) || *v.Score < 0 || *v.Score > 1:
		return 0, "", fmt.Errorf("score %v is not between 0 and 1", *v.Score)
	}
	return *v.Score, *v.Reasons, nil
}

const retryPrompt = "Your answer was not a valid verdict. Answer again with only one JSON object: " +
	`{"score": <number from 0 to 1>, "reasons": "<text>"}`

// ask makes one call (or takes the fixture's next answer) within the run's budget.
func (j *Judge) ask(ctx context.Context, system, user, prev string, rec *record.JudgeCall) (string, error) {
	start := time.Now()
	defer func() { rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000 }()
	j.mu.Lock()
	if j.calls >= j.cfg.MaxCalls || (j.cfg.MaxUSD > 0 && j.usd >= j.cfg.MaxUSD) {
		j.mu.Unlock()
		return "", fmt.Errorf("%w (judge.max_calls_per_run %d, judge.max_usd_per_run %g in ceval's config)", ErrBudget, j.cfg.MaxCalls, j.cfg.MaxUSD)
	}
	j.calls++
	if j.fixture != nil {
		defer j.mu.Unlock()
		rec.Mode = "replay"
		if j.next >= len(j.fixture.Answers) {
			return "", fmt.Errorf("the judge fixture has no answer left (it has %d)", len(j.fixture.Answers))
		}
		j.next++
		return j.fixture.Answers[j.next-1], nil
	}
	j.mu.Unlock()
	rec.Mode = "live"
	if err := j.Ready(); err != nil {
		return "", err
	}
	body, url := j.body(system, user, prev)
	ctx, cancel := context.WithTimeout(ctx, j.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if j.cfg.API == Anthropic {
		req.Header.Set("x-api-key", j.cfg.Key)
		req.Header.Set("anthropic-version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer "+j.cfg.Key)
	}
	resp, err := j.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("the judge model could not be reached: %v", j.scrub(err.Error()))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	rec.Status = resp.StatusCode
	if err != nil {
		return "", fmt.Errorf("read the judge's answer: %v", j.scrub(err.Error()))
	}
	if inputTooLong(resp.StatusCode, data) {
		return "", fmt.Errorf("%w: the judge model answered %d: %s", ErrInputTooLong, resp.StatusCode, capText(j.scrub(string(data)), 300))
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the judge model answered %d: %s", resp.StatusCode, capText(j.scrub(string(data)), 300))
	}
	text, in, out, err := answerText(j.cfg.API, data)
	rec.InputTokens, rec.OutputTokens = in, out
	cost := (float64(in)*j.cfg.InputPerMTok + float64(out)*j.cfg.OutputPerMTok) / 1e6
	rec.CostUSD = cost
	j.mu.Lock()
	j.usd += cost
	j.mu.Unlock()
	return text, err
}

func (j *Judge) scrub(s string) string {
	if j.cfg.Key != "" {
		s = strings.ReplaceAll(s, j.cfg.Key, "[redacted]")
	}
	return s
}

// body is the request of one call in the configured API; prev is a malformed answer to
// correct.
func (j *Judge) body(system, user, prev string) ([]byte, string) {
	base := strings.TrimRight(j.cfg.BaseURL, "/")
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	msgs := []msg{{"user", user}}
	if prev != "" {
		msgs = append(msgs, msg{"assistant", prev}, msg{"user", retryPrompt})
	}
	var v any
	if j.cfg.API == Anthropic {
		if base == "" {
			base = "https://api.anthropic.com"
		}
		v = map[string]any{"model": j.cfg.Model, "max_tokens": j.cfg.MaxTokens, "system": system, "messages": msgs, "temperature": 0}
		b, _ := json.Marshal(v)
		return b, base + "/v1/messages"
	}
	if base == "" {
		base = "https://api.openai.com"
	}
	v = map[string]any{"model": j.cfg.Model, "max_output_tokens": j.cfg.MaxTokens, "instructions": system, "input": msgs, "store": false}
	b, _ := json.Marshal(v)
	return b, base + "/v1/responses"
}

// answerText extracts the text and usage of an answer.
func answerText(api string, data []byte) (string, int64, int64, error) {
	var a struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return "", 0, 0, fmt.Errorf("the judge's answer is not an API response: %v", err)
	}
	var b strings.Builder
	if api == Anthropic {
		for _, c := range a.Content {
			if c.Type == "text" {
				b.WriteString(c.Text)
			}
		}
	} else {
		for _, o := range a.Output {
			for _, c := range o.Content {
				if o.Type == "message" && c.Type == "output_text" {
					b.WriteString(c.Text)
				}
			}
		}
	}
	return b.String(), a.Usage.InputTokens, a.Usage.OutputTokens, nil
}

func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
