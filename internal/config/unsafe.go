package config

import (
	"fmt"
	"os"
)

// EnvUnsafeControl names the environment variable that turns one of the
// chaos harness's DistSQL negative controls on in a node (tools/chaos,
// docs/chaos.md). It exists only to show that the harness's checks find
// what the cluster's rule writes prevent, and must never be set in
// production: each value breaks a guarantee on purpose. serve refuses a
// value it does not know and logs an error when one is set.
const EnvUnsafeControl = "SHARDKEEPER_UNSAFE_CHAOS_CONTROL"

// The values of EnvUnsafeControl.
const (
	// UnsafeUnconditionalWrites commits rule changes without their
	// conditions, as plain overwrites (what ShardingSphere does): two
	// racing changes both succeed, the later one overwrites the earlier.
	UnsafeUnconditionalWrites = "unconditional-writes"
	// UnsafeAckBeforeCommit answers a change (rules and SET DIST
	// VARIABLE) as soon as its registry transaction is sent, without
	// waiting for the registry to confirm the commit, nor for any node's
	// digest nor, on the console, for its own node's view: after the
	// answer the registry and the nodes may still show the old value, and
	// a change whose commit then fails (a condition no longer holds, the
	// registry unreachable) is lost although acknowledged.
	UnsafeAckBeforeCommit = "ack-before-commit"
)

// UnsafeControl returns the value of EnvUnsafeControl ("" when unset), or
// an error for a value it does not know.
func UnsafeControl() (string, error) {
	switch v := os.Getenv(EnvUnsafeControl); v {
	case "", UnsafeUnconditionalWrites, UnsafeAckBeforeCommit:
		return v, nil
	default:
		return "", fmt.Errorf("$%s=%q: want %s or %s (a chaos negative control; never set it in production)",
			EnvUnsafeControl, v, UnsafeUnconditionalWrites, UnsafeAckBeforeCommit)
	}
}

// Unsafe says whether EnvUnsafeControl is set to control (a known value).
func Unsafe(control string) bool {
	v, err := UnsafeControl()
	return err == nil && v == control
}
