package mysqlfront

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// appendLengthEncodedString encodes as go-mysql's PutLengthEncodedString at
// every length-prefix size.
func TestAppendLengthEncodedString(t *testing.T) {
	for _, n := range []int{0, 1, 250, 251, 1<<16 - 1, 1 << 16, 1<<24 - 1, 1 << 24} {
		s := strings.Repeat("x", n)
		got := appendLengthEncodedString([]byte{0xaa}, s)
		want := append([]byte{0xaa}, mysql.PutLengthEncodedString([]byte(s))...)
		if !bytes.Equal(got, want) {
			t.Errorf("length %d: prefix %x, want %x", n, got[:min(len(got), 10)], want[:min(len(want), 10)])
		}
	}
}
