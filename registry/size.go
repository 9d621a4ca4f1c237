package registry

import "fmt"

// RequestOverhead is what a backend counts for each key of a request
// besides the key and its value: the operation's framing, and on etcd a
// transaction's comparison and read of the key.
const RequestOverhead = 64

// Size is what txn sends, as backends count it against their request
// limit: every key and value, plus RequestOverhead a condition and a
// write.
func (t Txn) Size() int {
	n := 0
	for _, c := range t.Conds {
		n += len(c.Key) + RequestOverhead
	}
	for _, o := range t.Ops {
		n += len(o.Key) + len(o.Value) + RequestOverhead
	}
	return n
}

// CheckSize returns an *OpError wrapping ErrTooLarge when size, the bytes
// one request of op on key would carry, passes limit (the registry's
// request limit, named by what): such a request is refused before it is
// sent, so nothing is written. It returns nil when limit is 0 or less.
func CheckSize(op, key string, size, limit int, what string) error {
	if limit <= 0 || size <= limit {
		return nil
	}
	return &OpError{Op: op, Key: key, Err: fmt.Errorf("%w: %d bytes, more than the %d bytes of %s; nothing was written", ErrTooLarge, size, limit, what)}
}
