package fp8

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// boundaryInputs are float32 of every normal binade whose low s bits (s =
// 1 … 23, the bits a rounding at any shift discards) lie at and around the
// half point, with the kept bit above them 0 and 1 (ties to even both
// ways), plus the all-zero and all-one fractions; both signs. Every other
// special value (zeros, subnormals, infs, NaN payloads, the largest
// finite) is appended.
func boundaryInputs() []float32 {
	var xs []float32
	add := func(b uint32) {
		xs = append(xs, math.Float32frombits(b), math.Float32frombits(b|0x80000000))
	}
	for eb := uint32(1); eb < 255; eb++ {
		add(eb << 23)
		add(eb<<23 | 0x7fffff)
		for s := uint32(1); s <= 23; s++ {
			half := uint32(1) << (s - 1)
			for _, kept := range []uint32{0, 1 << s} {
				if kept > 0x7fffff {
					continue
				}
				for _, l := range []uint32{half - 1, half, half + 1} {
					add(eb<<23 | (kept|l)&0x7fffff)
				}
			}
		}
	}
	for _, b := range []uint32{0, 1, 2, 0x3fffff, 0x400000, 0x400001, 0x7fffff, 0x7f7fffff, 0x7f800000,
		0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fc00001, 0x7fffffff} {
		add(b)
	}
	return xs
}

// TestEncodeVecEqualsScalar checks that EncodeScaled (the vector kernel
// where this build has one) gives Encode's code for x/scale for every
// format of at most 8 bits, both saturations, a scale of 1 (no division),
// other scales and strides 1 and 32, on the boundary inputs and on random
// bit patterns, shuffled and in runs of normal-only vectors so that the
// kernel converts most of them itself; and that the kernel does: a slice of
// finite quotients is converted whole by it.
func TestEncodeVecEqualsScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 4))
	xs := boundaryInputs()
	for range 1 << 14 {
		xs = append(xs, math.Float32frombits(r.Uint32()))
	}
	for range 1 << 14 {
		xs = append(xs, float32(r.NormFloat64()*math.Ldexp(1, r.IntN(40)-20)))
	}
	shuffled := append([]float32(nil), xs...)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, f := range Formats() {
		for _, sat := range []Saturation{SatFinite, NoSat} {
			for _, scale := range []float32{1, 0.37, 3e-3, 1e4, 0.25, -2, 1.0 / 448} {
				for _, in := range [][]float32{xs, shuffled} {
					for _, stride := range []int{1, 32} {
						dst := make([]uint16, (len(in)-1)*stride+1)
						f.EncodeScaled(dst, stride, in, scale, sat)
						bad := 0
						for i, x := range in {
							if want := uint16(f.Encode(x/scale, sat)); dst[i*stride] != want {
								if bad++; bad <= 3 {
									t.Errorf("%v %v scale %g stride %d: %g (%#x) gives %#x, Encode %#x", f, sat, scale, stride, x, math.Float32bits(x), dst[i*stride], want)
								}
							}
						}
					}
				}
			}
		}
	}
	if !haveEncodeAsm {
		t.Log("no vector kernel on this build: the Go loops alone were checked")
		return
	}
	// Every finite quotient (zeros and subnormals included) is the
	// kernel's, but the negative ones of ue4m3.
	normal := make([]float32, 0, len(xs))
	for _, x := range xs {
		if b := math.Float32bits(x) & 0x7fffffff; b < 0x7f800000 {
			normal = append(normal, x)
		}
	}
	normal = normal[:len(normal)&^7]
	dst := make([]uint16, len(normal))
	for _, f := range []Format{FormatE4M3, FormatE5M2, FormatE2M1, FormatE2M3, FormatE3M2, FormatE4M3FNUZ, FormatE5M2FNUZ} {
		for _, sat := range []Saturation{SatFinite, NoSat} {
			p := encTable[f]
			if done := encodeVecAsm(&dst[0], 1, &normal[0], len(normal), 1, 0, p.vec(sat)); done != len(normal) {
				t.Fatalf("%v: the kernel converted %d of %d finite inputs", f, done, len(normal))
			}
			want := make([]uint16, len(normal))
			p.encodeLoop(want, 1, normal, 1, false, sat)
			for i := range want {
				if dst[i] != want[i] {
					t.Fatalf("%v %v: kernel gives %#x for %g, the Go loop %#x", f, sat, dst[i], normal[i], want[i])
				}
			}
		}
	}
	pos := make([]float32, 0, len(normal))
	for _, x := range normal {
		if math.Float32bits(x)>>31 == 0 {
			pos = append(pos, x)
		}
	}
	pos = pos[:len(pos)&^7]
	for _, sat := range []Saturation{SatFinite, NoSat} {
		p := encTable[FormatUE4M3]
		if done := encodeVecAsm(&dst[0], 1, &pos[0], len(pos), 1, 0, p.vec(sat)); done != len(pos) {
			t.Fatalf("ue4m3: the kernel converted %d of %d finite non-negative inputs", done, len(pos))
		}
		want := make([]uint16, len(pos))
		p.encodeLoop(want, 1, pos, 1, false, sat)
		for i := range want {
			if dst[i] != want[i] {
				t.Fatalf("ue4m3 %v: kernel gives %#x for %g, the Go loop %#x", sat, dst[i], pos[i], want[i])
			}
		}
	}
	// bf16: every non-NaN quotient is converted by the kernel (zeros,
	// subnormals and infs included), a NaN stops it.
	finite := make([]float32, 0, len(xs))
	for _, x := range xs {
		if x == x {
			finite = append(finite, x)
		}
	}
	finite = finite[:len(finite)&^7]
	for _, div := range []int{0, 1} {
		bdst := make([]uint16, len(finite))
		if done := encodeBF16Asm(&bdst[0], 1, &finite[0], len(finite), 0.37, div); done != len(finite) {
			t.Fatalf("bf16 div %d: the kernel converted %d of %d non-NaN inputs", div, done, len(finite))
		}
		for i, x := range finite {
			if div == 1 {
				x /= 0.37
			}
			if want := uint16(BF16FromFloat32(x)); bdst[i] != want {
				t.Fatalf("bf16 div %d: kernel gives %#x for %g, BF16FromFloat32 %#x", div, bdst[i], x, want)
			}
		}
	}
	nan := append([]float32(nil), finite[:24]...)
	nan[17] = float32(math.NaN())
	if done := encodeBF16Asm(&dst[0], 1, &nan[0], len(nan), 1, 0); done != 16 {
		t.Errorf("bf16: a NaN in the third vector: the kernel converted %d, want 16", done)
	}
	// A special lane stops the kernel before its vector.
	in := make([]float32, 32)
	for i := range in {
		in[i] = float32(i) + 0.5
	}
	for _, x := range []float32{float32(math.Inf(-1)), float32(math.NaN())} {
		in[13] = x
		if done := encodeVecAsm(&dst[0], 1, &in[0], len(in), 1, 0, encTable[FormatE4M3].vec(SatFinite)); done != 8 {
			t.Errorf("%g in the second vector: the kernel converted %d, want 8", x, done)
		}
	}
	in[13] = 1
	in[27] = float32(math.Copysign(0, -1))
	if done := encodeVecAsm(&dst[0], 1, &in[0], len(in), 1, 0, encTable[FormatUE4M3].vec(SatFinite)); done != 24 {
		t.Errorf("−0 for ue4m3 in the fourth vector: the kernel converted %d, want 24", done)
	}
}

