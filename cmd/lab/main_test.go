package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/sim"
)

// demo is a test-only experiment: "n" trials per context, mean of uniform draws.
type demo struct{}

func (demo) Name() string { return "demo" }
func (demo) Doc() string  { return "Demo experiment for the lab tests.\nSecond line." }
func (demo) Params() []sim.Param {
	return []sim.Param{
		{Name: "trials", Doc: "trials per context", Kind: sim.KindInt, Default: 10, Min: 1, Max: 1000},
		{Name: "contexts", Doc: "context lengths", Unit: "tokens", Kind: sim.KindInts, Default: []int{4096, 16384}, Min: 1, Max: 131072},
		{Name: "model", Doc: "accumulation model", Kind: sim.KindChoice, Default: "two-level", Choices: []string{"single-level", "two-level"}},
		{Name: "fused", Doc: "fused multiply-add", Kind: sim.KindBool, Default: false},
		{Name: "sleep", Doc: "sleep per trial", Unit: "ms", Kind: sim.KindFloat, Default: 0.0, Min: 0, Max: 1000},
	}
}

// Cost: the lab runs only experiments that estimate their cost.
func (demo) Cost(v sim.Values) sim.Cost {
	return sim.Cost{Memory: 1 << 20, Work: int64(len(v.Ints("contexts")) * v.Int("trials") * 1000)}
}

// demoLimit is the Go memory limit the last demo run ran under
// (TestRunSetsMemoryLimit).
var demoLimit atomic.Int64

func (demo) Run(ctx context.Context, run *sim.Run) error {
	demoLimit.Store(debug.SetMemoryLimit(-1))
	v := run.Values
	sleep := time.Duration(v.Float("sleep") * float64(time.Millisecond))
	run.AddTotal(int64(len(v.Ints("contexts")) * v.Int("trials")))
	for _, c := range v.Ints("contexts") {
		ys, err := sim.Trials(ctx, run, fmt.Sprint(v.String("model"), c), v.Int("trials"), func(_ int, rng *rand.Rand) float64 {
			time.Sleep(sleep)
			return rng.Float64()
		})
		if err != nil {
			return err
		}
		var sum float64
		for _, y := range ys {
			sum += y
		}
		if err := run.Emit(sim.Point{Series: v.String("model"), X: float64(c), Y: sum / float64(len(ys))}); err != nil {
			return err
		}
	}
	run.Summary(map[string]float64{"points": float64(len(v.Ints("contexts")))})
	return nil
}

func init() { sim.Register(demo{}) }

func lab(t *testing.T, ctx context.Context, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = dispatch(ctx, args, &o, &e)
	return o.String(), e.String(), err
}

func TestRunTable(t *testing.T) {
	out, errOut, err := lab(t, context.Background(), "run", "demo", "-trials", "5", "-contexts", "1,2", "-seed", "7", "-quiet")
	if err != nil {
		t.Fatal(err)
	}
	if errOut != "" {
		t.Errorf("stderr with -quiet: %q", errOut)
	}
	t.Logf("table output:\n%s", out)
	lines := strings.Split(out, "\n")
	if lines[0] != "lab run demo -trials 5 -contexts 1,2 -model two-level -fused=false -sleep 0 -seed 7" ||
		!strings.HasPrefix(lines[2], "x  two-level") || !strings.HasPrefix(lines[3], "1 ") ||
		!strings.HasPrefix(lines[4], "2 ") || !strings.Contains(out, "\npoints  2\n") {
		t.Errorf("output:\n%s", out)
	}
	// Same seed, same output; the progress bar goes to stderr and ends its line.
	out2, errOut2, err := lab(t, context.Background(), "run", "demo", "-trials", "5", "-contexts", "1,2", "-seed", "7")
	if err != nil || out2 != out {
		t.Errorf("second run: %v\n%s", err, out2)
	}
	if !strings.Contains(errOut2, "100.0%") || !strings.HasSuffix(errOut2, "\n") {
		t.Errorf("progress: %q", errOut2)
	}
}

