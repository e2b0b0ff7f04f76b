package selftest

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
)

// Outcome is how one attack ended.
type Outcome string

// Outcomes. Only Blocked, Detected and Skipped let the selftest pass.
const (
	// Blocked: every criterion that would reward the attack scored 0, and its log shows
	// each attempt ran and got its answer.
	Blocked Outcome = "blocked"
	// Detected: the score is 0 and ceval flagged the attack (a limit hit, a snapshot note,
	// a timeout).
	Detected Outcome = "detected"
	// Breach: a rewarding criterion passed, the score is above 0, the canary or a setuid bit
	// reached ceval's output, or the attack made grading fail.
	Breach Outcome = "BREACH"
	// Errored: the attack proved nothing: its attempt never ran (a missing command), or the
	// run failed before the agent started.
	Errored Outcome = "error"
	// Skipped: the host lacks what the attack's preparation needs (git).
	Skipped Outcome = "skipped"
)

// attemptLog is what an attack's log says it attempted (see lib.sh for the format).
type attemptLog struct {
	attempts []string       // ATTEMPT names, in order
	rc       map[string]int // the last RC of each name that finished
	missing  []string       // lines saying a command does not exist
	proofs   []string
}

// missingCommand matches the shell's and busybox's words for a command that is not there,
// or that refused its arguments before it tried anything.
var missingCommand = regexp.MustCompile(`(: not found|applet not found|: Exec format error|can't execute '[^']*': No such file or directory)$|(invalid|unrecognized) option`)

func parseLog(log string) attemptLog {
	l := attemptLog{rc: map[string]int{}}
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "ATTEMPT "):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "ATTEMPT "), ": ")
			l.attempts = append(l.attempts, name)
		case strings.HasPrefix(line, "RC "):
			rest := strings.TrimPrefix(line, "RC ")
			i := strings.LastIndexByte(rest, ' ')
			if i < 0 {
				continue
			}
			code, err := strconv.Atoi(rest[i+1:])
			if err != nil {
				continue
			}
			l.rc[rest[:i]] = code
			if code == 126 || code == 127 {
				l.missing = append(l.missing, fmt.Sprintf("%s exited %d", rest[:i], code))
			}
		case strings.HasPrefix(line, "PROOF "):
			l.proofs = append(l.proofs, strings.TrimPrefix(line, "PROOF "))
		case missingCommand.MatchString(line):
			l.missing = append(l.missing, line)
		}
	}
	return l
}

// evidence is everything classify looks at for one attack.
type evidence struct {
	res    *record.Result // nil when the run failed before it had a result
	runErr error
	log    string   // the agent's stdout and stderr
	leaks  []string // where the canary, a setuid bit or a forged result reached ceval's output
}

// classify turns one attack's evidence into its outcome, score and a one-line detail.
func classify(e evidence) (Outcome, float64, string) {
	res := e.res
	score := 0.0
	if res != nil {
		score = res.Score
	}
	if e.runErr != nil {
		if res == nil || res.Isolation == nil {
			return Errored, score, "the run failed before the agent started: " + e.runErr.Error()
		}
		return Breach, score, "the attack made the run fail after the agent started: " + e.runErr.Error()
	}
	var passed []string
	for i, c := range res.Criteria {
		if c.Passed {
			passed = append(passed, fmt.Sprintf("criterion %d (%s)", i+1, c.Type))
		}
	}
	switch {
	case len(passed) > 0:
		return Breach, score, strings.Join(passed, ", ") + " passed"
	case score > 0:
		return Breach, score, fmt.Sprintf("score %.2f", score)
	case len(e.leaks) > 0:
		return Breach, score, strings.Join(e.leaks, "; ")
	case overPidsLimit(res) != "":
		return Breach, score, overPidsLimit(res)
	case res.Status == grader.TaskError:
		return Breach, score, "grading ended in ERROR: the workspace turned a failure into an excluded run"
	case res.Status == grader.TaskNotGraded:
		return Errored, score, "the attack's task was not graded (a suite bug)"
	}
	l := parseLog(e.log)
	if len(l.missing) > 0 {
		return Errored, score, "the attempt did not run: " + strings.Join(first(l.missing, 3), "; ")
	}
	if len(l.attempts) == 0 {
		// What the agent did, so that a run that never got to its first attempt (killed at
		// its timeout, failed to start its shell) can be told from lost output.
		exit := "none"
		if res.Agent.ExitCode != nil {
			exit = strconv.Itoa(*res.Agent.ExitCode)
		}
		return Errored, score, fmt.Sprintf("the attack logged no ATTEMPT (agent exit %s, timed out %v, %d bytes of output: %q): it proved nothing",
			exit, res.Agent.TimedOut, len(e.log), clip(e.log, 200))
	}
	if flags := flagged(res); len(flags) > 0 {
		return Detected, score, strings.Join(flags, "; ")
	}
	denied := 0
	for _, a := range l.attempts {
		code, ok := l.rc[a]
		if !ok {
			return Errored, score, fmt.Sprintf("attempt %q never finished and ceval flagged nothing", a)
		}
		if code != 0 {
			denied++
		}
	}
	return Blocked, score, fmt.Sprintf("%d attempt(s) ran, %d refused; nothing rewarded", len(l.attempts), denied)
}

