// fp8lab's lab page. Plain JavaScript, no build step; everything it loads
// comes from the lab itself (the CSP of the page says so too).
//
// Routes (location.hash): #exp/NAME, #run/ID, #compare/ID,ID,…
// Runs on the server: POST /api/runs, then the run's WebSocket stream.
// Runs in this browser: the run is registered with POST /api/runs
// (origin "browser", so the server validates the parameters and keeps the
// run), computed by the WebAssembly registry in a Web Worker, its events
// posted to /api/runs/ID/events, and drawn from the same WebSocket stream as
// a server run — one code path for every chart.
'use strict';

const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
};

// lab is the page's state; window.lab exposes it to the end-to-end tests.
const lab = {
  info: null,
  experiments: [],          // schema from the server
  wasm: { worker: null, ready: null, experiments: new Set(), build: null, error: '' },
  exp: null,                // the experiment shown
  view: null,               // the run or comparison shown: {kind, id, ...}
  runs: [],                 // history
  selected: new Set(),      // runs ticked for comparison
  timings: {},              // run id → {click, created, firstPoint} (performance.now())
  chart: null,
  compareChart: null,
  localRuns: new Map(),     // browser runs computing here: id → {events poster}
  typed: {},                // experiment → the form's values when the user left it
};
window.lab = lab;

// ---- API ------------------------------------------------------------------

class APIError extends Error {
  constructor(status, body) {
    super(body && body.error ? body.error : `HTTP ${status}`);
    this.status = status;
    this.param = body && body.param;
    this.body = body;
  }
}

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  if (resp.status === 204) return null;
  let data = null;
  try { data = await resp.json(); } catch (e) { /* not JSON */ }
  if (!resp.ok) throw new APIError(resp.status, data);
  return data;
}

// ---- formatting -----------------------------------------------------------

const fmtNum = (v) => (v === null || v === undefined) ? 'NaN'
  : (Math.abs(v) >= 1e5 || (Math.abs(v) < 1e-3 && v !== 0)) ? v.toExponential(4) : String(+v.toPrecision(6));
const fmtTime = (t) => t ? new Date(t).toLocaleString() : '–';
const escapeHTML = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

function stateBadge(state) { return el('span', { class: 'state ' + state, text: state }); }

// ---- experiments and the parameter form ------------------------------------

function renderExperimentList() {
  const ul = $('exp-list');
  ul.replaceChildren();
  for (const e of lab.experiments) {
    ul.append(el('li', { class: lab.exp && lab.exp.name === e.name ? 'sel' : '', 'data-name': e.name, onclick: () => { location.hash = '#exp/' + e.name; } },
      el('b', { text: e.name }), el('span', { class: 'sum', text: e.summary })));
  }
}

function showExperiment(name) {
  const e = lab.experiments.find((x) => x.name === name);
  if (!e) return false;
  const same = lab.exp === e && $('params').childElementCount > 0;
  if (lab.exp && !same) lab.typed[lab.exp.name] = formValues(); // kept when coming back
  lab.exp = e;
  renderExperimentList();
  $('welcome').hidden = true;
  $('exp-view').hidden = false;
  $('exp-name').textContent = e.name;
  $('exp-summary').textContent = e.summary;
  $('exp-doc').textContent = e.doc;
  if (!same) {
    const form = $('params');
    const typed = lab.typed[e.name];
    form.replaceChildren();
    for (const p of e.params) form.append(...paramRow(p, typed && typed.params[p.name]));
    form.append(...paramRow({ name: 'seed', kind: 'seed', doc: 'seed of the run: the same seed and parameters give the same numbers', default: 1 }, typed && typed.seed));
    $('form-source').textContent = typed ? 'the form holds what you typed last' : 'the form holds the defaults';
    hideFormError();
  }
  updateBrowserButton();
  renderRunList();
  return true;
}

// paramRow returns the label, the input and the help of one parameter,
// the input holding typed (what the user typed last) or the default.
function paramRow(p, typed) {
  const id = 'param-' + p.name;
  let input;
  if (p.kind === 'bool') {
    input = el('input', { type: 'checkbox', id, name: p.name });
    input.checked = typed !== undefined ? !!typed : !!p.default;
  } else if (p.kind === 'choice') {
    input = el('select', { id, name: p.name }, ...p.choices.map((c) => el('option', { value: c, text: c })));
    input.value = typed !== undefined ? typed : p.default;
  } else {
    const def = typed !== undefined ? typed : Array.isArray(p.default) ? p.default.join(',') : String(p.default);
    input = el('input', { type: 'text', id, name: p.name, value: def, inputmode: p.kind === 'ints' ? 'text' : 'decimal', spellcheck: 'false' });
  }
  input.dataset.kind = p.kind;
  input.addEventListener('input', () => input.classList.remove('invalid'));
  let limits = p.limits || '';
  if (p.kind === 'ints') limits = (limits ? limits + ' each, ' : '') + 'comma-separated';
  if (p.kind === 'seed') limits = '[0, 2^64−1]';
  const help = el('span', { class: 'help' },
    el('span', { class: 'limits', text: limits }), limits ? ' — ' : '', p.doc + (p.unit ? ` (${p.unit})` : ''));
  return [el('label', { for: id, text: p.name }), input, help];
}

// formValues returns the parameters as the text typed (the server parses and
// validates them, so its reason reaches the user word for word) and the seed.
function formValues() {
  const params = {};
  let seed = '1';
  for (const input of $('params').querySelectorAll('input, select')) {
    const v = input.type === 'checkbox' ? input.checked : input.value.trim();
    if (input.dataset.kind === 'seed') seed = v;
    else params[input.name] = v;
  }
  return { params, seed };
}