// TestEncodeSlice checks that EncodeSlice is Encode, NaN payloads
// included, for every format.
func TestEncodeSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	xs := boundaryInputs()
	for range 1 << 12 {
		xs = append(xs, math.Float32frombits(r.Uint32()))
	}
	for _, f := range Formats() {
		for _, sat := range []Saturation{SatFinite, NoSat} {
			dst := make([]uint16, len(xs))
			f.EncodeSlice(dst, 1, xs, sat)
			for i, x := range xs {
				if want := uint16(f.Encode(x, sat)); dst[i] != want {
					t.Fatalf("%v %v: %g (%#x) gives %#x, Encode %#x", f, sat, x, math.Float32bits(x), dst[i], want)
				}
			}
		}
	}
}

// FuzzEncodeScaledSlice checks EncodeScaled and EncodeSlice against Encode
// on slices of float32 (the vector kernel's runs, its stops and the tails)
// for every format, a stride and a scale from the input.
func FuzzEncodeScaledSlice(f *testing.F) {
	seed := make([]byte, 0, 4*40)
	for _, x := range []float32{1.5, 448, 449, 464, -0.001953125, 1e-9, 3, 0, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23} {
		seed = binary.LittleEndian.AppendUint32(seed, math.Float32bits(x))
	}
	f.Add(seed, math.Float32bits(1), uint8(1))
	f.Add(seed, math.Float32bits(0.37), uint8(3))
	f.Add(seed, math.Float32bits(1.0/448), uint8(32))
	f.Fuzz(func(t *testing.T, data []byte, sb uint32, stride uint8) {
		xs := make([]float32, len(data)/4)
		for i := range xs {
			xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		if len(xs) == 0 {
			return
		}
		s := int(stride%40) + 1
		scale := math.Float32frombits(sb)
		dst := make([]uint16, (len(xs)-1)*s+1)
		for _, fm := range Formats() {
			for _, sat := range []Saturation{SatFinite, NoSat} {
				fm.EncodeScaled(dst, s, xs, scale, sat)
				for i, x := range xs {
					if want := uint16(fm.Encode(x/scale, sat)); dst[i*s] != want {
						t.Fatalf("%v %v stride %d: %g/%g gives %#x, Encode %#x", fm, sat, s, x, scale, dst[i*s], want)
					}
				}
				fm.EncodeSlice(dst, s, xs, sat)
				for i, x := range xs {
					if want := uint16(fm.Encode(x, sat)); dst[i*s] != want {
						t.Fatalf("EncodeSlice %v %v stride %d: %g gives %#x, Encode %#x", fm, sat, s, x, dst[i*s], want)
					}
				}
			}
		}
	})
}

// maxAbsRef is MaxAbs one element at a time, and the float loop it stands
// for when x holds no NaN.
func maxAbsRef(x []float32) (bitsMax uint32, floatMax float32) {
	for _, y := range x {
		bitsMax = max(bitsMax, math.Float32bits(y)&0x7fffffff)
		floatMax = max(floatMax, float32(math.Abs(float64(y))))
	}
	return bitsMax, floatMax
}

// TestMaxAbs checks MaxAbs (the vector kernel where the build has one)
// against the element-wise bit maximum for every length up to 70 and every
// position of the largest element, with zeros, subnormals, infs and NaNs,
// and against the float maximum when there is no NaN.
func TestMaxAbs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 99))
	specials := []float32{0, float32(math.Copysign(0, -1)), math.Float32frombits(1), math.Float32frombits(0x807fffff),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0xffc00001), math.MaxFloat32, -math.MaxFloat32}
	if got := MaxAbs(nil); math.Float32bits(got) != 0 {
		t.Errorf("MaxAbs(nil) = %g", got)
	}
	for n := 1; n <= 70; n++ {
		for top := 0; top < n; top++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			x[top] = -1000 // the largest, at each position
			if r.IntN(3) == 0 {
				x[r.IntN(n)] = specials[r.IntN(len(specials))]
			}
			wantBits, wantFloat := maxAbsRef(x)
			got := MaxAbs(x)
			if math.Float32bits(got) != wantBits {
				t.Fatalf("%v: MaxAbs %#x, want %#x", x, math.Float32bits(got), wantBits)
			}
			if wantFloat == wantFloat && got != wantFloat {
				t.Fatalf("%v: MaxAbs %g, the float maximum %g", x, got, wantFloat)
			}
		}
	}
}

