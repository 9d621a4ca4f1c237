package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxFileSize bounds every configuration file Load, LoadMode and LoadFile
// read (global.yaml, server.yaml, database-*.yaml, an embedded-library
// file).
const MaxFileSize = 16 << 20

// ReadFile returns the content of the regular file at path, at most limit
// bytes. A named pipe, a device, a socket or a directory is refused at once
// (the file is opened without blocking, so a pipe with no writer cannot
// hang the caller), and so is a file longer than limit; each error names
// the path and says what it is. ctx bounds the read: when it ends, ReadFile
// returns the context's error at once (a read stuck in the kernel, such as
// on a hung network file system, is abandoned in the background). Safe for
// concurrent use.
func ReadFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := readRegular(ctx, path, limit)
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("reading %s: %w", path, ctx.Err())
	}
}

// readRegular opens path without blocking, checks it is a regular file of
// at most limit bytes and reads it, checking ctx between chunks.
func readRegular(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, openError(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file: point it at a regular file", path, describeType(fi.Mode()))
	}
	if fi.Size() > limit {
		return nil, tooLarge(path, limit)
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + 1)
	r := io.LimitReader(f, limit+1)
	chunk := make([]byte, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		n, err := r.Read(chunk)
		buf.Write(chunk[:n])
		if int64(buf.Len()) > limit {
			return nil, tooLarge(path, limit)
		}
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%s is larger than the %s limit for this file", path, sizeString(limit))
}

// openError explains the errors an operator can act on.
func openError(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("%s is a symbolic link loop (it resolves to itself): %w", path, err)
	}
	return err
}

func describeType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	default:
		return "a special file (" + m.Type().String() + ")"
	}
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
