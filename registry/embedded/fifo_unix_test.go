//go:build unix

package embedded

import (
	"strings"
	"syscall"
	"testing"
)

// A FIFO in place of the credentials file is an error at once, not a wait
// for a writer.
func TestLoadCredentialsFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(CredentialsPath(dir), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCredentials(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("LoadCredentials on a FIFO = %v, want an error saying it is not a regular file", err)
	}
}
