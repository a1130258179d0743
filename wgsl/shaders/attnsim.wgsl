// attnsim.wgsl: the decode path of package attention's FA3 simulator
// (attention.Run with one query per query head), bit for bit, in integer
// arithmetic only.
//
// The module is assembled as every one is (shaders.go): generated constants,
// the included tfdpa_step.wgsl (tfdpa_step, instruction and their helpers,
// which read the operands from A and B and the code table from T),
// attnblock.wgsl and blockstep.wgsl, this file, and common.wgsl (f32_add,
// fp8_encode, half_encode).
//
// Generated constants (besides tfdpa_step.wgsl's):
//   WG: u32            workgroup size, max(KBN, D)
//   D: u32             head_dim
//   KBN: u32           kBlockN, a multiple of 32
//   GROUP: u32         query heads per KV head
//   QHEADS: u32        query heads of one trial (a batch of trials runs
//                      trials × QHEADS workgroups over shared caches)
//   E_MBITS, E_EMIN, E_MAX, E_OVER, E_NAN: the P cast (fp8_encode; for
//                      16-bit codes half_encode with E_MAX + 1 as inf)
//   CB, CPW: u32       code bits (8: e4m3/e5m2, 16: bf16/f16) and codes a
//                      word (tfdpa_step.wgsl's constants)
//   EXC1H..EXC4L: u32  ln2^k/k! as 64-bit fractions (hi, lo words)
//
// One workgroup runs one split of one query head of one trial (the row;
// rows are trial-major, then query head, then split): invocation j < KBN
// scores key j of the tile and computes its P; invocation 0 runs the row's
// serial steps in key order (max, row sum); invocation i < D owns O[i]. The
// split's tiles (attention's Plan.SplitRange, from XT at U.ranges: the
// newest tile + 1 and the count; one split: every visited tile) run newest
// first, a dispatch running the split's tiles [t0, t1) of that order; the
// row's state (m, l, acc_scale, O, O_tc) lives in ST between dispatches, so
// that no invocation runs into lavapipe's loop limit. The last dispatch
// finalizes O_s; the host reads m_s and l_s from ST for the lse and
// combines the splits (attention.LSE, attention.CombineSplits).
//
// Block-scaled caches (BLK, attnblock.wgsl): both GEMMs run block_step (blockstep.wgsl), K
// codes and scales as a block-scaled instruction reads them; A holds each
// row's Q and P scales after the codes (one a word), B K's scales
// [kv_head][token][D/BB] and V's token-block scales [kv_head][D][padded
// tokens/BB] at the offsets the trial's meta words give; P is quantized
// per block of BB tokens by bs_quant_p instead of the cast. A replaced
// token's K scales follow its K codes; a replaced V tile's scales
// ([D][KBN/BB]) follow its codes.
//
// Trials: every trial has its own query, reads one of the caches in B (all
// of one shape and layout: a batch may run the trials of several caches
// and promotion intervals at once) and may replace a few tokens of it (a
// needle, attention sinks) without a copy of it. Its META words lie in B
// at U.ov_meta + META·trial: the ranges [e0, e1) of its token entries
// (token, KV head, word offset of the token's K row in B) and [f0, f1) of
// its tile entries (first token of a tile, KV head, offset of the tile's V
// codes with the replacements written in, laid out dim-major with KBN/CPW
// words per dimension), e0, e1, f0, f1 word offsets in B of entries of
// three words; its promotion interval (0 never, 1 every tile, N every N
// tiles); the word offsets in B of its cache's K codes [kv_head][token][D],
// V codes [kv_head][D][padded tokens] and (BLK) K and V scales; and the
// word offset in XT of its scale_log2 and v_descale per KV head.

struct SimParams {
    tokens: u32,   // tokens in the cache
    t0: u32,       // first tile of this dispatch, in the split's visiting order
    t1: u32,       // end of this dispatch's tiles
    splits: u32,   // split-KV ranges per query head (1: none)
    ranges: u32,   // word offset in XT of the splits' (newest tile + 1, tile count)
    win_lo: u32,   // keys below win_lo are outside the sliding window (0: none)
    final_: u32,   // 1: finalize after the last tile and write O
    kv_heads: u32,
    v_stride: u32, // words per V row (the padded token axis / CPW)
    ov_meta: u32,  // word offset in B of the trials' META words
    vs_stride: u32, // BLK: scale words per V row
    rows: u32,     // workgroups: trials × QHEADS × splits
    gx: u32,       // workgroups along x (row = x + y·gx)
}

