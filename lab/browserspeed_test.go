//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fp8lab/fp8lab/internal/wasmtest"
	"github.com/fp8lab/fp8lab/sim"
)

// TestBrowserSpeed is issue 17's item 4 measured in the browser itself
// (BENCHMARKS.md, "The browser against one native core"): the runs of
// wasmtest.BrowserRuns in a fresh Web Worker of the lab's page in headless
// Chromium, each run twice in that worker (the first pays V8's compiling
// of what it runs; the page's worker keeps its code for the runs after),
// against the same runs natively in this process on one core
// (GOMAXPROCS 1, the better of two). The browser's points must equal the
// native run's, bit for bit. It is a measurement, not a check of the
// code: it runs only with FP8LAB_BROWSER_SPEED=1, and logs its table
// (Linux: the browser's CPU time is read from /proc).
func TestBrowserSpeed(t *testing.T) {
	if os.Getenv("FP8LAB_BROWSER_SPEED") == "" {
		t.Skip("a measurement: FP8LAB_BROWSER_SPEED=1 times BENCHMARKS.md's browser runs in headless Chromium and natively on one core")
	}
	ctx := browser(t)
	wasmDir := buildWASM(t)
	l := newTestLab(t, Options{WASM: os.DirFS(wasmDir)})
	tctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/")); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.ready === 'true'`, 20*time.Second)
	// A fresh worker (the page's own may be busy loading), each run twice
	// in it: Go's elapsed time of the run inside the worker, the page's
	// wall time from the message to the end event, and the points.
	type browserRun struct {
		Name      string          `json:"name"`
		Rep       int             `json:"rep"`
		ElapsedMs float64         `json:"elapsed_ms"`
		WallMs    float64         `json:"wall_ms"`
		State     string          `json:"state"`
		Error     string          `json:"error"`
		Notes     []string        `json:"notes"`
		Points    json.RawMessage `json:"points"`
		CPU       float64         `json:"-"` // the browser's processes, seconds
	}
	load := `(async () => {
  const t0 = performance.now();
  window.speedWorker = new Worker('/worker.js');
  await new Promise((res, rej) => { window.speedWorker.onmessage = (ev) => {
    if (ev.data.type === 'ready') res(); else if (ev.data.type === 'error') rej(new Error(ev.data.error)); }; });
  return performance.now() - t0;
})()`
	cpu0 := childrenCPU()
	loadMs := eval[float64](t, tctx, load)
	loadCPU := childrenCPU() - cpu0
	// One run in the worker: Go's elapsed time of the run inside it, the
	// page's wall time from the message to the end event, and the points;
	// the browser's CPU time around it (every process of the browser, its
	// compiling threads included).
	var out []browserRun
	for _, r := range wasmtest.BrowserRuns {
		params, err := json.Marshal(r.Params)
		if err != nil {
			t.Fatal(err)
		}
		for rep := range 2 {
			script := fmt.Sprintf(`(async () => {
  const w = window.speedWorker, id = %q, start = performance.now();
  const got = await new Promise((res) => {
    const pts = [], notes = [];
    w.onmessage = (ev) => {
      const m = ev.data;
      if (m.type !== 'event' || m.id !== id) return;
      const e = JSON.parse(m.event);
      if (e.type === 'points') pts.push(...e.points);
      else if (e.type === 'note') notes.push(e.text);
      else if (e.type === 'end') res({ e, pts, notes });
    };
    w.postMessage({ type: 'run', id, experiment: %q, params: %q, seed: '1' });
  });
  return JSON.stringify({ elapsed_ms: got.e.elapsed_ms, wall_ms: performance.now() - start, state: got.e.state,
    error: got.e.error || '', notes: got.notes, points: got.pts });
})()`, fmt.Sprintf("%s-%d", r.Name, rep), r.Name, string(params))
			c0 := childrenCPU()
			var br browserRun
			if err := json.Unmarshal([]byte(eval[string](t, tctx, script)), &br); err != nil {
				t.Fatal(err)
			}
			br.CPU = childrenCPU() - c0
			br.Name, br.Rep = r.Name, rep
			out = append(out, br)
		}
	}
	res := struct {
		LoadMs float64
		Out    []browserRun
	}{loadMs, out}
	t.Logf("the worker loaded (fetched, compiled, started) the module in %.0f ms, %.2f CPU-s of the browser", res.LoadMs, loadCPU)

	// The native runs, one core.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	native, nativeCPU := map[string]float64{}, map[string]float64{}
	nativePoints := map[string][]sim.Point{}
	for _, r := range wasmtest.BrowserRuns {
		exp, err := sim.Lookup(r.Name)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := sim.ParseValues(exp.Params(), r.Params)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			var sink sim.Recorder
			c0 := selfCPU()
			start := time.Now()
			if _, err := sim.Execute(context.Background(), exp, vals, 1, &sink); err != nil {
				t.Fatal(err)
			}
			if s := time.Since(start).Seconds(); native[r.Name] == 0 || s < native[r.Name] {
				native[r.Name] = s
			}
			if c := selfCPU() - c0; nativeCPU[r.Name] == 0 || c < nativeCPU[r.Name] {
				nativeCPU[r.Name] = c
			}
			nativePoints[r.Name] = sink.Points()
		}
	}
	for _, br := range res.Out {
		if br.State != "done" {
			t.Fatalf("%s (run %d) in the browser: %s %s", br.Name, br.Rep+1, br.State, br.Error)
		}
		var ps []apiPoint
		if err := json.Unmarshal(br.Points, &ps); err != nil {
			t.Fatal(err)
		}
		sp := make([]sim.Point, len(ps))
		for i, p := range ps {
			sp[i] = p.sim()
		}
		if len(sp) != len(nativePoints[br.Name]) {
			t.Errorf("%s (run %d): %d points in the browser, %d natively", br.Name, br.Rep+1, len(sp), len(nativePoints[br.Name]))
		}
		agree(t, nativePoints[br.Name], sp)
		if br.Rep == 0 && !slices.ContainsFunc(br.Notes, func(n string) bool { return len(n) >= 31 && n[:31] == "WebAssembly SIMD kernels loaded" }) {
			t.Errorf("%s: the browser run did not say its kernels loaded: %q", br.Name, br.Notes)
		}
		n, nc := native[br.Name], nativeCPU[br.Name]
		t.Logf("%-12s run %d: browser %.2f s in the worker (%.2f s at the page), %.2f CPU-s; native one core %.2f s, %.2f CPU-s; browser/native %.2f (page %.2f, CPU %.2f)",
			br.Name, br.Rep+1, br.ElapsedMs/1e3, br.WallMs/1e3, br.CPU, n, nc, br.ElapsedMs/1e3/n, br.WallMs/1e3/n, br.CPU/nc)
	}
}

// selfCPU is this process's user and system time so far, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// childrenCPU is the user and system time so far of every live process
// descended from this one (the browser's), in seconds, from /proc (NaN
// where there is none).
func childrenCPU() float64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return math.NaN()
	}
	type proc struct {
		ppid int
		cpu  float64
	}
	procs := map[int]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid … utime stime: fields after the comm's ")".
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		procs[pid] = proc{ppid, (ut + st) / 100} // USER_HZ, 100 on Linux
	}
	self := os.Getpid()
	total := 0.0
	for _, p := range procs {
		for q := p.ppid; q > 1; q = procs[q].ppid {
			if q == self {
				total += p.cpu
				break
			}
			if _, ok := procs[q]; !ok {
				break
			}
		}
	}
	return total
}
