"""examples/kernel_error_vs_sim.py logs a kernel's measured error and
fp8lab's prediction into a running lab, as two runs the page overlays."""

import os
import subprocess
import sys
import urllib.request

import pytest

from fp8lab.lab import Client

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "kernel_error_vs_sim.py")


def _run(lab_url, kernel):
    p = subprocess.run([sys.executable, EXAMPLE, "--lab", lab_url, "--contexts", "512,2048", "--heads", "2", "--kernel", kernel],
                       capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert p.returncode == 0, p.stderr
    ids = [line.split()[1:3] for line in p.stdout.splitlines() if line.startswith("runs ")][0]
    lab = Client(lab_url)
    for i in ids:
        rec = lab.run(i)
        assert rec["state"] == "done" and rec["points"] > 0, rec
    html = urllib.request.urlopen(lab.report_url(ids), timeout=60).read().decode()
    assert "kernel-error" in html
    return lab.points(ids[0]), lab.points(ids[1])


def test_example_numpy_kernel(lab_url):
    measured, predicted = _run(lab_url, "numpy")
    assert len(measured) == 2 and len(predicted) == 4


def test_example_torch_kernel(lab_url):
    pytest.importorskip("torch", reason="PyTorch is not installed: the example's PyTorch kernel "
                                        "(scaled_dot_product_attention on the CPU) cannot run; the NumPy kernel ran instead")
    measured, predicted = _run(lab_url, "torch")
    assert len(measured) == 2 and len(predicted) == 4
