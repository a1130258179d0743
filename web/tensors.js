// The tensors panel of the attention-file experiment: upload .npy /
// .safetensors files into the lab's tensors folder (chunks of at most the
// lab's limit, base64 in JSON, so every request passes the lab's usual
// checks), pick the Q, K, V (and optional positions, mask) files, and run
// attention-file on them with the parameters of the form above.
// API: GET/POST/DELETE /api/tensors… (lab/tensors.go).
'use strict';

(function () {
  const roles = ['q', 'k', 'v', 'positions', 'mask'];
  let limits = { chunk: 512 << 10 };

  // $ and api are app.js's (loaded before this file).

  function say(text, bad) {
    const s = $('tensors-status');
    s.textContent = text;
    s.className = bad ? 'error small' : 'muted small';
  }

  // choices lists the files (and safetensors tensors) a role can take.
  function choices(files) {
    const out = [];
    for (const f of files) {
      if (f.tensors && f.tensors.length) for (const t of f.tensors) out.push(f.name + ':' + t);
      else if (!f.error) out.push(f.name);
    }
    return out;
  }

  async function refresh() {
    let ans;
    try { ans = await api('GET', '/api/tensors'); } catch (e) { say(e.message, true); return; }
    limits = ans.limits || limits;
    const opts = choices(ans.files);
    for (const r of roles) {
      const sel = $('tensor-' + r);
      const keep = sel.value;
      sel.replaceChildren();
      if (r === 'positions' || r === 'mask') sel.append(new Option('(none)', ''));
      for (const o of opts) sel.append(new Option(o, o));
      if (opts.includes(keep)) sel.value = keep;
      else if (!['positions', 'mask'].includes(r)) {
        const guess = opts.find((o) => new RegExp('(^|[_:])' + r + '([_.]|$)').test(o));
        if (guess) sel.value = guess;
      }
    }
    $('tensors-files').textContent = ans.files.map((f) => `${f.name} (${f.size} B${f.error ? ', unreadable: ' + f.error : ''})`).join(' · ') || 'no files yet';
  }

  async function upload() {
    const files = $('tensor-upload').files;
    for (const file of files) {
      const chunk = limits.chunk;
      for (let off = 0; off < file.size || off === 0; off += chunk) {
        const buf = new Uint8Array(await file.slice(off, off + chunk).arrayBuffer());
        let bin = '';
        for (let i = 0; i < buf.length; i += 0x8000) bin += String.fromCharCode.apply(null, buf.subarray(i, i + 0x8000));
        const done = off + chunk >= file.size;
        say(`uploading ${file.name}: ${Math.min(off + chunk, file.size)} / ${file.size} bytes`);
        try {
          await api('POST', '/api/tensors/upload', { name: file.name, offset: off, data: btoa(bin), done });
        } catch (e) { say(`${file.name}: ${e.message}`, true); return; }
        if (done) break;
      }
    }
    say('uploaded');
    refresh();
  }

  async function run() {
    const params = {};
    let seed = '1';
    for (const input of $('params').querySelectorAll('input, select')) {
      const v = input.type === 'checkbox' ? input.checked : input.value.trim();
      if (input.dataset.kind === 'seed') seed = v; else params[input.name] = v;
    }
    const files = {};
    for (const r of roles) if ($('tensor-' + r).value) files[r] = $('tensor-' + r).value;
    try {
      const r = await api('POST', '/api/tensors/run', { files, params, seed });
      location.hash = '#run/' + r.id;
    } catch (e) { say(e.message, true); }
  }

  function show() {
    const on = /^#exp\/attention-file$/.test(location.hash);
    $('tensors').hidden = !on;
    if (on) refresh();
  }

  document.addEventListener('DOMContentLoaded', () => {
    if (!$('tensors')) return;
    $('tensor-upload-go').addEventListener('click', upload);
    $('tensors-run').addEventListener('click', run);
    window.addEventListener('hashchange', show);
    show();
  });
})();
