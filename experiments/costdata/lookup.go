package costdata

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrNoRows is wrapped by the lookups' errors when the file has no row of
// the shape asked for.
var ErrNoRows = errors.New("no decode rows")

// The split-KV decode implementations of the capture: ImplSplitKV
// multiplies in the cache's format (BF16 wgmmas on a BF16 cache; on an FP8
// cache an e4m3 query and FP8 wgmmas, FA3's path), ImplSplitKVDequant
// reads an FP8 cache and converts K and V to BF16 after the load (vLLM's
// Triton decode, FlashInfer's decode on an FP8 cache).
const (
	ImplSplitKV        = "triton-splitkv"
	ImplSplitKVDequant = "triton-splitkv-dequant"
)

// DecodeImpl returns the decode implementation the cost models read for a
// shape and cache format: ImplSplitKV for BF16; for an FP8 cache, of the
// split-KV implementations the file measured at that shape, the one with
// the smaller batch-1 time at the longest context both measured (the
// faster kernel is the better stand-in for a production kernel, which is
// at least as fast as ours; which one it was goes into the notes). Ties
// and a single measured implementation give ImplSplitKV when present.
func (f *File) DecodeImpl(s Shape, kv string) string {
	if kv == KVBF16 {
		return ImplSplitKV
	}
	at := map[string]map[int]float64{}
	for _, r := range f.Rows {
		if r.Op == "decode" && r.KV == kv && r.Batch == 1 && r.Window == 0 && r.QHeads == s.QHeads && r.KVHeads == s.KVHeads && r.HeadDim == s.HeadDim &&
			(r.Impl == ImplSplitKV || r.Impl == ImplSplitKVDequant) {
			if at[r.Impl] == nil {
				at[r.Impl] = map[int]float64{}
			}
			at[r.Impl][r.Context] = r.US
		}
	}
	a, b := at[ImplSplitKV], at[ImplSplitKVDequant]
	if len(b) == 0 {
		return ImplSplitKV
	}
	if len(a) == 0 {
		return ImplSplitKVDequant
	}
	best := -1
	for c := range a {
		if _, ok := b[c]; ok && c > best {
			best = c
		}
	}
	if best >= 0 && b[best] < a[best] {
		return ImplSplitKVDequant
	}
	return ImplSplitKV
}

// Curve is a measured cost against one variable: points sorted by X, one
// per X (the fastest measurement where the file holds several, e.g. several
// split counts of one decode shape).
type Curve struct {
	X, Y []float64
}

// newCurve sorts the points by x and keeps the least y of equal x.
func newCurve(xs, ys []float64) Curve {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	var c Curve
	for _, i := range idx {
		if n := len(c.X); n > 0 && c.X[n-1] == xs[i] {
			c.Y[n-1] = min(c.Y[n-1], ys[i])
			continue
		}
		c.X, c.Y = append(c.X, xs[i]), append(c.Y, ys[i])
	}
	return c
}

// At returns the curve at x, piecewise-linear between the measured points.
// Below the first point it returns the first point's y (no extrapolation
// towards zero: a kernel's fixed cost does not shrink with a smaller
// problem). Beyond the last point it extends the line through the last
// two, never below the last y. A curve of one point is that point's y
// everywhere (callers that need a slope check [Curve.Len]).
func (c Curve) At(x float64) float64 {
	n := len(c.X)
	switch {
	case n == 0:
		return math.NaN()
	case n == 1 || x <= c.X[0]:
		return c.Y[0]
	case x >= c.X[n-1]:
		y := c.Y[n-1] + (x-c.X[n-1])*(c.Y[n-1]-c.Y[n-2])/(c.X[n-1]-c.X[n-2])
		return max(y, c.Y[n-1])
	}
	i, _ := slices.BinarySearch(c.X, x)
	if c.X[i] == x {
		return c.Y[i]
	}
	t := (x - c.X[i-1]) / (c.X[i] - c.X[i-1])
	return c.Y[i-1] + t*(c.Y[i]-c.Y[i-1])
}

