// The lab's Web Worker: it loads the WebAssembly build of fp8lab's
// experiments (/wasm/lab.wasm, with the wasm_exec.js of the Go that built
// it) and runs experiments off the page's thread. Messages:
//
//   page → worker  {type:'run', id, experiment, params (JSON text), seed (text)}
//                  {type:'bench', model, K, millis}
//   worker → page  {type:'ready', experiments, build, serverOnly}  once loaded
//                  (serverOnly: experiment → why it cannot run in a browser)
//                  {type:'error', error}                 when loading failed
//                  {type:'event', id, event (JSON text)}  points, progress, note, end
//                  {type:'bench', result (JSON text)}
//
// A run is cancelled by terminating the worker: the Go program computes
// without yielding, so a message would not reach it.
'use strict';

importScripts('/wasm/wasm_exec.js');

self.fp8labReady = () => {
  postMessage({ type: 'ready', experiments: JSON.parse(self.fp8lab.experiments()), build: JSON.parse(self.fp8lab.build()),
    serverOnly: self.fp8lab.serverOnly ? JSON.parse(self.fp8lab.serverOnly()) : {} });
};

const go = new Go();
WebAssembly.instantiateStreaming(fetch('/wasm/lab.wasm'), go.importObject)
  .then((result) => {
    self.wasm = result; // the WebGPU binding's js side reads the module's memory through it
    return go.run(result.instance);
  })
  .catch((err) => postMessage({ type: 'error', error: String(err && err.message || err) }));

self.onmessage = (ev) => {
  const m = ev.data;
  if (!self.fp8lab) {
    postMessage({ type: 'error', error: 'the WebAssembly build is not loaded yet' });
    return;
  }
  if (m.type === 'run') {
    self.fp8lab.run(m.experiment, m.params, m.seed, (event) => postMessage({ type: 'event', id: m.id, event }));
  } else if (m.type === 'bench') {
    self.fp8lab.bench(m.model, m.K, m.millis, (result) => postMessage({ type: 'bench', result }));
  }
};
