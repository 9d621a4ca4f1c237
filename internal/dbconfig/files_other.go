//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package dbconfig

import "context"

// forbiddenInName are the bytes a file name in the directory must not
// hold: both separators and the drive or stream colon.
const forbiddenInName = "/\\:\x00"

// ReadFile reads the regular file path names in d, through an os.Root of
// d (see FileDir for what this platform guarantees): at most MaxFileSize
// bytes, within ReadTimeout and ctx. Failures are 30020 errors naming
// the path as given, never its content.
func (d *FileDir) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return d.readFileInRoot(ctx, path)
}

// WriteFile creates the file path names in d with data: a temporary file
// created exclusively in d, synced, and linked to its name, which fails
// when the name exists: an existing file is never overwritten. Failures
// are 30020 errors naming the path; the temporary file is removed.
func (d *FileDir) WriteFile(path string, data []byte) error {
	return d.writeFileInRoot(path, data)
}
