// tfdpa_step.wgsl: the T-FDPA step of tensorcore-numerics.md §2 (tfdpa_step
// over 8-bit codes, tfdpa_step16 over 16-bit codes, and instruction: one
// 32-element instruction of chained steps, or the sm90 mma.sync emulation),
// in integer arithmetic, bit for bit with package accum. It is not a module:
// tfdpa.wgsl (the chain) and attnsim.wgsl (the attention simulator) include
// it (shaders.go), and declare what it reads: the operand words A and B
// (array<u32>) and the code table T (array<u32, 256>, workgroup memory).
//
// Generated constants (see tfdpa.go, which derives them from the model's
// parameters):
//   L: u32         products per step (32 or 16)
//   WPS: u32       u32 words read per step (4 codes a word)
//   LPW: u32       byte lanes of each word that belong to the step (4, or 2
//                  for a half of the sm90 mma.sync emulation)
//   NX: u32        WPS * LPW, the products of one step
//   F: u32         fraction bits kept below the largest exponent
//   FB: u32        fraction bits of the result (23: RZ-FP32, 13: RZ-E8M13)
//   PSH: u32       F - 2*mbits: left shift of a significand product
//   CL, CR: u32    left and right shifts of c's 24-bit significand
//   EB2: i32       bias of a product exponent sum in the table's frame
//   EZERO: i32     exponent of a zero term (never the largest: see step)
//   PACK: bool     each term and its exponent sum fit one i32 (F = 13):
//                  the one's-complement sum below; otherwise the positive
//                  and negative terms are summed apart in u32
//   MMA_SYNC: bool the mma.sync emulation (two FP16 half steps + FADD)
//   CB, CPW: u32   code bits (8, or 16 for tfdpa_step16) and codes a word
//   IN_MBITS, IN_EMASK: u32, IN_BIAS: i32  fraction bits, exponent field
//                  mask and bias of the input format (tfdpa_step16)
//
// The table tab[code] (built in Go from package fp8's decoding) packs what a
// step needs of a code:
//   bit 31     sign
//   bit 30     inf or NaN
//   bit 29     NaN
//   bits 8-15  integer significand (hidden bit included; 0 for zero codes;
//              normalized for the mma.sync emulation, which reads FP8 as FP16)
//   bits 0-7   exponent field E + EB2/2, in [32, 63] for nonzero finite codes,
//              0 for zero codes
// so that the low byte of ta + tb is the product's exponent sum in a frame
// where every nonzero product lies in [64, 126] and every zero product below
// 64.
//
// Widths (no i64 in WGSL): a term truncated to F bits below the largest
// exponent is below 2^(F+2) in magnitude; with F = 25 the significand product
// (< 2^8) shifted by PSH = 19 is below 2^27, c's term below 2^26, and 33
// terms sum below 2^33 but each sign's part below 2^32: the sum keeps the
// two parts apart in u32 and subtracts at the end. With F = 13 every term
// and its exponent sum fit one i32 (PACK), and every sum (below 2^21) too.


const SIGN_BIT: u32 = 0x80000000u;
const SPECIAL_BIT: u32 = 0x40000000u;
const NAN_BIT: u32 = 0x20000000u;

fn code_at(base: u32, k: u32) -> u32 {
    return (A[base + (k >> 2u)] >> (8u * (k & 3u))) & 0xffu;
}

fn code_bt(base: u32, k: u32) -> u32 {
    return (B[base + (k >> 2u)] >> (8u * (k & 3u))) & 0xffu;
}

fn in_lanes(k: u32, lane0: u32) -> bool {
    let lane = k & 3u;
    return lane >= lane0 && lane < lane0 + LPW;
}

// round_rz converts mag × 2^(emax - F) (mag > 0) to FP32 bits, truncating
// toward zero to FB fraction bits in the FP32 exponent range (quantum
// 2^(max(e,-126) - FB): subnormal results are produced), ±inf from 2^128 up.
fn round_rz(mag: u32, neg: bool, emax: i32) -> u32 {
    let sign = select(0u, SIGN_BIT, neg);
    let e = i32(firstLeadingBit(mag)) + emax - i32(F);
    if (e >= 128) {
        return sign | 0x7f800000u;
    }
    let qe = max(e, -126) - i32(FB);
    let s = emax - i32(F) - qe;
    var m = 0u;
    if (s >= 0) {
        m = mag << u32(s);
    } else if (s > -32) {
        m = mag >> u32(-s);
    }
    if (e >= -126) {
        return sign | (u32(e + 127) << 23u) | ((m - (1u << FB)) << (23u - FB));
    }
    return sign | (m << (23u - FB));
}