@group(0) @binding(0) var<uniform> U: SimParams;
@group(0) @binding(1) var<storage, read> tab: array<u32, 256>;
// A: per row, its D codes of Q then KBN codes of P (CPW codes a word):
// the T-FDPA functions read the first operand here.
@group(0) @binding(2) var<storage, read_write> A: array<u32>;
// B: per cache K codes [kv_head][token][D], V codes [kv_head][D][padded
// tokens] (BLK: then K's and V's scales), then the trials' META words and
// replacements.
@group(0) @binding(3) var<storage, read> B: array<u32>;
// ST: per row, m, l, acc_scale, (unused), O[D], O_tc[D] (f32 bits).
@group(0) @binding(4) var<storage, read_write> ST: array<u32>;
// XT: exp2 tables (2^(j/64) and 2^(j/4096) as Q1.63 hi/lo pairs, 64 each),
// then per KV head scale_log2 and v_descale (f32 bits), BLK's tables at BT,
// the split ranges at U.ranges.
@group(0) @binding(5) var<storage, read> XT: array<u32>;

var<workgroup> T: array<u32, 256>;
var<workgroup> WS: array<u32, KBN>; // S of the tile, then P (f32 bits)
var<workgroup> PC: array<u32, KBN>; // P codes
var<workgroup> W_M: u32;            // running max m
var<workgroup> W_MUSE: u32;         // the max the exponent subtracts
var<workgroup> W_ALPHA: u32;        // exp2(m_old - m_new)
var<workgroup> W_L: u32;            // running row sum

const NEG_INF: u32 = 0xff800000u;
const ONE: u32 = 0x3f800000u;
const EIGHT: u32 = 0x41000000u;
// BLK: after the codes, A_SCALES = D/BB scale words of Q and KBN/BB of P.
const A_CODES: u32 = (D + KBN) / CPW;
const A_WORDS: u32 = A_CODES + A_SCALES;
const ST_WORDS: u32 = 4u + 2u * D;
// Words per trial at U.ov_meta: e0, e1, f0, f1, the promotion interval, the
// offsets of the cache's K codes, V codes, K scales, V scales in B, and
// of its scale_log2/v_descale pairs in XT.
const META: u32 = 10u;

// ---- 64-bit helpers on (hi, lo) u32 pairs --------------------------------

// mul_wide returns the 64-bit product a*b as (hi, lo).
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (mid << 16u) | (p00 & 0xffffu);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(hi, lo);
}

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.y + b.y;
    let c = select(0u, 1u, lo < a.y);
    return vec2<u32>(a.x + b.x + c, lo);
}

// mulhi64 returns the top 64 bits of the 128-bit product a*b, less the
// carry of the dropped low words (a deterministic truncation, below 3 units
// of the last place).
fn mulhi64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let hh = mul_wide(a.x, b.x);
    let hl = mul_wide(a.x, b.y);
    let lh = mul_wide(a.y, b.x);
    return add64(add64(hh, vec2<u32>(0u, hl.x)), vec2<u32>(0u, lh.x));
}

// shr_round returns the 64-bit value (h, l) shifted right by s (s >= 1),
// rounded to nearest, ties to even; the result must fit 32 bits.
fn shr_round(h: u32, l: u32, s: u32) -> u32 {
    if (s > 64u) {
        return 0u; // (h, l) < 2^64 <= half of 2^s
    }
    if (s == 64u) {
        return select(0u, 1u, h > 0x80000000u || (h == 0x80000000u && l != 0u));
    }
    var m: u32;
    var up: bool;
    if (s < 32u) {
        m = (l >> s) | select(0u, h << (32u - s), s > 0u);
        let rem = l & ((1u << s) - 1u);
        let half = 1u << (s - 1u);
        up = rem > half || (rem == half && (m & 1u) == 1u);
    } else if (s == 32u) {
        m = h;
        up = l > 0x80000000u || (l == 0x80000000u && (m & 1u) == 1u);
    } else {
        let t = s - 32u;
        m = h >> t;
        let rem = h & ((1u << t) - 1u);
        let half = 1u << (t - 1u);
        up = rem > half || (rem == half && (l != 0u || (m & 1u) == 1u));
    }
    return m + select(0u, 1u, up);
}

// ---- FP32 multiply and divide, round to nearest even, subnormals kept ----

