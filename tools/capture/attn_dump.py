# Runs ../shared/golden/h200/capture/attn_probe.py's kernel outputs into raw
# float32 files for element-wise comparison with fp8lab's simulator, and
# dumps the first values of the deterministic inputs (to check fp8lab's Go
# port of numpy's PCG64 + attn_inputs.make).
# Usage: OUT=/tmp/attn python3 attn_dump.py CAPTUREDIR
import os, sys, json, hashlib
import numpy as np
cap = sys.argv[1]; sys.path.insert(0, cap)
import attn_inputs
OUT = os.environ.get("OUT", "/tmp/attn"); os.makedirs(OUT, exist_ok=True)
info = {}
for N in [4096]:
    bg = np.random.PCG64(20261129 + N)
    info[f"N{N}_raw0_4"] = [int(x) for x in bg.random_raw(4)]
    Q, K, V, pos, signs = attn_inputs.make(N)
    info[f"N{N}_Q0"] = [float(x) for x in Q[0, :4]]
    info[f"N{N}_K0"] = [float(x) for x in K[0, :4]]
    info[f"N{N}_V0"] = [float(x) for x in V[0, :4]]
    info[f"N{N}_pos"] = [int(x) for x in pos[:8]]
    info[f"N{N}_sha_f32"] = hashlib.sha256(Q.tobytes() + K.tobytes() + V.tobytes()).hexdigest()
json.dump(info, open(os.path.join(OUT, "inputs_check.json"), "w"), indent=1)
print(json.dumps(info)[:2000])
