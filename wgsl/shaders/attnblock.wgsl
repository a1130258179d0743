// attnblock.wgsl: the block-scaled MMA step for attnsim.wgsl's native path
// (attention's PathBlockScaled): one step of tcgen05 kind::mxf8f6f4,
// kind::mxf4 or kind::mxf4nvf4 (MMA-Sim's ST-FDPA, and GST-FDPA for FP4
// groups of 16) with an FP32 accumulator, RZ to FP32 — the arithmetic of
// scaled.wgsl's step (checked there against accum and the H200), written as
// a function of attnsim's buffers: operand a (Q or P) codes and scales in
// A, operand b (K or V) codes and scales in B, the decode tables in XT.
// attnsim.go inserts this file among the constants; it is not a module.
//
// Generated constants (only meaningful when BLK is true):
//   BLK: bool      the block-scaled path
//   BK: u32        elements of one step (32, or 64 for FP4)
//   BB: u32        elements per scale (32 or 16)
//   BF: u32        fraction bits kept below the largest exponent
//   BEZERO: i32    exponent of a zero term
//   BFE, BFS: u32  fraction bits of the element and scale tables
//   BGROUP: u32    0, or 16: groups of e2m1 products summed exactly
//   BNV: bool      NVFP4 (ue4m3 scales), else MX (ue8m0)
//   BE4M3: bool    e4m3 elements, else e2m1
//   BEMAX: i32     the element format's largest exponent (MX scale rule)
//   BSNAN: u32     the scale's NaN code (ue8m0 0xff, ue4m3 0x7f)
//   BT: u32        word offset in XT of the tables: 256 element entries,
//                  then 256 scale entries (scaled.wgsl's entry layout:
//                  flags NaN 31, inf 30, zero 29, negative 28 | (e + 2048) << 16 | m),
//                  then the 256 ue4m3 values as f32 bits (NVFP4's P scale)
// Codes are 8-bit, four a word (code i in bits 8·(i mod 4)); scales one a
// word.

fn bs_nan(t: u32) -> bool { return (t >> 31u) != 0u; }
fn bs_inf(t: u32) -> bool { return ((t >> 30u) & 1u) != 0u; }
fn bs_zero(t: u32) -> bool { return ((t >> 29u) & 1u) != 0u; }
fn bs_negf(t: u32) -> bool { return ((t >> 28u) & 1u) != 0u; }
fn bs_e(t: u32) -> i32 { return i32((t >> 16u) & 0xfffu) - 2048; }
fn bs_m(t: u32) -> u32 { return t & 0xffffu; }

fn bs_neg64(a: vec2<u32>) -> vec2<u32> {
    return add64(vec2<u32>(~a.x, ~a.y), vec2<u32>(0u, 1u));
}

