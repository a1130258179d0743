// narrow.wgsl: conversions of every narrow format of package fp8 (e4m3,
// e5m2, e2m1, e2m3, e3m2, ue4m3, e4m3fnuz, e5m2fnuz, ue8m0), bit for bit as
// fp8.EncodeFloat32, fp8.EncodeUE8M0 and Format.Float32 compute them, in
// integer arithmetic only. One generic routine driven by the format's row,
// as in package fp8 (convert.go's table lists each format's edge rules).
// Generated constants (see narrow.go):
//   MBITS: u32            fraction bits
//   EMIN, EMAX: i32       exponents of the smallest normal and largest finite value
//   MAXCODE: u32          largest finite magnitude code
//   OVER_NOSAT: u32       magnitude code NoSat gives beyond the largest value
//   NAN_CODE: u32         code of a NaN input; NAN_SIGNED: the input's sign added
//   SIGN: u32             the sign bit of a code (0: unsigned format)
//   NEG_ZERO: bool        -0 exists
//   INF_NAN: bool         ±inf gives NAN_CODE in both modes (fnuz)
//   EBITS, BIAS: u32      decode: exponent field width and bias
//   CODE_BITS: u32        decode: code width
//   NAN_KIND: u32         decode: 0 none, 1 all-ones magnitude, 2 IEEE, 3 the -0 code
//   HAS_SUB: bool         decode: exponent field 0 holds subnormals (false: ue8m0)
//   WG: u32               workgroup size

struct Params {
    n: u32,        // number of elements
    sat: u32,      // 1: satfinite, 0: nosat
    x_stride: u32, // invocations per row of a 2D dispatch
    mode: u32,     // ue8m0: 0 rn, 1 rna, 2 rz, 3 rp (fp8.Rounding)
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

const CANON_NAN: u32 = 0x7fc00000u;

fn over(sat: bool) -> u32 {
    return select(OVER_NOSAT, MAXCODE, sat);
}

// n_round rounds m × 2^(e−23) (bit 23 of m set) to nearest even.
fn n_round(sign: u32, m: u32, e: i32, sat: bool) -> u32 {
    if (e > EMAX) {
        return sign | over(sat);
    }
    let code = rne_code(m, e, MBITS, EMIN); // common.wgsl
    if (code > MAXCODE) {
        return sign | over(sat);
    }
    if (code == 0u && !NEG_ZERO) {
        return 0u;
    }
    return sign | code;
}

// n_encode is fp8.EncodeFloat32 for the format of the constants.
fn n_encode(b: u32, sat: bool) -> u32 {
    let neg = (b >> 31u) != 0u;
    let abs = b & 0x7fffffffu;
    let sign = select(0u, SIGN, neg);
    if (abs > 0x7f800000u) {
        if (NAN_SIGNED && neg) {
            return NAN_CODE | SIGN;
        }
        return NAN_CODE;
    }
    if (neg && SIGN == 0u) {
        return 0u; // unsigned formats: every negative input gives 0
    }
    if (abs == 0x7f800000u) {
        if (INF_NAN) {
            return NAN_CODE;
        }
        return sign | over(sat);
    }
    if (abs == 0u) {
        return select(0u, sign, NEG_ZERO);
    }
    if (abs >= 0x800000u) {
        return n_round(sign, (abs & 0x7fffffu) | 0x800000u, i32(abs >> 23u) - 127, sat);
    }
    // float32 subnormal: normalize so that bit 23 of m is set.
    let lz = i32(countLeadingZeros(abs)) - 8;
    return n_round(sign, abs << u32(lz), -126 - lz, sat);
}

// n_decode is Format.Float32: the float32 bits of a code (NaN codes give
// the canonical 0x7fc00000, as package fp8's tables of these formats).
fn n_decode(code: u32) -> u32 {
    let c = code & ((1u << CODE_BITS) - 1u);
    let neg = SIGN != 0u && (c & SIGN) != 0u;
    let mag = c & ~SIGN;
    let ef = mag >> MBITS;
    let fr = mag & ((1u << MBITS) - 1u);
    let emask = (1u << EBITS) - 1u;
    switch NAN_KIND {
        case 1u: {
            if (mag == (SIGN - 1u) || (SIGN == 0u && mag == (1u << CODE_BITS) - 1u)) {
                return CANON_NAN;
            }
        }
        case 2u: {
            if (ef == emask) {
                if (fr != 0u) {
                    return CANON_NAN;
                }
                return select(0x7f800000u, 0xff800000u, neg);
            }
        }
        case 3u: {
            if (c == SIGN) {
                return CANON_NAN;
            }
        }
        default: {}
    }
    let s = select(0u, 0x80000000u, neg);
    if (ef == 0u && HAS_SUB) {
        if (fr == 0u) {
            return s;
        }
        // fr × 2^(1 − BIAS − MBITS), normalized: leading one at bit p.
        let p = 31u - countLeadingZeros(fr);
        let e = i32(p) + 1 - i32(BIAS) - i32(MBITS);
        return s | (u32(e + 127) << 23u) | ((fr << (23u - p)) & 0x7fffffu);
    }
    let e = i32(ef) - i32(BIAS);
    if (e < -126) {
        // ue8m0's 2^-127: a float32 subnormal
        return s | (0x400000u >> u32(-127 - e));
    }
    return s | (u32(e + 127) << 23u) | (fr << (23u - MBITS));
}

// ue8m0: fp8.EncodeUE8M0 with rounding P.mode.
fn ue8m0_encode_one(x: u32, mode: u32, sat: bool) -> u32 {
    let b = x & 0x7fffffffu;
    if (b > 0x7f800000u) {
        return 0xffu;
    }
    if (b == 0x7f800000u) {
        return select(0xffu, 0xfeu, sat);
    }
    var code: u32;
    let ex = b >> 23u;
    let frac = b & 0x7fffffu;
    if (ex == 0u) {
        if (frac <= 0x400000u || mode == 2u) {
            code = 0u;
        } else if (mode == 3u || frac >= 0x600000u) {
            code = 1u;
        } else {
            code = 0u;
        }
    } else {
        code = ex;
        if (mode == 3u && frac != 0u) {
            code = code + 1u;
        }
        if ((mode == 0u || mode == 1u) && frac >= 0x400000u) {
            code = code + 1u;
        }
    }
    if (code > 0xfeu) {
        return select(0xffu, 0xfeu, sat);
    }
    return code;
}

@compute @workgroup_size(WG)
fn narrow_encode(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * P.x_stride;
    if (i >= P.n) {
        return;
    }
    dst[i] = n_encode(src[i], P.sat != 0u);
}

@compute @workgroup_size(WG)
fn narrow_decode(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * P.x_stride;
    if (i >= P.n) {
        return;
    }
    dst[i] = n_decode(src[i]);
}

@compute @workgroup_size(WG)
fn ue8m0_encode(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * P.x_stride;
    if (i >= P.n) {
        return;
    }
    dst[i] = ue8m0_encode_one(src[i], P.mode, P.sat != 0u);
}
