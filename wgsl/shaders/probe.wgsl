// probe.wgsl: a streaming read, to measure the memory bandwidth a WGSL
// kernel reaches on this device (the ceiling for decode attention).
// Generated constants: WG: u32, the workgroup size.

struct Params {
    n: u32,      // vec4<u32> words to read
    stride: u32, // invocations in the grid
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> R: array<u32>;

// stream: each invocation reads words i, i+stride, … four at a time (four
// independent 16-byte loads in flight) and writes their XOR, so that no
// load can be skipped.
@compute @workgroup_size(WG)
fn stream(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i0 = gid.x + gid.y * nw.x * WG;
    var acc = vec4<u32>(0u);
    var i = i0;
    let st = P.stride;
    loop {
        if (i + 3u * st >= P.n) {
            break;
        }
        let a = X[i];
        let b = X[i + st];
        let c = X[i + 2u * st];
        let d = X[i + 3u * st];
        acc = acc ^ a ^ b ^ c ^ d;
        i = i + 4u * st;
    }
    for (; i < P.n; i = i + st) {
        acc = acc ^ X[i];
    }
    R[i0] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}

// spin: a dispatch whose length the caller sets (tests of waiting for long
// work): invocation i runs P.n <= 60000 xorshift32 steps from i + 1 (fewer
// than lavapipe's loop limit) and writes the final state to R[i].
@compute @workgroup_size(WG)
fn spin(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i0 = gid.x + gid.y * nw.x * WG;
    if (i0 >= P.stride) {
        return;
    }
    var h = i0 + 1u;
    for (var k = 0u; k < P.n; k = k + 1u) {
        h = h ^ (h << 13u);
        h = h ^ (h >> 17u);
        h = h ^ (h << 5u);
    }
    R[i0] = h;
}
