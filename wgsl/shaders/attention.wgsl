// attention.wgsl: native-arithmetic decode attention over an FP16 or FP8
// (e4m3) KV cache, split-KV (flash-decoding): one workgroup per (split of T
// tokens, batch × KV head) computes the G query heads of its GQA group over
// its tokens (scores, max, exp2, sums, P·V), then `combine` merges the
// splits. This is f32 arithmetic for speed, not a bit-exact model.
//
// Generated constants (attention.go):
//   WG: u32    workgroup size (128)
//   D: u32     head dimension (128)
//   G: u32     query heads per KV head
//   T: u32     tokens per split (512: T >= (WG / (D/4)) * D, so that the
//              score buffer also holds the P·V partial sums)
//   KV8: bool  the cache holds e4m3 codes (else FP16)
//   RW: u32    16-byte chunks per K row (D/8 for FP16, D/16 for FP8)
//
// Layouts (f32 and u32 words, little-endian):
//   Q     [B][Hkv*G][D] f32, as vec4
//   K     per (batch, KV head), blocks of 32 tokens; inside a block the
//         16-byte chunk j of token t is at [j][t mod 32], so that the 32
//         invocations of a warp, one token each, read 512 contiguous bytes:
//         K[((bh*Lp + t - t%32) * RW) + j*32 + t%32], Lp = L rounded up to 32
//   V     [B][Hkv][L][D] row-major: FP16 as vec2<u32> (4 values), FP8 as u32
//         (4 codes), so that 32 invocations read one row
//   Opart [B][Hq][S][D] f32 (vec4), ML [B][Hq][S] (max, sum) per split
//   O     [B][Hq][D] f32 (vec4)
// FP8 codes are widened to FP16 bit patterns (exact, including subnormals;
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
    x_stride: u32, // combine: invocations per row of the grid
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> Q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> K: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> V: array<VWORD>;
@group(0) @binding(4) var<storage, read_write> Opart: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> ML: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> O: array<vec4<f32>>;

const DW: u32 = D / 4u;      // vec4 of f32 per row
const PH: u32 = WG / DW;     // token phases of the P·V loop

const QN: u32 = G * DW;
const SN: u32 = G * T;
const RN: u32 = G * WG;

var<workgroup> qs: array<vec4<f32>, QN>;
var<workgroup> sc: array<f32, SN>;
var<workgroup> red: array<f32, RN>;

// fp8x2 widens the e4m3 codes in bytes 0-1 (hi = false) or 2-3 (hi = true)
// of w to two f32 values times 2^-8.
fn fp8x2(w: u32, hi: bool) -> vec2<f32> {
    var h: u32;
    if (hi) {
        h = ((w & 0x7f0000u) >> 9u) | ((w & 0x800000u) >> 8u) | ((w & 0x7f000000u) >> 1u) | (w & 0x80000000u);
    } else {
        h = ((w & 0x7fu) << 7u) | ((w & 0x80u) << 8u) | ((w & 0x7f00u) << 15u) | ((w & 0x8000u) << 16u);
    }
    return unpack2x16float(h);
}

fn fp8x4(w: u32) -> vec4<f32> {
    return vec4<f32>(fp8x2(w, false), fp8x2(w, true));
}

fn vrow(i: u32) -> vec4<f32> {
    if (KV8) {
        return fp8x4(vword_u32(V[i]));
    }
    let w = vword_vec2(V[i]);
    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
}

