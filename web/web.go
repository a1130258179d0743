// Package web holds the lab's browser page, embedded in the binary: the
// HTML, its script and style, the Web Worker that runs the WebAssembly build
// of the experiments, and ECharts vendored from npm (vendor/echarts, with
// its licenses). Nothing the page loads comes from another host.
//
// The WebAssembly build itself (static/wasm/lab.wasm and wasm_exec.js) is a
// build output: `make lab` writes it before building cmd/lab, and go:embed
// picks up whatever is there. Without it the page runs experiments on the
// server only.
//
// The package holds files, not logic: package lab serves them.
package web

import (
	"embed"
	"io/fs"
)

//go:embed index.html app.js chart.js tensors.js worker.js style.css favicon.svg vendor static
var files embed.FS

// Files returns the page's files: index.html, app.js, chart.js (the charts),
// worker.js, style.css and vendor/echarts/.
func Files() fs.FS { return files }

// WASM returns the embedded WebAssembly build: lab.wasm and wasm_exec.js
// when `make lab-wasm` ran before the build, otherwise only a README.
func WASM() fs.FS {
	sub, err := fs.Sub(files, "static/wasm")
	if err != nil {
		panic(err) // the directory is embedded: cannot happen
	}
	return sub
}

// EChartsJS returns the vendored echarts.min.js, for reports that inline it.
func EChartsJS() []byte {
	b, err := files.ReadFile("vendor/echarts/echarts.min.js")
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	return b
}

// ChartJS returns chart.js, the page's chart code, for reports that draw
// their chart as the page does.
func ChartJS() []byte {
	b, err := files.ReadFile("chart.js")
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	return b
}
