package attention

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/hugemem"
)

// KV is the quantized KV cache of one sequence: the codes of K and V in one
// format, with their descales (one per tensor or one per KV head). It is
// laid out for the simulator: K token-major per head, V transposed
// (dim-major, as FA3's producer transposes fp8 V in shared memory) with
// the token axis padded with +0 codes to a multiple of 32.
//
// A KV is read-only during [Run]; use [KV.Clone] before changing tokens of
// a cache that other goroutines read (a reference that needs only a few
// tokens replaced reads the shared cache through [TokenPatch] instead).
type KV struct {
	tokens, heads, dim int
	vdim               int // head dimension of V (dim, or 512 for MLA's 576-wide keys)
	format             fp8.Format
	sat                fp8.Saturation
	kScale, vScale     []float32
	stride             int         // tokens rounded up to a multiple of 32
	k                  []uint16    // [head][token][dim]
	vt                 []uint16    // [head][vdim][stride]
	kq, vq             *tokenQuant // how QuantizeKV stores a token (nil: NewKV's cast with the descales)
	bs                 *blockCache // PathBlockScaled: the codes and scales the block-scaled MMA reads
	views              *kvViews    // the quantized reference's layout of the codes (refview.go), kept equal to them
}

// vBlockTokens is the block of setTokens' V writes in units of padTokens
// for a cache of rows = heads·vdim transposed rows: 4 (128 tokens) while
// the block buffer stays within 256 KiB, else 2, else 1.
// BenchmarkQuantizeKV (here, one core): a block of 32 tokens took 53.6–54.5
// cpu-ms for a 128k-token e4m3 head, 36–38 with 128, 41–42 with 64; for 8
// heads of 16k, 66–70, 47–51 and 45–50.
func vBlockTokens(rows int) int {
	switch {
	case rows*4*padTokens*2 <= 256<<10:
		return 4
	case rows*2*padTokens*2 <= 256<<10:
		return 2
	}
	return 1
}

// padTokens is the granularity of the padded token axis of V: the largest
// instruction width K of any model.
const padTokens = 32

// NewKV quantizes k and v (laid out as shape: [tokens][heads][dim], row
// major) into a cache of format f: code = cast(x / scale) rounded to
// nearest even, with saturation sat for fp8 formats (fp8.SatFinite as
// vLLM's reshape_and_cache_flash; fp8.NoSat as PyTorch's cast, which turns
// values beyond 448 into NaN). kScale and vScale hold one scale (per
// tensor) or one per head; nil means the uncalibrated 1.0.
func NewKV(k, v []float32, shape fp8.Shape, f fp8.Format, sat fp8.Saturation, kScale, vScale []float32) (*KV, error) {
	return NewKVContext(context.Background(), k, v, shape, f, sat, kScale, vScale)
}

// NewKVContext is [NewKV] that stops, returning ctx.Err(), once ctx is
// cancelled: it looks every 1024 tokens (a few milliseconds at head_dim
// 256), so a cancelled run does not wait for a large cache to be quantized.
// A large cache (64Ki elements or more) is quantized on GOMAXPROCS
// goroutines, 1024 tokens at a time; the codes are the same bits as on one
// (each token's depend only on its own values and the scales given).
func NewKVContext(ctx context.Context, k, v []float32, shape fp8.Shape, f fp8.Format, sat fp8.Saturation, kScale, vScale []float32) (*KV, error) {
	if shape.Tokens < 1 || shape.Heads < 1 || shape.Dim < 1 {
		return nil, fmt.Errorf("attention: KV shape %dx%dx%d: every dimension must be at least 1", shape.Tokens, shape.Heads, shape.Dim)
	}
	if len(k) != shape.Len() || len(v) != shape.Len() {
		return nil, fmt.Errorf("attention: KV shape %dx%dx%d holds %d elements, got %d keys and %d values", shape.Tokens, shape.Heads, shape.Dim, shape.Len(), len(k), len(v))
	}
	switch f {
	case fp8.FormatE4M3, fp8.FormatE5M2, fp8.FormatBF16, fp8.FormatFP16:
	default:
		return nil, fmt.Errorf("attention: KV format %s is not one of e4m3, e5m2, bf16, f16", f)
	}
	if kScale == nil {
		kScale = []float32{1}
	}
	if vScale == nil {
		vScale = []float32{1}
	}
	if err := checkScales("k", kScale, shape.Heads); err != nil {
		return nil, err
	}
	if err := checkScales("v", vScale, shape.Heads); err != nil {
		return nil, err
	}
	c := newKV(shape.Tokens, shape.Heads, shape.Dim, shape.Dim, f, sat, kScale, vScale)
	if err := c.setTokens(ctx, k, v, 0); err != nil {
		return nil, err
	}
	return c, nil
}