// Len is the number of measured points.
func (c Curve) Len() int { return len(c.X) }

// Intercept returns the value of the line through the first two points at
// x = 0, clamped to [0, Y[0]]: the part of the cost that does not grow
// with x (a kernel's launch and fixed work), used to scale the part that
// does. A curve of fewer than two points has intercept Y[0].
func (c Curve) Intercept() float64 {
	if len(c.X) < 2 {
		if len(c.Y) == 0 {
			return 0
		}
		return c.Y[0]
	}
	y := c.Y[0] - c.X[0]*(c.Y[1]-c.Y[0])/(c.X[1]-c.X[0])
	return min(max(y, 0), c.Y[0])
}

// Shape is the attention shape of a layer.
type Shape struct {
	QHeads, KVHeads, HeadDim int
}

func (s Shape) String() string {
	return fmt.Sprintf("q_heads %d, kv_heads %d, head_dim %d", s.QHeads, s.KVHeads, s.HeadDim)
}

// curves2 collects the rows passing keep into one curve per outer value
// (outer(r)), each against inner(r); it returns the outer values sorted.
func (f *File) curves2(keep func(Row) bool, outer, inner func(Row) float64) ([]float64, []Curve) {
	xs, ys := map[float64][]float64{}, map[float64][]float64{}
	for _, r := range f.Rows {
		if keep(r) {
			o := outer(r)
			xs[o] = append(xs[o], inner(r))
			ys[o] = append(ys[o], r.US)
		}
	}
	var outs []float64
	for o := range xs {
		outs = append(outs, o)
	}
	slices.Sort(outs)
	cs := make([]Curve, len(outs))
	for i, o := range outs {
		cs[i] = newCurve(xs[o], ys[o])
	}
	return outs, cs
}

// at2 evaluates the curves at inner x and interpolates linearly in the
// outer value v between the neighbouring measured ones, extending the line
// through the last two beyond the largest (never below its value) and
// holding the smallest below it.
func at2(outs []float64, cs []Curve, v, x float64) float64 {
	var pts Curve
	for i, o := range outs {
		pts.X, pts.Y = append(pts.X, o), append(pts.Y, cs[i].At(x))
	}
	return pts.At(v)
}

// Decode returns the time in µs of one decode attention call of one layer
// (split-KV kernel and combine) at batch sequences of context tokens each,
// for shape, kv format and implementation impl. It is piecewise-linear in
// the context between measured contexts (the kernel's time is an affine
// function of the bytes it reads, so linear interpolation keeps that
// line, where a log-log one would bend it), extends the line through the
// last two measured contexts beyond them, and interpolates linearly in
// the batch between measured batches (see [Curve.At] for the ends). It
// returns an error when the file holds no row of the shape, format and
// implementation, or fewer than two contexts at some batch.
func (f *File) Decode(s Shape, kv, impl string, batch int, context float64) (float64, error) {
	outs, cs, err := f.DecodeCurves(s, kv, impl)
	if err != nil {
		return 0, err
	}
	return at2(outs, cs, float64(batch), context), nil
}

// DecodeCurves returns the measured decode curves (µs against context) of
// a shape, format and implementation, one per measured batch (sorted),
// leaving out batches measured at fewer than two contexts (no slope); it
// fails when no batch is left.
func (f *File) DecodeCurves(s Shape, kv, impl string) ([]float64, []Curve, error) {
	return f.DecodeWindowCurves(s, kv, impl, 0)
}

