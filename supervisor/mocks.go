package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"ceval.dev/ceval/mockd"
	"ceval.dev/ceval/mockd/clientbin"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/task"
)

// MockCallsFile is the protected mocks' call log in a run directory.
const MockCallsFile = "mock_calls.jsonl"

// mockSubdir is the run-private directory holding the mock socket, mounted read-only at
// /run/ceval: a sibling of the scratch directory, never inside anything the agent writes.
const mockSubdir = "mock"

// MockToolDirs are where each mocked tool's client is bound in the container, one file per
// tool so the image's other files there stay visible: /usr/local/bin leads the usual PATHs
// (login shells' /etc/profile included), /usr/bin is on the built-in PATH of a shell
// started with no environment at all.
var MockToolDirs = []string{"/usr/local/bin", "/usr/bin"}

// MockResult is result.json's record of the protected mocks.
type MockResult struct {
	Tools []string    `json:"tools"`
	Log   string      `json:"log"` // file name in the run directory
	Stats mockd.Stats `json:"stats"`
}

// mockRun is the running mock server of one run.
type mockRun struct {
	server  *mockd.Server
	result  *MockResult
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
	client, err := clientbin.Install(initDir)
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
	res := &MockResult{Log: MockCallsFile}
	mounts := []oci.Mount{{Source: dir, Destination: oci.CevalRunPath}}
	for _, m := range t.ProtectedMocks {
		tools[m.Tool] = mockd.Tool{Fixture: m.Fixture, MaxRequests: m.MaxRequests}
		res.Tools = append(res.Tools, m.Tool)
		for _, d := range MockToolDirs {
			mounts = append(mounts, oci.Mount{Source: client, Destination: d + "/" + m.Tool})
		}
	}
	uidMaps, err := agentUIDMappings()
	if err != nil {
		return nil, nil, err
	}
	s, err := mockd.Start(mockd.Config{
		Socket: filepath.Join(dir, mockd.SocketName), Tools: tools, AllowUID: agentUID, UIDMappings: uidMaps,
		LogPath: filepath.Join(runDir, MockCallsFile),
	})
	if err != nil {
		return nil, nil, err
	}
	return &mockRun{server: s, result: res}, mounts, nil
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

// agentUIDMappings returns the UID mappings of the user namespace the agent's container gets:
// those of the spec oci.SpecOpts builds (the sandbox's own), none when it shares the host's.
// The peer UID the mock server sees is the agent's UID through them (mockd.HostUID). They
// depend on none of the run's paths or limits, so a stand-in config shows them.
func agentUIDMappings() ([]specs.LinuxIDMapping, error) {
	s, err := oci.Generate(context.Background(), oci.Config{
		RunID: "mock-uid-mappings", PID: os.Getpid(), BootID: "mock-uid-mappings", Args: []string{"/bin/true"},
		WorkspaceDir: "/", HomeDir: "/", InitPath: "/",
	})
	if err != nil {
		return nil, fmt.Errorf("the agent container's user namespace: %w", err)
	}
	if s.Linux == nil {
		return nil, nil
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.UserNamespace && (ns.Path != "" || len(s.Linux.UIDMappings) == 0) {
			return nil, errors.New("the agent's container joins a user namespace whose UID mappings its spec does not state: " +
				"the mock server cannot tell the agent's UID on the host; give the spec linux.uidMappings")
		}
	}
	return s.Linux.UIDMappings, nil
}
