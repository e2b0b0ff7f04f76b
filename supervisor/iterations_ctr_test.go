package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
)

// TestCommandAgentFixesItsOutputAfterFeedback runs, against the real containerd, a command
// agent that writes the wrong answer until its prompt file holds the failed criterion's
// description: SUCCESS at iteration 2, with iteration 1's snapshot and logs kept, both
// containers attested, and the second agent seeing the first one's home.
func TestCommandAgentFixesItsOutputAfterFeedback(t *testing.T) {
	script := `echo "iteration $CEVAL_ITERATION"; ` +
		`if grep -q "answer.txt holds the answer" "$CEVAL_PROMPT_FILE"; then echo right > answer.txt; else echo wrong > answer.txt; fi; ` +
		`echo "$CEVAL_ITERATION" >> /home/agent/seen`
	doc := agentTask("fixes", script, "  - {type: file_contains, path: answer.txt, includes: [right], description: answer.txt holds the answer}\n",
		"iterations: {max: 3, feedback: descriptions}\n")
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" || res.IterationsUsed != 2 || len(res.Iterations) != 2 || res.Iterations[0].Status != "FAILURE" || res.Iterations[0].Score != 0 {
		t.Fatalf("status %s, iterations %+v", res.Status, res.Iterations)
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(res.Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("iterations/1/workspace/answer.txt"); got != "wrong\n" {
		t.Errorf("iteration 1's snapshot: %q", got)
	}
	if got := read("workspace/answer.txt"); got != "right\n" {
		t.Errorf("iteration 2's snapshot: %q", got)
	}
	if got := read("iterations/1/" + record.StdoutFile); got != "iteration 1\n" {
		t.Errorf("iteration 1's stdout: %q", got)
	}
	if got := read(record.StdoutFile); got != "iteration 2\n" {
		t.Errorf("iteration 2's stdout: %q", got)
	}
	r1, err := record.ReadResult(filepath.Join(res.Dir, "iterations", "1"))
	if err != nil || r1.Status != "FAILURE" {
		t.Fatalf("iterations/1/result.json: %+v %v", r1, err)
	}
	if res.Isolation == nil || res.Isolation.UID != 2000 || res.Isolation.CapEff != "0000000000000000" {
		t.Errorf("the second container's attestation: %+v", res.Isolation)
	}
	events := read(record.EventsFile)
	if n := strings.Count(events, `"attested"`); n != 2 {
		t.Errorf("%d attestations in events, want one per container", n)
	}
}

// TestSimulatedUserConversationInReplay runs a command agent under a simulated user whose
// answers come from a replay fixture: the user's first answer becomes the agent's second
// prompt, its second ends the conversation; the calls are recorded with what the model was
// shown (the instructions and the agent's last message, framed as untrusted).
func TestSimulatedUserConversationInReplay(t *testing.T) {
	script := `cat "$CEVAL_PROMPT_FILE" > "msg-$CEVAL_ITERATION.txt"; echo "I did iteration $CEVAL_ITERATION"`
	files := map[string]string{"user.yaml": "answers:\n  - {done: false, prompt: \"Please also write a haiku.\"}\n  - {done: true}\n"}
	doc := agentTask("conv", script, "  - {type: file_exists, path: haiku.txt, description: haiku.txt exists}\n",
		"simulated_user: {instructions: \"You want a haiku about the sea.\", max_turns: 5, fixture: user.yaml}\n")
	res, err := runTask(t, doc, files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.IterationsUsed != 2 || res.Iterations[1].Prompt != PromptSimulatedUser || res.Iterations[1].Over != "the simulated user ended the conversation" {
		t.Fatalf("iterations %+v", res.Iterations)
	}
	got, err := os.ReadFile(filepath.Join(res.Dir, "workspace", "msg-2.txt"))
	if err != nil || string(got) != "Please also write a haiku." {
		t.Fatalf("the second prompt: %q %v", got, err)
	}
	calls, err := os.ReadFile(filepath.Join(res.Dir, SimulatedUserCallsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "You want a haiku about the sea.") || !strings.Contains(lines[0], "I did iteration 1") ||
		!strings.Contains(lines[1], "I did iteration 2") || !strings.Contains(lines[0], `"mode":"replay"`) {
		t.Fatalf("simulated user calls:\n%s", calls)
	}
}
