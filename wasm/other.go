//go:build !(js && wasm)

package main

import (
	"fmt"
	"os"
)

// main says how to build this command: it only makes sense in a browser.
func main() {
	fmt.Fprintln(os.Stderr, "wasm: build with GOOS=js GOARCH=wasm (make lab-wasm); the lab's page runs it in a Web Worker")
	os.Exit(2)
}
