// Command capi is fp8lab's C ABI: built with
//
//	go build -buildmode=c-shared -o libfp8lab.so ./capi
//
// it exports the named accumulation models (one instruction, or a chain with
// promotion, over arrays of codes), the narrow-format conversions, the MX and
// NVFP4 block quantizers and the FP8 attention simulator to C, for the
// Python package fp8lab (python/, ctypes and NumPy). The exported functions
// are in exports.go; this file and the others hold the Go side, on Go
// slices, so that the tests need no cgo.
//
// The contract of every exported function:
//   - it returns 0 on success, 1 on an error (the Go message written, NUL
//     terminated and truncated to fit, into the caller's err buffer) and 2
//     when its cancellation token was cancelled (ctx.Err() in err);
//   - it never panics across the C boundary: a panic is recovered and
//     returned as an error naming the function ("internal error in ...");
//   - array arguments are pointers to C-contiguous buffers of the sizes the
//     other arguments give, owned by the caller and not kept after the call;
//   - long calls take a token (fp8lab_token_new) and look at it between
//     rows (a row is one output element: at most a few milliseconds at
//     K = 1M) or, in the attention simulator, between tiles, so that
//     fp8lab_token_cancel from another thread ends them within milliseconds.
package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

func main() {}

// Status codes of the exported functions.
const (
	statusOK        = 0
	statusError     = 1
	statusCancelled = 2
)

// tokens maps a cancellation token to its context.
var tokens struct {
	sync.Mutex
	next int64
	m    map[int64]tokenEntry
}

type tokenEntry struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// newToken returns a fresh token (≥ 1) and registers its context.
func newToken() int64 {
	tokens.Lock()
	defer tokens.Unlock()
	if tokens.m == nil {
		tokens.m = map[int64]tokenEntry{}
	}
	tokens.next++
	ctx, cancel := context.WithCancel(context.Background())
	tokens.m[tokens.next] = tokenEntry{ctx, cancel}
	return tokens.next
}

// cancelToken cancels the token's context; an unknown token is ignored.
func cancelToken(id int64) {
	tokens.Lock()
	e, ok := tokens.m[id]
	tokens.Unlock()
	if ok {
		e.cancel()
	}
}

// freeToken cancels and forgets the token.
func freeToken(id int64) {
	tokens.Lock()
	e, ok := tokens.m[id]
	delete(tokens.m, id)
	tokens.Unlock()
	if ok {
		e.cancel()
	}
}

// tokenContext returns the context of token id: context.Background for 0,
// an error for a token that does not exist (freed or never made).
func tokenContext(id int64) (context.Context, error) {
	if id == 0 {
		return context.Background(), nil
	}
	tokens.Lock()
	defer tokens.Unlock()
	e, ok := tokens.m[id]
	if !ok {
		return nil, fmt.Errorf("cancellation token %d does not exist", id)
	}
	return e.ctx, nil
}

// status maps an error to a status code.
func status(err error) int {
	switch {
	case err == nil:
		return statusOK
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return statusCancelled
	}
	return statusError
}

// guard runs fn, turning a panic into an error that names the call.
func guard(name string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error in %s: %v (please report it)", name, r)
		}
	}()
	return fn()
}

// parallelRows runs fn(lo, hi) over [0, rows) in chunks on up to threads
// goroutines (threads ≤ 0: GOMAXPROCS), stopping at the first error or
// once ctx is cancelled (looked at before every chunk of at most 64 rows).
func parallelRows(ctx context.Context, rows, threads int, fn func(lo, hi int) error) error {
	if rows <= 0 {
		return ctx.Err()
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	chunk := max(1, min(64, rows/(4*threads)))
	workers := min(threads, (rows+chunk-1)/chunk)
	var next atomic.Int64
	var once sync.Once
	var first error
	var failed atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { first = fmt.Errorf("internal error: %v (please report it)", r) })
					failed.Store(true)
				}
			}()
			for !failed.Load() {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= rows {
					return
				}
				if err := ctx.Err(); err != nil {
					once.Do(func() { first = err })
					failed.Store(true)
					return
				}
				if err := fn(lo, min(lo+chunk, rows)); err != nil {
					once.Do(func() { first = err })
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}
