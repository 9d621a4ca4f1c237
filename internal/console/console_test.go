package console

import (
	"regexp"
	"testing"
)

func TestNewSessionID(t *testing.T) {
	uuidHex := regexp.MustCompile(`^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewSessionID()
		if !uuidHex.MatchString(id) {
			t.Fatalf("NewSessionID() = %q, want a version-4 UUID's 32 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("NewSessionID() repeated %q", id)
		}
		seen[id] = true
	}
}
