"""A client of the lab (`lab serve`) in Python: the protocol of sim.LabClient
(sim/client.go) and the lab's API (lab/api.go, README "Lab API").

    from fp8lab.lab import Client
    lab = Client("http://127.0.0.1:8080")
    with lab.register("my-kernel-error", params={"kernel": "sdpa"}, seed=1) as run:
        for n in contexts:
            run.point("measured", n, err(n))
    pts = lab.points(run.id)          # NumPy columns (pandas: pts.to_pandas())

A client run is registered with origin "client" and this package's build;
points, notes and progress are buffered and sent in batches (POST
/api/runs/{id}/events) with "from" (the index of the first point) and
"notes_from" (of the first note), so that a retry after a lost answer is
taken once: the lab answers how many points it holds and the client goes
on from there.  5xx answers are retried for 30 s (Retry-After honoured), 4xx
are errors (LabError with the lab's message); a run cancelled in the lab
makes point() raise Cancelled.  Only the standard library and NumPy are
used; pandas is optional.
"""

import json
import math
import platform
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import numpy as np

from ._lib import Error

__all__ = ["Client", "ClientRun", "Points", "LabError", "CancelledInLab"]


class LabError(Error):
    """An answer of the lab other than 2xx: status and the lab's message."""

    def __init__(self, status, message, body=None):
        super().__init__("lab: %s (HTTP %d)" % (message, status))
        self.status, self.message, self.body = status, message, body or {}


class CancelledInLab(Error):
    """The run was cancelled in the lab (its page's Cancel)."""


def _num(x):
    x = float(x)
    return x if math.isfinite(x) else None  # NaN and +-inf are null on the wire


