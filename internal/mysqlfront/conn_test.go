package mysqlfront

import (
	"net"
	"testing"
)

// countingConn is a net.Conn that takes every write whole and counts the
// bytes and the calls.
type countingConn struct {
	net.Conn
	bytes, writes int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.bytes += len(p)
	c.writes++
	return len(p), nil
}

// TestGatheredWritesAllocateOnce: a logged-in session's limitConn gathers
// a large answer (10,000 rows of 300 bytes, as SHOW SHARDING TABLE RULES
// sends next to 10,000 tables) in one buffer of maxPending bytes that it
// keeps from answer to answer, sending every byte in writes of at most
// maxPending (and a row longer than that as it is): after the first
// answer nothing is allocated.
func TestGatheredWritesAllocateOnce(t *testing.T) {
	under := &countingConn{}
	c := &limitConn{Conn: under, buffer: true}
	row, long := make([]byte, 300), make([]byte, maxPending+1)
	answer := func() {
		for range 10000 {
			if _, err := c.Write(row); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Write(long); err != nil {
			t.Fatal(err)
		}
		if err := c.flush(); err != nil {
			t.Fatal(err)
		}
	}
	answer()
	if want := 10000*len(row) + len(long); under.bytes != want || under.writes > want/maxPending+3 {
		t.Fatalf("%d bytes in %d writes; want %d bytes in writes of up to %d", under.bytes, under.writes, want, maxPending)
	}
	if allocs := testing.AllocsPerRun(5, answer); allocs != 0 {
		t.Fatalf("an answer allocates %.0f times once the buffer exists; want 0", allocs)
	}
}
