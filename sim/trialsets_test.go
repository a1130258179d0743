package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTrialSets: every set's results are what Trials gives for its key,
// done sees the sets in order, once each, and a set's done comes while a
// later set's trials still run; done's error, a panic and a cancel stop
// the trials and are returned.
func TestTrialSets(t *testing.T) {
	ctx := context.Background()
	draw := func(_ int, rng *rand.Rand) uint64 { return rng.Uint64() }
	for _, procs := range []int{1, 4} {
		old := runtime.GOMAXPROCS(procs)
		for _, sets := range [][]TrialSet{
			{{"a", 3}, {"b", 0}, {"c", 7}, {"a", 2}},
			{{"x", 0}},
			{{"only", 40}},
			nil,
		} {
			run := &Run{ctx: ctx, sink: Discard, Seed: 9}
			var order []int
			err := TrialSets(ctx, run, sets, func(_, trial int, rng *rand.Rand) uint64 { return draw(trial, rng) },
				func(s int, res []uint64) error {
					order = append(order, s)
					want, err := Trials(ctx, &Run{ctx: ctx, sink: Discard, Seed: 9}, sets[s].Key, sets[s].N, draw)
					if err != nil {
						return err
					}
					if !slices.Equal(res, want) {
						t.Errorf("procs %d, set %d (%v): %v, Trials gives %v", procs, s, sets[s], res, want)
					}
					return nil
				})
			if err != nil {
				t.Fatalf("procs %d, %v: %v", procs, sets, err)
			}
			if want := len(sets); len(order) != want || !slices.IsSorted(order) || (want > 0 && order[want-1] != want-1) {
				t.Errorf("procs %d, %v: done called for sets %v", procs, sets, order)
			}
		}
		runtime.GOMAXPROCS(old)
	}

	// Streaming: set 1's trial waits for set 0's done.
	first := make(chan struct{})
	err := TrialSets(ctx, &Run{ctx: ctx, sink: Discard}, []TrialSet{{"s0", 1}, {"s1", 1}}, func(s, _ int, _ *rand.Rand) int {
		if s == 1 {
			select {
			case <-first:
			case <-time.After(10 * time.Second):
				t.Error("set 1's trial ran to its end before set 0's done")
			}
		}
		return s
	}, func(s int, _ []int) error {
		if s == 0 {
			close(first)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	stopErr := errors.New("stop")
	for _, tc := range []struct {
		name string
		fn   func(s, i int, _ *rand.Rand) int
		done func(s int, _ []int) error
		want func(error) bool
	}{
		{"done's error", func(s, i int, _ *rand.Rand) int { return i },
			func(s int, _ []int) error { return stopErr }, func(err error) bool { return errors.Is(err, stopErr) }},
		{"a panic", func(s, i int, _ *rand.Rand) int {
			if s == 2 && i == 5 {
				panic("boom")
			}
			return i
		}, func(int, []int) error { return nil }, func(err error) bool { var p *PanicError; return errors.As(err, &p) }},
	} {
		err := TrialSets(ctx, &Run{ctx: ctx, sink: Discard}, []TrialSet{{"p", 2}, {"q", 2}, {"r", 1000}, {"s", 1000}}, tc.fn, tc.done)
		if !tc.want(err) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	err = TrialSets(cctx, &Run{ctx: cctx, sink: Discard}, []TrialSet{{"c", 1 << 20}}, func(_, i int, _ *rand.Rand) int {
		if i == 10 {
			cancel()
		}
		return i
	}, func(int, []int) error { t.Error("done called for a cancelled set"); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if err := TrialSets(ctx, &Run{ctx: ctx, sink: Discard}, []TrialSet{{"n", -1}}, func(_, i int, _ *rand.Rand) int { return i },
		func(int, []int) error { return nil }); err == nil {
		t.Error("a negative count: no error")
	}
}

// TrialSetsWorkers runs as many trials at once as it is given workers,
// more than GOMAXPROCS too (each trial here waits until that many are
// running), with TrialSets' results.
func TestTrialSetsWorkers(t *testing.T) {
	ctx := context.Background()
	old := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(old)
	sets := []TrialSet{{"w", 12}}
	want, err := Trials(ctx, &Run{ctx: ctx, sink: Discard, Seed: 3}, "w", 12, func(_ int, rng *rand.Rand) uint64 { return rng.Uint64() })
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{0, 1, 6} {
		var running atomic.Int64
		all := make(chan struct{})
		var once sync.Once
		var got []uint64
		err := TrialSetsWorkers(ctx, &Run{ctx: ctx, sink: Discard, Seed: 3}, sets, workers, func(_, _ int, rng *rand.Rand) uint64 {
			if running.Add(1) == int64(max(workers, 1)) {
				once.Do(func() { close(all) })
			}
			select {
			case <-all:
			case <-time.After(10 * time.Second):
				t.Errorf("workers %d: %d trials running at once, want %d", workers, running.Load(), max(workers, 1))
			}
			return rng.Uint64()
		}, func(_ int, res []uint64) error { got = res; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("workers %d: %v, Trials gives %v", workers, got, want)
		}
	}
}