// FuzzMaxAbs checks MaxAbs against the element-wise bit maximum.
func FuzzMaxAbs(f *testing.F) {
	f.Add([]byte{0, 0, 0xc0, 0x7f, 1, 2, 3, 4, 0, 0, 0x80, 0x3f})
	f.Fuzz(func(t *testing.T, data []byte) {
		x := make([]float32, len(data)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		want, _ := maxAbsRef(x)
		if got := MaxAbs(x); math.Float32bits(got) != want {
			t.Fatalf("MaxAbs %#x, want %#x", math.Float32bits(got), want)
		}
	})
}

// TestEncodeScaledExhaustive compares EncodeScaled (scale 1 and 0.37, the
// vector kernels where the build has them) with Encode on all 2^32 float32
// inputs, for e4m3 and e5m2 in both saturations, e2m1, ue4m3 and bf16. It
// takes minutes, so it runs only with FP8_EXHAUSTIVE=1 in the environment.
func TestEncodeScaledExhaustive(t *testing.T) {
	if os.Getenv("FP8_EXHAUSTIVE") != "1" {
		t.Skip("set FP8_EXHAUSTIVE=1 to compare all 2^32 inputs (minutes)")
	}
	cases := []struct {
		f   Format
		sat Saturation
	}{{FormatE4M3, SatFinite}, {FormatE4M3, NoSat}, {FormatE5M2, SatFinite}, {FormatE5M2, NoSat},
		{FormatE2M1, SatFinite}, {FormatUE4M3, SatFinite}, {FormatBF16, SatFinite}}
	const chunk = 1 << 20
	src := make([]float32, chunk)
	dst := make([]uint16, chunk)
	for _, c := range cases {
		for _, scale := range []float32{1, 0.37} {
			for hi := uint64(0); hi < 1<<32; hi += chunk {
				for i := range src {
					src[i] = math.Float32frombits(uint32(hi) + uint32(i))
				}
				c.f.EncodeScaled(dst, 1, src, scale, c.sat)
				for i, x := range src {
					if want := uint16(c.f.Encode(x/scale, c.sat)); dst[i] != want {
						t.Fatalf("%v %v scale %g: %#x gives %#x, Encode %#x", c.f, c.sat, scale, math.Float32bits(x), dst[i], want)
					}
				}
			}
		}
	}
}
