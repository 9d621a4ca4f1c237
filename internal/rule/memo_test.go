package rule

import (
	"errors"
	"testing"
)

// TestMemo: a Memo computes a key's count once, keeps no error, starts
// over when full, and a nil Memo computes every time.
func TestMemo(t *testing.T) {
	calls := 0
	count := func(k string) (int, error) {
		calls++
		if k == "bad" {
			return 0, errors.New("bad")
		}
		return len(k), nil
	}
	m := NewMemo()
	for range 3 {
		if n, err := m.Count("abc", count); n != 3 || err != nil {
			t.Fatalf("Count(abc) = %d, %v", n, err)
		}
		if _, err := m.Count("bad", count); err == nil {
			t.Fatal("Count(bad) kept no error")
		}
	}
	if calls != 4 {
		t.Fatalf("%d calls of count, want 1 for abc and 3 for bad", calls)
	}
	for i := range MaxMemoEntries + 1 {
		m.Count(string(rune(i))+"x", count)
	}
	if len(m.m) > MaxMemoEntries {
		t.Fatalf("the memo holds %d entries, more than %d", len(m.m), MaxMemoEntries)
	}
	var none *Memo
	calls = 0
	none.Count("abc", count)
	none.Count("abc", count)
	if calls != 2 {
		t.Fatalf("a nil Memo: %d calls, want 2", calls)
	}
}
