// Package sim is the experiment runtime of fp8lab.
//
// It owns what every experiment needs and none of them should write twice:
//
//   - typed parameters with limits ([Param], [Kind]) parsed from command-line
//     strings or from JSON, and the validated [Values] an experiment reads;
//   - the [Experiment] interface and the registry of experiments by name
//     ([Register], [Lookup], [Experiments]);
//   - seeded, cancellable runs ([Execute], [Run]) that emit a stream of result
//     [Point]s, progress, notes and a summary;
//   - deterministic parallel trials ([Trials]): the numbers depend on the run
//     seed, a key and the trial index only, never on the number of cores;
//   - sinks, where a run's output goes ([Sink]): an aligned terminal table
//     ([TableSink]), JSON lines ([JSONSink]), a progress bar ([ProgressBar]),
//     an in-memory recorder ([Recorder]) and a fan-out ([Tee]); the lab's store
//     and WebSocket are further sinks defined elsewhere.
//
// It does not own any arithmetic (fp8, accum, attention), the experiments
// themselves (package experiments), the command line (cmd/lab) or the lab's
// storage and transport. It is pure Go without cgo and builds for
// GOOS=js GOARCH=wasm.
package sim
