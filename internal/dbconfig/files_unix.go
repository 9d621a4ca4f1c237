//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package dbconfig

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// forbiddenInName are the bytes a file name in the directory must not hold.
const forbiddenInName = "/\x00"

// openDir opens d's directory for the *at calls, refusing a directory
// that became a symbolic link.
func (d *FileDir) openDir() (int, error) {
	return unix.Open(d.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// ReadFile reads the regular file path names in d: opened with
// O_NOFOLLOW and O_NONBLOCK (a FIFO or device never blocks the session),
// checked to be a regular file after opening, at most MaxFileSize bytes,
// within ReadTimeout and ctx. Failures are 30020 errors naming the path
// as given, never its content.
func (d *FileDir) ReadFile(ctx context.Context, path string) ([]byte, error) {
	name, err := d.name(path)
	if err != nil {
		return nil, err
	}
	dirfd, err := d.openDir()
	if err != nil {
		return nil, fileError(path, err)
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			err = errLink
		}
		return nil, fileError(path, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fileError(path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fileError(path, errors.New("not a regular file"))
	}
	return readAll(ctx, path, f, st.Size)
}

// WriteFile creates the file path names in d with data, mode 0600: it
// writes a temporary file in d (O_CREAT|O_EXCL|O_NOFOLLOW), syncs it,
// and links it to its name, which fails when the name exists (as a file,
// a link or anything else): an existing file is never overwritten,
// truncated or followed. Failures are 30020 errors naming the path; the
// temporary file is removed.
func (d *FileDir) WriteFile(path string, data []byte) error {
	name, err := d.name(path)
	if err != nil {
		return err
	}
	dirfd, err := d.openDir()
	if err != nil {
		return fileError(path, err)
	}
	defer unix.Close(dirfd)
	tmp := tempName()
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fileError(path, err)
	}
	defer func() { _ = unix.Unlinkat(dirfd, tmp, 0) }() // gone once linked, or cleaned up on failure
	if err := writeSynced(os.NewFile(uintptr(fd), tmp), data); err != nil {
		return fileError(path, err)
	}
	if err := unix.Linkat(dirfd, tmp, dirfd, name, 0); err != nil {
		if errors.Is(err, unix.EEXIST) {
			err = errExists
		}
		return fileError(path, err)
	}
	_ = unix.Fsync(dirfd)
	return nil
}
