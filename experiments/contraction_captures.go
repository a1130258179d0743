package experiments

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fp8lab/fp8lab/accum/golden"
	"github.com/fp8lab/fp8lab/sim"
)

// The H200 long-contraction captures in the contraction experiment: finding,
// reading and reproducing them bit for bit.

// contractionCapturesModel is the model the long captures were taken with.
const contractionCapturesModel = "sm90.wgmma.e4m3.f32"

// loadCaptures reads the long-contraction capture files (long_e4m3_K*.txt,
// possibly gzip-compressed as .txt.gz, with any prefix such as "fresh_"),
// sorted by K. It returns an error saying where it looked when there are
// none.
func (c Contraction) loadCaptures() ([]*golden.LongFile, error) {
	var dirs []string
	switch {
	case c.CapturesDir != "":
		dirs = []string{c.CapturesDir}
	case os.Getenv(contractionCapturesEnv) != "":
		dirs = filepath.SplitList(os.Getenv(contractionCapturesEnv))
	default:
		root, err := moduleRoot()
		if err != nil {
			return nil, err
		}
		dirs = []string{
			filepath.Join(root, "..", "shared", "golden", "h200"), // the shared H200 captures
			filepath.Join(root, "testdata", "h200-fresh"),         // fp8lab's own, seed 777
		}
	}
	var paths []string
	for _, dir := range dirs {
		for _, pat := range []string{"*long_e4m3_K*.txt", "*long_e4m3_K*.txt.gz"} {
			p, err := filepath.Glob(filepath.Join(dir, pat))
			if err != nil {
				return nil, err
			}
			paths = append(paths, p...)
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no long_e4m3_K*.txt[.gz] files in %s", strings.Join(dirs, ", "))
	}
	var files []*golden.LongFile
	for _, p := range paths {
		f, err := golden.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if f.Long == nil {
			return nil, fmt.Errorf("%s: a %v file, not a long-contraction file", p, f.Kind)
		}
		if f.Long.Model != contractionCapturesModel {
			return nil, fmt.Errorf("%s: model %q, want %q", p, f.Long.Model, contractionCapturesModel)
		}
		files = append(files, f.Long)
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].K < files[j].K })
	return files, nil
}

// contractionCaptureCount is the agreement of the models with one capture
// file.
type contractionCaptureCount struct {
	every32, every128, outputs, refMismatch int
}

// contractionCaptures recomputes the captured every32 / every128 outputs,
// counts the bit-exact ones, and emits the relative errors of the H200
// kernels and of the model on the captured inputs, one point per file at
// x = K (mean over the 8 rows, each the relative L2 error over the 8
// columns; p99 over 8 rows is their maximum).
func contractionCaptures(ctx context.Context, run *sim.Run, files []*golden.LongFile, summary map[string]float64) error {
	var total contractionCaptureCount
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		cnt, rows, err := contractionCaptureFile(ctx, f)
		if err != nil {
			return err
		}
		run.Advance(int64(len(f.Outputs)) * int64(f.K))
		total.every32 += cnt.every32
		total.every128 += cnt.every128
		total.outputs += cnt.outputs
		total.refMismatch += cnt.refMismatch
		for _, name := range contractionCaptureVariants {
			st := contractionStatsOf(rows[name])
			p := sim.Point{Series: name, X: float64(f.K), Y: st.mean, Extra: map[string]float64{
				"p50": st.p50, "p99": st.p99, "max": st.max, "rows": float64(len(rows[name])),
			}}
			if err := run.Emit(p); err != nil {
				return err
			}
		}
		run.Note(fmt.Sprintf("contraction: H200 capture %s (K=%d): every32 %d/%d and every128 %d/%d bit-exact with accum.Chain(%s)",
			filepath.Base(f.Path), f.K, cnt.every32, cnt.outputs, cnt.every128, cnt.outputs, f.Model))
	}
	summary["captures_files"] = float64(len(files))
	summary["captures_total"] = float64(2 * total.outputs)
	summary["captures_bitexact"] = float64(total.every32 + total.every128)
	summary["captures_every32_bitexact"] = float64(total.every32)
	summary["captures_every128_bitexact"] = float64(total.every128)
	summary["captures_ref_mismatch"] = float64(total.refMismatch)
	return nil
}

// contractionCaptureVariants are the series emitted from the captures.
var contractionCaptureVariants = []string{
	"h200 cublas", "h200 cublas_fast", "h200 every32", "h200 every128",
	"sim wgmma never (h200 inputs)", "sim wgmma every128 (h200 inputs)",
}

// contractionCaptureFile checks one capture file through golden.LongResults
// (the file's model, contractionCapturesModel): it counts the bit-exact
// every32 / every128 outputs and the refs that differ from accum.ExactDot,
// and returns per variant the relative L2 error of each row over its
// captured columns.
func contractionCaptureFile(ctx context.Context, f *golden.LongFile) (contractionCaptureCount, map[string][]float64, error) {
	var cnt contractionCaptureCount
	res, err := golden.LongResults(ctx, f)
	if err != nil {
		return cnt, nil, err
	}
	// Per row I: the outputs of each variant and the refs, over the
	// captured columns J.
	byRow := map[int]map[string][]float64{}
	f32 := func(bits uint32) float64 { return float64(math.Float32frombits(bits)) }
	for _, lr := range res {
		o := lr.Out
		cnt.outputs++
		if math.Float32bits(lr.Every32) == o.Every32 {
			cnt.every32++
		}
		if math.Float32bits(lr.Every128) == o.Every128 {
			cnt.every128++
		}
		if lr.Exact != o.Ref {
			cnt.refMismatch++
		}
		r := byRow[o.I]
		if r == nil {
			r = map[string][]float64{}
			byRow[o.I] = r
		}
		r["ref"] = append(r["ref"], o.Ref)
		r["h200 cublas"] = append(r["h200 cublas"], f32(o.Cublas))
		r["h200 cublas_fast"] = append(r["h200 cublas_fast"], f32(o.CublasFast))
		r["h200 every32"] = append(r["h200 every32"], f32(o.Every32))
		r["h200 every128"] = append(r["h200 every128"], f32(o.Every128))
		r["sim wgmma never (h200 inputs)"] = append(r["sim wgmma never (h200 inputs)"], float64(lr.Never))
		r["sim wgmma every128 (h200 inputs)"] = append(r["sim wgmma every128 (h200 inputs)"], float64(lr.Every128))
	}
	rowIDs := make([]int, 0, len(byRow))
	for i := range byRow {
		rowIDs = append(rowIDs, i)
	}
	sort.Ints(rowIDs)
	rows := map[string][]float64{}
	for _, i := range rowIDs {
		for _, name := range contractionCaptureVariants {
			rel, _ := contractionRelErr(byRow[i][name], byRow[i]["ref"])
			rows[name] = append(rows[name], rel)
		}
	}
	return cnt, rows, nil
}
