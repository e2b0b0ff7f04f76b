package worker

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"ceval.dev/ceval/wasm/wire"
)

// prunerUID is who the pruner runs as in TestPruneIgnoresAWorkerThatExitsDuringTheScan: a
// worker's UID, which cannot read the descriptors of a process whose memory is gone.
const prunerUID = 65534

// prunerHolding is this test binary as a pruner (the worker, as prunerUID) on descriptor 3
// whose scan stops at process pid: it says "at" and waits for a line on stdin before it
// reads pid's descriptor, then prints what it removed and why it left anything.
func prunerHolding(pid string) {
	in := bufio.NewReader(os.Stdin)
	argvRead = func(p int) {
		if strconv.Itoa(p) == pid {
			fmt.Println("at")
			_, _ = in.ReadString('\n')
		}
	}
	removed, err := pruneStaleCaches(wire.CacheFD)
	fmt.Printf("removed %d, err %v\n", len(removed), err)
	os.Exit(0)
}

// A worker that exits between the pruner's read of its argv and of its cache descriptor
// does not hold back the prune: once its memory is gone its /proc/PID/fd is closed to all
// but root, so the read fails, but it runs nothing any more (it was counted as a worker
// using the cache: every compiler run beside the tests of other packages, whose workers
// come and go, could skip its prune; measured twice in 60 s of scanning on a loaded machine).
func TestPruneIgnoresAWorkerThatExitsDuringTheScan(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running the pruner as the worker's UID takes root")
	}
	dir, _, stale := cacheRoot(t)
	if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, prunerUID, prunerUID)
	}); err != nil {
		t.Fatal(err)
	}
	root, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	other, err := os.Open(t.TempDir()) // the exiting worker's cache: another directory
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// The kernel resolves /proc/self/exe without walking the path, which prunerUID may be
	// unable to traverse.
	self := "/proc/self/exe"
	cred := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: prunerUID, Gid: prunerUID, Groups: []uint32{}}}

	worker := &exec.Cmd{
		Path:        self,
		Args:        []string{workerArgv0, wire.WorkerCommand, "cache"},
		Env:         []string{"CEVAL_TEST_FAKE_WORKER=1"},
		ExtraFiles:  []*os.File{other},
		SysProcAttr: cred,
	}
	workerIn, err := worker.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := false
	defer func() {
		if !reaped {
			workerIn.Close()
			_ = worker.Wait()
		}
	}()
	pid := worker.Process.Pid
	waitFor(t, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return strings.HasPrefix(string(b), workerArgv0+"\x00")
	})

	pruner := &exec.Cmd{
		Path:        self,
		Args:        []string{"pruner"},
		Env:         []string{"CEVAL_TEST_PRUNER_HOLD=" + strconv.Itoa(pid)},
		ExtraFiles:  []*os.File{root},
		SysProcAttr: cred,
		Stderr:      os.Stderr,
	}
	prunerIn, err := pruner.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	prunerOut, err := pruner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := pruner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { prunerIn.Close(); _ = pruner.Wait() }()
	out := bufio.NewReader(prunerOut)
	if line, err := out.ReadString('\n'); line != "at\n" {
		t.Fatalf("the pruner did not find the worker: %q, %v", line, err)
	}
	// The worker exits (killed, not yet reaped: a zombie, with no memory and no files)
	// while the pruner holds between its two reads.
	if err := worker.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		_, after, _ := strings.Cut(string(b), ") ")
		return strings.HasPrefix(after, "Z")
	})
	if _, err := prunerIn.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	line, _ := out.ReadString('\n')
	if want := fmt.Sprintf("removed %d, err <nil>\n", len(stale)); line != want {
		t.Errorf("the pruner: %q, want %q", line, want)
	}
	_ = worker.Wait()
	reaped = true
}
