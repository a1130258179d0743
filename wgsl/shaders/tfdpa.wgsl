// tfdpa.wgsl: chains of the T-FDPA step of tensorcore-numerics.md §2 with
// promotion, in integer arithmetic, bit for bit with package accum. The
// step itself (tfdpa_step, tfdpa_step16, instruction) is tfdpa_step.wgsl,
// which the module includes before this file (shaders.go); its constants
// and code table are described there. This file adds:
//   WG: u32        workgroup size
// and binds the table (tab, copied to T in workgroup memory), the operands
// A and B, and the state S of every output.

struct Params {
    n: u32,         // number of outputs
    K: u32,         // elements of each dot product
    row_words: u32, // u32 words of each row of A and B (K/4 rounded up, padded with zero codes)
    k_begin: u32,   // first element of this dispatch (a multiple of 32)
    k_end: u32,     // end of this dispatch (a multiple of 32, or K)
    promote: u32,   // 0: the chain runs from the state's c; N: promote every N elements
    gemm_n: u32,    // 0: output o is row o of A times row o of B; N > 0: o = i*N + j
    x_stride: u32,  // invocations per row of a 2D dispatch
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> tab: array<u32, 256>;
@group(0) @binding(2) var<storage, read> A: array<u32>;
@group(0) @binding(3) var<storage, read> B: array<u32>;
// S[o] = (acc, chain): acc is the FP32 register of promotion, chain the
// accumulator inside the tensor core; both float32 bits.
@group(0) @binding(4) var<storage, read_write> S: array<vec2<u32>>;

var<workgroup> T: array<u32, 256>;

// chain advances every output's K loop over the elements [k_begin, k_end):
// one instruction per 32 elements on the state's chain; with promote = N,
// after each block of N elements (and at K) the chain is added to acc with
// one FP32 round-to-nearest-even add and restarts from +0 (accum.Chain).
@compute @workgroup_size(WG)
fn chain(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    for (var i = li; i < 256u; i = i + WG) {
        T[i] = tab[i];
    }
    workgroupBarrier();
    let o = gid.x + gid.y * P.x_stride;
    if (o >= P.n) {
        return;
    }
    var ra = o;
    var rb = o;
    if (P.gemm_n != 0u) {
        ra = o / P.gemm_n;
        rb = o % P.gemm_n;
    }
    let ba = ra * P.row_words;
    let bb = rb * P.row_words;
    var st = S[o];
    for (var k = P.k_begin; k < P.k_end; k = k + 32u) {
        let k1 = min(k + 32u, P.K);
        st.y = instruction(ba, bb, k, k1, st.y);
        if (P.promote != 0u && (k1 % P.promote == 0u || k1 == P.K)) {
            st.x = f32_add(st.x, st.y);
            st.y = 0u;
        }
    }
    S[o] = st;
}
