package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"unsafe"

	"github.com/fp8lab/fp8lab/accum"
)

// setErr writes err's message into buf (NUL terminated, truncated to n
// bytes) and returns its status.
func setErr(buf *C.char, n C.int64_t, err error) C.int {
	st := status(err)
	if err != nil && buf != nil && n > 0 {
		msg := err.Error()
		if st == statusCancelled {
			msg = "cancelled: " + msg
		}
		b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
		m := copy(b[:len(b)-1], msg)
		b[m] = 0
	}
	return C.int(st)
}

// slice views n elements of type T at p; p may be NULL only when n is 0.
func slice[T any](what string, p unsafe.Pointer, n C.int64_t) ([]T, error) {
	switch {
	case n < 0:
		return nil, fmt.Errorf("%s: negative length %d", what, n)
	case n == 0:
		return nil, nil
	case p == nil:
		return nil, fmt.Errorf("%s: NULL pointer for %d elements", what, n)
	}
	return unsafe.Slice((*T)(p), int(n)), nil
}

// optSlice is slice for an optional array: NULL gives nil.
func optSlice[T any](what string, p unsafe.Pointer, n C.int64_t) ([]T, error) {
	if p == nil {
		return nil, nil
	}
	s, err := slice[T](what, p, n)
	if s == nil && err == nil {
		s = []T{}
	}
	return s, err
}

// fp8lab_free frees a string returned by fp8lab (fp8lab_info,
// fp8lab_attention).
//
//export fp8lab_free
func fp8lab_free(p unsafe.Pointer) { C.free(p) }

// fp8lab_info sets *out to a JSON document (free it with fp8lab_free): the
// build, every model and instruction with its formats and parameters, and
// every number format.
//
//export fp8lab_info
func fp8lab_info(out **C.char, errbuf *C.char, errlen C.int64_t) C.int {
	return setErr(errbuf, errlen, guard("fp8lab_info", func() error {
		b, err := infoJSON()
		if err != nil {
			return err
		}
		*out = C.CString(string(b))
		return nil
	}))
}

// fp8lab_token_new returns a new cancellation token (≥ 1).
//
//export fp8lab_token_new
func fp8lab_token_new() C.int64_t { return C.int64_t(newToken()) }

// fp8lab_token_cancel cancels the calls running with token id (safe from
// any thread, at any time; an unknown token is ignored).
//
//export fp8lab_token_cancel
func fp8lab_token_cancel(id C.int64_t) { cancelToken(int64(id)) }

// fp8lab_token_free cancels and releases token id.
//
//export fp8lab_token_free
func fp8lab_token_free(id C.int64_t) { freeToken(int64(id)) }

// fp8lab_model_chain runs an accum.Model over rows (gemm = 0: out[r] from
// row r of a and of b) or all pairs (gemm = 1: out[r·cols + j] from row r
// of a and row j of b) of k codes each, width bytes a code (1 or 2); c is
// NULL (+0) or one float32 accumulator per output; out gets float32
// results. step = 1 runs one instruction (k ≤ K, promote 0), else the
// chain with promotion every promote elements (0: never). threads ≤ 0
// uses every CPU.
//
//export fp8lab_model_chain
func fp8lab_model_chain(name *C.char, a, b unsafe.Pointer, width C.int, rows, cols, k C.int64_t, gemm C.int,
	c, out unsafe.Pointer, promote C.int64_t, step, threads C.int, token C.int64_t, errbuf *C.char, errlen C.int64_t) C.int {
	return setErr(errbuf, errlen, guard("fp8lab_model_chain", func() error {
		ctx, err := tokenContext(int64(token))
		if err != nil {
			return err
		}
		nOut, nB := rows, rows*k
		if gemm != 0 {
			nOut, nB = rows*cols, cols*k
		}
		cs, err := optSlice[float32]("c", c, nOut)
		if err != nil {
			return err
		}
		os, err := slice[float32]("out", out, nOut)
		if err != nil {
			return err
		}
		run := func(ctx context.Context) error {
			switch width {
			case 1:
				return modelChain[uint8](ctx, name, a, b, rows, cols, k, nB, gemm != 0, cs, os, promote, step != 0, threads)
			case 2:
				return modelChain[uint16](ctx, name, a, b, rows, cols, k, nB, gemm != 0, cs, os, promote, step != 0, threads)
			}
			return fmt.Errorf("code width %d bytes: a model reads 1- or 2-byte codes", width)
		}
		return run(ctx)
	}))
}

