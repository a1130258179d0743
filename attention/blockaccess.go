package attention

import (
	"fmt"
	"strings"
)

// Accessors for consumers that run the block-scaled path themselves (the
// WGSL simulator): the format and block scales of a PathBlockScaled cache
// and the quantizer the kernel applies to Q and P.

// BlockFormat returns the format of a block-scaled cache (a format with
// block scales: KVMXFP8, KVNVFP4, KVMXFP4) and KVInvalid for every other
// cache.
func (c *KV) BlockFormat() KVFormat {
	if c.bs == nil {
		return KVInvalid
	}
	return c.bs.f
}

// BlockScales returns copies of the scale codes that token t of KV head h
// reads on a block-scaled cache: k, K's Dim/Block scales of the token
// (blocks along head_dim), and v, per V channel the scale of the block of
// Block consecutive tokens holding t (blocks start at token 0; their
// element codes are VCode of those tokens, +0 past the last token). It
// returns an error for another cache or a token outside it.
func (c *KV) BlockScales(t, h int) (k, v []uint8, err error) {
	if c.bs == nil {
		return nil, nil, fmt.Errorf("attention: BlockScales of a %s cache: it has no block scales", c.format)
	}
	if t < 0 || t >= c.tokens || h < 0 || h >= c.heads {
		return nil, nil, fmt.Errorf("attention: token %d of head %d is outside the cache (%d tokens, %d heads)", t, h, c.tokens, c.heads)
	}
	b := c.bs.block
	row := (h*c.tokens + t) * c.dim
	k = append([]uint8(nil), c.bs.ks[row/b:(row+c.dim)/b]...)
	v = make([]uint8, c.vdim)
	for d := range v {
		v[d] = c.bs.vs[((h*c.vdim+d)*c.stride+t)/b]
	}
	return k, v, nil
}

// QuantizeBlock quantizes the block x (len(x) = f.Block()) as the
// block-scaled kernel quantizes Q and P, with a tensor scale of 1: it
// writes the element codes (f.Elem()) to codes and returns the scale code
// (MX: ue8m0 by the OCP rule; NVFP4: ue4m3(amax/6)); a block holding NaN
// or ±inf gets the scale's NaN code and zero elements. It returns an error
// for a format without block scales or slices of the wrong length.
func QuantizeBlock(f KVFormat, x []float32, codes []uint8) (uint8, error) {
	if f.Block() == 0 {
		return 0, fmt.Errorf("attention: QuantizeBlock: %s has no block scales (want %s)", f, strings.Join(blockFormatNames(), ", "))
	}
	if len(x) != f.Block() || len(codes) != len(x) {
		return 0, fmt.Errorf("attention: QuantizeBlock: %d values and %d codes, a %s block holds %d", len(x), len(codes), f, f.Block())
	}
	return newBlockQuant(f).quantBlock(x, codes, 1), nil
}

// blockFormatNames are the names of the formats with block scales.
func blockFormatNames() []string {
	var out []string
	for _, f := range KVFormats() {
		if f.Block() > 0 {
			out = append(out, f.String())
		}
	}
	return out
}
