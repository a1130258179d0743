package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/fp8lab/fp8lab/accum"
	_ "github.com/fp8lab/fp8lab/experiments"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/pmath"
	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

// chromiumPath finds Debian's Chromium. Without it the browser tests skip,
// except under CI (CI=true), where they fail: `make test` installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Chromium is missing (CI=true): apt-get install -y chromium, or make test-deps")
	}
	t.Skip("Chromium not found: the browser tests need Debian's chromium (apt-get install -y chromium); they run in CI")
	return ""
}

var wasmBuild struct {
	once sync.Once
	dir  string
	err  error
}

// TestMain removes the WebAssembly build of the browser tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if wasmBuild.dir != "" {
		os.RemoveAll(wasmBuild.dir)
	}
	os.Exit(code)
}

// buildWASM builds the browser's registry (with the test experiment, tag
// labtest) and copies the matching wasm_exec.js, once per test binary.
func buildWASM(t *testing.T) string {
	t.Helper()
	wasmBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "fp8lab-wasm-")
		if err != nil {
			wasmBuild.err = err
			return
		}
		wasmBuild.dir = dir
		root, _ := filepath.Abs("..")
		cmd := exec.Command("go", "build", "-tags", "labtest", "-o", filepath.Join(dir, "lab.wasm"), "./wasm")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			wasmBuild.err = fmt.Errorf("building the wasm registry: %v\n%s", err, out)
			return
		}
		goroot, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			wasmBuild.err = err
			return
		}
		js, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "wasm_exec.js"))
		if err != nil {
			wasmBuild.err = err
			return
		}
		wasmBuild.err = os.WriteFile(filepath.Join(dir, "wasm_exec.js"), js, 0o644)
	})
	if wasmBuild.err != nil {
		t.Fatal(wasmBuild.err)
	}
	return wasmBuild.dir
}

// browser starts headless Chromium with the flags of browser-webgpu.md and
// every host but 127.0.0.1 unresolvable, so that a request leaving the lab
// would fail.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("headless", "new"),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("enable-unsafe-webgpu", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1050),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no timeout
		t.Fatal(err)
	}
	return ctx
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, func(p *cdpruntime.EvaluateParams) { p.AwaitPromise = new(true) }))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func poll(t *testing.T, ctx context.Context, expr string, timeout time.Duration) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s: %v", expr, err)
	}
}

// setParam types a value into the form.
func setParam(t *testing.T, ctx context.Context, name, value string) {
	t.Helper()
	eval[chromedp.Void](t, ctx, fmt.Sprintf(`(() => { const i = document.getElementById(%q); i.value = %q; i.dispatchEvent(new Event('input')); })()`, "param-"+name, value))
}

// chartSeries returns what the open run's chart holds.
func chartSeries(t *testing.T, ctx context.Context) map[string][][2]*float64 {
	t.Helper()
	raw := eval[[]byte](t, ctx, `JSON.stringify(lab.chartSeries())`)
	var s string
	json.Unmarshal(raw, &s)
	var out map[string][][2]*float64
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("chart series %s: %v", s, err)
	}
	return out
}