function showFormError(err) {
  const box = $('form-error');
  box.textContent = err.message;
  box.hidden = false;
  if (err.param) {
    const input = $('param-' + err.param);
    if (input) { input.classList.add('invalid'); input.focus(); }
  } else if (/^seed/.test(err.message)) {
    $('param-seed').classList.add('invalid');
  }
}

function hideFormError() {
  $('form-error').hidden = true;
  for (const i of $('params').querySelectorAll('.invalid')) i.classList.remove('invalid');
}

// ---- starting runs -----------------------------------------------------------

async function runOnServer() {
  if (!lab.exp) return;
  hideFormError();
  const click = performance.now();
  const { params, seed } = formValues();
  try {
    const run = await api('POST', '/api/runs', { experiment: lab.exp.name, params, seed });
    lab.timings[run.id] = { click, created: performance.now() };
    openRun(run.id); // at once: the hash change below finds it open
    location.hash = '#run/' + run.id;
    setTimeout(refreshRuns, 200);
  } catch (err) {
    showFormError(err);
  }
}

async function runInBrowser() {
  if (!lab.exp) return;
  hideFormError();
  const click = performance.now();
  const { params, seed } = formValues();
  const w = await wasmReady().catch((e) => { showFormError(new Error('the WebAssembly build did not load: ' + e.message)); });
  if (!w) return;
  const b = lab.wasm.build || {};
  let run;
  try {
    run = await api('POST', '/api/runs', {
      experiment: lab.exp.name, params, seed, origin: 'browser',
      version: b.version, revision: b.revision, go_version: b.go_version, bindings: b.bindings || '',
      platform: (b.platform || 'js/wasm') + ' · ' + navigator.userAgent.slice(0, 120),
      device: `browser, ${navigator.hardwareConcurrency || '?'} logical CPUs`,
    });
  } catch (err) {
    showFormError(err);
    return;
  }
  lab.timings[run.id] = { click, created: performance.now() };
  startLocalRun(run, params, seed);
  location.hash = '#run/' + run.id;
  refreshRuns();
}

// ---- the Web Worker with the WebAssembly registry -----------------------------

function startWorker() {
  const wasm = lab.wasm;
  wasm.worker = new Worker('/worker.js');
  wasm.ready = new Promise((resolve, reject) => {
    wasm.worker.addEventListener('message', function onReady(ev) {
      const m = ev.data;
      if (m.type === 'ready') {
        wasm.experiments = new Set(m.experiments.map((e) => e.name));
        wasm.serverOnly = m.serverOnly || {};
        wasm.build = m.build;
        wasm.worker.removeEventListener('message', onReady);
        resolve(wasm.worker);
      } else if (m.type === 'error') {
        wasm.error = m.error;
        reject(new Error(m.error));
      }
    });
    wasm.worker.addEventListener('error', (ev) => { wasm.error = ev.message || 'worker error'; reject(new Error(wasm.error)); });
  });
  wasm.ready.then(updateBrowserButton, updateBrowserButton);
  wasm.worker.addEventListener('message', onWorkerMessage);
}

function wasmReady() {
  if (!lab.info || !lab.info.wasm) return Promise.reject(new Error('this lab was built without the WebAssembly registry (make lab builds it)'));
  if (!lab.wasm.worker) startWorker();
  return lab.wasm.ready;
}

function updateBrowserButton() {
  const btn = $('run-browser'), note = $('browser-note');
  btn.hidden = false;
  if (!lab.info || !lab.info.wasm) {
    btn.disabled = true;
    note.textContent = 'in-browser runs need the WebAssembly build (make lab)';
  } else if (lab.wasm.error) {
    btn.disabled = true;
    note.textContent = 'WebAssembly: ' + lab.wasm.error;
  } else if (!lab.wasm.build) {
    btn.disabled = true;
    note.textContent = 'loading the WebAssembly build…';
  } else if (lab.exp && !lab.wasm.experiments.has(lab.exp.name)) {
    // Not offered at all: a browser run of it could only fail (and be
    // kept in the notebook as a failure).
    btn.disabled = true;
    btn.hidden = true;
    const why = (lab.wasm.serverOnly || {})[lab.exp.name];
    note.textContent = why ? `${lab.exp.name} cannot run in this browser: ${why}` : `${lab.exp.name} cannot run in this browser: it is not in the WebAssembly build (run it on the server)`;
  } else {
    btn.disabled = !!lab.wasm.busy;
    note.textContent = lab.wasm.busy ? 'a run is computing in this browser' : `computes in a Web Worker (${lab.wasm.build.go_version}, ${lab.wasm.build.platform})`;
  }
  btn.dataset.ready = String(!btn.disabled);
}

