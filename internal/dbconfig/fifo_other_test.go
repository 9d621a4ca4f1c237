//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package dbconfig

import "errors"

// mkfifo makes a FIFO at path; this platform has none in a directory.
func mkfifo(string) error { return errors.ErrUnsupported }
