"""pip install ./python works without an index (the in-tree build backend
needs nothing from one), and the installed package works from elsewhere."""

import os
import subprocess
import sys

from conftest import REPO, SHARED, need


def test_pip_install_offline(tmp_path):
    has_pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0
    need(has_pip, "pip is not installed for %s (apt-get install python3-pip; make test-deps does)" % sys.executable)
    target = tmp_path / "site"
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(target),
                        os.path.join(REPO, "python")], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (target / "fp8lab" / "libfp8lab.so").exists()
    code = ("import fp8lab, sys; assert fp8lab.__file__.startswith(sys.argv[1]), fp8lab.__file__; "
            "r = fp8lab.golden.verify(sys.argv[2]); print(r); assert r.ok")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FP8LAB_LIB")}
    env["PYTHONPATH"] = str(target)
    capture = os.path.join(SHARED, "h200", "wgmma_e4m3_zero_narrow.tsv")
    need(os.path.exists(capture), "no H200 captures at %s" % capture)
    p = subprocess.run([sys.executable, "-c", code, str(target), capture], capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "4096/4096 bit-exact" in p.stdout
