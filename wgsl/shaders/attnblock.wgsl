// attnblock.wgsl: attnsim.wgsl's native block-scaled path (attention's
// PathBlockScaled): the operands of blockstep.wgsl's block_step (one step
// of tcgen05 kind::mxf8f6f4, kind::mxf4 or kind::mxf4nvf4 with an FP32
// accumulator, the step scaled.wgsl runs, checked there against accum and
// the H200) read from attnsim's buffers: a (Q or P) codes and scales in A,
// b (K or V) codes and scales in B, the decode tables from XT; and P's block
// quantization. It is not a module: attnsim.wgsl's module includes it and
// blockstep.wgsl (shaders.go).
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

// BTAB: the tables at XT[BT:] in workgroup memory (BTAB_N = 768 on the
// block-scaled path, 1 otherwise); decode loads them.
var<workgroup> BTAB: array<u32, BTAB_N>;

// block_step's operands (blockstep.wgsl): a (Q or P) codes from word aw of
// A and scales from word sa, b (K or V) codes from word bw of B and scales
// from word sb; the element table at BTAB[0:256], the scale table at
// BTAB[256:512].
fn op_a(aw: u32, i: u32) -> u32 { return BTAB[(A[aw + i / 4u] >> (8u * (i % 4u))) & 0xffu]; }
fn op_b(bw: u32, i: u32) -> u32 { return BTAB[(B[bw + i / 4u] >> (8u * (i % 4u))) & 0xffu]; }
fn sc_a(sa: u32, blk: u32) -> u32 { return BTAB[256u + (A[sa + blk] & 0xffu)]; }
fn sc_b(sb: u32, blk: u32) -> u32 { return BTAB[256u + (B[sb + blk] & 0xffu)]; }

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
