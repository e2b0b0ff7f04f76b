package importer

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Harbor's cookbook (multi-reward) writes reward.json from an inline program test.sh starts:
//
//	python3 -c "
//	import json
//	json.dump({'correctness': $correctness, ...}, open('/logs/verifier/reward.json', 'w'))
//	"
//
// harbor_reward counts only what test.sh's own shell writes, so the program's open fails.
// When the program is that shape (a python3 -c "..." block whose code opens the reward once,
// for writing, and never names it otherwise), the import rewrites the copy so the program
// writes the same bytes to its stdout and test.sh's shell redirects them into the reward:
// open(1, 'w') in place of the open, and > REWARD after the closing quote. What the program
// computes is untouched; only who opens the file changes.

// inlineRewardOpen is the program's one open of the reward for writing.
var inlineRewardOpen = regexp.MustCompile(`open\(\s*(['"])((?:/tmp)?/logs/verifier/reward\.(?:json|txt))(['"])\s*,\s*['"]w['"]\s*\)`)

// inlineRewardStart is a line that starts python3 -c " and leaves the quote open.
var inlineRewardStart = regexp.MustCompile(`^\s*python3?\s+-c\s+"\s*$`)

// inlineReward finds, in test.sh's text, a python3 -c "..." block (1-based start and end
// lines) whose code opens the reward once for writing; ok is false when there is none of
// that exact shape.
func inlineReward(text string) (start, end int, path string, ok bool) {
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if !inlineRewardStart.MatchString(lines[i]) {
			continue
		}
		j := i + 1
		for j < len(lines) && !strings.Contains(lines[j], `"`) {
			j++
		}
		if j >= len(lines) || strings.TrimSpace(lines[j]) != `"` {
			return 0, 0, "", false
		}
		body := strings.Join(lines[i+1:j], "\n")
		m := inlineRewardOpen.FindAllStringSubmatch(body, -1)
		if len(m) != 1 || m[0][1] != m[0][3] || strings.Count(body, "reward.") != 1 {
			return 0, 0, "", false
		}
		return i + 1, j + 1, m[0][2], true
	}
	return 0, 0, "", false
}

// rewriteInlineReward rewrites dst/tests/test.sh (the copy, its paths already rewritten) so
// the inline program's reward is written by test.sh's own shell; it reports whether it did.
func rewriteInlineReward(dst string) (bool, error) {
	p := filepath.Join(dst, "tests", "test.sh")
	info, err := os.Lstat(p)
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxInput {
		return false, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return false, err
	}
	start, end, path, ok := inlineReward(string(data))
	if !ok {
		return false, nil
	}
	lines := strings.Split(string(data), "\n")
	for i := start; i < end-1; i++ {
		lines[i] = inlineRewardOpen.ReplaceAllString(lines[i], "open(1, 'w')")
	}
	lines[end-1] = strings.TrimRight(lines[end-1], " \t") + " > " + path
	return true, os.WriteFile(p, []byte(strings.Join(lines, "\n")), info.Mode().Perm())
}

// inlineRewardAt says the reward named at test.sh's line (1-based) is in an inline program
// rewriteInlineReward rewrites.
func inlineRewardAt(data []byte, line int) bool {
	start, end, _, ok := inlineReward(string(data))
	return ok && line > start && line < end
}
