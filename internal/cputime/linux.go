//go:build linux

package cputime

import (
	"syscall"
	"time"
)

// thread returns the calling thread's user + system CPU time.
func thread() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
