package wgsl

import (
	"context"
	"fmt"
	"math"

	"github.com/fp8lab/fp8lab/fp8"
)

// narrowConsts are narrow.wgsl's constants for format f: its row of package
// fp8's format table, spelled out for the shader.
func narrowConsts(f fp8.Format) ([]constDecl, error) {
	if !f.Valid() || f.CodeBits() > 8 {
		return nil, fmt.Errorf("wgsl: %v is not a narrow format (at most 8-bit codes)", f)
	}
	s := f.Spec()
	magAll := uint32(1)<<(s.CodeBits-1) - 1
	if !s.Signed {
		magAll = uint32(1)<<s.CodeBits - 1
	}
	maxCode := int(f.MaxCode())
	var overNoSat, nanCode, nanKind int
	nanSigned, infNaN := false, false
	sign := int(f.SignBit())
	switch s.NaN {
	case fp8.NaNIEEE:
		overNoSat = (1<<s.ExpBits - 1) << s.FracBits
		nanCode, nanSigned, nanKind = int(magAll), true, 2
	case fp8.NaNAllOnes:
		overNoSat, nanCode, nanSigned, nanKind = int(magAll), int(magAll), s.Signed, 1
	case fp8.NaNNegZero:
		overNoSat, nanCode, infNaN, nanKind = sign, sign, true, 3
	case fp8.NaNNone:
		overNoSat, nanCode = maxCode, maxCode
	}
	return []constDecl{
		cU32("MBITS", s.FracBits), cI32("EMIN", f.Emin()), cI32("EMAX", f.Emax()), cU32("MAXCODE", maxCode),
		cU32("OVER_NOSAT", overNoSat), cU32("NAN_CODE", nanCode), cBool("NAN_SIGNED", nanSigned), cU32("SIGN", sign),
		cBool("NEG_ZERO", s.Signed && s.NaN != fp8.NaNNegZero), cBool("INF_NAN", infNaN),
		cU32("EBITS", s.ExpBits), cU32("BIAS", s.Bias), cU32("CODE_BITS", s.CodeBits), cU32("NAN_KIND", nanKind),
		cBool("HAS_SUB", s.Subnormals), cU32("WG", convertWG),
	}, nil
}

// narrowRun runs a narrow.wgsl entry over the words src.
func (r *Runner) narrowRun(ctx context.Context, f fp8.Format, entry string, src []uint32, sat, mode uint32) ([]uint32, error) {
	consts, err := narrowConsts(f)
	if err != nil {
		return nil, err
	}
	if len(src) == 0 {
		return nil, nil
	}
	if err := r.lock(); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	in, err := r.be.upload("narrow.src", u32Bytes(src))
	if err != nil {
		return nil, err
	}
	defer r.be.free(in)
	out, err := r.be.alloc("narrow.dst", uint64(4*len(src)))
	if err != nil {
		return nil, err
	}
	defer r.be.free(out)
	k := &kernelSpec{file: "narrow", entry: entry, consts: consts, storage: []access{readOnly, readWrite}}
	x, y, stride := grid(len(src), convertWG)
	if _, err := r.be.run(ctx, []call{{k: k, bufs: []buffer{in, out}, params: []uint32{uint32(len(src)), sat, stride, mode}, x: x, y: y}}, false); err != nil {
		return nil, err
	}
	b, err := r.be.read(ctx, out, uint64(4*len(src)))
	if err != nil {
		return nil, err
	}
	return bytesU32(b), nil
}

// EncodeNarrow converts float32 values to format f on the GPU, bit for bit
// as fp8.EncodeFloat32(f, x, sat): round to nearest even with f's rules for
// NaN, overflow, ±inf and signed zeros (e4m3, e5m2, e2m1, e2m3, e3m2, ue4m3,
// e4m3fnuz, e5m2fnuz; the table at the top of package fp8's convert.go).
// ue8m0 has its own rounding modes: [Runner.EncodeUE8M0].
func (r *Runner) EncodeNarrow(ctx context.Context, f fp8.Format, sat fp8.Saturation, x []float32) ([]uint8, error) {
	if f == fp8.FormatUE8M0 {
		return nil, fmt.Errorf("wgsl: ue8m0 is converted with a rounding mode: use EncodeUE8M0")
	}
	src := make([]uint32, len(x))
	for i, v := range x {
		src[i] = math.Float32bits(v)
	}
	out, err := r.narrowRun(ctx, f, "narrow_encode", src, satWord(sat), 0)
	if err != nil {
		return nil, err
	}
	return u8s(out), nil
}

// EncodeUE8M0 converts float32 values to the MX scale format ue8m0 on the
// GPU, bit for bit as fp8.EncodeUE8M0(x, rnd, sat).
func (r *Runner) EncodeUE8M0(ctx context.Context, rnd fp8.Rounding, sat fp8.Saturation, x []float32) ([]uint8, error) {
	if rnd > fp8.RoundUp {
		return nil, fmt.Errorf("wgsl: unknown rounding %v", rnd)
	}
	src := make([]uint32, len(x))
	for i, v := range x {
		src[i] = math.Float32bits(v)
	}
	out, err := r.narrowRun(ctx, fp8.FormatUE8M0, "ue8m0_encode", src, satWord(sat), uint32(rnd))
	if err != nil {
		return nil, err
	}
	return u8s(out), nil
}

// DecodeNarrow returns the float32 bit patterns of codes of format f (at
// most 8-bit codes; bits above the code width are ignored), bit for bit as
// f.Float32 gives them: NaN codes give the canonical 0x7fc00000, except
// e4m3 and e5m2, whose NaNs decode to the patterns the H200 gives
// ([Runner.DecodeFP8], used for them).
func (r *Runner) DecodeNarrow(ctx context.Context, f fp8.Format, codes []uint8) ([]uint32, error) {
	if f == fp8.FormatE4M3 || f == fp8.FormatE5M2 {
		return r.DecodeFP8(ctx, f, codes)
	}
	src := make([]uint32, len(codes))
	for i, c := range codes {
		src[i] = uint32(c)
	}
	return r.narrowRun(ctx, f, "narrow_decode", src, 0, 0)
}

func satWord(sat fp8.Saturation) uint32 {
	if sat == fp8.SatFinite {
		return 1
	}
	return 0
}

func u8s(w []uint32) []uint8 {
	b := make([]uint8, len(w))
	for i, c := range w {
		b[i] = uint8(c)
	}
	return b
}
