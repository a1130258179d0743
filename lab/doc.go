// Package lab is fp8lab's lab server: a JSON HTTP API over the registry of
// experiments and the notebook of runs, a bounded pool that executes runs,
// a WebSocket stream per run, exports (JSON, CSV, a standalone HTML report
// drawn by the page's chart code, web/chart.js), and the page of package web.
//
// # Runs
//
// A run started through the API executes in the server's pool: at most
// Options.Workers at once, the others queued in order with their position
// visible (state "queued", queue_position). A run streamed in by a client
// (the page's WebAssembly worker, `lab run NAME -lab URL`, or any Go program
// through sim.LabClient) is registered with POST /api/runs and an origin
// other than "server", and then fed with POST /api/runs/{id}/events.
//
// Every run is written to the notebook (package notebook) while it runs:
// its points and progress are committed at least every Options.FlushInterval
// (100 ms), and its end state together with its last points in one
// transaction. After a crash, Open marks runs that were not finished as
// interrupted.
//
// # Viewers
//
// Each live run keeps its points in one in-memory log (older points that
// are already in the notebook may be dropped from memory). A viewer — a
// WebSocket client of GET /api/runs/{id}/stream — is a cursor into that log,
// served by its own goroutine: it sends what it has not sent yet, in
// batches, then waits for the log to grow. The run appends and signals; it
// never waits for a viewer, so a slow viewer cannot stall the run or the
// other viewers, and a viewer costs O(1) memory whatever it lags. A viewer
// whose connection does not take a message within Options.WriteTimeout
// (10 s) is disconnected; it reconnects with ?from=N, N being the number of
// points it holds, and resumes from there (from memory or from the
// notebook) without loss.
//
// # Security
//
// The server is meant for 127.0.0.1 (the default of `lab serve`). Requests
// whose Host is not the listening address are refused (DNS rebinding); every
// /api/ request from another site is refused, GET included (Origin, and
// Sec-Fetch-Site other than same-origin or none), and so are cross-origin
// WebSocket upgrades. Bodies are JSON of at most 1 MiB (8 MiB for events)
// and must arrive within Options.BodyTimeout; exports are written a page of
// points at a time, and reports past a number of points are refused, so no
// request holds more than a bounded amount of memory. Every parameter is
// validated against the experiment's schema, and a run whose estimated cost
// (sim.Coster) is over Options.MaxMemory or MaxWork is refused with the
// estimate; the runs executing at once stay within MaxMemory together. A
// client's run is bounded in bytes (limits.go). An answer to a client's
// events counts only points committed to the notebook. A bad request is a
// 4xx with the reason, never a 500; a panicking handler answers 500 and the
// server goes on.
//
// It does not compute anything itself (package sim runs experiments), nor
// store (package notebook), nor hold the page (package web).
package lab
