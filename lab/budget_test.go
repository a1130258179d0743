package lab

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
)

// TestBudgetRefuses: a run estimated over the lab's memory or work is
// refused with the estimate and the limit in the message (issue 9, item 5:
// each parameter within its limits, their product months of CPU).
func TestBudgetRefuses(t *testing.T) {
	l := newTestLab(t, Options{MaxMemory: 64 << 20, MaxWork: 1e8})
	for _, tt := range []struct {
		n    int
		want []string
	}{
		{200000, []string{"run over the lab's budget: lab-demo -n 200000", "about 196 MiB of memory", "the limit is 64 MiB (-max-memory)", "(-max-work)"}},
		{60000, []string{"about 59.6 MiB", "6e+07 operations", "no"}}, // within both
	} {
		status, b := l.do("POST", "/api/runs", map[string]any{"experiment": "lab-demo", "params": map[string]any{"n": tt.n, "delay": 1e6}})
		if tt.want[len(tt.want)-1] == "no" {
			if status != 201 {
				t.Errorf("n=%d within the budget: %d %s", tt.n, status, b)
			}
			continue
		}
		if status != 400 {
			t.Errorf("n=%d: %d %s, want 400", tt.n, status, b)
		}
		for _, w := range tt.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("n=%d: %s lacks %q", tt.n, b, w)
			}
		}
	}
	if status, b := l.do("POST", "/api/runs", map[string]any{"experiment": "lab-stubborn-nocost"}); status != 400 || !strings.Contains(string(b), "gives no cost estimate") {
		t.Errorf("an experiment without an estimate: %d %s", status, b)
	}
}

// TestBudgetMemoryAcrossRuns: runs that each fit but not together execute
// one after the other, although workers are free.
func TestBudgetMemoryAcrossRuns(t *testing.T) {
	l := newTestLab(t, Options{Workers: 4, MaxMemory: 10 << 20})
	slow := map[string]any{"n": 5000, "delay": 1000} // 5 s; 6 MiB by its estimate
	a := l.start("lab-demo", slow, 1)
	b := l.start("lab-demo", slow, 2)
	small := l.start("lab-demo", map[string]any{"n": 10}, 3) // 1 MiB, but behind b
	l.wait(a.ID, 5*time.Second, func(r notebook.Run) bool { return r.State == notebook.Running })
	time.Sleep(100 * time.Millisecond)
	if rb, rs := l.get(b.ID), l.get(small.ID); rb.State != notebook.Queued || rs.State != notebook.Queued {
		t.Errorf("beside a run of 6 MiB in 10 MiB: a second is %s, a third %s; want both queued", rb.State, rs.State)
	}
	l.do("POST", "/api/runs/"+a.ID+"/cancel", nil)
	l.wait(b.ID, 5*time.Second, func(r notebook.Run) bool { return r.State == notebook.Running })
	l.wait(small.ID, 5*time.Second, ended) // fits beside b
	l.srv.mu.Lock()
	mem := l.srv.memory
	l.srv.mu.Unlock()
	if mem > 10<<20 {
		t.Errorf("runs executing hold %d bytes by their estimates", mem)
	}
}

func TestDefaultMaxMemoryFor(t *testing.T) {
	for _, c := range []struct{ mem, want int64 }{
		{0, DefaultMaxMemory},        // unknown
		{8 << 30, DefaultMaxMemory},  // a laptop: the floor
		{16 << 30, DefaultMaxMemory}, // a quarter is the floor
		{23 << 30, 23 << 28},         // 5.75 GiB
		{128 << 30, 32 << 30},        // the H200 host
	} {
		if got := DefaultMaxMemoryFor(c.mem); got != c.want {
			t.Errorf("DefaultMaxMemoryFor(%d) = %d, want %d", c.mem, got, c.want)
		}
	}
}

// TestInfoBudget: /api/info gives the lab's budget, the one its refusals
// name (Options, or the defaults where they are not set).
func TestInfoBudget(t *testing.T) {
	for _, c := range []struct {
		opts         Options
		memory, work int64
	}{
		{Options{Workers: 1, MaxMemory: 3 << 30, MaxWork: 5e9}, 3 << 30, 5e9},
		{Options{Workers: 1}, DefaultMaxMemory, DefaultMaxWork},
	} {
		l := newTestLab(t, c.opts)
		var info Info
		status, b := l.do("GET", "/api/info", nil)
		if err := json.Unmarshal(b, &info); status != 200 || err != nil {
			t.Fatalf("GET /api/info: %d %v %s", status, err, b)
		}
		if info.MaxMemory != c.memory || info.MaxWork != c.work {
			t.Errorf("options %+v: info's budget %d bytes, %d operations; want %d, %d", c.opts, info.MaxMemory, info.MaxWork, c.memory, c.work)
		}
	}
}
