package launcher_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
)

// A caller's context cancelled while containerd creates the task (Ctrl-C while an experiment
// prepares a run ahead) must leave nothing, and the same ID must create again (a resumed
// experiment retries the run under its ID). The interceptor cancels the caller's context
// once the task's shim process exists, mid-call, and fails the test if that cancelled the
// call (then what containerd leaves depends on where it was: a shim left running was seen
// here with the cancellation 4 ms after the shim appeared). Found by CI: containerd 1.6 left the shim's
// bundle directory of a Create whose call was cancelled, and the resumed run failed with
// "failed to start shim: mkdir .../io.containerd.runtime.v2.task/NS/ID: file exists".
func TestTaskCreateCancelledMidCallLeavesNothingAndItsIDCreatesAgain(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	for i, tries := 0, 0; i < 3; tries++ {
		if tries == 10 {
			t.Fatalf("%d of 10 creates ended before their shim was seen: the cancellation never came mid-call", 10-i)
		}
		s := newSandbox(t, "echo", "again")
		opts, _ := oci.SpecOpts(s.cfg)
		id := s.cfg.RunID
		cctx, cancel := context.WithCancel(ctx)
		var callCancelled error
		tooLate := false
		midCall := grpc.WithUnaryInterceptor(func(ictx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, o ...grpc.CallOption) error {
			if method != "/containerd.services.tasks.v1.Tasks/Create" {
				return invoker(ictx, method, req, reply, cc, o...)
			}
			done := make(chan error, 1)
			go func() { done <- invoker(ictx, method, req, reply, cc, o...) }()
			// containerd is mid-create once the task's shim runs.
			for end := time.Now().Add(time.Minute); len(shimsOf(ctrtest.Namespace, id)) == 0; time.Sleep(time.Millisecond) {
				select {
				case err := <-done:
					tooLate = true // under load the create can end before the scan of /proc sees its shim
					return err
				default:
				}
				if time.Now().After(end) {
					t.Error("no shim started for the task in a minute")
					break
				}
			}
			cancel()
			err := <-done
			if status.Code(err) == codes.Canceled {
				callCancelled = err
			}
			return err
		})
		lc, err := client.New(launcher.AddressFromEnv(), client.WithDefaultNamespace(ctrtest.Namespace), client.WithDialOpts([]grpc.DialOption{
			midCall, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(dctx context.Context, addr string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(dctx, "unix", launcher.AddressFromEnv())
			})}))
		if err != nil {
			t.Fatal(err)
		}
		defer lc.Close()
		ctr, err := launcher.Create(ctx, lc, launcher.Spec{ID: id, Image: busyboxImage(t, c, ctx), Opts: opts, Labels: oci.Labels(s.cfg)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = ctr.CreateTask(cctx, nil)
		cancel()
		if tooLate {
			t.Logf("attempt %d: the create ended before its shim was seen (%v): not cancelled mid-call; again", i, err)
			dctx, dcancel := launcher.CleanupContext(ctx)
			if err := ctr.Delete(dctx); err != nil {
				t.Fatalf("attempt %d: delete: %v", i, err)
			}
			dcancel()
			continue
		}
		if callCancelled != nil {
			t.Errorf("attempt %d: the caller's cancellation cancelled containerd's task create mid-call (%v): containerd 1.6 may leave its shim or bundle", i, callCancelled)
		}
		if err == nil || !strings.Contains(err.Error(), "context canceled") {
			t.Fatalf("attempt %d: CreateTask: %v, want the caller's cancellation", i, err)
		}
		dctx, dcancel := launcher.CleanupContext(ctx)
		if err := ctr.Delete(dctx); err != nil {
			t.Fatalf("attempt %d: delete: %v", i, err)
		}
		dcancel()
		if _, err := c.ContainerService().Get(ctx, id); !errdefs.IsNotFound(err) {
			t.Fatalf("attempt %d: the container is left: %v", i, err)
		}
		for end := time.Now().Add(30 * time.Second); len(shimsOf(ctrtest.Namespace, id)) > 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("attempt %d: the task's shim still runs 30 s after its deletion: %v", i, shimsOf(ctrtest.Namespace, id))
			}
		}
		noLeases(t, c, ctx)

		// The retry: the same ID, the same spec, on an uncancelled context.
		if r := s.run(t, c, ctx, nil); r.exit.Code != 0 || r.stdout != "again\n" {
			t.Errorf("attempt %d: the retry: exit %+v, stdout %q", i, r.exit, r.stdout)
		}
		i++
	}
}

// shimsOf lists the PIDs of the containerd shims (runc v2) started for container id in
// namespace ns.
func shimsOf(ns, id string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte("containerd-shim")) {
			continue
		}
		if bytes.Contains(b, []byte("\x00-namespace\x00"+ns+"\x00")) && bytes.Contains(b, []byte("\x00-id\x00"+id+"\x00")) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
