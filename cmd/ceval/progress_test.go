package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/experiment"
	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
)

func finishedRun(status string, err error) *experiment.RunRecord {
	r := &experiment.RunRecord{Variant: "v", TaskID: "t", PlannedRun: record.PlannedRun{Repeat: 1}, Err: err}
	if status != "" {
		r.Result = &record.Result{Grade: grader.Result{Status: status, Score: 1}}
	}
	return r
}

func TestProgressStripsAgentEscapesFromPlainLines(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, 2)
	p.started()
	p.finished(finishedRun("", errors.New("agent said \x1b]0;pwned\x07\x1b[2J\x1b[31mred\nsecond line\r\x08")))
	p.started()
	p.finished(finishedRun("SUCCESS", nil))
	p.close()
	got := out.String()
	if strings.ContainsAny(got, "\x1b\x07\r\x08") {
		t.Errorf("control characters reached the output: %q", got)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "[1/2] v/t #1 ERROR 0.00 0.0s agent said red second line  (running 0, failed 1, eta ") ||
		!strings.HasPrefix(lines[1], "[2/2] v/t #1 SUCCESS 1.00") {
		t.Errorf("plain output:\n%s", got)
	}
}

// openPTY returns a pseudo-terminal's master (non-blocking, so reads take deadlines) and
// its slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	unix.SetNonblock(fd, true)
	master = os.NewFile(uintptr(fd), "ptmx")
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 60})
	t.Cleanup(func() { slave.Close(); master.Close() })
	return master, slave
}

func TestProgressOnATerminalKeepsOneStatusLine(t *testing.T) {
	t.Setenv("TERM", "xterm")
	master, slave := openPTY(t)
	p := newProgress(slave, 4)
	if !p.tty || p.width != 60 {
		t.Fatalf("tty %v width %d", p.tty, p.width)
	}
	p.started()
	p.started()
	p.finished(finishedRun("FAILURE", errors.New("\x1b[2Jboom")))
	p.close()
	// With the slave closed, the master reads what was written and then EIO: a read that
	// happens to end a chunk with the erase sequence is not yet the end (CI saw one).
	slave.Close()
	var buf bytes.Buffer
	b := make([]byte, 4096)
	master.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		n, err := master.Read(b)
		buf.Write(b[:n])
		if errors.Is(err, unix.EIO) {
			break
		}
		if err != nil {
			t.Fatalf("reading the terminal: %v after %q", err, buf.String())
		}
	}
	got := buf.String()
	if !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("the status line is not erased at the end: %q", got)
	}
	for _, want := range []string{
		"\r\x1b[K[--------------------] 0/4 done, 2 running",
		"\r\x1b[K[1/4] v/t #1 FAILURE 1.00 0.0s boom\r\n",
		"\r\x1b[K[#####---------------] 1/4 done, 1 running, 1 failed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, got)
		}
	}
	if strings.Contains(got, "\x1b[2J") {
		t.Error("the agent's escape reached the terminal")
	}
	for _, l := range strings.Split(got, "\r\x1b[K") {
		if len([]rune(strings.TrimSuffix(l, "\r\n"))) > 59 {
			t.Errorf("status line wider than the terminal: %q", l)
		}
	}
}
