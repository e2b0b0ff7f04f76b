package grader

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"ceval.dev/ceval/task"
)

// CommandRun is what a run_command left behind in an executor that runs real processes
// (a verifier container): everything here came from code the agent wrote, so it is only
// ever scored, never trusted.
type CommandRun struct {
	ExitCode int
	Stdout   []byte // capped by the executor
	Stderr   []byte // capped by the executor
	// Limit names the limit that stopped the command ("" when it exited by itself), in
	// words for the details: "timeout: still running after 30s; stopped".
	Limit string
	// Notes are added to the details (a cap reached on the way, such as the output cap).
	Notes []string
}

// Scored is how an executed criterion scored.
type Scored struct {
	Score   float64
	Details string
	// Rewards are the named rewards a score_from_stdout command printed as a JSON object
	// (Harbor's reward.json), nil for a single number or another rule.
	Rewards map[string]float64
	// Invalid is set when the command's output broke the scoring rule it is held to (a
	// score_from_stdout that is no number in [0, 1]): the criterion fails whatever its
	// pass_threshold.
	Invalid bool
	// Output is what the command printed, as the executor kept it (nil when it keeps none):
	// the details of a criterion that did not pass quote its tail, and ceval run saves it.
	Output *Output
}

// excerptBytes is how much of a stream the details of a command quote.
const excerptBytes = 300

// ScoreCommand scores a run_command the way the WASM sandbox does: a limit that stopped it
// scores 0, so does an exit code other than expected_exit_code (default 0); then
// expected_stdout (exact, ignoring trailing newlines; contains; regex) or score_from_stdout
// (the first line of stdout, a number in [0, 1], or a JSON object of named rewards: see
// scoreRewards) decides; with neither, the exit code alone does. Only an expected_stdout regex
// that does not compile is an error: the task's fault.
func ScoreCommand(c *task.Criterion, r CommandRun) (Scored, error) {
	sc := c.StdoutScoring()
	if sc == nil { // pytest: scored by its exit status alone
		sc = &task.StdoutScoring{}
	}
	details := func(format string, args ...any) string {
		d := fmt.Sprintf(format, args...)
		if len(r.Stderr) > 0 {
			d += "; stderr " + quoteTail(r.Stderr)
		}
		if len(r.Notes) > 0 {
			d += "; " + strings.Join(r.Notes, "; ")
		}
		return d
	}
	fail := func(format string, args ...any) (Scored, error) {
		return Scored{Details: details(format, args...)}, nil
	}
	invalid := func(format string, args ...any) (Scored, error) {
		return Scored{Details: details(format, args...), Invalid: true}, nil
	}
	if r.Limit != "" {
		return fail("%s", r.Limit)
	}
	if r.ExitCode != sc.ExpectedExitCode {
		return fail("exit code %d, want %d; stdout %s", r.ExitCode, sc.ExpectedExitCode, quote(string(r.Stdout), excerptBytes))
	}
	note := ""
	if len(r.Notes) > 0 {
		note = "; " + strings.Join(r.Notes, "; ")
	}
	stdout := string(r.Stdout)
	switch {
	case sc.ExpectedStdout != nil:
		want := *sc.ExpectedStdout
		var ok bool
		switch sc.StdoutMatch {
		case "", "exact":
			ok = strings.TrimRight(stdout, "\n") == strings.TrimRight(want, "\n")
		case "contains":
			ok = strings.Contains(stdout, want)
		case "regex":
			re, err := regexp.Compile(want)
			if err != nil {
				return Scored{}, fmt.Errorf("expected_stdout regex: %w", err)
			}
			ok = re.MatchString(stdout)
		default:
			return Scored{}, fmt.Errorf("unknown stdout_match %q", sc.StdoutMatch)
		}
		match := sc.StdoutMatch
		if match == "" {
			match = "exact"
		}
		if !ok {
			return fail("stdout %s does not match (%s) %s", quote(stdout, excerptBytes), match, quote(want, excerptBytes))
		}
		return Scored{Score: 1, Details: fmt.Sprintf("exit code %d; stdout matches (%s)%s", r.ExitCode, match, note)}, nil
	case sc.ScoreFromStdout && strings.HasPrefix(strings.TrimSpace(stdout), "{"):
		rewards, err := parseRewards(stdout)
		if err != nil {
			return invalid("score_from_stdout: %v", err)
		}
		v, rule, err := scoreRewards(rewards, sc.RewardKey)
		if err != nil {
			return invalid("score_from_stdout: %v", err)
		}
		return Scored{Score: v, Rewards: rewards, Details: fmt.Sprintf("exit code %d; rewards %s; score %s (%s)%s",
			r.ExitCode, formatRewards(rewards), formatScore(v), rule, note)}, nil
	case sc.ScoreFromStdout:
		line, _, _ := strings.Cut(stdout, "\n")
		v, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
			return invalid("score_from_stdout: the first line of stdout is %s, not a number from 0 to 1", quote(line, excerptBytes))
		}
		if sc.RewardKey != "" {
			return invalid("score_from_stdout: reward_key %q names a reward, but stdout is the single number %s, not named rewards", sc.RewardKey, formatScore(v))
		}
		return Scored{Score: v, Details: fmt.Sprintf("exit code %d; score %s from stdout%s", r.ExitCode, formatScore(v), note)}, nil
	}
	return Scored{Score: 1, Details: fmt.Sprintf("exit code %d%s", r.ExitCode, note)}, nil
}

