package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/tensorfile"
)

// Issue 16's test of the tables: a new FP8 instruction of a new, fictitious
// GPU is one row of accum's table plus one architecture row, and with
// nothing else changed it is listed (`lab list models`), selectable as
// attention-file's -arch (and its arithmetic is the one that runs: the
// results differ from Hopper's), and `lab verify` checks a capture file
// that names it (and fails on a record it does not reproduce).
func TestNewGPUIsTwoRows(t *testing.T) {
	// sm999 is the new GPU; sm998, a control, is a copy of Hopper's wgmma
	// under new names (its results must be Hopper's, bit for bit).
	const name, control = "sm999.mma.e4m3.f32", "sm998.wgmma.e4m3.f32"
	if err := accum.TestRows(t, accum.Row{Name: name, Arch: "sm999", Kind: accum.KindTFDPA, A: "e4m3", B: "e4m3", C: "f32",
		K: 32, L: 16, F: 10, Rho: accum.RZFP32, EZero: -133, Lists: accum.AsModel,
		Doc: "a fictitious mma k32 e4m3 -> f32: two chained 16-wide steps, F = 10", Source: "none: a test row"},
		accum.Row{Name: control, Arch: "sm998", Kind: accum.KindTFDPA, A: "e4m3", B: "e4m3", C: "f32",
			K: 32, L: 32, F: 13, Rho: accum.RZE8M13, EZero: -133, Lists: accum.AsModel,
			Doc: "sm90.wgmma.e4m3.f32's parameters under another name", Source: "none: a test row"}); err != nil {
		t.Fatal(err)
	}
	if err := attention.TestArches(t,
		attention.Arch{Name: "fictive", Aliases: []string{"sm999"}, GPUs: "no GPU (a test)", SMs: 100,
			SMsFrom: "this test", MMA: "mma", Doc: "a fictitious architecture", Models: map[fp8.Format]string{fp8.FormatE4M3: name}},
		attention.Arch{Name: "hopper-copy", Aliases: []string{"sm998"}, GPUs: "no GPU (a test)", SMs: 132,
			SMsFrom: "this test", MMA: "wgmma", Doc: "Hopper under another name", Models: map[fp8.Format]string{fp8.FormatE4M3: control}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	out, _, err := lab(t, ctx, "list", "models")
	if err != nil || !strings.Contains(out, name+"\n") || !strings.Contains(out, "L=16 F=10") {
		t.Fatalf("list models: %v\n%s", err, out)
	}

	// attention-file with -arch fictive runs the new instruction: its
	// results differ from Hopper's, and the control's equal them.
	dir := t.TempDir()
	for f, shape := range map[string][]int{"q.npy": {2, 2, 64}, "k.npy": {300, 1, 64}, "v.npy": {300, 1, 64}} {
		x := make([]float32, shape[0]*shape[1]*shape[2])
		for i := range x {
			x[i] = float32((i*7919)%23)/7 - 1.5
		}
		if err := tensorfile.WriteNPY(filepath.Join(dir, f), shape, x); err != nil {
			t.Fatal(err)
		}
	}
	run := func(arch string) string {
		t.Helper()
		stdout, _, err := lab(t, ctx, "run", "attention-file", "-quiet", "-json", "-arch", arch, "-q", filepath.Join(dir, "q.npy"),
			"-k", filepath.Join(dir, "k.npy"), "-v", filepath.Join(dir, "v.npy"))
		if err != nil {
			t.Fatalf("-arch %s: %v", arch, err)
		}
		var res []string // the points and the summary
		for _, l := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(l, `{"type":"point"`) || strings.HasPrefix(l, `{"type":"summary"`) {
				res = append(res, l)
			}
		}
		if len(res) < 2 {
			t.Fatalf("-arch %s: no results in\n%s", arch, stdout)
		}
		return strings.Join(res, "\n")
	}
	fict, hopper, cp := run("fictive"), run("hopper"), run("hopper-copy")
	if cp != hopper {
		t.Errorf("the control row did not give Hopper's results:\n%s\n%s", cp, hopper)
	}
	if fict == hopper {
		t.Error("-arch fictive gave Hopper's results: the new row's arithmetic did not run")
	}

	// lab verify on records of the new instruction: small integers, whose
	// sums every T-FDPA step computes exactly, so d is known without the
	// model.
	e4m3 := func(v float32) uint8 { return uint8(fp8.EncodeE4M3(v, fp8.SatFinite)) }
	var b strings.Builder
	fmt.Fprintf(&b, "# fp8lab golden records v1\n# model: %s\n# record: d = step(a, b, c)\n# a-format: e4m3\n# L: 32\n# inputs: small integers (exact sums)\n", name)
	for r := range 20 {
		var ha, hb strings.Builder
		sum := float32(r - 10) // c
		for k := range 32 {
			x, y := float32((r*5+k*3)%5-2), float32((r*3+k*7)%5-2)
			sum += x * y
			fmt.Fprintf(&ha, "%02x", e4m3(x))
			fmt.Fprintf(&hb, "%02x", e4m3(y))
		}
		fmt.Fprintf(&b, "%s\t%s\t%08x\t%08x\n", ha.String(), hb.String(), math.Float32bits(float32(r-10)), math.Float32bits(sum))
	}
	good := filepath.Join(dir, "sm999.tsv")
	if err := os.WriteFile(good, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = lab(t, ctx, "verify", good)
	if err != nil || !strings.Contains(out, "model "+name) || !strings.Contains(out, "20/20 bit-exact") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	// One d off by one ulp: verify fails and says so.
	lines := strings.Split(b.String(), "\n")
	last := lines[len(lines)-2]
	d := last[len(last)-8:]
	var bits uint32
	fmt.Sscanf(d, "%x", &bits)
	lines[len(lines)-2] = last[:len(last)-8] + fmt.Sprintf("%08x", bits+1)
	bad := filepath.Join(dir, "sm999_bad.tsv")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, err = lab(t, ctx, "verify", bad); err == nil || !strings.Contains(out, "19/20") {
		t.Errorf("verify of a wrong record: %v\n%s", err, out)
	}
}
