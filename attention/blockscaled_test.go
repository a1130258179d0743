package attention

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// nearestCodeBrute is the code of f nearest to x by search over every code:
// ties to the even code, saturating at the largest finite value, the sign
// of x kept (unsigned formats: negative x gives 0).
func nearestCodeBrute(f fp8.Format, x float64) uint64 {
	a := math.Abs(x)
	if !f.Signed() && x < 0 {
		a = 0
	}
	best, bestC := math.Inf(1), uint64(0)
	vals := bruteValues(f)
	top := 0.0
	for _, v := range vals {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			top = max(top, v)
		}
	}
	a = min(a, top) // saturate (and keep |x| − v exact for huge x)
	for c := uint64(0); c < 1<<f.CodeBits(); c++ {
		if f.Signed() && c&uint64(f.SignBit()) != 0 {
			continue
		}
		v := vals[c]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if d := math.Abs(v - a); d < best || d == best && c&1 == 0 {
			best, bestC = d, c
		}
	}
	if f.Signed() && math.Signbit(x) { // RNE keeps the sign of a value that rounds to 0

		bestC |= uint64(f.SignBit())
	}
	return bestC
}

var bruteTables sync.Map

// bruteValues is the value of every code of f.
func bruteValues(f fp8.Format) []float64 {
	if t, ok := bruteTables.Load(f); ok {
		return t.([]float64)
	}
	t := make([]float64, 1<<f.CodeBits())
	for c := range t {
		t[c] = f.Value(uint32(c))
	}
	bruteTables.Store(f, t)
	return t
}

// blockQuantBrute quantizes one block as the block-scaled path documents
// it, written independently of the package's encoders: MX s = 2^(floor(log2
// amax) − emax) (1 for amax 0), code exponent + 127; NVFP4 s = ue4m3(amax /
// 6 / t) RNE; elements RNE(y / (s·t)) saturating, 0 when s·t is 0.
func blockQuantBrute(f KVFormat, x []float32, tensor float32) (codes []uint64, scale uint8) {
	var a float32
	for _, y := range x {
		a = max(a, float32(math.Abs(float64(y))))
	}
	elem := f.Elem()
	var s float32
	if f == KVNVFP4 {
		c := nearestCodeBrute(fp8.FormatUE4M3, float64(a/6/tensor))
		s, scale = float32(fp8.FormatUE4M3.Value(uint32(c))), uint8(c)
	} else {
		e := 0
		if a > 0 {
			for math.Ldexp(1, e) > float64(a) {
				e--
			}
			for math.Ldexp(1, e+1) <= float64(a) {
				e++
			}
			e -= map[fp8.Format]int{fp8.FormatE4M3: 8, fp8.FormatE2M1: 2}[elem]
		}
		s, scale = float32(math.Ldexp(1, e)), uint8(e+127)
	}
	div := s * tensor
	codes = make([]uint64, len(x))
	for i, y := range x {
		if div != 0 {
			codes[i] = nearestCodeBrute(elem, float64(y/div))
		}
	}
	return codes, scale
}

