//go:build linux

package accum

import (
	"runtime"
	"syscall"
	"time"
)

// threadCPU returns the CPU time used by the calling OS thread
// (getrusage RUSAGE_THREAD); the caller locks its goroutine to the thread.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func lockThread()   { runtime.LockOSThread() }
func unlockThread() { runtime.UnlockOSThread() }
