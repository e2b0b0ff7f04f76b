package worker

import (
	"testing"
	"time"
)

// TestPooledMemoryKeepsEachInstancesLimit: a mapping kept from an instance with a high limit
// serves one with a low limit, whose grows past it are refused all the same.
func TestPooledMemoryKeepsEachInstancesLimit(t *testing.T) {
	pool := &memPool{}
	t.Cleanup(pool.release)
	big := &guestMemory{pool: pool, limit: 256 << 20}
	big.Allocate(0, 4<<30)
	if b := big.Reallocate(32 << 20); len(b) != 32<<20 {
		t.Fatalf("a grow within the limit was refused")
	}
	big.Free()
	small := &guestMemory{pool: pool, limit: 1 << 20}
	small.Allocate(0, 4<<30)
	defer small.Free()
	if len(small.mem) != 256<<20 {
		t.Fatalf("the second instance has a new mapping of %d bytes, not the pooled one", len(small.mem))
	}
	if b := small.Reallocate(1 << 20); len(b) != 1<<20 || cap(b) != 1<<20 {
		t.Errorf("grow to the limit: len %d cap %d", len(b), cap(b))
	}
	if b := small.Reallocate(2 << 20); b != nil || !small.hit {
		t.Errorf("a grow past the limit of a pooled mapping was allowed (len %d) or not reported (hit %v)", len(b), small.hit)
	}
}

// TestIdlePoolGivesItsMemoryBack: the mappings kept for the next instances are unmapped
// once none was returned for the pool's idle time, and the pool serves again afterwards.
func TestIdlePoolGivesItsMemoryBack(t *testing.T) {
	pool := &memPool{idle: 2 * time.Second} // long beside the check right after Free
	t.Cleanup(pool.release)
	for range 2 {
		g := &guestMemory{pool: pool, limit: 16 << 20}
		g.Allocate(0, 4<<30)
		if b := g.Reallocate(1 << 20); len(b) != 1<<20 {
			t.Fatal("a grow within the limit was refused")
		}
		freed := time.Now()
		g.Free()
		pool.mu.Lock()
		kept := len(pool.free)
		pool.mu.Unlock()
		// A test descheduled for the idle time (a loaded host) finds the mapping already
		// given back, as it should be: only a pool empty before that is wrong.
		if kept != 1 && (kept != 0 || time.Since(freed) < pool.idle) {
			t.Fatalf("the pool kept %d mappings %v after the free, want 1", kept, time.Since(freed))
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			pool.mu.Lock()
			kept = len(pool.free)
			pool.mu.Unlock()
			if kept == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("an idle pool still holds %d mappings", kept)
			}
		}
	}
}