// bs_shift64 returns trunc(m × 2^s) for m < 2^32 as a 64-bit value.
fn bs_shift64(m: u32, s: i32) -> vec2<u32> {
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

fn bs_shr64(a: vec2<u32>, s: u32) -> vec2<u32> {
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

fn bs_bitlen64(a: vec2<u32>) -> i32 {
    if (a.x != 0u) {
        return 64 - i32(countLeadingZeros(a.x));
    }
    return 32 - i32(countLeadingZeros(a.y));
}

// bs_rz_fp32 truncates mag × 2^sx (mag > 0) to FP32 magnitude bits.
fn bs_rz_fp32(mag: vec2<u32>, sx: i32) -> u32 {
    let e = bs_bitlen64(mag) - 1 + sx;
    if (e >= 128) {
        return 0x7f800000u;
    }
    let qe = max(e, -126) - 23;
    let sh = sx - qe;
    var q: u32;
    if (sh >= 0) {
        q = mag.y << u32(sh);
    } else {
        q = bs_shr64(mag, u32(-sh)).y;
    }
    if (e >= -126) {
        return (u32(e + 127) << 23u) | (q - 0x800000u);
    }
    return q;
}

struct BsTerm {
    neg: bool,
    m: u32,
    e: i32,
    frac: u32,
}

var<private> bs_terms: array<BsTerm, 65>;

// BTAB: the tables at XT[BT:] in workgroup memory (BTAB_N = 768 on the
// block-scaled path, 1 otherwise); decode loads them.
var<workgroup> BTAB: array<u32, BTAB_N>;

fn bs_code_a(w: u32, i: u32) -> u32 { return (A[w + i / 4u] >> (8u * (i % 4u))) & 0xffu; }
fn bs_code_b(w: u32, i: u32) -> u32 { return (B[w + i / 4u] >> (8u * (i % 4u))) & 0xffu; }

// bs_step returns d = step(a, b, scales, c) for the BK codes of a from word
// aw of A and of b from word bw of B, their BK/BB scales from word sa of A
// and sb of B, and the FP32 accumulator c: a zero sum is +0, NaN the
// canonical 0x7fffffff.
fn bs_step(aw: u32, bw: u32, sa: u32, sb: u32, c: u32) -> u32 {
    var nan = false;
    var pinf = false;
    var ninf = false;
    var n = 0u;
    if (BGROUP > 0u) {
        for (var g = 0u; g < BK; g = g + BGROUP) {
            var s4 = 0i;
            var all_zero = true;
            for (var i = g; i < g + BGROUP; i = i + 1u) {
                let pa = BTAB[bs_code_a(aw, i)];
                let pb = BTAB[bs_code_b(bw, i)];
                if (bs_zero(pa) || bs_zero(pb)) {
                    continue;
                }
                all_zero = false;
                var v = i32((bs_m(pa) * bs_m(pb)) << u32(bs_e(pa) + bs_e(pb)));
                if (bs_negf(pa) != bs_negf(pb)) {
                    v = -v;
                }
                s4 = s4 + v;
            }
            let blk = g / BB;
            let s0 = BTAB[256u + (A[sa + blk] & 0xffu)];
            let s1 = BTAB[256u + (B[sb + blk] & 0xffu)];
            if (bs_nan(s0) || bs_nan(s1)) {
                nan = true;
                continue;
            }
            let scale_zero = bs_zero(s0) || bs_zero(s1);
            var t = BsTerm(s4 < 0, 0u, bs_e(s0) + bs_e(s1), 2u * BFE + 2u * BFS);
            if (!scale_zero) {
                t.m = u32(abs(s4)) * bs_m(s0) * bs_m(s1);
            }
            if (all_zero || scale_zero) {
                t.e = BEZERO;
            }
            bs_terms[n] = t;
            n = n + 1u;
        }
    } else {
        // Per block: its two scales (a NaN scale makes every product of
        // the block NaN), then its products.
        for (var blk = 0u; blk < BK / BB; blk = blk + 1u) {
          let s0 = BTAB[256u + (A[sa + blk] & 0xffu)];
          let s1 = BTAB[256u + (B[sb + blk] & 0xffu)];
          if (bs_nan(s0) || bs_nan(s1)) {
              nan = true;
              continue;
          }
          let szero = bs_zero(s0) || bs_zero(s1);
          let sm = bs_m(s0) * bs_m(s1);
          let se = bs_e(s0) + bs_e(s1);
          for (var i = blk * BB; i < blk * BB + BB; i = i + 1u) {
            let pa = BTAB[bs_code_a(aw, i)];
            let pb = BTAB[bs_code_b(bw, i)];
            var t = BsTerm(bs_negf(pa) != bs_negf(pb), bs_m(pa) * bs_m(pb) * sm, bs_e(pa) + bs_e(pb) + se, 2u * BFE + 2u * BFS);
            var zero = bs_zero(pa) || bs_zero(pb);
            if (szero) {
                if (bs_inf(pa) || bs_inf(pb)) {
                    nan = true;
                    continue;
                }
                zero = true;
            }
            if (bs_nan(pa) || bs_nan(pb)) {
                nan = true;
                continue;
            }
            if (bs_inf(pa) || bs_inf(pb)) {
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
                t.e = BEZERO;
            }
            bs_terms[n] = t;
            n = n + 1u;
          }
        }
    }
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
        bs_terms[n] = BsTerm(false, 0u, BEZERO, 0u);
        n = n + 1u;
    } else {
        let ce = cabs >> 23u;
        var cm = cabs & 0x7fffffu;
        var e = -126;
        if (ce != 0u) {
            cm = cm | 0x800000u;
            e = i32(ce) - 127;
        }
        bs_terms[n] = BsTerm(cneg, cm, e, 23u);
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
        emax = max(emax, bs_terms[i].e);
    }
    var sum = vec2<u32>(0u, 0u);
    for (var i = 0u; i < n; i = i + 1u) {
        let t = bs_terms[i];
        var q = bs_shift64(t.m, i32(BF) - i32(t.frac) - (emax - t.e));
        if (t.neg) {
            q = bs_neg64(q);
        }
        sum = add64(sum, q);
    }
    if (sum.x == 0u && sum.y == 0u) {
        return 0u;
    }
    let neg = (sum.x >> 31u) != 0u;
    var mag = sum;
    if (neg) {
        mag = bs_neg64(sum);
    }
    return select(0u, 0x80000000u, neg) | bs_rz_fp32(mag, emax - i32(BF));
}

// bs_quant_p quantizes the BB values of P at WS[j0..j0+BB) (f32 bits) by
// attention's rule for P (tensor scale 1): the codes to PC, the scale code
// returned. MX: s = 2^(floor(log2 amax) − BEMAX) clamped to ue8m0, 1 for a
// zero amax; NVFP4: s = ue4m3(amax / 6) RNE; elements RNE satfinite of
// p / s (0 when s is 0); a NaN or ±inf in the block gives the scale's NaN
// code and zero elements.
fn bs_quant_p(j0: u32) -> u32 {
    var amax = 0u;
    var bad = false;
    for (var j = j0; j < j0 + BB; j = j + 1u) {
        let a = WS[j] & 0x7fffffffu;
        if (a >= 0x7f800000u) {
            bad = true;
        }
        amax = max(amax, a);
    }
    if (bad) {
        for (var j = j0; j < j0 + BB; j = j + 1u) {
            PC[j] = 0u;
        }
        return BSNAN;
    }
    var s = ONE;
    var code = 127u;
    if (BNV) {
        let c6 = fp8_encode(f32_div(amax, 0x40c00000u), 3u, -6, 0x7eu, 0x7eu, 0x7fu, true);
        code = c6;
        s = BTAB[512u + c6]; // the ue4m3 value as f32 bits
    } else if (amax != 0u) {
        var e: i32;
        if ((amax >> 23u) == 0u) {
            e = i32(firstLeadingBit(amax)) - 149;
        } else {
            e = i32(amax >> 23u) - 127;
        }
        let x = clamp(e - BEMAX, -127, 127);
        code = u32(x + 127);
        if (x >= -126) {
            s = u32(x + 127) << 23u;
        } else {
            s = 0x400000u; // 2^-127
        }
    }
    for (var j = j0; j < j0 + BB; j = j + 1u) {
        var y = 0u;
        if ((s & 0x7fffffffu) != 0u) {
            let q = f32_div(WS[j], s);
            if (BE4M3) {
                y = fp8_encode(q, 3u, -6, 0x7eu, 0x7fu, 0x7fu, true);
            } else {
                let r = fp8_encode(q, 1u, 0, 7u, 7u, 7u, true);
                y = (r & 0x7fu) | ((r >> 4u) & 0x8u);
            }
        }
        PC[j] = y;
    }
    return code;
}
