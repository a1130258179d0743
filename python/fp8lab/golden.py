"""Readers of the ground-truth files and their verification through the
Python API (fp8lab.step, fp8lab.chain, fp8lab.encode, fp8lab.decode).

The same files and checks as `lab verify` (accum/golden): record files
(*.tsv, one instruction a record), long-contraction files (long_*.txt:
the every32 and every128 kernels bit for bit), the conversion file (every
range boundary +-2 ulps, both signs, and the 256-entry decode tables) and
MMA-Sim's peer records (*.tsv.gz: a record that differs from the model
counts as a documented deviation only when it equals one of the model's
documented peer variants, an e2m1-exponent one only on a record the file
lists as e2m1-emin-sensitive).  Formats: ../shared/golden/h200/README.md
and ../shared/golden/mmasim/README.md.
"""

import gzip
import os

import numpy as np

from . import _lib
from ._lib import Error
from .core import chain, decode, encode, model, step

__all__ = ["Check", "Report", "verify", "verify_paths", "read_records", "read_long", "read_convert", "read_peer"]


class Check:
    """One check of a file: total records, how many matched bit for bit, how
    many deviated for a documented reason ({reason: count}), and the first
    mismatching lines."""

    def __init__(self, name):
        self.name = name
        self.total = 0
        self.ok = 0
        self.deviated = {}
        self.deviating = []  # 0-based indices of the records counted as deviations
        self.mismatches = []

    def add(self, same, line=None, detail=None):
        same = np.asarray(same, bool)
        self.total += same.size
        self.ok += int(same.sum())
        if not same.all() and len(self.mismatches) < 10:
            idx = np.flatnonzero(~same)[: 10 - len(self.mismatches)]
            for i in idx:
                self.mismatches.append((None if line is None else int(np.asarray(line).reshape(-1)[i]),
                                        None if detail is None else detail(int(i))))

    @property
    def passed(self):
        return self.ok + sum(self.deviated.values()) == self.total

    def __str__(self):
        s = "%s: %d/%d bit-exact" % (self.name, self.ok, self.total)
        if self.deviated:
            s += ", %d documented deviations (%s)" % (sum(self.deviated.values()),
                                                       "; ".join("%s: %d" % kv for kv in sorted(self.deviated.items())))
        return s


class Report:
    """The verdict on one file."""

    def __init__(self, path, model, kind):
        self.path, self.model, self.kind = path, model, kind
        self.checks = []

    @property
    def ok(self):
        return all(c.passed for c in self.checks)

    def __str__(self):
        lines = ["%s: %s (%s)" % (self.path, self.model, self.kind)]
        for c in self.checks:
            lines.append("  " + str(c))
            for line, detail in c.mismatches[:3]:
                lines.append("    line %s differs: %s" % (line, detail))
        return "\n".join(lines)

    __repr__ = __str__


def _open(path):
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _headers_and_lines(path):
    heads, data = {}, []
    with _open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if line.startswith("#"):
                body = line[1:].strip()
                if ":" in body:
                    k, v = body.split(":", 1)
                    heads.setdefault(k.strip(), v.strip())
                continue
            data.append((n, line))
    return heads, data


def _codes(hexstr, digits, what, n):
    if len(hexstr) % digits:
        raise Error("%s: %d hex digits is not a whole number of %d-digit codes" % (what, len(hexstr), digits))
    return [int(hexstr[i:i + digits], 16) for i in range(0, len(hexstr), digits)]


def read_records(path):
    """A record file: (headers, lines, a, b, c, d) with a and b [records, L]
    codes and c, d float32 bit patterns."""
    heads, data = _headers_and_lines(path)
    fmt = heads.get("a-format")
    if fmt not in ("e4m3", "e5m2", "f16", "bf16"):
        raise Error("%s: a-format %r: want e4m3, e5m2, f16 or bf16" % (path, fmt))
    digits = 2 if fmt in ("e4m3", "e5m2") else 4
    lines, a, b, c, d = [], [], [], [], []
    for n, line in data:
        f = line.split("\t")
        if len(f) != 4:
            raise Error("%s:%d: %d fields, want 4 (a, b, c, d)" % (path, n, len(f)))
        lines.append(n)
        a.append(_codes(f[0], digits, "%s:%d a" % (path, n), 0))
        b.append(_codes(f[1], digits, "%s:%d b" % (path, n), 0))
        c.append(int(f[2], 16))
        d.append(int(f[3], 16))
    dt = np.uint8 if digits == 2 else np.uint16
    return (heads, np.array(lines), np.array(a, dt), np.array(b, dt), np.array(c, np.uint32), np.array(d, np.uint32))


