// attention.wgsl: native-arithmetic decode attention over an FP16 or FP8
// (e4m3) KV cache, split-KV (flash-decoding): one workgroup per (split of T
// tokens, batch × KV head) computes the query heads of its GQA group over its
// tokens (scores, max, exp2, sums, P·V), then `combine` merges the splits.
// This is f32 arithmetic for speed, not a bit-exact model.
//
// Generated constants (attention.go):
//   WG: u32    workgroup size (256)
//   D: u32     head dimension (128)
//   G: u32     query heads per KV head (1..8)
//   NG4: u32   G rounded up to groups of 4 (1 or 2): heads are handled 4 at
//              a time as the columns of a mat4x4 (padding heads have q = 0)
//   T: u32     tokens per split (1024, or 512 / 256 where workgroup memory
//              is small)
//   KV8: bool  the cache holds e4m3 codes (else FP16)
//   RW: u32    16-byte chunks per K row (D/8 for FP16, D/16 for FP8)
//   VE: u32    V values per invocation and row: 8, or 16 for an FP8 cache
//              read in 16-byte words
//   VWORD      the type of VE V values: vec4<u32> (8 FP16 or 16 FP8) or
//              vec2<u32> (8 FP8), with vdec(VWORD) -> mat2x4<f32> or
//              mat4x4<f32> decoding them
//   U: u32     V rows per P·V iteration
//   NS: u32    slots in which the token phases add their P·V sums (then a
//              tree over the slots); SERIAL: one phase after the other
//   OLDCONV    widen FP8 codes with the earlier, longer sequence
// and two generated functions, written out without loops so that every
// load of one token's K row (qk_tokens) and of U V rows (pv_rows) is issued
// before the arithmetic that uses it: a loop the driver does not unroll
// would wait for each load in turn.
//   NTOK: u32  tokens each invocation scores at once (sharing the reads
//              of the query from workgroup memory)
//   qk_tokens(kbs) -> array<vec4<f32>, NTOK*NG4>: the scores of the NTOK
//              tokens whose K rows start at chunks kbs[k], for heads 4h..4h+3
//              at [k*NG4 + h]
//   pv_rows(&o, &ls, vb, t, nt): o += P·V and ls += P over the rows t,
//              t+PH, …, t+(U-1)PH (rows past nt count with weight 0)
//
// Layouts (f32 and u32 words, little-endian):
//   Q     [B][Hkv*G][D] f32, as vec4
//   K     per (batch, KV head), blocks of 32 tokens; inside a block the
//         16-byte chunk j of token t is at [j][t mod 32], so that the 32
//         invocations of a warp, one token each, read 512 contiguous bytes:
//         K[((bh*Lp + t - t%32) * RW) + j*32 + t%32], Lp = L rounded up to 32
//   V     [B][Hkv][L][D] row-major, 8 values per VWORD: 16 invocations read
//         one row, and each keeps U = 4 rows' loads in flight
//   Opart [B][Hq][S][D] f32 (vec4), ML [B][Hq][S] (max, sum) per split
//   O     [B][Hq][D] f32 (vec4)
// FP8 codes are widened to FP16 bit patterns (five integer operations per
// four codes) (exact, including subnormals;
// the factor 2^8 between the biases is folded into qscale and vscale), then
// to f32 by unpack2x16float. NaN codes are not propagated.