// -cpuprofile writes a profile go tool pprof reads (gzip, non-empty) and
// leaves the run's output as without it.
func TestRunCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	out, _, err := lab(t, context.Background(), "run", "demo", "-trials", "5", "-contexts", "1,2", "-seed", "7", "-quiet", "-cpuprofile", path)
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := lab(t, context.Background(), "run", "demo", "-trials", "5", "-contexts", "1,2", "-seed", "7", "-quiet")
	if err != nil || plain != out {
		t.Errorf("output with -cpuprofile differs:\n%s\nwithout:\n%s (%v)", out, plain, err)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("profile %s: %d bytes, err %v (want a gzip file)", path, len(b), err)
	}
	if _, _, err := lab(t, context.Background(), "run", "demo", "-quiet", "-cpuprofile", filepath.Join(t.TempDir(), "no", "dir", "cpu.pprof")); err == nil || !strings.Contains(err.Error(), "-cpuprofile") {
		t.Errorf("profile into a missing folder: %v, want an error naming -cpuprofile", err)
	}
}

// -trace writes an execution trace (runtime/trace's header) and leaves the
// run's output as without it; a file it cannot create is an error naming
// the flag.
func TestRunTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.trace")
	out, _, err := lab(t, context.Background(), "run", "demo", "-trials", "5", "-contexts", "1,2", "-seed", "7", "-quiet", "-trace", path)
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := lab(t, context.Background(), "run", "demo", "-trials", "5", "-contexts", "1,2", "-seed", "7", "-quiet")
	if err != nil || plain != out {
		t.Errorf("output with -trace differs:\n%s\nwithout:\n%s (%v)", out, plain, err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Errorf("trace %s: %d bytes starting %q, err %v (want runtime/trace's header)", path, len(b), b[:min(len(b), 16)], err)
	}
	if _, _, err := lab(t, context.Background(), "run", "demo", "-quiet", "-trace", filepath.Join(t.TempDir(), "no", "dir", "run.trace")); err == nil || !strings.Contains(err.Error(), "-trace") {
		t.Errorf("trace into a missing folder: %v, want an error naming -trace", err)
	}
}

