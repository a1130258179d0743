// scaled.wgsl: one step of NVIDIA's block-scaled and narrow-format MMA
// instructions (accum's nvInstr: MMA-Sim's ST-FDPA and GST-FDPA, tcgen05
// kind::f8f6f4 / mxf8f6f4 / mxf4 / mxf4nvf4 and sm_120a's mma.sync), bit for
// bit in integer arithmetic, for an FP32 accumulator (RZ to FP32). One
// invocation computes one output: d = step(a[0..K), b[0..K), scales, c).
//
// The step itself is blockstep.wgsl's block_step (shared with the attention
// simulator's native block-scaled path), reading its operands through the
// decode tables in TAB (256 entries for a, 256 for b, 256 for the scales).
// Generated constants (see scaled.go; blockstep.wgsl's SK, SF, ... are the
// same values):
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

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.y + b.y;
    return vec2<u32>(a.x + b.x + select(0u, 1u, lo < a.y), lo);
}

// block_step's operands: K codes of a and of b per output (one a word), and
// the K/BLOCK scales of a, then of b.
fn op_a(aw: u32, i: u32) -> u32 { return TAB[A[aw + i] & 0xffu]; }
fn op_b(bw: u32, i: u32) -> u32 { return TAB[256u + (B[bw + i] & 0xffu)]; }
fn sc_a(sa: u32, blk: u32) -> u32 { return TAB[512u + (S[sa + blk] & 0xffu)]; }
fn sc_b(sb: u32, blk: u32) -> u32 { return TAB[512u + (S[sb + blk] & 0xffu)]; }

@compute @workgroup_size(WG)
fn step(@builtin(global_invocation_id) gid: vec3<u32>) {
    let o = gid.x + gid.y * P.x_stride;
    if (o >= P.n) {
        return;
    }
    let sbase = o * 2u * NSC;
    D[o] = block_step(o * K, o * K, sbase, sbase + NSC, C[o]);
}
