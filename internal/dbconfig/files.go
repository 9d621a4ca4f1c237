package dbconfig

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// MaxFileSize bounds the files ReadFile reads: 16 MiB.
const MaxFileSize = 16 << 20

// ReadTimeout bounds reading one file.
const ReadTimeout = 10 * time.Second

// fileError is upstream's FileIOException (30020, HY000).
func fileError(path string, err error) *sqlerr.Error {
	return &sqlerr.Error{Code: 30020, SQLState: "HY000", Message: fmt.Sprintf("File access failed, file is: %s (%v)", path, err)}
}

// errNoFileDir is the one refusal of a file path when the node has no
// file directory: it says nothing about the file.
var errNoFileDir = errors.New("server-side files are off on this node (serve --distsql-file-dir DIR enables them)")

// FileDir is the one directory where TO FILE and FROM FILE name files on
// the node's host (serve --distsql-file-dir). A path is a file name
// directly in it, or an absolute path whose directory is it; nothing
// else is opened, and no symbolic link is followed. Files are created
// exclusively, mode 0600 (an export holds passwords): written to a
// temporary file in the directory, then linked to their name, which must
// not exist (never overwritten). Reads take regular files only, opened
// without blocking, at most MaxFileSize bytes within ReadTimeout. A nil
// *FileDir refuses every path. Safe for concurrent use.
type FileDir struct {
	dir   string // absolute, clean, symbolic links resolved
	given string // absolute and clean as the operator named it
}

// OpenFileDir checks dir for use as the FileDir: it must exist, be a
// directory, and be neither dataDir (the embedded registry's data, ""
// for none) nor inside it nor contain it, so that no statement can
// create a file among the registry's own. It does not create dir.
func OpenFileDir(dir, dataDir string) (*FileDir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("--distsql-file-dir %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("--distsql-file-dir %s: %w", dir, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("--distsql-file-dir %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("--distsql-file-dir %s: not a directory", dir)
	}
	if dataDir != "" {
		data, err := filepath.Abs(dataDir)
		if err == nil {
			if r, err := filepath.EvalSymlinks(data); err == nil {
				data = r
			}
		}
		if err != nil {
			return nil, fmt.Errorf("--distsql-file-dir: the data dir %s: %w", dataDir, err)
		}
		if within(real, data) || within(data, real) {
			return nil, fmt.Errorf("--distsql-file-dir %s: must not be the registry's data dir %s, inside it, or hold it: pick a directory of its own", dir, dataDir)
		}
	}
	return &FileDir{dir: real, given: abs}, nil
}

// within reports whether path is dir or under it (both clean, absolute).
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator)) || dir == string(filepath.Separator)
}

// Dir is the directory (absolute, symbolic links resolved); "" for nil.
func (d *FileDir) Dir() string {
	if d == nil {
		return ""
	}
	return d.dir
}

// name returns the file name path stands for in d, or the one generic
// refusal: a path outside d gets no other answer, whatever is there.
func (d *FileDir) name(path string) (string, error) {
	if d == nil {
		return "", fileError(path, errNoFileDir)
	}
	name := path
	if filepath.IsAbs(path) {
		dir, base := filepath.Split(path)
		if dir := filepath.Clean(dir); dir != d.dir && dir != d.given {
			name = ""
		} else {
			name = base
		}
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || len(name) > 255 {
		return "", fileError(path, fmt.Errorf("only files directly in the node's --distsql-file-dir %s may be named", d.dir))
	}
	return name, nil
}

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
			err = errors.New("a symbolic link, which is not followed")
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
	if st.Size > MaxFileSize {
		return nil, fileError(path, fmt.Errorf("larger than %d bytes", MaxFileSize))
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	data := make([]byte, 0, st.Size)
	buf := make([]byte, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fileError(path, err)
		}
		n, err := f.Read(buf)
		data = append(data, buf[:n]...)
		if len(data) > MaxFileSize {
			return nil, fileError(path, fmt.Errorf("larger than %d bytes", MaxFileSize))
		}
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if err != nil {
			return nil, fileError(path, err)
		}
	}
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
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".shardkeeper-" + hex.EncodeToString(rnd[:]) + ".tmp"
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fileError(path, err)
	}
	defer func() { _ = unix.Unlinkat(dirfd, tmp, 0) }() // gone once linked, or cleaned up on failure
	f := os.NewFile(uintptr(fd), tmp)
	if err := unix.Fchmod(fd, 0o600); err != nil {
		f.Close()
		return fileError(path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fileError(path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fileError(path, err)
	}
	if err := f.Close(); err != nil {
		return fileError(path, err)
	}
	if err := unix.Linkat(dirfd, tmp, dirfd, name, 0); err != nil {
		if errors.Is(err, unix.EEXIST) {
			err = errors.New("the file exists; exports never replace a file: name a new one")
		}
		return fileError(path, err)
	}
	_ = unix.Fsync(dirfd)
	return nil
}
