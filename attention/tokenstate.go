package attention

import "fmt"

// TokenState is what a cache holds for one token of one KV head, saved by
// [KV.SaveToken] to be put back by [KV.RestoreToken] (to patch a token and
// undo it, as a needle trial does).
type TokenState struct {
	t, h int
	k, v []uint16
	// Block-scaled caches: K's scale codes of the token, and the V written
	// for it (its V blocks are re-quantized from it on restore).
	ks   []uint8
	vraw []float32
}

// Token returns the position of the saved token.
func (s TokenState) Token() int { return s.t }

// SaveToken returns the state of token t of KV head h. Unlike TokenCodes it
// also restores a block-scaled cache, whose V scales span blocks of tokens.
func (c *KV) SaveToken(t, h int) (TokenState, error) {
	if t < 0 || t >= c.tokens || h < 0 || h >= c.heads {
		return TokenState{}, fmt.Errorf("attention: token %d of head %d is outside the cache (%d tokens, %d heads)", t, h, c.tokens, c.heads)
	}
	k, v := c.TokenCodes(t, h)
	s := TokenState{t: t, h: h, k: k, v: v}
	if bs := c.bs; bs != nil {
		row := (h*c.tokens + t) * c.dim
		s.ks = append([]uint8(nil), bs.ks[row/bs.block:(row+c.dim)/bs.block]...)
		s.vraw = make([]float32, c.vdim)
		for d := range s.vraw {
			s.vraw[d] = bs.vraw[(h*c.vdim+d)*c.stride+t]
		}
	}
	return s, nil
}

// RestoreToken puts back a state SaveToken returned from this cache (or a
// Clone of it): the token's codes, and for a block-scaled cache its K
// scales and its V, whose token blocks are re-quantized, so that the cache
// equals the one saved when the other tokens of those blocks are as they
// were.
func (c *KV) RestoreToken(s TokenState) error {
	if s.t < 0 || s.t >= c.tokens || s.h < 0 || s.h >= c.heads || len(s.k) != c.dim || len(s.v) != c.vdim || (c.bs != nil) != (s.vraw != nil) {
		return fmt.Errorf("attention: RestoreToken with a state of token %d of head %d that this cache (%d tokens, %d heads, head_dim %d/%d) did not save", s.t, s.h, c.tokens, c.heads, c.dim, c.vdim)
	}
	bs := c.bs
	if bs == nil {
		return c.SetTokenCodes(s.t, s.h, s.k, s.v)
	}
	if len(s.ks) != c.dim/bs.block || len(s.vraw) != c.vdim {
		return fmt.Errorf("attention: RestoreToken with a state of another block-scaled cache")
	}
	row := (s.h*c.tokens + s.t) * c.dim
	for d, x := range s.k {
		c.k[row+d], bs.k8[row+d] = x, uint8(x)
	}
	copy(bs.ks[row/bs.block:], s.ks)
	lo := s.t / bs.block * bs.block
	for d, y := range s.vraw {
		bs.vraw[(s.h*c.vdim+d)*c.stride+s.t] = y
		bs.quantV(c, s.h, d, lo)
	}
	return nil
}