class Client:
    """A lab at url (default http://127.0.0.1:8080)."""

    def __init__(self, url="http://127.0.0.1:8080", timeout=30.0, retry_for=30.0):
        self.url = url.rstrip("/")
        u = urllib.parse.urlparse(self.url)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise Error("lab: %r is not an http(s) URL" % url)
        self.timeout, self.retry_for = timeout, retry_for

    # -- HTTP ---------------------------------------------------------------

    def _request(self, method, path, body=None, retry=False, raw=False):
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        deadline = time.monotonic() + (self.retry_for if retry else 0)
        wait = 0.1
        while True:
            req = urllib.request.Request(self.url + path, data=data, method=method)
            if data is not None:
                req.add_header("Content-Type", "application/json")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as r:
                    payload = r.read()
                    if raw:
                        return payload
                    return json.loads(payload) if payload else None
            except urllib.error.HTTPError as e:
                payload = e.read()
                try:
                    msg = json.loads(payload)
                except ValueError:
                    msg = {"error": payload.decode("utf-8", "replace").strip()}
                err = LabError(e.code, msg.get("error") or e.reason, msg)
                if not (retry and e.code >= 500) or time.monotonic() + wait > deadline:
                    raise err from None
                ra = e.headers.get("Retry-After")
                time.sleep(min(float(ra), 5.0) if ra and ra.isdigit() else wait)
            except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                if not retry or time.monotonic() + wait > deadline:
                    raise Error("lab %s: %s" % (self.url, getattr(e, "reason", e))) from None
                time.sleep(wait)
            wait = min(2 * wait, 5.0)

    # -- reading --------------------------------------------------------------

    def info(self):
        """GET /api/info: the lab's build, workers, runs."""
        return self._request("GET", "/api/info")

    def experiments(self):
        """The lab's experiments (their schemas)."""
        return self._request("GET", "/api/experiments")["experiments"]

    def run(self, run_id):
        """The record of a run (a dict)."""
        return self._request("GET", "/api/runs/%s" % _id(run_id))

    def runs(self, experiment=None, state=None, q=None, limit=200):
        """Run records, newest first (GET /api/runs with its filters)."""
        args = {k: v for k, v in (("experiment", experiment), ("state", state), ("q", q), ("limit", limit)) if v is not None}
        return self._request("GET", "/api/runs?" + urllib.parse.urlencode(args))["runs"]

    def points(self, run_id):
        """Every point of a run as NumPy columns (Points): series (str), x, y
        (float64, NaN where the lab has null) and one column per extra value."""
        pts, start = [], 0
        while True:
            page = self._request("GET", "/api/runs/%s/points?from=%d&limit=100000" % (_id(run_id), start))
            pts.extend(page["points"])
            start += page["count"]
            if page["count"] == 0 or start >= page["total"]:
                break
        return Points(pts)

    def wait(self, run_id, timeout=600.0, poll=0.2):
        """Waits until a run has ended; returns its record."""
        end = time.monotonic() + timeout
        while True:
            rec = self.run(run_id)
            if rec["state"] not in ("queued", "running"):
                return rec
            if time.monotonic() > end:
                raise Error("lab: run %s still %s after %g s" % (run_id, rec["state"], timeout))
            time.sleep(poll)

    def sweeps(self):
        """Sweep records, newest first."""
        return self._request("GET", "/api/sweeps")["sweeps"]

    def sweep(self, sweep_id):
        """A sweep's record (states, run_ids, ...)."""
        return self._request("GET", "/api/sweeps/%s" % _id(sweep_id))

    def aggregate(self, sweep_id, group=None):
        """A sweep's aggregate (GET /api/sweeps/{id}/aggregate): a dict with
        "groups" (key, label, runs, summary, series) and "table": NumPy
        columns, one row per group and summary value (group columns, name,
        n, mean, sd, se, ci95_lo, ci95_hi; NaN where the lab has null);
        .to_pandas() when pandas is installed."""
        q = "?format=json"
        if group is not None:
            q += "&group=" + urllib.parse.quote(",".join(group) if not isinstance(group, str) else group)
        agg = self._request("GET", "/api/sweeps/%s/aggregate%s" % (_id(sweep_id), q))
        if "aggregate" in agg and "groups" not in agg:
            agg = agg["aggregate"]
        rows = []
        for g in agg.get("groups") or []:
            for name, st in (g.get("summary") or {}).items():
                row = {"group": g.get("label", ""), "name": name}
                for k, v in (g.get("key") or {}).items():
                    row["key." + k] = v
                for f in ("n", "mean", "sd", "se", "ci95_lo", "ci95_hi"):
                    row[f] = st.get(f)
                rows.append(row)
        agg["table"] = Table(rows)
        return agg

    def report_url(self, run_ids):
        """The address of the lab's HTML report overlaying runs (the page's
        comparison view as a file)."""
        return "%s/api/report?runs=%s" % (self.url, ",".join(_id(r) for r in run_ids))

    def compare_url(self, run_ids):
        """The page's comparison of runs (#compare/ID,ID...)."""
        return "%s/#compare/%s" % (self.url, ",".join(_id(r) for r in run_ids))

    # -- writing --------------------------------------------------------------

    def start(self, experiment, params=None, seed=1, title="", note=""):
        """Starts a run of one of the lab's experiments on the lab's pool;
        returns its record (wait() for its end, points() for its points)."""
        body = {"experiment": experiment, "params": params or {}, "seed": seed, "title": title, "note": note}
        return self._request("POST", "/api/runs", body)

    def register(self, experiment, params=None, seed=1, title="", note="", flush_every=0.1):
        """Registers a run that this program computes (origin "client"): an
        experiment of the lab (its parameters validated) or any name of your
        own (parameters kept as given).  Returns a ClientRun to stream into;
        use it as a context manager or call end()."""
        from . import __version__
        from ._lib import info
        try:
            rev = info().get("revision", "")
        except Exception:  # the shared library is not needed to talk to a lab
            rev = ""
        body = {"experiment": experiment, "params": params or {}, "seed": seed, "origin": "client",
                "title": title, "note": note, "version": "fp8lab-python " + __version__, "revision": rev,
                "go_version": "python " + platform.python_version(),
                "platform": "%s/%s" % (sys.platform, platform.machine())}
        rec = self._request("POST", "/api/runs", body, retry=True)
        if not rec or not rec.get("id"):
            raise Error("lab %s: no run id in the answer" % self.url)
        return ClientRun(self, rec, flush_every)


def _id(x):
    if isinstance(x, dict):
        x = x["id"]
    s = str(x)
    if not s or not all(c.isalnum() or c in "-_" for c in s):
        raise Error("lab: %r is not a run or sweep id" % (x,))
    return s


