package embedded

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// CredentialsFile is the name of the file, in the data directory, that holds
// the user and password of the embedded server's etcd root user.
const CredentialsFile = "credentials.json"

// RootUser is the etcd user the embedded server is protected with. It has
// etcd's root role: every key, and user and role management.
const RootUser = "root"

// maxCredentialsSize bounds what LoadCredentials reads.
const maxCredentialsSize = 4 << 10

// Credentials are the etcd user and password that reach an embedded server.
type Credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// CredentialsPath returns where the credentials of the server on dir live.
func CredentialsPath(dir string) string { return filepath.Join(dir, CredentialsFile) }

// LoadCredentials reads the credentials of the embedded server whose data
// directory is dir, for clients such as the CLI. A missing file is an error
// wrapping os.ErrNotExist; a file that is not a regular file, is larger than
// 4 KiB, or does not hold a user and a password is an error naming the file.
// Reading it needs the permissions of the user the server runs as.
func LoadCredentials(dir string) (Credentials, error) {
	path := CredentialsPath(dir)
	// Check the type before opening: opening a FIFO would wait for a writer.
	if st, err := os.Lstat(path); err != nil {
		return Credentials{}, fmt.Errorf("embedded etcd credentials: %w", err)
	} else if !st.Mode().IsRegular() {
		return Credentials{}, fmt.Errorf("embedded etcd credentials %s: not a regular file (%v)", path, st.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return Credentials{}, fmt.Errorf("embedded etcd credentials: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Credentials{}, fmt.Errorf("embedded etcd credentials: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Credentials{}, fmt.Errorf("embedded etcd credentials %s: not a regular file (%v)", path, st.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCredentialsSize+1))
	if err != nil {
		return Credentials{}, fmt.Errorf("embedded etcd credentials %s: %w", path, err)
	}
	if len(data) > maxCredentialsSize {
		return Credentials{}, fmt.Errorf("embedded etcd credentials %s: larger than %d bytes", path, maxCredentialsSize)
	}
	var c Credentials
	if err := json.Unmarshal(data, &c); err != nil {
		return Credentials{}, fmt.Errorf("embedded etcd credentials %s: %w", path, err)
	}
	if c.Username == "" || c.Password == "" {
		return Credentials{}, fmt.Errorf("embedded etcd credentials %s: want {\"username\": ..., \"password\": ...}", path)
	}
	return c, nil
}

// serverCredentials returns the credentials the server on dir is to be
// protected with: the ones in the file when it is present, valid, for
// RootUser, owned by this process's user and readable by it only;
// otherwise new ones (a random 256-bit password) written to the file with
// mode 0600 first. Replacing the file changes the root password at the
// next start.
func serverCredentials(dir string) (Credentials, error) {
	path := CredentialsPath(dir)
	if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o077 == 0 {
		if _, other := ownedByOther(st); !other {
			if c, err := LoadCredentials(dir); err == nil && c.Username == RootUser {
				return c, nil
			}
		}
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Credentials{}, fmt.Errorf("embedded etcd credentials: %w", err)
	}
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return Credentials{}, fmt.Errorf("embedded etcd credentials: %w", err)
	}
	c := Credentials{Username: RootUser, Password: hex.EncodeToString(secret[:])}
	if err := writeCredentials(dir, c); err != nil {
		return Credentials{}, err
	}
	return c, nil
}

// ClientURLsFile is the name of the file, in the data directory, where a
// running server lists the client URLs it listens on, one a line, with the
// real ports. It is rewritten at every start and may be stale when no
// server runs.
const ClientURLsFile = "client-urls"

// RunningClientURLs returns the client URLs the server on dir listed when
// it started (see ClientURLsFile), or an error wrapping os.ErrNotExist.
func RunningClientURLs(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, ClientURLsFile))
	if err != nil {
		return nil, fmt.Errorf("embedded etcd client URLs: %w", err)
	}
	var urls []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			urls = append(urls, line)
		}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("embedded etcd client URLs: %s is empty", filepath.Join(dir, ClientURLsFile))
	}
	return urls, nil
}

// writeCredentials replaces the credentials file with c.
func writeCredentials(dir string, c Credentials) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, CredentialsFile, append(data, '\n'))
}

// writeFileAtomic replaces dir/name atomically: a temporary file with mode
// 0600, synced, renamed over it, and the directory synced.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, name+".*")
	if err != nil {
		return fmt.Errorf("embedded etcd: %w", err)
	}
	defer os.Remove(tmp.Name())
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		return fmt.Errorf("embedded etcd: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