@compute @workgroup_size(WG)
fn split(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let s = wid.x;
    let bh = wid.y;
    let t0 = s * T;
    let nt = min(T, P.L - t0);
    for (var i = li; i < G * DW; i = i + WG) {
        qs[i] = Q[bh * G * DW + i] * P.qscale;
    }
    workgroupBarrier();

    // Scores: one token per invocation.
    var mloc: array<f32, G>;
    for (var g = 0u; g < G; g = g + 1u) {
        mloc[g] = -3.0e38;
    }
    let kblock = bh * P.Lp * RW;
    for (var t = li; t < nt; t = t + WG) {
        let tok = t0 + t;
        let kb = kblock + (tok & ~31u) * RW + (tok & 31u);
        var acc: array<f32, G>;
        for (var g = 0u; g < G; g = g + 1u) {
            acc[g] = 0.0;
        }
        for (var j = 0u; j < RW; j = j + 1u) {
            let w = K[kb + j * 32u];
            if (KV8) {
                let v0 = fp8x4(w.x);
                let v1 = fp8x4(w.y);
                let v2 = fp8x4(w.z);
                let v3 = fp8x4(w.w);
                for (var g = 0u; g < G; g = g + 1u) {
                    let q = g * DW + j * 4u;
                    acc[g] = acc[g] + dot(qs[q], v0) + dot(qs[q + 1u], v1) + dot(qs[q + 2u], v2) + dot(qs[q + 3u], v3);
                }
            } else {
                let v0 = vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
                let v1 = vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
                for (var g = 0u; g < G; g = g + 1u) {
                    let q = g * DW + j * 2u;
                    acc[g] = acc[g] + dot(qs[q], v0) + dot(qs[q + 1u], v1);
                }
            }
        }
        for (var g = 0u; g < G; g = g + 1u) {
            sc[g * T + t] = acc[g];
            mloc[g] = max(mloc[g], acc[g]);
        }
    }

    // Row maxima over the split.
    for (var g = 0u; g < G; g = g + 1u) {
        red[g * WG + li] = mloc[g];
    }
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st = st >> 1u) {
        if (li < st) {
            for (var g = 0u; g < G; g = g + 1u) {
                red[g * WG + li] = max(red[g * WG + li], red[g * WG + li + st]);
            }
        }
        workgroupBarrier();
    }
    var mg: array<f32, G>;
    for (var g = 0u; g < G; g = g + 1u) {
        mg[g] = red[g * WG];
    }
    workgroupBarrier();

    // P = exp2(s - m) and row sums.
    var lloc: array<f32, G>;
    for (var g = 0u; g < G; g = g + 1u) {
        lloc[g] = 0.0;
    }
    for (var t = li; t < nt; t = t + WG) {
        for (var g = 0u; g < G; g = g + 1u) {
            let p = exp2(sc[g * T + t] - mg[g]);
            sc[g * T + t] = p;
            lloc[g] = lloc[g] + p;
        }
    }
    for (var g = 0u; g < G; g = g + 1u) {
        red[g * WG + li] = lloc[g];
    }
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st = st >> 1u) {
        if (li < st) {
            for (var g = 0u; g < G; g = g + 1u) {
                red[g * WG + li] = red[g * WG + li] + red[g * WG + li + st];
            }
        }
        workgroupBarrier();
    }
    var lg: array<f32, G>;
    for (var g = 0u; g < G; g = g + 1u) {
        lg[g] = red[g * WG];
    }

    // P·V: invocation li owns dims 4*c4 .. 4*c4+3 and tokens ph, ph+PH, …
    let c4 = li % DW;
    let ph = li / DW;
    var o: array<vec4<f32>, G>;
    for (var g = 0u; g < G; g = g + 1u) {
        o[g] = vec4<f32>(0.0);
    }
    let vb = (bh * P.L + t0) * DW + c4;
    for (var t = ph; t < nt; t = t + PH) {
        let v = vrow(vb + t * DW);
        for (var g = 0u; g < G; g = g + 1u) {
            o[g] = o[g] + sc[g * T + t] * v;
        }
    }
    workgroupBarrier(); // every P read before sc holds partial sums
    for (var g = 0u; g < G; g = g + 1u) {
        let base = ((ph * G + g) * DW + c4) * 4u;
        sc[base] = o[g].x;
        sc[base + 1u] = o[g].y;
        sc[base + 2u] = o[g].z;
        sc[base + 3u] = o[g].w;
    }
    workgroupBarrier();
    if (ph == 0u) {
        for (var g = 0u; g < G; g = g + 1u) {
            var sum = vec4<f32>(0.0);
            for (var p = 0u; p < PH; p = p + 1u) {
                let base = ((p * G + g) * DW + c4) * 4u;
                sum = sum + vec4<f32>(sc[base], sc[base + 1u], sc[base + 2u], sc[base + 3u]);
            }
            Opart[((bh * G + g) * P.S + s) * DW + c4] = sum;
        }
    }
    if (li < G) {
        ML[(bh * G + li) * P.S + s] = vec2<f32>(mg[li], lg[li]);
    }
}

// combine: O = Σ_s 2^(m_s - M) Opart_s / Σ_s 2^(m_s - M) l_s * vscale, one
// invocation per (batch × query head, 4 dims).
@compute @workgroup_size(WG)
fn combine(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * P.x_stride;
    if (i >= P.B * P.Hkv * G * DW) {
        return;
    }
    let bq = i / DW;
    let c4 = i % DW;
    var m = -3.0e38;
    for (var s = 0u; s < P.S; s = s + 1u) {
        m = max(m, ML[bq * P.S + s].x);
    }
    var den = 0.0;
    var acc = vec4<f32>(0.0);
    for (var s = 0u; s < P.S; s = s + 1u) {
        let ml = ML[bq * P.S + s];
        let w = exp2(ml.x - m);
        den = den + w * ml.y;
        acc = acc + w * Opart[(bq * P.S + s) * DW + c4];
    }
    O[i] = acc * (P.vscale / den);
}
