//go:build !linux

package netns

import (
	"errors"
	"syscall"
)

// groupWithDeathSignal makes a command lead its own process group (no
// death signal off Linux).
func groupWithDeathSignal() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// enter fails: network namespaces are Linux's; the harness runs only there.
func enter(ns string) error {
	return errors.New("chaos: network namespace " + ns + ": Linux only")
}
