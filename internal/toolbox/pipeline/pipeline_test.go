package pipeline

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// An endless first stage ends when the last stops reading (as `yes | head -1` must), each
// stage's status is its own, and a stage that panics is status 2 with a line on stderr.
func TestStagesEndWhenTheReaderAfterThemEnds(t *testing.T) {
	var stdout, stderr bytes.Buffer
	done := make(chan []int)
	go func() {
		done <- Run(3, strings.NewReader(""), &stdout, &stderr, func(i int, in io.Reader, out io.Writer) int {
			switch i {
			case 0: // yes
				for {
					if _, err := io.WriteString(out, "y\n"); err != nil {
						return 141
					}
					if f, ok := out.(interface{ Flush() error }); ok && f.Flush() != nil {
						return 141
					}
				}
			case 1: // cat
				if _, err := io.Copy(out, in); err != nil {
					return 1
				}
				return 0
			default: // head -1
				line, _ := bufio.NewReader(in).ReadString('\n')
				io.WriteString(out, line)
				return 0
			}
		})
	}()
	select {
	case st := <-done:
		if st[0] != 141 || st[2] != 0 || stdout.String() != "y\n" {
			t.Errorf("statuses %v, stdout %q", st, stdout.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the first stage never saw its reader end")
	}
	st := Run(2, strings.NewReader("in\n"), &stdout, &stderr, func(i int, in io.Reader, out io.Writer) int {
		if i == 0 {
			panic("boom")
		}
		b, _ := io.ReadAll(in)
		return len(b)
	})
	if st[0] != 2 || st[1] != 0 || !strings.Contains(stderr.String(), "internal error: boom") {
		t.Errorf("statuses %v, stderr %q", st, stderr.String())
	}
}

// Writes through Locked from many goroutines arrive whole.
func TestLockedWritesArriveWhole(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	w := Locked(&mu, &buf)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				w.Write([]byte("0123456789\n"))
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if l != "0123456789" {
			t.Fatalf("torn line %q", l)
		}
	}
}
