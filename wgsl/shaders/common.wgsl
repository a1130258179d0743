// common.wgsl: integer-only building blocks shared by the fp8lab kernels.
//
// Nothing here uses f32 arithmetic: every result is a bit pattern computed
// with u32/i32 operations, so no driver can contract, reassociate or flush it
// (NVIDIA contracts a*b+c into an FMA, lavapipe does not; drivers may flush
// subnormals). The Go runner prepends generated `const` declarations to each
// kernel and appends this file.

const NAN32: u32 = 0x7fffffffu; // canonical NaN of the tensor cores (MMA-Sim)

// f32_add returns the IEEE 754 binary32 sum x + y of two float32 bit patterns,
// rounded to nearest, ties to even, with gradual underflow (subnormal inputs
// and outputs are exact, never flushed) and overflow to ±inf. Signed zeros
// follow IEEE: (-0) + (-0) = -0, an exact zero sum of nonzero terms is +0.
// Any NaN result is the canonical 0x7fffffff (as an NVIDIA FADD gives it);
// inf + (-inf) is NaN.
//
// Method: both significands get 3 extra low bits (guard, round, sticky); the
// smaller operand is aligned with a sticky bit, the sum or difference is
// normalized, rounded once, and packed with the exponent as
// ((e-1) << 23) + m, which carries a rounding overflow into the exponent and
// reads a subnormal (e = 1, m < 2^23) correctly.
fn f32_add(x: u32, y: u32) -> u32 {
    let ax = x & 0x7fffffffu;
    let ay = y & 0x7fffffffu;
    if (ax > 0x7f800000u || ay > 0x7f800000u) {
        return NAN32;
    }
    if (ax == 0x7f800000u) {
        if (ay == 0x7f800000u && x != y) {
            return NAN32;
        }
        return x;
    }
    if (ay == 0x7f800000u) {
        return y;
    }
    if (ax == 0u && ay == 0u) {
        return x & y;
    }
    if (ax == 0u) {
        return y;
    }
    if (ay == 0u) {
        return x;
    }
    var a = x;
    var b = y;
    if (ay > ax) {
        a = y;
        b = x;
    }
    let ea = max((a >> 23u) & 0xffu, 1u);
    let eb = max((b >> 23u) & 0xffu, 1u);
    let ma = ((a & 0x7fffffu) | select(0u, 0x800000u, (a & 0x7f800000u) != 0u)) << 3u;
    let mb = ((b & 0x7fffffu) | select(0u, 0x800000u, (b & 0x7f800000u) != 0u)) << 3u;
    let d = ea - eb;
    var mbs = 1u; // b is nonzero: beyond 26 places only its sticky bit is left
    if (d < 27u) {
        mbs = (mb >> d) | select(0u, 1u, (mb & ((1u << d) - 1u)) != 0u);
    }
    var m: u32;
    if (((a ^ b) >> 31u) != 0u) {
        m = ma - mbs;
    } else {
        m = ma + mbs;
    }
    if (m == 0u) {
        return 0u;
    }
    var e = ea;
    let top = firstLeadingBit(m);
    if (top == 27u) {
        m = (m >> 1u) | (m & 1u);
        e = e + 1u;
    } else if (top < 26u) {
        let k = min(26u - top, e - 1u);
        m = m << k;
        e = e - k;
    }
    let low = m & 7u;
    m = m >> 3u;
    if (low > 4u || (low == 4u && (m & 1u) == 1u)) {
        m = m + 1u;
    }
    let r = ((e - 1u) << 23u) + m;
    let sign = a & 0x80000000u;
    if (r >= 0x7f800000u) {
        return sign | 0x7f800000u;
    }
    return sign | r;
}