// A browser run: the worker's events are forwarded to the lab in order,
// at most every 100 ms, so that the lab keeps and streams the run.
function startLocalRun(run, params, seed) {
  const local = { id: run.id, from: 0, points: [], notes: [], progress: null, end: null, summary: null, sending: false, timer: null };
  lab.localRuns.set(run.id, local);
  lab.wasm.busy = run.id;
  updateBrowserButton();
  local.flush = async () => {
    if (local.sending) return;
    local.sending = true;
    try {
      // A heartbeat every 10 s while the worker is silent: the lab marks a
      // client run that sends nothing for 60 s as interrupted.
      if (Date.now() - (local.lastSent || 0) > 10000) local.progress = local.progress || local.lastProgress || { done: 0, total: 0 };
      while (local.points.length || local.notes.length || local.progress || local.end) {
        const batch = local.points.splice(0, 5000);
        const body = { from: local.from, points: batch };
        if (local.notes.length) body.notes = local.notes.splice(0);
        if (local.progress) { body.progress = local.progress; local.lastProgress = local.progress; local.progress = null; }
        const last = local.end && local.points.length === 0;
        if (last) { body.summary = local.summary || {}; body.end = local.end; }
        let ans;
        try {
          ans = await api('POST', `/api/runs/${run.id}/events`, body);
        } catch (err) {
          if (err.body && err.body.cancel) { stopLocalRun(run.id, false); return; }
          showRunError('the lab did not take the browser run\'s points: ' + err.message);
          stopLocalRun(run.id, false);
          return;
        }
        local.from = ans.points;
        local.lastSent = Date.now();
        if (last) { lab.localRuns.delete(run.id); lab.wasm.busy = null; updateBrowserButton(); refreshRuns(); return; }
      }
    } finally {
      local.sending = false;
    }
  };
  local.timer = setInterval(local.flush, 100);
  lab.wasm.worker.postMessage({ type: 'run', id: run.id, experiment: run.experiment, params: JSON.stringify(params), seed: String(seed) });
}

function onWorkerMessage(ev) {
  const m = ev.data;
  if (m.type !== 'event') return;
  const local = lab.localRuns.get(m.id);
  if (!local) return;
  const e = JSON.parse(m.event);
  switch (e.type) {
    case 'points': local.points.push(...e.points); break;
    case 'progress': local.progress = { done: e.done, total: e.total }; break;
    case 'note': local.notes.push(e.text); break;
    case 'end':
      local.summary = e.summary;
      local.end = { state: e.state, error: e.error || '' };
      clearInterval(local.timer);
      local.flush();
      break;
  }
}

// stopLocalRun ends a browser run: the worker is terminated (a computing Go
// program does not read messages) and a fresh one is started.
function stopLocalRun(id, tellLab) {
  const local = lab.localRuns.get(id);
  if (!local) return;
  clearInterval(local.timer);
  lab.localRuns.delete(id);
  lab.wasm.worker.terminate();
  lab.wasm.worker = null;
  lab.wasm.build = null;
  lab.wasm.busy = null;
  startWorker();
  updateBrowserButton();
  if (tellLab) api('POST', `/api/runs/${id}/cancel`).catch(() => {});
}

// ---- a run: the stream and the chart ------------------------------------------

function newSeriesStore() { return { series: new Map(), count: 0 }; }

// addPoints keeps [x, y, null, extras] per series: the chart reads the
// standard error its experiment declares from the extras.
function addPoints(store, points) {
  for (const p of points) {
    let s = store.series.get(p.series);
    if (!s) { s = []; store.series.set(p.series, s); }
    s.push([p.x, p.y, null, p.extra || null]);
  }
  store.count += points.length;
}

// chartOf returns the declared chart of an experiment (null: unknown here).
function chartOf(name) {
  const e = lab.experiments.find((x) => x.name === name);
  return e && e.chart ? e.chart : null;
}

// lab.axes holds, per experiment, the quantities the reader put on the
// axes: {y, x} (field keys of fp8chart.fields, or y = 'summary:KEY').
lab.axes = {};

// axesOf returns the quantities chosen for an experiment's charts.
function axesOf(expName) { return lab.axes[expName] || { y: 'y', x: 'x' }; }

// fillAxisPicker offers, in the selects ySel and xSel, every declared point
// quantity of the experiment with its unit, and for y also every summary
// value the runs hold (one value per run); a choice redraws.
function fillAxisPicker(ySel, xSel, expName, runs, redraw) {
  const decl = chartOf(expName);
  const fs = fp8chart.fields(decl);
  const axes = axesOf(expName);
  const keys = [...new Set(runs.flatMap((r) => Object.keys(r.summary || {})))].sort();
  const opt = (value, text) => el('option', { value, text });
  const pointGroup = el('optgroup', { label: 'point quantities' }, ...fs.map((f) => opt(f.key, (f.default ? 'default: ' : '') + f.label)));
  const sumGroup = el('optgroup', { label: 'summary values (one per run)' }, ...keys.map((k) => {
    const a = fp8chart.summaryAxis(decl, k);
    return opt('summary:' + k, k + (a ? ` — ${a.quantity} (${a.unit})` : ' (unit not declared)'));
  }));
  const decl2 = decl || {};
  const paired = runs.length === 2 && decl2.trials && runs.every((r) => fp8chart.trialsOf(decl2, r.series).size > 0);
  const pairGroup = el('optgroup', { label: `paired over trials (${runs.length === 2 ? runs[1].label + ' − ' + runs[0].label : ''}, same seeds)` },
    ...fs.filter((f) => f.key !== 'x').map((f) => opt('paired:' + f.key, 'difference of ' + f.label)));
  const sig = JSON.stringify([expName, fs.map((f) => f.key), keys, paired]);
  if (ySel.dataset.sig !== sig) {
    ySel.replaceChildren(pointGroup, ...(paired ? [pairGroup] : []), ...(keys.length ? [sumGroup] : []));
    xSel.replaceChildren(...fs.map((f) => opt(f.key, (f.default ? 'default: ' : '') + f.label)));
    ySel.dataset.sig = sig;
  }
  ySel.value = [...ySel.options].some((o) => o.value === axes.y) ? axes.y : 'y';
  xSel.value = [...xSel.options].some((o) => o.value === axes.x) ? axes.x : 'x';
  xSel.disabled = ySel.value.startsWith('summary:') || ySel.value.startsWith('paired:');
  const pick = () => { lab.axes[expName] = { y: ySel.value, x: xSel.value }; redraw(); };
  ySel.onchange = pick;
  xSel.onchange = pick;
}