// setTokens stores every token of k and v ([tokens][heads][dim] and
// [tokens][heads][vdim]) as setToken does, on up to workers goroutines (0:
// GOMAXPROCS) for a large cache: each token's codes depend only on its own
// values and the cache's static scales, so the result is the same bits
// whatever the number of goroutines. It returns ctx.Err() once ctx is
// cancelled (looking every quantChunk tokens), the cache then partly
// written.
func (c *KV) setTokens(ctx context.Context, k, v []float32, workers int) error {
	c.dropViews()
	return parallelTokens(ctx, c.tokens, c.tokens*c.heads*(c.dim+c.vdim), workers, func(lo, hi int) {
		if c.bs != nil {
			for t := lo; t < hi; t++ {
				for h := 0; h < c.heads; h++ {
					c.setToken(t, h, k[(t*c.heads+h)*c.dim:][:c.dim], v[(t*c.heads+h)*c.vdim:][:c.vdim])
				}
			}
			return
		}
		// B tokens at a time: V's codes go to a block buffer, a row of B per
		// head and channel, then into the transposed rows of vt, B codes
		// each, instead of one code into each of heads·vdim rows per token
		// (lo is a multiple of every B: quantChunk is). A larger block
		// visits each row fewer times (fewer TLB and cache misses on rows
		// a stride apart) while its buffer stays within 256 KiB.
		m := vBlockTokens(c.heads * c.vdim)
		B := m * padTokens
		rows := c.heads * c.vdim
		buf := make([]uint16, rows*B)
		for t0 := lo; t0 < hi; t0 += B {
			t1 := min(t0+B, hi)
			if c.kq == nil && encodeBlocks {
				// A head's block of tokens in one call each for K and V
				// (fp8.Format.EncodeScaledRows: putToken's codes; one
				// kernel call in the WebAssembly build).
				for h := 0; h < c.heads; h++ {
					c.format.EncodeScaledRows(c.k[(h*c.tokens+t0)*c.dim:], c.dim, 1, k[(t0*c.heads+h)*c.dim:], c.heads*c.dim,
						t1-t0, c.dim, scaleOf(c.kScale, h), c.sat)
					c.format.EncodeScaledRows(buf[h*c.vdim*B:], 1, B, v[(t0*c.heads+h)*c.vdim:], c.heads*c.vdim,
						t1-t0, c.vdim, scaleOf(c.vScale, h), c.sat)
				}
			} else {
				for t := t0; t < t1; t++ {
					for h := 0; h < c.heads; h++ {
						c.putToken(t, h, k[(t*c.heads+h)*c.dim:][:c.dim], v[(t*c.heads+h)*c.vdim:][:c.vdim], buf[h*c.vdim*B+t-t0:], B)
					}
				}
			}
			// One copy a row: array assignments of each block size were no
			// faster (BenchmarkQuantizeKV, and 32 heads of 4k tokens).
			for r := range rows {
				copy(c.vt[r*c.stride+t0:r*c.stride+t1], buf[r*B:r*B+t1-t0])
			}
		}
	})
}

// encodeBlocks makes setTokens convert a head's block of tokens in one
// fp8.Format.EncodeScaledRows call each for K and V instead of a token's
// heads at a time: in the WebAssembly build, where that is one kernel call
// instead of two a token and head (the needle's browser run: BENCHMARKS.md).
// Natively the token order is faster with several heads
// (BenchmarkQuantizeKV NewKV_e4m3_h8/w1, 54 -> 68 ms the other way); the
// codes are the same either way (TestSetTokensBlocks runs both).
var encodeBlocks = runtime.GOARCH == "wasm"

// newKV allocates a cache of +0 codes.
func newKV(tokens, heads, dim, vdim int, f fp8.Format, sat fp8.Saturation, kScale, vScale []float32) *KV {
	c := &KV{tokens: tokens, heads: heads, dim: dim, vdim: vdim, format: f, sat: sat,
		kScale: slices.Clone(kScale), vScale: slices.Clone(vScale), views: new(kvViews)}
	c.stride = (c.tokens + padTokens - 1) / padTokens * padTokens
	c.k = hugemem.Advise(make([]uint16, c.heads*c.tokens*c.dim))
	c.vt = hugemem.Advise(make([]uint16, c.heads*c.vdim*c.stride))
	return c
}

