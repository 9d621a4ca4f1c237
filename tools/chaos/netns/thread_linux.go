package netns

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// groupWithDeathSignal makes a command lead its own process group and get
// SIGKILL when the thread that started it dies.
func groupWithDeathSignal() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// enter makes the calling (locked) OS thread join the network namespace ns.
func enter(ns string) error {
	fd, err := syscall.Open("/run/netns/"+ns, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("chaos: open namespace %s: %w", ns, err)
	}
	err = unix.Setns(fd, unix.CLONE_NEWNET)
	syscall.Close(fd)
	if err != nil {
		return fmt.Errorf("chaos: enter namespace %s: %w", ns, err)
	}
	return nil
}
