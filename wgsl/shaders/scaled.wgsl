// scaled.wgsl: one step of NVIDIA's block-scaled and narrow-format MMA
// instructions (accum's nvInstr: MMA-Sim's ST-FDPA and GST-FDPA, tcgen05
// kind::f8f6f4 / mxf8f6f4 / mxf4 / mxf4nvf4 and sm_120a's mma.sync), bit for
// bit in integer arithmetic, for an FP32 accumulator (RZ to FP32). One
// invocation computes one output: d = step(a[0..K), b[0..K), scales, c).
//
// Operands and scales are read through decode tables the host builds from
// package fp8 (the same decoding as accum, FP4/FP6 widened to e4m3 values):
// entry = flags (bit 31 NaN, 30 inf, 29 zero, 28 negative) | (e + 2048) << 16 | m,
// the value being (-1)^neg × m × 2^(e − frac) with frac per table.
// Generated constants (see scaled.go):
//   K: u32                 elements of one step (32, or 64 for FP4 groups)
//   F: u32                 fraction bits kept below the largest exponent
//   EZERO: i32             exponent of a zero term
//   FA, FB, FS: u32        fraction bits of the a, b and scale tables
//   SCALED: bool           block scales present
//   BLOCK: u32             elements per scale
//   GROUP: u32             0, or 16: groups of e2m1 products summed exactly
//   WG: u32                workgroup size

struct Params {
    n: u32,        // outputs
    x_stride: u32, // invocations per row of a 2D dispatch
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> TAB: array<u32>; // 256 a, 256 b, 256 scale entries
@group(0) @binding(2) var<storage, read> A: array<u32>;   // K codes per output
@group(0) @binding(3) var<storage, read> B: array<u32>;
@group(0) @binding(4) var<storage, read> S: array<u32>;   // K/BLOCK scales of a, then of b, per output
@group(0) @binding(5) var<storage, read> C: array<u32>;   // c (FP32 bits) per output
@group(0) @binding(6) var<storage, read_write> D: array<u32>;

const NSC: u32 = K / BLOCK;
const NT: u32 = K + 1u; // terms: products (or groups) and c

fn t_nan(t: u32) -> bool { return (t >> 31u) != 0u; }
fn t_inf(t: u32) -> bool { return ((t >> 30u) & 1u) != 0u; }
fn t_zero(t: u32) -> bool { return ((t >> 29u) & 1u) != 0u; }
fn t_neg(t: u32) -> bool { return ((t >> 28u) & 1u) != 0u; }
fn t_e(t: u32) -> i32 { return i32((t >> 16u) & 0xfffu) - 2048; }
fn t_m(t: u32) -> u32 { return t & 0xffffu; }

// ---- 64-bit two's complement integers as vec2<u32>(hi, lo) -------------

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.y + b.y;
    return vec2<u32>(a.x + b.x + select(0u, 1u, lo < a.y), lo);
}

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

var<private> terms: array<Term, NT>;

@compute @workgroup_size(WG)
fn step(@builtin(global_invocation_id) gid: vec3<u32>) {
    let o = gid.x + gid.y * P.x_stride;
    if (o >= P.n) {
        return;
    }
    var nan = false;
    var pinf = false;
    var ninf = false;
    var n = 0u;
    let ab = o * K;
    let sbase = o * 2u * NSC;
    if (GROUP > 0u) {
        // GST: the products of each group of 16 e2m1 elements summed
        // exactly (units of 2^-2FA), times the two scales' significands,
        // are one term with the scales' exponents.
        for (var g = 0u; g < K; g = g + GROUP) {
            var s4 = 0i;
            var all_zero = true;
            for (var i = g; i < g + GROUP; i = i + 1u) {
                let pa = TAB[A[ab + i] & 0xffu];
                let pb = TAB[256u + (B[ab + i] & 0xffu)];
                if (t_zero(pa) || t_zero(pb)) {
                    continue;
                }
                all_zero = false;
                var v = i32((t_m(pa) * t_m(pb)) << u32(t_e(pa) + t_e(pb)));
                if (t_neg(pa) != t_neg(pb)) {
                    v = -v;
                }
                s4 = s4 + v;
            }
            let blk = g / BLOCK;
            let s0 = TAB[512u + (S[sbase + blk] & 0xffu)];
            let s1 = TAB[512u + (S[sbase + NSC + blk] & 0xffu)];
            if (t_nan(s0) || t_nan(s1)) {
                nan = true;
                continue;
            }
            let scale_zero = t_zero(s0) || t_zero(s1);
            var t = Term(s4 < 0, 0u, t_e(s0) + t_e(s1), 2u * FA + 2u * FS);
            if (!scale_zero) {
                t.m = u32(abs(s4)) * t_m(s0) * t_m(s1);
            }
            if (all_zero || scale_zero) {
                t.e = EZERO;
            }
            terms[n] = t;
            n = n + 1u;
        }
    } else {
        for (var i = 0u; i < K; i = i + 1u) {
            let pa = TAB[A[ab + i] & 0xffu];
            let pb = TAB[256u + (B[ab + i] & 0xffu)];
            var t = Term(t_neg(pa) != t_neg(pb), t_m(pa) * t_m(pb), t_e(pa) + t_e(pb), FA + FB);
            var zero = t_zero(pa) || t_zero(pb);
            if (SCALED) {
                let blk = i / BLOCK;
                let s0 = TAB[512u + (S[sbase + blk] & 0xffu)];
                let s1 = TAB[512u + (S[sbase + NSC + blk] & 0xffu)];
                if (t_nan(s0) || t_nan(s1)) {
                    nan = true;
                    continue;
                }
                if (t_zero(s0) || t_zero(s1)) {
                    if (t_inf(pa) || t_inf(pb)) {
                        nan = true;
                        continue;
                    }
                    zero = true;
                }
                t.m = t.m * t_m(s0) * t_m(s1);
                t.frac = t.frac + 2u * FS;
                t.e = t.e + t_e(s0) + t_e(s1);
            }
            if (t_nan(pa) || t_nan(pb)) {
                nan = true;
                continue;
            }
            if (t_inf(pa) || t_inf(pb)) {
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
                t.e = EZERO;
            }
            terms[n] = t;
            n = n + 1u;
        }
    }
    // c, an FP32 term.
    let c = C[o];
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
        terms[n] = Term(false, 0u, EZERO, 0u);
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
        D[o] = 0x7fffffffu;
        return;
    }
    if (pinf) {
        D[o] = 0x7f800000u;
        return;
    }
    if (ninf) {
        D[o] = 0xff800000u;
        return;
    }
    var emax = -100000;
    for (var i = 0u; i < n; i = i + 1u) {
        emax = max(emax, terms[i].e);
    }
    var sum = vec2<u32>(0u, 0u);
    for (var i = 0u; i < n; i = i + 1u) {
        let t = terms[i];
        var q = shift64(t.m, i32(F) - i32(t.frac) - (emax - t.e));
        if (t.neg) {
            q = neg64(q);
        }
        sum = add64(sum, q);
    }
    if (sum.x == 0u && sum.y == 0u) {
        D[o] = 0u; // a zero sum is +0
        return;
    }
    let neg = (sum.x >> 31u) != 0u;
    var mag = sum;
    if (neg) {
        mag = neg64(sum);
    }
    D[o] = select(0u, 0x80000000u, neg) | rz_fp32(mag, emax - i32(F));
}