// DecodeWindowCurves is [File.DecodeCurves] for the rows of a sliding
// window (window 0: full attention): the cost of a sliding layer's kernel
// against the context, which a kernel whose grid is sized by the context
// makes grow even though it attends window tokens. The error wraps
// [ErrNoRows] when the file has no row of the shape, format and window.
func (f *File) DecodeWindowCurves(s Shape, kv, impl string, window int) ([]float64, []Curve, error) {
	outs, cs := f.curves2(func(r Row) bool {
		return r.Op == "decode" && r.KV == kv && r.Impl == impl && r.Window == window && r.QHeads == s.QHeads && r.KVHeads == s.KVHeads && r.HeadDim == s.HeadDim
	}, func(r Row) float64 { return float64(r.Batch) }, func(r Row) float64 { return float64(r.Context) })
	if len(outs) == 0 {
		w := ""
		if window > 0 {
			w = fmt.Sprintf(", window %d", window)
		}
		return nil, nil, fmt.Errorf("%s: %w for %s, kv %s, impl %s%s", f.Name, ErrNoRows, s, kv, impl, w)
	}
	var keptO []float64
	var keptC []Curve
	for i, c := range cs {
		if c.Len() >= 2 {
			keptO, keptC = append(keptO, outs[i]), append(keptC, c)
		}
	}
	if len(keptO) == 0 {
		return nil, nil, fmt.Errorf("%s: decode %s, kv %s, impl %s: no batch measured at two contexts or more", f.Name, s, kv, impl)
	}
	return keptO, keptC, nil
}

// tokenCurve is the curve of a per-token op (kv_write, q_quant) of one
// shape and format, against tokens.
func (f *File) tokenCurve(op string, heads, headDim int, kv string) (Curve, error) {
	var xs, ys []float64
	for _, r := range f.Rows {
		h := r.KVHeads
		if op == "q_quant" {
			h = r.QHeads
		}
		if r.Op == op && r.KV == kv && h == heads && r.HeadDim == headDim {
			xs, ys = append(xs, float64(r.Batch)), append(ys, r.US)
		}
	}
	if len(xs) == 0 {
		return Curve{}, fmt.Errorf("%s: no %s rows for %d heads, head_dim %d, kv %s", f.Name, op, heads, headDim, kv)
	}
	return newCurve(xs, ys), nil
}

// KVWriteCurve returns the measured cache-write curve (µs against tokens)
// of one layer: a copy for bf16, scale-saturate-cast-store for fp8.
func (f *File) KVWriteCurve(kvHeads, headDim int, kv string) (Curve, error) {
	return f.tokenCurve("kv_write", kvHeads, headDim, kv)
}

// QQuantCurve returns the measured query-quantization curve (µs against
// tokens) of one layer.
func (f *File) QQuantCurve(qHeads, headDim int, kv string) (Curve, error) {
	return f.tokenCurve("q_quant", qHeads, headDim, kv)
}

// LinearCurve returns the measured bf16 GEMM curve [m × k]·[k × n] (µs
// against m) and the rows' name.
func (f *File) LinearCurve(n, k int) (Curve, string, error) {
	var xs, ys []float64
	name := ""
	for _, r := range f.Rows {
		if r.Op == "linear" && r.N == n && r.K == k {
			xs, ys = append(xs, float64(r.M)), append(ys, r.US)
			name = r.Name
		}
	}
	if len(xs) == 0 {
		return Curve{}, "", fmt.Errorf("%s: no linear rows for k %d → n %d", f.Name, k, n)
	}
	return newCurve(xs, ys), name, nil
}

// PrefillCurve returns the measured causal prefill curve of one layer:
// µs against the query-key pairs a causal pass over the context computes,
// context²/2 (the work is quadratic in the context, so interpolating in
// the pairs keeps a + b·context² exact), and the registers and spills of
// the row at the longest context (-1 unknown).
func (f *File) PrefillCurve(s Shape, impl string) (c Curve, registers, spills int, err error) {
	var xs, ys []float64
	longest := -1
	registers, spills = -1, -1
	for _, r := range f.Rows {
		if r.Op == "prefill" && r.Impl == impl && r.QHeads == s.QHeads && r.KVHeads == s.KVHeads && r.HeadDim == s.HeadDim {
			x := float64(r.Context)
			xs, ys = append(xs, x*x/2), append(ys, r.US)
			if r.Context > longest {
				longest, registers, spills = r.Context, r.Registers, r.Spills
			}
		}
	}
	if len(xs) == 0 {
		return Curve{}, -1, -1, fmt.Errorf("%s: no prefill rows for %s, impl %s", f.Name, s, impl)
	}
	return newCurve(xs, ys), registers, spills, nil
}

