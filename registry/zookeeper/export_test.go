package zookeeper

// SetBetweenReadAndWrite installs fn (nil: none) to be called by r's
// conditional writes, Commit and Update, after they read their conditions'
// keys and before each attempt to write them.
func SetBetweenReadAndWrite(r *Repo, fn func()) {
	r.testMu.Lock()
	defer r.testMu.Unlock()
	r.betweenReadAndWrite = fn
}
