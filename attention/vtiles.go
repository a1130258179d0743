package attention

import "context"

// The kernels' second layout of V: the cache's V codes tile-major for one
// tile width bn (KBlockN), [head][tile][vdim][bn], tile n of head h the
// vdim rows of bn codes that vTile hands P·V, +0 past the padded token
// axis. A kernel reading it takes each tile in place instead of copying
// the tiles out of the dim-major cache (vTile's block copy, a tenth of a
// default needle's CPU time and the page faults of its fresh buffers).
//
// A cache keeps one view per tile width, built by the vTilesAfter-th
// kernel of that width that reads it (KV.vTileView): a cache read by one
// kernel keeps no second copy of V; one read by many (a haystack under
// many trials, a benchmark) pays the build, about one kernel's copies,
// once. A view larger than vTilesMaxBytes is not built. The view follows
// the refView's rules (refview.go): SetToken and SetTokenCodes (and so
// RestoreToken) write the token into it, a bulk quantization drops it, a
// Clone starts without one, and a block-scaled cache never builds one
// (its P·V reads vTileBlock). Its memory is the cache's V again:
// 2·heads·vdim·⌈stride/bn⌉·bn bytes per width.
const (
	vTilesAfter    = 2
	vTilesMaxBytes = 1 << 30
)

// vTiles is one view: tiles tiles of width bn per head.
type vTiles struct {
	bn, tiles int
	codes     []uint16 // [head][tiles][vdim][bn]
}

// vTileView returns the cache's view for tile width bn, building it on the
// vTilesAfter-th call for bn, or nil before that, for a block-scaled
// cache, and for a view over vTilesMaxBytes. Safe for concurrent use by
// readers of the cache; the view is read-only while the cache is (Run).
func (c *KV) vTileView(bn int) *vTiles {
	if bn < 1 || c.bs != nil || c.views == nil {
		return nil
	}
	tiles := (c.stride + bn - 1) / bn
	if int64(c.heads)*int64(tiles)*int64(c.vdim)*int64(bn)*2 > vTilesMaxBytes {
		return nil
	}
	c.views.mu.Lock()
	defer c.views.mu.Unlock()
	if w := c.views.vt[bn]; w != nil {
		return w
	}
	if c.views.vreads == nil {
		c.views.vreads = map[int]int{}
	}
	if c.views.vreads[bn]++; c.views.vreads[bn] < vTilesAfter {
		return nil
	}
	w := newVTiles(c, bn, tiles)
	if c.views.vt == nil {
		c.views.vt = map[int]*vTiles{}
	}
	c.views.vt[bn] = w
	return w
}

// newVTiles builds the view of c's V for width bn: copyTiles over blocks
// of tiles (each row of the cache read front to back in one run), on
// GOMAXPROCS goroutines for a large cache.
func newVTiles(c *KV, bn, tiles int) *vTiles {
	d, size := c.vdim, c.vdim*bn
	w := &vTiles{bn: bn, tiles: tiles, codes: make([]uint16, c.heads*tiles*size)}
	per := max(1, vBlockBytes/(2*size)) // tiles a unit
	units := (tiles + per - 1) / per
	_ = parallelRange(context.Background(), c.heads*units, 1, len(w.codes), 0, func(u0, u1 int) {
		for u := u0; u < u1; u++ {
			h, lo := u/units, u%units*per
			hi := min(lo+per, tiles)
			copyTiles(w.codes[(h*tiles+lo)*size:], c.vt[h*d*c.stride:], d, c.stride, bn, lo, hi, 0)
		}
	})
	return w
}

// tile returns tile n of KV head h: row i at [i·bn:].
func (w *vTiles) tile(h, n, vdim int) []uint16 {
	size := vdim * w.bn
	return w.codes[(h*w.tiles+n)*size:][:size]
}

// setToken copies token t of KV head h's V from c into the view.
func (w *vTiles) setToken(c *KV, t, h int) {
	dst := w.tile(h, t/w.bn, c.vdim)[t%w.bn:]
	for x := 0; x < c.vdim; x++ {
		dst[x*w.bn] = c.vt[(h*c.vdim+x)*c.stride+t]
	}
}
