package launcher

import (
	"context"
	"fmt"

	v1 "github.com/containerd/cgroups/v3/cgroup1/stats"
	v2 "github.com/containerd/cgroups/v3/cgroup2/stats"
	"github.com/containerd/typeurl/v2"
)

// Resources is what a container used, from its cgroup.
type Resources struct {
	MemoryBytes      uint64 // current usage
	MemoryPeakBytes  uint64 // high-water mark (v1 max_usage_in_bytes; v2 memory.peak where the kernel has it, else current)
	MemoryLimitBytes uint64
	OOMKills         uint64 // processes the memory limit's OOM killer killed
	Pids             uint64 // current number of tasks
	PidsPeak         uint64 // the most seen by this Task's Metrics calls (cgroups report no peak)
	PidsLimit        uint64
}

// Metrics reads the container's cgroup through containerd. Once Wait has seen the exit it
// returns the last reading, taken just before the deletion.
func (t *Task) Metrics(ctx context.Context) (Resources, error) {
	t.mu.Lock()
	final, last := t.deleted || t.reaped, t.last
	t.mu.Unlock()
	if final {
		if last == nil {
			return Resources{}, fmt.Errorf("metrics of task %s: task deleted before any reading", t.ctr.spec.ID)
		}
		return *last, nil
	}
	m, err := t.task.Metrics(ctx)
	if err != nil {
		return Resources{}, fmt.Errorf("metrics of task %s: %w", t.ctr.spec.ID, err)
	}
	r, err := decodeMetrics(m.Data)
	if err != nil {
		return Resources{}, fmt.Errorf("metrics of task %s: %w", t.ctr.spec.ID, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.peakPids = max(t.peakPids, r.Pids)
	r.PidsPeak = t.peakPids
	t.last = &r
	return r, nil
}

// decodeMetrics reads cgroup v1 or v2 metrics, told apart by their type URL.
func decodeMetrics(a typeurl.Any) (Resources, error) {
	if a == nil {
		return Resources{}, fmt.Errorf("no metrics data")
	}
	v, err := typeurl.UnmarshalAny(a)
	if err != nil {
		return Resources{}, fmt.Errorf("decode metrics %s: %w", a.GetTypeUrl(), err)
	}
	var r Resources
	switch m := v.(type) {
	case *v1.Metrics:
		if p := m.GetPids(); p != nil {
			r.Pids, r.PidsLimit = p.GetCurrent(), p.GetLimit()
		}
		if u := m.GetMemory().GetUsage(); u != nil {
			r.MemoryBytes, r.MemoryPeakBytes, r.MemoryLimitBytes = u.GetUsage(), u.GetMax(), u.GetLimit()
		}
		r.OOMKills = m.GetMemoryOomControl().GetOomKill()
	case *v2.Metrics:
		if p := m.GetPids(); p != nil {
			r.Pids, r.PidsLimit = p.GetCurrent(), p.GetLimit()
		}
		if mem := m.GetMemory(); mem != nil {
			r.MemoryBytes, r.MemoryLimitBytes = mem.GetUsage(), mem.GetUsageLimit()
			r.MemoryPeakBytes = max(mem.GetMaxUsage(), mem.GetUsage())
		}
		r.OOMKills = m.GetMemoryEvents().GetOomKill()
	default:
		return Resources{}, fmt.Errorf("metrics of unknown type %s", a.GetTypeUrl())
	}
	r.PidsPeak = r.Pids
	return r, nil
}
