// convert.wgsl: FP8 decode and encode kernels (package fp8's conversions,
// bit for bit). Generated constants (see convert.go):
//   EBITS, MBITS: u32   exponent and fraction bits of the FP8 format
//   IEEE: bool          e5m2-style specials
//   EMIN: i32           minimum normal exponent
//   MAXCODE, OVERCODE, NANCODE: u32
//   WG: u32             workgroup size

struct Params {
    n: u32,        // number of elements
    sat: u32,      // 1: satfinite, 0: nosat
    x_stride: u32, // invocations per row of a 2D dispatch
    pad: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

// decode: dst[i] = float32 bits of the code src[i] & 0xff.
@compute @workgroup_size(WG)
fn decode(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * P.x_stride;
    if (i >= P.n) {
        return;
    }
    dst[i] = fp8_decode(src[i] & 0xffu, EBITS, MBITS, IEEE);
}

// encode: dst[i] = code of the float32 bits src[i].
@compute @workgroup_size(WG)
fn encode(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * P.x_stride;
    if (i >= P.n) {
        return;
    }
    dst[i] = fp8_encode(src[i], MBITS, EMIN, MAXCODE, OVERCODE, NANCODE, P.sat != 0u);
}

// add: dst[i] = f32_add(src[2i], src[2i+1]) (the integer FP32 adder).
@compute @workgroup_size(WG)
fn add(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * P.x_stride;
    if (i >= P.n) {
        return;
    }
    dst[i] = f32_add(src[2u * i], src[2u * i + 1u]);
}
