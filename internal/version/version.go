// Package version says which build of shardkeeper is running: the
// release, the module version, the commit and the Go version, read from
// the binary's build information (runtime/debug.ReadBuildInfo).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/shardkeeper/shardkeeper/cluster"
)

// linkedCommit is the commit `make build` passes with -ldflags -X, for
// builds the go command cannot stamp (a git worktree, -buildvcs=false);
// the stamped vcs.revision wins when there is one.
var linkedCommit string

// Unknown stands for a field the build information does not hold (a test
// binary, a build without version control information).
const Unknown = "unknown"

// Info is one build of shardkeeper.
type Info struct {
	// Release is the release the node publishes in its online node
	// (cluster.Version without the "shardkeeper-" prefix), e.g. 0.1.0.
	Release string `json:"release"`
	// Module is the main module's version as the go command stamped it:
	// a tag (v0.1.0), a pseudo-version of the commit, or "(devel)".
	Module string `json:"module"`
	// Commit is the version control revision the binary was built from,
	// Unknown when the build did not record one.
	Commit string `json:"commit"`
	// Modified is true when the work tree had uncommitted changes.
	Modified bool `json:"modified"`
	// CommitTime is the revision's time (RFC 3339), "" when unknown.
	CommitTime string `json:"commitTime,omitempty"`
	// Go is the Go version the binary was built with, e.g. go1.26.0.
	Go string `json:"go"`
}

// Read returns the running binary's build. It never fails: a field the
// build information lacks is Unknown.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return FromBuildInfo(nil)
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo returns the build described by bi; nil means none was
// recorded.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Release: strings.TrimPrefix(cluster.Version, "shardkeeper-"), Module: Unknown, Commit: Unknown, Go: runtime.Version()}
	if linkedCommit != "" {
		in.Commit = linkedCommit
	}
	if bi == nil {
		return in
	}
	if bi.GoVersion != "" {
		in.Go = bi.GoVersion
	}
	if bi.Main.Version != "" {
		in.Module = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.CommitTime = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// ShortCommit is the commit's first 12 hex digits, with "+dirty" when
// the work tree was modified; Unknown when no commit was recorded.
func (in Info) ShortCommit() string {
	c := in.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if in.Modified && c != Unknown {
		c += "+dirty"
	}
	return c
}

// String is the one line `shardkeeper version` prints first, e.g.
// "shardkeeper 0.1.0 (module v0.1.0, commit 0123456789ab, go1.26.0)".
func (in Info) String() string {
	return fmt.Sprintf("shardkeeper %s (module %s, commit %s, %s)", in.Release, in.Module, in.ShortCommit(), in.Go)
}
