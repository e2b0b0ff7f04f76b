package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// SessionsDir is where a run keeps the agent CLI's own session files.
const SessionsDir = "agent_sessions"

// sessionDirs are, per agent type, the directories below the agent's home where its CLI
// writes its own transcripts: Claude Code's project sessions, Codex's rollout files.
var sessionDirs = map[string][]string{
	task.AgentClaudeCode: {".claude/projects"},
	task.AgentCodex:      {".codex/sessions"},
}

// sessionLimits bound what is copied: the home is the agent's, and so is what it holds.
var sessionLimits = snapshot.Limits{MaxFileBytes: 32 << 20, MaxTotalBytes: 128 << 20, MaxEntries: 10_000, MaxDepth: 16}

// copySessions copies the agent CLI's session files out of its home (a host directory the
// agent wrote) into the run directory, never following a link, before the home is
// unmounted. It returns the copied directories relative to the run directory and notes
// about what was left out; a missing directory is not an error (the CLI may have failed
// before writing one).
func copySessions(agentType, home, runDir string) (copied, notes []string, err error) {
	for _, rel := range sessionDirs[agentType] {
		out := filepath.Join(SessionsDir, filepath.FromSlash(rel))
		s, err := snapshot.TakeAt(home, rel, filepath.Join(runDir, out), sessionLimits)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return copied, notes, fmt.Errorf("copy the agent's session files %s: %w", rel, err)
		}
		copied = append(copied, filepath.ToSlash(out))
		if len(s.Notes) > 0 {
			n := s.Notes[0]
			notes = append(notes, fmt.Sprintf("agent session files in %s: %d entries left out or cut (first: %s: %s)", rel, len(s.Notes), n.Path, n.Reason))
		}
	}
	return copied, notes, nil
}
