package pmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// normFloat64Ref is NormFloat64 as it was before the batch draw and the
// wedge bound (commit f924dda): the reference every faster path must match
// bit for bit.
func normFloat64Ref(r *rand.Rand) float64 {
	for {
		u := r.Uint64()
		i := u & 127
		hz := int64(u) >> 7
		x := float64(hz) * zw[i]
		if abs64(hz) < zk[i] {
			return x
		}
		if i == 0 {
			for {
				a := float64(-Log(unitRef(r))) / zr
				b := -Log(unitRef(r))
				if float64(b+b) >= float64(a*a) {
					if hz > 0 {
						return zr + a
					}
					return -zr - a
				}
			}
		}
		if float64(zf[i]+float64(unitRef(r)*float64(zf[i-1]-zf[i]))) < Exp(float64(-0.5*x)*x) {
			return x
		}
	}
}

func unitRef(r *rand.Rand) float64 { return (float64(r.Uint64()>>11) + 0.5) * 0x1p-53 }

// wrappedPCG is a PCG that FillNormal does not recognise as one: it takes
// the general path, through the Source interface (as a *rand.Rand does).
type wrappedPCG struct{ p *rand.PCG }

func (w wrappedPCG) Uint64() uint64 { return w.p.Uint64() }

// checkDraws draws n variates from PCG(s1, s2) by the reference and by
// NormFloat64, FillNormal (from a PCG and from another source) and
// FillNormalPCG (in chunks of chunk), and
// reports the first difference in a variate's bits or in the generator's
// state after the draws.
func checkDraws(t testing.TB, s1, s2 uint64, n, chunk int) {
	t.Helper()
	ref := make([]float64, n)
	rr := rand.New(rand.NewPCG(s1, s2))
	for j := range ref {
		ref[j] = normFloat64Ref(rr)
	}
	next := rr.Uint64()
	type way struct {
		name string
		draw func(dst []float64) uint64 // fills dst, returns the generator's next Uint64
	}
	ways := []way{
		{"NormFloat64", func(dst []float64) uint64 {
			r := rand.New(rand.NewPCG(s1, s2))
			for j := range dst {
				dst[j] = NormFloat64(r)
			}
			return r.Uint64()
		}},
		{"FillNormal (a PCG)", func(dst []float64) uint64 {
			p := rand.NewPCG(s1, s2)
			for j := 0; j < len(dst); j += chunk {
				FillNormal(dst[j:min(j+chunk, len(dst))], p)
			}
			return p.Uint64()
		}},
		{"FillNormal (a rand.Rand)", func(dst []float64) uint64 {
			r := rand.New(rand.NewPCG(s1, s2))
			for j := 0; j < len(dst); j += chunk {
				FillNormal(dst[j:min(j+chunk, len(dst))], r)
			}
			return r.Uint64()
		}},
		{"FillNormal (general path)", func(dst []float64) uint64 {
			r := rand.New(wrappedPCG{rand.NewPCG(s1, s2)})
			for j := 0; j < len(dst); j += chunk {
				FillNormal(dst[j:min(j+chunk, len(dst))], r)
			}
			return r.Uint64()
		}},
		{"FillNormalPCG", func(dst []float64) uint64 {
			p := rand.NewPCG(s1, s2)
			for j := 0; j < len(dst); j += chunk {
				FillNormalPCG(dst[j:min(j+chunk, len(dst))], p)
			}
			return p.Uint64()
		}},
	}
	for _, w := range ways {
		got := make([]float64, n)
		gotNext := w.draw(got)
		for j := range got {
			if math.Float64bits(got[j]) != math.Float64bits(ref[j]) {
				t.Fatalf("PCG(%d, %d), %s in chunks of %d: variate %d is %v, the reference %v", s1, s2, w.name, chunk, j, got[j], ref[j])
			}
		}
		if gotNext != next {
			t.Fatalf("PCG(%d, %d), %s in chunks of %d: after %d variates the generator gives %#x, the reference's %#x", s1, s2, w.name, chunk, n, gotNext, next)
		}
	}
}

// TestFillNormalMatches checks that the batch draws and NormFloat64 give
// the reference's variates bit for bit and leave the generator where it
// does, for a table of seeds, sizes and chunkings (10^6 draws hold about
// 27 000 wedge tests and 500 tail draws).
func TestFillNormalMatches(t *testing.T) {
	cases := []struct {
		s1, s2   uint64
		n, chunk int
	}{
		{1, 1, 0, 1},
		{1, 2, 1, 1},
		{5, 6, 1000, 7},
		{7, 8, 1 << 20, 8192},
		{0, 0, 100000, 4096},
		{math.MaxUint64, 1, 300000, 100000},
		{0x9e3779b97f4a7c15, 0x632be59bd9b4e019, 1 << 18, 1 << 18},
	}
	for _, c := range cases {
		checkDraws(t, c.s1, c.s2, c.n, c.chunk)
	}
}

func FuzzFillNormal(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint16(1000), uint16(100))
	f.Add(uint64(0), uint64(0), uint16(0), uint16(1))
	f.Fuzz(func(t *testing.T, s1, s2 uint64, n, chunk uint16) {
		checkDraws(t, s1, s2, int(n)*4, int(chunk)+1)
	})
}