def _same32(want, got):
    want = np.asarray(want, np.uint32)
    got = np.asarray(got, np.uint32)
    wf, gf = want.view(np.float32), got.view(np.float32)
    return (want == got) | (np.isnan(wf) & np.isnan(gf))


def _verify_records(path):
    heads, lines, a, b, c, d = read_records(path)
    name = heads.get("model", "")
    m = model(name)
    if m["a"] != heads.get("a-format"):
        raise Error("%s: model %s reads %s, the file holds %s" % (path, name, m["a"], heads.get("a-format")))
    kind = heads.get("record", "")
    rep = Report(path, name, "records: " + kind)
    chk = Check("records")
    if kind.startswith("d = step(a, b, c)"):
        got = step(name, a, b, c.view(np.float32), bits=True)
    elif kind.startswith("d = fadd(step(a, b, 0), c)"):
        got = (step(name, a, b) + c.view(np.float32)).astype(np.float32).view(np.uint32)
    else:
        raise Error("%s: unknown record kind %r" % (path, kind))
    chk.add(_same32(d, got), lines,
            lambda i: "c=%08x expected %08x got %08x" % (c[i], d[i], int(got[i])))
    rep.checks.append(chk)
    return rep


def read_long(path):
    """A long-contraction file: (headers, K, A rows, B columns, outputs) with
    outputs a list of (line, i, j, {variant: bits}, ref)."""
    heads, data = _headers_and_lines(path)
    K, A, B, outs = None, {}, {}, []
    for n, line in data:
        f = line.split()
        if f[0] == "K":
            K = int(f[1])
        elif f[0] in ("a", "b"):
            (A if f[0] == "a" else B)[int(f[1])] = np.array(_codes(f[2], 2, "%s:%d" % (path, n), 0), np.uint8)
        elif f[0] == "d":
            vals = dict(kv.split("=", 1) for kv in f[3:])
            ref = float(vals.pop("ref"))
            outs.append((n, int(f[1]), int(f[2]), {k: int(v, 16) for k, v in vals.items()}, ref))
    if K is None or not A or not B or not outs:
        raise Error("%s: not a long-contraction file (K, a, b and d lines)" % path)
    return heads, K, A, B, outs


def _verify_long(path):
    heads, K, A, B, outs = read_long(path)
    name = heads.get("model", "sm90.wgmma.e4m3.f32")
    rep = Report(path, name, "long contraction, K = %d" % K)
    a = np.stack([A[i] for _, i, _, _, _ in outs])
    b = np.stack([B[j] for _, _, j, _, _ in outs])
    lines = [n for n, _, _, _, _ in outs]
    for variant, promote in (("every32", 32), ("every128", 128)):
        got = chain(name, a, b, promote=promote, bits=True)
        want = np.array([v[variant] for _, _, _, v, _ in outs], np.uint32)
        chk = Check(variant)
        chk.add(_same32(want, got), lines, lambda i: "expected %08x got %08x" % (want[i], int(got[i])))
        rep.checks.append(chk)
    return rep


def read_convert(path):
    """The conversion file: ({name: (starts, codes)}, {name: 256 bits})."""
    conv, dec, cur, kind = {}, {}, None, None
    with _open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("conversion "):
                cur, kind = line[len("conversion "):], "c"
                conv[cur] = ([], [])
            elif line.startswith("decode "):
                cur, kind = line[len("decode "):], "d"
                dec[cur] = []
            elif kind == "c":
                s, c = line.split()
                conv[cur][0].append(int(s, 16))
                conv[cur][1].append(int(c, 16))
            elif kind == "d":
                _, bits = line.split()
                dec[cur].append(int(bits, 16))
    return ({k: (np.array(s, np.uint32), np.array(c, np.uint8)) for k, (s, c) in conv.items()},
            {k: np.array(v, np.uint32) for k, v in dec.items()})


def _converter(name):
    fmt = "e4m3" if ("e4m3" in name.lower()) else "e5m2"
    sat = "satfinite" if "SATFINITE" in name else "nosat"  # torch casts and __NV_NOSAT saturate nothing
    return fmt, sat


