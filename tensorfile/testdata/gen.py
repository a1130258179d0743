# Writes the small test files of package tensorfile with NumPy itself
# (Debian python3-numpy). Run from this folder: python3 gen.py
# The values are exact in every type written: x = (i - 11) / 8.
import json, struct
import numpy as np

x = ((np.arange(24, dtype=np.float64) - 11) / 8).reshape(2, 3, 4)
np.save("f32.npy", x.astype(np.float32))
np.save("f16.npy", x.astype(np.float16))
np.save("f64.npy", x)
np.save("f32be.npy", x.astype(">f4"))
np.save("scalar.npy", np.float32(1.5))
np.save("empty.npy", np.zeros((0, 4), np.float32))
np.save("int32.npy", np.arange(4, dtype=np.int32))
np.save("fortran.npy", np.asfortranarray(x.astype(np.float32)))
# bfloat16 as ml_dtypes writes it: opaque 2-byte elements '<V2' holding the
# upper half of the float32 pattern (exact here).
bf = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
np.save("bf16_v2.npy", bf.view("V2"))
# float8_e4m3fn as '|V1': x/2 has at most 3 significant bits and lies in range.
def e4m3(v):
    out = []
    for f in v.ravel():
        s = 0x80 if f < 0 or (f == 0 and np.signbit(f)) else 0
        a = abs(float(f))
        if a == 0:
            out.append(s); continue
        e = int(np.floor(np.log2(a)))
        if e < -6:
            m = round(a / 2.0**-9); out.append(s | m); continue
        m = round((a / 2.0**e - 1) * 8)
        assert m < 8 and a == (1 + m / 8) * 2.0**e
        out.append(s | ((e + 7) << 3) | m)
    return np.array(out, np.uint8).reshape(v.shape)
np.save("e4m3_v1.npy", e4m3(x / 2).view("V1"))

def safetensors(path, tensors, meta=None):
    header, blobs, off = {}, [], 0
    if meta:
        header["__metadata__"] = meta
    for name, (dtype, arr) in tensors.items():
        b = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b); off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h))); f.write(h)
        for b in blobs:
            f.write(b)

safetensors("qkv.safetensors", {
    "f32": ("F32", x.astype("<f4")),
    "f16": ("F16", x.astype("<f2")),
    "bf16": ("BF16", bf),
    "e4m3": ("F8_E4M3", e4m3(x / 2)),
}, meta={"format": "pt"})
