package experiments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fp8lab/fp8lab/wgsl"
)

// SharedGPU is one WebGPU device for the GPU runs of a long-lived process
// (`lab serve`): the first run with device gpu opens it (wgsl.OpenAsync,
// while the run draws its inputs, as a run's own device opens), and later
// runs take it as it is, opened and with its pipelines compiled, instead
// of paying both again. No run closes it.
//
// Runs share it as the goroutines of one run do: the Runner serializes its
// calls, and concurrent SimDecodeBatch calls share submissions and get the
// bits of one call at a time. So a run's points do not depend on whether
// its device was shared (TestSharedGPURuns compares them).
//
// The device is closed, which also empties wgsl's pool of packed buffers:
//   - when no run has held it for the idle time given to NewSharedGPU;
//   - after a run that held it failed (Bind's function): the next run opens
//     a new one, so a failed open or a lost device is not kept;
//   - by Close.
//
// A device that is dropped while runs hold it is closed when the last of
// them lets it go. The methods are safe for concurrent use.
type SharedGPU struct {
	idle time.Duration
	// open opens a device (wgsl.OpenAsync; tests give one whose open has
	// failed at once, for a Runner without a GPU).
	open func(context.Context) *wgsl.Runner
	// afterFunc is time.AfterFunc (tests fire the idle timers themselves).
	afterFunc func(time.Duration, func())
	// Log, when set, is told when a device opens (its adapter, or why it
	// did not) and when it closes, and why.
	Log *slog.Logger

	mu     sync.Mutex
	cur    *sharedDevice // the device the next run takes; nil: open one
	closed bool
	opens  int // devices opened (tests)
}

// sharedDevice is one opened device and the runs holding it.
type sharedDevice struct {
	r       *wgsl.Runner
	users   int
	dropped bool   // no longer the current one: closed when users reaches 0
	why     string // why it was dropped (for the log)
	closed  bool   // its runner is closed (or being closed)
	gen     int    // bumped by every take: an idle timer started before does nothing
}

// sharedRun is what Bind puts in a run's context: the shared device and
// the one this run took, if any.
type sharedRun struct {
	s *SharedGPU

	mu   sync.Mutex
	took *sharedDevice
}

type sharedGPUKey struct{}

// DefaultGPUIdle is how long `lab serve` keeps the shared device open
// after its last run (its -gpu-idle flag).
const DefaultGPUIdle = 30 * time.Second

// NewSharedGPU returns a SharedGPU that closes its device when no run has
// held it for idle (idle > 0).
func NewSharedGPU(idle time.Duration) *SharedGPU {
	return &SharedGPU{idle: idle,
		open:      func(ctx context.Context) *wgsl.Runner { return wgsl.OpenAsync(ctx, wgsl.Options{}) },
		afterFunc: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
	}
}

// Bind returns ctx for a run that may take the shared device (the
// experiments' openDevice and openGPU take it instead of opening their
// own), and the function to call with the run's error once the run has
// returned: an error other than a cancellation, in a run that took the
// device, drops the device (the next run opens a new one).
func (s *SharedGPU) Bind(ctx context.Context) (context.Context, func(error)) {
	sr := &sharedRun{s: s}
	return context.WithValue(ctx, sharedGPUKey{}, sr), func(err error) {
		if err == nil || ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return
		}
		sr.mu.Lock()
		d := sr.took
		sr.mu.Unlock()
		if d != nil {
			s.drop(d, fmt.Sprintf("a run on it failed (%v)", err))
		}
	}
}

// Close drops the device: closed now if no run holds it, else when the
// last one lets it go. Runs that ask for a device afterwards open their
// own, as without a SharedGPU.
func (s *SharedGPU) Close() error {
	s.mu.Lock()
	s.closed = true
	d := s.cur
	s.mu.Unlock()
	if d != nil {
		s.drop(d, "closed with the lab")
	}
	return nil
}

// closeDevice closes a dropped d's runner, telling Log why.
func (s *SharedGPU) closeDevice(d *sharedDevice) {
	if s.Log != nil {
		s.Log.Info("shared GPU: device closed", "why", d.why)
	}
	d.r.Close()
}

// drop stops d being the device runs take, and closes it if no run holds
// it.
func (s *SharedGPU) drop(d *sharedDevice, why string) {
	s.mu.Lock()
	if s.cur == d {
		s.cur = nil
	}
	if !d.dropped {
		d.dropped, d.why = true, why
	}
	closeNow := d.users == 0 && !d.closed
	d.closed = d.closed || closeNow
	s.mu.Unlock()
	if closeNow {
		s.closeDevice(d)
	}
}

// take returns the shared device for a run, opening it if there is none,
// and the function the run calls (once or more) when it is done with it.
func (s *SharedGPU) take(ctx context.Context, sr *sharedRun) (*wgsl.Runner, func()) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		r := s.open(ctx)
		return r, func() { r.Close() }
	}
	d := s.cur
	if d == nil {
		// The device outlives the run that opens it: its open is not
		// cancelled with the run.
		d = &sharedDevice{r: s.open(context.WithoutCancel(ctx))}
		s.cur = d
		s.opens++
		if s.Log != nil {
			go func(r *wgsl.Runner) { // Info waits for the open
				if err := r.Err(); err != nil {
					s.Log.Warn("shared GPU: the device did not open; the next GPU run tries again", "err", err)
					return
				}
				s.Log.Info("shared GPU: device open for the lab's GPU runs", "adapter", r.Info().Name, "idle", s.idle)
			}(d.r)
		}
	}
	d.users++
	d.gen++
	s.mu.Unlock()
	sr.mu.Lock()
	sr.took = d
	sr.mu.Unlock()
	var once sync.Once
	return d.r, func() { once.Do(func() { s.letGo(d) }) }
}

// letGo ends one run's hold on d: the last one closes a dropped device,
// or starts the idle timer of the current one.
func (s *SharedGPU) letGo(d *sharedDevice) {
	s.mu.Lock()
	d.users--
	closeNow := d.users == 0 && d.dropped && !d.closed
	d.closed = d.closed || closeNow
	if d.users == 0 && !d.dropped {
		gen := d.gen
		s.afterFunc(s.idle, func() { s.expire(d, gen) })
	}
	s.mu.Unlock()
	if closeNow {
		s.closeDevice(d)
	}
}

// expire closes d if no run has taken or let it go since the timer of gen
// started (a take bumps gen: a device held now has another).
func (s *SharedGPU) expire(d *sharedDevice, gen int) {
	s.mu.Lock()
	if d.gen != gen || d.dropped {
		s.mu.Unlock()
		return
	}
	if s.cur == d {
		s.cur = nil
	}
	d.dropped, d.why, d.closed = true, fmt.Sprintf("no GPU run for %v", s.idle), true
	s.mu.Unlock()
	s.closeDevice(d)
}

// sharedRunOf returns the SharedGPU binding of a run's context, or nil.
func sharedRunOf(ctx context.Context) *sharedRun {
	sr, _ := ctx.Value(sharedGPUKey{}).(*sharedRun)
	return sr
}
