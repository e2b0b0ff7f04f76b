package experiment

import (
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// autoExperiment is an experiment of one task with these declared limits.
func autoExperiment(memMB int64, cpus float64) *task.Experiment {
	t := &task.Task{ID: "a"}
	t.Sandbox.Limits.MemoryMB, t.Sandbox.Limits.CPUs = memMB, cpus
	return &task.Experiment{Entries: []task.Entry{{Task: t}}}
}

func TestAutoStartsAtWhatTheHostsCPUsAndMemoryHold(t *testing.T) {
	cases := []struct {
		name   string
		memMB  int64
		cpus   float64
		host   HostReading
		max    int
		want   int
		reason string
	}{
		{"CPUs bound", 256, 0, HostReading{CPUs: 4, AvailableMB: 16000}, 100, 4, "4 CPUs at 1 a run"},
		{"two CPUs a run", 256, 2, HostReading{CPUs: 8, AvailableMB: 16000}, 100, 4, "8 CPUs at 2 a run"},
		{"memory bound", 1024, 0, HostReading{CPUs: 16, AvailableMB: 3400}, 100, 3, "3400 MiB available at 1024 MiB a run"},
		{"no memory: one all the same", 4096, 0, HostReading{CPUs: 16, AvailableMB: 1000}, 100, 1, "1000 MiB available"},
		{"few runs", 256, 0, HostReading{CPUs: 16, AvailableMB: 16000}, 3, 3, "the experiment's runs"},
	}
	for _, c := range cases {
		a := newAutoJobs(autoExperiment(c.memMB, c.cpus), c.max, c.host)
		if a.current() != c.want || !strings.Contains(a.reason(), c.reason) {
			t.Errorf("%s: %d (%s), want %d (%s)", c.name, a.current(), a.reason(), c.want, c.reason)
		}
	}
}

// The services' memory counts with the agent's.
func TestAutoCountsTheServicesMemory(t *testing.T) {
	e := autoExperiment(512, 0)
	e.Entries[0].Task.Services = []task.Service{{Name: "db"}}
	e.Entries[0].Task.Services[0].Limits.MemoryMB = 512
	a := newAutoJobs(e, 100, HostReading{CPUs: 64, AvailableMB: 4096 + hostMB})
	if a.current() != 4 {
		t.Errorf("%d at once, want 4 (1 GiB a run in 4 GiB)", a.current())
	}
}

func TestAutoGrowsWhileIdleAndShrinksWhenSaturated(t *testing.T) {
	a := newAutoJobs(autoExperiment(256, 0), 10, HostReading{CPUs: 2, AvailableMB: 8000})
	now := time.Now()
	if a.current() != 2 {
		t.Fatalf("start %d", a.current())
	}
	if n, changed := a.look(HostReading{CPUs: 2, IdleCPUs: 0.3, AvailableMB: 8000}, 2, 0, now); changed {
		t.Errorf("grew with under half a CPU idle: %d", n)
	}
	// Idle CPUs with all slots busy: one more each look, up to max.
	for i := 3; i <= 10; i++ {
		n, changed := a.look(HostReading{CPUs: 2, IdleCPUs: 1.5, AvailableMB: 8000}, a.current(), 0, now)
		if !changed || n != i {
			t.Fatalf("look %d: %d changed %v", i, n, changed)
		}
	}
	if n, changed := a.look(HostReading{CPUs: 2, IdleCPUs: 2, AvailableMB: 8000}, 10, 0, now); changed || n != 10 {
		t.Errorf("past max: %d", n)
	}
	// Not all slots in use: no reason to grow.
	b := newAutoJobs(autoExperiment(256, 0), 10, HostReading{CPUs: 2, AvailableMB: 8000})
	if _, changed := b.look(HostReading{CPUs: 2, IdleCPUs: 2, AvailableMB: 8000}, 1, 0, now); changed {
		t.Error("grew with a free slot")
	}
	// Saturated (no idle CPU) and above what the CPUs hold: one fewer each look, down to
	// the CPUs' share.
	for want := 9; want >= 2; want-- {
		n, _ := a.look(HostReading{CPUs: 2, IdleCPUs: 0.05, AvailableMB: 8000}, a.current(), 0, now)
		if n != want {
			t.Fatalf("saturated: %d, want %d", n, want)
		}
	}
	if n, changed := a.look(HostReading{CPUs: 2, IdleCPUs: 0, AvailableMB: 8000}, 2, 0, now); changed || n != 2 {
		t.Errorf("below the CPUs' share: %d", n)
	}
	// Memory running out: down to what it holds at once.
	a.limit = 8
	if n, _ := a.look(HostReading{CPUs: 2, IdleCPUs: 2, AvailableMB: hostMB + 100}, 8, 0, now); n != 7 {
		t.Errorf("memory out: %d, want 7", n)
	}
}

func TestAutoBacksOffWhenContainerdOrTheGatewaySlowsDown(t *testing.T) {
	a := newAutoJobs(autoExperiment(256, 0), 16, HostReading{CPUs: 8, AvailableMB: 16000})
	now := time.Now()
	res := func(sandbox float64) *record.Result {
		r := &record.Result{}
		r.Timings.Prepare, r.Timings.Launch = sandbox*0.8, sandbox*0.2
		return r
	}
	if n, changed := a.observe(res(0.3), 1, now); changed || n != 8 {
		t.Fatalf("a quick sandbox changed it: %d", n)
	}
	if _, changed := a.observe(res(0.8), 2, now); changed {
		t.Error("under a second is no slowdown")
	}
	n, changed := a.observe(res(2), 3, now)
	if !changed || n != 4 || !strings.Contains(a.reason(), "containerd slowed down") {
		t.Fatalf("containerd 2 s against 0.3 s: %d (%s)", n, a.reason())
	}
	// Held: no growth and no second halving for a while.
	if n, _ := a.look(HostReading{CPUs: 8, IdleCPUs: 8, AvailableMB: 16000}, 4, 3, now.Add(time.Second)); n != 4 {
		t.Errorf("grew while held: %d", n)
	}
	if n, _ := a.observe(res(5), 4, now.Add(time.Second)); n != 4 {
		t.Errorf("halved again while held: %d", n)
	}
	later := now.Add(autoHold + time.Second)
	if n, changed := a.look(HostReading{CPUs: 8, IdleCPUs: 8, AvailableMB: 16000}, 4, 4, later); !changed || n != 5 {
		t.Errorf("after the hold: %d", n)
	}
	gw := &record.Result{Gateway: &record.GatewayResult{}}
	gw.Gateway.RateLimited = 2
	if n, changed := a.observe(gw, 5, later); !changed || n != 2 || !strings.Contains(a.reason(), "gateway's upstream") {
		t.Errorf("rate-limited: %d (%s)", n, a.reason())
	}
	rec := a.record()
	if rec.Mode != "auto" || rec.Low != 2 || rec.High != 8 || rec.Final != 2 || len(rec.Changes) != 4 || rec.Changes[1].AfterRuns != 3 {
		t.Errorf("record %+v", rec)
	}
}

// The gate lets no more than its limit in, and a raised limit lets waiting workers in.
func TestGateHoldsItsLimitAsItChanges(t *testing.T) {
	g := newGate(1)
	g.acquire()
	in := make(chan struct{})
	go func() {
		g.acquire()
		close(in)
	}()
	// Until the second worker waits (it has looked at the limit), and once it does, it is not in.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		waits := g.blocked() == 1
		select {
		case <-in:
			t.Fatal("a second worker got in at limit 1")
		default:
		}
		if waits {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second worker never waited at limit 1")
		}
	}
	g.setLimit(2)
	select {
	case <-in:
	case <-time.After(5 * time.Second):
		t.Fatal("the raised limit let no one in")
	}
	if g.inUse() != 2 {
		t.Errorf("in use %d", g.inUse())
	}
}