// c_special returns what c brings to a step with a special value: (NaN,
// +inf, -inf).
fn c_special(c: u32) -> vec3<bool> {
    let m = c & 0x7fffffffu;
    let inf = m == 0x7f800000u;
    return vec3<bool>(m > 0x7f800000u, inf && (c >> 31u) == 0u, inf && (c >> 31u) != 0u);
}

// special_result is the result of a step with a special value, given
// whether it met a NaN (or inf × 0), +inf and -inf: the canonical NaN for a
// NaN or +inf with -inf, otherwise the infinity.
fn special_result(nan: bool, pinf: bool, ninf: bool) -> u32 {
    if (nan || (pinf && ninf)) {
        return NAN32;
    }
    if (pinf) {
        return 0x7f800000u;
    }
    return 0xff800000u;
}

// step_special is the step when an input code or c is inf or NaN
// (tensorcore-numerics.md §2.3): any NaN, inf × 0, or +inf with -inf give the
// canonical NaN; otherwise the infinity.
fn step_special(ba: u32, bb: u32, k0: u32, k1: u32, lane0: u32, c: u32) -> u32 {
    let cs = c_special(c);
    var nan = cs.x;
    var pinf = cs.y;
    var ninf = cs.z;
    for (var k = k0; k < k1; k = k + 1u) {
        if (!in_lanes(k, lane0)) {
            continue;
        }
        let ta = T[code_at(ba, k)];
        let tb = T[code_bt(bb, k)];
        if (((ta | tb) & NAN_BIT) != 0u) {
            nan = true;
        } else if (((ta | tb) & SPECIAL_BIT) != 0u) {
            let za = (ta & (SPECIAL_BIT | 0xff00u)) == 0u;
            let zb = (tb & (SPECIAL_BIT | 0xff00u)) == 0u;
            if (za || zb) {
                nan = true;
            } else if (((ta ^ tb) & SIGN_BIT) != 0u) {
                ninf = true;
            } else {
                pinf = true;
            }
        }
    }
    return special_result(nan, pinf, ninf);
}

// tfdpa_step returns d = T_FDPA(a[k0..k1), b[k0..k1), c) over the byte lanes
// [lane0, lane0+LPW) of each word, as accum's Params.Step computes it:
// products exact, aligned to the largest exponent (products read with
// Exp(a)+Exp(b), not renormalized), each term truncated toward zero to F
// bits below it, an exact integer sum, one RZ conversion. The largest
// exponent includes EZERO, which never matters for FP8 inputs and an FP32 c
// (the smallest product is 2^-18, a nonzero FP32 c has exponent >= -126).
fn tfdpa_step(ba: u32, bb: u32, k0: u32, k1: u32, lane0: u32, c: u32) -> u32 {
    var xs: array<u32, NX>;
    var nneg = 0u; // minus the number of negative terms (F = 13), modulo 2^32
    var pmax = 0u;
    var flags = 0u;
    let w0 = k0 >> 2u;
    let w1 = (k1 + 3u) >> 2u;
    for (var i = 0u; i < WPS; i = i + 1u) {
        let w = w0 + i;
        var wa = 0u;
        var wb = 0u;
        if (w < w1) {
            wa = A[ba + w];
            wb = B[bb + w];
        }
        for (var j = 0u; j < LPW; j = j + 1u) {
            let sh = 8u * (lane0 + j);
            let ta = T[(wa >> sh) & 0xffu];
            let tb = T[(wb >> sh) & 0xffu];
            let s = (ta + tb) & 0xffu;
            let p = ((ta >> 8u) & 0xffu) * ((tb >> 8u) & 0xffu);
            if (!PACK) {
                xs[i * LPW + j] = ((ta ^ tb) & SIGN_BIT) | (p << 8u) | s;
            } else {
                let sg = u32(i32(ta ^ tb) >> 31u);
                xs[i * LPW + j] = (((p << PSH) ^ sg) << 8u) | s;
                nneg = nneg + sg;
            }
            pmax = max(pmax, s);
            flags = flags | ta | tb;
        }
    }
    let cexp = (c >> 23u) & 0xffu;
    if (cexp == 0xffu || (flags & SPECIAL_BIT) != 0u) {
        return step_special(ba, bb, k0, k1, lane0, c);
    }
    let cnz = (c & 0x7fffffffu) != 0u;
    let mc = (c & 0x7fffffu) | select(0u, 0x800000u, cexp != 0u);
    let cs = i32(max(cexp, 1u)) - 127 + EB2;
    var emax = cs;
    if (pmax >= 64u) {
        emax = i32(pmax);
        if (cnz) {
            emax = max(emax, cs);
        }
    }
    emax = max(emax, EZERO + EB2);
    var qc = 0u;
    if (cnz) {
        qc = (mc << CL) >> min(u32(emax - cs) + CR, 31u);
    }
    var mag: u32;
    var neg: bool;
    if (PACK) {
        // Each term is held as x = t << 8 | s: t the product shifted by
        // PSH, one's-complemented (~m) when negative, s its exponent sum.
        // x >> (8 + d) is t >> d whatever s (s < 2^8), and ~m >> d is
        // ~(m >> d) = -(m >> d) - 1: the truncated magnitude, negated, less
        // one, so the sum is short by the number of negative terms, which
        // nneg (its negative) adds back. A zero product has t = 0 or ~0,
        // unchanged by any shift of 8 or more: one is, since a zero
        // product's s is below 64 and emax is at least 64 when any product
        // is nonzero; when none is, the sum is c's term alone.
        var sum = select(i32(qc), -i32(qc), (c >> 31u) != 0u);
        if (pmax >= 64u) {
            sum = sum - i32(nneg);
            let em8 = emax + 8;
            for (var i = 0u; i < NX; i = i + 1u) {
                let x = i32(xs[i]);
                sum = sum + (x >> min(u32(em8 - (x & 0xff)), 31u));
            }
        }
        neg = sum < 0;
        mag = u32(abs(sum));
    } else {
        // tot is the sum of every term's magnitude modulo 2^32, ngt the
        // exact sum of the negative ones (below 2^32): the positive part is
        // tot - ngt modulo 2^32, exact since it is below 2^32 too. One
        // masked add a term instead of two selects.
        let cneg = u32(i32(c) >> 31u);
        var tot = qc;
        var ngt = qc & cneg;
        for (var i = 0u; i < NX; i = i + 1u) {
            let x = xs[i];
            let q = (((x >> 8u) & 0xffu) << PSH) >> min(u32(emax - i32(x & 0xffu)), 31u);
            tot = tot + q;
            ngt = ngt + (q & u32(i32(x) >> 31u));
        }
        let pos = tot - ngt;
        neg = ngt > pos;
        mag = select(pos - ngt, ngt - pos, neg);
    }
    if (mag == 0u) {
        return 0u; // a zero sum is +0, whatever the terms' signs (H200)
    }
    return round_rz(mag, neg, emax - EB2);
}

