//go:build !linux

package main

// physicalMemory is unknown outside Linux: 0 (lab serve's default budget
// stays labserver.DefaultMaxMemory there).
func physicalMemory() int64 { return 0 }