func TestRunJSON(t *testing.T) {
	out, _, err := lab(t, context.Background(), "run", "demo", "-json", "-quiet", "-contexts", "8", "-model", "single-level", "-fused")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"type":"point","series":"single-level","x":8,"y":0.`) ||
		lines[1] != `{"type":"summary","values":{"points":1}}` {
		t.Errorf("output:\n%s", out)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "demo", "-trials", "0"}, `parameter "trials": 0 is below the minimum 1`},
		{[]string{"run", "demo", "-contexts", "4096,262144"}, `parameter "contexts": 262144 is above the maximum 131072 (element 2)`},
		{[]string{"run", "demo", "-model", "x"}, `parameter "model": "x" is not one of single-level, two-level`},
		{[]string{"run", "demo", "-fused=maybe"}, `parameter "fused": "maybe" is not true or false`},
		{[]string{"run", "demo", "-nope", "1"}, `lab run demo: flag provided but not defined: -nope (lab run demo -h lists the parameters)`},
		{[]string{"run", "demo", "extra"}, `lab run demo: unexpected argument "extra" (flags are -name value)`},
		{[]string{"run", "demo", "-seed", "-1"}, `lab run demo: invalid value "-1" for flag -seed: parse error (lab run demo -h lists the parameters)`},
		{[]string{"run", "missing"}, `unknown experiment "missing" (known: `},
		{[]string{"run"}, `usage: lab run NAME`},
		{[]string{"frob"}, `unknown command "frob"`},
	}
	for _, tt := range tests {
		_, _, err := lab(t, context.Background(), tt.args...)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want prefix %q", tt.args, err, tt.want)
		}
	}
}

func TestRunHelpAndList(t *testing.T) {
	out, _, err := lab(t, context.Background(), "run", "demo", "-h")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"usage: lab run demo",
		"Demo experiment for the lab tests.\nSecond line.",
		"  -trials int, default 10\n      trials per context; [1, 1000]\n",
		"  -contexts ints, default 4096,16384\n      context lengths (tokens); [1, 131072]\n",
		"one of single-level | two-level",
		"-seed N",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	out, _, err = lab(t, context.Background(), "list", "experiments")
	if err != nil || !strings.Contains(out, "demo — Demo experiment for the lab tests.\n  -trials") || strings.Contains(out, "Second line") {
		t.Errorf("list: %v\n%s", err, out)
	}
}

func TestRunCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := lab(t, ctx, "run", "demo", "-trials", "1000", "-sleep", "50", "-quiet")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("err %v after %v", err, time.Since(start))
	}
}

// TestTerminalWidth checks that `lab list experiments`, every help and the
// table of a run with many series fit termWidth columns, and that the
// reproduce line, wrapped, is still one shell command.
func TestTerminalWidth(t *testing.T) {
	check := func(what, out string) {
		t.Helper()
		for i, line := range strings.Split(out, "\n") {
			if n := len([]rune(line)); n > termWidth {
				t.Errorf("%s, line %d: %d columns: %q", what, i+1, n, line)
			}
		}
	}
	out, _, err := lab(t, context.Background(), "list", "experiments")
	if err != nil {
		t.Fatal(err)
	}
	check("lab list experiments", out)
	for _, e := range sim.Experiments() {
		out, _, err := lab(t, context.Background(), "run", e.Name(), "-h")
		if err != nil {
			t.Fatal(err)
		}
		check("lab run "+e.Name()+" -h", out)
	}
	w := wrapCommand("lab run needle -contexts 4096,8192,16384,32768,65536,131072 -trials 100 -series all -k-block-n 0 -head-dim 128 -candidates 64 -seed 1", 60)
	check("wrapped command", w)
	if got := strings.Join(strings.Fields(strings.ReplaceAll(w, "\\\n", "")), " "); got != "lab run needle -contexts 4096,8192,16384,32768,65536,131072 -trials 100 -series all -k-block-n 0 -head-dim 128 -candidates 64 -seed 1" {
		t.Errorf("wrapped command changed: %q", got)
	}
	for _, line := range strings.Split(w, "\n") {
		if strings.HasSuffix(strings.TrimSpace(line), "-k-block-n") {
			t.Errorf("a flag was parted from its value: %q", line)
		}
	}
}

// A reproduce line (Values.Flags) is runnable as it is, bool parameters
// included: `-fused true` once read as -fused and a stray argument.
func TestReproduceLineRuns(t *testing.T) {
	exp, _ := sim.Lookup("demo")
	for _, fused := range []string{"true", "false"} {
		v, err := sim.ParseValues(exp.Params(), map[string]string{"trials": "3", "contexts": "1,2", "fused": fused})
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{"run", "demo"}, strings.Fields(v.Flags())...)
		args = append(args, "-quiet", "-json")
		out, errOut, err := lab(t, context.Background(), args...)
		if err != nil {
			t.Fatalf("lab %s: %v\n%s", strings.Join(args, " "), err, errOut)
		}
		if !strings.Contains(out, `"summary"`) {
			t.Errorf("lab %s: no summary in %q", strings.Join(args, " "), out)
		}
	}
}

// TestVerifyDirOneFileAtATime: `lab verify DIR` reads and verifies its
// files one at a time, so a folder of large captures is never all in
// memory (issue 18, red team: 4 × 250 MB captures held 2.9 GiB, every file
// parsed before any was verified): the file before a broken one is
// verified and reported before the broken one stops the command.
func TestVerifyDirOneFileAtATime(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../../testdata/h200-fresh/fresh_wgmma_bf16_inside_allcodes.tsv.gz")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.tsv.gz"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.tsv"), []byte("not a capture\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = dispatch(context.Background(), []string{"verify", dir}, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "b.tsv") {
		t.Errorf("the broken file: %v", err)
	}
	if !strings.Contains(out.String(), "a.tsv.gz") || !strings.Contains(out.String(), "bit-exact") {
		t.Errorf("the file before the broken one was not verified first:\n%s", out.String())
	}
}

// TestBuildNamesBinding: the lab program records the WebGPU binding it
// links (which bundles wgpu-native) with its version.
func TestBuildNamesBinding(t *testing.T) {
	if b := sim.Build(); !strings.Contains(b.Bindings, "github.com/cogentcore/webgpu v") {
		t.Errorf("bindings %q", b.Bindings)
	}
}
