// yardstick.wgsl: a fixed integer workload of the same kind as the T-FDPA
// chain (per output, two rows of 8-bit codes read a word at a time,
// decoded through a 256-entry table in workgroup memory, multiplied,
// aligned to a running maximum exponent and summed), timed beside the
// chain by TestStepSpeedRatio so that the ratio of the two times, not a
// time, says whether the step shader got slower. DO NOT CHANGE this file:
// it is the unit of that test (a change moves every ratio; re-measure the
// test's baseline if it must change).
// Generated constants: WG: u32, the workgroup size.

struct Params {
    n: u32,         // outputs
    row_words: u32, // u32 words of each row of A and B
    gemm_n: u32,    // output o is row o / gemm_n of A times row o % gemm_n of B
    x_stride: u32,  // invocations per row of a 2D dispatch
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> tab: array<u32, 256>;
@group(0) @binding(2) var<storage, read> A: array<u32>;
@group(0) @binding(3) var<storage, read> B: array<u32>;
@group(0) @binding(4) var<storage, read_write> R: array<u32>;

var<workgroup> T: array<u32, 256>;

@compute @workgroup_size(WG)
fn yardstick(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    for (var i = li; i < 256u; i = i + WG) {
        T[i] = tab[i];
    }
    workgroupBarrier();
    let o = gid.x + gid.y * P.x_stride;
    if (o >= P.n) {
        return;
    }
    let ra = (o / P.gemm_n) * P.row_words;
    let rb = (o % P.gemm_n) * P.row_words;
    var acc = 0u;
    var emax = 0u;
    for (var w = 0u; w < P.row_words; w = w + 1u) {
        let a = A[ra + w];
        let b = B[rb + w];
        for (var j = 0u; j < 4u; j = j + 1u) {
            let x = T[(a >> (8u * j)) & 0xffu];
            let y = T[(b >> (8u * j)) & 0xffu];
            let e = ((x >> 23u) & 0xffu) + ((y >> 23u) & 0xffu);
            let m = ((x & 0x7fffffu) | 0x800000u) >> 12u;
            let p = m * (((y & 0x7fffffu) | 0x800000u) >> 12u);
            if (e > emax) {
                acc = acc >> min(e - emax, 31u);
                emax = e;
            }
            let t = p >> min(emax - e, 31u);
            if (((x ^ y) & 0x80000000u) != 0u) {
                acc = acc - t;
            } else {
                acc = acc + t;
            }
        }
    }
    R[o] = acc ^ (emax << 24u);
}
