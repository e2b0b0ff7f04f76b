package kube

import (
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"ceval.dev/ceval/snapshot"
)

// Exec runs cmd in the run's agent container through the API server (WebSocket exec stream),
// with stdin (nil for none) and stdout/stderr, and returns when it exits. The process gets
// the container's security context: it is as unprivileged as the agent. A non-zero exit is
// an error.
func (r *Run) Exec(ctx context.Context, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	req := r.cluster.Clientset.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(r.Namespace).Name(r.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: ContainerName,
			Command:   cmd,
			Stdin:     stdin != nil,
			Stdout:    stdout != nil,
			Stderr:    stderr != nil,
		}, scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(r.cluster.RESTConfig, "GET", req.URL().String())
	if err != nil {
		return fmt.Errorf("exec %q in pod %s/%s: %w", cmd, r.Namespace, r.Name, err)
	}
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr}); err != nil {
		return fmt.Errorf("exec %q in pod %s/%s: %w", cmd, r.Namespace, r.Name, err)
	}
	return nil
}

// CopyIn unpacks the tar stream r into dir in the Pod (tar run there, as the agent).
func (r *Run) CopyIn(ctx context.Context, dir string, tarStream io.Reader) error {
	var stderr limitedBuffer
	if err := r.Exec(ctx, []string{"tar", "-C", dir, "-xf", "-"}, tarStream, io.Discard, &stderr); err != nil {
		return fmt.Errorf("copy into %s: %w (tar: %s)", dir, err, stderr.String())
	}
	return nil
}

// CopyOut streams dir out of the Pod as tar and snapshots it into dst with SnapshotTar's
// rules (the stream is hostile; see there). Faults of the stream, and a tar in the Pod that
// failed, are notes with the root marked Omitted; the error is for the controller's side.
func (r *Run) CopyOut(ctx context.Context, dir, dst string, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	pr, pw := io.Pipe()
	var stderr limitedBuffer
	done := make(chan error, 1)
	go func() {
		err := r.Exec(ctx, []string{"tar", "-C", dir, "-cf", "-", "."}, nil, pw, &stderr)
		pw.CloseWithError(err)
		done <- err
	}()
	s, err := SnapshotTar(pr, dst, lim)
	pr.CloseWithError(io.ErrClosedPipe) // a snapshot stopped by a cap ends the stream
	execErr := <-done
	if err != nil {
		return nil, err
	}
	if execErr != nil && !s.Truncated {
		// e.g. a file the agent made unreadable: tar leaves it out and fails, and what it
		// left out must not look absent
		why := fmt.Sprintf("tar in the Pod failed (%v: %s); other names may exist", execErr, strings.TrimSpace(stderr.String()))
		s.RootOmitted = why
		s.Notes = append(s.Notes, snapshot.Note{Path: ".", Reason: why})
	}
	return s, nil
}

// limitedBuffer keeps the first 4 KiB written to it (a remote tar's stderr, for errors).
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
