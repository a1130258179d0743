//go:build !linux

package hugemem

// Enabled is whether Advise makes a system call on this platform.
const Enabled = false

func advise([]byte) {}