// bsDecodeRef recomputes the block-scaled decode of one query over n tokens
// (one head, head_dim d, tiles of bn tokens, newest first) from the
// documented quantization (blockQuantBrute) and the instruction's reference
// step (accum.InstrChain, not the fast path), with the kernel's FP32
// softmax and promotion scheme written out again.
func bsDecodeRef(f KVFormat, in accum.Instruction, q []float32, qScale float32, k, v []float32, n, d, bn, promote int, kT, vT float32) []float32 {
	b := f.Block()
	nt := (n + bn - 1) / bn
	// Q: q / q_descale, blocks along head_dim, tensor scale 1.
	var qc []uint64
	var qs []uint8
	for lo := 0; lo < d; lo += b {
		x := make([]float32, b)
		for i := range x {
			x[i] = q[lo+i] / qScale
		}
		c, s := blockQuantBrute(f, x, 1)
		qc, qs = append(qc, c...), append(qs, s)
	}
	// K: per token, blocks along head_dim.
	kc, ks := make([][]uint64, n), make([][]uint8, n)
	for tok := 0; tok < n; tok++ {
		for lo := 0; lo < d; lo += b {
			c, s := blockQuantBrute(f, k[tok*d+lo:tok*d+lo+b], kT)
			kc[tok], ks[tok] = append(kc[tok], c...), append(ks[tok], s)
		}
	}
	// V: per channel, blocks of consecutive tokens over nt·bn tokens (+0
	// past the cache).
	vc, vs := make([][]uint64, d), make([][]uint8, d)
	for i := 0; i < d; i++ {
		for lo := 0; lo < nt*bn; lo += b {
			x := make([]float32, b)
			for j := range x {
				if lo+j < n {
					x[j] = v[(lo+j)*d+i]
				}
			}
			c, s := blockQuantBrute(f, x, vT)
			vc[i], vs[i] = append(vc[i], c...), append(vs[i], s)
		}
	}
	bits := func(x float32) uint64 { return uint64(math.Float32bits(x)) }
	chain := func(a, bb []uint64, sa, sb []uint8, c float32) float32 {
		x, err := accum.InstrChain(in, a, bb, sa, sb, bits(c), 0)
		if err != nil {
			panic(err)
		}
		return math.Float32frombits(uint32(x))
	}
	sl := float32(float32(float32(1/math.Sqrt(float64(d))*math.Log2E)*qScale) * kT)
	m, l := float32(math.Inf(-1)), float32(0)
	o, tc := make([]float32, d), make([]float32, d)
	accScale, tiles := float32(1), 0
	s, p := make([]float32, bn), make([]float32, bn)
	for tile := nt - 1; tile >= 0; tile-- {
		start := tile * bn
		mNew := m
		for j := range s {
			s[j] = float32(math.Inf(-1))
			if tok := start + j; tok < n {
				s[j] = chain(qc, kc[tok], qs, ks[tok], 0) * sl
			}
			mNew = max(mNew, s[j])
		}
		mUse := mNew
		if math.IsInf(float64(mNew), -1) {
			mUse = 0
		}
		alpha := float32(math.Exp2(float64(m - mUse)))
		m = mNew
		var sum float32
		for j := range s {
			p[j] = float32(math.Exp2(float64(float32(s[j]-mUse) + 8)))
			sum += p[j]
		}
		l = float32(l*alpha) + sum
		var pc []uint64
		var ps []uint8
		for lo := 0; lo < bn; lo += b {
			c, sc := blockQuantBrute(f, p[lo:lo+b], 1)
			pc, ps = append(pc, c...), append(ps, sc)
		}
		tiles++
		if promote > 1 {
			accScale *= alpha
		}
		for i := 0; i < d; i++ {
			vi, si := vc[i][start:start+bn], vs[i][start/b:(start+bn)/b]
			switch promote {
			case 0:
				o[i] = chain(pc, vi, ps, si, float32(o[i]*alpha))
			case 1:
				o[i] = float32(o[i]*alpha) + chain(pc, vi, ps, si, 0)
			default:
				tc[i] = chain(pc, vi, ps, si, float32(tc[i]*alpha))
			}
		}
		if promote > 1 && tiles%promote == 0 {
			for i := range o {
				o[i], tc[i] = float32(o[i]*accScale)+tc[i], 0
			}
			accScale = 1
		}
	}
	if promote > 1 {
		for i := range o {
			o[i] = float32(o[i]*accScale) + tc[i]
		}
	}
	scale := 1 / l * vT
	for i := range o {
		o[i] *= scale
	}
	return o
}

