//go:build amd64 && !purego

package attention

import "github.com/fp8lab/fp8lab/internal/cpufeat"

// The quantized reference's vector kernels (refview_amd64.s), used when
// the CPU has AVX2 and F16C and the OS saves the YMM registers; otherwise
// the reference reads the cache's own layout (referenceCodes, the same
// bits). They use no FMA: every product and every sum is rounded on its
// own, as the scalar loops round them.
var haveRefAsm = cpufeat.AVX2 && cpufeat.F16C

//go:noescape
func refDotsE4M3(out, q *float64, d int, codes *uint16, blocks int, scale float64)

//go:noescape
func refSumsE4M3(acc *[refLanes]float64, w *float64, n int, codes *uint16, scale float64)

//go:noescape
func refDotsE5M2(out, q *float64, d int, codes *uint16, blocks int, scale float64)

//go:noescape
func refSumsE5M2(acc *[refLanes]float64, w *float64, n int, codes *uint16, scale float64)

//go:noescape
func refDotsBF16(out, q *float64, d int, codes *uint16, blocks int, scale float64)

//go:noescape
func refSumsBF16(acc *[refLanes]float64, w *float64, n int, codes *uint16, scale float64)

//go:noescape
func refDotsF16(out, q *float64, d int, codes *uint16, blocks int, scale float64)

//go:noescape
func refSumsF16(acc *[refLanes]float64, w *float64, n int, codes *uint16, scale float64)

//go:noescape
func refDecodeE4M3(dst *float64, codes *uint16, steps int, scale float64)

//go:noescape
func refDecodeE5M2(dst *float64, codes *uint16, steps int, scale float64)

//go:noescape
func refDecodeBF16(dst *float64, codes *uint16, steps int, scale float64)

//go:noescape
func refDecodeF16(dst *float64, codes *uint16, steps int, scale float64)

//go:noescape
func refSumsF64(acc *[refLanes]float64, w *float64, n int, vals *float64)

//go:noescape
func refDotsF64(out, q *float64, d int, vals *float64, blocks int)

// The kernels of each decode (refDecoder.mode).
var (
	refDotsOf = [...]func(out, q *float64, d int, codes *uint16, blocks int, scale float64){
		refE4M3: refDotsE4M3, refE5M2: refDotsE5M2, refBF16: refDotsBF16, refF16: refDotsF16}
	refSumsOf = [...]func(acc *[refLanes]float64, w *float64, n int, codes *uint16, scale float64){
		refE4M3: refSumsE4M3, refE5M2: refSumsE5M2, refBF16: refSumsBF16, refF16: refSumsF16}
	refDecodeOf = [...]func(dst *float64, codes *uint16, steps int, scale float64){
		refE4M3: refDecodeE4M3, refE5M2: refDecodeE5M2, refBF16: refDecodeBF16, refF16: refDecodeF16}
)

// refDecode writes to dst the values × descale of codes (len(dst) of
// them, a multiple of refLanes): one block of the K view decoded once
// for the query heads of a GQA group.
func refDecode(dst []float64, codes []uint16, dec *refDecoder) {
	steps := len(dst) / refLanes
	if steps == 0 {
		return
	}
	_ = codes[steps*refLanes-1]
	refDecodeOf[dec.mode](&dst[0], &codes[0], steps, dec.scale)
}

// refDotsDecoded is refDots on values refDecode wrote (vals, len(out)
// keys by len(q) dimensions, the K view's order): the same sums.
func refDotsDecoded(out, q, vals []float64) {
	blocks := len(out) / refLanes
	if blocks == 0 || len(q) == 0 {
		clear(out)
		return
	}
	_ = vals[blocks*refLanes*len(q)-1]
	refDotsF64(&out[0], &q[0], len(q), &vals[0], blocks)
}

// refDots writes to out the dot products Σ_x q[x]·value(code) of
// len(out) keys (a multiple of refLanes: whole blocks of the K view, codes
// from the first block's), each in order over x from +0, each product and
// sum rounded on its own. value(code) is the code's exact value times the
// descale, rounded once (dec.scale is the descale times the decode's unit).
func refDots(out, q []float64, codes []uint16, dec *refDecoder) {
	blocks := len(out) / refLanes
	if blocks == 0 || len(q) == 0 {
		clear(out)
		return
	}
	_ = codes[blocks*refLanes*len(q)-1] // the kernel reads this far
	refDotsOf[dec.mode](&out[0], &q[0], len(q), &codes[0], blocks, dec.scale)
}

// refSums adds w[j]·value(code of key j, channel c) to acc[c] for every
// key j of w whose weight is not −∞ (masked), in order over j: one block
// of the V view's refLanes channels, codes from the first key's.
func refSums(acc *[refLanes]float64, w []float64, codes []uint16, dec *refDecoder) {
	if len(w) == 0 {
		return
	}
	_ = codes[len(w)*refLanes-1] // the kernel reads this far
	refSumsOf[dec.mode](acc, &w[0], len(w), &codes[0], dec.scale)
}

// refSumsDecoded is refSums on values refDecode wrote (vals, len(w) keys
// by refLanes channels): the same sums.
func refSumsDecoded(acc *[refLanes]float64, w, vals []float64) {
	if len(w) == 0 {
		return
	}
	_ = vals[len(w)*refLanes-1]
	refSumsF64(acc, &w[0], len(w), &vals[0])
}

// transpose16 makes tiles 16×16 transposes of 16-bit codes: tile j's row l
// is the 16 codes at src + 16j + l·stride, and row x of its transpose goes
// to the 16 codes at dst + 256j + 16x (transposeTiles checks the bounds).
//
//go:noescape
func transpose16(dst, src *uint16, stride, tiles int)