class ClientRun:
    """A run registered by this program; stream its points into the lab.

    point(series, x, y, **extra) buffers one point; note(text), progress(done,
    total) and summary(dict) likewise; flush() sends what is pending; end()
    sends the rest with the summary and the end state (done, failed or
    cancelled).  As a context manager the run ends "done", "failed" (an
    exception, its text kept) or "cancelled" (KeyboardInterrupt)."""

    MAX_BATCH = 4096

    def __init__(self, client, record, flush_every):
        self.client, self.record, self.id = client, record, record["id"]
        self.url = "%s/#run/%s" % (client.url, self.id)
        self.flush_every = flush_every
        self._pending, self._notes = [], []
        self._sent = self._notes_sent = 0
        self._progress = None
        self._summary = {}
        self._last = time.monotonic()
        self.cancelled = False
        self.ended = False

    def point(self, series, x, y, **extra):
        """Adds one point (NaN and +-inf are sent as null, as the lab wants)."""
        if self.ended:
            raise Error("lab: run %s has ended" % self.id)
        if self.cancelled:
            raise CancelledInLab("lab: run %s was cancelled in the lab" % self.id)
        p = {"series": str(series), "x": _num(x), "y": _num(y)}
        if extra:
            p["extra"] = {str(k): _num(v) for k, v in extra.items()}
        self._pending.append(p)
        if len(self._pending) >= self.MAX_BATCH or time.monotonic() - self._last >= self.flush_every:
            self.flush()

    def note(self, text):
        self._notes.append(str(text))

    def progress(self, done, total):
        self._progress = {"done": int(done), "total": int(total)}

    def summary(self, values):
        self._summary.update({str(k): _num(v) for k, v in values.items()})

    def _post(self, end=None):
        n = min(len(self._pending), self.MAX_BATCH)
        body = {"from": self._sent, "points": self._pending[:n]}
        notes = list(self._notes)
        if notes:
            body["notes"], body["notes_from"] = notes, self._notes_sent
        if self._progress is not None:
            body["progress"] = self._progress
        last = end is not None and n == len(self._pending)
        if last:
            body["summary"] = self._summary
            body["end"] = end
        try:
            ans = self.client._request("POST", "/api/runs/%s/events" % self.id, body, retry=True)
        except LabError as e:
            if e.status == 409 and e.body.get("cancel"):
                self.cancelled = True
                self._pending = []
                raise CancelledInLab("lab: run %s was cancelled in the lab" % self.id) from None
            raise
        took = min(max(int(ans.get("points", 0)) - self._sent, 0), n)  # what a retry repeated is skipped
        self._pending = self._pending[took:]
        self._sent += took
        self._notes = self._notes[len(notes):]
        self._notes_sent += len(notes)
        self._progress = None
        self._last = time.monotonic()
        if ans.get("cancel"):
            self.cancelled = True
            raise CancelledInLab("lab: run %s was cancelled in the lab" % self.id)
        return last

    def flush(self):
        """Sends every pending point, note and the progress."""
        while True:
            self._post()
            if not self._pending:
                return

    def end(self, state="done", error=""):
        """Sends what is pending, the summary and the end state; returns the
        run's record."""
        if self.ended:
            raise Error("lab: run %s has ended already" % self.id)
        if state not in ("done", "failed", "cancelled"):
            raise Error("lab: end state %r: want done, failed or cancelled" % (state,))
        end = {"state": state}
        if error:
            end["error"] = str(error)
        try:
            while not self._post(end):
                pass
        except CancelledInLab:
            pass  # the lab has ended the record itself
        self.ended = True
        return self.client.run(self.id)

    @property
    def sent(self):
        """The points the lab holds."""
        return self._sent

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if self.ended:
            return False
        if typ is None:
            self.end("done")
        elif issubclass(typ, KeyboardInterrupt):
            self.end("cancelled")
        elif issubclass(typ, CancelledInLab):
            self.ended = True
        else:
            self.end("failed", "%s: %s" % (typ.__name__, exc))
        return False


class Table:
    """Columns of NumPy arrays from a list of row dicts (missing and null
    values NaN for numbers); .to_pandas() gives a DataFrame."""

    def __init__(self, rows):
        names = []
        for r in rows:
            for k in r:
                if k not in names:
                    names.append(k)
        self.columns = {}
        for k in names:
            vals = [r.get(k) for r in rows]
            if all(v is None or isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                self.columns[k] = np.array([np.nan if v is None else float(v) for v in vals], np.float64)
            else:
                self.columns[k] = np.array(["" if v is None else str(v) for v in vals], dtype=object)
        self.rows = len(rows)

    def __getitem__(self, name):
        return self.columns[name]

    def __len__(self):
        return self.rows

    def keys(self):
        return self.columns.keys()

    def to_pandas(self):
        """A pandas DataFrame of the columns (pandas must be installed)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("fp8lab.lab: pandas is not installed (the columns are NumPy arrays: .columns)") from None
        return pd.DataFrame(self.columns)

    def __repr__(self):
        return "%s(%d rows: %s)" % (type(self).__name__, self.rows, ", ".join(self.columns))


class Points(Table):
    """A run's points as columns: series, x, y and the extras."""

    def __init__(self, pts):
        rows = []
        for p in pts:
            r = {"series": p.get("series", ""), "x": p.get("x"), "y": p.get("y")}
            for k, v in (p.get("extra") or {}).items():
                r[k] = v
            rows.append(r)
        super().__init__(rows)
        for k in ("series", "x", "y"):
            if k not in self.columns:
                self.columns[k] = np.array([], dtype=object if k == "series" else np.float64)

    def by_series(self):
        """{series: (x, y)} as float64 arrays, in the order of the points."""
        out = {}
        s = self.columns["series"]
        for name in dict.fromkeys(s.tolist()):
            m = s == name
            out[name] = (self.columns["x"][m], self.columns["y"][m])
        return out
