package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/experiment"
	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/report"
)

// progress prints one line per finished run; on a terminal it also keeps a status line
// (a bar, done / running / failed counts and the ETA) updated in place below them. Text an
// agent may have written (errors quoting it) is stripped of control sequences first.
type progress struct {
	mu                           sync.Mutex
	w                            io.Writer
	tty                          bool
	width                        int
	total, running, done, failed int
	fresh                        int        // finished by this process, not kept from an earlier start
	auto                         func() int // -j auto's runs at once; nil at a fixed -j
	start                        time.Time
	stop                         chan struct{}
	stopped                      chan struct{}
}

// newProgress writes to w; a status line only when w is a terminal and TERM is not dumb.
func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, start: time.Now()}
	if f, ok := w.(*os.File); ok && os.Getenv("TERM") != "dumb" {
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			p.tty, p.width = true, 80
			if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
				p.width = int(ws.Col)
			}
			p.stop, p.stopped = make(chan struct{}), make(chan struct{})
			go p.tick()
		}
	}
	return p
}

// tick redraws the status line every second so the ETA and elapsed time move.
func (p *progress) tick() {
	defer close(p.stopped)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
		}
	}
}

// close stops the redraws and erases the status line.
func (p *progress) close() {
	if !p.tty {
		return
	}
	close(p.stop)
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\x1b[K")
}

func (p *progress) started() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running++
	p.draw()
}

// line prints a whole line above the status line.
func (p *progress) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.printLine(s)
}

func (p *progress) printLine(s string) {
	if p.tty {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	fmt.Fprintln(p.w, s)
	p.draw()
}

func (p *progress) finished(r *experiment.RunRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !r.Resumed {
		p.running--
		p.fresh++
	}
	p.done++
	status, score, secs := grader.TaskError, 0.0, 0.0
	if r.Result != nil {
		status, score, secs = r.Result.Status, r.Result.Score, r.Result.Timings.Total
	}
	if status != grader.TaskSuccess {
		p.failed++
	}
	note := ""
	if r.Resumed {
		note = " (done before; kept)"
	} else if r.Err != nil {
		note = " " + clean(r.Err.Error())
	}
	head := fmt.Sprintf("[%d/%d] %s/%s #%d %s %.2f %.1fs%s", p.done, p.total, r.Variant, r.TaskID, r.Repeat, clean(status), score, secs, note)
	if p.tty {
		p.printLine(head)
		return
	}
	p.printLine(fmt.Sprintf("%s  (running %d, failed %d%s%s)", head, p.running, p.failed, p.autoNote(), p.eta(", eta ")))
}

// eta estimates the time left from the runs this process finished; "" until it can.
func (p *progress) eta(prefix string) string {
	if p.fresh == 0 || p.done >= p.total {
		return ""
	}
	left := time.Since(p.start) / time.Duration(p.fresh) * time.Duration(p.total-p.done)
	return prefix + left.Round(time.Second).String()
}

// draw rewrites the status line in place, cut to the terminal's width so it never wraps.
func (p *progress) draw() {
	if !p.tty {
		return
	}
	const barWidth = 20
	filled := 0
	if p.total > 0 {
		filled = barWidth * p.done / p.total
	}
	s := fmt.Sprintf("[%s%s] %d/%d done, %d running, %d failed%s, %s elapsed%s",
		strings.Repeat("#", filled), strings.Repeat("-", barWidth-filled), p.done, p.total, p.running, p.failed, p.autoNote(),
		time.Since(p.start).Round(time.Second), p.eta(", eta "))
	if n := p.width - 1; n > 0 && utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n])
	}
	fmt.Fprint(p.w, "\r\x1b[K"+s)
}

// clean strips terminal control sequences from text that may quote something an agent
// wrote, and folds it onto one line.
func clean(s string) string {
	return strings.NewReplacer("\n", " ", "\t", " ").Replace(report.StripControls(s))
}
