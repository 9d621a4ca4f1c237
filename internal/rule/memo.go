package rule

import "sync"

// Memo keeps numbers a family's check computes from its rule's entries
// (what an expression stands for), by a key that determines them (the
// expression itself), across the changes of one database: a change of one
// table next to thousands then computes that table's and looks the
// others' up. It holds at most MaxMemoEntries; when full, it starts
// over. A nil *Memo computes every time. Safe for concurrent use.
type Memo struct {
	mu sync.Mutex
	m  map[string]int
}

// MaxMemoEntries bounds the entries of a Memo.
const MaxMemoEntries = 1 << 17

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{m: map[string]int{}} }

// Count returns count(key), computed once while the memo keeps it; an
// error is returned as count returns it and not kept.
func (m *Memo) Count(key string, count func(string) (int, error)) (int, error) {
	if m == nil {
		return count(key)
	}
	m.mu.Lock()
	n, ok := m.m[key]
	m.mu.Unlock()
	if ok {
		return n, nil
	}
	n, err := count(key)
	if err != nil {
		return n, err
	}
	m.mu.Lock()
	if len(m.m) >= MaxMemoEntries {
		clear(m.m)
	}
	m.m[key] = n
	m.mu.Unlock()
	return n, nil
}
