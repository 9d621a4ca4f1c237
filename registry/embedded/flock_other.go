//go:build !unix

package embedded

import "os"

// flock is a no-op where flock(2) does not exist; etcd's own file locks
// still guard the data.
func flock(*os.File) error { return nil }

// ownedByOther reports no other owner where file owners are not uids.
func ownedByOther(os.FileInfo) (uid int, other bool) { return 0, false }