// maxRewards and maxRewardName bound the named rewards one criterion keeps: the verifier's
// output can be the agent's.
const (
	maxRewards    = 64
	maxRewardName = 128
)

// parseRewards reads stdout as one JSON object of named rewards, each a number in [0, 1]:
// anything else (a string, NaN, a nested object, a repeated name, trailing text) is refused.
func parseRewards(stdout string) (map[string]float64, error) {
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("stdout %s is not a JSON object of named rewards", quote(stdout, excerptBytes))
	}
	rewards := map[string]float64{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("named rewards: %v", err)
		}
		name := t.(string) // an object's key is always a string
		if len(name) > maxRewardName {
			return nil, fmt.Errorf("reward %s: a name longer than %d bytes", quote(name, 80), maxRewardName)
		}
		t, err = dec.Token()
		if err != nil {
			return nil, fmt.Errorf("named rewards: %v", err)
		}
		n, ok := t.(json.Number)
		if !ok {
			return nil, fmt.Errorf("reward %s is %s, not a number from 0 to 1", quote(name, 80), describeToken(t))
		}
		v, err := n.Float64()
		if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
			return nil, fmt.Errorf("reward %s is %s, not a number from 0 to 1", quote(name, 80), n)
		}
		if _, dup := rewards[name]; dup {
			return nil, fmt.Errorf("reward %s is given twice", quote(name, 80))
		}
		if len(rewards) == maxRewards {
			return nil, fmt.Errorf("more than %d named rewards", maxRewards)
		}
		rewards[name] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("named rewards: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("stdout has more after the object of named rewards")
	}
	if len(rewards) == 0 {
		return nil, fmt.Errorf("stdout is an empty object: no named reward")
	}
	return rewards, nil
}

func describeToken(t json.Token) string {
	switch t := t.(type) {
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "the string " + quote(t, 80)
	case bool:
		return strconv.FormatBool(t)
	case nil:
		return "null"
	}
	return fmt.Sprint(t)
}

// scoreRewards is the score of named rewards: the one key names, else their mean; and the
// rule in words.
func scoreRewards(rewards map[string]float64, key string) (float64, string, error) {
	if key != "" {
		v, ok := rewards[key]
		if !ok {
			return 0, "", fmt.Errorf("reward_key %q is not among the rewards %s", key, formatRewards(rewards))
		}
		return v, "reward_key " + key, nil
	}
	var sum float64
	for _, n := range rewardNames(rewards) { // one order, so one sum
		sum += rewards[n]
	}
	return sum / float64(len(rewards)), fmt.Sprintf("mean of %d", len(rewards)), nil
}

// formatRewards lists named rewards by name: "correctness=1, performance=0.5".
func formatRewards(rewards map[string]float64) string {
	names := rewardNames(rewards)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = quote(n, 80) + "=" + formatScore(rewards[n])
	}
	return strings.Join(parts, ", ")
}

func rewardNames(rewards map[string]float64) []string {
	names := make([]string, 0, len(rewards))
	for n := range rewards {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func formatScore(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func quoteTail(b []byte) string {
	s := strings.TrimRight(string(b), "\n")
	if len(s) > excerptBytes {
		return fmt.Sprintf("…%q", s[len(s)-excerptBytes:])
	}
	return fmt.Sprintf("%q", s)
}