// The kernel's block-scaled decode equals, bit for bit, a recomputation
// from the documented quantization and the instructions' reference steps
// (every format, promotion never / every tile / every 2 tiles, a tile past
// the padded cache, a query descale, NVFP4 tensor scales); the cache holds
// the codes and scales of that quantization.
func TestBlockScaledBitExact(t *testing.T) {
	const n, d = 150, 128
	p := newProblem(11, 1, n, 1, 1, d, 0.5)
	for i := range p.k { // K with a larger spread, so that blocks differ
		p.k[i] *= float32(1 + i%7)
	}
	const qScale = 0.5
	for _, f := range []KVFormat{KVMXFP8, KVNVFP4, KVMXFP4} {
		spec := KVSpec{Format: f, Scale: ScaleAmax, Path: PathBlockScaled}
		kv, err := QuantizeKV(p.k, p.v, KVShape{Tokens: n, Heads: 1, KDim: d}, spec)
		if err != nil {
			t.Fatal(err)
		}
		if !kv.BlockScaled() {
			t.Fatalf("%s: BlockScaled() is false", f)
		}
		kT, vT := float32(1), float32(1)
		if f == KVNVFP4 {
			var ka, va float32
			for i := range p.k {
				ka, va = max(ka, float32(math.Abs(float64(p.k[i])))), max(va, float32(math.Abs(float64(p.v[i]))))
			}
			kT, vT = ka/(448*6), va/(448*6)
		}
		if ks, vs := kv.KScales(), kv.VScales(); ks[0] != kT || vs[0] != vT {
			t.Fatalf("%s: tensor scales %g/%g, want %g/%g", f, ks[0], vs[0], kT, vT)
		}
		// The cache holds the documented codes and scales: K along
		// head_dim, V along tokens.
		b := f.Block()
		for tok := 0; tok < n; tok++ {
			for lo := 0; lo < d; lo += b {
				c, s := blockQuantBrute(f, p.k[tok*d+lo:tok*d+lo+b], kT)
				for i := range c {
					if uint64(kv.KCode(tok, 0, lo+i)) != c[i] {
						t.Fatalf("%s: K code of token %d channel %d is %#x, want %#x", f, tok, lo+i, kv.KCode(tok, 0, lo+i), c[i])
					}
				}
				if got := kv.bs.ks[(tok*d+lo)/b]; got != s {
					t.Fatalf("%s: K scale code of token %d block %d is %#x, want %#x", f, tok, lo/b, got, s)
				}
			}
		}
		in, err := accum.LookupInstruction(mustBlockModel(t, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, bn := range []int{64, 128} {
			if bn%in.Info().K != 0 {
				continue
			}
			for _, promote := range []int{0, 1, 2} {
				cfg := Config{HeadDim: d, DType: kv.Format(), KBlockN: bn, Promotion: promote}
				got, err := Run(context.Background(), cfg, p.q, []float32{qScale}, kv)
				if err != nil {
					t.Fatal(err)
				}
				want := bsDecodeRef(f, in, p.q, qScale, p.k, p.v, n, d, bn, promote, kT, vT)
				for i, w := range want {
					if got[i] != float64(w) || w == 0 || math.IsNaN(float64(w)) {
						t.Fatalf("%s kBlockN %d promotion %d: O[%d] = %g, recomputed %g", f, bn, promote, i, got[i], w)
					}
				}
			}
		}
	}
}

func mustBlockModel(t *testing.T, f KVFormat) string {
	t.Helper()
	name, err := BlockScaledModel(f)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// The block-scaled path's error against exact float64 attention on the
// unquantized inputs is small and finite; its Float64 loop equals
// ReferenceQuantized (exact attention on code × scales); its K is the K of
// the dequantizing paths (code × block scale × tensor scale, rounded to
// bf16, is dequant-bf16's code).
func TestBlockScaledError(t *testing.T) {
	ctx := context.Background()
	const n, d = 2048, 128
	p := newProblem(5, 1, n, 1, 1, d, 0.5)
	q64, k64, v64 := toFloat64(p.q), toFloat64(p.k), toFloat64(p.v)
	ref, err := Reference(ctx, Config{HeadDim: d}, q64, k64, v64, 1, n)
	if err != nil {
		t.Fatal(err)
	}
	sh := KVShape{Tokens: n, Heads: 1, KDim: d}
	for _, tc := range []struct {
		f      KVFormat
		maxErr float64 // about twice the measured 0.60%, 1.72%, 4.39%
	}{
		{KVMXFP8, 0.015}, {KVNVFP4, 0.04}, {KVMXFP4, 0.08},
	} {
		spec := KVSpec{Format: tc.f, Scale: ScaleAmax, Path: PathBlockScaled}
		kv, err := QuantizeKV(p.k, p.v, sh, spec)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{HeadDim: d, DType: kv.Format()}
		o, err := Run(ctx, cfg, p.q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		e := Compare(o, ref)
		t.Logf("%s block-scaled vs exact: %s", tc.f, e)
		if !(e.RelL2 < tc.maxErr) || !(e.RelL2 > 0) {
			t.Errorf("%s block-scaled: rel L2 %g vs exact, want in (0, %g)", tc.f, e.RelL2, tc.maxErr)
		}
		cfg.Float64 = true
		o64, err := Run(ctx, cfg, p.q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		rq, err := ReferenceQuantized(ctx, cfg, p.q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		if r := relDiff(o64, rq); !(r < 1e-12) {
			t.Errorf("%s: the Float64 loop is %g from ReferenceQuantized", tc.f, r)
		}
		// The FP32 kernel is nearer the quantized inputs' exact attention
		// than that is to the unquantized one only through P; both finite.
		if r := relDiff(o, rq); !(r < tc.maxErr) {
			t.Errorf("%s: kernel %g from ReferenceQuantized", tc.f, r)
		}
		w, err := ReferenceWeights(ctx, cfg, p.q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		var ws float64
		for _, x := range w[0] {
			ws += x
		}
		if math.Abs(ws-1) > 1e-12 {
			t.Errorf("%s: ReferenceWeights sum to %g", tc.f, ws)
		}
		bf, err := QuantizeKV(p.k, p.v, sh, KVSpec{Format: tc.f, Scale: ScaleAmax, Path: PathDequantBF16})
		if err != nil {
			t.Fatal(err)
		}
		kT := kv.KScales()[0]
		for tok := 0; tok < n; tok += 97 {
			for x := 0; x < d; x++ {
				i := tok*d + x
				val := float32(tc.f.Elem().Value(uint32(kv.bs.k8[i]))) * float32(scaleValues(kv.bs.scale)[kv.bs.ks[i/tc.f.Block()]])
				if kT != 1 {
					val *= kT
				}
				if got, want := fp8.FormatBF16.Encode(val, fp8.SatFinite), uint32(bf.KCode(tok, 0, x)); got != want {
					t.Fatalf("%s: K token %d channel %d: block-scaled value %g rounds to bf16 %#x, dequant-bf16 stores %#x", tc.f, tok, x, val, got, want)
				}
			}
		}
	}
}

func toFloat64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// Bad combinations give errors that name the fault.
func TestBlockScaledErrors(t *testing.T) {
	ctx := context.Background()
	p := newProblem(1, 1, 64, 1, 1, 64, 0)
	sh := KVShape{Tokens: 64, Heads: 1, KDim: 64}
	for _, tc := range []struct {
		spec KVSpec
		sh   KVShape
		msg  string
	}{
		{KVSpec{Format: KVE4M3, Path: PathBlockScaled}, sh, "a e4m3 cache has no block scales"},
		{KVSpec{Format: KVBF16, Path: PathBlockScaled}, sh, "a bf16 cache has no block scales"},
		{KVSpec{Format: KVMXFP8, Path: PathBlockScaled}, KVShape{Tokens: 32, Heads: 1, KDim: 48}, "head_dim 48 is not a multiple of mxfp8's block of 32"},
		{KVSpec{Format: KVNVFP4, Path: PathBlockScaled}, KVShape{Tokens: 32, Heads: 1, KDim: 24}, "head_dim 24 is not a multiple of nvfp4's block of 16"},
	} {
		k, v := make([]float32, tc.sh.Tokens*tc.sh.KDim), make([]float32, tc.sh.Tokens*tc.sh.KDim)
		_, err := QuantizeKV(k, v, tc.sh, tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want %q", tc.spec, err, tc.msg)
		}
	}
	kvOf := func(f KVFormat) *KV {
		kv, err := QuantizeKV(p.k, p.v, sh, KVSpec{Format: f, Path: PathBlockScaled})
		if err != nil {
			t.Fatal(err)
		}
		return kv
	}
	for _, tc := range []struct {
		f   KVFormat
		cfg Config
		msg string
	}{
		{KVMXFP8, Config{QKModel: "sm90.wgmma.e4m3.f32"}, "wgmma has no block-scaled kind"},
		{KVMXFP8, Config{PVModel: "sm90.wgmma.e4m3.f32"}, "wgmma has no block-scaled kind"},
		{KVMXFP8, Config{QKModel: "sm100.tcgen05.f8f6f4.e4m3.e4m3.f32"}, `with "" scales`},
		{KVMXFP8, Config{QKModel: "fp32"}, "is not a block-scaled instruction"},
		{KVNVFP4, Config{PVModel: "sm100.tcgen05.mxf4nvf4.ue8m0.f32"}, "needs a block-scaled instruction reading e2m1 × e2m1 with ue4m3 scales per 16"},
		{KVMXFP4, Config{PVModel: "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32"}, "reads e4m3 × e4m3"},
		{KVNVFP4, Config{DType: fp8.FormatE4M3}, "a block-scaled nvfp4 cache holds e2m1 codes, the config's dtype is e4m3"},
		{KVNVFP4, Config{KBlockN: 96}, "kBlockN 96 is not a multiple of sm100.tcgen05.mxf4nvf4.ue4m3.f32's instruction width K = 64"},
	} {
		_, err := Run(ctx, tc.cfg, p.q, nil, kvOf(tc.f))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s %+v: error %v, want %q", tc.f, tc.cfg, err, tc.msg)
		}
	}
	for _, tc := range []struct {
		spec    KVSpec
		arch    string
		qk, msg string
	}{
		{KVSpec{Format: KVMXFP8, Path: PathBlockScaled}, "hopper", "", "wgmma has no block-scaled kind"},
		{KVSpec{Format: KVMXFP8, Path: PathBlockScaled}, "blackwell", "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32", ""},
		{KVSpec{Format: KVMXFP4, Path: PathBlockScaled}, "sm100", "sm100.tcgen05.mxf4.f32", ""},
		{KVSpec{Format: KVNVFP4, Path: PathBlockScaled}, "blackwell", "sm100.tcgen05.mxf4nvf4.ue4m3.f32", ""},
		{KVSpec{Format: KVNVFP4, Path: PathDequantE4M3}, "hopper", "sm90.wgmma.e4m3.f32", ""},
		{KVSpec{Format: KVNVFP4, Path: PathBlockScaled}, "volta", "", "unknown arithmetic"},
	} {
		qk, pv, err := tc.spec.Models(tc.arch)
		switch {
		case tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)):
			t.Errorf("%s on %s: error %v, want %q", tc.spec, tc.arch, err, tc.msg)
		case tc.msg == "" && (err != nil || qk != tc.qk || pv != tc.qk):
			t.Errorf("%s on %s: %q %q %v, want %q", tc.spec, tc.arch, qk, pv, err, tc.qk)
		}
	}
	if err := kvOf(KVMXFP8).SetTokenCodes(0, 0, make([]uint16, 64), make([]uint16, 64)); err == nil || !strings.Contains(err.Error(), "codes alone cannot restore") {
		t.Errorf("SetTokenCodes on a block-scaled cache: %v", err)
	}
}

// SetToken on a block-scaled cache equals QuantizeKV of the changed
// inputs (K's blocks of the token, V's token blocks of every channel), and
// a Clone is independent of it.
func TestBlockScaledSetToken(t *testing.T) {
	const n, d = 100, 64
	p := newProblem(9, 1, n, 1, 1, d, 0.5)
	for _, f := range []KVFormat{KVMXFP8, KVNVFP4, KVMXFP4} {
		spec := KVSpec{Format: f, Path: PathBlockScaled}
		sh := KVShape{Tokens: n, Heads: 1, KDim: d}
		kv, err := QuantizeKV(p.k, p.v, sh, spec)
		if err != nil {
			t.Fatal(err)
		}
		c := kv.Clone()
		k2, v2 := append([]float32(nil), p.k...), append([]float32(nil), p.v...)
		for x := 0; x < d; x++ {
			k2[37*d+x], v2[37*d+x] = 3*float32(x%5)-5, 9
		}
		want, err := QuantizeKV(k2, v2, sh, spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetToken(37, 0, k2[37*d:38*d], v2[37*d:38*d]); err != nil {
			t.Fatal(err)
		}
		if !equalBlock(c.bs, want.bs) || !equalBlock(kv.bs, kv.Clone().bs) || equalBlock(kv.bs, c.bs) {
			t.Errorf("%s: SetToken does not store the token as QuantizeKV does, or changed the original", f)
		}
		for tok := 0; tok < n; tok++ {
			for x := 0; x < d; x++ {
				if c.KCode(tok, 0, x) != want.KCode(tok, 0, x) || c.VCode(tok, 0, x) != want.VCode(tok, 0, x) {
					t.Fatalf("%s: codes of token %d differ after SetToken", f, tok)
				}
			}
		}
	}
}

func equalBlock(a, b *blockCache) bool {
	return string(a.k8) == string(b.k8) && string(a.ks) == string(b.ks) && string(a.vt8) == string(b.vt8) && string(a.vs) == string(b.vs)
}

// NaN in a block gives the NaN scale code, so the MMA carries it to O
// (e2m1 has no NaN code).
func TestBlockScaledNaN(t *testing.T) {
	const n, d = 64, 64
	for _, f := range []KVFormat{KVMXFP8, KVNVFP4, KVMXFP4} {
		p := newProblem(2, 1, n, 1, 1, d, 0)
		p.v[10*d+3] = float32(math.NaN())
		kv, err := QuantizeKV(p.k, p.v, KVShape{Tokens: n, Heads: 1, KDim: d}, KVSpec{Format: f, Path: PathBlockScaled})
		if err != nil {
			t.Fatal(err)
		}
		o, err := Run(context.Background(), Config{HeadDim: d, DType: kv.Format()}, p.q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(o[3]) || math.IsNaN(o[4]) {
			t.Errorf("%s: a NaN in channel 3 of V gives O[3] = %g, O[4] = %g (want NaN, a number)", f, o[3], o[4])
		}
	}
}

// A block-scaled run stops soon after its context is cancelled.
func TestBlockScaledCancel(t *testing.T) {
	const n, d = 32 << 10, 128
	p := newProblem(3, 8, n, 1, 1, d, 0)
	kv, err := QuantizeKV(p.k, p.v, KVShape{Tokens: n, Heads: 1, KDim: d}, KVSpec{Format: KVNVFP4, Path: PathBlockScaled})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Config{HeadDim: d, DType: kv.Format()}, p.q, nil, kv); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context gives %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Run(ctx, Config{HeadDim: d, DType: kv.Format()}, p.q, nil, kv)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a run past its deadline gives %v", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("the run stopped %v after its start, 20 ms deadline", el)
	}
}

// TilesFor gives the tiles Run uses on a block-scaled cache: FA3's fp8
// kBlockN rounded up to the instruction's K.
func TestBlockScaledTiles(t *testing.T) {
	p := newProblem(1, 1, 64, 1, 1, 128, 0)
	for _, tc := range []struct {
		f      KVFormat
		bm, bn int
	}{{KVMXFP8, 64, 96}, {KVNVFP4, 64, 128}, {KVMXFP4, 64, 128}} {
		kv, err := QuantizeKV(p.k, p.v, KVShape{Tokens: 64, Heads: 1, KDim: 128}, KVSpec{Format: tc.f, Path: PathBlockScaled})
		if err != nil {
			t.Fatal(err)
		}
		bm, bn, err := Config{}.TilesFor(1, kv)
		if err != nil || bm != tc.bm || bn != tc.bn {
			t.Errorf("%s: tiles %d×%d (%v), want %d×%d", tc.f, bm, bn, err, tc.bm, tc.bn)
		}
	}
}

// quantBlock (the kernel's and the cache's block quantizer) equals the
// brute-force quantization of blockQuantBrute on any finite block.
func FuzzBlockQuant(f *testing.F) {
	f.Add(float32(1), float32(-2.5), float32(448), float32(0), float32(1e-3), uint8(0))
	f.Add(float32(0), float32(0), float32(0), float32(0), float32(0), uint8(1))
	f.Add(float32(6), float32(5), float32(-7), float32(1e30), float32(-1e-30), uint8(2))
	f.Fuzz(func(t *testing.T, a, b, c, d, e float32, which uint8) {
		format := []KVFormat{KVMXFP8, KVNVFP4, KVMXFP4}[which%3]
		n := format.Block()
		x := make([]float32, n)
		for i := range x {
			x[i] = []float32{a, b, c, d, e}[i%5] * float32(1+i%3)
		}
		for _, y := range x {
			if math.IsNaN(float64(y)) || math.IsInf(float64(y), 0) {
				return
			}
		}
		q := newBlockQuant(format)
		got := make([]uint8, n)
		s := q.quantBlock(x, got, 1)
		want, ws := blockQuantBrute(format, x, 1)
		if s != ws {
			t.Fatalf("%s %v: scale code %#x, want %#x", format, x, s, ws)
		}
		for i := range want {
			if uint64(got[i]) != want[i] {
				t.Fatalf("%s %v: code %d is %#x, want %#x", format, x, i, got[i], want[i])
			}
		}
	})
}

// SaveToken, SetToken, RestoreToken gives back the cache saved, block
// scales included (and the codes of any other cache).
func TestSaveRestoreToken(t *testing.T) {
	const n, d = 100, 64
	p := newProblem(4, 1, n, 2, 2, d, 0.5)
	sh := KVShape{Tokens: n, Heads: 2, KDim: d}
	for _, spec := range []KVSpec{{Format: KVMXFP8, Path: PathBlockScaled}, {Format: KVNVFP4, Scale: ScaleAmax, Path: PathBlockScaled},
		{Format: KVMXFP4, Path: PathBlockScaled}, {Format: KVE4M3}, {Format: KVNVFP4, Path: PathDequantBF16}} {
		kv, err := QuantizeKV(p.k, p.v, sh, spec)
		if err != nil {
			t.Fatal(err)
		}
		orig := kv.Clone()
		if kv.BlockScaled() != (spec.Path == PathBlockScaled) || orig.BlockScaled() != kv.BlockScaled() {
			t.Fatalf("%s: BlockScaled() is %v", spec, kv.BlockScaled())
		}
		var saved []TokenState
		for _, tok := range []int{0, 37, 38, 99} {
			s, err := kv.SaveToken(tok, 1)
			if err != nil {
				t.Fatal(err)
			}
			saved = append(saved, s)
			big := make([]float32, d)
			for i := range big {
				big[i] = 50 * float32(i%3-1)
			}
			if err := kv.SetToken(tok, 1, big, big); err != nil {
				t.Fatal(err)
			}
		}
		if kv.KCode(37, 1, 1) == orig.KCode(37, 1, 1) && kv.VCode(36, 1, 0) == orig.VCode(36, 1, 0) {
			t.Fatalf("%s: SetToken changed nothing", spec)
		}
		for i := len(saved) - 1; i >= 0; i-- {
			if err := kv.RestoreToken(saved[i]); err != nil {
				t.Fatal(err)
			}
		}
		for tok := 0; tok < n; tok++ {
			for h := 0; h < 2; h++ {
				for x := 0; x < d; x++ {
					if kv.KCode(tok, h, x) != orig.KCode(tok, h, x) || kv.VCode(tok, h, x) != orig.VCode(tok, h, x) {
						t.Fatalf("%s: token %d head %d channel %d not restored", spec, tok, h, x)
					}
				}
			}
		}
		if kv.bs != nil && !equalBlock(kv.bs, orig.bs) {
			t.Errorf("%s: block scales not restored", spec)
		}
		if _, err := kv.SaveToken(n, 0); err == nil {
			t.Errorf("%s: SaveToken accepted token %d of %d", spec, n, n)
		}
		if err := kv.RestoreToken(TokenState{}); err == nil {
			t.Errorf("%s: RestoreToken accepted an empty state", spec)
		}
	}
}