func modelChain[T accum.Code](ctx context.Context, name *C.char, a, b unsafe.Pointer, rows, cols, k, nB C.int64_t, gemm bool, c, out []float32, promote C.int64_t, step bool, threads C.int) error {
	as, err := slice[T]("a", a, rows*k)
	if err != nil {
		return err
	}
	bs, err := slice[T]("b", b, nB)
	if err != nil {
		return err
	}
	return chainModel(ctx, C.GoString(name), as, bs, int(rows), int(cols), int(k), gemm, c, out, int(promote), step, int(threads))
}

// fp8lab_instr_chain runs an accum.Instruction over rows of k codes (width
// bytes each: 1, 2, 4 or 8) of a and b, with nscales scale codes per row in
// sa and sb (NULL and 0 when unscaled), c NULL (+0) or rows bit patterns of
// the C format (uint64 each), out rows uint64 bit patterns of the result.
// step = 1 runs one instruction, with variant ≥ 1 the variant-th documented
// peer variant; else the chain (accum.ChainCodes) with promotion every
// promote elements.
//
//export fp8lab_instr_chain
func fp8lab_instr_chain(name *C.char, a, b unsafe.Pointer, width C.int, rows, k C.int64_t, sa, sb unsafe.Pointer, nscales C.int64_t,
	c, out unsafe.Pointer, promote C.int64_t, step, variant, threads C.int, token C.int64_t, errbuf *C.char, errlen C.int64_t) C.int {
	return setErr(errbuf, errlen, guard("fp8lab_instr_chain", func() error {
		ctx, err := tokenContext(int64(token))
		if err != nil {
			return err
		}
		sas, err := optSlice[uint8]("scale_a", sa, rows*nscales)
		if err != nil {
			return err
		}
		sbs, err := optSlice[uint8]("scale_b", sb, rows*nscales)
		if err != nil {
			return err
		}
		cs, err := optSlice[uint64]("c", c, rows)
		if err != nil {
			return err
		}
		os, err := slice[uint64]("out", out, rows)
		if err != nil {
			return err
		}
		args := instrArgs{name: C.GoString(name), rows: int(rows), k: int(k), sa: sas, sb: sbs, c: cs, out: os,
			promote: int(promote), step: step != 0, variant: int(variant), threads: int(threads)}
		switch width {
		case 1:
			return instrChain[uint8](ctx, a, b, args)
		case 2:
			return instrChain[uint16](ctx, a, b, args)
		case 4:
			return instrChain[uint32](ctx, a, b, args)
		case 8:
			return instrChain[uint64](ctx, a, b, args)
		}
		return fmt.Errorf("code width %d bytes: want 1, 2, 4 or 8", width)
	}))
}

type instrArgs struct {
	name    string
	rows, k int
	sa, sb  []uint8
	c, out  []uint64
	promote int
	step    bool
	variant int
	threads int
}

func instrChain[T accum.Code](ctx context.Context, a, b unsafe.Pointer, x instrArgs) error {
	n := C.int64_t(x.rows * x.k)
	as, err := slice[T]("a", a, n)
	if err != nil {
		return err
	}
	bs, err := slice[T]("b", b, n)
	if err != nil {
		return err
	}
	return chainInstr(ctx, x.name, as, bs, x.rows, x.k, x.sa, x.sb, x.c, x.out, x.promote, x.step, x.variant, x.threads)
}

