// native.wgsl: the GPU's own f32 arithmetic, as a kernel author writes it,
// for package wgsl's comparisons with the Go baselines. Unlike the other
// kernels these use f32 operations on purpose: what the driver does with
// them (contract a*b+c into an FMA or not) is what is measured.
//
// Generated constants: WG: u32, the workgroup size.

struct Params {
    n: u32,        // number of dot products (or probe values)
    K: u32,        // their length
    k_begin: u32,  // seq: first element of this dispatch
    k_end: u32,    // seq: end of this dispatch
    half: u32,     // level: number of sums this level writes per dot product
    x_stride: u32, // invocations per row of a 2D dispatch
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> Y: array<f32>;
@group(0) @binding(3) var<storage, read_write> R: array<f32>;

fn index(gid: vec3<u32>) -> u32 {
    return gid.x + gid.y * P.x_stride;
}

// seq: R[o] = R[o] + X[o*K+k] * Y[o*K+k] for k in [k_begin, k_end), in
// order: a sequential f32 dot product carried in R between dispatches.
@compute @workgroup_size(WG)
fn seq(@builtin(global_invocation_id) gid: vec3<u32>) {
    let o = index(gid);
    if (o >= P.n) {
        return;
    }
    var s = R[o];
    let base = o * P.K;
    for (var k = P.k_begin; k < P.k_end; k = k + 1u) {
        s = s + X[base + k] * Y[base + k];
    }
    R[o] = s;
}

// products: R[i] = X[i] * Y[i] (rounded to f32; stored, so never fused with
// a later add).
@compute @workgroup_size(WG)
fn products(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = index(gid);
    if (i >= P.n * P.K) {
        return;
    }
    R[i] = X[i] * Y[i];
}

// level: one level of a pairwise tree, X → R: for each dot product o and
// i < half, R[o*K + i] = X[o*K + 2i] + X[o*K + 2i + 1]. (Y is unused.)
@compute @workgroup_size(WG)
fn level(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = index(gid);
    if (t >= P.n * P.half) {
        return;
    }
    let o = t / P.half;
    let i = t % P.half;
    let base = o * P.K;
    R[base + i] = X[base + 2u * i] + X[base + 2u * i + 1u];
}

// root: R[o] = Y[o] + X[o*K], the tree's root added to c (Go's pairwise
// baseline: c + pairwise(products)).
@compute @workgroup_size(WG)
fn root(@builtin(global_invocation_id) gid: vec3<u32>) {
    let o = index(gid);
    if (o >= P.n) {
        return;
    }
    R[o] = Y[o] + X[o * P.K];
}

// muladd: R[i] = X[3i] * X[3i+1] + X[3i+2] written as a kernel author
// writes it (a driver may contract it into one FMA), and R[n+i] = fma(...)
// (WGSL's fma builtin, which a driver may still compute unfused).
@compute @workgroup_size(WG)
fn muladd(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = index(gid);
    if (i >= P.n) {
        return;
    }
    let a = X[3u * i];
    let b = X[3u * i + 1u];
    let c = X[3u * i + 2u];
    R[i] = a * b + c;
    R[P.n + i] = fma(a, b, c);
}

// loopcount: R[0] = the number of iterations a single loop of K iterations
// ran (lavapipe stops loops after about 65535 iterations, silently).
@compute @workgroup_size(1)
fn loopcount(@builtin(global_invocation_id) gid: vec3<u32>) {
    var n = 0u;
    for (var k = 0u; k < P.K; k = k + 1u) {
        n = n + 1u;
    }
    R[0] = f32(n);
}

// fill: R[i] = a pseudo-random word from a hash of i and the seed k_begin:
// two FP16 values in ±[2^-5, 2^3) (K = 0) or four e4m3 codes without NaN
// (K = 1). It fills a KV cache on the device for timing runs.
@compute @workgroup_size(WG)
fn fill(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = index(gid);
    if (i >= P.n) {
        return;
    }
    var h = (i * 0x9e3779b9u) ^ P.k_begin;
    h = h ^ (h >> 16u);
    h = h * 0x85ebca6bu;
    h = h ^ (h >> 13u);
    h = h * 0xc2b2ae35u;
    h = h ^ (h >> 16u);
    var w: u32;
    if (P.K == 0u) {
        let lo = (h & 0x83ffu) | ((10u + ((h >> 10u) & 7u)) << 10u);
        let hi = ((h >> 16u) & 0x83ffu) | ((10u + ((h >> 26u) & 7u)) << 10u);
        w = lo | (hi << 16u);
    } else {
        w = 0u;
        for (var b = 0u; b < 4u; b = b + 1u) {
            let c = (h >> (8u * b)) & 0xffu;
            w = w | (((c & 0x80u) | min(c & 0x7fu, 0x76u)) << (8u * b));
        }
    }
    R[i] = bitcast<f32>(w);
}