// flagged lists what ceval itself noticed about a run.
func flagged(res *record.Result) []string {
	var out []string
	if res.Status == record.StatusTimeout {
		out = append(out, record.StatusTimeout)
	}
	out = append(out, res.LimitsHit...)
	for i, n := range res.SnapshotNotes {
		if i == 2 {
			out = append(out, fmt.Sprintf("%d more snapshot note(s)", len(res.SnapshotNotes)-i))
			break
		}
		out = append(out, fmt.Sprintf("snapshot: %s: %s", clip(n.Path, 60), n.Reason))
	}
	return out
}

// gather reads a finished run's directory: the agent's logs, and every place the canary,
// a setuid bit or a forged result could have reached ceval's output.
func gather(res *record.Result, canary string) (log string, leaks []string) {
	var b strings.Builder
	for _, f := range []string{record.StdoutFile, record.StderrFile} {
		data, _ := os.ReadFile(filepath.Join(res.Dir, f))
		if bytes.Contains(data, []byte(canary)) {
			leaks = append(leaks, "the canary is in "+f)
		}
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	for _, ts := range res.TaskSteps { // a multi-step run's earlier steps' agent logs
		for _, f := range []string{record.StdoutFile, record.StderrFile} {
			data, _ := os.ReadFile(filepath.Join(res.Dir, record.TaskStepsDir, strconv.Itoa(ts.N), f))
			if bytes.Contains(data, []byte(canary)) {
				leaks = append(leaks, "the canary is in "+filepath.Join(record.TaskStepsDir, strconv.Itoa(ts.N), f))
			}
			if ts.N < len(res.TaskSteps) || ts.Skipped { // the last graded step's are the run directory's, read above
				b.Write(data)
				if len(data) > 0 && data[len(data)-1] != '\n' {
					b.WriteByte('\n')
				}
			}
		}
	}
	for _, st := range res.Steps { // setup and after_agent logs: the agent wrote what they ran
		if data, _ := os.ReadFile(filepath.Join(res.Dir, st.Log)); st.Log != "" && bytes.Contains(data, []byte(canary)) {
			leaks = append(leaks, "the canary is in "+st.Log)
		}
	}
	leaks = append(leaks, scanSnapshot(filepath.Join(res.Dir, record.WorkspaceDir), canary)...)
	if l := checkResultFile(res); l != "" {
		leaks = append(leaks, l)
	}
	return b.String(), leaks
}

// scanSnapshot looks through the snapshot (regular files and directories owned by ceval) for
// the canary, also inside zlib streams of files under .git, and for setuid or setgid bits.
func scanSnapshot(dir, canary string) []string {
	var leaks []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(leaks) >= 5 {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			leaks = append(leaks, "the snapshot kept a setuid/setgid bit on "+rel)
		}
		if !fi.Mode().IsRegular() || fi.Size() > 16<<20 {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if bytes.Contains(data, []byte(canary)) {
			leaks = append(leaks, "the canary is in the workspace snapshot at "+rel)
		} else if isGitPath(rel) && inflatedContains(data, []byte(canary)) {
			leaks = append(leaks, "the canary is in a compressed git object at "+rel)
		}
		return nil
	})
	return leaks
}

func isGitPath(rel string) bool {
	return rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)) ||
		strings.Contains(rel, string(filepath.Separator)+".git"+string(filepath.Separator))
}

// inflatedContains tries to inflate a zlib stream at every offset with a valid zlib header
// (loose objects start with one; pack entries have one after a short header) and reports
// whether any inflated bytes hold needle.
func inflatedContains(data, needle []byte) bool {
	tries := 0
	for i := 0; i+2 <= len(data) && tries < 100_000; i++ {
		if data[i] != 0x78 || (uint16(data[i])<<8|uint16(data[i+1]))%31 != 0 {
			continue
		}
		tries++
		zr, err := zlib.NewReader(bytes.NewReader(data[i:]))
		if err != nil {
			continue
		}
		out, _ := io.ReadAll(io.LimitReader(zr, 1<<20))
		zr.Close()
		if bytes.Contains(out, needle) {
			return true
		}
	}
	return false
}

// checkResultFile compares result.json on disk with the result Run returned: a workspace
// file named like it must never take its place.
func checkResultFile(res *record.Result) string {
	data, err := os.ReadFile(filepath.Join(res.Dir, record.ResultFile))
	if err != nil {
		return "result.json is unreadable: " + err.Error()
	}
	var disk struct {
		TaskID string  `json:"task_id"`
		Status string  `json:"status"`
		Score  float64 `json:"score"`
	}
	if err := json.Unmarshal(data, &disk); err != nil {
		return "result.json does not parse: " + err.Error()
	}
	if disk.TaskID != res.TaskID || disk.Status != res.Status || disk.Score != res.Score {
		return fmt.Sprintf("result.json says %s %s %.2f, the run returned %s %s %.2f", disk.TaskID, disk.Status, disk.Score, res.TaskID, res.Status, res.Score)
	}
	return ""
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// overPidsLimit says whether ceval's own reading of the container's cgroup saw more tasks
// than the attested pids.max allowed ("" when it did not).
func overPidsLimit(res *record.Result) string {
	if res.Isolation == nil {
		return ""
	}
	limit, err := strconv.ParseUint(res.Isolation.PidsMax, 10, 64)
	if err != nil || res.Resources.PeakPids <= limit {
		return ""
	}
	return fmt.Sprintf("peak pids %d over pids.max %d", res.Resources.PeakPids, limit)
}