def _verify_convert(path):
    conv, dec = read_convert(path)
    rep = Report(path, "fp8 conversions", "float32 -> fp8 range file and decode tables")
    for name, (starts, codes) in conv.items():
        fmt, sat = _converter(name)
        cand = np.concatenate([np.array([0, 0x7fffffff, 0x7f800000], np.int64), starts.astype(np.int64)])
        xs = np.unique((cand[:, None] + np.arange(-2, 3)[None, :]).reshape(-1))
        xs = xs[(xs >= 0) & (xs <= 0x7fffffff)].astype(np.uint32)
        xs = np.concatenate([xs, xs | np.uint32(0x80000000)])
        idx = np.searchsorted(starts, xs & np.uint32(0x7fffffff), side="right") - 1
        want = codes[idx] | ((xs >> np.uint32(31)).astype(np.uint8) << np.uint8(7))
        got = encode(fmt, xs.view(np.float32), sat=sat)
        chk = Check(name + ": every range boundary +-2 ulps, both signs")
        chk.add(want == got, None, lambda i: "x=%08x expected %02x got %02x" % (xs[i], want[i], got[i]))
        rep.checks.append(chk)
    for name, bits in dec.items():
        fmt = "e4m3" if name.startswith("e4m3") else "e5m2"
        got = decode(fmt, np.arange(256, dtype=np.uint8)).view(np.uint32)
        chk = Check("decode %s: all 256 codes" % name)
        chk.add(bits == got, None, lambda i: "code %02x expected %08x got %08x" % (i, bits[i], got[i]))
        rep.checks.append(chk)
    return rep


_DIGITS = {"e4m3": 2, "e5m2": 2, "e2m1": 2, "e2m3": 2, "e3m2": 2, "e4m3fnuz": 2, "e5m2fnuz": 2,
           "ue8m0": 2, "ue4m3": 2, "f16": 4, "bf16": 4, "tf32": 8, "f32": 8, "f64": 16}
_DT = {2: np.uint8, 4: np.uint16, 8: np.uint32, 16: np.uint64}


def _ranges(s):
    out = set()
    s = s.split("records", 1)[-1].strip() if "records" in s else ""
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-")
            out.update(range(int(lo), int(hi) + 1))
        else:
            out.add(int(part))
    return out


def read_peer(path):
    """A peer-record file: (headers, lines, a, b, sa, sb, c, d), codes as
    unsigned arrays of their natural width (sa, sb None when unscaled)."""
    heads, data = _headers_and_lines(path)
    da, db = _DIGITS[heads["a-format"]], _DIGITS[heads["b-format"]]
    dc, dd = _DIGITS[heads["c-format"]], _DIGITS[heads["d-format"]]
    scaled = "scale-format" in heads
    lines, a, b, sa, sb, c, d = [], [], [], [], [], [], []
    for n, line in data:
        f = line.split("\t")
        if len(f) != (6 if scaled else 4):
            raise Error("%s:%d: %d fields" % (path, n, len(f)))
        lines.append(n)
        a.append(_codes(f[0], da, path, 0))
        b.append(_codes(f[1], db, path, 0))
        if scaled:
            sa.append(_codes(f[2], 2, path, 0))
            sb.append(_codes(f[3], 2, path, 0))
        c.append(int(f[-2], 16))
        d.append(int(f[-1], 16))
    w = max(da, db)
    return (heads, np.array(lines), np.array(a, _DT[w]), np.array(b, _DT[w]),
            np.array(sa, np.uint8) if scaled else None, np.array(sb, np.uint8) if scaled else None,
            np.array(c, _DT[dc]), np.array(d, _DT[dd]))


def peer_model(heads):
    """The fp8lab instruction a peer-record file holds records of (as
    accum/golden.PeerModel works it out from the headers)."""
    ins, arch = heads.get("instruction", ""), heads.get("arch", "")
    A, B, D = heads.get("a-format"), heads.get("b-format"), heads.get("d-format")
    if arch in ("sm_100a", "sm_120a"):
        pre = "sm100.tcgen05" if arch == "sm_100a" else "sm120.mma.sync"
        if "kind::mxf8f6f4" in ins:
            return "%s.mxf8f6f4.%s.%s.%s" % (pre, A, B, D)
        if "kind::mxf4nvf4" in ins:
            return "%s.mxf4nvf4.%s.%s" % (pre, heads.get("scale-format"), D)
        if "kind::mxf4" in ins:
            return "%s.mxf4.%s" % (pre, D)
        if "kind::f8f6f4" in ins and arch == "sm_100a":
            return "%s.f8f6f4.%s.%s.%s" % (pre, A, B, D)
        if "kind::tf32" in ins and arch == "sm_100a":
            return "sm100.tcgen05.tf32." + D
    elif arch == "sm_90" and ins.startswith("wgmma.") and A == "tf32":
        return "sm90.wgmma.tf32." + D
    elif arch == "sm_80" and ins.startswith("mma.sync.") and A == "tf32":
        return "sm80.mma.sync.tf32." + D
    elif arch in ("CDNA1", "CDNA2", "CDNA3") and ins.startswith("v_mfma_"):
        for suf, cls in (("xf32", "xf32"), ("bf16_1k", "bf16_1k")):
            if ins.endswith(suf):
                break
        else:
            cls = None
            tail = ins[-7:]
            if tail in ("fp8_fp8", "fp8_bf8", "bf8_fp8", "bf8_bf8"):
                cls = tail.replace("_", ".")
            else:
                for suf in ("f64", "f32", "bf16", "f16"):
                    if ins.endswith(suf):
                        cls = suf
                        break
        if cls:
            return "%s.mfma.%s.%s" % (arch.lower(), cls, D)
    raise Error("no model for instruction %r on %s" % (ins, arch))


