package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/snapshot"
)

// outputFiles is where the copy of the output at container path p goes in runDir.
func outputFiles(runDir, p string) string {
	return filepath.Join(runDir, record.OutputsDir, "fs", filepath.FromSlash(strings.TrimPrefix(p, "/")))
}

// outputManifest is the manifest of output i in runDir.
func outputManifest(runDir string, i int) string {
	return filepath.Join(runDir, record.OutputsDir, strconv.Itoa(i)+".json")
}

// takeOutputs copies each of the task's sandbox.outputs (container paths, with their host
// directories dirs) out of the reaped container into runDir, by the workspace's snapshot
// rules and limits (no link followed; a cap leaves an entry omitted, never absent), and
// returns the copies and every cap they reached, named by output.
func takeOutputs(paths, dirs []string, runDir string) ([]snapshot.Output, []string, error) {
	return takeOutputsWith(paths, dirs, runDir, nil)
}

// outputTaker is a sandbox that copies its outputs out itself (the kubernetes backend
// streams each out of the Pod with the snapshot's rules): output i into dst.
type outputTaker interface {
	TakeOutput(ctx context.Context, i int, dst string, lim snapshot.Limits) (*snapshot.Snapshot, error)
}

// takeSandboxOutputs is takeOutputs of sb's outputs, copied by sb itself when it can.
func takeSandboxOutputs(ctx context.Context, paths []string, sb interface{ OutputDirs() []string }, runDir string) ([]snapshot.Output, []string, error) {
	if ot, ok := sb.(outputTaker); ok {
		return takeOutputsWith(paths, nil, runDir, func(i int, dst string) (*snapshot.Snapshot, error) {
			return ot.TakeOutput(ctx, i, dst, snapshot.DefaultLimits())
		})
	}
	return takeOutputs(paths, sb.OutputDirs(), runDir)
}

// takeOutputsWith is takeOutputs, copying output i with take when it is given.
func takeOutputsWith(paths, dirs []string, runDir string, take func(i int, dst string) (*snapshot.Snapshot, error)) ([]snapshot.Output, []string, error) {
	if len(paths) == 0 {
		return nil, nil, nil
	}
	if take == nil && len(dirs) != len(paths) {
		return nil, nil, fmt.Errorf("sandbox.outputs: this backend made %d of the task's %d outputs", len(dirs), len(paths))
	}
	var outs []snapshot.Output
	var hits []string
	for i, p := range paths {
		dst := outputFiles(runDir, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return nil, nil, fmt.Errorf("output %s: %w", p, err)
		}
		var s *snapshot.Snapshot
		var err error
		if take != nil {
			s, err = take(i, dst)
		} else {
			s, err = snapshot.Take(dirs[i], dst, snapshot.DefaultLimits())
		}
		if err != nil {
			return nil, nil, fmt.Errorf("output %s: %w", p, err)
		}
		if err := s.WriteManifestUnsynced(outputManifest(runDir, i)); err != nil {
			return nil, nil, fmt.Errorf("output %s: %w", p, err)
		}
		for _, h := range s.LimitsHit {
			hits = append(hits, "output "+p+": "+h)
		}
		outs = append(outs, snapshot.Output{Path: p, Snapshot: s})
	}
	return outs, hits, nil
}

// loadOutputs reads back the copies takeOutputs wrote for paths (a regrade).
func loadOutputs(paths []string, runDir string) ([]snapshot.Output, error) {
	var outs []snapshot.Output
	for i, p := range paths {
		s, err := snapshot.Load(outputFiles(runDir, p), outputManifest(runDir, i))
		if err != nil {
			return nil, fmt.Errorf("output %s (sandbox.outputs[%d]): %w", p, i, err)
		}
		outs = append(outs, snapshot.Output{Path: p, Snapshot: s})
	}
	return outs, nil
}
