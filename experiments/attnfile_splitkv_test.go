package experiments

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/tensorfile"
)

// The split-KV check of issue 15 item 5: attention-file's -o outputs
// against a real H200 FP8 split-KV kernel of the same structure
// (tools/capture/splitkv_probe.py) on inputs the project had not seen,
// at 32k and 128k tokens, 1, 4, 16 and 64 splits, promotions 0 and 1:
// every O within 1e-5 relative L2. The inputs are regenerated here bit for
// bit (attention.MakeH200InputsWith with the probe's seed; their sha256
// must equal the probe's) and written as the probe wrote them (float32,
// thd). The kernel compiled with FMA contraction on (the _fma outputs) is
// reported, not held to the target: the simulation rounds l·alpha and
// O·alpha before each add. The H200's outputs of 2026-12-01 are in
// testdata/h200-splitkv (splitkv_h200.npz, splitkv_log.json, probe.txt);
// FP8LAB_SPLITKV_RESULTS names another run's $OUT instead.
func TestSplitKVH200Probe(t *testing.T) {
	if testing.Short() {
		t.Skip("long (about 15 s): regenerates 128k-token inputs and runs attention-file on them")
	}
	dir := os.Getenv("FP8LAB_SPLITKV_RESULTS")
	if dir == "" {
		dir = filepath.Join("..", "testdata", "h200-splitkv")
	}
	const seed, qh, d = 20270417, 8, 128
	b, err := os.ReadFile(filepath.Join(dir, "splitkv_log.json"))
	if err != nil {
		t.Fatal(err)
	}
	var log map[string]any
	if err := json.Unmarshal(b, &log); err != nil {
		t.Fatalf("splitkv_log.json: %v", err)
	}
	t.Logf("probe: torch %v, triton %v, CUDA %v, %v (%v), wgmma in the PTX: %v", log["torch"], log["triton"], log["cuda"], log["gpu"], log["nvidia_smi"], log["wgmma"])
	zr, err := zip.OpenReader(filepath.Join(dir, "splitkv_h200.npz"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	kernel := map[string][]float64{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		x, err := tensorfile.ReadNPY(f.Name, rc, int64(f.UncompressedSize64), tensorfile.Options{})
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		kernel[strings.TrimSuffix(f.Name, ".npy")] = f64s(x.Data)
	}
	for _, n := range []int{32768, 131072} {
		in, err := attention.MakeH200InputsWith(n, seed, attention.H200Alpha, attention.H200Mu, attention.H200SigmaK)
		if err != nil {
			t.Fatal(err)
		}
		q := in.Q[:qh*d] // the first 8 query rows as 8 heads of one query token
		h := sha256.New()
		h.Write(f32Bytes(q))
		h.Write(f32Bytes(in.K))
		h.Write(f32Bytes(in.V))
		if got, want := hex.EncodeToString(h.Sum(nil)), log[fmt.Sprintf("N%d_inputs_sha256", n)]; got != want {
			t.Fatalf("N %d: regenerated inputs have sha256 %s, the probe's %v", n, got, want)
		}
		tmp := t.TempDir()
		files := map[string]string{"q": filepath.Join(tmp, "q.npy"), "k": filepath.Join(tmp, "k.npy"), "v": filepath.Join(tmp, "v.npy")}
		for role, x := range map[string]struct {
			shape []int
			data  []float32
		}{"q": {[]int{1, qh, d}, q}, "k": {[]int{n, 1, d}, in.K}, "v": {[]int{n, 1, d}, in.V}} {
			if err := tensorfile.WriteNPY(files[role], x.shape, x.data); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range []int{1, 4, 16, 64} {
			out := t.TempDir()
			rec, err := attnFileRun(t, AttentionFile{OutDir: out}, files, map[string]string{"k-block-n": "96", "splits": strconv.Itoa(s), "promotions": "0,1"})
			if err != nil {
				t.Fatal(err)
			}
			if got := rec.SummaryValues()["splits"]; got != float64(s) {
				t.Fatalf("ran %v splits, asked %d", got, s)
			}
			exact := readF64(t, filepath.Join(out, "o_exact.npy"))
			for _, p := range []int{0, 1} {
				key := fmt.Sprintf("N%d_S%d_p%d", n, s, p)
				want, ok := kernel[key]
				if !ok {
					t.Fatalf("the probe's npz has no %s", key)
				}
				got := readF64(t, filepath.Join(out, fmt.Sprintf("o_promotion%d.npy", p)))
				diff := attention.Compare(got, want).RelL2
				var probe any
				if m, ok := log[key].(map[string]any); ok {
					probe = m["unquantized"]
				}
				t.Logf("N %6d, %2d splits, promotion %d: attention-file vs H200 %.3g (target ≤ 1e-5); relative L2 vs exact float64: H200 %.4g%% (the probe's own float64: %.4g%%), attention-file %.4g%%",
					n, s, p, diff, 100*attention.Compare(want, exact).RelL2, 100*toFloat(probe), 100*attention.Compare(got, exact).RelL2)
				if fma, ok := kernel[key+"_fma"]; ok {
					t.Logf("    the same kernel with FMA contraction on: vs attention-file %.3g, vs the kernel without %.3g", attention.Compare(got, fma).RelL2, attention.Compare(fma, want).RelL2)
				}
				if !(diff <= 1e-5) {
					t.Errorf("%s: attention-file's O differs from the H200 kernel's by %.3g relative L2 (target ≤ 1e-5)", key, diff)
				}
			}
		}
	}
}

func toFloat(x any) float64 {
	if f, ok := x.(float64); ok {
		return f
	}
	return 0
}