// quantize is cast(x / scale) to f, rounding to nearest even, with
// saturation sat for fp8 formats.
func quantize(x, scale float32, f fp8.Format, sat fp8.Saturation) uint16 {
	return uint16(f.Encode(x/scale, sat))
}

// setToken stores token t of KV head h (see SetToken).
func (c *KV) setToken(t, h int, k, v []float32) {
	if c.bs != nil {
		c.bs.setToken(c, t, h, k, v)
		return
	}
	c.putToken(t, h, k, v, c.vt[h*c.vdim*c.stride+t:], c.stride)
	c.viewToken(t, h)
}

// putToken stores token t of KV head h of a cache that is not
// block-scaled: its K codes into the cache, its V codes to vout[d·vstride]
// for channel d (the cache's transposed rows, or a block buffer).
func (c *KV) putToken(t, h int, k, v []float32, vout []uint16, vstride int) {
	if c.kq != nil {
		c.kq.quantize(k, h, c.k[(h*c.tokens+t)*c.dim:][:c.dim], 1)
		c.vq.quantize(v, h, vout, vstride)
		return
	}
	// quantize, a slice at a time (fp8.Format.EncodeScaled: the same codes).
	c.format.EncodeScaled(c.k[(h*c.tokens+t)*c.dim:], 1, k[:c.dim], scaleOf(c.kScale, h), c.sat)
	c.format.EncodeScaled(vout, vstride, v[:c.vdim], scaleOf(c.vScale, h), c.sat)
}

// SetToken quantizes k and v (Dim and VDim values) as the cache was made
// (NewKV: with its descales; QuantizeKV: in its format, with its static
// scales and the token's own per-token or block scales) and stores them as
// token t of KV head h.
func (c *KV) SetToken(t, h int, k, v []float32) error {
	if t < 0 || t >= c.tokens || h < 0 || h >= c.heads {
		return fmt.Errorf("attention: token %d of head %d is outside the cache (%d tokens, %d heads)", t, h, c.tokens, c.heads)
	}
	if len(k) != c.dim || len(v) != c.vdim {
		return fmt.Errorf("attention: SetToken with %d keys and %d values for head_dim %d/%d", len(k), len(v), c.dim, c.vdim)
	}
	c.setToken(t, h, k, v)
	return nil
}

// QuantizeToken returns the codes SetToken would store for k and v (Dim
// and VDim values) as a token of KV head h, without storing them: a
// TokenPatch's codes. A block-scaled cache refuses it (its V scales span
// blocks of tokens, so a token is not codes alone).
func (c *KV) QuantizeToken(h int, k, v []float32) (kc, vc []uint16, err error) {
	if c.bs != nil {
		return nil, nil, fmt.Errorf("attention: QuantizeToken on a block-scaled cache: V's scales span blocks of %d tokens", c.bs.block)
	}
	if h < 0 || h >= c.heads {
		return nil, nil, fmt.Errorf("attention: head %d is outside the cache (%d heads)", h, c.heads)
	}
	if len(k) != c.dim || len(v) != c.vdim {
		return nil, nil, fmt.Errorf("attention: QuantizeToken with %d keys and %d values for head_dim %d/%d", len(k), len(v), c.dim, c.vdim)
	}
	kc, vc = make([]uint16, c.dim), make([]uint16, c.vdim)
	if c.kq != nil {
		c.kq.quantize(k, h, kc, 1)
		c.vq.quantize(v, h, vc, 1)
	} else {
		c.format.EncodeScaled(kc, 1, k, scaleOf(c.kScale, h), c.sat)
		c.format.EncodeScaled(vc, 1, v, scaleOf(c.vScale, h), c.sat)
	}
	return kc, vc, nil
}

// TokenCodes returns copies of the K and V codes of token t of KV head h
// (nil, nil when t or h is outside the cache).
func (c *KV) TokenCodes(t, h int) (k, v []uint16) {
	if t < 0 || t >= c.tokens || h < 0 || h >= c.heads {
		return nil, nil
	}
	k = slices.Clone(c.k[(h*c.tokens+t)*c.dim:][:c.dim])
	v = make([]uint16, c.vdim)
	for d := range v {
		v[d] = c.vt[(h*c.vdim+d)*c.stride+t]
	}
	return k, v
}

