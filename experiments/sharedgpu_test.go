package experiments

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/wgsl"
)

// newTestShared is a SharedGPU whose devices are runners whose open has
// failed at once (no GPU needed), and whose idle timers fire when the test
// says (its fire): its lifecycle is what is under test.
func newTestShared() (*SharedGPU, func(n int)) {
	s := NewSharedGPU(time.Minute)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	s.open = func(context.Context) *wgsl.Runner { return wgsl.OpenAsync(done, wgsl.Options{}) }
	var mu sync.Mutex
	var timers []func()
	s.afterFunc = func(_ time.Duration, f func()) {
		mu.Lock()
		timers = append(timers, f)
		mu.Unlock()
	}
	// fire runs the n oldest pending timers (all when n < 0).
	fire := func(n int) {
		mu.Lock()
		if n < 0 || n > len(timers) {
			n = len(timers)
		}
		due := timers[:n:n]
		timers = timers[n:]
		mu.Unlock()
		for _, f := range due {
			f()
		}
	}
	return s, fire
}

// state is the shared device runs would take now (nil: none), and the
// number of devices opened.
func (s *SharedGPU) state() (*wgsl.Runner, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil, s.opens
	}
	return s.cur.r, s.opens
}

// TestSharedGPULifecycle: runs take one device; it stays while held and
// until the idle time after the last run let it go, and closes then; a
// failed run that held it drops it, a cancelled or successful one does
// not, nor one that never took it; after Close runs open their own.
func TestSharedGPULifecycle(t *testing.T) {
	s, fire := newTestShared()
	gpu, err := sim.ParseValues(Scales{}.Params(), map[string]string{"device": "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, want *wgsl.Runner, opens int) {
		t.Helper()
		if r, n := s.state(); r != want || n != opens {
			t.Fatalf("%s: shared %p after %d opens, want %p after %d", what, r, n, want, opens)
		}
	}

	// Two runs at once take the same device, opened once.
	ctxA, ranA := s.Bind(context.Background())
	ctxB, ranB := s.Bind(context.Background())
	ra, doneA := openDevice(ctxA, gpu)
	rb, doneB := openDevice(ctxB, gpu)
	if ra != rb {
		t.Fatal("two runs at once got two devices")
	}
	check("two runs", ra, 1)
	// Held by one run when the idle time of the other's let-go ends: kept.
	doneA()
	doneA() // a second call changes nothing
	fire(-1)
	check("held by one run at an idle timer", ra, 1)
	// Taken again before the idle time ends: kept.
	doneB()
	ctxC, ranC := s.Bind(context.Background())
	rc, doneC := openDevice(ctxC, gpu)
	fire(-1)
	check("taken before the idle time ended", ra, 1)
	if rc != ra {
		t.Fatal("a run taken before the idle time got another device")
	}
	// Let go, taken and let go again: the first idle timer is stale.
	doneC()
	ctxD, ranD := s.Bind(context.Background())
	_, doneD := openDevice(ctxD, gpu)
	doneD()
	ranA(nil)
	ranB(context.Canceled)
	ranC(nil)
	ranD(nil)
	check("successful and cancelled runs", ra, 1)
	fire(1)
	check("the idle timer of an earlier let-go", ra, 1)
	// The idle time after the last let-go: closed, the next run opens another.
	fire(-1)
	check("idle", nil, 1)
	ctxE, ranE := s.Bind(context.Background())
	re, doneE := openDevice(ctxE, gpu)
	check("after the idle close", re, 2)
	// A run that took it and failed drops it even while another holds it;
	// the holder keeps its runner, the next run opens a new one.
	ctxF, ranF := s.Bind(context.Background())
	rf, doneF := openDevice(ctxF, gpu)
	doneE()
	ranE(errors.New("device lost"))
	check("after a failed run", nil, 2)
	if rf != re {
		t.Fatal("two runs at once got two devices")
	}
	ctxG, ranG := s.Bind(context.Background())
	rg, doneG := openDevice(ctxG, gpu)
	check("after a failed run, the next", rg, 3)
	doneF()
	ranF(nil)
	fire(-1) // the dropped device's holder let it go: no timer for it
	check("a dropped device let go", rg, 3)
	// A run that failed without taking the device drops nothing; nor does
	// a run whose context was cancelled, whatever it returns.
	_, ranH := s.Bind(context.Background())
	ranH(errors.New("bad parameter"))
	cctx, cancel := context.WithCancel(context.Background())
	ctxI, ranI := s.Bind(cctx)
	ri, doneI := openDevice(ctxI, gpu)
	cancel()
	doneI()
	ranI(errors.New("interrupted"))
	check("a run without the device, and a cancelled one", rg, 3)
	if ri != rg {
		t.Fatal("a run got another device than the shared one")
	}
	// Close drops it; later runs open their own device, not shared.
	doneG()
	ranG(nil)
	s.Close()
	check("closed", nil, 3)
	ctxJ, _ := s.Bind(context.Background())
	rj, doneJ := openDevice(ctxJ, gpu)
	rj2, doneJ2 := openDevice(ctxJ, gpu)
	doneJ()
	doneJ2()
	if rj == rj2 {
		t.Fatal("after Close: two opens gave one device")
	}
	check("runs after Close", nil, 3)
	// A CPU run takes nothing.
	cpu, err := sim.ParseValues(Scales{}.Params(), map[string]string{"device": "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	r, done := openDevice(ctxJ, cpu)
	done()
	if r != nil {
		t.Fatal("device cpu got a runner")
	}
}

// TestSharedGPUConcurrent: runs taking, failing and letting go of the
// device from many goroutines (run with -race) leave no device held and
// at most one shared.
func TestSharedGPUConcurrent(t *testing.T) {
	s, fire := newTestShared()
	v, err := sim.ParseValues(Scales{}.Params(), map[string]string{"device": "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 50 {
				ctx, ran := s.Bind(context.Background())
				r, done := openDevice(ctx, v)
				if r == nil {
					t.Error("no runner")
				}
				if (i+j)%7 == 0 {
					time.Sleep(time.Millisecond)
				}
				done()
				if (i+j)%11 == 0 {
					ran(errors.New("failed"))
				} else {
					ran(nil)
				}
				if j%5 == 0 {
					fire(-1)
				}
				if i == 3 && j == 40 {
					s.Close()
				}
			}
		})
	}
	wg.Wait()
	fire(-1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		t.Errorf("after Close and every run: a shared device with %d users", s.cur.users)
	}
	t.Logf("%d devices opened for 800 runs", s.opens)
}

// TestSharedGPURuns: on a real adapter (lavapipe under CI), runs bound to
// a SharedGPU, one after another and two at once, give the points of a
// run on its own device, bit for bit, from one device opened once.
func TestSharedGPURuns(t *testing.T) {
	gpuTestGPU(t) // fails under CI without an adapter, skips elsewhere
	cases := []struct {
		name string
		exp  sim.Experiment
		args map[string]string
	}{
		{"scales", Scales{}, map[string]string{"tokens": "600", "trials": "2", "kv-heads": "2", "q-per-kv": "2", "outlier": "1,100", "device": "gpu"}},
		{"needle", Needle{}, map[string]string{"contexts": "700", "trials": "4", "head_dim": "64", "haystacks": "2", "series": "fp8", "device": "gpu"}},
	}
	run := func(ctx context.Context, e sim.Experiment, args map[string]string) ([]byte, error) {
		v, err := sim.ParseValues(e.Params(), args)
		if err != nil {
			t.Fatal(err)
		}
		rec := &sim.Recorder{}
		if _, err := sim.Execute(ctx, e, v, 3, rec); err != nil {
			return nil, err
		}
		if len(rec.Points()) == 0 {
			t.Fatalf("%s: no points", e.Name())
		}
		return sim.AppendPointsJSON(nil, rec.Points()), nil
	}
	s := NewSharedGPU(time.Minute)
	defer s.Close()
	for _, c := range cases {
		own, err := run(context.Background(), c.exp, c.args)
		if err != nil {
			t.Fatalf("%s on its own device: %v", c.name, err)
		}
		var got [4][]byte
		var errs [4]error
		for i := range 2 { // one after another
			ctx, ran := s.Bind(context.Background())
			got[i], errs[i] = run(ctx, c.exp, c.args)
			ran(errs[i])
		}
		var wg sync.WaitGroup
		for i := 2; i < 4; i++ { // two at once
			wg.Go(func() {
				ctx, ran := s.Bind(context.Background())
				got[i], errs[i] = run(ctx, c.exp, c.args)
				ran(errs[i])
			})
		}
		wg.Wait()
		for i := range got {
			if errs[i] != nil {
				t.Fatalf("%s, shared run %d: %v", c.name, i, errs[i])
			}
			if !bytes.Equal(got[i], own) {
				t.Errorf("%s, shared run %d: its points differ from a run on its own device", c.name, i)
			}
		}
	}
	if _, opens := s.state(); opens != 1 {
		t.Errorf("%d devices opened for the shared runs, want 1", opens)
	}
}

// syncBuffer is a bytes.Buffer safe for the log's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestSharedGPULog: the log says when a device opens (or why not) and when
// it closes, and why: idle, a failed run, the lab's end.
func TestSharedGPULog(t *testing.T) {
	s, fire := newTestShared()
	var out syncBuffer
	s.Log = slog.New(slog.NewTextHandler(&out, nil))
	gpu, err := sim.ParseValues(Scales{}.Params(), map[string]string{"device": "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(want string) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if strings.Contains(out.String(), want) {
				return
			}
		}
		t.Fatalf("the log does not say %q:\n%s", want, out.String())
	}
	ctx, ran := s.Bind(context.Background())
	_, done := openDevice(ctx, gpu)
	waitFor(`msg="shared GPU: the device did not open; the next GPU run tries again"`)
	done()
	ran(nil)
	fire(-1)
	waitFor(`msg="shared GPU: device closed" why="no GPU run for 1m0s"`)
	ctx, ran = s.Bind(context.Background())
	_, done = openDevice(ctx, gpu)
	done()
	ran(errors.New("device lost"))
	waitFor(`why="a run on it failed (device lost)"`)
	ctx, _ = s.Bind(context.Background())
	_, done = openDevice(ctx, gpu)
	s.Close()
	if strings.Contains(out.String(), "closed with the lab") {
		t.Fatal("Close closed a device a run still held")
	}
	done()
	waitFor(`why="closed with the lab"`)
	if n := strings.Count(out.String(), "device closed"); n != 3 {
		t.Errorf("%d closes logged for 3 devices:\n%s", n, out.String())
	}
}
