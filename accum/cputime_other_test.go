//go:build !linux

package accum

import "time"

func threadCPU() time.Duration { return 0 }
func lockThread()              {}
func unlockThread()            {}
