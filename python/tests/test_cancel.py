"""Ctrl-C ends a long call within a second (KeyboardInterrupt in Python, the
Go context cancelled), and the interpreter goes on working afterwards."""

import os
import signal
import subprocess
import sys
import time

SCRIPT = r"""
import signal, sys, time
import numpy as np
import fp8lab
A = np.full((64, 1 << 16), 0x38, np.uint8)
B = np.full((1 << 16, 256), 0x38, np.uint8)   # D = A.B: 1.1e9 products, seconds of work
got = {}
def on_sigint(sig, frame):
    got["t"] = time.monotonic()
    raise KeyboardInterrupt
signal.signal(signal.SIGINT, on_sigint)
print("ready", flush=True)
try:
    fp8lab.gemm("sm90.wgmma.e4m3.f32", A, B, threads=1)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted after %.3f s" % (time.monotonic() - got["t"]), flush=True)
# the library still works after a cancelled call
print("after", float(fp8lab.step("sm90.wgmma.e4m3.f32", A[0, :32], A[0, :32])), flush=True)
"""


def test_keyboard_interrupt_within_a_second():
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    gone = time.monotonic() - sent
    assert "interrupted after" in out, (out, err)
    latency = float(out.split("interrupted after ")[1].split()[0])
    assert latency < 1.0, "KeyboardInterrupt reached the caller %.3f s after SIGINT" % latency
    assert "after 32.0" in out, (out, err)
    assert gone < 5, "the process took %.2f s after SIGINT to finish" % gone
