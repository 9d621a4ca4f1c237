// Package members runs and watches the processes of a registry ensemble's
// members: start and wait until ready, kill, pause and resume, with their
// output copied line by line to one log and its tail kept for errors.
package members

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
)

// startTimeout bounds how long Start and StartAll wait for members to
// answer.
const startTimeout = 60 * time.Second

// Set runs and watches the member processes of an ensemble, one per host.
// Members are addressed by index in host order. Command, Alive and Serving
// are set once, before StartAll. The process-control methods are safe for
// concurrent use and in any order: Kill of a paused member kills it, Pause
// and Resume of a member that is down do nothing, Start of a running member
// only waits until it answers.
type Set struct {
	kind    string
	hosts   []*netns.Host
	dir     string
	tempDir bool // dir was created here and is removed whole
	cpus    string
	logs    io.Writer
	logMu   sync.Mutex

	// Command is member i's command line.
	Command func(i int) []string
	// Alive reports whether member i answers at all; Serving whether it
	// is in a quorum and serves requests.
	Alive, Serving func(ctx context.Context, i int) error

	mu      sync.Mutex // guards the members' process state and closed
	members []*member
	closed  bool
}

type member struct {
	name string
	dir  string
	op   sync.Mutex // serialises Start, Kill, Pause, Resume of this member
	tail *tail

	cmd    *exec.Cmd     // nil when down
	done   chan struct{} // closed when cmd has exited
	paused bool
}

// New returns the members of a 3-member ensemble of kind ("etcd",
// "zookeeper") on hosts, none started, each with its data directory
// dir/<host name>, created empty (dir "" means a new temporary directory
// named netns.TempDirPrefix+<first host's namespace>-<kind>-<random>,
// removed whole by Close). Member output goes to logs, each line prefixed
// with "[<host name>] " (nil discards it). cpus pins the members with
// `taskset -c cpus`; "" does not pin. It fails when a data directory
// exists.
func New(kind string, hosts []*netns.Host, dir string, logs io.Writer, cpus string) (*Set, error) {
	if len(hosts) != 3 {
		return nil, fmt.Errorf("chaos: %s ensemble: want 3 hosts, got %d", kind, len(hosts))
	}
	c := &Set{kind: kind, hosts: hosts, dir: dir, cpus: cpus, logs: logs}
	if c.logs == nil {
		c.logs = io.Discard
	}
	if dir == "" {
		d, err := os.MkdirTemp("", netns.TempDirPrefix+hosts[0].NS+"-"+kind+"-")
		if err != nil {
			return nil, err
		}
		c.dir, c.tempDir = d, true
	}
	for _, h := range hosts {
		m := &member{name: h.Name, dir: filepath.Join(c.dir, h.Name), tail: &tail{}}
		if _, err := os.Stat(m.dir); err == nil {
			_ = c.RemoveDirs()
			return nil, fmt.Errorf("chaos: %s data directory %s exists; remove it or use another dir", kind, m.dir)
		}
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			_ = c.RemoveDirs()
			return nil, err
		}
		c.members = append(c.members, m)
	}
	return c, nil
}

// Kind returns the kind given to New.
func (c *Set) Kind() string { return c.kind }

// Hosts returns the members' hosts, in member order.
func (c *Set) Hosts() []*netns.Host { return slices.Clone(c.hosts) }

// Dir returns member i's data directory.
func (c *Set) Dir(i int) string { return c.members[i].dir }

// Addrs returns "ip:port" of every member, in member order.
func (c *Set) Addrs(port int) []string {
	var eps []string
	for _, h := range c.hosts {
		eps = append(eps, net.JoinHostPort(h.Addr.String(), strconv.Itoa(port)))
	}
	return eps
}

func (c *Set) member(i int) (*member, error) {
	if i < 0 || i >= len(c.members) {
		return nil, fmt.Errorf("chaos: %s member %d: want 0..%d", c.kind, i, len(c.members)-1)
	}
	return c.members[i], nil
}

// Available reports whether member i has a process that is not paused.
func (c *Set) Available(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	return m.cmd != nil && !m.paused
}

// Running reports whether member i has a process (paused or not).
func (c *Set) Running(i int) bool {
	m, err := c.member(i)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return m.cmd != nil
}

// PID returns the process id of member i, or 0 when it is down.
func (c *Set) PID(i int) int {
	m, err := c.member(i)
	if err != nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// spawn starts member i's process; the caller holds m.op. It returns the
// channel closed when the process exits.
func (c *Set) spawn(i int) (chan struct{}, error) {
	m := c.members[i]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("chaos: %s ensemble closed", c.kind)
	}
	if m.cmd != nil {
		if m.paused {
			if err := syscall.Kill(-m.cmd.Process.Pid, syscall.SIGCONT); err != nil {
				return nil, err
			}
			m.paused = false
		}
		return m.done, nil
	}
	args := c.Command(i)
	if c.cpus != "" {
		args = append([]string{"taskset", "-c", c.cpus}, args...)
	}
	cmd := c.hosts[i].Command(context.Background(), args[0], args[1:]...)
	w := &lineWriter{prefix: "[" + m.name + "] ", c: c, tail: m.tail}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("chaos: start %s member %s: %w", c.kind, m.name, err)
	}
	done := make(chan struct{})
	m.cmd, m.done, m.paused = cmd, done, false
	go func() {
		err := cmd.Wait()
		w.flush()
		c.mu.Lock()
		if m.cmd == cmd {
			m.cmd, m.paused = nil, false
		}
		c.mu.Unlock()
		fmt.Fprintf(w, "chaos: %s member %s exited: %v\n", c.kind, m.name, err)
		w.flush()
		close(done)
	}()
	return done, nil
}