// f32_unpack returns (significand with its hidden bit, normalized so that
// bit 23 is set, and the unbiased exponent) of a finite nonzero x.
fn f32_unpack(x: u32) -> vec2<i32> {
    let be = (x >> 23u) & 0xffu;
    var m = x & 0x7fffffu;
    if (be == 0u) {
        let top = firstLeadingBit(m);
        return vec2<i32>(i32(m << (23u - top)), -126 - i32(23u - top));
    }
    return vec2<i32>(i32(m | 0x800000u), i32(be) - 127);
}

// f32_pack returns sign | the value v * 2^(e - k) rounded to FP32, where v
// (a 64-bit (h, l)) has its leading bit at position k (k >= 24): e is the
// unbiased exponent of the exact result.
fn f32_pack(sign: u32, h: u32, l: u32, k: u32, e: i32) -> u32 {
    if (e >= -126) {
        if (e > 127) {
            return sign | 0x7f800000u;
        }
        let m = shr_round(h, l, k - 23u); // in [2^23, 2^24]
        let r = (u32(e + 126) << 23u) + m;
        if (r >= 0x7f800000u) {
            return sign | 0x7f800000u;
        }
        return sign | r;
    }
    let s = k - 23u + u32(-126 - e);
    return sign | shr_round(h, l, s);
}

// f32_mul returns the IEEE binary32 product x*y, rounded to nearest even,
// with gradual underflow; NaN results are the canonical NAN32.
fn f32_mul(x: u32, y: u32) -> u32 {
    let sign = (x ^ y) & 0x80000000u;
    let ax = x & 0x7fffffffu;
    let ay = y & 0x7fffffffu;
    if (ax > 0x7f800000u || ay > 0x7f800000u) {
        return NAN32;
    }
    if (ax == 0x7f800000u || ay == 0x7f800000u) {
        if (ax == 0u || ay == 0u) {
            return NAN32;
        }
        return sign | 0x7f800000u;
    }
    if (ax == 0u || ay == 0u) {
        return sign;
    }
    let ux = f32_unpack(ax);
    let uy = f32_unpack(ay);
    let p = mul_wide(u32(ux.x), u32(uy.x)); // in [2^46, 2^48)
    var e = ux.y + uy.y;
    var k = 46u;
    if (p.x >= 0x8000u) {
        k = 47u;
        e = e + 1;
    }
    return f32_pack(sign, p.x, p.y, k, e);
}

// f32_div returns the IEEE binary32 quotient x/y, rounded to nearest even,
// with gradual underflow; NaN results are the canonical NAN32.
fn f32_div(x: u32, y: u32) -> u32 {
    let sign = (x ^ y) & 0x80000000u;
    let ax = x & 0x7fffffffu;
    let ay = y & 0x7fffffffu;
    if (ax > 0x7f800000u || ay > 0x7f800000u) {
        return NAN32;
    }
    if (ax == 0x7f800000u) {
        if (ay == 0x7f800000u) {
            return NAN32;
        }
        return sign | 0x7f800000u;
    }
    if (ay == 0x7f800000u) {
        return sign;
    }
    if (ay == 0u) {
        if (ax == 0u) {
            return NAN32;
        }
        return sign | 0x7f800000u;
    }
    if (ax == 0u) {
        return sign;
    }
    let ux = f32_unpack(ax);
    let uy = f32_unpack(ay);
    var rem = u32(ux.x);
    let d = u32(uy.x);
    var e = ux.y - uy.y;
    if (rem < d) {
        rem = rem << 1u;
        e = e - 1;
    }
    // 26 quotient bits (leading bit 25), then a sticky bit.
    var q = 0u;
    for (var i = 0u; i < 26u; i = i + 1u) {
        q = q << 1u;
        if (rem >= d) {
            rem = rem - d;
            q = q | 1u;
        }
        rem = rem << 1u;
    }
    let v = (q << 1u) | select(0u, 1u, rem != 0u); // leading bit 26
    return f32_pack(sign, 0u, v, 26u, e);
}

// f32_max is Go's max of two float32 (NaN wins; +0 over -0).
fn f32_max(x: u32, y: u32) -> u32 {
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return x;
    }
    if ((y & 0x7fffffffu) > 0x7f800000u) {
        return y;
    }
    let kx = select(x | 0x80000000u, ~x, (x >> 31u) != 0u);
    let ky = select(y | 0x80000000u, ~y, (y >> 31u) != 0u);
    return select(x, y, ky > kx);
}

fn f32_sub(x: u32, y: u32) -> u32 {
    return f32_add(x, y ^ 0x80000000u);
}

// ---- exp2, correctly rounded -----------------------------------------------

