package zookeeper

import (
	"context"
	"fmt"
)

// SetBetweenReadAndWrite installs fn (nil: none) to be called by r's
// conditional writes, Commit and Update, after they read their conditions'
// keys and before each attempt to write them.
func SetBetweenReadAndWrite(r *Repo, fn func()) {
	r.testMu.Lock()
	defer r.testMu.Unlock()
	r.betweenReadAndWrite = fn
}

// SetListChangedByWalk makes r's ListChanged walk the whole subtree each
// time, keeping no memo (on) or use its memos (off): the baseline of
// benchmarks.
func SetListChangedByWalk(r *Repo, on bool) { r.walkChanged.Store(on) }

// SetMaxCached sets how many znodes r's list cache holds at most (instead
// of maxCached).
func SetMaxCached(r *Repo, n int) {
	r.cache.mu.Lock()
	defer r.cache.mu.Unlock()
	r.cache.max = n
}

// Memos returns how many prefixes r's ListChanged follows with a memo.
func Memos(r *Repo) int {
	r.cache.mu.Lock()
	defer r.cache.mu.Unlock()
	return len(r.cache.memos)
}

// MemosCounted reports a memo of r whose count of the children its znodes
// name (memo.listed) is not their sum, or nil.
func MemosCounted(r *Repo) error {
	r.cache.mu.Lock()
	memos := make([]*memo, 0, len(r.cache.memos))
	for _, m := range r.cache.memos {
		memos = append(memos, m)
	}
	r.cache.mu.Unlock()
	for _, m := range memos {
		m.mu.Lock()
		sum := 0
		for _, n := range m.nodes {
			sum += len(n.children)
		}
		listed, nodes := m.listed, len(m.nodes)
		m.mu.Unlock()
		if sum != listed || listed < nodes-1 {
			return fmt.Errorf("memo %s: counts %d children named, they name %d, for %d znodes", m.root, listed, sum, nodes)
		}
	}
	return nil
}

// SetRecursiveWatch makes the Watches r opens, and the memos its
// ListChanged builds, from now on register a persistent recursive watch
// (on, the default) or follow new znodes with child watches only (off),
// as they do when the server cannot.
func SetRecursiveWatch(r *Repo, on bool) { r.noRecursive.Store(!on) }

// RecursiveWatches returns how many recursive watches (each a session of
// its own) r's Watches hold open.
func RecursiveWatches(r *Repo) int64 { return r.recursiveOpen.Load() }

// MultiRead reads the data (children false) or the children of each of
// paths (znode paths, the namespace included) with multiRead on r's
// recursive session, as List does: the value, or the children, or the
// error of each read.
func MultiRead(ctx context.Context, r *Repo, children bool, paths []string) (values [][]byte, kids [][]string, errs []error, err error) {
	hold, err := r.holdRecursive(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	defer hold.close()
	op := int32(opGetData)
	if children {
		op = opGetChildren
	}
	res, err := multiRead(ctx, hold.s, readsOf(op, paths))
	if err != nil {
		return nil, nil, nil, err
	}
	for _, x := range res {
		values, kids, errs = append(values, x.value), append(kids, x.children), append(errs, x.err)
	}
	return values, kids, errs, nil
}

// MultiReadOff reports whether r stopped using multiRead because its
// server refused it.
func MultiReadOff(r *Repo) bool { return r.noMultiRead.Load() }

// DataAnswer is the body of a multiRead answer to one getData per value
// (each with a zero Stat; nil is a null value).
func DataAnswer(values ...[]byte) []byte {
	var b []byte
	for _, v := range values {
		b = appendMultiHeader(b, opGetData, false, 0)
		if v == nil {
			b = appendInt32(b, -1)
		} else {
			b = appendBuffer(b, v)
		}
		b = append(b, make([]byte, statBytes)...)
	}
	return appendMultiHeader(b, -1, true, -1)
}

// DecodeValues decodes body, a multiRead answer to n getData reads, and
// returns their values.
func DecodeValues(body []byte, n int) ([][]byte, error) {
	out := make([]readResult, n)
	if err := decodeReads(body, out); err != nil {
		return nil, err
	}
	values := make([][]byte, n)
	for i, r := range out {
		values[i] = r.value
	}
	return values, nil
}
