"""The H200 captures, fp8lab's own fresh captures and MMA-Sim's peer
records, verified through the Python API (fp8lab.golden: records through
fp8lab.step, long contractions through fp8lab.chain, conversions through
fp8lab.encode/decode), give the same verdicts, check for check and count
for count, as `lab verify` on the same files."""

import os
import re
import subprocess

import numpy as np
import pytest

import fp8lab
from conftest import REPO

CHECK = re.compile(r"^\s+(?!model )(.+): (\d+)/(\d+) bit-exact(?:, (\d+) documented peer deviations)?$")


def _folders(golden):
    return [os.path.join(golden, "h200"), os.path.join(REPO, "testdata", "h200-fresh"), os.path.join(golden, "mmasim")]


def _lab_verdicts(lab_bin, paths):
    p = subprocess.run([lab_bin, "verify"] + paths, capture_output=True, text=True)
    verdicts, cur = {}, None
    for line in p.stdout.splitlines():
        if line and not line.startswith(" ") and os.path.exists(line.strip()):
            cur = os.path.realpath(line.strip())
            verdicts[cur] = []
            continue
        m = CHECK.match(line)
        if m and cur:
            verdicts[cur].append((int(m.group(2)), int(m.group(3)), int(m.group(4) or 0)))
    return p.returncode, verdicts


def test_every_capture_bit_exact_and_same_verdicts_as_lab_verify(golden, lab_bin):
    reports = fp8lab.golden.verify_paths(*_folders(golden))
    assert len(reports) >= 100  # 32 H200 files, 25 fresh, 51 peer files
    bad = [str(r) for r in reports if not r.ok]
    assert not bad, "\n".join(bad)
    dev = sum(sum(c.deviated.values()) for r in reports for c in r.checks)
    code, lab = _lab_verdicts(lab_bin, _folders(golden))
    assert code == 0
    assert set(lab) == {os.path.realpath(r.path) for r in reports}
    for r in reports:
        ours = [(c.ok, c.total, sum(c.deviated.values())) for c in r.checks]
        assert ours == lab[os.path.realpath(r.path)], r.path
    assert dev == sum(d for v in lab.values() for _, _, d in v)


def test_one_capture_file_reproduced_by_hand(golden):
    # What the README shows: one H200 record file, record by record.
    heads, lines, a, b, c, d = fp8lab.golden.read_records(os.path.join(golden, "h200", "wgmma_e4m3_inside_normal.tsv"))
    got = fp8lab.step(heads["model"], a, b, c.view(np.float32))
    assert np.array_equal(got.view(np.uint32), d)


def test_a_changed_record_is_caught(golden, tmp_path):
    src = os.path.join(golden, "h200", "wgmma_e4m3_inside_normal.tsv")
    lines = open(src).read().splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("#"):
            f = line.split("\t")
            f[3] = "%08x" % (int(f[3], 16) ^ 1)  # one bit of one d
            lines[i] = "\t".join(f)
            break
    bad = tmp_path / "changed.tsv"
    bad.write_text("\n".join(lines) + "\n")
    rep = fp8lab.golden.verify(str(bad))
    assert not rep.ok and rep.checks[0].ok == rep.checks[0].total - 1


def test_not_a_capture(tmp_path):
    p = tmp_path / "x.tsv"
    p.write_text("hello\n")
    with pytest.raises(fp8lab.Error, match="not a ground-truth file"):
        fp8lab.golden.verify(str(p))