// SetTokenCodes stores codes (of the cache's format, dim each) as token t of
// KV head h, for example to restore what TokenCodes returned. A
// block-scaled cache refuses it: its V scales span blocks of tokens, so
// codes alone cannot restore a token (use SetToken or Clone).
func (c *KV) SetTokenCodes(t, h int, k, v []uint16) error {
	if c.bs != nil {
		return fmt.Errorf("attention: SetTokenCodes on a block-scaled cache: V's scales span blocks of %d tokens, so codes alone cannot restore a token (use SetToken or Clone)", c.bs.block)
	}
	if t < 0 || t >= c.tokens || h < 0 || h >= c.heads {
		return fmt.Errorf("attention: token %d of head %d is outside the cache (%d tokens, %d heads)", t, h, c.tokens, c.heads)
	}
	if len(k) != c.dim || len(v) != c.vdim {
		return fmt.Errorf("attention: SetTokenCodes with %d keys and %d values for head_dim %d/%d", len(k), len(v), c.dim, c.vdim)
	}
	copy(c.k[(h*c.tokens+t)*c.dim:], k)
	for d, x := range v {
		c.vt[(h*c.vdim+d)*c.stride+t] = x
	}
	c.viewToken(t, h)
	return nil
}

// Clone returns an independent copy of the cache.
func (c *KV) Clone() *KV {
	d := *c
	d.kScale, d.vScale = slices.Clone(c.kScale), slices.Clone(c.vScale)
	d.k, d.vt = slices.Clone(c.k), slices.Clone(c.vt)
	d.views = new(kvViews) // built again when read: the clone is written
	if c.bs != nil {
		d.bs = c.bs.clone()
	}
	return &d
}

// Tokens, Heads and Dim give the cache's shape.
func (c *KV) Tokens() int { return c.tokens }

// Heads is the number of KV heads.
func (c *KV) Heads() int { return c.heads }

// Dim is the head dimension of K.
func (c *KV) Dim() int { return c.dim }

// VDim is the head dimension of V (Dim but for MLA).
func (c *KV) VDim() int { return c.vdim }

// BlockScaled reports whether the cache is a block-scaled one
// (PathBlockScaled): its codes (KCode, VCode, TokenCodes) stand for code ×
// a block scale that they do not carry, so a consumer of codes that does
// not read the block scales must refuse it.
func (c *KV) BlockScaled() bool { return c.bs != nil }

// Format is the format of the codes.
func (c *KV) Format() fp8.Format { return c.format }

// KScales and VScales return copies of the descales (length 1 or Heads).
func (c *KV) KScales() []float32 { return slices.Clone(c.kScale) }

// VScales returns a copy of the V descales.
func (c *KV) VScales() []float32 { return slices.Clone(c.vScale) }

// KCode and VCode return the code of element d of token t, head h.
func (c *KV) KCode(t, h, d int) uint16 { return c.k[(h*c.tokens+t)*c.dim+d] }

// VCode returns the V code of element d of token t, head h.
func (c *KV) VCode(t, h, d int) uint16 { return c.vt[(h*c.vdim+d)*c.stride+t] }

// KCodes returns the K codes of KV head h, [token][dim], and VCodes the V
// codes of channel d of KV head h, [token] (Tokens of them): views of the
// cache's own storage, for a consumer that reads every code (packing a
// cache for a GPU), valid until the cache changes. The caller must not
// write them.
func (c *KV) KCodes(h int) []uint16 { return c.k[h*c.tokens*c.dim:][:c.tokens*c.dim] }

// VCodes returns the V codes of channel d of KV head h (see KCodes).
func (c *KV) VCodes(h, d int) []uint16 { return c.vt[(h*c.vdim+d)*c.stride:][:c.tokens] }