// /proc/stat's idle time is read as CPUs' worth between two readings.
func TestHostReaderReadsIdleCPUsBetweenTwoReadings(t *testing.T) {
	var h hostReader
	first := h.read()
	if first.CPUs < 1 || first.AvailableMB <= 0 || first.IdleCPUs != 0 {
		t.Fatalf("first reading %+v", first)
	}
	time.Sleep(200 * time.Millisecond)
	second := h.read()
	if second.IdleCPUs < 0 || second.IdleCPUs > float64(second.CPUs)+0.01 {
		t.Errorf("idle %v of %d CPUs", second.IdleCPUs, second.CPUs)
	}
}

// The experiment file's parallel: auto is -j auto unless the command line says otherwise.
func TestParallelAutoInTheFileIsJAutoUnlessTheFlagSaysOtherwise(t *testing.T) {
	auto, fixed := &task.Experiment{ParallelAuto: true}, &task.Experiment{Parallel: 3}
	for _, c := range []struct {
		flag int
		e    *task.Experiment
		want int
	}{{0, auto, AutoParallel}, {2, auto, 2}, {AutoParallel, fixed, AutoParallel}, {0, fixed, 0}} {
		if got := requestedParallel(c.flag, c.e); got != c.want {
			t.Errorf("flag %d, file %+v: %d, want %d", c.flag, c.e, got, c.want)
		}
	}
}