// TestBrowser opens the lab in headless Chromium, runs contraction (a small
// K) on the server and in WebAssembly, checks that the chart holds the
// streamed points and that both runs agree, that a bad parameter is
// refused with the server's reason, measures the first point's latency and
// the WASM chain's speed, and saves a screenshot (to $LAB_SCREENSHOT, e.g.
// docs/img/lab.png, or to the temporary folder).
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	wasmDir := buildWASM(t)
	l := newTestLab(t, Options{WASM: os.DirFS(wasmDir)})
	if _, err := sim.Lookup("contraction"); err != nil {
		t.Fatalf("the contraction experiment is not registered: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#exp/contraction")); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.ready === 'true' && !!document.getElementById('param-K')`, 20*time.Second)

	// A bad parameter is refused with the server's reason, next to the field.
	setParam(t, tctx, "K", "1024,0")
	eval[chromedp.Void](t, tctx, `document.getElementById('run-server').click()`)
	poll(t, tctx, `!document.getElementById('form-error').hidden`, 10*time.Second)
	msg := eval[string](t, tctx, `document.getElementById('form-error').textContent`)
	if want := `parameter "K": 0 is below the minimum 1 (element 2)`; msg != want {
		t.Errorf("form error %q, want %q", msg, want)
	}
	if !eval[bool](t, tctx, `document.getElementById('param-K').classList.contains('invalid')`) {
		t.Error("the refused field is not marked")
	}
	if runs, _ := l.store.List(notebook.Query{}); len(runs) != 0 {
		t.Errorf("a refused run was recorded: %+v", runs)
	}

	// The same run on the server and in the browser; the page is idle
	// (the worker has compiled the WebAssembly) when Run is clicked.
	poll(t, tctx, `document.getElementById('run-browser').dataset.ready === 'true'`, 60*time.Second)
	setParam(t, tctx, "K", "1024,4096,16384")
	setParam(t, tctx, "trials", "8")
	eval[chromedp.Void](t, tctx, `document.getElementById('run-server').click()`)
	poll(t, tctx, `lab.view && lab.view.kind === 'run' && lab.view.ended && !lab.view.drawPending`, 60*time.Second)
	serverID := eval[string](t, tctx, `lab.view.id`)
	server := l.get(serverID)
	firstMs := eval[float64](t, tctx, fmt.Sprintf(`lab.timings[%q].firstPoint - lab.timings[%q].click`, serverID, serverID))
	t.Logf("timings of the server run (ms after the click): %s", eval[string](t, tctx, fmt.Sprintf(`(() => { const t = lab.timings[%q]; return ['created', 'wsOpen', 'firstData', 'firstPoint'].map((k) => k + ' ' + (t[k] - t.click).toFixed(0)).join(', ') + '; the first draw took ' + t.drawMs.toFixed(0); })()`, serverID)))
	serverChart := chartSeries(t, tctx)
	checkChart(t, "server run", serverChart, l.points(serverID))
	if server.State != notebook.Done {
		t.Fatalf("server run %s: %s %s", serverID, server.State, server.Error)
	}

	eval[chromedp.Void](t, tctx, `document.getElementById('run-browser').click()`)
	poll(t, tctx, fmt.Sprintf(`lab.view && lab.view.kind === 'run' && lab.view.id !== %q && lab.view.ended && !lab.view.drawPending`, serverID), 120*time.Second)
	browserID := eval[string](t, tctx, `lab.view.id`)
	br := l.get(browserID)
	if br.State != notebook.Done || br.Origin != notebook.OriginBrowser || !strings.HasPrefix(br.Platform, "js/wasm") {
		t.Fatalf("browser run %s: %s %q origin %s platform %q", browserID, br.State, br.Error, br.Origin, br.Platform)
	}
	browserChart := chartSeries(t, tctx)
	checkChart(t, "browser run", browserChart, l.points(browserID))
	agree(t, l.points(serverID), l.points(browserID))
	// The browser computed its hot loops with the WebAssembly kernels
	// (internal/wasmk), which the run says in a note.
	if !slices.ContainsFunc(br.Notes, func(n string) bool { return strings.HasPrefix(n, "WebAssembly SIMD kernels loaded") }) {
		t.Errorf("the browser run did not say that its WebAssembly kernels loaded: notes %q", br.Notes)
	}

	// The two runs overlaid in the comparison view.
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#compare/"+serverID+","+browserID)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `+(document.getElementById('compare-chart').dataset.points || 0) > 0`, 20*time.Second)
	if n := eval[int](t, tctx, `+document.getElementById('compare-chart').dataset.points`); int64(n) != server.Points+br.Points {
		t.Errorf("comparison holds %d points, want %d", n, server.Points+br.Points)
	}
	t.Logf("the browser's registry: %s", eval[string](t, tctx, `[...lab.wasm.experiments].join(', ')`))

	// The screenshot of the docs: the server run, with the H200 markers.
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#run/"+serverID)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `lab.view && lab.view.ended && +document.getElementById('chart').dataset.points > 0`, 20*time.Second)
	eval[chromedp.Void](t, tctx, `document.getElementById('title').value = 'small K'; document.getElementById('note').value = 'never-promoted wgmma drifts away from every32/every128 as K grows; the H200 captures (◆) sit on the simulation.'; document.getElementById('save-note').click()`)
	poll(t, tctx, `document.getElementById('save-status').textContent === 'saved'`, 10*time.Second)
	if r := l.get(serverID); r.Title != "small K" || !strings.HasPrefix(r.Note, "never-promoted") {
		t.Errorf("notes not saved: %q %q", r.Title, r.Note)
	}
	if err := chromedp.Do(tctx, chromedp.EmulateViewport(1440, 1480)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the chart follows the resize
	png, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	// docs/img/lab.png is committed: it is rewritten only when asked
	// (LAB_SCREENSHOT=docs/img/lab.png, see web/Makefile-draft.mk), so that a
	// test run leaves the tree clean.
	shot := filepath.Join(os.TempDir(), "fp8lab-lab.png")
	if p := os.Getenv("LAB_SCREENSHOT"); p != "" {
		shot = p
		if !filepath.IsAbs(p) {
			shot = filepath.Join("..", p) // relative to the module root
		}
	}
	if err := os.MkdirAll(filepath.Dir(shot), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	// First point on the chart after Run: five more small runs on the
	// server without the captures (whose loading the experiment does before
	// its first point), from the experiment's page.
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#exp/contraction")); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.ready === 'true' && document.getElementById('run-browser').dataset.ready === 'true'`, 60*time.Second)
	setParam(t, tctx, "K", "1024,4096,16384")
	setParam(t, tctx, "trials", "8")
	eval[chromedp.Void](t, tctx, `document.getElementById('param-captures').value = 'off'`)
	var offMs []float64
	for range 5 {
		eval[chromedp.Void](t, tctx, `location.hash = '#exp/contraction'`)
		poll(t, tctx, `!document.getElementById('exp-view').hidden && (!lab.view)`, 10*time.Second)
		eval[chromedp.Void](t, tctx, `document.getElementById('run-server').click()`)
		poll(t, tctx, `lab.view && lab.view.kind === 'run' && lab.view.ended && !lab.view.drawPending`, 30*time.Second)
		offMs = append(offMs, eval[float64](t, tctx, `lab.timings[lab.view.id].firstPoint - lab.timings[lab.view.id].click`))
	}
	sort.Float64s(offMs)
	median := offMs[len(offMs)/2]

	// Cancel, on the server and in the browser (which terminates the worker
	// and starts a fresh one).
	for _, where := range []string{"server", "browser"} {
		eval[chromedp.Void](t, tctx, `location.hash = '#exp/lab-demo'`)
		poll(t, tctx, `!!document.getElementById('param-n') && document.getElementById('run-browser').dataset.ready === 'true'`, 60*time.Second)
		setParam(t, tctx, "n", "100000")
		setParam(t, tctx, "delay", "2000")
		eval[chromedp.Void](t, tctx, `document.getElementById('run-`+where+`').click()`)
		poll(t, tctx, `lab.view && lab.view.kind === 'run' && lab.view.store.count > 5 && !document.getElementById('cancel').hidden`, 30*time.Second)
		id := eval[string](t, tctx, `lab.view.id`)
		eval[chromedp.Void](t, tctx, `document.getElementById('cancel').click()`)
		poll(t, tctx, `lab.view.ended`, 10*time.Second)
		if r := l.get(id); r.State != notebook.Cancelled {
			t.Errorf("%s run cancelled from the page: %s", where, r.State)
		}
	}
	poll(t, tctx, `document.getElementById('run-browser').dataset.ready === 'true'`, 60*time.Second) // a fresh worker

	// WASM throughput of the sm90 wgmma chain, as a fraction of native.
	const model, K = "sm90.wgmma.e4m3.f32", 1 << 16
	wasmRes := eval[benchJSON](t, tctx, fmt.Sprintf(`lab.bench(%q, %d, 1500)`, model, K))
	native := nativeChain(model, K, 1500*time.Millisecond)
	if wasmRes.Check != native.Check {
		t.Errorf("the chain's result differs: wasm %v, native %v", wasmRes.Check, native.Check)
	}
	t.Logf("first point on the chart after Run (server, contraction K=1024,4096,16384 trials=8): %.0f ms with the H200 captures (default), %.0f ms median of %v without",
		firstMs, median, offMs)
	t.Logf("chain %s K=%d: wasm %.3g products/s, native %.3g products/s (one core): wasm/native = %.2f",
		model, K, wasmRes.ProductsPS, native.ProductsPS, wasmRes.ProductsPS/native.ProductsPS)
	if median > 300 && !raceEnabled {
		t.Errorf("first point after %.0f ms (median), target 300 ms", median)
	}
}

