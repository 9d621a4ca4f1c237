package zookeeper

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