// f32_exp2 returns 2^x rounded to nearest even FP32 (gradual underflow,
// overflow to +inf): x = n + f with f in [0, 1) exact as a 64-bit fraction;
// 2^f = 2^(j1/64) * 2^(j2/4096) * 2^r with r < 2^-12, the first two from
// tables (Q1.63), 2^r - 1 from a degree-4 polynomial in 64-bit fixed point;
// the result (error below about 2^-60 relative) is rounded once. |x| <
// 2^-32 gives 1. Checked on every float32 in [-160, 130]: correctly rounded,
// and equal to Go's float32(math.Exp2(float64(x))) but for the two inputs
// below, where Go's double rounding is off by one ulp and this returns Go's
// value.
fn f32_exp2(x: u32) -> u32 {
    let ax = x & 0x7fffffffu;
    let neg = (x >> 31u) != 0u;
    if (ax > 0x7f800000u) {
        return x | 0x400000u;
    }
    // The two float32 inputs in [-160, 130] where the simulator's
    // float32(math.Exp2(float64(x))) (Go on amd64) is one ulp off the
    // correctly rounded value (2^x within 1e-16 of a midpoint: math.Exp2's
    // float64 error decides); the simulator's values, for bit-exactness.
    if (x == 0x3b429d37u) {
        return 0x3f804384u;
    }
    if (x == 0xbcf3a937u) {
        return 0x3f7ac6b0u;
    }
    if (ax < 0x2f800000u) { // |x| < 2^-32
        return ONE;
    }
    if (!neg && ax >= 0x43000000u) { // x >= 128 (and +inf)
        return 0x7f800000u;
    }
    if (neg && ax > 0x43160000u) { // x < -150 (and -inf)
        return 0u;
    }
    // |x| * 2^64 = m << sh, sh = e + 41 in [9, 48]: (w2, w1, w0).
    let e = i32(ax >> 23u) - 127;
    let m = (ax & 0x7fffffu) | 0x800000u;
    let sh = u32(e + 41);
    var w2 = 0u;
    var w1: u32;
    var w0: u32;
    if (sh < 32u) {
        w0 = m << sh;
        w1 = m >> (32u - sh);
    } else {
        w0 = 0u;
        w1 = m << (sh - 32u);
        if (sh > 32u) {
            w2 = m >> (64u - sh);
        }
    }
    var n = i32(w2);
    var f = vec2<u32>(w1, w0);
    if (neg) {
        n = -n;
        if (w1 != 0u || w0 != 0u) {
            n = n - 1;
            f = add64(vec2<u32>(~w1, ~w0), vec2<u32>(0u, 1u));
        }
    }
    if (n < -150) {
        return 0u;
    }
    let j1 = f.x >> 26u;
    let j2 = (f.x >> 20u) & 63u;
    let r = vec2<u32>(f.x & 0xfffffu, f.y);
    var p = vec2<u32>(EXC4H, EXC4L);
    p = add64(vec2<u32>(EXC3H, EXC3L), mulhi64(r, p));
    p = add64(vec2<u32>(EXC2H, EXC2L), mulhi64(r, p));
    p = add64(vec2<u32>(EXC1H, EXC1L), mulhi64(r, p));
    let em1 = mulhi64(r, p); // 2^r - 1, Q0.64
    let t1 = vec2<u32>(XT[2u * j1], XT[2u * j1 + 1u]);
    let t2 = vec2<u32>(XT[128u + 2u * j2], XT[128u + 2u * j2 + 1u]);
    let t = mulhi64(t1, t2); // Q2.62
    let t12 = vec2<u32>((t.x << 1u) | (t.y >> 31u), t.y << 1u); // Q1.63
    let y = add64(t12, mulhi64(t12, em1)); // 2^f, Q1.63 in [1, 2)
    return f32_pack(0u, y.x, y.y, 63u, n);
}

// ---- the row's steps -----------------------------------------------------

// pv_chain runs one output's P·V chain over the tile from c: P codes from
// word pb of A, V codes from word vb of B (BLK: P's scales after P's
// codes in A, V's from word vsb of B).
fn pv_chain(pb: u32, vb: u32, vsb: u32, c0: u32) -> u32 {
    var c = c0;
    if (BLK) {
        for (var k = 0u; k < KBN; k = k + BK) {
            c = block_step(pb + k / 4u, vb + k / 4u, pb + KBN / CPW + D / BB + k / BB, vsb + k / BB, c);
        }
    } else {
        for (var k = 0u; k < KBN; k = k + 32u) {
            c = instruction(pb, vb, k, k + 32u, c);
        }
    }
    return c;
}