type benchJSON struct {
	ProductsPS float64 `json:"products_per_s"`
	Check      float32 `json:"check"`
	Error      string  `json:"error"`
}

// nativeChain is wasm/bench.go's benchChain, natively.
func nativeChain(model string, k int, d time.Duration) benchJSON {
	m := accum.MustLookup(model)
	r := rand.New(rand.NewPCG(1, 99)) // wasm/bench.go's inputs
	a, b := make([]uint16, k), make([]uint16, k)
	for i := range a {
		e := -pmath.Log(1 - r.Float64())
		a[i] = uint16(fp8.EncodeE4M3(float32(256*e/8), fp8.SatFinite))
		b[i] = uint16(fp8.EncodeE4M3(float32(pmath.NormFloat64(r)), fp8.SatFinite))
	}
	var res benchJSON
	dots := 0
	start := time.Now()
	for time.Since(start) < d || dots == 0 {
		res.Check = m.Dot(a, b, 0)
		dots++
	}
	res.ProductsPS = float64(k) * float64(dots) / time.Since(start).Seconds()
	return res
}

// checkChart checks that the chart holds every point of the run: those a
// log axis cannot show (exact zeros) and the non-finite ones too, at the
// axis floor.
func checkChart(t *testing.T, what string, chart map[string][][2]*float64, pts []sim.Point) {
	t.Helper()
	want := map[string]int{}
	for _, p := range pts {
		if strings.HasSuffix(p.Series, " · trials") {
			continue // per-trial values: the distribution panel draws them
		}
		want[p.Series]++
	}
	if len(pts) == 0 {
		t.Fatalf("%s: no points", what)
	}
	for s, n := range want {
		if got := len(chart[s]); got != n {
			t.Errorf("%s: the chart has %d points of %q, the run %d", what, got, s, n)
		}
	}
	t.Logf("%s: %d points in %d series on the chart", what, len(pts), len(want))
}

