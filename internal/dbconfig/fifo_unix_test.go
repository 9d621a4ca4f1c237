//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package dbconfig

import "golang.org/x/sys/unix"

// mkfifo makes a FIFO at path.
func mkfifo(path string) error { return unix.Mkfifo(path, 0o600) }
