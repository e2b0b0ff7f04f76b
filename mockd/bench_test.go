package mockd

import (
	"os"
	"testing"
	"time"
)

// BenchmarkRoundTrip is one call from a fresh connection to its answer, on the host.
func BenchmarkRoundTrip(b *testing.B) {
	s, err := Start(Config{Socket: b.TempDir() + "/" + SocketName, Tools: map[string]Tool{"gh": {Fixture: mustFixture(b, ghFixture), MaxRequests: 10000}},
		AllowUID: uint32(os.Getuid()), LogPath: b.TempDir() + "/log"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if _, err := Do(s.cfg.Socket, Request{Tool: "gh", Argv: []string{"pr", "list"}}, 5*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
