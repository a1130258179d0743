package wgsl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/trace"
	"strings"
	"sync"
	"time"
)

// EnvAdapter names the environment variable that picks an adapter by a
// case-insensitive substring of its description (see [Options.Adapter]).
const EnvAdapter = "FP8LAB_ADAPTER"

// EnvBackends names the environment variable that says which of
// wgpu-native's backends an open starts: "primary" (the default: Vulkan,
// Metal, D3D12; every backend only when no adapter of those fits the
// request, such as FP8LAB_ADAPTER=opengl) or "all" (every backend at once,
// OpenGL's too, as before 2026-12-07). Other values are an error of
// [Open].
const EnvBackends = "FP8LAB_WGPU_BACKENDS"

// The values of [EnvBackends] and of [AdapterInfo.Backends].
const (
	BackendsPrimary = "primary"
	BackendsAll     = "all"
)

// backendsWanted reads [EnvBackends].
func backendsWanted() (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(os.Getenv(EnvBackends))); v {
	case "", BackendsPrimary:
		return BackendsPrimary, nil
	case BackendsAll:
		return BackendsAll, nil
	default:
		return "", fmt.Errorf("wgsl: %s=%q: want %q or %q", EnvBackends, v, BackendsPrimary, BackendsAll)
	}
}

// OpenTimes is how long the phases of opening a device took, on the
// host's clock.
type OpenTimes struct {
	// Instance is creating wgpu-native's instance (loading and starting
	// the drivers of its backends), Adapters listing the adapters; both
	// summed over the two tries when no primary adapter fitted.
	Instance, Adapters time.Duration
	// Device is choosing the adapter and creating the device.
	Device time.Duration
	// Total is the whole open, the timestamp probe included.
	Total time.Duration
}

// String gives the phases in milliseconds.
func (t OpenTimes) String() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) }
	return fmt.Sprintf("%s ms (instance %s, adapters %s, device %s, the rest %s)", ms(t.Total), ms(t.Instance), ms(t.Adapters), ms(t.Device),
		ms(t.Total-t.Instance-t.Adapters-t.Device))
}

// ErrNoAdapter is wrapped by the error of [Open] when no WebGPU adapter
// exists (no Vulkan/Metal/D3D12/GL driver, or none matching the requested
// name), and when the package was built without cgo.
var ErrNoAdapter = errors.New("wgsl: no usable WebGPU adapter")

// Options configure [Open].
type Options struct {
	// Adapter picks the adapter whose description (name, driver, vendor,
	// backend or type, see [AdapterInfo.String]) contains this text,
	// case-insensitively. Empty means $FP8LAB_ADAPTER, and if that is empty
	// too, the best adapter: a discrete GPU before an integrated one, a
	// virtual one, a CPU (lavapipe, SwiftShader); Vulkan, Metal or D3D12,
	// never OpenGL (an OpenGL adapter only when named: FP8LAB_ADAPTER=opengl).
	Adapter string
	// NoTimestamps forces wall-clock timing even where the adapter has
	// timestamp queries.
	NoTimestamps bool
}

func (o Options) adapterWanted() string {
	if o.Adapter != "" {
		return o.Adapter
	}
	return os.Getenv(EnvAdapter)
}

// AdapterInfo describes the adapter and device a [Runner] uses.
type AdapterInfo struct {
	Name    string // the device name ("NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)")
	Vendor  string
	Driver  string // the driver's description, when the adapter gives one
	Backend string // "vulkan", "metal", "d3d12", "opengl", "webgpu" (in a browser)
	Type    string // "discrete-gpu", "integrated-gpu", "virtual-gpu", "cpu", "unknown"
	// Hardware is true for a GPU (discrete, integrated or virtual), false
	// for a CPU implementation (lavapipe, SwiftShader) or an unknown type.
	Hardware bool
	// Timestamps is true when kernel times come from GPU timestamp
	// queries, false when they are wall-clock times around submit and wait.
	Timestamps bool
	// ShaderF16 is true when the device has the shader-f16 feature
	// (requested wherever the adapter offers it). The bundled WGSL compiler
	// cannot use it yet: see [MathF16].
	ShaderF16 bool
	// MaxBuffer and MaxStorageBinding are the limits requested for the
	// device, in bytes.
	MaxBuffer, MaxStorageBinding uint64
	// MaxWorkgroupStorage is the requested workgroup memory limit, in bytes.
	MaxWorkgroupStorage uint32
	// Others lists the adapters that were not chosen, as String gives them:
	// those of the backends started (OpenGL's only with Backends "all").
	Others []string
	// Backends is which of wgpu-native's backends the open started:
	// [BackendsPrimary] or [BackendsAll] (see [EnvBackends]); empty in a
	// browser.
	Backends string
	// Open is how long the open took, by phase (zero in a browser).
	Open OpenTimes
}