// fillDist offers the distribution panel (prefix '' for the run view,
// 'compare-' for the comparison) when the runs hold per-trial values: a
// series, an x and a quantity of the trials, drawn as a histogram, an
// empirical CDF or per trial, every run overlaid.
function fillDist(prefix, expName, runs) {
  const decl = chartOf(expName);
  const panel = $(prefix + 'dist-panel');
  const trials = new Map();
  for (const r of runs) for (const [n, byX] of fp8chart.trialsOf(decl, r.series)) {
    if (!trials.has(n)) trials.set(n, new Set());
    for (const x of byX.keys()) trials.get(n).add(x);
  }
  panel.hidden = trials.size === 0;
  if (!trials.size) return;
  const ss = $(prefix + 'dist-series'), xs = $(prefix + 'dist-x'), fs = $(prefix + 'dist-field'), ks = $(prefix + 'dist-kind');
  const opt = (v, t) => el('option', { value: v, text: t });
  const keep = (sel, vals, show) => {
    const old = sel.value;
    const sig = JSON.stringify(vals);
    if (sel.dataset.sig !== sig) { sel.replaceChildren(...vals.map((v) => opt(String(v), show ? show(v) : String(v)))); sel.dataset.sig = sig; }
    if (vals.map(String).includes(old)) sel.value = old;
  };
  const names = [...trials.keys()].sort();
  keep(ss, names);
  const xv = [...trials.get(ss.value)].sort((a, b) => a - b);
  keep(xs, xv, (v) => fp8chart.fmtTick(v) + ' ' + (decl ? decl.x.unit : ''));
  if (!xv.map(String).includes(xs.value)) xs.value = String(xv[xv.length - 1]);
  const inTrials = new Set(['y']);
  for (const r of runs) {
    const l = (fp8chart.trialsOf(decl, r.series).get(ss.value) || new Map()).get(+xs.value) || [];
    for (const p of l) for (const k of Object.keys(p.extra)) if (k !== 'trial') inTrials.add(k);
  }
  const fl = fp8chart.fields(decl).filter((f) => inTrials.has(f.key));
  keep(fs, fl.map((f) => f.key), (k) => fl.find((f) => f.key === k).label);
  const draw = () => {
    if (panel.hidden || !panel.open) return;
    const key = prefix + 'distChart';
    if (!lab[key]) lab[key] = echarts.init($(prefix + 'dist-chart'));
    const built = fp8chart.buildDistribution(decl, runs, ss.value, +xs.value, fs.value, ks.value);
    lab[key].setOption(built.option, { notMerge: true });
    lab[key].resize();
    $(prefix + 'dist-notes').replaceChildren(...built.notes.map((n) => el('li', { class: 'note-' + n.kind, text: n.text })));
  };
  for (const s of [ss, xs, fs, ks]) s.onchange = () => { fillDist(prefix, expName, runs); };
  panel.ontoggle = draw;
  draw();
}

// drawChart draws runs ({label, series, summary}) with the experiment's
// declared chart on chart, its legend in legendBox and its notes in
// notesBox, with the quantities the reader chose on the axes (a summary
// value; with two runs, 'paired:FIELD', the paired differences of a field
// over their trials).
function drawChart(chart, legendBox, notesBox, expName, runs, hidden, redraw) {
  const axes = axesOf(expName);
  if (axes.y.startsWith('paired:') && runs.length === 2) {
    const p = fp8chart.buildPaired(chartOf(expName), runs[0], runs[1], axes.y.slice('paired:'.length));
    const built = fp8chart.build(p.decl, [p.run], hidden);
    chart.setOption(built.option, { notMerge: true });
    fp8chart.renderLegend(legendBox, built, hidden, (key) => { if (hidden.has(key)) hidden.delete(key); else hidden.add(key); redraw(); });
    const extra = [{ kind: 'paired', text: `${p.pairs} pairs of trials (${runs[1].label} − ${runs[0].label})` + (p.missing ? `; ${p.missing} trials without a partner or not finite, left out` : '') }];
    notesBox.replaceChildren(...extra.concat(built.notes).map((n) => el('li', { class: 'note-' + n.kind, text: n.text })));
    return built;
  }
  if (axes.y.startsWith('summary:')) {
    const built = fp8chart.buildSummary(chartOf(expName), runs, axes.y.slice('summary:'.length));
    chart.setOption(built.option, { notMerge: true });
    legendBox.replaceChildren();
    notesBox.replaceChildren(...built.notes.map((n) => el('li', { class: 'note-' + n.kind, text: n.text })));
    return built;
  }
  let built;
  try {
    built = fp8chart.build(chartOf(expName), runs, hidden, axes);
  } catch (err) { // a choice the experiment no longer declares
    delete lab.axes[expName];
    built = fp8chart.build(chartOf(expName), runs, hidden);
  }
  chart.setOption(built.option, { notMerge: true });
  fp8chart.renderLegend(legendBox, built, hidden, (key) => {
    if (hidden.has(key)) hidden.delete(key); else hidden.add(key);
    redraw();
  });
  notesBox.replaceChildren(...built.notes.map((n) => el('li', { class: 'note-' + n.kind, text: n.text })));
  return built;
}

