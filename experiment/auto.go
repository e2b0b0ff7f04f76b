package experiment

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// AutoParallel as Options.Parallel picks and adjusts the runs at once from the host (-j auto).
const AutoParallel = -1

// autoLook is how often -j auto reads the host.
const autoLook = time.Second

// HostReading is what -j auto reads of the host at each look.
type HostReading struct {
	CPUs        int     // online CPUs
	IdleCPUs    float64 // CPUs' worth of idle time since the last reading (0 at the first)
	AvailableMB int64   // MemAvailable
}

// hostReader reads the host: /proc/stat's idle time between two calls, /proc/meminfo's
// MemAvailable.
type hostReader struct {
	lastIdle, lastTotal uint64
}

func (h *hostReader) read() HostReading {
	r := HostReading{CPUs: runtime.NumCPU(), AvailableMB: availableMemoryMB()}
	idle, total, ok := cpuTimes()
	if ok && h.lastTotal > 0 && total > h.lastTotal {
		r.IdleCPUs = float64(r.CPUs) * float64(idle-h.lastIdle) / float64(total-h.lastTotal)
	}
	if ok {
		h.lastIdle, h.lastTotal = idle, total
	}
	return r
}

// cpuTimes is /proc/stat's aggregate idle (idle + iowait) and total jiffies.
func cpuTimes() (idle, total uint64, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0, false
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, s := range fields[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return idle, total, true
}

// Concurrency decisions: -j auto's controller. It starts from what the host's CPUs and
// available memory hold at the runs' declared limits, grows by one run while a whole run's
// CPUs stay idle and the memory holds another, shrinks by one while the host has no idle
// CPU left and it runs more than its CPUs hold, and halves (then holds for a while) when
// containerd slows down (a run's sandbox took over slowFactor times the quickest seen, and
// over slowFloor) or the gateway's upstream does (rate-limited or failed calls).
type autoJobs struct {
	mu        sync.Mutex
	max       int
	memMB     int64   // a run's declared memory: the agent's and its services'
	cpus      float64 // a run's declared CPUs (1 when it declares none)
	reserveMB int64   // memory left to the host
	limit     int
	why       string
	quickest  float64   // the quickest sandbox (prepare + launch) seen, seconds
	holdUntil time.Time // no growth before: after a back-off
	history   []record.ConcurrencyChange
}

const (
	slowFactor = 3
	slowFloor  = 1.0 // seconds
	autoHold   = 10 * time.Second
	hostMB     = 256 // kept free for the host
	growIdle   = 0.5 // CPUs' worth of idle time that lets another run in (runs mostly wait: on a model, on I/O)
	// saturated is the idle share of the CPUs under which the runs are too many.
	saturated = 0.1
)

// newAutoJobs sizes -j auto for e's runs, at most max at once, from the first reading.
func newAutoJobs(e *task.Experiment, max int, h HostReading) *autoJobs {
	a := &autoJobs{max: max, cpus: 1, reserveMB: hostMB}
	for _, en := range e.Entries {
		mem := en.Task.Sandbox.Limits.MemoryMB
		for _, s := range en.Task.Services {
			mem += s.Limits.MemoryMB
		}
		a.memMB = maxOf(a.memMB, mem)
		if c := en.Task.Sandbox.Limits.CPUs; c > a.cpus {
			a.cpus = c
		}
	}
	n, why := a.fits(h, 0)
	a.set(n, "start: "+why, 0)
	return a
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// fits is how many runs the host holds beside running ones, and which resource says so.
func (a *autoJobs) fits(h HostReading, running int) (int, string) {
	cpuCap := max(1, int(float64(h.CPUs)/a.cpus))
	n, why := cpuCap, strconv.Itoa(h.CPUs)+" CPUs at "+strconv.FormatFloat(a.cpus, 'g', -1, 64)+" a run"
	if a.memMB > 0 {
		memCap := running + int(max(0, h.AvailableMB-a.reserveMB)/a.memMB)
		if memCap < n {
			n, why = memCap, strconv.FormatInt(h.AvailableMB, 10)+" MiB available at "+strconv.FormatInt(a.memMB, 10)+" MiB a run"
		}
	}
	if n > a.max {
		n, why = a.max, "the experiment's runs"
	}
	return max(1, n), why
}

// look adjusts the limit from a host reading with running runs at once; it returns the
// limit and whether it changed.
func (a *autoJobs) look(h HostReading, running, done int, now time.Time) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.limit
	memCPU, why := a.fits(h, running)
	switch {
	case a.limit > memCPU && (h.AvailableMB-a.reserveMB < a.memMB || h.IdleCPUs < saturated*float64(h.CPUs)):
		// Over what the memory holds, or no idle CPU and more runs than the CPUs hold.
		if h.AvailableMB-a.reserveMB < a.memMB {
			a.set(a.limit-1, "memory: "+why, done)
		} else {
			a.set(a.limit-1, "no idle CPU", done)
		}
	case now.Before(a.holdUntil):
	case a.limit < a.max && running >= a.limit && h.IdleCPUs >= growIdle && h.AvailableMB-a.reserveMB >= a.memMB:
		a.set(a.limit+1, "idle CPU and memory for another run", done)
	}
	return a.limit, a.limit != old
}

// observe takes a finished run's signs of a slowdown: its sandbox's time against the
// quickest seen (containerd), its gateway's rate-limited and failed upstream calls.
func (a *autoJobs) observe(res *record.Result, done int, now time.Time) (int, bool) {
	if res == nil {
		return a.current(), false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.limit
	sb := res.Timings.Prepare + res.Timings.Launch
	slow := ""
	switch {
	case res.Gateway != nil && (res.Gateway.RateLimited > 0 || res.Gateway.UpstreamFailures > 0):
		slow = "the model gateway's upstream slowed down (rate-limited or failed calls)"
	case sb > 0 && a.quickest > 0 && sb > slowFactor*a.quickest && sb > slowFloor:
		slow = "containerd slowed down (a sandbox took " + strconv.FormatFloat(sb, 'f', 2, 64) + " s, the quickest " + strconv.FormatFloat(a.quickest, 'f', 2, 64) + " s)"
	}
	if sb > 0 && (a.quickest == 0 || sb < a.quickest) {
		a.quickest = sb
	}
	if slow != "" && !now.Before(a.holdUntil) {
		a.set(max(1, a.limit/2), slow, done)
		a.holdUntil = now.Add(autoHold)
	}
	return a.limit, a.limit != old
}

func (a *autoJobs) set(n int, why string, done int) {
	if n == a.limit {
		return
	}
	a.limit, a.why = n, why
	a.history = append(a.history, record.ConcurrencyChange{AfterRuns: done, Parallel: n, Reason: why})
}

func (a *autoJobs) reason() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.why
}

func (a *autoJobs) current() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.limit
}

// record is what summary.json says of the concurrency.
func (a *autoJobs) record() *record.Concurrency {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := &record.Concurrency{Mode: "auto", Max: a.max, Final: a.limit, Changes: a.history}
	for _, ch := range a.history {
		c.Low = minPositive(c.Low, ch.Parallel)
		c.High = max(c.High, ch.Parallel)
	}
	return c
}

func minPositive(a, b int) int {
	if a == 0 {
		return b
	}
	return min(a, b)
}

// gate lets at most limit workers hold a run at once; the limit may change at any time.
type gate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	limit   int
	running int
	waiting int // workers blocked in acquire
}

func newGate(limit int) *gate {
	g := &gate{limit: limit}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) acquire() {
	g.mu.Lock()
	for g.running >= g.limit {
		g.waiting++
		g.cond.Wait()
		g.waiting--
	}
	g.running++
	g.mu.Unlock()
}

func (g *gate) release() {
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
	g.cond.Broadcast()
}

func (g *gate) setLimit(n int) {
	g.mu.Lock()
	g.limit = n
	g.mu.Unlock()
	g.cond.Broadcast()
}

// blocked is how many workers wait in acquire.
func (g *gate) blocked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

func (g *gate) inUse() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running
}