struct Params {
    B: u32,
    Hkv: u32,
    L: u32,        // context length (tokens)
    S: u32,        // number of splits: ceil(L / T)
    qscale: f32,   // softmax scale * log2(e) * K descale (* 2^8 for FP8)
    vscale: f32,   // V descale (* 2^8 for FP8)
    Lp: u32,       // L rounded up to a multiple of 32
    x_stride: u32, // combine: workgroups per row of the grid
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> Q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> K: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> V: array<VWORD>;
@group(0) @binding(4) var<storage, read_write> Opart: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> ML: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> O: array<vec4<f32>>;

const DW: u32 = D / 4u;   // vec4 of f32 per row
const VC: u32 = D / VE;   // invocations per V row (VE values each)
const ND: u32 = VE / 4u;  // vec4 of V values per invocation and row
const PH: u32 = WG / VC;  // token phases of the P·V loop
const QV: u32 = NG4 * 4u * DW; // vec4 of the query block (128 per head group)
const RS: u32 = 128u;           // slots of the max reduction per head group
const SN: u32 = NG4 * T;
const OBN: u32 = NG4 * 4u * DW; // P·V sums of one workgroup
const ON: u32 = ND * NG4;

// qv[4(h*DW + c) + i] holds dims 4c..4c+3 of query head 4h+i: qmat(h*DW + c)
// is the mat4x4 whose column i is that vec4, so that k * qmat(...) is the
// vec4 of the four heads' partial scores. Once the scores are done, qv holds
// the max reduction. Workgroup memory is kept small (qv and sc: 10 KiB for
// T = 512 and 4 heads) because NVIDIA's driver fits few workgroups with
// more per SM.
var<workgroup> qv: array<vec4<f32>, QV>;

fn qmat(m: u32) -> mat4x4<f32> {
    return mat4x4<f32>(qv[4u * m], qv[4u * m + 1u], qv[4u * m + 2u], qv[4u * m + 3u]);
}
// sc[h*T + t]: scores, then probabilities, of token t for heads 4h..4h+3;
// at the end, the P·V sums (OBN vec4) and the row sums (NG4 vec4 after
// them), which the phases add in turn.
var<workgroup> sc: array<vec4<f32>, SN>;
// red: MathF32QReg's partial scores (RED = 1 otherwise).
var<workgroup> red: array<vec4<f32>, RED>;

// fp8x4 widens the four e4m3 codes of w to f32 values times 2^-8: each
// code's magnitude bits go to bits 7-13 of an FP16 and its sign to bit 15
// (exact, subnormals included), two codes per u32 by one multiply each for
// the magnitudes and the signs, then unpack2x16float.
fn fp8x4(w: u32) -> vec4<f32> {
    if (!OLDCONV) {
        // codes 0 and 2: sign to bits 15/31, magnitude to bits 7-13/23-29;
        // codes 1 and 3 are in place one bit lower.
        let lo = ((w << 8u) & 0x80008000u) | ((w << 7u) & 0x3f803f80u);
        let hi = (w & 0x80008000u) | ((w >> 1u) & 0x3f803f80u);
        let a = unpack2x16float(lo);
        let b = unpack2x16float(hi);
        return vec4<f32>(a.x, b.x, a.y, b.y);
    }
    let x = w & 0x7f7f7f7fu;
    let s = w & 0x80808080u;
    let lo = (((x & 0xffffu) * 0x8080u) & 0x3f803f80u) | (((s & 0xffffu) * 0x10100u) & 0x80008000u);
    let hi = (((x >> 16u) * 0x8080u) & 0x3f803f80u) | (((s >> 16u) * 0x10100u) & 0x80008000u);
    return vec4<f32>(unpack2x16float(lo), unpack2x16float(hi));
}

fn f16x4(a: u32, b: u32) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(a), unpack2x16float(b));
}

