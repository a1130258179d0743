// blockstep.wgsl: one step of NVIDIA's block-scaled and narrow-format MMA
// instructions (accum's nvInstr: MMA-Sim's ST-FDPA, and GST-FDPA for FP4
// groups of 16; tcgen05 kind::f8f6f4 / mxf8f6f4 / mxf4 / mxf4nvf4 and
// sm_120a's mma.sync) for an FP32 accumulator, RZ to FP32, bit for bit in
// integer arithmetic. It is not a module: the modules of scaled.wgsl (one
// step per invocation) and attnsim.wgsl (attnblock.wgsl, attention's native
// block-scaled path) include it (shaders.go), and both run this one step.
//
// Operands and scales are read through decode-table entries the host builds
// from package fp8 (accum's decoding, FP4/FP6 widened to e4m3 values):
// entry = flags (bit 31 NaN, 30 inf, 29 zero, 28 negative) | (e + 2048) << 16 | m,
// the value being (-1)^neg × m × 2^(e − frac) with frac per table.
//
// The including shader defines:
//   constants  SK: u32 (elements of one step: 32, or 64 for FP4 groups),
//              SF: u32 (fraction bits kept below the largest exponent),
//              SEZERO: i32 (exponent of a zero term), SFA, SFB, SFS: u32
//              (fraction bits of the a, b and scale tables), SSCALED: bool
//              (block scales present), SBLOCK: u32 (elements per scale),
//              SGROUP: u32 (0, or 16: groups of e2m1 products summed exactly)
//   functions  op_a(aw, i), op_b(bw, i): the table entry of element i of a
//              (b) at aw (bw); sc_a(sa, blk), sc_b(sb, blk): the table entry
//              of a's (b's) scale of block blk; add64 (64-bit add, hi/lo)

fn te_nan(t: u32) -> bool { return (t >> 31u) != 0u; }
fn te_inf(t: u32) -> bool { return ((t >> 30u) & 1u) != 0u; }
fn te_zero(t: u32) -> bool { return ((t >> 29u) & 1u) != 0u; }
fn te_neg(t: u32) -> bool { return ((t >> 28u) & 1u) != 0u; }
fn te_e(t: u32) -> i32 { return i32((t >> 16u) & 0xfffu) - 2048; }
fn te_m(t: u32) -> u32 { return t & 0xffffu; }

// ---- 64-bit two's complement integers as vec2<u32>(hi, lo) -------------

fn neg64(a: vec2<u32>) -> vec2<u32> {
    return add64(vec2<u32>(~a.x, ~a.y), vec2<u32>(0u, 1u));
}

// shift64 returns trunc(m × 2^s) for m < 2^32, as a 64-bit value (0 when
// the shift leaves nothing; s at most 31 + 32).
fn shift64(m: u32, s: i32) -> vec2<u32> {
    if (s <= -32) {
        return vec2<u32>(0u, 0u);
    }
    if (s < 0) {
        return vec2<u32>(0u, m >> u32(-s));
    }
    if (s == 0) {
        return vec2<u32>(0u, m);
    }
    if (s < 32) {
        return vec2<u32>(m >> u32(32 - s), m << u32(s));
    }
    return vec2<u32>(m << u32(s - 32), 0u);
}

// shr64 shifts a 64-bit magnitude right by s (>= 0), truncating.
fn shr64(a: vec2<u32>, s: u32) -> vec2<u32> {
    if (s == 0u) {
        return a;
    }
    if (s >= 64u) {
        return vec2<u32>(0u, 0u);
    }
    if (s >= 32u) {
        return vec2<u32>(0u, a.x >> (s - 32u));
    }
    return vec2<u32>(a.x >> s, (a.y >> s) | (a.x << (32u - s)));
}

fn bitlen64(a: vec2<u32>) -> i32 {
    if (a.x != 0u) {
        return 64 - i32(countLeadingZeros(a.x));
    }
    return 32 - i32(countLeadingZeros(a.y));
}

// rz_fp32 truncates mag × 2^sx (mag > 0) to FP32 and returns its magnitude
// bits (0x7f800000 beyond the range), as accum's roundRZ with 23 bits.
fn rz_fp32(mag: vec2<u32>, sx: i32) -> u32 {
    let e = bitlen64(mag) - 1 + sx;
    if (e >= 128) {
        return 0x7f800000u;
    }
    let qe = max(e, -126) - 23;
    let sh = sx - qe;
    var q: u32;
    if (sh >= 0) {
        q = mag.y << u32(sh); // the result has at most 24 bits: fits
    } else {
        q = shr64(mag, u32(-sh)).y;
    }
    if (e >= -126) {
        return (u32(e + 127) << 23u) | (q - 0x800000u);
    }
    return q;
}

// ---- the step ----------------------------------------------------------

struct Term {
    neg: bool,
    m: u32,
    e: i32,
    frac: u32,
}

const SNT: u32 = SK + 1u; // terms: products (or groups) and c

var<private> terms: array<Term, SNT>;