// fp8_decode returns the float32 bits of an 8-bit code with EBITS exponent
// bits and MBITS fraction bits; IEEE selects e5m2-style specials (inf and NaN
// at the top exponent) over e4m3fn's (only S.1111.111 is NaN). Finite values
// are exact; NaN patterns are those of package fp8 (and the H200): e4m3 NaN
// keeps its sign and its fraction bits at the top of the float32 fraction
// (0x7f -> 0x7ff00000), e5m2 NaN is sign|0x7fffffff.
fn fp8_decode(code: u32, ebits: u32, mbits: u32, ieee: bool) -> u32 {
    let sign = ((code >> 7u) & 1u) << 31u;
    let emask = (1u << ebits) - 1u;
    let e = (code >> mbits) & emask;
    let m = code & ((1u << mbits) - 1u);
    let bias = (1u << (ebits - 1u)) - 1u;
    if (ieee && e == emask) {
        if (m == 0u) {
            return sign | 0x7f800000u;
        }
        return sign | 0x7fffffffu;
    }
    if (!ieee && e == emask && m == (1u << mbits) - 1u) {
        return sign | 0x7f800000u | (m << (23u - mbits));
    }
    if (e == 0u) {
        if (m == 0u) {
            return sign;
        }
        // m * 2^(1 - bias - mbits): normalize m.
        let top = firstLeadingBit(m);
        let ex = 1u - bias - mbits + top + 127u; // u32 wraps to the right biased exponent
        return sign | (ex << 23u) | ((m << (23u - top)) & 0x7fffffu);
    }
    return sign | ((e - bias + 127u) << 23u) | (m << (23u - mbits));
}

// rne_code rounds m × 2^(e−23) (bit 23 of m set) to nearest, ties to even,
// in units of 2^(max(e, emin) − mbits) and returns the magnitude code: the
// exponent field and the fraction in one sum (a carry out of the fraction
// increments the exponent; at te == emin a fraction below 2^mbits is a
// subnormal). Codes above the format's largest are the caller's overflow.
fn rne_code(m: u32, e: i32, mbits: u32, emin: i32) -> u32 {
    let te = max(e, emin);
    let shift = u32(23 - i32(mbits) + (te - e)); // at least 20 for the formats here
    var q = 0u;
    if (shift < 32u) {
        q = m >> shift;
        let rem = m & ((1u << shift) - 1u);
        let half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u) == 1u)) {
            q = q + 1u;
        }
    }
    return (u32(te - emin) << mbits) + q;
}

// fp8_encode converts float32 bits to an 8-bit code with MBITS fraction bits
// and minimum normal exponent EMIN, rounding to nearest with ties to even: a
// port of package fp8's encode, step for step. maxCode is the largest finite
// magnitude code, overCode what nosat gives beyond it (NaN for e4m3, inf for
// e5m2), nanCode the NaN magnitude code; sat selects satfinite (clamp to
// ±max, inf too) over nosat. NaN gives nanCode with the input's sign.
fn fp8_encode(bits: u32, mbits: u32, emin: i32, maxCode: u32, overCode: u32, nanCode: u32, sat: bool) -> u32 {
    let sign = (bits >> 24u) & 0x80u;
    let abs = bits & 0x7fffffffu;
    if (abs > 0x7f800000u) {
        return sign | nanCode;
    }
    let over = select(overCode, maxCode, sat);
    if (abs == 0x7f800000u) {
        return sign | over;
    }
    let ex = i32(abs >> 23u);
    if (ex == 0) {
        return sign;
    }
    let e = ex - 127;
    if (e > 17) {
        return sign | over;
    }
    let code = rne_code((abs & 0x7fffffu) | 0x800000u, e, mbits, emin);
    if (code > maxCode) {
        return sign | over;
    }
    return sign | code;
}

// half_encode converts float32 bits to a 16-bit code (bf16: mbits 7, emin
// -126; f16: mbits 10, emin -14) with MBITS fraction bits, rounding to
// nearest with ties to even, gradual underflow (a float32 subnormal rounds
// to a bf16 subnormal) and overflow to ±inf (infCode, the largest finite
// code + 1), as package fp8's Encode for bf16 and f16 (BF16FromFloat32,
// x448/float16). A NaN keeps its sign and top fraction bits, quiet bit set.
fn half_encode(bits: u32, mbits: u32, emin: i32, infCode: u32) -> u32 {
    let sign = (bits >> 16u) & 0x8000u;
    let abs = bits & 0x7fffffffu;
    if (abs > 0x7f800000u) {
        return sign | infCode | (1u << (mbits - 1u)) | ((abs & 0x7fffffu) >> (23u - mbits));
    }
    if (abs == 0x7f800000u) {
        return sign | infCode;
    }
    let ex = i32(abs >> 23u);
    var code: u32;
    if (ex == 0) {
        code = rne_code(abs, -126, mbits, emin); // m × 2^-149, no hidden bit
    } else {
        code = rne_code((abs & 0x7fffffu) | 0x800000u, ex - 127, mbits, emin);
    }
    return sign | min(code, infCode);
}
