// fp8lab's charts: one function turns an experiment's declared chart (the
// schema's "chart": axes with quantity and unit, declared scales, series
// styles, reference lines, published marks) and the points of one or more
// runs into an ECharts option, a legend and notes. Nothing depends on the
// order points arrived in or on where they were computed, so the same
// points give the same chart in a server run, a browser run and a report.
//
// Rules a reader can rely on:
//   - colour = family (at most 10 colours, Okabe-Ito + Tol: colour-blind safe),
//     dash and marker = variant, large diamonds without a line = measured hardware;
//   - a value a log axis cannot show (exact 0, a negative) and a value that
//     is not finite are drawn at the axis floor as ▽ and counted in the notes;
//   - ticks across decades read as powers (10⁻⁸), powers of two as 4k, 128k;
//   - points carrying a standard error get 95 % bars (±1.96 se), points
//     carrying an interval (lo, hi) get that interval, its method named;
//   - any declared point quantity can go on either axis (view.y, view.x);
//     points that lack it are counted in the notes, never dropped silently.
'use strict';

(function () {
  const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#3f3f3f', '#B8A000', '#882255', '#44AA99'];
  const DASHES = ['solid', [9, 4], [2, 3], [10, 3, 2, 3], [16, 5], [5, 2, 5, 2, 14, 2], [1, 5], [6, 2]];
  const SYMBOLS = ['circle', 'triangle', 'rect', 'roundRect', 'pin', 'arrow', 'emptyCircle', 'emptyTriangle'];
  const MEASURED = ['diamond', 'emptyDiamond', 'triangle', 'emptyTriangle'];
  const STAR = 'path://M0,-10L2.9,-4L9.5,-3.1L4.7,1.5L5.9,8.1L0,5L-5.9,8.1L-4.7,1.5L-9.5,-3.1L-2.9,-4Z';
  const FLOOR = 'path://M-6,-5L6,-5L0,6Z'; // ▽

  const SUP = { '-': '⁻', 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹' };
  const sup = (n) => String(n).split('').map((c) => SUP[c] || c).join('');

  function matchSeries(pattern, name) {
    const star = pattern.indexOf('*');
    if (star < 0) return pattern === name;
    const prefix = pattern.slice(0, star);
    if (!name.startsWith(prefix)) return false;
    const rest = pattern.slice(star + 1), tail = name.slice(prefix.length);
    for (let i = 0; i <= tail.length; i++) if (matchSeries(rest, tail.slice(i))) return true;
    return false;
  }

  // A chart for an experiment the lab does not know: labelled as such.
  function genericChart() {
    return { generic: true, x: { quantity: 'x', unit: 'unknown: the experiment is not registered in this lab' }, y: { quantity: 'y', unit: 'unknown' }, styles: [] };
  }

  // styler resolves series names to looks: families take their colour
  // from the order the declaration names them, and within a family the
  // variants their dash and marker (measured ones: filled, then hollow
  // diamonds); undeclared series follow, sorted by name.
  function styler(decl, names) {
    const families = [], variants = new Map();
    const vkey = (s) => s.family + '\u0000' + (s.measured ? 'm' : 'l');
    for (const s of decl.styles || []) {
      if (!families.includes(s.family)) families.push(s.family);
      if (!variants.has(vkey(s))) variants.set(vkey(s), []);
      const vs = variants.get(vkey(s));
      if (!vs.includes(s.variant || '')) vs.push(s.variant || '');
    }
    const look = new Map();
    const extra = [];
    for (const n of names) {
      const i = (decl.styles || []).findIndex((s) => matchSeries(s.match, n));
      if (i >= 0) look.set(n, Object.assign({ index: i }, decl.styles[i], { variant: decl.styles[i].variant || '' }));
      else extra.push(n);
    }
    extra.sort();
    for (const n of extra) {
      if (!families.includes(n)) families.push(n);
      look.set(n, { index: 1000 + extra.indexOf(n), family: n, variant: '', undeclared: true });
    }
    for (const l of look.values()) {
      const f = families.indexOf(l.family), v = Math.max(0, (variants.get(vkey(l)) || []).indexOf(l.variant));
      l.color = PALETTE[f % PALETTE.length];
      l.recycled = f >= PALETTE.length;
      l.dash = l.fit ? [7, 4] : DASHES[v % DASHES.length];
      l.symbol = l.measured ? MEASURED[v % MEASURED.length] : l.fit ? 'none' : SYMBOLS[v % SYMBOLS.length];
      l.familyIndex = f;
    }
    return { look, families };
  }

  const hollow = (sym) => (sym.startsWith('empty') ? sym : 'empty' + sym[0].toUpperCase() + sym.slice(1));

  function niceFloor(v, base) {
    const b = base || 10;
    return Math.pow(b, Math.floor(Math.log(v) / Math.log(b) + 1e-9) - (b === 2 ? 1 : 0));
  }

  // tickFormatter writes one axis's ticks in one form: powers (10⁻⁸) on
  // log axes, 4k … 128k for powers of two, and on a linear axis thousands
  // as k (M for millions) or small values with one common exponent.
  function tickFormatter(axis, maxAbs, lowest) {
    if (axis.log && (axis.base || 10) === 2) return (v) => powerOfTwo(v);
    // One style per axis: powers for every tick when the axis reaches
    // below 10⁻³ or above 10⁵ (10⁻⁴ beside 0.01 reads as two scales).
    if (axis.log && ((lowest > 0 && lowest < 1e-3) || maxAbs >= 1e5)) return (v) => fmtPower(v);
    if (axis.log) return (v) => fmtTick(v);
    if (maxAbs >= 1e7) return (v) => (v === 0 ? '0' : +(v / 1e6).toPrecision(6) + 'M');
    if (maxAbs >= 1e4) return (v) => (v === 0 ? '0' : +(v / 1e3).toPrecision(6) + 'k');
    if (maxAbs > 0 && maxAbs < 1e-2) {
      const e = Math.floor(Math.log10(maxAbs) + 1e-9);
      return (v) => (v === 0 ? '0' : +(v / Math.pow(10, e)).toPrecision(4) + '×10' + sup(e));
    }
    return (v) => String(+v.toPrecision(6));
  }

  function powerOfTwo(v) {
    if (v >= 1 << 30 && v % (1 << 30) === 0) return v / (1 << 30) + 'G';
    if (v >= 1 << 20 && v % (1 << 20) === 0) return v / (1 << 20) + 'M';
    if (v >= 1024 && v % 1024 === 0) return v / 1024 + 'k';
    return fmtTick(v);
  }

  function fmtTick(v) {
    if (v === 0) return '0';
    const a = Math.abs(v);
    if (a >= 1e5 || a < 1e-3) {
      const e = Math.floor(Math.log10(a) + 1e-9);
      const m = v / Math.pow(10, e);
      if (Math.abs(Math.abs(m) - 1) < 1e-9) return (v < 0 ? '−' : '') + '10' + sup(e);
      return +m.toPrecision(3) + '×10' + sup(e);
    }
    return String(+v.toPrecision(6));
  }

  // fmtPower writes v as 10ᵉ, or m×10ᵉ when it is not a power of ten.
  function fmtPower(v) {
    if (v === 0) return '0';
    const e = Math.floor(Math.log10(Math.abs(v)) + 1e-9);
    const m = v / Math.pow(10, e);
    if (Math.abs(Math.abs(m) - 1) < 1e-9) return (v < 0 ? '−' : '') + '10' + sup(e);
    return +m.toPrecision(3) + '×10' + sup(e);
  }

  function fmtValue(v) {
    if (v === null || v === undefined || !isFinite(v)) return 'not finite (NaN or ±∞)';
    if (v === 0) return '0 (exact)';
    const a = Math.abs(v);
    return (a >= 1e5 || a < 1e-3) ? v.toExponential(4) : String(+v.toPrecision(6));
  }

  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

  function axisOption(axis, maxAbs, lowest, extra) {
    const o = Object.assign({
      type: axis.log ? 'log' : 'value',
      name: axis.quantity + ' (' + axis.unit + ')',
      nameLocation: 'middle',
      nameTextStyle: { fontSize: 13, color: '#1d2330' },
      // The other axis crosses at the edge, never at 0 (or 1 on a log
      // axis, which put the y axis mid-chart over values below 1).
      axisLine: { onZero: false },
      axisLabel: { formatter: tickFormatter(axis, maxAbs, lowest), hideOverlap: true },
      splitLine: { lineStyle: { color: '#eceff3' } },
      scale: !axis.log && !axis.zero, // zero: the axis always shows 0 (differences)
    }, extra);
    if (axis.log) o.logBase = axis.base || 10;
    if (axis.log && (axis.base || 10) === 2) { o.splitNumber = 24; o.minInterval = 1; }
    if (axis.min !== undefined && axis.min !== null) o.min = axis.min;
    if (axis.max !== undefined && axis.max !== null) o.max = axis.max;
    return o;
  }

  // isTrials reports whether series name holds per-trial values.
  const isTrials = (decl, name) => !!(decl && decl.trials) && name.endsWith(decl.trials);

  function withoutTrials(decl, series) {
    if (!decl || !decl.trials) return series;
    return new Map([...series].filter(([n]) => !isTrials(decl, n)));
  }

  // trialsOf returns the per-trial values of a run's series: series →
  // x → [{trial, y, extra}] in trial order.
  function trialsOf(decl, series) {
    const out = new Map();
    if (!decl || !decl.trials) return out;
    for (const [n, pts] of series) {
      if (!isTrials(decl, n)) continue;
      const of = n.slice(0, n.length - decl.trials.length);
      const byX = new Map();
      for (const p of pts) {
        if (!byX.has(p[0])) byX.set(p[0], []);
        byX.get(p[0]).push({ trial: p[3] ? p[3].trial : undefined, y: p[1], extra: p[3] || {} });
      }
      for (const l of byX.values()) l.sort((a, b) => a.trial - b.trial);
      out.set(of, byX);
    }
    return out;
  }

  // t975 is Student's t(0.975, df): exact table to 30, then a close
  // expansion (for the paired intervals).
  function t975(df) {
    const T = [NaN, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];
    if (df <= 30) return T[df];
    const z = 1.959964;
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df * df);
  }

  // buildPaired returns the chart declaration and the run of the paired
  // differences of a field between two runs on the same seeds: per series
  // and x, the mean over the trials both runs hold of (b − a), with its 95 %
  // t interval; pairs counts them. Trials pair by index, which is the same
  // random stream when the seeds are the same.
  function buildPaired(decl, a, b, field) {
    const f = fields(decl).find((x) => x.key === (field || 'y')) || fields(decl)[0];
    const ta = trialsOf(decl, a.series), tb = trialsOf(decl, b.series);
    const series = new Map();
    let pairs = 0, missing = 0;
    // Series pair by name; one the other run lacks pairs with the only
    // series of the other run under the same declared style that has no
    // partner of its own (every64 ↔ every256 of "every* (kBlockN)").
    const styleOf = (n) => (decl.styles || []).findIndex((s) => matchSeries(s.match, n));
    const partner = new Map();
    for (const na of ta.keys()) {
      if (tb.has(na)) { partner.set(na, [na, na]); continue; }
      const cands = [...tb.keys()].filter((nb) => !ta.has(nb) && styleOf(nb) >= 0 && styleOf(nb) === styleOf(na));
      const rivals = [...ta.keys()].filter((n) => !tb.has(n) && styleOf(n) === styleOf(na));
      if (cands.length === 1 && rivals.length === 1) partner.set(na, [cands[0], na + ' ↔ ' + cands[0]]);
    }
    for (const [name, byX] of ta) {
      if (!partner.has(name)) continue;
      const [nb, label] = partner.get(name);
      const other = tb.get(nb);
      const pts = [];
      for (const [x, list] of byX) {
        const olist = other.get(x);
        if (!olist) continue;
        const ob = new Map(olist.map((p) => [p.trial, p]));
        const d = [];
        for (const p of list) {
          const q = ob.get(p.trial);
          const va = f.key === 'y' ? p.y : p.extra[f.key], vb = q && (f.key === 'y' ? q.y : q.extra[f.key]);
          if (q === undefined || va === undefined || vb === undefined || !isFinite(va) || !isFinite(vb)) { missing++; continue; }
          d.push(vb - va);
        }
        if (!d.length) continue;
        pairs += d.length;
        const n = d.length, mean = d.reduce((s, v) => s + v, 0) / n;
        const sd = n > 1 ? Math.sqrt(d.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1)) : NaN;
        const h = n > 1 ? t975(n - 1) * sd / Math.sqrt(n) : NaN;
        pts.push([x, mean, null, { lo: mean - h, hi: mean + h, n }]);
      }
      if (pts.length) series.set(label, pts);
    }
    const d = Object.assign({}, decl, {
      y: { quantity: `difference of ${f.axis.quantity}, ${b.label} − ${a.label}, mean over paired trials`, unit: f.axis.unit, zero: true },
      lo: 'lo', hi: 'hi', method: '95 % paired Student-t interval over the trials both runs hold (same seeds: trial i of each run draws the same inputs)',
      error: undefined, y2: undefined, refs: [{ axis: 'y', value: 0, label: 'no difference' }], marks: [], fields: [], trials: undefined,
    });
    return { decl: d, run: { label: null, series, summary: {} }, pairs, missing };
  }

  // buildDistribution returns {option, notes} for the trials of one point
  // (series, x) of one or more runs ({label, series}): a histogram (kind
  // 'hist'), the empirical CDF ('cdf') or the values against the trial
  // index ('scatter'), of the field (its axis: quantity, unit, log).
  function buildDistribution(decl, runs, name, x, field, kind) {
    const f = fields(decl).find((q) => q.key === (field || 'y')) || fields(decl)[0];
    const notes = [];
    const sets = [];
    for (const r of runs) {
      const byX = trialsOf(decl, r.series).get(name);
      const list = byX && byX.get(x);
      if (!list) { notes.push({ kind: 'missing', text: `${r.label || 'the run'} holds no trials of ${name} at x = ${fmtValue(x)}` }); continue; }
      const vals = list.map((p) => ({ trial: p.trial, v: f.key === 'y' ? p.y : p.extra[f.key] }));
      const bad = vals.filter((p) => p.v === undefined || p.v === null || !isFinite(p.v) || (f.axis.log && p.v <= 0));
      if (bad.length) notes.push({ kind: 'floor', text: `${r.label || 'the run'}: ${bad.length} of ${vals.length} trials not finite${f.axis.log ? ' or ≤ 0 on the log axis' : ''}: not drawn, counted here` });
      sets.push({ label: r.label, vals: vals.filter((p) => !bad.includes(p)) });
    }
    const log = !!f.axis.log;
    const all = sets.flatMap((s) => s.vals.map((p) => p.v));
    const t = log ? Math.log10 : (v) => v, ut = log ? (v) => Math.pow(10, v) : (v) => v;
    const lo = Math.min(...all.map(t)), hi = Math.max(...all.map(t));
    const axisName = f.axis.quantity + ' (' + f.axis.unit + ')';
    const series = [];
    let xAxis, yAxis;
    const maxAbs = all.reduce((m, v) => Math.max(m, Math.abs(v)), 0), lowest = all.reduce((m, v) => Math.min(m, v), Infinity);
    if (kind === 'scatter') {
      xAxis = { type: 'value', name: 'trial', nameLocation: 'middle', nameGap: 28, minInterval: 1, axisLine: { onZero: false } };
      yAxis = axisOption(f.axis, maxAbs, lowest, { nameLocation: 'end', nameGap: 12, nameTextStyle: { fontSize: 13, align: 'left' } });
      sets.forEach((s, i) => series.push({ type: 'scatter', name: s.label || name, data: s.vals.map((p) => [p.trial, p.v]), color: PALETTE[i % PALETTE.length], symbolSize: 6 }));
    } else if (kind === 'cdf') {
      xAxis = axisOption(f.axis, maxAbs, lowest, { nameGap: 30 });
      yAxis = { type: 'value', min: 0, max: 1, name: 'fraction of trials ≤ x (empirical CDF)', nameLocation: 'end', nameTextStyle: { align: 'left' }, axisLine: { onZero: false } };
      sets.forEach((s, i) => {
        const v = s.vals.map((p) => p.v).sort((a, b) => a - b);
        const data = [];
        v.forEach((x0, k) => { data.push([x0, k / v.length], [x0, (k + 1) / v.length]); });
        series.push({ type: 'line', name: s.label || name, data, color: PALETTE[i % PALETTE.length], showSymbol: false, step: false });
      });
    } else {
      const bins = Math.max(5, Math.min(40, Math.ceil(Math.sqrt(all.length))));
      const w = hi > lo ? (hi - lo) / bins : 1;
      xAxis = { type: 'category', name: axisName + (log ? ', bins equal on the log scale' : ''), nameLocation: 'middle', nameGap: 30,
        data: Array.from({ length: bins }, (_, k) => fmtTick(ut(lo + (k + 0.5) * w))) };
      yAxis = { type: 'value', name: 'trials', nameLocation: 'end', minInterval: 1, nameTextStyle: { align: 'left' } };
      sets.forEach((s, i) => {
        const c = new Array(bins).fill(0);
        for (const p of s.vals) c[Math.min(bins - 1, Math.max(0, Math.floor((t(p.v) - lo) / w)))]++;
        series.push({ type: 'bar', name: s.label || name, data: c, color: PALETTE[i % PALETTE.length], barGap: '5%' });
      });
    }
    const n = sets.map((s) => `${s.label ? s.label + ': ' : ''}${s.vals.length} trials`).join(', ');
    notes.push({ kind: 'dist', text: `${name} at x = ${fmtValue(x)} (${decl.x.quantity}, ${decl.x.unit}): ${n}; an experiment keeps at most the first 256 trials of a point` });
    const option = {
      animation: false, tooltip: { trigger: 'item', confine: true },
      legend: sets.length > 1 ? { top: 0 } : { show: false },
      grid: { top: 40, left: 16, right: 28, bottom: 40, containLabel: true },
      xAxis, yAxis, series,
    };
    return { option, notes, axis: f.axis };
  }

  // fields returns the quantities a point of the experiment carries, for
  // an axis selector: {key, axis, error, lo, hi, label}, the declared y
  // and x first ('y', 'x'), then every declared field.
  function fields(decl) {
    decl = decl || genericChart();
    const out = [{ key: 'y', axis: decl.y, error: decl.error, lo: decl.lo, hi: decl.hi, method: decl.method, default: 'y' },
      { key: 'x', axis: decl.x, default: 'x' }];
    for (const f of decl.fields || []) {
      const i = out.findIndex((o) => o.key === f.key);
      const o = Object.assign({}, f, { method: f.key === 'y' ? decl.method : f.method });
      if (i >= 0) out[i] = Object.assign(o, { default: out[i].default }); else out.push(o);
    }
    for (const o of out) o.label = o.axis.quantity + ' (' + o.axis.unit + ')' + (o.key === 'x' || o.key === 'y' ? '' : ' [' + o.key + ']');
    return out;
  }

  // summaryAxis returns the declared axis of a summary key (the first
  // pattern that matches), or null.
  function summaryAxis(decl, key) {
    for (const f of (decl && decl.summary) || []) if (matchSeries(f.match, key)) return f.axis;
    return null;
  }

  // derive returns the chart declaration and the runs for the quantities
  // view.y and view.x (field keys; default 'y' and 'x'): the axes are the
  // fields', the intervals the fields' own, the right-hand axis, the
  // references and the published marks kept only where they are of the
  // quantity shown. missing counts the points that lack a quantity.
  function derive(decl, runs, view) {
    const yk = (view && view.y) || 'y', xk = (view && view.x) || 'x';
    // A mark with a field is of that field's quantity: drawn only when it
    // is on y (over the chart's own x); a mark without one is the default y's.
    if (yk === 'y' && xk === 'x') return { decl: Object.assign({}, decl, { marks: (decl.marks || []).filter((m) => !m.field) }), runs, missing: [] };
    const fs = fields(decl);
    const fy = fs.find((f) => f.key === yk), fx = fs.find((f) => f.key === xk);
    if (!fy || !fx) throw new Error(`no declared quantity ${!fy ? yk : xk} in this chart`);
    const d = Object.assign({}, decl, { y: fy.axis, x: fx.axis, error: fy.error, lo: fy.lo, hi: fy.hi, method: fy.method, scatter: xk !== 'x' });
    if (yk !== 'y') delete d.y2;
    d.marks = xk === 'x' ? (decl.marks || []).filter((m) => (m.field || 'y') === yk) : [];
    d.refs = (decl.refs || []).filter((r) => (r.axis === 'x' ? xk === 'x' : yk === 'y'));
    const val = (p, k) => (k === 'x' ? p[0] : k === 'y' ? p[1] : p[3] ? p[3][k] : undefined);
    const missing = new Map(); // series → points without the quantity
    const out = runs.map((r) => {
      const series = new Map();
      for (const [n, pts] of r.series) {
        const kept = [];
        for (const p of pts) {
          const x = val(p, xk), y = val(p, yk);
          if (x === undefined || y === undefined) { missing.set(n, (missing.get(n) || 0) + 1); continue; }
          kept.push([x, y, null, p[3]]);
        }
        if (kept.length) series.set(n, kept);
      }
      return Object.assign({}, r, { series });
    });
    return { decl: d, runs: out, missing: [...missing].map(([n, c]) => ({ series: n, count: c, key: [yk, xk].filter((k) => k !== 'x' && k !== 'y').join(', ') })) };
  }

  // build returns {option, legend, notes, drawn} for runs: a list of
  // {label, series: Map(name → [[x, y, se], …]), summary}; label is null
  // for a single run. hidden is the set of legend keys switched off.
  // view picks the quantities on the axes ({y, x}: field keys, see
  // fields); omitted, the declared y and x.
  function build(decl, runs, hidden, view) {
    decl = decl || genericChart();
    hidden = hidden || new Set();
    // Per-trial values (decl.trials) are drawn apart (buildDistribution,
    // buildPaired), not as lines.
    runs = runs.map((r) => Object.assign({}, r, { series: withoutTrials(decl, r.series) }));
    const derived = derive(decl, runs, view);
    decl = derived.decl;
    runs = derived.runs;
    const names = [...new Set(runs.flatMap((r) => [...r.series.keys()]))];
    const { look, families } = styler(decl, names);
    const multi = runs.length > 1;
    const order = (a, b) => look.get(a).index - look.get(b).index || (a < b ? -1 : a > b ? 1 : 0);
    names.sort(order);

    // What each axis cannot show, and the floor it is drawn at.
    const axes = { x: decl.x, y: decl.y, y2: decl.y2 };
    // A base-2 log x is drawn as a linear axis of log2(x) with a tick at
    // every power of two (ECharts' log axis would show two ticks over
    // 1k … 1M); labels and tooltips show x itself.
    const log2x = decl.x.log && decl.x.base === 2;
    const tx = log2x ? Math.log2 : (v) => v;
    const ux = log2x ? (v) => Math.pow(2, v) : (v) => v;
    const lowest = { x: Infinity, y: Infinity, y2: Infinity };
    const highest = { x: -Infinity, y: -Infinity, y2: -Infinity };
    const maxAbs = { x: 0, y: 0, y2: 0 };
    const offScale = (axis, v) => v === null || v === undefined || !isFinite(v) || (axis.log && v <= 0);
    const yOf = (n) => (look.get(n).axis === 2 && decl.y2 ? 'y2' : 'y');
    for (const r of runs) for (const [n, pts] of r.series) for (const p of pts) {
      if (!offScale(decl.x, p[0])) { lowest.x = Math.min(lowest.x, p[0]); highest.x = Math.max(highest.x, p[0]); maxAbs.x = Math.max(maxAbs.x, Math.abs(p[0])); }
      const ya = yOf(n);
      if (!offScale(axes[ya], p[1])) { lowest[ya] = Math.min(lowest[ya], p[1]); highest[ya] = Math.max(highest[ya], p[1]); maxAbs[ya] = Math.max(maxAbs[ya], Math.abs(p[1])); }
    }
    const floor = {};
    for (const k of ['x', 'y', 'y2']) {
      const a = axes[k];
      if (!a) continue;
      if (a.log) floor[k] = isFinite(lowest[k]) ? niceFloor(lowest[k], a.base) : 1;
      else floor[k] = a.min !== undefined && a.min !== null ? a.min : (isFinite(lowest[k]) ? Math.min(0, lowest[k]) : 0);
    }

    const series = [], legend = [], offNotes = [];
    let offCount = { zero: 0, neg: 0, nonfinite: 0 };
    const floorPts = [];
    runs.forEach((r, ri) => {
      for (const n of names) {
        const pts = r.series.get(n);
        if (!pts) continue;
        const l = look.get(n);
        const key = (multi ? r.label + ' ' : '') + n;
        legend.push({ key, name: n, run: multi ? r.label : null, family: l.family, variant: l.variant, color: l.color, dash: l.dash,
          symbol: multi && ri > 0 ? hollow(l.symbol) : l.symbol, width: multi ? (ri === 0 ? 5 : 1.8) : 2.2, opacity: multi && ri === 0 ? 0.45 : 1,
          measured: !!l.measured, undeclared: !!l.undeclared, points: pts.length, right: yOf(n) === 'y2' });
        if (hidden.has(key) || hidden.has('family:' + l.family) || (multi && hidden.has('run:' + r.label))) continue;
        const ya = yOf(n);
        const data = [], bars = [];
        for (const p of pts) {
          const xo = offScale(decl.x, p[0]), yo = offScale(axes[ya], p[1]);
          if (xo || yo) {
            const v = yo ? p[1] : p[0];
            if (v === null || v === undefined || !isFinite(v)) offCount.nonfinite++; else if (v === 0) offCount.zero++; else offCount.neg++;
            if (offNotes.length < 6) offNotes.push(`${key} at x = ${fmtValue(p[0])}: y = ${fmtValue(p[1])}`);
            floorPts.push({ value: [tx(xo ? floor.x : p[0]), yo ? floor[ya] : p[1]], raw: p, series: key, yAxisIndex: ya === 'y2' ? 1 : 0, color: l.color });
            continue;
          }
          data.push([tx(p[0]), p[1]]);
          // The interval: the points' own bounds (lo, hi) where the chart
          // names them, else ±1.96 standard errors.
          let lo, hi;
          const ex = p[3] || {};
          if (decl.lo && decl.hi) {
            lo = ex[decl.lo]; hi = ex[decl.hi];
          } else {
            const se = decl.error ? (p[3] ? ex[decl.error] : p[2]) : null;
            if (se !== undefined && se !== null && isFinite(se) && se > 0) { lo = p[1] - 1.96 * se; hi = p[1] + 1.96 * se; }
          }
          if (lo !== undefined && lo !== null && hi !== undefined && hi !== null && isFinite(lo) && isFinite(hi) && hi > lo) {
            // Clipped to a declared range (an accuracy stays in [0, 1]).
            const am = axes[ya];
            bars.push([tx(p[0]), am.min !== undefined && am.min !== null ? Math.max(lo, am.min) : lo, am.max !== undefined && am.max !== null ? Math.min(hi, am.max) : hi]);
          }
        }
        data.sort((a, b) => a[0] - b[0]);
        const yAxisIndex = ya === 'y2' ? 1 : 0;
        const base = multi && ri > 0;
        series.push({
          id: key, name: key, type: l.measured || l.points || decl.scatter ? 'scatter' : 'line', data, yAxisIndex,
          color: l.color,
          symbol: base ? hollow(l.symbol) : l.symbol,
          symbolSize: l.measured ? 13 : (base ? 10 : 7),
          showSymbol: !l.fit,
          z: l.measured ? 5 : 3,
          lineStyle: { type: l.dash, width: l.fit ? 1.6 : multi ? (ri === 0 ? 5 : 1.8) : 2, opacity: multi && ri === 0 ? 0.45 : 1 },
          itemStyle: l.measured ? ((base || l.symbol.startsWith('empty')) ? { borderColor: l.color, borderWidth: 2.5 } : { borderColor: '#111', borderWidth: 1 }) : (multi && ri === 0 ? { opacity: 0.6 } : undefined),
          emphasis: { focus: 'series' },
          animation: false,
          large: data.length > 5000,
        });
        if (bars.length) {
          series.push({
            id: key + ' (95 %)', name: key + ' (95 %)', type: 'custom', yAxisIndex, data: bars, z: 2, silent: true,
            renderItem: (params, api) => {
              const x = api.value(0), lo = api.value(1), hi = api.value(2);
              const yl = axes[ya].log && lo <= 0 ? floor[ya] : lo;
              const a = api.coord([x, hi]), b = api.coord([x, yl]);
              const w = 4, st = { stroke: l.color, lineWidth: 1.3 };
              return { type: 'group', children: [
                { type: 'line', shape: { x1: a[0], y1: a[1], x2: b[0], y2: b[1] }, style: st },
                { type: 'line', shape: { x1: a[0] - w, y1: a[1], x2: a[0] + w, y2: a[1] }, style: st },
                { type: 'line', shape: { x1: b[0] - w, y1: b[1], x2: b[0] + w, y2: b[1] }, style: st },
              ] };
            },
            encode: { x: 0, y: [1, 2] },
            animation: false,
          });
        }
      }
    });

    const notes = [];
    const offTotal = offCount.zero + offCount.neg + offCount.nonfinite;
    if (offTotal > 0) {
      for (const yi of [0, 1]) {
        const pts = floorPts.filter((p) => p.yAxisIndex === yi);
        if (!pts.length) continue;
        series.push({
          id: 'floor' + yi, name: 'off-scale values (▽ at the axis floor)', type: 'scatter', yAxisIndex: yi, z: 6,
          symbol: FLOOR, symbolSize: 11,
          data: pts.map((p) => ({ value: p.value, raw: p.raw, series: p.series, itemStyle: { color: '#fff', borderColor: p.color, borderWidth: 2 } })),
          animation: false,
        });
      }
      const parts = [];
      if (offCount.zero) parts.push(`${offCount.zero} exact zero${offCount.zero > 1 ? 's' : ''}`);
      if (offCount.neg) parts.push(`${offCount.neg} negative value${offCount.neg > 1 ? 's' : ''} on a log axis`);
      if (offCount.nonfinite) parts.push(`${offCount.nonfinite} non-finite value${offCount.nonfinite > 1 ? 's' : ''} (NaN or ±∞)`);
      notes.push({ kind: 'floor', text: `${parts.join(', ')}: drawn as ▽ at the axis floor (${fmtTick(floor.y)}), not dropped. ` + offNotes.join('; ') + (offTotal > offNotes.length ? '; …' : '') });
    }
    const clipped = decl.y.min !== undefined || decl.y.max !== undefined ? ', clipped to the axis range' : '';
    if (series.some((s) => s.type === 'custom')) {
      if (decl.lo && decl.hi) notes.push({ kind: 'error', text: `bars: ${decl.method || 'intervals'} (the points' "${decl.lo}", "${decl.hi}")${clipped}` });
      else if (decl.error) notes.push({ kind: 'error', text: 'bars: 95 % intervals, ±1.96 standard errors (the points\' "' + decl.error + '")' + clipped });
    }
    if (derived.missing.length) {
      const n = derived.missing.reduce((a, m) => a + m.count, 0);
      notes.push({ kind: 'missing', text: `${n} point${n > 1 ? 's' : ''} without ${derived.missing[0].key}, not drawn: ` + derived.missing.slice(0, 8).map((m) => `${m.series} (${m.count})`).join(', ') + (derived.missing.length > 8 ? `, and ${derived.missing.length - 8} more series` : '') });
    }

    // Reference lines and published marks.
    const summary = runs.length ? runs[0].summary || {} : {};
    const onAxisT = (k) => { const a = axes[k]; return a && a.log ? (v) => Math.log10(v) : (v) => v; };
    const refLines = [];
    // Labels of lines on the same axis at three heights (end, middle,
    // start), so that two references close together stay readable.
    const LABEL_AT = ['insideEndTop', 'insideMiddleTop', 'insideStartTop'];
    const perAxis = { x: 0, y: 0 };
    for (const ref of decl.refs || []) {
      const v = ref.summary ? summary[ref.summary] : ref.value;
      if (v === undefined || v === null || !isFinite(v)) { notes.push({ kind: 'ref', text: `reference "${ref.label}": the run has no summary value "${ref.summary}" (yet)` }); continue; }
      const at = LABEL_AT[perAxis[ref.axis === 'x' ? 'x' : 'y']++ % LABEL_AT.length];
      refLines.push({ [ref.axis === 'x' ? 'xAxis' : 'yAxis']: ref.axis === 'x' ? tx(v) : v, name: ref.label, label: { formatter: `${ref.label} = ${fmtTick(v)}`, position: at, color: '#444' } });
    }
    // References within 2 % of the axis span of each other share one label
    // (two labels on almost the same line cannot both be read).
    for (const ax of ['xAxis', 'yAxis']) {
      const k = ax === 'xAxis' ? 'x' : 'y';
      // Reference values are stored as drawn (x through tx: log2 of a
      // base-2 axis); t maps them to screen-linear units.
      const t = ax === 'xAxis' ? (log2x || !decl.x.log ? (v) => v : (v) => Math.log10(v)) : onAxisT(k);
      const at = ax === 'xAxis' ? tx : (v) => v;
      const span = isFinite(lowest[k]) && highest[k] > lowest[k] ? t(at(highest[k])) - t(at(lowest[k])) : 0;
      const lines = refLines.filter((r) => r[ax] !== undefined).sort((a, b) => a[ax] - b[ax]);
      for (let i = 0; i < lines.length; i++) {
        const head = lines[i];
        while (i + 1 < lines.length && span > 0 && Math.abs(t(lines[i + 1][ax]) - t(head[ax])) <= 0.02 * span) {
          i++;
          head.label.formatter += '; ' + lines[i].label.formatter;
          head.label.position = 'insideMiddleTop'; // the longer text centred on the line
          head.label.fontSize = 11;
          lines[i].label = { show: false };
        }
      }
    }
    if (refLines.length && !hidden.has('refs')) {
      series.push({ id: 'refs', name: 'reference lines', type: 'line', data: [], markLine: { symbol: 'none', silent: true, lineStyle: { type: [6, 4], color: '#555', width: 1.2 }, data: refLines }, animation: false });
    }
    if (refLines.length) legend.push({ key: 'refs', name: 'reference lines: ' + (decl.refs || []).map((r) => r.label).join(', '), family: 'references', color: '#555', dash: [6, 4], symbol: 'none' });
    const marks = decl.marks || [];
    if (marks.length) {
      legend.push({ key: 'marks', name: '★ published figures', family: 'references', color: '#555', symbol: STAR, measured: false });
      if (!hidden.has('marks')) {
        series.push({
          id: 'marks', name: 'published figures', type: 'scatter', z: 7, symbol: STAR, symbolSize: 15,
          data: marks.map((m) => ({ value: [tx(m.x), m.y], label: m.label, itemStyle: { color: '#fff', borderColor: (look.get(m.series) || { color: '#555' }).color, borderWidth: 2 } })),
          animation: false,
        });
      }
      notes.push({ kind: 'marks', text: '★ ' + marks.map((m) => m.label).join('; ') });
    }
    // The experiment's answer in numbers: the summary values it shows.
    if (!multi && (decl.show || []).length) {
      const parts = [];
      for (const k of decl.show) {
        const v = summary[k];
        if (v === undefined) continue;
        const a = summaryAxis(decl, k);
        parts.push(`${a ? a.quantity : k} [${k}] = ${fmtValue(v)}${a ? ' ' + a.unit : ''}`);
      }
      if (parts.length) notes.unshift({ kind: 'show', text: parts.join('; ') });
    }
    if (families.length > PALETTE.length) notes.push({ kind: 'colours', text: `${families.length} families for ${PALETTE.length} colours: families beyond the tenth repeat a colour (the experiment declares too few styles)` });
    if (decl.generic) notes.push({ kind: 'generic', text: 'this lab does not know the experiment: its axes and series are not declared' });

    // Coinciding series: one hides the other. Identical series are
    // grouped into classes (a = b = c); series drawn within NEAR of the
    // axis height of each other at every point (one hides the other on
    // screen, e.g. two curves a few per cent apart on a log axis over seven
    // decades) are named apart.
    const NEAR = 0.01;
    const coincide = [], near = [];
    const onAxis = (k) => { const a = axes[k]; return a && a.log ? (v) => Math.log10(v) : (v) => v; };
    const tolOf = (k) => { const t = onAxis(k); return isFinite(lowest[k]) && highest[k] > lowest[k] ? NEAR * (t(highest[k]) - t(lowest[k])) : 0; };
    const sameAt = (a, b, k, near) => {
      if (!(a.length > 1 && a.length === b.length)) return false;
      const t = onAxis(k), tol = near ? tolOf(k) : 0;
      return a.every((p, i) => p[0] === b[i][0] && (p[1] === b[i][1] || (near && tol > 0 && !offScale(axes[k], p[1]) && !offScale(axes[k], b[i][1]) && Math.abs(t(p[1]) - t(b[i][1])) <= tol)));
    };
    const classes = (keys, get, near) => {
      const out = [], used = new Set();
      for (let i = 0; i < keys.length; i++) {
        if (used.has(keys[i])) continue;
        const cls = [keys[i]];
        for (let j = i + 1; j < keys.length; j++) {
          if (!used.has(keys[j]) && yOf(keys[i]) === yOf(keys[j]) && sameAt(get(keys[i]), get(keys[j]), yOf(keys[i]), near)) { cls.push(keys[j]); used.add(keys[j]); }
        }
        if (cls.length > 1) out.push(cls);
      }
      return out;
    };
    const sortedPts = (pts) => pts.slice().sort((a, b) => a[0] - b[0]);
    for (const r of runs) {
      const keys = [...r.series.keys()].sort(order);
      const got = new Map(keys.map((k) => [k, sortedPts(r.series.get(k))]));
      const same = classes(keys, (k) => got.get(k), false);
      for (const c of same) coincide.push((multi ? r.label + ' ' : '') + c.join(' = '));
      const inSame = new Set(same.flatMap((c) => c.slice(1)));
      for (const c of classes(keys.filter((k) => !inSame.has(k)), (k) => got.get(k), true)) {
        if (c.every((k) => same.some((sc) => sc.includes(k)))) continue;
        near.push((multi ? r.label + ' ' : '') + c.join(' ≈ '));
      }
    }
    if (multi) {
      for (const n of names) {
        const got = runs.map((r) => r.series.get(n));
        if (got.every(Boolean) && got.every((s) => s.length === got[0].length && s.every((p, k) => p[0] === got[0][k][0] && p[1] === got[0][k][1]))) coincide.push(`${n} in ${runs.map((r) => r.label).join(' and ')}`);
      }
    }
    const list = (xs) => xs.slice(0, 10).join('; ') + (xs.length > 10 ? `; and ${xs.length - 10} more` : '');
    if (coincide.length) notes.push({ kind: 'coincide', text: 'identical at every point (one line hides the other): ' + list(coincide) });
    if (near.length) notes.push({ kind: 'near', text: `drawn on top of each other (within ${100 * NEAR} % of the axis height at every point): ` + list(near) });

    const yAxes = [axisOption(decl.y, maxAbs.y, lowest.y, { nameLocation: 'end', nameGap: 12, nameTextStyle: { fontSize: 13, color: '#1d2330', align: 'left' } })];
    if (decl.y2) yAxes.push(axisOption(decl.y2, maxAbs.y2, lowest.y2, { nameLocation: 'end', nameGap: 12, nameTextStyle: { fontSize: 13, color: '#1d2330', align: 'right' }, position: 'right', splitLine: { show: false } }));
    const xOpt = axisOption(decl.x, maxAbs.x, lowest.x, { nameGap: 30 });
    if (log2x) {
      const xOff = floorPts.some((p) => p.value[0] === tx(floor.x) && offScale(decl.x, p.raw[0]));
      const lo = Math.floor(Math.log2(isFinite(lowest.x) ? (xOff ? floor.x : lowest.x) : 1)), hi = Math.ceil(Math.log2(Math.max(maxAbs.x, 2)));
      Object.assign(xOpt, { type: 'value', scale: false, min: lo, max: Math.max(hi, lo + 1), interval: hi - lo > 16 ? 2 : 1, logBase: undefined,
        axisLabel: { formatter: (v) => powerOfTwo(Math.pow(2, v)), hideOverlap: true } });
    }
    const yOpt = yAxes[0];
    if (decl.y.log && floorPts.some((p) => p.yAxisIndex === 0)) yOpt.min = floor.y;
    if (yAxes[1] && decl.y2.log && floorPts.some((p) => p.yAxisIndex === 1)) yAxes[1].min = floor.y2;
    if (decl.x.log && !log2x && floorPts.some((p) => p.value[0] === floor.x)) xOpt.min = floor.x;

    const option = {
      animation: false,
      color: PALETTE,
      tooltip: {
        trigger: 'item', confine: true,
        formatter: (p) => {
          if (p.seriesId === 'marks') return esc(p.data.label) + `<br>x = ${fmtValue(ux(p.value[0]))}, y = ${fmtValue(p.value[1])}`;
          if (p.data && p.data.raw) return `${esc(p.data.series)}<br>x = ${fmtValue(p.data.raw[0])}<br>y = ${fmtValue(p.data.raw[1])}<br><i>off-scale: drawn at the axis floor</i>`;
          if (p.seriesType === 'custom') return '';
          const v = p.value;
          const yq = (p.data && p.componentIndex !== undefined && series[p.seriesIndex] && series[p.seriesIndex].yAxisIndex === 1 ? decl.y2 : decl.y).quantity;
          return `${esc(p.seriesName)}<br>${esc(decl.x.quantity)} = ${fmtValue(ux(v[0]))}<br>${esc(yq)} = ${fmtValue(v[1])}`;
        },
      },
      legend: { show: false },
      grid: { top: 40, left: 16, right: decl.y2 ? 16 : 28, bottom: 40, containLabel: true },
      xAxis: xOpt,
      yAxis: yAxes,
      dataZoom: [{ type: 'inside', filterMode: 'none' }],
      series,
    };
    return { option, legend, notes, families, xScale: log2x ? 'log2' : (decl.x.log ? 'log' : 'linear') };
  }

  // legendSVG draws a legend entry's line and marker.
  function legendSVG(item) {
    const ns = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('width', '34');
    svg.setAttribute('height', '12');
    if (!item.measured && item.symbol !== STAR) {
      const line = document.createElementNS(ns, 'line');
      line.setAttribute('x1', '1'); line.setAttribute('x2', '33'); line.setAttribute('y1', '6'); line.setAttribute('y2', '6');
      line.setAttribute('stroke', item.color); line.setAttribute('stroke-width', String(item.width || 2.2));
      if (item.opacity) line.setAttribute('stroke-opacity', String(item.opacity));
      if (Array.isArray(item.dash)) line.setAttribute('stroke-dasharray', item.dash.join(' '));
      svg.append(line);
    }
    let shape;
    const s = item.symbol || 'circle';
    if (s === 'none') return svg;
    if (/diamond/i.test(s)) { shape = document.createElementNS(ns, 'path'); shape.setAttribute('d', 'M17 0 L23 6 L17 12 L11 6 Z'); shape.setAttribute('stroke', s === 'diamond' ? '#111' : item.color); if (s !== 'diamond') shape.setAttribute('stroke-width', '2'); }
    else if (s === STAR) { shape = document.createElementNS(ns, 'path'); shape.setAttribute('d', 'M17 0 L19 4 L23 5 L20 8 L21 12 L17 10 L13 12 L14 8 L11 5 L15 4 Z'); shape.setAttribute('stroke', item.color); shape.setAttribute('fill', '#fff'); }
    else if (/triangle/i.test(s) || s === 'arrow') { shape = document.createElementNS(ns, 'path'); shape.setAttribute('d', 'M17 1 L22 10 L12 10 Z'); }
    else if (/rect/i.test(s)) { shape = document.createElementNS(ns, 'rect'); shape.setAttribute('x', '13'); shape.setAttribute('y', '2'); shape.setAttribute('width', '8'); shape.setAttribute('height', '8'); }
    else { shape = document.createElementNS(ns, 'circle'); shape.setAttribute('cx', '17'); shape.setAttribute('cy', '6'); shape.setAttribute('r', '4'); }
    if (!shape.getAttribute('fill')) shape.setAttribute('fill', /^empty/.test(s) ? '#fff' : item.color);
    if (!shape.getAttribute('stroke')) shape.setAttribute('stroke', item.color);
    svg.append(shape);
    return svg;
  }

  // renderLegend fills box with the legend grouped by family: a click on an
  // entry toggles that series, a click on a family toggles the whole family,
  // and (comparisons) a click on a run toggles that run.
  function renderLegend(box, built, hidden, onToggle) {
    box.replaceChildren();
    const groups = new Map();
    for (const item of built.legend) {
      if (!groups.has(item.family)) groups.set(item.family, []);
      groups.get(item.family).push(item);
    }
    const runs = [...new Set(built.legend.map((i) => i.run).filter(Boolean))];
    if (runs.length) {
      const row = document.createElement('div');
      row.className = 'lg-runs';
      for (const r of runs) {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'lg-run' + (hidden.has('run:' + r) ? ' off' : '');
        b.dataset.key = 'run:' + r;
        b.textContent = 'run ' + r;
        b.title = 'show or hide every series of run ' + r;
        b.addEventListener('click', () => onToggle('run:' + r));
        row.append(b);
      }
      box.append(row);
    }
    for (const [family, items] of groups) {
      const g = document.createElement('div');
      g.className = 'lg-group';
      const head = document.createElement('button');
      head.type = 'button';
      head.className = 'lg-family' + (hidden.has('family:' + family) ? ' off' : '');
      head.dataset.key = 'family:' + family;
      head.title = 'show or hide the whole family';
      const sw = document.createElement('span');
      sw.className = 'lg-swatch';
      sw.style.background = items[0].color;
      head.append(sw, family);
      if (family !== 'references') head.addEventListener('click', () => onToggle('family:' + family)); else head.disabled = true;
      g.append(head);
      for (const item of items) {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'lg-item' + (hidden.has(item.key) ? ' off' : '');
        b.dataset.key = item.key;
        b.title = [item.variant && 'variant: ' + item.variant, item.measured && 'measured hardware', item.undeclared && 'not declared by the experiment', item.points !== undefined && item.points + ' points'].filter(Boolean).join(' · ');
        b.append(legendSVG(item), document.createTextNode((item.run ? item.run + ' ' : '') + item.name + (item.right ? ' (right axis)' : '')));
        b.addEventListener('click', () => onToggle(item.key));
        g.append(b);
      }
      box.append(g);
    }
  }

  // buildSummary returns {option, notes} for one summary value across
  // runs ({label, summary}): a value per run, with the declared unit.
  function buildSummary(decl, runs, key) {
    const axis = summaryAxis(decl, key) || { quantity: key, unit: 'unit not declared by the experiment' };
    const labels = runs.map((r) => r.label || 'this run');
    const vals = runs.map((r) => (r.summary ? r.summary[key] : undefined));
    const notes = [];
    const absent = labels.filter((l, i) => vals[i] === undefined);
    if (absent.length) notes.push({ kind: 'missing', text: `no summary value ${key} in ${absent.join(', ')}` });
    const bad = labels.filter((l, i) => vals[i] === null || (vals[i] !== undefined && !isFinite(vals[i])));
    if (bad.length) notes.push({ kind: 'floor', text: `${key} is not finite (NaN or ±∞) in ${bad.join(', ')}: not drawn` });
    const ok = vals.filter((v) => v !== undefined && v !== null && isFinite(v));
    const log = axis.log && ok.every((v) => v > 0) && ok.length > 0;
    if (axis.log && !log && ok.length) notes.push({ kind: 'floor', text: `${key} has values ≤ 0: drawn on a linear axis` });
    const maxAbs = ok.reduce((a, v) => Math.max(a, Math.abs(v)), 0), lowest = ok.reduce((a, v) => Math.min(a, v), Infinity);
    const ya = axisOption(Object.assign({}, axis, { log }), maxAbs, lowest, { nameLocation: 'end', nameGap: 12, nameTextStyle: { fontSize: 13, color: '#1d2330', align: 'left' } });
    const option = {
      animation: false,
      tooltip: { trigger: 'item', confine: true, formatter: (p) => `${esc(labels[p.dataIndex])}<br>${esc(key)} = ${fmtValue(vals[p.dataIndex])} ${esc(axis.unit)}` },
      grid: { top: 40, left: 16, right: 28, bottom: 40, containLabel: true },
      xAxis: { type: 'category', data: labels, name: 'run', nameLocation: 'middle', nameGap: 30, axisLine: { onZero: false } },
      yAxis: [ya],
      series: [{ id: 'summary:' + key, name: key, type: 'scatter', symbolSize: 12, color: PALETTE[0],
        data: vals.map((v) => (v !== undefined && v !== null && isFinite(v) && (!log || v > 0) ? v : null)), animation: false }],
    };
    return { option, notes, legend: [], axis };
  }

  window.fp8chart = { build, buildSummary, buildDistribution, buildPaired, trialsOf, isTrials, fields, summaryAxis, renderLegend, matchSeries, fmtTick, fmtValue, PALETTE, genericChart };
})();
