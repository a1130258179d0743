"""lab_table.py end to end: a lab built from this tree, scales at a small
size on the CPU and on the GPU the lab's runs share (lavapipe under CI)."""
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_table  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class LabTableTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lab = os.path.join(tempfile.mkdtemp(), "lab")
        subprocess.run([os.environ.get("GO", "go"), "build", "-o", cls.lab, "./cmd/lab"], cwd=ROOT, check=True)

    def test_refused_run_says_why(self):
        # A run over the lab's budget stops the table with the lab's reason,
        # not a bare "400 Bad Request" (the H200 host's 16 cores put the
        # default needle over the old fixed 4 GiB).
        os.environ["LAB"] = self.lab
        with self.assertRaises(SystemExit) as cm:
            lab_table.main(["--reps", "1", "--max-memory", "64MiB", "needle"])
        msg = str(cm.exception)
        self.assertIn("400", msg)
        self.assertIn("over the lab's budget", msg)
        self.assertIn("-max-memory", msg)

    def test_serve_failure_shows_log(self):
        with self.assertRaises(SystemExit) as cm:
            lab_table.Lab(self.lab, "2h", "")  # -gpu-idle above its 1h limit: serve exits
        self.assertIn("-gpu-idle 2h0m0s: want 0 to 1h", str(cm.exception))

    def test_scales_cpu_and_gpu(self):
        lab = self.lab
        # lavapipe's window-system probe wants a runtime folder
        os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
        os.environ["LAB"] = lab
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = lab_table.main(["--reps", "2", "--params",
                                 '{"tokens": 256, "trials": 1, "outlier": "1,100", "kv-heads": 2, "q-per-kv": 2}', "scales"])
        text = out.getvalue()
        if rc != 0 and "WebGPU adapter" in text and os.environ.get("CI") != "true":
            self.skipTest("no WebGPU adapter here (CI installs lavapipe)")
        self.assertEqual(rc, 0, text)
        self.assertIn("warm-up scales gpu: done ", text)
        self.assertRegex(text, r"lab: budget [0-9.]+ GiB, ")
        for rep in (0, 1):
            for dev in ("cpu", "gpu"):
                self.assertIn(f"rep {rep} scales {dev}: done ", text)
        last = text.strip().splitlines()[-1].split()
        self.assertEqual((last[0], last[-1]), ("scales", "equal"), text)
        self.assertGreater(float(last[1]), 0)
        self.assertGreater(float(last[2]), 0)


if __name__ == "__main__":
    unittest.main()
