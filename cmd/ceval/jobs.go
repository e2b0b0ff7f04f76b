package main

import (
	"fmt"
	"strconv"

	"ceval.dev/ceval/experiment"
	"ceval.dev/ceval/task"
)

// jobsValue is -j: a number of runs at once, or auto (experiment.AutoParallel).
type jobsValue struct{ n *int }

func (j jobsValue) String() string {
	if *j.n == experiment.AutoParallel {
		return "auto"
	}
	return strconv.Itoa(*j.n)
}

func (j jobsValue) Set(s string) error {
	if s == "auto" {
		*j.n = experiment.AutoParallel
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > task.MaxParallel {
		return fmt.Errorf("want 1..%d or auto", task.MaxParallel)
	}
	*j.n = n
	return nil
}

func (j jobsValue) Type() string { return "N|auto" }

// concurrency prints -j auto's choice and keeps reading it for the status line.
func (p *progress) concurrency(n int, current func() int, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.auto = current
	p.printLine(fmt.Sprintf("-j auto: %d at once (%s)", n, clean(reason)))
}

// autoNote is ", -j auto N" while -j auto runs, else "".
func (p *progress) autoNote() string {
	if p.auto == nil {
		return ""
	}
	return fmt.Sprintf(", -j auto %d", p.auto())
}
