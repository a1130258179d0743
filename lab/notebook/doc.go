// Package notebook keeps every run of the lab: which experiment ran, with
// which parameters and seed, built from which fp8lab version and revision,
// when it started and ended, how it ended, every point it emitted (written
// while the run streams), its summary, the experiment's notes and the user's
// annotation.
//
// The [Store] interface is the seam: the lab server talks to it only, and
// [Open] returns the implementation on bbolt, an embedded, pure-Go,
// single-file B+tree with ACID transactions. bbolt was chosen over SQLite
// (modernc.org/sqlite) because the notebook needs no query language: runs
// are read by id and listed newest first, points are appended and read back
// in order, which are a bucket's key order; bbolt is a small dependency
// already in go.mod, has no cgo, and every committed transaction is fsynced
// before Commit returns, so a kill -9 or a power loss keeps every committed
// point and the last committed state of every run. What was not committed is
// lost as a whole transaction, never half-written.
//
// Crash recovery: [Open] marks every run it finds queued or running as
// [Interrupted] (a run cannot be running in a store nobody has open), so
// after a crash the notebook shows what was cut short, with the points that
// had been committed.
//
// The package does not run experiments, stream to viewers or serve HTTP:
// that is package lab.
package notebook
