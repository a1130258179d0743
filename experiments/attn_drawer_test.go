package experiments

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
)

// drawerTask is a small needle task (head_dim 64) and two runs over an
// e4m3 and a bf16 cache.
func drawerTask(t *testing.T) (attnNeedle, []attnNeedleRun) {
	t.Helper()
	v, err := sim.ParseValues(Needle{}.Params(), map[string]string{"head_dim": "64"})
	if err != nil {
		t.Fatal(err)
	}
	tk := attnNeedleFromValues(v)
	var runs []attnNeedleRun
	for _, f := range []fp8.Format{fp8.FormatE4M3, fp8.FormatBF16} {
		runs = append(runs, attnNeedleRun{dtype: f, cfg: attention.Config{HeadDim: 64, DType: f}})
	}
	return tk, runs
}

// sameHaystacks fails unless a and b hold the same caches, code for code.
func sameHaystacks(t *testing.T, what string, a, b []*attnHaystack) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d haystacks, want %d", what, len(a), len(b))
	}
	for i := range a {
		if len(a[i].base) != len(b[i].base) {
			t.Fatalf("%s: haystack %d has %d caches, want %d", what, i, len(a[i].base), len(b[i].base))
		}
		for name, kv := range b[i].base {
			got := a[i].base[name]
			if got == nil || !slices.Equal(got.KCodes(0), kv.KCodes(0)) {
				t.Fatalf("%s: haystack %d, cache %s: K differs", what, i, name)
			}
			for d := 0; d < kv.VDim(); d++ {
				if !slices.Equal(got.VCodes(0, d), kv.VCodes(0, d)) {
					t.Fatalf("%s: haystack %d, cache %s: V differs", what, i, name)
				}
			}
		}
	}
}

// TestDrawerSameHaystacks: the drawer hands out, in order, the groups
// attnNeedle.haystacks draws (the same codes), drawing ahead or not; a
// call repeating the one before with caches it holds gets the same
// haystacks again, not drawn anew; one that needs another cache gets new
// ones.
func TestDrawerSameHaystacks(t *testing.T) {
	ctx := context.Background()
	tk, runs := drawerTask(t)
	run := &sim.Run{Seed: 7}
	calls := []attnCall{
		{key: "k/300", n: 300, trials: 6, haystacks: 3, runs: runs},
		{key: "k/700", n: 700, trials: 4, haystacks: 8, runs: runs[:1]},     // 4 haystacks: min(haystacks, trials)
		{key: "k/700", n: 700, trials: 4, haystacks: 8, runs: runs[:1]},     // the same again: reused
		{key: "k/700", n: 700, trials: 4, haystacks: 8, runs: runs[1:]},     // another cache: drawn
		{key: "k/700", n: 700, trials: 4, haystacks: 8, runs: runs[1:]},     // reused
		{key: "other/700", n: 700, trials: 2, haystacks: 2, runs: runs[1:]}, // another key: drawn
	}
	for _, ahead := range []int{0, 1, 3} {
		dr := tk.newDrawer(ctx, run, calls, ahead)
		var prev []*attnHaystack
		for ci, c := range calls {
			gs := tk.groups(c)
			if len(gs) != 1 {
				t.Fatalf("call %d: %d groups, want 1 (small haystacks)", ci, len(gs))
			}
			got, err := dr.next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want, err := tk.haystacks(ctx, run, c.key, c.n, gs[0][0], gs[0][1], c.runs)
			if err != nil {
				t.Fatal(err)
			}
			sameHaystacks(t, c.key, got, want)
			reused := prev != nil && got[0] == prev[0]
			if wantReuse := ci == 2 || ci == 4; reused != wantReuse {
				t.Errorf("ahead %d, call %d: reused %v, want %v", ahead, ci, reused, wantReuse)
			}
			prev = got
		}
		if _, err := dr.next(ctx); err == nil {
			t.Errorf("ahead %d: a group past the calls", ahead)
		}
		dr.stop()
	}
}

// TestDrawerStopsWithoutLeak (run it with -race): a drawer stopped after
// one group, or whose context is cancelled while it draws large
// haystacks, ends its goroutine; next then returns the context's error,
// and again on every later call.
func TestDrawerStopsWithoutLeak(t *testing.T) {
	tk, runs := drawerTask(t)
	run := &sim.Run{Seed: 3}
	var calls []attnCall
	for i := range 20 {
		calls = append(calls, attnCall{key: "leak/" + string(rune('a'+i)), n: 1 << 15, trials: 4, haystacks: 4, runs: runs})
	}
	base := runtime.NumGoroutine()

	dr := tk.newDrawer(context.Background(), run, calls, 1)
	if _, err := dr.next(context.Background()); err != nil {
		t.Fatal(err)
	}
	dr.stop()

	ctx, cancel := context.WithCancel(context.Background())
	dr = tk.newDrawer(ctx, run, calls, 2)
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	var err error
	for range calls {
		if _, err = dr.next(ctx); err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("next after the cancellation: %v, want context.Canceled", err)
	}
	if _, err2 := dr.next(context.Background()); !errors.Is(err2, context.Canceled) {
		t.Errorf("next again: %v, want the same error", err2)
	}
	dr.stop()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the cancelled drawer took %v to stop", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Errorf("%d goroutines after stop, %d before the drawers", n, base)
	}
}

// TestDrawerAheadByMemory: drawing ahead, the drawer goes as far as the
// group being read and those drawn after it fit in ahead+1 of the run's
// largest group: small groups before large ones are drawn before the
// reader asks for them (a GPU run's first groups while its device opens),
// a group that would not fit waits for the reader; without drawing ahead
// nothing is drawn before it is asked for.
func TestDrawerAheadByMemory(t *testing.T) {
	tk, runs := drawerTask(t)
	run := &sim.Run{Seed: 5}
	var calls []attnCall
	for i, n := range []int{1000, 1000, 1000, 4000, 4000} { // bytes ∝ n: budget 2·4000 with ahead 1
		calls = append(calls, attnCall{key: fmt.Sprintf("mem/%d", i), n: n, trials: 1, haystacks: 1, runs: runs})
	}
	drawn := func(dr *attnDrawer, want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(dr.out) < want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // room to draw one too many
		if got := len(dr.out); got != want {
			t.Fatalf("%d groups drawn ahead of the reader, want %d", got, want)
		}
	}
	ctx := context.Background()
	dr := tk.newDrawer(ctx, run, calls, 1)
	defer dr.stop()
	drawn(dr, 4) // 1000+1000+1000+4000 fit in 8000, the fifth would not
	for range 3 {
		if _, err := dr.next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	drawn(dr, 1) // read: group 2; held 1000+4000, the fifth still waits
	if _, err := dr.next(ctx); err != nil {
		t.Fatal(err)
	}
	drawn(dr, 1) // read: group 3 (4000), the fifth (4000) drawn
	if _, err := dr.next(ctx); err != nil {
		t.Fatal(err)
	}

	dr0 := tk.newDrawer(ctx, run, calls, 0)
	defer dr0.stop()
	drawn(dr0, 0)
}