function openRun(id) {
  closeView();
  $('welcome').hidden = true;
  if (lab.exp) $('exp-view').hidden = false;
  $('run-view').hidden = false;
  $('run-error').hidden = true;
  const view = { kind: 'run', id, store: newSeriesStore(), meta: null, ws: null, ended: false, drawPending: false, hidden: new Set(), filled: false };
  lab.view = view;
  if (!lab.chart) lab.chart = echarts.init($('chart'));
  lab.chart.resize({ width: 'auto', height: 'auto' });
  lab.chart.clear();
  $('chart').dataset.points = '0';
  $('chart-legend').replaceChildren();
  $('chart-notes').replaceChildren();
  connect(view);
  renderRunList();
}

function connect(view) {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const ws = new WebSocket(`${proto}//${location.host}/api/runs/${view.id}/stream?from=${view.store.count}`);
  view.ws = ws;
  ws.onopen = () => { const t = lab.timings[view.id]; if (t && !t.wsOpen) t.wsOpen = performance.now(); };
  ws.onmessage = (ev) => {
    if (lab.view !== view) return;
    const m = JSON.parse(ev.data);
    if (m.type === 'points') {
      if (m.from !== view.store.count) return; // cannot happen: the server sends in order
      addPoints(view.store, m.points);
      const t = lab.timings[view.id];
      if (t && !t.firstData && view.store.count > 0) t.firstData = performance.now();
      scheduleDraw(view);
    } else if (m.type === 'run' || m.type === 'end') {
      view.meta = m.run;
      if (m.type === 'end') view.ended = true;
      renderRunMeta(view);
      if (m.type === 'end') { refreshRuns(); drawRun(view); }
    }
  };
  ws.onclose = () => {
    if (lab.view !== view || view.ended) return;
    // Dropped (a slow connection, a restarting lab): resume from the points
    // held, unless the run is gone.
    setTimeout(async () => {
      if (lab.view !== view || view.ended) return;
      try {
        await api('GET', '/api/runs/' + view.id);
      } catch (err) {
        if (err.status === 404) { view.ended = true; showRunError(`run ${view.id} does not exist (deleted?)`); return; }
      }
      connect(view);
    }, 1000);
  };
}

function scheduleDraw(view) {
  if (view.drawPending) return;
  view.drawPending = true;
  requestAnimationFrame(() => {
    view.drawPending = false;
    if (lab.view !== view) return;
    drawRun(view);
  });
}

function drawRun(view) {
  const t0 = performance.now();
  const exp = view.meta ? view.meta.experiment : '';
  const runs = [{ label: null, series: view.store.series, summary: view.meta ? view.meta.summary : {} }];
  fillAxisPicker($('chart-y'), $('chart-x'), exp, runs, () => drawRun(view));
  view.built = drawChart(lab.chart, $('chart-legend'), $('chart-notes'), exp, runs, view.hidden, () => drawRun(view));
  if (view.ended || !view.distShown) { view.distShown = true; fillDist('', exp, runs); }
  $('chart').dataset.points = String(view.store.count);
  const t = lab.timings[view.id];
  if (t && t.firstData && !t.firstPoint) { t.firstPoint = performance.now(); t.drawMs = t.firstPoint - t0; }
}

function renderRunMeta(view) {
  const r = view.meta;
  if (!r) return;
  $('run-title').replaceChildren(`Run ${r.id} · ${r.experiment}${r.title ? ' · ' + r.title : ''} `, stateBadge(r.state));
  const frac = r.total > 0 ? r.done / r.total : (r.state === 'done' ? 1 : 0);
  $('progress').value = frac;
  let text = r.state === 'queued' ? `queued, position ${r.queue_position || '?'}` : `${(100 * frac).toFixed(1)}% · ${r.points} points`;
  if (r.state !== 'running' && r.state !== 'queued') text = `${r.state} · ${r.points} points`;
  $('progress-text').textContent = text;
  $('cancel').hidden = !(r.state === 'running' || r.state === 'queued');
  if (r.error) { $('run-error').textContent = r.error; $('run-error').hidden = false; } else $('run-error').hidden = true;
  const rows = [
    ['reproduce', reproduceLine(r)],
    ['origin', r.origin + (r.registered ? '' : ' (experiment unknown to this lab)')],
    ['fp8lab', `${r.version || '?'} ${r.revision || ''}`],
    ['built with', `${r.go_version || ''} ${r.platform || ''}`],
    ['bindings', r.bindings || '–'],
    ['device', r.device || '–'],
    ['started', fmtTime(r.started)], ['ended', fmtTime(r.ended)],
    ['points', String(r.points)],
  ];
  if (r.rerun_of) rows.push(['re-run of', 'run ' + r.rerun_of]);
  $('chart-caption').textContent = `${r.experiment}: ${reproduceLine(r)}`;
  $('run-meta').replaceChildren(...rows.map(([k, v]) => el('tr', {}, el('th', { text: k }), el('td', { text: v }))));
  const sum = Object.entries(r.summary || {}).sort(([a], [b]) => a.localeCompare(b));
  const decl = chartOf(r.experiment);
  $('summary').replaceChildren(...sum.map(([k, v]) => {
    const a = fp8chart.summaryAxis(decl, k);
    return el('tr', { title: a ? a.quantity : 'the experiment declares no unit for this value' }, el('th', { text: k }), el('td', { text: fmtNum(v) }),
      el('td', { class: 'muted', text: a ? a.unit : '(unit not declared)' }));
  }));
  $('exp-notes').replaceChildren(...(r.notes || []).map((n) => el('li', { text: n })));
  if (document.activeElement !== $('note') && document.activeElement !== $('title')) {
    $('note').value = r.note || '';
    $('title').value = r.title || '';
  }
  $('export-json').href = `/api/runs/${r.id}/export?format=json`;
  $('export-csv').href = `/api/runs/${r.id}/export?format=csv`;
  $('export-html').href = `/api/runs/${r.id}/export?format=html`;
  $('rerun').disabled = !r.registered || !lab.experiments.some((e) => e.name === r.experiment);
  if (!lab.exp || lab.exp.name !== r.experiment) {
    if (lab.experiments.some((e) => e.name === r.experiment)) showExperiment(r.experiment);
  }
  if (!view.filled && lab.exp && lab.exp.name === r.experiment) { view.filled = true; fillForm(r); }
}