// StartAll starts every member and waits until all serve, at most 60 s
// (ctx may end it earlier); on failure it closes the set and the error
// holds the failing member's log tail.
func (c *Set) StartAll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	dones := make([]chan struct{}, len(c.members))
	for i, m := range c.members {
		m.op.Lock()
		d, err := c.spawn(i)
		m.op.Unlock()
		if err != nil {
			return errors.Join(err, c.Close())
		}
		dones[i] = d
	}
	for i := range c.members {
		if err := c.waitReady(ctx, i, dones[i], true); err != nil {
			return errors.Join(err, c.Close())
		}
	}
	return nil
}

// waitReady polls member i until it answers (and serves, when serve) or
// its process exits or ctx ends; the error holds the log tail.
func (c *Set) waitReady(ctx context.Context, i int, done chan struct{}, serve bool) error {
	m := c.members[i]
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		last = c.Alive(pctx, i)
		if last == nil && serve {
			last = c.Serving(pctx, i)
		}
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("chaos: %s member %s exited while starting; log tail:\n%s", c.kind, m.name, m.tail.last(30))
		case <-ctx.Done():
			return fmt.Errorf("chaos: %s member %s not ready (%v): %w; log tail:\n%s",
				c.kind, m.name, last, ctx.Err(), m.tail.last(30))
		case <-tick.C:
		}
	}
}

// Start starts member i again with its data directory (resuming it first
// if it is paused) and waits up to 60 s until it answers and, when a
// majority of members is running and not paused, until it serves requests.
// On failure the error holds the tail of its log.
func (c *Set) Start(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	m.op.Lock()
	done, err := c.spawn(i)
	m.op.Unlock()
	if err != nil {
		return err
	}
	up := 0
	c.mu.Lock()
	for _, o := range c.members {
		if o.cmd != nil && !o.paused {
			up++
		}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return c.waitReady(ctx, i, done, up > len(c.members)/2)
}

// Kill sends SIGKILL to member i's process group and waits until the
// process is gone. It does nothing when the member is down.
func (c *Set) Kill(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	m.op.Lock()
	defer m.op.Unlock()
	return c.kill(m)
}

func (c *Set) kill(m *member) error {
	c.mu.Lock()
	cmd, done := m.cmd, m.done
	c.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("chaos: kill %s member %s: %w", c.kind, m.name, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("chaos: %s member %s (pid %d) did not exit 10 s after SIGKILL", c.kind, m.name, cmd.Process.Pid)
	}
}

// Pause sends SIGSTOP to member i; nothing when it is down or paused.
func (c *Set) Pause(i int) error { return c.signal(i, syscall.SIGSTOP) }

// Resume sends SIGCONT to member i; nothing when it is down or running.
func (c *Set) Resume(i int) error { return c.signal(i, syscall.SIGCONT) }

func (c *Set) signal(i int, sig syscall.Signal) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	m.op.Lock()
	defer m.op.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.cmd == nil || m.paused == (sig == syscall.SIGSTOP) {
		return nil
	}
	if err := syscall.Kill(-m.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("chaos: %v %s member %s: %w", sig, c.kind, m.name, err)
	}
	m.paused = sig == syscall.SIGSTOP
	return nil
}

// Probe runs f concurrently on every available member, each call bounded
// by 1 s; the result of a member that is down, paused or failed is nil.
func (c *Set) Probe(ctx context.Context, f func(ctx context.Context, i int) (any, error)) []any {
	res := make([]any, len(c.members))
	var wg sync.WaitGroup
	for i := range c.members {
		if !c.Available(i) {
			continue
		}
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if r, err := f(pctx, i); err == nil {
				res[i] = r
			}
		})
	}
	wg.Wait()
	return res
}

// Close kills every member and removes the data directories. It is
// idempotent; after it Start fails.
func (c *Set) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	for _, m := range c.members {
		m.op.Lock()
		errs = append(errs, c.kill(m))
		m.op.Unlock()
	}
	errs = append(errs, c.RemoveDirs())
	return errors.Join(errs...)
}

// RemoveDirs removes the data directories (the temporary directory whole).
func (c *Set) RemoveDirs() error {
	if c.tempDir {
		return os.RemoveAll(c.dir)
	}
	var errs []error
	for _, m := range c.members {
		errs = append(errs, os.RemoveAll(m.dir))
	}
	return errors.Join(errs...)
}
