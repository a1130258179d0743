//go:build linux

package hugemem

import "syscall"

// Enabled is whether Advise makes a system call on this platform.
const Enabled = true

func advise(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