// fp8lab_encode converts n float32 values to codes of format (uint32 each,
// right-aligned): sat 0 satfinite, 1 nosat; rounding −1 the format's
// default, 0 rn, 1 rna, 2 rz, 3 rp (tf32 and ue8m0 only).
//
//export fp8lab_encode
func fp8lab_encode(format *C.char, x unsafe.Pointer, n C.int64_t, out unsafe.Pointer, sat, rounding C.int, errbuf *C.char, errlen C.int64_t) C.int {
	return setErr(errbuf, errlen, guard("fp8lab_encode", func() error {
		xs, err := slice[float32]("x", x, n)
		if err != nil {
			return err
		}
		os, err := slice[uint32]("out", out, n)
		if err != nil {
			return err
		}
		return encode(C.GoString(format), xs, os, int(sat), int(rounding))
	}))
}

// fp8lab_decode converts n codes of format (uint32 each) to float32.
//
//export fp8lab_decode
func fp8lab_decode(format *C.char, codes unsafe.Pointer, n C.int64_t, out unsafe.Pointer, errbuf *C.char, errlen C.int64_t) C.int {
	return setErr(errbuf, errlen, guard("fp8lab_decode", func() error {
		cs, err := slice[uint32]("codes", codes, n)
		if err != nil {
			return err
		}
		os, err := slice[float32]("out", out, n)
		if err != nil {
			return err
		}
		return decode(C.GoString(format), cs, os)
	}))
}

// fp8lab_quantize_mx quantizes n float32 values into MX blocks of 32
// (fp8.QuantizeMXRule; rule 0 OCP, 1 TransformerEngine's round-up): n
// element codes and nscales = n/32 ue8m0 scales.
//
//export fp8lab_quantize_mx
func fp8lab_quantize_mx(elem *C.char, rule C.int, x unsafe.Pointer, n C.int64_t, codes, scales unsafe.Pointer, nscales C.int64_t, errbuf *C.char, errlen C.int64_t) C.int {
	return setErr(errbuf, errlen, guard("fp8lab_quantize_mx", func() error {
		xs, err := slice[float32]("x", x, n)
		if err != nil {
			return err
		}
		cs, err := slice[uint8]("codes", codes, n)
		if err != nil {
			return err
		}
		ss, err := slice[uint8]("scales", scales, nscales)
		if err != nil {
			return err
		}
		return quantizeMX(C.GoString(elem), int(rule), xs, cs, ss)
	}))
}

// fp8lab_dequantize_mx is fp8.DequantizeMX: n codes, nscales scales, n
// float32 values out.
//
//export fp8lab_dequantize_mx
func fp8lab_dequantize_mx(elem *C.char, codes unsafe.Pointer, n C.int64_t, scales unsafe.Pointer, nscales C.int64_t, out unsafe.Pointer, errbuf *C.char, errlen C.int64_t) C.int {
	return setErr(errbuf, errlen, guard("fp8lab_dequantize_mx", func() error {
		cs, err := slice[uint8]("codes", codes, n)
		if err != nil {
			return err
		}
		ss, err := slice[uint8]("scales", scales, nscales)
		if err != nil {
			return err
		}
		os, err := slice[float32]("out", out, n)
		if err != nil {
			return err
		}
		return dequantizeMX(C.GoString(elem), cs, ss, os)
	}))
}

// fp8lab_quantize_nvfp4 quantizes n float32 values into NVFP4 blocks of 16
// (fp8.QuantizeNVFP4 with tensorScale, or with NaN the scale from the
// values' amax, fp8.QuantizeNVFP4Tensor), writing the scale used to
// *scaleOut.
//
//export fp8lab_quantize_nvfp4
func fp8lab_quantize_nvfp4(x unsafe.Pointer, n C.int64_t, tensorScale C.float, codes, scales unsafe.Pointer, nscales C.int64_t, scaleOut *C.float, errbuf *C.char, errlen C.int64_t) C.int {
	return setErr(errbuf, errlen, guard("fp8lab_quantize_nvfp4", func() error {
		xs, err := slice[float32]("x", x, n)
		if err != nil {
			return err
		}
		cs, err := slice[uint8]("codes", codes, n)
		if err != nil {
			return err
		}
		ss, err := slice[uint8]("scales", scales, nscales)
		if err != nil {
			return err
		}
		ts, err := quantizeNVFP4(xs, float32(tensorScale), cs, ss)
		if err != nil {
			return err
		}
		if scaleOut != nil {
			*scaleOut = C.float(ts)
		}
		return nil
	}))
}