// agree checks that the browser's points equal the server's, series by
// series and x by x (the server has the H200 captures besides).
func agree(t *testing.T, server, browser []sim.Point) {
	t.Helper()
	key := func(p sim.Point) string {
		if tr, ok := p.Extra["trial"]; ok { // per-trial values: one point per trial
			return fmt.Sprintf("%s@%g#%g", p.Series, p.X, tr)
		}
		return fmt.Sprintf("%s@%g", p.Series, p.X)
	}
	s := map[string]sim.Point{}
	for _, p := range server {
		s[key(p)] = p
	}
	n := 0
	var keys []string
	for _, p := range browser {
		q, ok := s[key(p)]
		if !ok {
			keys = append(keys, key(p))
			continue
		}
		if math.Float64bits(p.Y) != math.Float64bits(q.Y) {
			t.Errorf("%s: browser %v, server %v", key(p), p.Y, q.Y)
		}
		n++
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		t.Errorf("browser points the server does not have: %v", keys)
	}
	if n == 0 {
		t.Error("no point in common")
	}
	t.Logf("server and browser agree bit for bit on %d points", n)
}

// TestBrowserGPU runs gpu-accum in the page's worker, on the browser's
// WebGPU (SwiftShader in headless Chromium): the WGSL emulation of the
// tensor-core models must equal the Go models bit for bit there too.
func TestBrowserGPU(t *testing.T) {
	ctx := browser(t)
	wasmDir := buildWASM(t)
	l := newTestLab(t, Options{WASM: os.DirFS(wasmDir)})
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#exp/gpu-accum")); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.ready === 'true' && !!document.getElementById('param-K') && document.getElementById('run-browser').dataset.ready !== undefined`, 20*time.Second)
	poll(t, tctx, `document.getElementById('run-browser').dataset.ready === 'true' || document.getElementById('browser-note').textContent.includes('not in')`, 60*time.Second)
	if !eval[bool](t, tctx, `document.getElementById('run-browser').dataset.ready === 'true'`) {
		t.Fatalf("gpu-accum cannot run in the browser: %s", eval[string](t, tctx, `document.getElementById('browser-note').textContent`))
	}
	setParam(t, tctx, "K", "256,1024")
	setParam(t, tctx, "trials", "4")
	eval[chromedp.Void](t, tctx, `document.getElementById('run-browser').click()`)
	poll(t, tctx, `lab.view && lab.view.kind === 'run' && lab.view.ended && !lab.view.drawPending`, 90*time.Second)
	id := eval[string](t, tctx, `lab.view.id`)
	run := l.get(id)
	t.Logf("gpu-accum in the browser: %s %q, %d points, summary %v, notes %q", run.State, run.Error, run.Points, run.Summary, run.Notes)
	if run.State != notebook.Done {
		t.Fatalf("gpu-accum in the browser: %s: %s", run.State, run.Error)
	}
	if m, ok := run.Summary["wgsl_mismatches"]; !ok || m != 0 {
		t.Errorf("wgsl_mismatches = %v (present %v)", m, ok)
	}
}