@compute @workgroup_size(WG)
fn split(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let s = wid.x;
    let bh = wid.y;
    let t0 = s * T;
    let nt = min(T, P.L - t0);
    for (var i = li; i < QV && !QREG; i = i + WG) {
        // i = 4(h*DW + c) + col: head 4h+col, dims 4c..4c+3
        let col = i & 3u;
        let hc = i >> 2u;
        let head = 4u * (hc / DW) + col;
        var q = vec4<f32>(0.0);
        if (head < G) {
            q = Q[(bh * G + head) * DW + hc % DW] * P.qscale;
        }
        qv[i] = q;
    }
    workgroupBarrier();

    // Scores: one token per invocation, all heads at once.
    var mloc: array<vec4<f32>, NG4>;
    for (var h = 0u; h < NG4; h = h + 1u) {
        mloc[h] = vec4<f32>(-3.0e38);
    }
    let kblock = bh * P.Lp * RW;
    if (QREG) {
        // head_dim split: warp w = li / 32 owns the 16-byte chunks w, w+8,
        // … (QCH of them: 16 dims) of the K rows, lane tl = li % 32 the
        // token tl of each block of 32; qr[16h + e] holds dim e of the
        // invocation's 16 for heads 4h..4h+3, scaled.
        let w = li / 32u;
        let tl = li % 32u;
        var qr: array<vec4<f32>, QR>;
        for (var h = 0u; h < NG4; h = h + 1u) {
            for (var e = 0u; e < 16u; e = e + 1u) {
                var d = 16u * w + e;
                if (QCH == 2u) {
                    d = 8u * (w + 8u * (e / 8u)) + e % 8u;
                }
                var v = vec4<f32>(0.0);
                for (var i = 0u; i < 4u; i = i + 1u) {
                    let head = 4u * h + i;
                    if (head < G) {
                        v[i] = Q[(bh * G + head) * DW + d / 4u][d % 4u] * P.qscale;
                    }
                }
                qr[16u * h + e] = v;
            }
        }
        // NB blocks per pass: partial scores to red[((k*NG4 + h)*8 + w)*32
        // + tl], then 32*NBG invocations add the 8 parts of one token and
        // head group.
        let nbk = (nt + 31u) / 32u;
        for (var b0 = 0u; b0 < nbk; b0 = b0 + NB) {
            var kbs: array<u32, NB>;
            for (var k = 0u; k < NB; k = k + 1u) {
                let blk = min(b0 + k, nbk - 1u);
                kbs[k] = kblock + (t0 + 32u * blk) * RW + w * 32u + tl;
            }
            var part = qk_reg(&qr, kbs);
            for (var kh = 0u; kh < NBG; kh = kh + 1u) {
                red[(kh * (WG / 32u) + w) * 32u + tl] = part[kh];
            }
            workgroupBarrier();
            if (li < 32u * NBG) {
                let kh = li / 32u;
                let h = kh % NG4;
                let t = (b0 + kh / NG4) * 32u + tl;
                var sum = red[kh * WG + tl];
                for (var g = 1u; g < WG / 32u; g = g + 1u) {
                    sum = sum + red[(kh * (WG / 32u) + g) * 32u + tl];
                }
                if (t < nt) {
                    sc[h * T + t] = sum;
                    mloc[h] = max(mloc[h], sum);
                }
            }
            workgroupBarrier();
        }
    }
    for (var t = li; t < nt && !QREG; t = t + NTOK * WG) {
        // NTOK tokens per iteration (t, t+WG, …; clamped to the last token),
        // sharing each read of qm.
        var kbs: array<u32, NTOK>;
        for (var k = 0u; k < NTOK; k = k + 1u) {
            let tok = t0 + min(t + k * WG, nt - 1u);
            kbs[k] = kblock + (tok & ~31u) * RW + (tok & 31u);
        }
        var acc = qk_tokens(kbs);
        for (var k = 0u; k < NTOK; k = k + 1u) {
            let tk = t + k * WG;
            if (tk < nt) {
                for (var h = 0u; h < NG4; h = h + 1u) {
                    sc[h * T + tk] = acc[k * NG4 + h];
                    mloc[h] = max(mloc[h], acc[k * NG4 + h]);
                }
            }
        }
    }

    // Row maxima over the split, in qv: the invocations fold their maxima
    // into RS slots group by group, then a tree over the slots.
    workgroupBarrier(); // every read of the query done
    let grp = li / RS;
    let slot = li % RS;
    for (var g = 0u; g < WG / RS; g = g + 1u) {
        if (grp == g) {
            for (var h = 0u; h < NG4; h = h + 1u) {
                var m = mloc[h];
                if (g > 0u) {
                    m = max(m, qv[h * RS + slot]);
                }
                qv[h * RS + slot] = m;
            }
        }
        workgroupBarrier();
    }
    for (var st = RS / 2u; st > 0u; st = st >> 1u) {
        if (li < st) {
            for (var h = 0u; h < NG4; h = h + 1u) {
                qv[h * RS + li] = max(qv[h * RS + li], qv[h * RS + li + st]);
            }
        }
        workgroupBarrier();
    }
    var mg: array<vec4<f32>, NG4>;
    for (var h = 0u; h < NG4; h = h + 1u) {
        mg[h] = qv[h * RS];
    }

    // P = exp2(s - m); the row sums come with P·V.
    for (var t = li; t < nt; t = t + WG) {
        for (var h = 0u; h < NG4; h = h + 1u) {
            sc[h * T + t] = exp2(sc[h * T + t] - mg[h]);
        }
    }
    workgroupBarrier();

    // P·V: invocation li owns dims 8c..8c+7 (c = li % VC) and the tokens
    // ph, ph+PH, … (ph = li / VC), U rows per iteration with clamped
    // indices and zero weights past the end, so that the U loads are
    // independent and in flight together. o[2h + d] column i accumulates
    // dims 8c+4d..8c+4d+3 of head 4h+i.
    let c = li % VC;
    let ph = li / VC;
    var o: array<mat4x4<f32>, ON>;
    for (var k = 0u; k < 2u * NG4; k = k + 1u) {
        o[k] = mat4x4<f32>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    }
    var ls: array<vec4<f32>, NG4>; // Σ p over this invocation's tokens
    for (var h = 0u; h < NG4; h = h + 1u) {
        ls[h] = vec4<f32>(0.0);
    }
    let vb = (bh * P.L + t0) * VC + c;
    for (var t = ph; t < nt; t = t + U * PH) {
        pv_rows(&o, &ls, vb, t, nt);
    }
    workgroupBarrier(); // every P read before sc holds the sums
    if (SERIAL) {
        // The phases add their partial sums into sc in turn: sc[(h*4 +
        // i)*DW + ND*c + d] = dims 4(ND*c + d).. of head 4h+i.
        for (var p = 0u; p < PH; p = p + 1u) {
            if (ph == p) {
                for (var h = 0u; h < NG4; h = h + 1u) {
                    for (var d = 0u; d < ND; d = d + 1u) {
                        for (var i = 0u; i < 4u; i = i + 1u) {
                            let idx = (h * 4u + i) * DW + ND * c + d;
                            var prev = vec4<f32>(0.0);
                            if (p > 0u) {
                                prev = sc[idx];
                            }
                            sc[idx] = prev + o[ND * h + d][i];
                        }
                    }
                    if (c == 0u) {
                        var prev = vec4<f32>(0.0);
                        if (p > 0u) {
                            prev = qv[h];
                        }
                        qv[h] = prev + ls[h];
                    }
                }
            }
            workgroupBarrier();
        }
    } else {
        // NS slots of OBN vec4 in sc (row sums: NS slots of NG4 in qv): the
        // phases add into slot ph % NS in PH / NS rounds, then a tree over
        // the slots leaves the sums in slot 0.
        for (var rd = 0u; rd < PH / NS; rd = rd + 1u) {
            if (ph / NS == rd) {
                let sl = ph % NS;
                for (var h = 0u; h < NG4; h = h + 1u) {
                    for (var d = 0u; d < ND; d = d + 1u) {
                        for (var i = 0u; i < 4u; i = i + 1u) {
                            let idx = sl * OBN + (h * 4u + i) * DW + ND * c + d;
                            var prev = vec4<f32>(0.0);
                            if (rd > 0u) {
                                prev = sc[idx];
                            }
                            sc[idx] = prev + o[ND * h + d][i];
                        }
                    }
                    if (c == 0u) {
                        var prev = vec4<f32>(0.0);
                        if (rd > 0u) {
                            prev = qv[sl * NG4 + h];
                        }
                        qv[sl * NG4 + h] = prev + ls[h];
                    }
                }
            }
            workgroupBarrier();
        }
        for (var st = NS / 2u; st > 0u; st = st >> 1u) {
            if (ph < st) {
                for (var h = 0u; h < NG4; h = h + 1u) {
                    for (var d = 0u; d < ND; d = d + 1u) {
                        for (var i = 0u; i < 4u; i = i + 1u) {
                            let idx = ph * OBN + (h * 4u + i) * DW + ND * c + d;
                            sc[idx] = sc[idx] + sc[idx + st * OBN];
                        }
                    }
                    if (c == 0u) {
                        qv[ph * NG4 + h] = qv[ph * NG4 + h] + qv[(ph + st) * NG4 + h];
                    }
                }
            }
            workgroupBarrier();
        }
    }
    for (var r = li; r < OBN; r = r + WG) {
        let head = r / DW; // 4h + i
        if (head < G) {
            Opart[((bh * G + head) * P.S + s) * DW + r % DW] = sc[r];
        }
    }
    if (li < G) {
        ML[(bh * G + li) * P.S + s] = vec2<f32>(mg[li / 4u][li % 4u], qv[li / 4u][li % 4u]);
    }
}

