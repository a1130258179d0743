package wgsl

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/simcase"
)

// specPack is the packed cache's layout written plainly (the contract
// packCache implements): K's rows of each head token-major, cpw codes to a
// word, code i of a word at bits Bits·i; then V's rows, one per head and
// channel over the tokens, each padded with zero words to vStride.
func specPack(p *simPlan, kv *attention.KV) []uint32 {
	cpw, cb := p.cpw(), uint(p.e.Bits)
	mask := uint32(1)<<cb - 1
	row := func(src []uint16, words int) []uint32 {
		w := make([]uint32, words)
		for i, c := range src {
			w[i/cpw] |= uint32(c) & mask << (cb * uint(i%cpw))
		}
		return w
	}
	var out []uint32
	for h := 0; h < p.kvHeads; h++ {
		for t := 0; t < p.tokens; t++ {
			out = append(out, row(kv.KCodes(h)[t*p.d:][:p.d], p.d/cpw)...)
		}
	}
	for r := 0; r < p.kvHeads*p.d; r++ {
		out = append(out, row(kv.VCodes(r/p.d, r%p.d), p.vStride())...)
	}
	return out
}

// packCache writes every word of a cache, so a buffer full of old words
// (a reused one from packPool) packs as a zeroed one does, and both are
// the plain layout: 8-bit codes (four to a word, packBytes), 16-bit ones
// (two, a token count that leaves half a word) and V rows padded to the
// tiles; PackSimCache after a Release reuses the buffer, same words.
func TestPackCacheReusedBuffer(t *testing.T) {
	for _, c := range []simcase.Case{
		{Name: "e4m3", Tokens: 1003, Cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 4, KBlockN: 64}, PerHead: true},
		{Name: "e5m2", Tokens: 130, Cfg: attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 2, DType: fp8.FormatE5M2, KBlockN: 96}},
		{Name: "bf16", Tokens: 901, Cfg: attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 2, DType: fp8.FormatBF16, KBlockN: 128}},
		{Name: "f16", Tokens: 77, Cfg: attention.Config{HeadDim: 64, KVHeads: 3, QHeads: 3, DType: fp8.FormatFP16, KBlockN: 64}},
	} {
		t.Run(c.Name, func(t *testing.T) {
			q0, qs, kv, err := simcase.Inputs(c, 7)
			if err != nil {
				t.Fatal(err)
			}
			p, err := planSim(c.Cfg, qs, kv, []SimTrial{{Q: q0}})
			if err != nil {
				t.Fatal(err)
			}
			want := specPack(p, kv)
			zeroed, _ := p.packCache(nil, kv)
			if !slices.Equal(zeroed, want) {
				t.Fatalf("packCache into an empty slice differs from the layout")
			}
			old := make([]uint32, 5, len(want)+5)
			for i := range old[:cap(old)] {
				old[:cap(old)][i] = 0xdeadbeef
			}
			got, sc := p.packCache(old, kv)
			if sc.k != 5 || !slices.Equal(got[:5], old[:5]) || !slices.Equal(got[5:], want) {
				t.Fatalf("packCache after 5 words of a dirty buffer: the cache differs from the layout (or the words before it moved)")
			}
			pc, err := PackSimCache(c.Cfg, qs, kv)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pc.words, want) {
				t.Fatalf("PackSimCache differs from the layout")
			}
			w := pc.words
			for i := range w {
				w[i] = 0xdeadbeef
			}
			pc.Release()
			pc.Release() // twice: nothing
			if pc.words != nil {
				t.Fatalf("a released cache keeps its words")
			}
			again, err := PackSimCache(c.Cfg, qs, kv)
			if err != nil {
				t.Fatal(err)
			}
			if &again.words[0] != &w[0] {
				t.Errorf("PackSimCache after a Release did not reuse the buffer")
			}
			if !slices.Equal(again.words, want) {
				t.Fatalf("PackSimCache into the released (dirty) buffer differs from the layout")
			}
			again.Release()
		})
	}
}

// packBytes (the AVX2 kernel for whole blocks of 8 words where it runs,
// then Go) and packBytesGo equal the scalar packing of 8-bit codes,
// whatever the codes' high bytes hold.
func TestPackBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, pack := range []struct {
		name string
		f    func([]uint32, []uint16)
	}{{"packBytes", packBytes}, {"packBytesGo", packBytesGo}} {
		for _, n := range []int{0, 1, 7, 8, 9, 64, 1000} {
			src := make([]uint16, 4*n)
			for i := range src {
				src[i] = uint16(rng.Uint32())
			}
			got := make([]uint32, n)
			pack.f(got, src)
			for w := range got {
				s := src[4*w:]
				want := uint32(s[0]&0xff) | uint32(s[1]&0xff)<<8 | uint32(s[2]&0xff)<<16 | uint32(s[3]&0xff)<<24
				if got[w] != want {
					t.Fatalf("%s n %d word %d: %#x, want %#x", pack.name, n, w, got[w], want)
				}
			}
		}
	}
}

// The pool hands out the smallest buffer that fits, keeps at most its
// bound, and a get it cannot serve allocates.
func TestWordPool(t *testing.T) {
	p := wordPool{max: 100}
	a, b := make([]uint32, 10, 40), make([]uint32, 0, 20)
	p.put(a)
	p.put(b)
	p.put(make([]uint32, 0, 50)) // over the bound (40+20+50 > 100): dropped
	if p.words != 60 || len(p.free) != 2 {
		t.Fatalf("pool holds %d words in %d buffers, want 60 in 2", p.words, len(p.free))
	}
	if g := p.get(15); cap(g) != 20 || len(g) != 0 {
		t.Fatalf("get(15): cap %d len %d, want the 20-word buffer, empty", cap(g), len(g))
	}
	if g := p.get(30); cap(g) != 40 {
		t.Fatalf("get(30): cap %d, want the 40-word buffer", cap(g))
	}
	if g := p.get(5); cap(g) != 5 || p.words != 0 {
		t.Fatalf("get(5) on an empty pool: cap %d (pool %d words), want a new 5-word buffer", cap(g), p.words)
	}
	p.put(make([]uint32, 0, 30))
	p.drain()
	if p.words != 0 || len(p.free) != 0 || cap(p.get(30)) != 30 {
		t.Fatalf("after drain the pool holds %d words in %d buffers", p.words, len(p.free))
	}
}

// BenchmarkPackBytes packs a 4096-token, 8-head, head_dim-128 K cache's
// 8-bit codes (4M codes, one fp8 K of the default scales): packBytes
// against packBytesGo, bytes/s of codes read.
func BenchmarkPackBytes(b *testing.B) {
	src := make([]uint16, 4096*8*128)
	for i := range src {
		src[i] = uint16(i * 37)
	}
	dst := make([]uint32, len(src)/4)
	for _, pack := range []struct {
		name string
		f    func([]uint32, []uint16)
	}{{"packBytes", packBytes}, {"packBytesGo", packBytesGo}} {
		b.Run(pack.name, func(b *testing.B) {
			b.SetBytes(int64(2 * len(src)))
			for b.Loop() {
				pack.f(dst, src)
			}
		})
	}
}