// reproduceLine is the command that computes the run again: its flags as
// recorded, or built from its parameters (a run streamed in by a program
// the lab does not know gets its flags in the same form).
function reproduceLine(r) {
  if (r.reproduce) return r.reproduce; // the lab's (sim.Reproduce): runs as printed
  let flags = r.flags;
  if (!flags) {
    flags = Object.entries(r.params || {}).map(([k, v]) => typeof v === 'boolean' ? `-${k}=${v}` : `-${k} ${Array.isArray(v) ? v.join(',') : v}`).join(' ');
  }
  const cmd = `lab run ${r.experiment} ${flags} -seed ${r.seed}`.replace(/\s+/g, ' ');
  return r.registered ? cmd : cmd + '   (the experiment is not registered in this lab: run it with the program that produced it)';
}

// fillForm puts an opened run's own parameters and seed into the form, so
// that "Run" repeats that run (former parameter names are read as theirs).
function fillForm(r) {
  const e = lab.experiments.find((x) => x.name === r.experiment);
  if (!e || !r.params) return;
  for (const p of e.params) {
    let v = r.params[p.name];
    if (v === undefined) for (const a of p.aliases || []) if (r.params[a] !== undefined) v = r.params[a];
    const input = $('param-' + p.name);
    if (!input || v === undefined) continue;
    if (input.type === 'checkbox') input.checked = !!v;
    else input.value = Array.isArray(v) ? v.join(',') : String(v);
    input.classList.remove('invalid');
  }
  const seed = $('param-seed');
  if (seed) seed.value = String(r.seed);
  $('form-source').textContent = `the form holds the parameters of run #${r.id}`;
}

function showRunError(text) { $('run-error').textContent = text; $('run-error').hidden = false; }

function closeView() {
  const v = lab.view;
  if (v && v.ws) { v.ended = true; v.ws.close(); }
  lab.view = null;
  $('run-view').hidden = true;
  $('compare-view').hidden = true;
}

// warmChart creates the run chart ahead of the first run and draws a chart
// of the same shape once, so that the first points of a run do not wait for
// ECharts to set itself up.
function warmChart() {
  if (lab.chart) return;
  lab.chart = echarts.init($('chart'), null, { width: 900, height: 460 });
  const store = newSeriesStore();
  addPoints(store, [{ series: 'warm', x: 1, y: 1 }, { series: 'warm', x: 1000, y: 1e-3 }, { series: 'h200 warm', x: 10, y: 0 }]);
  const built = fp8chart.build({ x: { quantity: 'x', unit: '1', log: true }, y: { quantity: 'y', unit: '1', log: true }, error: 'se', styles: [{ match: 'h200*', family: 'h', measured: true }, { match: '*', family: 'w' }] },
    [{ label: null, series: store.series, summary: {} }], new Set());
  lab.chart.setOption(built.option, { notMerge: true });
  lab.chart.clear();
}

// ---- comparison ------------------------------------------------------------------

async function fetchAllPoints(id) {
  const store = newSeriesStore();
  for (;;) {
    const page = await api('GET', `/api/runs/${id}/points?from=${store.count}&limit=100000`);
    if (page.points.length === 0) break;
    addPoints(store, page.points);
  }
  return store;
}

async function openCompare(ids) {
  closeView();
  $('welcome').hidden = true;
  $('exp-view').hidden = true;
  $('compare-view').hidden = false;
  const view = { kind: 'compare', ids, hidden: new Set() };
  lab.view = view;
  $('compare-title').textContent = 'Comparison of runs ' + ids.map((id) => '#' + id).join(', ');
  $('compare-report').href = '/api/report?runs=' + ids.join(',');
  const runs = await Promise.all(ids.map((id) => api('GET', '/api/runs/' + id)));
  const stores = await Promise.all(ids.map(fetchAllPoints));
  if (lab.view !== view) return;
  if (!lab.compareChart) lab.compareChart = echarts.init($('compare-chart'));
  const exps = [...new Set(runs.map((r) => r.experiment))];
  const exp = exps.length === 1 ? exps[0] : '';
  const shown = runs.map((r, i) => ({ label: '#' + r.id, series: stores[i].series, summary: r.summary || {} }));
  const draw = () => {
    fillAxisPicker($('compare-y'), $('compare-x'), exp, shown, draw);
    view.built = drawChart(lab.compareChart, $('compare-legend'), $('compare-notes'), exp, shown, view.hidden, draw);
    fillDist('compare-', exp, shown);
    return view.built;
  };
  view.built = draw();
  $('compare-chart').dataset.points = String(stores.reduce((n, s) => n + s.count, 0));
  renderCompareTable(runs);
}

