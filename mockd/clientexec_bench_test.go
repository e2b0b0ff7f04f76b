package mockd

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"ceval.dev/ceval/internal/embedded"
)

// BenchmarkClientExec is a call as the agent pays for it, on the host: one exec of the real
// static client (the ceval-mock internal/embedded holds) per call against a Server, beside the
// same exec with no server (the client's process start and exit alone) and an exec of
// true (the baseline). Each reports its p50 and p99 besides ns/op.
func BenchmarkClientExec(b *testing.B) {
	client, err := embedded.Mock.Install(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	trueBin, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true on PATH")
	}
	sock := b.TempDir() + "/" + SocketName
	s, err := Start(Config{Socket: sock, Tools: map[string]Tool{"gh": {Fixture: mustFixture(b, ghFixture), MaxRequests: 10000}},
		AllowUID: uint32(os.Getuid()), LogPath: b.TempDir() + "/log"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name   string
		path   string
		argv   []string // argv[0] included: the client takes the tool from it
		socket string
		exit   int
	}{
		{"true", trueBin, []string{"true"}, "", 0},
		{"client-no-server", client, []string{"gh", "pr", "list"}, sock + ".absent", ExitUnavailable},
		{"client-call", client, []string{"gh", "pr", "list"}, sock, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				cmd := &exec.Cmd{Path: c.path, Args: c.argv}
				cmd.Env = []string{"CEVAL_MOCK_SOCKET=" + c.socket}
				t0 := time.Now()
				err := cmd.Run()
				took = append(took, time.Since(t0))
				if code := cmd.ProcessState.ExitCode(); code != c.exit {
					b.Fatalf("%v: exit %d (%v), want %d", c.argv, code, err, c.exit)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(took[(len(took)*99+99)/100-1].Nanoseconds()), "p99-ns")
		})
	}
}
