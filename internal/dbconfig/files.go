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
// else is opened. Files are created exclusively, mode 0600 (an export
// holds passwords): written to a temporary file in the directory, then
// linked to their name, which must not exist (never overwritten). Reads
// take regular files only, at most MaxFileSize bytes within ReadTimeout.
// A nil *FileDir refuses every path. Safe for concurrent use.
//
// What each platform guarantees:
//   - Linux, macOS and the BSDs: the directory is opened once per call
//     without following a link (O_NOFOLLOW|O_DIRECTORY) and the file
//     relative to it (openat); no symbolic link is followed, the file
//     included, and a FIFO or device is opened without blocking and
//     refused after opening (fstat), so what is checked is what is read.
//   - Elsewhere (Windows; also plan9, js and wasip1, with os.Root's own
//     caveats there): the file is reached through an os.Root of the
//     directory, which refuses any path or symbolic link that resolves
//     outside it, and on Windows the reserved device names (NUL, COM1);
//     a name that is a link, or not a regular file, is refused before
//     opening, and the opened file is checked again. A link swapped in
//     between the check and the open can still be followed, but only to
//     a file inside the directory.
type FileDir struct {
	dir   string // absolute, clean, symbolic links resolved
	given string // absolute and clean as the operator named it
	flag  string // the serve flag that named it, for messages
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
	return &FileDir{dir: real, given: abs, flag: "--distsql-file-dir"}, nil
}

// OpenConfDir opens the node's conf dir (serve --conf) as a FileDir for
// reading: CONVERT YAML CONFIGURATION names its files. Nothing is ever
// written there.
func OpenConfDir(dir string) (*FileDir, error) {
	d, err := OpenFileDir(dir, "")
	if err != nil {
		return nil, errors.New(strings.Replace(err.Error(), "--distsql-file-dir", "--conf", 1))
	}
	d.flag = "--conf"
	return d, nil
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
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, forbiddenInName) || len(name) > 255 {
		return "", fileError(path, fmt.Errorf("only files directly in the node's %s %s may be named", d.flag, d.dir))
	}
	return name, nil
}

// readAll reads f, of size bytes by its stat, into memory: at most
// MaxFileSize bytes, within ReadTimeout and ctx. Failures are 30020
// errors naming path.
func readAll(ctx context.Context, path string, f io.Reader, size int64) ([]byte, error) {
	if size > MaxFileSize {
		return nil, fileError(path, fmt.Errorf("larger than %d bytes", MaxFileSize))
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	data := make([]byte, 0, size)
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

// tempName is a new temporary file name for WriteFile, in the directory.
func tempName() string {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	return ".shardkeeper-" + hex.EncodeToString(rnd[:]) + ".tmp"
}

// errExists is WriteFile's refusal of a name that exists.
var errExists = errors.New("the file exists; exports never replace a file: name a new one")

// errLink is the refusal of a name that is a symbolic link.
var errLink = errors.New("a symbolic link, which is not followed")

// readFileInRoot is ReadFile through an os.Root of the directory (see
// FileDir for what it guarantees); the platforms without openat use it.
func (d *FileDir) readFileInRoot(ctx context.Context, path string) ([]byte, error) {
	name, err := d.name(path)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return nil, fileError(path, err)
	}
	defer root.Close()
	st, err := root.Lstat(name)
	if err != nil {
		return nil, fileError(path, err)
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return nil, fileError(path, errLink)
	}
	if !st.Mode().IsRegular() {
		return nil, fileError(path, errors.New("not a regular file"))
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, fileError(path, err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, fileError(path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fileError(path, errors.New("not a regular file"))
	}
	return readAll(ctx, path, f, st.Size())
}

// writeFileInRoot is WriteFile through an os.Root of the directory: the
// temporary file is created exclusively (O_EXCL does not follow a link)
// and linked to its name with Root.Link, which fails when the name
// exists. The platforms without openat use it.
func (d *FileDir) writeFileInRoot(path string, data []byte) error {
	name, err := d.name(path)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return fileError(path, err)
	}
	defer root.Close()
	tmp := tempName()
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fileError(path, err)
	}
	defer func() { _ = root.Remove(tmp) }() // gone once linked, or cleaned up on failure
	if err := writeSynced(f, data); err != nil {
		return fileError(path, err)
	}
	if err := root.Link(tmp, name); err != nil {
		if errors.Is(err, os.ErrExist) {
			err = errExists
		}
		return fileError(path, err)
	}
	return nil
}

// writeSynced sets f to mode 0600 (whatever the umask), writes data,
// syncs and closes f; f is closed whatever the outcome.
func writeSynced(f *os.File, data []byte) error {
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
