//go:build unix

package embedded

import (
	"os"
	"syscall"
)

// flock locks f exclusively without waiting. Closing f releases it.
func flock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