// renderCompareTable shows the runs side by side: only the rows where
// they differ (parameters, seed, origin, build, summary values), with the
// difference of each number from the first run; the equal rows are counted.
function renderCompareTable(runs) {
  const rows = [];
  const add = (group, key, vals) => rows.push({ group, key, vals });
  add('run', 'experiment', runs.map((r) => r.experiment));
  const pnames = [...new Set(runs.flatMap((r) => Object.keys(r.params || {})))].sort();
  for (const k of pnames) add('parameter', k, runs.map((r) => r.params ? r.params[k] : undefined));
  add('run', 'seed', runs.map((r) => r.seed));
  add('run', 'origin', runs.map((r) => r.origin));
  add('run', 'fp8lab', runs.map((r) => `${r.version || '?'} ${r.revision || ''}`.trim()));
  add('run', 'platform', runs.map((r) => `${r.go_version || ''} ${r.platform || ''}`.trim()));
  add('run', 'state', runs.map((r) => r.state));
  add('run', 'points', runs.map((r) => r.points));
  const snames = [...new Set(runs.flatMap((r) => Object.keys(r.summary || {})))].sort();
  const decls = [...new Set(runs.map((r) => r.experiment))].map(chartOf);
  for (const k of snames) {
    const a = decls.length === 1 ? fp8chart.summaryAxis(decls[0], k) : null;
    add('summary', k + (a ? ` (${a.unit})` : ''), runs.map((r) => r.summary ? r.summary[k] : undefined));
  }
  const same = (vals) => vals.every((v) => JSON.stringify(v) === JSON.stringify(vals[0]));
  const differ = rows.filter((r) => !same(r.vals));
  const equal = rows.length - differ.length;
  const show = (v) => v === undefined ? '—' : Array.isArray(v) ? v.join(',') : typeof v === 'number' ? fmtNum(v) : String(v);
  const diff = (v, ref) => {
    if (typeof v !== 'number' || typeof ref !== 'number' || v === ref) return '';
    const d = v - ref;
    const rel = ref !== 0 ? ` (${d > 0 ? '+' : ''}${(100 * d / Math.abs(ref)).toPrecision(3)} %)` : '';
    return ` Δ ${d > 0 ? '+' : ''}${fmtNum(d)}${rel}`;
  };
  const head = el('tr', {}, el('th', { text: '' }), ...runs.map((r) => el('th', {}, el('a', { href: '#run/' + r.id, text: '#' + r.id + (r.title ? ' ' + r.title : '') }))));
  const body = differ.map((row) => el('tr', { class: 'diff-' + row.group, 'data-key': row.group + ':' + row.key },
    el('th', { text: (row.group === 'run' ? '' : row.group + ' ') + row.key }),
    ...row.vals.map((v, i) => el('td', {}, show(v), i > 0 ? el('span', { class: 'delta', text: diff(v, row.vals[0]) }) : null))));
  $('compare-table').replaceChildren(head, ...body);
  $('compare-same').textContent = differ.length === 0 ? `the runs agree in all ${equal} rows (parameters, seed, build, summary)`
    : `${differ.length} rows differ (Δ: against the first run); ${equal} equal rows are not shown`;
}

// ---- history ---------------------------------------------------------------------

async function refreshRuns() {
  try {
    const ans = await api('GET', '/api/runs?limit=200' + (lab.runQuery ? '&q=' + encodeURIComponent(lab.runQuery) : '')); // static/sweep.js sets runQuery
    lab.runs = ans.runs;
    renderRunList();
  } catch (e) { /* the lab is restarting: try again later */ }
}

function renderRunList() {
  const ul = $('run-list');
  const only = $('only-exp').checked && lab.exp;
  const shown = lab.runs.filter((r) => !only || r.experiment === lab.exp.name);
  ul.replaceChildren(...shown.map((r) => {
    const box = el('input', { type: 'checkbox', title: 'compare', onclick: (ev) => ev.stopPropagation(), onchange: (ev) => {
      if (ev.target.checked) lab.selected.add(r.id); else lab.selected.delete(r.id);
      $('compare').disabled = lab.selected.size < 2;
    } });
    box.checked = lab.selected.has(r.id);
    const sel = lab.view && lab.view.kind === 'run' && lab.view.id === r.id;
    const what = `#${r.id} ${r.experiment}${r.title ? ' — ' + r.title : ''}${r.note ? ' ✎' : ''}`;
    return el('li', { class: sel ? 'sel' : '', 'data-id': r.id, title: (r.flags || '') + ' -seed ' + r.seed + ' · ' + r.origin, onclick: () => { location.hash = '#run/' + r.id; } },
      box, el('span', { class: 'what', text: what }), el('span', { class: 'muted small', text: r.origin === 'server' ? '' : r.origin }), stateBadge(r.state));
  }));
  $('compare').disabled = lab.selected.size < 2;
}

async function refreshInfo() {
  try {
    lab.info = await api('GET', '/api/info');
    const b = lab.info.build;
    $('build').textContent = `fp8lab ${b.version} ${b.revision ? b.revision.slice(0, 12) : ''}`;
    $('pool').textContent = `runs: ${lab.info.running} running, ${lab.info.queued} queued (pool of ${lab.info.workers})`;
    const nb = $('notebook-error');
    nb.hidden = !lab.info.notebook_error;
    nb.textContent = lab.info.notebook_error
      ? `${lab.info.disk_full ? 'The disk is full' : 'The notebook cannot be written'} since ${new Date(lab.info.notebook_error_since).toLocaleTimeString()}: ` +
        'runs go on in memory and are written when the notebook accepts writes again; new runs are refused. ' + lab.info.notebook_error
      : '';
  } catch (e) { $('pool').textContent = 'the lab is not answering'; }
}