// TestExpNear checks expNear's error bound, 2·10^-12 relative, against
// Exp (within 2 ulps of e^t) on a dense sample of the wedges' range
// [−zr²/2, 0], at the edges of its table's steps and of its range, and that
// it declines the arguments from −6 down (and NaN).
func TestExpNear(t *testing.T) {
	const bound = 2e-12 - 0x1p-51
	rng := rand.New(rand.NewPCG(11, 12))
	var worst float64
	check := func(x float64) {
		a, ok := expNear(x)
		if !ok {
			t.Fatalf("expNear(%v) declines", x)
		}
		e := Exp(x)
		if d := math.Abs(a-e) / e; !(d <= bound) {
			t.Fatalf("expNear(%v) = %v, Exp %v: relative difference %.3g above %.3g", x, a, e, d, bound)
		} else {
			worst = max(worst, d)
		}
	}
	for i := 0; i < 1000000; i++ {
		check(-rng.Float64() * 0.5 * zr * zr)
	}
	for k := 0; k < len(expTable); k++ { // r = ±1/32, the widest reduced arguments
		for _, x := range []float64{-(float64(k) + 0.5) / 16, -(float64(k) - 0.5) / 16} {
			for _, y := range []float64{math.Nextafter(x, 0), x, math.Nextafter(x, -1)} {
				if y <= 0 && y > -95.5/16 {
					check(y)
				}
			}
		}
	}
	check(0)
	check(math.Copysign(0, -1))
	for _, x := range []float64{-6, math.Nextafter(-6, -1), -700, math.Inf(-1), math.NaN()} {
		if a, ok := expNear(x); ok {
			t.Errorf("expNear(%v) = %v, true: want a decline below the table", x, a)
		}
	}
	t.Logf("worst relative difference from Exp %.3g", worst)
}

// TestWedgeBelow checks wedgeBelow against the exact comparison y <
// Exp(t): on random points of the wedges, on y at and next to Exp(t), and
// on y at and next to the edges of its undecided band.
func TestWedgeBelow(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	n := 0
	check := func(y, x float64) {
		tt := float64(-0.5*x) * x
		if got, want := wedgeBelow(y, tt), y < Exp(tt); got != want {
			t.Fatalf("wedgeBelow(%v, %v) = %v, y < Exp(t) is %v", y, tt, got, want)
		}
		n++
	}
	for j := 0; j < 200000; j++ {
		i := 1 + rng.IntN(127)
		x := rng.Float64() * zw[i] * 0x1p56 // in the layer
		if i == 127 {
			x = rng.Float64() * zr
		}
		y := float64(zf[i] + float64(rng.Float64()*float64(zf[i-1]-zf[i])))
		check(y, x)
		e := Exp(float64(-0.5*x) * x)
		a, _ := expNear(float64(-0.5*x) * x)
		d := a * wedgeMargin
		for _, c := range []float64{e, a, a - d, a + d} {
			y := c
			for s := 0; s < 3; s++ {
				check(y, x)
				check(math.Nextafter(y, 2), x)
				y = math.Nextafter(y, -1)
			}
		}
		check(e*(1+(rng.Float64()-0.5)*0x1p-30), x)
	}
	t.Logf("%d comparisons", n)
}

// TestWedgeExact counts how often the draws reach the exact Exp: the
// undecided band is 2^-31 of a wide, so in 10^7 draws (some 270 000 wedge
// tests) none should, as wedgeBelow's doc says. It also checks the share
// of draws the rectangles take, 97.2 % as NormFloat64's doc says: the mean
// of zk[i]/2^56 over the layers.
func TestWedgeExact(t *testing.T) {
	if testing.Short() {
		t.Skip("10^7 draws")
	}
	var share float64
	for _, k := range zk {
		share += float64(k) / 0x1p56 / 128
	}
	if math.Abs(share-0.972) > 0.0005 {
		t.Errorf("the rectangles take %.4f of the draws, not about 0.972", share)
	}
	rng := rand.New(rand.NewPCG(15, 16))
	var wedges, exact int
	for j := 0; j < 10000000; j++ {
		u := rng.Uint64()
		i := u & 127
		hz := int64(u) >> 7
		if abs64(hz) < zk[i] || i == 0 {
			continue
		}
		x := float64(hz) * zw[i]
		y := float64(zf[i] + float64(unitRef(rng)*float64(zf[i-1]-zf[i])))
		a, ok := expNear(float64(-0.5*x) * x)
		wedges++
		if !ok {
			t.Fatalf("expNear(%v) declines a wedge's argument", float64(-0.5*x)*x)
		}
		if y >= float64(a-a*wedgeMargin) && y <= float64(a+a*wedgeMargin) {
			exact++
		}
	}
	t.Logf("rectangles %.5f of the draws; %d wedge tests, %d needed Exp", share, wedges, exact)
	if exact != 0 || wedges < 250000 {
		t.Errorf("%d of %d wedge tests needed Exp, want 0 of about 270 000", exact, wedges)
	}
}

// BenchmarkHaystackNormals draws normals as the needle's haystack does
// (BenchmarkAttnHaystack in experiments draws a whole one) by the old
// NormFloat64 (ref), NormFloat64, FillNormal's general path and
// FillNormalPCG; ns/op is per variate for ref and NormFloat64, per 8192
// variates for the batch draws.
func BenchmarkHaystackNormals(b *testing.B) {
	buf := make([]float64, 8192)
	b.Run("ref", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			buf[0] = normFloat64Ref(r)
		}
	})
	b.Run("NormFloat64", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			buf[0] = NormFloat64(r)
		}
	})
	b.Run("FillNormal", func(b *testing.B) {
		r := rand.New(wrappedPCG{rand.NewPCG(1, 2)}) // the general path
		b.SetBytes(8 * 8192)
		for b.Loop() {
			FillNormal(buf, r)
		}
	})
	b.Run("FillNormalPCG", func(b *testing.B) {
		p := rand.NewPCG(1, 2)
		b.SetBytes(8 * 8192)
		for b.Loop() {
			FillNormalPCG(buf, p)
		}
	})
}