def _same_out(fmt, want, got):
    want = np.asarray(want).astype(np.uint64)
    got = np.asarray(got).astype(np.uint64)
    if fmt == "f64":
        nan = np.isnan(want.view(np.float64)) & np.isnan(got.view(np.float64))
    elif fmt == "f16":
        nan = ((want & 0x7c00) == 0x7c00) & ((want & 0x3ff) != 0) & ((got & 0x7c00) == 0x7c00) & ((got & 0x3ff) != 0)
    else:
        nan = np.isnan(want.astype(np.uint32).view(np.float32)) & np.isnan(got.astype(np.uint32).view(np.float32))
    return (want == got) | nan


def _verify_peer(path):
    heads, lines, a, b, sa, sb, c, d = read_peer(path)
    name = peer_model(heads)
    m = model(name)
    for key, want in (("a", "a-format"), ("b", "b-format"), ("c", "c-format")):
        if m[key] != heads.get(want):
            raise Error("%s: model %s reads %s = %s, the file holds %s" % (path, name, key, m[key], heads.get(want)))
    if (m.get("scale") or None) != heads.get("scale-format"):
        raise Error("%s: model %s takes scales %r, the file %r" % (path, name, m.get("scale"), heads.get("scale-format")))
    rep = Report(path, name, "peer records (%s, not hardware): %s" % (heads.get("arch"), heads.get("instruction")))
    chk = Check("records")
    fmt = heads["d-format"]
    got = step(name, a, b, c, scale_a=sa, scale_b=sb, bits=True)
    same = _same_out(fmt, d, got)
    sensitive = _ranges(heads.get("e2m1-emin-sensitive", ""))
    reason = np.array([""] * len(d), object)
    undecided = ~same
    fp4 = _lib.info()["fp4_emin_reason"]
    for v, why in enumerate(m.get("variants") or [], 1):
        if not undecided.any():
            break
        idx = np.flatnonzero(undecided)
        gv = step(name, a[idx], b[idx], c[idx], scale_a=None if sa is None else sa[idx],
                  scale_b=None if sb is None else sb[idx], variant=v, bits=True)
        for i in idx[_same_out(fmt, d[idx], gv)]:
            undecided[i] = False  # the first variant that matches decides, as in accum/golden
            # An FP4-exponent deviation must be one the file lists as
            # e2m1-emin-sensitive; anything else is a plain mismatch.
            if not (fp4 in why and (i + 1) not in sensitive):
                reason[i] = why
    left = ~same & (reason == "")
    chk.total = len(d)
    chk.ok = int(same.sum())
    for why in set(reason[~same]) - {""}:
        chk.deviated[why] = int((reason == why).sum())
    chk.deviating = [int(i) for i in np.flatnonzero(reason != "")]
    for i in np.flatnonzero(left)[:10]:
        chk.mismatches.append((int(lines[i]), "expected %x got %x" % (int(d[i]), int(got[i]))))
    rep.checks.append(chk)
    return rep


_MAGIC = {
    "# fp8lab golden records v1": lambda p: _verify_records(p),
    "# fp8lab golden long contraction v1": lambda p: _verify_long(p),
    "# fp8lab golden fp8 conversions v1": lambda p: _verify_convert(p),
    "# fp8lab peer records v1": lambda p: _verify_peer(p),
}


def verify(path):
    """Verifies one ground-truth file (plain or .gz; the kind from its first
    line) through the Python API; returns a Report (report.ok: every record
    bit-exact, or deviating for a documented reason)."""
    with _open(path) as f:
        first = f.readline().strip()
    fn = _MAGIC.get(first)
    if fn is None:
        raise Error("%s: not a ground-truth file: its first line %r is none of %s" % (path, first[:60], ", ".join(_MAGIC)))
    return fn(path)


def verify_paths(*paths):
    """Verifies every ground-truth file under the given files or folders."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                full = os.path.join(p, name)
                if os.path.isfile(full) and name.endswith((".tsv", ".tsv.gz", ".txt", ".txt.gz")):
                    out.append(verify(full))
        else:
            out.append(verify(p))
    return out