// code16 returns 16-bit code k of the word w (2 codes a word, code k in
// bits 16(k mod 2)..).
fn code16(w: u32, j: u32) -> u32 {
    return (w >> (16u * j)) & 0xffffu;
}

// step_special16 is tfdpa_step16 when an input code or c is inf or NaN
// (tensorcore-numerics.md §2.3), as step_special: any NaN, inf × 0, or +inf
// with -inf give the canonical NaN; otherwise the infinity.
fn step_special16(ba: u32, bb: u32, k0: u32, c: u32) -> u32 {
    let cs = c_special(c);
    var nan = cs.x;
    var pinf = cs.y;
    var ninf = cs.z;
    let w0 = k0 >> 1u;
    let fmask = (1u << IN_MBITS) - 1u;
    for (var i = 0u; i < WPS; i = i + 1u) {
        let wa = A[ba + w0 + i];
        let wb = B[bb + w0 + i];
        for (var j = 0u; j < 2u; j = j + 1u) {
            let ca = code16(wa, j);
            let cb = code16(wb, j);
            let sa = ((ca >> IN_MBITS) & IN_EMASK) == IN_EMASK; // inf or NaN
            let sb = ((cb >> IN_MBITS) & IN_EMASK) == IN_EMASK;
            if ((sa && (ca & fmask) != 0u) || (sb && (cb & fmask) != 0u)) {
                nan = true;
            } else if (sa || sb) {
                if ((ca & 0x7fffu) == 0u || (cb & 0x7fffu) == 0u) {
                    nan = true;
                } else if (((ca ^ cb) & 0x8000u) != 0u) {
                    ninf = true;
                } else {
                    pinf = true;
                }
            }
        }
    }
    return special_result(nan, pinf, ninf);
}

