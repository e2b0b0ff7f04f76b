package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/mockd"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// mockSubdir is the run-private directory holding the mock socket, mounted read-only at
// /run/ceval: a sibling of the scratch directory, never inside anything the agent writes.
const mockSubdir = "mock"

// MockToolDirs are where each mocked tool's client is bound in the container, one file per
// tool so the image's other files there stay visible: /usr/local/bin leads the usual PATHs
// (login shells' /etc/profile included), /usr/bin is on the built-in PATH of a shell
// started with no environment at all.
var MockToolDirs = []string{"/usr/local/bin", "/usr/bin"}

// mockRun is the running mock server of one run.
type mockRun struct {
	server  *mockd.Server
	socket  string // the server's socket on this machine
	result  *record.MockResult
	stopped bool
}

// startMocks starts the run's mock server when the task has protected mocks: a socket in
// runDir/mock (0755, only the socket in it), serving only agentUID, logging to
// runDir/mock_calls.jsonl. It returns the mounts that show the agent the socket directory
// and one client per tool; the fixtures stay in this process.
func startMocks(t *task.Task, runDir, initDir string, agentUID uint32) (*mockRun, []oci.Mount, error) {
	if len(t.ProtectedMocks) == 0 {
		return nil, nil, nil
	}
	client, err := embedded.Mock.Install(initDir)
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(runDir, mockSubdir)
	// A leftover directory (a retried run) could hold anything: start from an empty one.
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, fmt.Errorf("mock directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("mock directory: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("mock directory: %w", err)
	}
	tools := map[string]mockd.Tool{}
	res := &record.MockResult{Log: record.MockCallsFile}
	mounts := []oci.Mount{{Source: dir, Destination: oci.CevalRunPath}}
	for _, m := range t.ProtectedMocks {
		tools[m.Tool] = mockd.Tool{Fixture: m.Fixture, MaxRequests: m.MaxRequests}
		res.Tools = append(res.Tools, m.Tool)
		for _, d := range MockToolDirs {
			mounts = append(mounts, oci.Mount{Source: client, Destination: d + "/" + m.Tool})
		}
	}
	sock := filepath.Join(dir, mockd.SocketName)
	s, err := mockd.Start(mockd.Config{
		Socket: sock, Tools: tools, AllowUID: agentUID,
		LogPath: filepath.Join(runDir, record.MockCallsFile),
	})
	if err != nil {
		return nil, nil, err
	}
	return &mockRun{server: s, socket: sock, result: res}, mounts, nil
}

// stop closes the server, records its counts and removes the socket directory; it is
// idempotent and a no-op on nil.
func (m *mockRun) stop(runDir string) error {
	if m == nil || m.stopped {
		return nil
	}
	m.stopped = true
	st, err := m.server.Close()
	m.result.Stats = st
	if rerr := os.RemoveAll(filepath.Join(runDir, mockSubdir)); err == nil {
		err = rerr
	}
	return err
}

// beforeStart points the peer check at the agent's UID as this process will see it: through
// the UID mappings of the created container's user namespace, read from its init (identity
// when it shares ours; the spec's or a rootless runtime's mappings otherwise).
func (m *mockRun) beforeStart(_ context.Context, pid uint32) error {
	if m == nil {
		return nil
	}
	maps, err := mockd.ReadUIDMap(int(pid))
	if err != nil {
		return fmt.Errorf("protected mocks: the agent container's UID mappings: %w", err)
	}
	return m.server.UseUIDMappings(maps)
}
