// Package costdata reads the measured kernel costs of the decode and
// serving cost models (experiments itl, skip-sw, throughput and
// prefill-cost): one JSON file of per-kernel timings captured on an H200 by
// tools/capture/kernel_costs.py, with its provenance (GPU, driver, clocks,
// date, commit).
//
// The file is experiments/costdata/h200-kernel-costs.json, embedded at build
// time when present ([Embedded]); a build without it has no measured costs
// and [Embedded] returns [ErrNoMeasuredCosts], never numbers of its own.
// [Parse] validates a file row by row and names the file, the row index and
// the field of the first problem it finds. The lookups ([File.Decode],
// [File.KVWrite], [File.QQuant], [File.Linear], [File.Prefill]) interpolate
// between measured points; each doc comment states how, and what it does
// beyond the measured range.
//
// The package owns the schema and the interpolation; it does not own the
// cost models that add the terms up (package experiments), nor the GPU
// and model presets (package presets).
package costdata