// tfdpa_step16 is tfdpa_step for 16-bit codes (bf16 or f16, CPW = 2): d =
// T_FDPA(a[k0..k0+L), b[k0..k0+L), c) as accum's Params.Step computes it,
// the L codes from word k0/2 on. The exponents are i32 in their own units
// (a bf16 product spans 2^-266 .. 2^256, beyond any byte frame): a product
// of significands sa·sb (< 2^22) has exponent Exp(a) + Exp(b) (subnormals
// not renormalized); every element is a term, and a zero term (a zero code,
// or c = ±0) has exponent EZERO, which is the largest when every nonzero
// product lies below 2^EZERO (bf16 products can: 2^-70 · 2^-70). Terms are
// truncated to F bits below the largest exponent: sa·sb << PSH < 2^27, c's
// term < 2^26, and each sign's part of the sum of L terms stays below 2^32
// (checked in Go), kept apart and subtracted at the end; one RZ conversion.
fn tfdpa_step16(ba: u32, bb: u32, k0: u32, c: u32) -> u32 {
    var ps: array<u32, NX>; // sign | sa·sb
    var es: array<i32, NX>; // Exp(a) + Exp(b)
    var emax = -100000;     // largest exponent of a nonzero term
    let cexp = (c >> 23u) & 0xffu;
    var zero = (c & 0x7fffffffu) == 0u;
    var special = cexp == 0xffu;
    let w0 = k0 >> 1u;
    let fmask = (1u << IN_MBITS) - 1u;
    let hidden = 1u << IN_MBITS;
    for (var i = 0u; i < WPS; i = i + 1u) {
        let wa = A[ba + w0 + i];
        let wb = B[bb + w0 + i];
        for (var j = 0u; j < 2u; j = j + 1u) {
            let ca = code16(wa, j);
            let cb = code16(wb, j);
            let fa = (ca >> IN_MBITS) & IN_EMASK;
            let fb = (cb >> IN_MBITS) & IN_EMASK;
            special = special || fa == IN_EMASK || fb == IN_EMASK;
            let p = ((ca & fmask) | select(hidden, 0u, fa == 0u)) * ((cb & fmask) | select(hidden, 0u, fb == 0u));
            let e = i32(max(fa, 1u) + max(fb, 1u)) - 2 * IN_BIAS;
            ps[2u * i + j] = (((ca ^ cb) << 16u) & SIGN_BIT) | p;
            es[2u * i + j] = e;
            if (p == 0u) {
                zero = true;
            } else {
                emax = max(emax, e);
            }
        }
    }
    if (special) {
        return step_special16(ba, bb, k0, c);
    }
    let cs = i32(max(cexp, 1u)) - 127;
    let cnz = (c & 0x7fffffffu) != 0u;
    if (cnz) {
        emax = max(emax, cs);
    }
    if (zero) {
        emax = max(emax, EZERO);
    }
    var pos = 0u;
    var ngt = 0u;
    if (cnz) {
        let mc = (c & 0x7fffffu) | select(0u, 0x800000u, cexp != 0u);
        let qc = (mc << CL) >> min(u32(emax - cs) + CR, 31u);
        pos = select(qc, 0u, (c >> 31u) != 0u);
        ngt = select(0u, qc, (c >> 31u) != 0u);
    }
    for (var i = 0u; i < NX; i = i + 1u) {
        let x = ps[i];
        let q = ((x & 0x7fffffffu) << PSH) >> min(u32(emax - es[i]), 31u);
        let isneg = (x >> 31u) != 0u;
        pos = pos + select(q, 0u, isneg);
        ngt = ngt + select(0u, q, isneg);
    }
    let neg = ngt > pos;
    let mag = select(pos - ngt, ngt - pos, neg);
    if (mag == 0u) {
        return 0u; // a zero sum is +0, whatever the terms' signs (H200)
    }
    return round_rz(mag, neg, emax);
}

// instruction runs one tensor-core instruction of 32 elements (fewer at the
// end of K) on the accumulator c: 32/L chained steps, or, for the sm90
// mma.sync emulation, two half steps from +0 (K mod 4 in {0,1}, then {2,3})
// and an FP32 round-to-nearest-even add of c.
fn instruction(ba: u32, bb: u32, k0: u32, k1: u32, c: u32) -> u32 {
    if (CB == 16u) {
        var d16 = c;
        for (var ks = k0; ks < k1; ks = ks + L) {
            d16 = tfdpa_step16(ba, bb, ks, d16);
        }
        return d16;
    }
    if (MMA_SYNC) {
        var t = tfdpa_step(ba, bb, k0, k1, 0u, 0u);
        t = tfdpa_step(ba, bb, k0, k1, 2u, t);
        return f32_add(c, t);
    }
    var d = c;
    for (var ks = k0; ks < k1; ks = ks + L) {
        d = tfdpa_step(ba, bb, ks, min(ks + L, k1), 0u, d);
    }
    return d;
}