// PrefillShapes returns the distinct shapes of the prefill rows, in the
// order they first appear.
func (f *File) PrefillShapes() []Shape {
	var out []Shape
	for _, r := range f.Rows {
		s := Shape{r.QHeads, r.KVHeads, r.HeadDim}
		if r.Op == "prefill" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// StreamBandwidth returns the achieved HBM bandwidth in bytes per second
// of the largest stream row: bytes / time, where a stream row's bytes are
// the bytes moved (a copy of N bytes reads N and writes N: the capture
// records 2N).
func (f *File) StreamBandwidth() (float64, error) {
	best := Row{}
	for _, r := range f.Rows {
		if r.Op == "stream" && r.Bytes > best.Bytes {
			best = r
		}
	}
	if best.Bytes == 0 {
		return 0, fmt.Errorf("%s: no stream rows", f.Name)
	}
	return best.Bytes / (best.US * 1e-6), nil
}

// Launch returns the per-kernel cost in µs of impl "graph" (inside a CUDA
// graph) or "eager" (the least where several rows give it).
func (f *File) Launch(impl string) (float64, error) {
	us := math.Inf(1)
	for _, r := range f.Rows {
		if r.Op == "launch" && r.Impl == impl {
			us = min(us, r.US)
		}
	}
	if math.IsInf(us, 1) {
		return 0, fmt.Errorf("%s: no launch row with impl %q", f.Name, impl)
	}
	return us, nil
}

// Scaled returns the curve with the part above its intercept multiplied by
// r: y' = I + (y − I) · r, I = [Curve.Intercept]. It carries a cost whose
// growing part is set by one resource (bandwidth, compute) to a GPU with r
// times the time per unit of that resource, keeping the fixed part.
func (c Curve) Scaled(r float64) Curve {
	i := c.Intercept()
	out := Curve{X: slices.Clone(c.X), Y: make([]float64, len(c.Y))}
	for k, y := range c.Y {
		out.Y[k] = i + (y-i)*r
	}
	return out
}

// Interp2 evaluates curves measured at outer values outs (sorted; e.g. one
// decode curve per batch) at inner x, and interpolates linearly in the
// outer value v between the neighbouring measured ones, as [Curve.At] does
// (held below the smallest, the line through the last two beyond).
func Interp2(outs []float64, cs []Curve, v, x float64) float64 { return at2(outs, cs, v, x) }

// Slope returns the curve's rate of growth at x: the slope of the measured
// segment holding x, of the first segment below the first point and of the
// last beyond the last (0 for a curve of fewer than two points). It prices
// an increment of work (a prefill chunk) at the rate of the work around it.
func (c Curve) Slope(x float64) float64 {
	n := len(c.X)
	if n < 2 {
		return 0
	}
	i, _ := slices.BinarySearch(c.X, x)
	i = min(max(i, 1), n-1)
	return (c.Y[i] - c.Y[i-1]) / (c.X[i] - c.X[i-1])
}

// GEMMRate returns the highest achieved bf16 GEMM throughput of the linear
// rows in FLOP/s (2·m·n·k / time).
func (f *File) GEMMRate() (float64, error) {
	best := 0.0
	for _, r := range f.Rows {
		if r.Op == "linear" {
			best = max(best, 2*float64(r.M)*float64(r.N)*float64(r.K)/(r.US*1e-6))
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("%s: no linear rows", f.Name)
	}
	return best, nil
}