// combine: O = Σ_s 2^(m_s - M) Opart_s / Σ_s 2^(m_s - M) l_s * vscale, one
// workgroup per batch × query head: invocation li owns dims 4c..4c+3 (c =
// li % DW) and the splits sg, sg+SGN, … (sg = li / DW), four at a time (four
// independent loads in flight), and the groups are summed in workgroup
// memory. (A loop over all splits in one invocation would wait for each
// load in turn: at 512k tokens that alone took 0.3 ms on an H200.)
const SGN: u32 = WG / DW;
var<workgroup> cm: array<f32, SGN>;
var<workgroup> cpart: array<vec4<f32>, WG>;
var<workgroup> cden: array<f32, SGN>;

@compute @workgroup_size(WG)
fn combine(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let bq = wid.x + wid.y * P.x_stride;
    let valid = bq < P.B * P.Hkv * G;
    let c = li % DW;
    let sg = li / DW;
    let base = select(0u, bq * P.S, valid);
    let last = P.S - 1u;
    var m = -3.0e38;
    for (var s = sg; s < P.S; s = s + 4u * SGN) {
        m = max(m, max(max(ML[base + s].x, ML[base + min(s + SGN, last)].x),
            max(ML[base + min(s + 2u * SGN, last)].x, ML[base + min(s + 3u * SGN, last)].x)));
    }
    if (c == 0u) {
        cm[sg] = m;
    }
    workgroupBarrier();
    m = cm[0];
    for (var g = 1u; g < SGN; g = g + 1u) {
        m = max(m, cm[g]);
    }
    var den = 0.0;
    var acc = vec4<f32>(0.0);
    for (var s = sg; s < P.S; s = s + 4u * SGN) {
        let s1 = min(s + SGN, last);
        let s2 = min(s + 2u * SGN, last);
        let s3 = min(s + 3u * SGN, last);
        let ml0 = ML[base + s];
        let ml1 = ML[base + s1];
        let ml2 = ML[base + s2];
        let ml3 = ML[base + s3];
        let o0 = Opart[(base + s) * DW + c];
        let o1 = Opart[(base + s1) * DW + c];
        let o2 = Opart[(base + s2) * DW + c];
        let o3 = Opart[(base + s3) * DW + c];
        let w0 = exp2(ml0.x - m);
        let w1 = select(0.0, exp2(ml1.x - m), s + SGN < P.S);
        let w2 = select(0.0, exp2(ml2.x - m), s + 2u * SGN < P.S);
        let w3 = select(0.0, exp2(ml3.x - m), s + 3u * SGN < P.S);
        den = den + w0 * ml0.y + w1 * ml1.y + w2 * ml2.y + w3 * ml3.y;
        acc = acc + w0 * o0 + w1 * o1 + w2 * o2 + w3 * o3;
    }
    cpart[li] = acc;
    if (c == 0u) {
        cden[sg] = den;
    }
    workgroupBarrier();
    if (sg == 0u && valid) {
        var sum = acc;
        var d = den;
        for (var g = 1u; g < SGN; g = g + 1u) {
            sum = sum + cpart[g * DW + c];
            d = d + cden[g];
        }
        O[bq * DW + c] = sum * (P.vscale / d);
    }
}