// ---- routing and wiring ----------------------------------------------------------

function route() {
  const h = location.hash.slice(1);
  const [kind, arg] = [h.split('/')[0], h.split('/').slice(1).join('/')];
  if (kind === 'run' && arg) {
    if (!(lab.view && lab.view.kind === 'run' && lab.view.id === arg)) openRun(arg);
  } else if (kind === 'compare' && arg) {
    openCompare(arg.split(',').filter(Boolean));
  } else if (kind === 'exp' && arg) {
    closeView();
    $('exp-view').hidden = false;
    showExperiment(decodeURIComponent(arg));
  }
}

async function main() {
  $('run-server').addEventListener('click', runOnServer);
  $('run-browser').addEventListener('click', runInBrowser);
  $('reset-form').addEventListener('click', () => {
    if (!lab.exp) return;
    delete lab.typed[lab.exp.name];
    const e = lab.exp;
    $('params').replaceChildren();
    lab.exp = null;
    showExperiment(e.name);
  });
  $('params').addEventListener('submit', (ev) => { ev.preventDefault(); runOnServer(); });
  $('cancel').addEventListener('click', async () => {
    const v = lab.view;
    if (!v || v.kind !== 'run') return;
    if (lab.localRuns.has(v.id)) { stopLocalRun(v.id, true); return; }
    try { await api('POST', `/api/runs/${v.id}/cancel`); } catch (err) { showRunError(err.message); }
  });
  $('rerun').addEventListener('click', async () => {
    const v = lab.view;
    if (!v || v.kind !== 'run') return;
    try {
      const click = performance.now();
      const run = await api('POST', `/api/runs/${v.id}/rerun`);
      lab.timings[run.id] = { click, created: performance.now() };
      location.hash = '#run/' + run.id;
      refreshRuns();
    } catch (err) { showRunError(err.message); }
  });
  $('delete').addEventListener('click', async () => {
    const v = lab.view;
    if (!v || v.kind !== 'run' || !confirm(`Delete run ${v.id} and its points?`)) return;
    try {
      await api('DELETE', `/api/runs/${v.id}`);
      lab.selected.delete(v.id);
      location.hash = lab.exp ? '#exp/' + lab.exp.name : '#';
      refreshRuns();
    } catch (err) { showRunError(err.message); }
  });
  $('save-note').addEventListener('click', async () => {
    const v = lab.view;
    if (!v || v.kind !== 'run') return;
    try {
      const run = await api('PATCH', `/api/runs/${v.id}`, { title: $('title').value, note: $('note').value });
      if (lab.view === v) { v.meta = run; $('title').blur(); $('note').blur(); renderRunMeta(v); }
      $('save-status').textContent = 'saved';
      setTimeout(() => { $('save-status').textContent = ''; }, 2000);
      refreshRuns();
    } catch (err) { $('save-status').textContent = err.message; }
  });
  $('only-exp').addEventListener('change', renderRunList);
  $('compare').addEventListener('click', () => { location.hash = '#compare/' + [...lab.selected].sort((a, b) => a - b).join(','); });
  window.addEventListener('hashchange', route);
  window.addEventListener('resize', () => { lab.chart && lab.chart.resize(); lab.compareChart && lab.compareChart.resize(); });

  await refreshInfo();
  const ans = await api('GET', '/api/experiments');
  lab.experiments = ans.experiments;
  renderExperimentList();
  updateBrowserButton();
  warmChart();
  if (lab.info.wasm) startWorker();
  await refreshRuns();
  // The landing page is contraction, the lab's first experiment to try
  // (the list is alphabetical; attention-file needs the user's files).
  if (!location.hash && lab.experiments.length) location.hash = '#exp/' + (lab.experiments.some((e) => e.name === 'contraction') ? 'contraction' : lab.experiments[0].name);
  route();
  setInterval(() => { refreshInfo(); refreshRuns(); }, 3000);
  document.body.dataset.ready = 'true';
}

// bench runs the accumulation chain in the worker (for BENCHMARKS.md).
lab.bench = async (model, K, millis) => {
  const w = await wasmReady();
  return new Promise((resolve) => {
    const on = (ev) => { if (ev.data.type === 'bench') { w.removeEventListener('message', on); resolve(JSON.parse(ev.data.result)); } };
    w.addEventListener('message', on);
    w.postMessage({ type: 'bench', model, K, millis });
  });
};

// chartSeries returns what the chart of the open run holds: series → [[x, y]].
lab.chartSeries = () => {
  if (!lab.chart) return {};
  const out = {};
  for (const s of lab.chart.getOption().series) {
    if (s.type === 'custom' || s.id === 'refs' || s.id === 'marks') continue;
    if (String(s.id).startsWith('floor')) {
      for (const d of s.data) (out[d.series] = out[d.series] || []).push([d.raw[0], d.raw[1]]);
      continue;
    }
    out[s.name] = (out[s.name] || []).concat(s.data);
  }
  return out;
};

main().catch((err) => {
  document.body.dataset.ready = 'error';
  $('welcome').append(el('p', { class: 'muted', text: 'the page could not start: ' + err.message }));
});
