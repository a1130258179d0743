//go:build labtest

package main

// The lab's end-to-end tests build the registry with -tags labtest, so that
// the browser has the lab's test experiment too.
import _ "github.com/fp8lab/fp8lab/lab/labtest"