// fp8lab_dequantize_nvfp4 is fp8.DequantizeNVFP4.
//
//export fp8lab_dequantize_nvfp4
func fp8lab_dequantize_nvfp4(codes unsafe.Pointer, n C.int64_t, scales unsafe.Pointer, nscales C.int64_t, tensorScale C.float, out unsafe.Pointer, errbuf *C.char, errlen C.int64_t) C.int {
	return setErr(errbuf, errlen, guard("fp8lab_dequantize_nvfp4", func() error {
		cs, err := slice[uint8]("codes", codes, n)
		if err != nil {
			return err
		}
		ss, err := slice[uint8]("scales", scales, nscales)
		if err != nil {
			return err
		}
		os, err := slice[float32]("out", out, n)
		if err != nil {
			return err
		}
		return dequantizeNVFP4(cs, ss, float32(tensorScale), os)
	}))
}

// fp8lab_attention runs the FP8 attention simulator (see runAttention):
// params is a JSON object of parameter values (strings, as `lab run`
// takes them); q is [mq][qh][d], k [n][kvh][d], v [n][kvh][dv] float32;
// positions (mq int64) and mask (mq × n uint8) may be NULL; o (promotions ×
// mq × qh × dv float32, no elements), exact and qref (mq × qh × dv float64)
// may be NULL. *result gets the JSON of the errors and the plan (free it
// with fp8lab_free).
//
//export fp8lab_attention
func fp8lab_attention(params *C.char, q unsafe.Pointer, mq, qh, d C.int64_t, k unsafe.Pointer, n, kvh C.int64_t, v unsafe.Pointer, dv C.int64_t,
	positions, mask unsafe.Pointer, o unsafe.Pointer, no C.int64_t, exact, qref unsafe.Pointer,
	result **C.char, threads C.int, token C.int64_t, errbuf *C.char, errlen C.int64_t) C.int {
	return setErr(errbuf, errlen, guard("fp8lab_attention", func() error {
		ctx, err := tokenContext(int64(token))
		if err != nil {
			return err
		}
		vals := map[string]string{}
		if err := json.Unmarshal([]byte(C.GoString(params)), &vals); err != nil {
			return fmt.Errorf("attention parameters: %w (want a JSON object of strings)", err)
		}
		if mq < 0 || qh < 0 || d < 0 || n < 0 || kvh < 0 || dv < 0 || mq*n > math.MaxInt32*64 {
			return fmt.Errorf("attention: bad shapes q %d×%d×%d, k/v %d×%d×%d/%d", mq, qh, d, n, kvh, d, dv)
		}
		in := &attnInputs{mq: int(mq), n: int(n), qh: int(qh), kvh: int(kvh), d: int(d), dv: int(dv)}
		if in.q, err = slice[float32]("q", q, mq*qh*d); err != nil {
			return err
		}
		if in.k, err = slice[float32]("k", k, n*kvh*d); err != nil {
			return err
		}
		if in.v, err = slice[float32]("v", v, n*kvh*dv); err != nil {
			return err
		}
		if in.positions, err = optSlice[int64]("positions", positions, mq); err != nil {
			return err
		}
		if in.mask, err = optSlice[uint8]("mask", mask, mq*n); err != nil {
			return err
		}
		os, err := optSlice[float32]("o", o, no)
		if err != nil {
			return err
		}
		ex, err := optSlice[float64]("exact", exact, mq*qh*dv)
		if err != nil {
			return err
		}
		qr, err := optSlice[float64]("qref", qref, mq*qh*dv)
		if err != nil {
			return err
		}
		res, err := runAttention(ctx, vals, in, os, ex, qr, int(threads))
		if err != nil {
			return err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		*result = C.CString(string(b))
		return nil
	}))
}
