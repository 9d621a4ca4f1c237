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

// ownedByOther returns the owner's uid when fi belongs to a user other
// than the one this process runs as.
func ownedByOther(fi os.FileInfo) (uid int, other bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), int(st.Uid) != os.Getuid()
}