// String gives the adapter in one line: "NAME (TYPE, BACKEND, driver DRIVER)".
func (a AdapterInfo) String() string {
	s := fmt.Sprintf("%s (%s, %s", a.Name, a.Type, a.Backend)
	if a.Driver != "" && a.Driver != a.Name {
		s += ", driver " + a.Driver
	}
	return s + ")"
}

// TimingSource says where a [Timing] comes from.
func (a AdapterInfo) TimingSource() string {
	if a.Timestamps {
		return "timestamp queries"
	}
	return "wall clock around submit and wait"
}

// Timing is the duration of one submission of kernels.
type Timing struct {
	// Wall is the host's time from the first submit to the end of the wait.
	Wall time.Duration
	// GPU is the time between timestamps written before the first and after
	// the last compute pass; zero when the adapter has no timestamp queries
	// (or their values were not plausible: above the wall time).
	GPU time.Duration
}

// Best returns GPU when it is known, Wall otherwise.
func (t Timing) Best() time.Duration {
	if t.GPU > 0 {
		return t.GPU
	}
	return t.Wall
}

// Source returns "timestamp" when GPU is known, "wall" otherwise.
func (t Timing) Source() string {
	if t.GPU > 0 {
		return "timestamp"
	}
	return "wall"
}

// Runner runs fp8lab's WGSL kernels on one WebGPU device. Its methods are
// safe for concurrent use: calls are serialized. A Runner must be closed.
type Runner struct {
	mu     sync.Mutex
	be     backend
	info   AdapterInfo
	closed bool
	// maxInstr overrides the instructions per dispatch of the chain kernel
	// (tests use it to show what lavapipe's loop limit does without the
	// split); 0 means the computed budget.
	maxInstr int
	// warm is the benchmarks' warm-up rule when warmSet (SetWarmup).
	warm    Warmup
	warmSet bool
	// clock is the benchmarks' clock probe (SetClockProbe), nil if none.
	clock ClockProbe
	// opened is closed once be and info are set, or openErr (OpenAsync);
	// nil for a Runner that Open returned.
	opened  chan struct{}
	openErr error
	// sq queues SimDecodeBatch calls for shared submissions (simRun).
	sq simQueue
}

// Open chooses an adapter (see [Options.Adapter]), creates a device with
// explicit limits and returns a Runner. It returns an error wrapping
// [ErrNoAdapter] when there is no usable adapter.
func Open(ctx context.Context, opt Options) (*Runner, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	reg := trace.StartRegion(ctx, "wgsl: open the device")
	be, info, err := openBackend(ctx, opt)
	reg.End()
	if err != nil {
		return nil, err
	}
	return &Runner{be: be, info: info}, nil
}

// OpenAsync is Open on a goroutine of its own: it returns at once, and the
// Runner's methods wait for the device before they use it (Info too),
// returning Open's error if it failed (Info then returns a zero
// AdapterInfo; Err returns the error). A caller draws its inputs while the
// driver starts. Close waits for the open and releases the device. The
// open is the trace region "wgsl: open the device".
func OpenAsync(ctx context.Context, opt Options) *Runner {
	r := &Runner{opened: make(chan struct{})}
	go func() {
		defer close(r.opened)
		if err := ctx.Err(); err != nil {
			r.openErr = err
			return
		}
		defer trace.StartRegion(ctx, "wgsl: open the device").End()
		r.be, r.info, r.openErr = openBackend(ctx, opt)
	}()
	return r
}

// wait waits for an OpenAsync runner's device and returns the open's error.
func (r *Runner) wait() error {
	if r.opened != nil {
		<-r.opened
	}
	if r.openErr != nil {
		return fmt.Errorf("wgsl: opening the device: %w", r.openErr)
	}
	return nil
}

// Err waits for the device (OpenAsync) and returns the open's error, nil
// once the device is open.
func (r *Runner) Err() error { return r.wait() }

// Info describes the adapter and device in use.
func (r *Runner) Info() AdapterInfo {
	r.wait()
	return r.info
}

// Close releases the device. Further calls return an error.
func (r *Runner) Close() error {
	if r.wait() != nil {
		return nil // nothing was opened
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.be.close()
	packPool.drain() // a long-running lab keeps no packed buffers between runs
	return nil
}

// lock takes the runner for one operation (once its device is open).
func (r *Runner) lock() error {
	if err := r.wait(); err != nil {
		return err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errors.New("wgsl: runner is closed")
	}
	return nil
}

// describeAdapter builds the text that Options.Adapter is matched against.
func matchAdapter(desc, want string) bool {
	return strings.Contains(strings.ToLower(desc), strings.ToLower(want))
}