// Dequantize returns the values the cache stands for, code value × descale
// (exact in float64), laid out [tokens][heads][dim] and
// [tokens][heads][vdim]. NaN codes give NaN. For a block-scaled cache the
// value is code × block scale × tensor scale (NaN for a NaN scale).
func (c *KV) Dequantize() (k, v []float64) {
	k = make([]float64, c.tokens*c.heads*c.dim)
	v = make([]float64, c.tokens*c.heads*c.vdim)
	if c.bs != nil {
		for t := 0; t < c.tokens; t++ {
			for h := 0; h < c.heads; h++ {
				for d := 0; d < c.dim; d++ {
					k[(t*c.heads+h)*c.dim+d] = c.bs.kValue(c, t, h, d)
				}
				for d := 0; d < c.vdim; d++ {
					v[(t*c.heads+h)*c.vdim+d] = c.bs.vValue(c, t, h, d)
				}
			}
		}
		return k, v
	}
	val := valueTable(c.format)
	for t := 0; t < c.tokens; t++ {
		for h := 0; h < c.heads; h++ {
			ks, vs := float64(scaleOf(c.kScale, h)), float64(scaleOf(c.vScale, h))
			for d := 0; d < c.dim; d++ {
				k[(t*c.heads+h)*c.dim+d] = val[c.KCode(t, h, d)] * ks
			}
			for d := 0; d < c.vdim; d++ {
				v[(t*c.heads+h)*c.vdim+d] = val[c.VCode(t, h, d)] * vs
			}
		}
	}
	return k, v
}

// valueTable returns the exact value of every code of f (NaN for NaN
// codes), indexed by code.
func valueTable(f fp8.Format) []float64 {
	tablesOnce[f].Do(func() {
		n := 1 << f.CodeBits()
		t := make([]float64, n)
		for i := range t {
			t[i] = f.Value(uint32(i))
		}
		tables[f] = t
	})
	return tables[f]
}

var (
	tablesOnce [8]sync.Once
	tables     [8][]float64
)

// A TokenPatch is token Pos of KV head Head with the codes K and V (Dim and
// VDim of them, in the cache's format, as [KV.TokenCodes] returns them):
// what [KV.SetTokenCodes] would write. A reader given patches reads the
// cache as if they were written in, in order (a later patch of the same
// token wins), without writing them into a copy of the cache
// ([ReferenceQuantizedPatched]): many readers can share one cache, each
// with its own few tokens. Like SetTokenCodes, patches need a cache that
// is not block-scaled (its V scales span blocks of tokens).
type TokenPatch struct {
	Pos, Head int
	K, V      []uint16
}

// patchesIn returns the patches of ps (one KV head's, ordered by token,
// one per token: patchesByHead) of tokens lo … hi−1.
func patchesIn(ps []TokenPatch, lo, hi int) []TokenPatch {
	at := func(pos int) int {
		i, _ := slices.BinarySearchFunc(ps, pos, func(p TokenPatch, pos int) int { return p.Pos - pos })
		return i
	}
	a := at(lo)
	return ps[a:max(a, at(hi))]
}

// patchesByHead checks patch against the cache and returns, per KV head,
// its patches ordered by token, one per token (the last given of a
// token); nil when patch is empty. A patch outside the cache, of the
// wrong length, or any patch of a block-scaled cache is an error.
func (c *KV) patchesByHead(patch []TokenPatch) ([][]TokenPatch, error) {
	if len(patch) == 0 {
		return nil, nil
	}
	if c.bs != nil {
		return nil, fmt.Errorf("attention: token patches on a block-scaled cache: V's scales span blocks of %d tokens, so codes alone cannot replace a token", c.bs.block)
	}
	by := make([][]TokenPatch, c.heads)
	for _, tp := range patch {
		if tp.Pos < 0 || tp.Pos >= c.tokens || tp.Head < 0 || tp.Head >= c.heads {
			return nil, fmt.Errorf("attention: patch of token %d of head %d is outside the cache (%d tokens, %d heads)", tp.Pos, tp.Head, c.tokens, c.heads)
		}
		if len(tp.K) != c.dim || len(tp.V) != c.vdim {
			return nil, fmt.Errorf("attention: patch with %d keys and %d values for head_dim %d/%d", len(tp.K), len(tp.V), c.dim, c.vdim)
		}
		by[tp.Head] = append(by[tp.Head], tp)
	}
	for h, ps := range by {
		// Stable: of equal tokens the last given stays last; keep it.
		slices.SortStableFunc(ps, func(a, b TokenPatch) int { return a.Pos - b.Pos })
		out := ps[:0]
		for i, tp := range ps {
			if i+1 < len(ps) && ps[i+1].Pos == tp.Pos {
				continue
			}
			out = append(out, tp)
		}
		by[h] = out
	}
	return by, nil
}
