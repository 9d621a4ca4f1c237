package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/shardkeeper/shardkeeper", Version: "v0.1.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}}}
	in := FromBuildInfo(bi)
	want := Info{Release: "0.1.0", Module: "v0.1.0", Commit: "0123456789abcdef0123", Modified: true, CommitTime: "2026-12-01T10:00:00Z", Go: "go1.26.0"}
	if in != want {
		t.Fatalf("FromBuildInfo = %+v, want %+v", in, want)
	}
	if got := in.String(); got != "shardkeeper 0.1.0 (module v0.1.0, commit 0123456789ab+dirty, go1.26.0)" {
		t.Fatalf("String = %q", got)
	}
}

func TestFromBuildInfoNone(t *testing.T) {
	in := FromBuildInfo(nil)
	if in.Commit != Unknown || in.Module != Unknown || !strings.HasPrefix(in.Go, "go") || in.ShortCommit() != Unknown {
		t.Fatalf("FromBuildInfo(nil) = %+v", in)
	}
}

func TestRead(t *testing.T) {
	in := Read()
	if in.Release == "" || !strings.HasPrefix(in.Go, "go") {
		t.Fatalf("Read = %+v", in)
	}
}
