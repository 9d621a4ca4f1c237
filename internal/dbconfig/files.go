package dbconfig

import (
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// MaxFileSize bounds the files ReadFile reads: 16 MiB.
const MaxFileSize = 16 << 20

// fileError is upstream's FileIOException (30020, HY000).
func fileError(path string, err error) *sqlerr.Error {
	return &sqlerr.Error{Code: 30020, SQLState: "HY000", Message: fmt.Sprintf("File access failed, file is: %s (%v)", path, err)}
}

// CheckFileAccess says whether a session may name files on the node's
// host (TO FILE, FROM FILE): only from a loopback client, or as a user
// configured in the authority rule (configuredUser), since the node reads
// and writes them with its own rights. The refusal is 30001.
func CheckFileAccess(clientHost string, configuredUser bool) error {
	if configuredUser {
		return nil
	}
	if a, err := netip.ParseAddr(clientHost); err == nil && a.Unmap().IsLoopback() {
		return nil
	}
	return unsupported("file paths are refused for a session from %s without a configured user: connect from the node's host or as a user of the authority rule", clientHost)
}

// ReadFile reads the file at path on the node's host, at most MaxFileSize
// bytes. Failures are 30020 errors naming the file.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fileError(path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fileError(path, fmt.Errorf("larger than %d bytes", MaxFileSize))
	}
	return data, nil
}

// WriteFile writes data to path on the node's host, readable by the
// node's user only (0600: an export holds passwords), replacing the file
// if it exists. Failures are 30020 errors naming the file.
func WriteFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fileError(path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fileError(path, err)
	}
	if err := f.Close(); err != nil {
		return fileError(path, err)
	}
	return nil
}
