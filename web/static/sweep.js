// fp8lab's sweeps in the page: a sweep form under the experiment's form, a
// list of sweeps, the view of one sweep (#sweep/ID: progress, cancel, the
// aggregate as a table, a chart of a summary or series mean with its 95 %
// confidence interval per group, a parallel-coordinates view of the swept
// parameters against a summary value, CSV/JSON export), the query filter of
// the runs list and the tags of a run. It only adds to the page: app.js
// needs one hook (lab.runQuery in refreshRuns).
'use strict';
(() => {
  // $, el and api are app.js's (loaded before this file).
  const fmt = (v) => (v === null || v === undefined) ? '–'
    : (Math.abs(v) >= 1e5 || (Math.abs(v) < 1e-3 && v !== 0)) ? v.toExponential(3) : String(+v.toPrecision(5));
  const lab = window.lab || {};
  const sw = { view: null, timer: null, chart: null, par: null };
  lab.sweeps = sw; // for the end-to-end tests

  // ---- the sweep form, under the experiment's parameters -------------------
  function currentExperiment() {
    const name = $('exp-name') && $('exp-name').textContent;
    return (lab.experiments || []).find((e) => e.name === name);
  }
  function renderForm() {
    const box = $('sweep-form');
    const e = currentExperiment();
    if (!box || !e) return;
    if (box.dataset.exp === e.name) return;
    box.dataset.exp = e.name;
    const rows = el('div', { class: 'sweep-grid' });
    for (const p of e.params) {
      const sep = p.kind === 'ints' ? ';' : ',';
      rows.append(el('label', { for: 'sweep-' + p.name, text: p.name }),
        el('input', { type: 'text', id: 'sweep-' + p.name, 'data-param': p.name, placeholder: `values separated by '${sep}' (empty: the form's)`, spellcheck: 'false' }));
    }
    rows.append(el('label', { for: 'sweep-seeds', text: 'seeds' }), el('input', { type: 'text', id: 'sweep-seeds', value: '1..20', spellcheck: 'false' }));
    rows.append(el('label', { for: 'sweep-executor', text: 'executor' }),
      el('select', { id: 'sweep-executor' }, ...['auto', 'pool', 'slurm'].map((x) => el('option', { value: x, text: x }))));
    box.querySelector('.sweep-body').replaceChildren(rows,
      el('div', { class: 'row' }, el('button', { type: 'button', id: 'sweep-start', class: 'primary', text: 'Start the sweep', onclick: startSweep }),
        el('span', { id: 'sweep-count', class: 'muted small' })),
      el('div', { id: 'sweep-error', role: 'alert', hidden: true }));
  }
  function sweepRequest() {
    const e = currentExperiment();
    const params = {}, axes = [];
    for (const p of e.params) {
      const text = ($('sweep-' + p.name).value || '').trim();
      if (text) {
        const vals = text.split(p.kind === 'ints' ? ';' : ',').map((s) => s.trim()).filter((s) => s !== '');
        if (vals.length > 1) { axes.push({ name: p.name, values: vals }); continue; }
        params[p.name] = vals[0];
        continue;
      }
      const input = $('param-' + p.name); // the experiment form's value
      if (!input) continue;
      params[p.name] = p.kind === 'bool' ? input.checked : input.value;
    }
    return { experiment: e.name, params, axes, seeds: $('sweep-seeds').value.trim(), executor: $('sweep-executor').value };
  }
  async function startSweep() {
    const err = $('sweep-error');
    err.hidden = true;
    try {
      const rec = await api('POST', '/api/sweeps', sweepRequest());
      location.hash = '#sweep/' + rec.id;
      refreshList();
    } catch (e) { err.textContent = e.message; err.hidden = false; }
  }

  // ---- the list of sweeps -----------------------------------------------------
  async function refreshList() {
    const ul = $('sweep-list');
    if (!ul) return;
    try {
      const ans = await api('GET', '/api/sweeps?limit=50&brief=1');
      ul.replaceChildren(...ans.sweeps.slice(0, 50).map((s) => el('li', { 'data-id': s.id, class: sw.view && sw.view.id === s.id ? 'sel' : '', onclick: () => { location.hash = '#sweep/' + s.id; } },
        el('span', { class: 'what', text: `sweep ${s.id} ${s.experiment} · ${s.runs} runs${s.title ? ' — ' + s.title : ''}` }), el('span', { class: 'state ' + s.state, text: s.state }))));
    } catch (e) { /* the lab is restarting */ }
  }

  // ---- the view of one sweep ---------------------------------------------------
  function showOnly(show) {
    for (const id of ['welcome', 'exp-view', 'run-view', 'compare-view']) if ($(id)) $(id).hidden = show;
    $('sweep-view').hidden = !show;
  }
  async function openSweep(id) {
    clearTimeout(sw.timer);
    showOnly(true);
    if (!sw.view || sw.view.id !== id) sw.view = { id, group: null, agg: null };
    await poll();
  }
  async function poll() {
    const v = sw.view;
    if (!v) return;
    let st;
    try { st = await api('GET', '/api/sweeps/' + v.id); } catch (e) { $('sweep-title').textContent = e.message; return; }
    if (sw.view !== v) return;
    v.status = st;
    const axes = st.axes.map((a) => a.name);
    if (v.group === null) v.group = axes.slice();
    $('sweep-title').textContent = `Sweep ${st.id}: ${st.experiment} over ${axes.join(' × ') || 'seeds'} × ${st.seeds.length} seeds (${st.runs} runs, ${st.executor})`;
    const s = st.states || {};
    $('sweep-progress').max = st.runs;
    $('sweep-progress').value = s.done || 0;
    const tasks = st.slurm_tasks ? ' · Slurm tasks: ' + Object.entries(st.slurm_tasks).map(([k, n]) => `${n} ${k}`).join(', ') : '';
    $('sweep-state').textContent = `${st.state} · ${s.done || 0} done, ${s.running || 0} running, ${(s.queued || 0) + (s.missing || 0)} waiting, ${(s.failed || 0) + (s.interrupted || 0) + (s.cancelled || 0)} not done${tasks}${st.error ? ' · ' + st.error : ''}`;
    $('sweep-cancel').hidden = st.state !== 'running';
    $('sweep-resume').hidden = st.state === 'running' || st.state === 'done';
    $('sweep-groups').replaceChildren(el('span', { class: 'muted', text: 'group by:' }), ...axes.map((a) => {
      const box = el('input', { type: 'checkbox', 'data-axis': a, onchange: (ev) => {
        v.group = axes.filter((x) => x === a ? ev.target.checked : v.group.includes(x));
        loadAggregate();
      } });
      box.checked = v.group.includes(a);
      return el('label', {}, box, ' ' + a);
    }));
    await loadAggregate();
    $('sweep-view').dataset.shown = v.id + ':' + st.state; // the aggregate drawn is of this state (for the tests)
    if (st.state === 'running') sw.timer = setTimeout(poll, 1000);
  }
  const groupParam = (v) => 'group=' + encodeURIComponent(v.group.join(',')) + '&field=' + encodeURIComponent(v.field || 'y');
  const declOf = (name) => { const e = (lab.experiments || []).find((x) => x.name === name); return e && e.chart ? e.chart : null; };
  async function loadAggregate() {
    const v = sw.view;
    let ans;
    try { ans = await api('GET', `/api/sweeps/${v.id}/aggregate?${groupParam(v)}`); } catch (e) { $('sweep-agg-error').textContent = e.message; return; }
    if (sw.view !== v) return;
    $('sweep-agg-error').textContent = '';
    v.agg = ans.aggregate;
    v.decl = declOf(v.status.experiment);
    $('sweep-csv').href = `/api/sweeps/${v.id}/aggregate?format=csv&${groupParam(v)}`;
    $('sweep-json').href = `/api/sweeps/${v.id}/aggregate?download=1&${groupParam(v)}`;
    // The quantity: a series (its points' field, below) or a summary value,
    // each named with its unit. The default is the experiment's own chart:
    // its first declared series.
    const pick = $('sweep-quantity');
    const styles = (v.decl && v.decl.styles) || [];
    const rank = (n) => { const i = styles.findIndex((st) => window.fp8chart.matchSeries(st.match, n)); return i < 0 ? 1e9 : i; };
    // Per-trial series (decl.trials) pool every trial of every run: left
    // out, the runs' own distributions are in their run views.
    const series = v.agg.series.filter((n) => !window.fp8chart.isTrials(v.decl, n)).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1));
    const unit = (kind, n) => v.agg.units && v.agg.units[kind + ':' + n];
    const opt = (value, text) => el('option', { value, text });
    // A declared style whose series differ by group (every64, every128 of
    // "every* (kBlockN)" across a k-block-n sweep) is one choice: each
    // group's series of that style.
    const styleChoices = [];
    styles.forEach((st, i) => {
      const ns = series.filter((n) => rank(n) === i);
      if (ns.length > 1 && a_groupsEachOne(v.agg, ns)) styleChoices.push({ value: 'style:' + i, text: st.match + ' (each group\'s series)' });
    });
    const keep = pick.value;
    pick.replaceChildren(
      el('optgroup', { label: 'series (mean over seeds against x)' }, ...styleChoices.map((c) => opt(c.value, c.text)), ...series.map((n) => opt('series:' + n, n))),
      el('optgroup', { label: 'summary values' }, ...v.agg.summary.map((n) => opt('summary:' + n, n + (unit('summary', n) ? ` (${unit('summary', n)})` : ' (unit not declared)')))));
    const options = [...styleChoices.map((c) => c.value), ...series.map((n) => 'series:' + n), ...v.agg.summary.map((n) => 'summary:' + n)];
    pick.value = options.includes(keep) ? keep : options[0] || '';
    const fsel = $('sweep-field');
    const fs = window.fp8chart.fields(v.decl).filter((f) => f.key !== 'x');
    fsel.replaceChildren(...fs.map((f) => opt(f.key, (f.key === 'y' ? 'default: ' : '') + f.label)));
    fsel.value = v.field || 'y';
    fsel.disabled = pick.value.startsWith('summary:');
    const ex = v.agg.excluded.length;
    $('sweep-excluded').textContent = ex ? `${ex} runs not (yet) aggregated: ${v.agg.excluded.slice(0, 3).join('; ')}${ex > 3 ? '; …' : ''}` : '';
    renderTable();
    drawChart();
    drawParallel();
  }
  function renderTable() {
    const a = sw.view.agg;
    const head = el('tr', {}, ...['group', 'summary', 'n', 'mean', 'standard error', '95 % CI'].map((h) => el('th', { text: h })));
    const rows = [];
    for (const g of a.groups) for (const n of a.summary) {
      const s = g.summary[n];
      if (!s) continue;
      rows.push(el('tr', {}, el('td', { text: g.label }), el('td', { text: n }), el('td', { text: String(s.n) + (s.nonfinite ? ` (+${s.nonfinite} non-finite)` : '') }),
        el('td', { text: fmt(s.mean) }), el('td', { text: fmt(s.se) }), el('td', { text: `[${fmt(s.ci95_lo)}, ${fmt(s.ci95_hi)}]` })));
    }
    $('sweep-table').replaceChildren(head, ...rows);
  }
  // a_groupsEachOne reports whether every group holds exactly one of the
  // series names.
  function a_groupsEachOne(agg, names) {
    return agg.groups.every((g) => names.filter((n) => g.series[n] && g.series[n].length).length === 1);
  }
  // seriesOf returns a group's points of the chosen series: the named one,
  // or (style:I) the group's one series of declared style I.
  function seriesOf(v, g, kind, name) {
    if (kind !== 'style') return g.series[name] || [];
    const st = (v.decl.styles || [])[+name];
    const n = Object.keys(g.series).find((s) => !window.fp8chart.isTrials(v.decl, s) && window.fp8chart.matchSeries(st.match, s) &&
      (v.decl.styles || []).findIndex((x) => window.fp8chart.matchSeries(x.match, s)) === +name);
    return n ? g.series[n] : [];
  }
  // A value a log axis cannot show (≤ 0) or a non-finite one is not drawn
  // but counted under the chart.
  const okOn = (log) => (x) => x !== null && x !== undefined && isFinite(x) && (!log || x > 0);
  function yAxisOf(decl, kind, name, field, vals) {
    let axis = null;
    if (kind === 'summary') axis = window.fp8chart.summaryAxis(decl, name);
    else if (kind === 'style') {
      const f = window.fp8chart.fields(decl).find((x) => x.key === field);
      axis = f ? f.axis : null;
    } else {
      const f = window.fp8chart.fields(decl).find((x) => x.key === field);
      axis = f ? f.axis : null;
      const st = decl && (decl.styles || []).find((x) => window.fp8chart.matchSeries(x.match, name));
      if (field === 'y' && st && st.axis === 2 && decl.y2) axis = decl.y2;
    }
    axis = axis || { quantity: name, unit: 'unit not declared' };
    const log = !!axis.log && vals.filter((x) => x !== null && x !== undefined).every((x) => x > 0);
    return { axis, log };
  }
  // drawChart: a summary value per group as mean with its 95 % interval,
  // or a series (its points' chosen field) as mean against x per group,
  // with the interval as bars; the axes carry the declared quantity and
  // unit, the interval's method is named.
  function drawChart() {
    const v = sw.view, a = v.agg;
    if (!window.echarts || !a) return;
    if (!sw.chart) sw.chart = echarts.init($('sweep-chart'));
    const [kind, name] = ($('sweep-quantity').value || ':').split(/:(.*)/s);
    $('sweep-field').disabled = kind === 'summary';
    const notes = [];
    if (!name) {
      sw.chart.setOption({ title: { text: 'no run of the sweep has ended done yet', textStyle: { fontSize: 13 } } }, true);
      $('sweep-notes').replaceChildren();
      return;
    }
    const palette = window.fp8chart.PALETTE;
    const methods = new Set();
    const bar = (color) => (params, api) => {
      const lo = api.coord([api.value(0), api.value(1)]), hi = api.coord([api.value(0), api.value(2)]);
      if (!isFinite(lo[1]) || !isFinite(hi[1])) return null;
      const w = 6, st = { stroke: color, lineWidth: 1.5 };
      return { type: 'group', children: [
        { type: 'line', shape: { x1: lo[0], y1: lo[1], x2: hi[0], y2: hi[1] }, style: st },
        { type: 'line', shape: { x1: lo[0] - w, y1: lo[1], x2: lo[0] + w, y2: lo[1] }, style: st },
        { type: 'line', shape: { x1: hi[0] - w, y1: hi[1], x2: hi[0] + w, y2: hi[1] }, style: st }] };
    };
    let option, dropped = 0;
    const field = v.field || 'y';
    if (kind === 'summary') {
      const labels = a.groups.map((g) => g.label);
      const stats = a.groups.map((g) => g.summary[name] || {});
      const { axis, log } = yAxisOf(v.decl, kind, name, field, stats.flatMap((s) => [s.mean, s.ci95_lo]));
      const ok = okOn(log);
      for (const s of stats) { if (s.ci95_method) methods.add(s.ci95_method); if (!ok(s.mean)) dropped++; }
      option = {
        title: { text: `${name}: mean over seeds, 95 % interval per group`, textStyle: { fontSize: 13 } },
        tooltip: { trigger: 'item' }, grid: { left: 90, right: 30, bottom: 80 },
        xAxis: { type: 'category', data: labels, name: v.group.join(', ') || 'all runs', nameLocation: 'middle', nameGap: 55, axisLabel: { rotate: labels.length > 6 ? 30 : 0 } },
        yAxis: { type: log ? 'log' : 'value', scale: true, name: `${axis.quantity} (${axis.unit})`, nameLocation: 'end', nameTextStyle: { align: 'left' }, axisLine: { onZero: false }, axisLabel: { formatter: (x) => fmt(x) } },
        series: [
          { type: 'scatter', name: 'mean', data: stats.map((s) => (ok(s.mean) ? s.mean : null)), symbolSize: 9, itemStyle: { color: palette[0] } },
          { type: 'custom', name: '95 % interval', data: stats.map((s, i) => [i, s.ci95_lo, s.ci95_hi]).filter((d) => ok(d[1]) && ok(d[2])), renderItem: bar(palette[0]) }],
      };
    } else {
      const series = [];
      const all = a.groups.flatMap((g) => seriesOf(v, g, kind, name).flatMap((p) => [p.mean, p.ci95_lo]));
      const { axis, log } = yAxisOf(v.decl, kind, name, field, all);
      const ok = okOn(log);
      const xd = (v.decl && v.decl.x) || { quantity: 'x', unit: 'unit not declared' };
      const xs = a.groups.flatMap((g) => seriesOf(v, g, kind, name).map((p) => p.x)).filter((x) => x !== undefined && x !== null);
      const logX = !!xd.log && xs.every((x) => x > 0);
      a.groups.forEach((g, i) => {
        const pts = seriesOf(v, g, kind, name).filter((p) => p.x !== undefined && p.x !== null);
        const color = palette[i % palette.length];
        for (const p of pts) { if (p.ci95_method) methods.add(p.ci95_method); if (!ok(p.mean)) dropped++; }
        series.push({ type: 'line', name: g.label, data: pts.filter((p) => ok(p.mean)).map((p) => [p.x, p.mean]), itemStyle: { color }, lineStyle: { color }, symbolSize: 6 });
        series.push({ type: 'custom', name: g.label + ' (95 %)', data: pts.filter((p) => ok(p.ci95_lo) && ok(p.ci95_hi)).map((p) => [p.x, p.ci95_lo, p.ci95_hi]), renderItem: bar(color), z: 1, tooltip: { show: false } });
      });
      option = {
        title: { text: `${kind === 'style' ? v.decl.styles[+name].match : name}${field !== 'y' ? ' · ' + field : ''}: mean over seeds per group, 95 % interval bars`, textStyle: { fontSize: 13 } },
        tooltip: { trigger: 'item' }, legend: { type: 'scroll', bottom: 0, data: a.groups.map((g) => g.label) }, grid: { left: 90, right: 30, bottom: 70 },
        xAxis: { type: logX ? 'log' : 'value', logBase: logX ? (xd.base || 10) : undefined, name: `${xd.quantity} (${xd.unit})`, nameLocation: 'middle', nameGap: 28, scale: true, axisLine: { onZero: false },
          axisLabel: { formatter: (x) => (logX && (xd.base || 10) === 2 && x >= 1024 && x % 1024 === 0 ? x / 1024 + 'k' : window.fp8chart.fmtTick(x)) } },
        yAxis: { type: log ? 'log' : 'value', name: `${axis.quantity} (${axis.unit})`, nameLocation: 'end', nameTextStyle: { align: 'left' }, scale: true, axisLine: { onZero: false },
          axisLabel: { formatter: (x) => (log ? window.fp8chart.fmtTick(x) : fmt(x)) } },
        series,
      };
    }
    if (methods.size) notes.push('bars: ' + [...methods].join('; '));
    if (dropped) notes.push(`${dropped} group mean${dropped > 1 ? 's' : ''} not finite${option.yAxis.type === 'log' ? ' or ≤ 0 on the log axis' : ''}: not drawn (the table has them)`);
    $('sweep-notes').replaceChildren(...notes.map((n) => el('li', { text: n })));
    sw.chart.setOption(option, true);
  }
  // drawParallel: one line per run, the swept parameters and the chosen
  // summary value as axes.
  async function drawParallel() {
    const v = sw.view, st = v.status;
    if (!window.echarts || !st) return;
    const [kind, name] = ($('sweep-quantity').value || ':').split(/:(.*)/s);
    const summary = kind === 'summary' ? name : (v.agg.summary[0] || '');
    if (!summary) return;
    let runs;
    try { runs = (await api('GET', `/api/runs?limit=10000&q=${encodeURIComponent('sweep = ' + st.id + ' AND state = done')}`)).runs; } catch (e) { return; }
    if (sw.view !== v) return;
    if (!sw.par) sw.par = echarts.init($('sweep-parallel'));
    const dims = st.axes.map((a, i) => {
      const numeric = a.values.every((x) => typeof x === 'number');
      return numeric ? { dim: i, name: a.name, type: 'value', scale: true } : { dim: i, name: a.name, type: 'category', data: a.values.map(String) };
    });
    dims.push({ dim: dims.length, name: 'seed (run)', type: 'value', scale: true });
    const su = v.agg.units && v.agg.units['summary:' + summary];
    dims.push({ dim: dims.length, name: 'summary: ' + summary + (su ? ` (${su})` : ''), type: 'value', scale: true });
    const data = runs.map((r) => [...st.axes.map((a) => typeof a.values[0] === 'number' ? r.params[a.name] : String(r.params[a.name])), r.seed,
      r.summary && r.summary[summary] !== undefined ? r.summary[summary] : null]);
    const vals = data.map((d) => d[d.length - 1]).filter((x) => x !== null);
    sw.par.setOption({
      title: { text: `parameters against ${summary} (${runs.length} runs)`, textStyle: { fontSize: 13 } },
      parallelAxis: dims.map((d) => ({ ...d, nameTextStyle: { fontSize: 11 }, axisLabel: { formatter: d.type === 'value' ? (x) => fmt(x) : undefined } })),
      parallel: { left: 60, right: 170, bottom: 30, top: 70 },
      visualMap: vals.length ? { type: 'continuous', min: Math.min(...vals), max: Math.max(...vals), dimension: dims.length - 1, right: 10, top: 'middle', calculable: true,
        formatter: (x) => fmt(x), inRange: { color: ['#0072B2', '#E69F00'] } } : undefined,
      series: [{ type: 'parallel', data, lineStyle: { width: 1, opacity: 0.5 } }],
    }, true);
  }

  // ---- the runs list's filter and a run's tags --------------------------------
  async function applyFilter(text) {
    const err = $('run-query-error');
    try {
      if (text.trim()) await api('GET', '/api/runs?limit=1&q=' + encodeURIComponent(text));
      err.textContent = '';
      lab.runQuery = text.trim();
      if (typeof refreshRuns === 'function') refreshRuns();
    } catch (e) { err.textContent = e.message; }
  }
  async function showTags(id) {
    const box = $('run-tags');
    if (!box) return;
    try {
      const run = await api('GET', '/api/runs/' + id);
      $('run-tags-input').value = (run.tags || []).join(', ');
      box.dataset.run = id;
      $('run-tags-status').textContent = run.sweep ? `run ${run.sweep_run} of sweep ${run.sweep}` : '';
    } catch (e) { /* gone */ }
  }
  async function saveTags() {
    const id = $('run-tags').dataset.run;
    const tags = $('run-tags-input').value.split(',').map((s) => s.trim()).filter(Boolean);
    try {
      await api('PUT', `/api/runs/${id}/tags`, { tags });
      $('run-tags-status').textContent = 'saved';
      if (typeof refreshRuns === 'function') refreshRuns();
    } catch (e) { $('run-tags-status').textContent = e.message; }
  }

  // ---- wiring -----------------------------------------------------------------
  function build() {
    document.head.append(el('style', { text: `
      #sweep-form { margin: 12px 0; } #sweep-form summary { cursor: pointer; font-weight: 600; }
      .sweep-grid { display: grid; grid-template-columns: max-content minmax(160px, 420px); gap: 4px 12px; margin: 8px 0; align-items: center; }
      .sweep-grid label { font-family: ui-monospace, monospace; } .sweep-grid input, .sweep-grid select { font: inherit; padding: 2px 6px; }
      .sweep-chart { width: 100%; height: 380px; border: 1px solid #e3e6ea; border-radius: 4px; margin: 6px 0; }
      #run-query { width: 100%; font: inherit; padding: 2px 6px; } #run-query-error, #sweep-error, #sweep-agg-error { color: #b91c1c; }
      #sweep-list li { display: flex; gap: 6px; font-size: 13px; } #sweep-list .what { flex: 1; }` }));
    const runsSection = $('run-list') && $('run-list').closest('section');
    if (runsSection) {
      runsSection.insertBefore(el('div', { class: 'row small' },
        el('input', { type: 'search', id: 'run-query', placeholder: 'filter: kBlockN IN (64, 96) AND tag = paper', title: 'experiment, state, origin, tag, seed, sweep, text or any parameter; = != < <= > >= ~ IN; AND OR NOT; ( )', spellcheck: 'false',
          onkeydown: (ev) => { if (ev.key === 'Enter') applyFilter(ev.target.value); } }),
        el('span', { id: 'run-query-error', class: 'small', role: 'alert' })), $('run-list'));
      runsSection.after(el('section', {}, el('h2', { text: 'Sweeps' }), el('ul', { id: 'sweep-list', class: 'list runs' })));
    }
    const expView = $('exp-view');
    if (expView) expView.append(el('details', { id: 'sweep-form' }, el('summary', { text: 'Sweep: several values of any parameters × seeds, with statistics' }), el('div', { class: 'sweep-body' })));
    const actions = $('run-actions');
    if (actions) actions.after(el('div', { id: 'run-tags', class: 'row small' }, el('label', { for: 'run-tags-input', text: 'tags' }),
      el('input', { type: 'text', id: 'run-tags-input', placeholder: 'a, b', spellcheck: 'false' }),
      el('button', { type: 'button', id: 'run-tags-save', text: 'Save tags', onclick: saveTags }), el('span', { id: 'run-tags-status', class: 'muted' })));
    $('center').append(el('div', { id: 'sweep-view', hidden: true },
      el('h2', { id: 'sweep-title' }),
      el('div', { class: 'row' }, el('progress', { id: 'sweep-progress', max: 1, value: 0 }), el('span', { id: 'sweep-state', class: 'muted' }),
        el('button', { type: 'button', id: 'sweep-cancel', hidden: true, text: 'Cancel the sweep', onclick: async () => {
          try { await api('POST', `/api/sweeps/${sw.view.id}/cancel`); } catch (e) { $('sweep-agg-error').textContent = e.message; }
          poll();
        } }),
        el('button', { type: 'button', id: 'sweep-resume', hidden: true, text: 'Resume (run what did not end done)', onclick: async () => {
          try { await api('POST', `/api/sweeps/${sw.view.id}/resume`); } catch (e) { $('sweep-agg-error').textContent = e.message; }
          poll();
        } })),
      el('div', { class: 'row small', id: 'sweep-groups' }),
      el('div', { class: 'row small' }, el('label', { for: 'sweep-quantity', text: 'show' }), el('select', { id: 'sweep-quantity', onchange: () => { drawChart(); drawParallel(); } }),
        el('label', { for: 'sweep-field', text: 'quantity of the points' }), el('select', { id: 'sweep-field', onchange: (ev) => { sw.view.field = ev.target.value; loadAggregate(); } }),
        el('a', { id: 'sweep-csv', download: true, text: 'aggregate CSV' }), el('a', { id: 'sweep-json', download: true, text: 'aggregate JSON' }),
        el('button', { type: 'button', id: 'sweep-runs', text: 'its runs in the list', onclick: () => {
          const q = 'sweep = ' + sw.view.id;
          if ($('run-query')) $('run-query').value = q;
          applyFilter(q);
        } })),
      el('div', { id: 'sweep-agg-error', role: 'alert', class: 'small' }),
      el('div', { id: 'sweep-chart', class: 'sweep-chart' }),
      el('ul', { id: 'sweep-notes', class: 'chart-notes' }),
      el('div', { id: 'sweep-parallel', class: 'sweep-chart' }),
      el('p', { id: 'sweep-excluded', class: 'muted small' }),
      el('table', { id: 'sweep-table', class: 'meta' })));
  }
  function route() {
    const h = location.hash.slice(1);
    const [kind, arg] = [h.split('/')[0], h.split('/').slice(1).join('/')];
    if (kind === 'sweep' && arg) { openSweep(arg); return; }
    clearTimeout(sw.timer);
    if (sw.view) { sw.view = null; $('sweep-view').hidden = true; }
    if (kind === 'exp') setTimeout(renderForm, 0);
    if (kind === 'run' && arg) showTags(arg);
  }
  function start() {
    if (document.body.dataset.ready !== 'true' && document.body.dataset.ready !== 'error') { setTimeout(start, 50); return; }
    build();
    window.addEventListener('hashchange', route);
    window.addEventListener('resize', () => { sw.chart && sw.chart.resize(); sw.par && sw.par.resize(); });
    route();
    refreshList();
    setInterval(refreshList, 3000);
    document.body.dataset.sweeps = 'ready';
  }
  start();
})();