// block_step returns d = step(a, b, scales, c) for the SK elements of a at
// aw and of b at bw, their scales at sa and sb, and the FP32 accumulator c
// (bits): every product exact (with its block's two scales), aligned to the
// largest exponent, truncated to SF bits below it, summed exactly, one RZ
// conversion; a zero sum is +0, a NaN the canonical 0x7fffffff.
fn block_step(aw: u32, bw: u32, sa: u32, sb: u32, c: u32) -> u32 {
    var nan = false;
    var pinf = false;
    var ninf = false;
    var n = 0u;
    if (SGROUP > 0u) {
        // GST: the products of each group of 16 e2m1 elements summed
        // exactly (units of 2^-2SFA), times the two scales' significands,
        // are one term with the scales' exponents.
        for (var g = 0u; g < SK; g = g + SGROUP) {
            var s4 = 0i;
            var all_zero = true;
            for (var i = g; i < g + SGROUP; i = i + 1u) {
                let pa = op_a(aw, i);
                let pb = op_b(bw, i);
                if (te_zero(pa) || te_zero(pb)) {
                    continue;
                }
                all_zero = false;
                var v = i32((te_m(pa) * te_m(pb)) << u32(te_e(pa) + te_e(pb)));
                if (te_neg(pa) != te_neg(pb)) {
                    v = -v;
                }
                s4 = s4 + v;
            }
            let blk = g / SBLOCK;
            let s0 = sc_a(sa, blk);
            let s1 = sc_b(sb, blk);
            if (te_nan(s0) || te_nan(s1)) {
                nan = true;
                continue;
            }
            let scale_zero = te_zero(s0) || te_zero(s1);
            var t = Term(s4 < 0, 0u, te_e(s0) + te_e(s1), SFA + SFB + 2u * SFS);
            if (!scale_zero) {
                t.m = u32(abs(s4)) * te_m(s0) * te_m(s1);
            }
            if (all_zero || scale_zero) {
                t.e = SEZERO;
            }
            terms[n] = t;
            n = n + 1u;
        }
    } else {
        // ST: per block its two scales (a NaN scale makes every product of
        // the block NaN; unscaled: one block, scale 1), then its products.
        let bl = select(SK, SBLOCK, SSCALED);
        for (var blk = 0u; blk < SK / bl; blk = blk + 1u) {
            var sm = 1u;
            var se = 0;
            var szero = false;
            var frac = SFA + SFB;
            if (SSCALED) {
                let s0 = sc_a(sa, blk);
                let s1 = sc_b(sb, blk);
                if (te_nan(s0) || te_nan(s1)) {
                    nan = true;
                    continue;
                }
                szero = te_zero(s0) || te_zero(s1);
                sm = te_m(s0) * te_m(s1);
                se = te_e(s0) + te_e(s1);
                frac = frac + 2u * SFS;
            }
            for (var i = blk * bl; i < blk * bl + bl; i = i + 1u) {
                let pa = op_a(aw, i);
                let pb = op_b(bw, i);
                var t = Term(te_neg(pa) != te_neg(pb), te_m(pa) * te_m(pb) * sm, te_e(pa) + te_e(pb) + se, frac);
                var zero = te_zero(pa) || te_zero(pb);
                if (szero) {
                    if (te_inf(pa) || te_inf(pb)) {
                        nan = true;
                        continue;
                    }
                    zero = true;
                }
                if (te_nan(pa) || te_nan(pb)) {
                    nan = true;
                    continue;
                }
                if (te_inf(pa) || te_inf(pb)) {
                    if (zero) {
                        nan = true;
                    } else if (t.neg) {
                        ninf = true;
                    } else {
                        pinf = true;
                    }
                    continue;
                }
                if (zero) {
                    t.m = 0u;
                    t.e = SEZERO;
                }
                terms[n] = t;
                n = n + 1u;
            }
        }
    }
    // c, an FP32 term.
    let cabs = c & 0x7fffffffu;
    let cneg = (c >> 31u) != 0u;
    if (cabs > 0x7f800000u) {
        nan = true;
    } else if (cabs == 0x7f800000u) {
        if (cneg) {
            ninf = true;
        } else {
            pinf = true;
        }
    } else if (cabs == 0u) {
        terms[n] = Term(false, 0u, SEZERO, 0u);
        n = n + 1u;
    } else {
        let ce = cabs >> 23u;
        var cm = cabs & 0x7fffffu;
        var e = -126;
        if (ce != 0u) {
            cm = cm | 0x800000u;
            e = i32(ce) - 127;
        }
        terms[n] = Term(cneg, cm, e, 23u);
        n = n + 1u;
    }
    if (nan || (pinf && ninf)) {
        return 0x7fffffffu;
    }
    if (pinf) {
        return 0x7f800000u;
    }
    if (ninf) {
        return 0xff800000u;
    }
    var emax = -100000;
    for (var i = 0u; i < n; i = i + 1u) {
        emax = max(emax, terms[i].e);
    }
    var sum = vec2<u32>(0u, 0u);
    for (var i = 0u; i < n; i = i + 1u) {
        let t = terms[i];
        var q = shift64(t.m, i32(SF) - i32(t.frac) - (emax - t.e));
        if (t.neg) {
            q = neg64(q);
        }
        sum = add64(sum, q);
    }
    if (sum.x == 0u && sum.y == 0u) {
        return 0u; // a zero sum is +0
    }
    let neg = (sum.x >> 31u) != 0u;
    var mag = sum;
    if (neg) {
        mag = neg64(sum);
    }
    return select(0u, 0x80000000u, neg) | rz_fp32(mag, emax - i32(SF));
}