@compute @workgroup_size(WG)
fn decode(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let row = wid.x + wid.y * U.gx;   // (trial * QHEADS + query head) * splits + split
    if (row >= U.rows) {
        return;
    }
    for (var i = li; i < 256u; i = i + WG) {
        T[i] = tab[i];
    }
    if (BLK) {
        for (var i = li; i < BTAB_N; i = i + WG) {
            BTAB[i] = XT[BT + i];
        }
    }
    let hq = row / U.splits;          // trial * QHEADS + query head
    let split = row % U.splits;
    let n_top = XT[U.ranges + 2u * split];      // the split's newest tile + 1
    let n_cnt = XT[U.ranges + 2u * split + 1u]; // and its tile count
    let trial = hq / QHEADS;
    let kvh = (hq % QHEADS) / GROUP;
    let tm = U.ov_meta + META * trial;
    let e0 = B[tm];                   // the trial's replaced tokens
    let e1 = B[tm + 1u];
    let f0 = B[tm + 2u];              // and replaced V tiles
    let f1 = B[tm + 3u];
    let promote = B[tm + 4u];         // 0 never, 1 every tile, N every N tiles
    let k_base = B[tm + 5u];          // the trial's cache: K codes,
    let v_base = B[tm + 6u];          // V codes,
    let ks_base = B[tm + 7u];         // BLK: K scales,
    let vs_base = B[tm + 8u];         // BLK: V scales,
    let x_base = B[tm + 9u];          // scale_log2, v_descale in XT
    let ab = row * A_WORDS;           // Q codes
    let pb = ab + D / CPW;            // P codes
    let sb = row * ST_WORDS;
    let sl = XT[x_base + 2u * kvh];     // scale_log2
    let vd = XT[x_base + 2u * kvh + 1u]; // v_descale
    if (li == 0u) {
        W_M = ST[sb];
        W_L = ST[sb + 1u];
    }
    var acc_scale = ST[sb + 2u];
    var o = 0u;
    var tc = 0u;
    if (li < D) {
        o = ST[sb + 4u + li];
        tc = ST[sb + 4u + D + li];
    }
    workgroupBarrier();
    let t_end = min(U.t1, n_cnt);
    for (var t = U.t0; t < t_end; t = t + 1u) {
        let start = (n_top - 1u - t) * KBN;
        // gemmQK and mask: S_j = chain(Q, K_j, +0) * scale_log2, or -inf.
        if (li < KBN) {
            let tok = start + li;
            var s = NEG_INF;
            if (tok < U.tokens && tok >= U.win_lo) {
                var kb = k_base + (kvh * U.tokens + tok) * (D / CPW);
                var ksb = ks_base + (kvh * U.tokens + tok) * (D / BB);
                for (var e = e0; e < e1; e = e + 3u) {
                    if (B[e] == tok && B[e + 1u] == kvh) {
                        kb = B[e + 2u];
                        ksb = kb + D / CPW; // BLK: the token's K scales follow its codes
                    }
                }
                var c = 0u;
                if (BLK) {
                    // The block-scaled chain over head_dim from +0.
                    for (var k = 0u; k < D; k = k + BK) {
                        c = block_step(ab + k / 4u, kb + k / 4u, ab + A_CODES + k / BB, ksb + k / BB, c);
                    }
                } else {
                    for (var k = 0u; k < D; k = k + 32u) {
                        c = instruction(ab, kb, k, k + 32u, c);
                    }
                }
                s = f32_mul(c, sl);
            }
            WS[li] = s;
        }
        workgroupBarrier();
        // onlineMax: m_new = max(m, max_j S_j); alpha = exp2(m - m_use).
        if (li == 0u) {
            var mn = W_M;
            for (var j = 0u; j < KBN; j = j + 1u) {
                mn = f32_max(mn, WS[j]);
            }
            var mu = mn;
            if (mn == NEG_INF) {
                mu = 0u;
            }
            W_ALPHA = f32_exp2(f32_sub(W_M, mu));
            W_MUSE = mu;
            W_M = mn;
        }
        workgroupBarrier();
        // exp2P and castP: P_j = exp2((S_j - m_use) + 8), cast RNE satfinite.
        if (li < KBN) {
            let pj = f32_exp2(f32_add(f32_sub(WS[li], W_MUSE), EIGHT));
            if (BLK) {
                // P is quantized per block below, from WS.
            } else if (CB == 16u) {
                PC[li] = half_encode(pj, E_MBITS, E_EMIN, E_MAX + 1u);
            } else {
                PC[li] = fp8_encode(pj, E_MBITS, E_EMIN, E_MAX, E_OVER, E_NAN, true);
            }
            WS[li] = pj;
        }
        workgroupBarrier();
        // BLK: P per block of BB consecutive tokens of the tile, one
        // invocation a block: its codes to PC, its scale to A.
        if (BLK) {
            if (li < KBN / BB) {
                A[pb + KBN / CPW + D / BB + li] = bs_quant_p(li * BB);
            }
            workgroupBarrier();
        }
        // Row sum in key order from the unrounded P; P codes to A.
        if (li == 0u) {
            var sum = 0u;
            for (var j = 0u; j < KBN; j = j + 1u) {
                sum = f32_add(sum, WS[j]);
            }
            W_L = f32_add(f32_mul(W_L, W_ALPHA), sum);
        }
        if (CB == 16u && li < KBN / 2u) {
            A[pb + li] = PC[2u * li] | (PC[2u * li + 1u] << 16u);
        } else if (CB == 8u && li < KBN / 4u) {
            A[pb + li] = PC[4u * li] | (PC[4u * li + 1u] << 8u) | (PC[4u * li + 2u] << 16u) | (PC[4u * li + 3u] << 24u);
        }
        storageBarrier();
        workgroupBarrier();
        // gemmPV with the promotion scheme.
        let alpha = W_ALPHA;
        if (li < D) {
            var vb = v_base + (kvh * D + li) * U.v_stride + start / CPW;
            var vsb = vs_base + (kvh * D + li) * U.vs_stride + start / BB;
            for (var f = f0; f < f1; f = f + 3u) {
                if (B[f] == start && B[f + 1u] == kvh) {
                    vb = B[f + 2u] + li * (KBN / CPW);
                    vsb = B[f + 2u] + D * (KBN / CPW) + li * (KBN / BB);
                }
            }
            if (promote == 0u) {
                o = pv_chain(pb, vb, vsb, f32_mul(o, alpha));
            } else if (promote == 1u) {
                o = f32_add(f32_mul(o, alpha), pv_chain(pb, vb, vsb, 0u));
            } else {
                acc_scale = f32_mul(acc_scale, alpha);
                tc = pv_chain(pb, vb, vsb, f32_mul(tc, alpha));
                if ((t + 1u) % max(promote, 1u) == 0u) { // t counts from the split's first tile
                    o = f32_add(f32_mul(o, acc_scale), tc);
                    tc = 0u;
                    acc_scale = ONE;
                }
            }
        }
        storageBarrier();
        workgroupBarrier();
    }
    // finalize: merge the every-N accumulator; O *= (1/l) * v_descale.
    if (U.final_ != 0u && li < D) {
        if (promote > 1u) {
            o = f32_add(f32_mul(o, acc_scale), tc);
            tc = 0u;
            acc_scale = ONE;
        }
        let l = W_L;
        var scale = 0u;
        if (l != 0u && l != 0x80000000u && (l & 0x7fffffffu) <= 0x7f800000u) {
            scale = f32_mul(f32_div(ONE, l), vd);
        }
        o = f32_mul(o, scale);
    }
    if (li < D) {
        ST[sb + 4u + li] = o;
        ST[sb + 4u + D + li] = tc;
    }
    if (li == 0u) {
        ST[sb] = W_M;
        ST[sb + 1u] = W_L;
        ST[sb + 2u] = acc_scale;
    }
}

// ops applies one of the scalar functions above to the pairs in B, for the
// tests: U.t0 selects f32_mul (0), f32_div (1), f32_exp2 (2, of the first
// word), half_encode (3: of the first word to bf16 if the second is 0, else
// to f16), U.tokens is the number of pairs and U.win_lo the invocations per
// row of the grid.
@compute @workgroup_size(64)
fn ops(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * U.win_lo;
    if (i >= U.tokens) {
        return;
    }
    let x = B[2u * i];
    let y = B[2u * i + 1u];
    var r: u32;
    switch U.t0 {
        case 0u: {
            r = f32_mul(x, y);
        }
        case 1u: {
            r = f32_div(x, y);
        }
        case 2u: {
            r = f32_exp2(x);
        }
        default: {
            if (y == 0u) {
                r = half_encode(x, 7u, -126, 0x7f80u);
            } else {
                r = half_encode(x, 10u, -14, 0x7c00u);
            }
        }
    }
    ST[i] = r;
}
