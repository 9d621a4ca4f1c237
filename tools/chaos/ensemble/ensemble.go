// Package ensemble runs 3-member registry clusters for the chaos harness:
// an etcd cluster or a ZooKeeper ensemble, one member per host of a test
// network, with the process faults the harness injects (kill, restart,
// pause, resume) and a way to find the current leader.
package ensemble

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
)

// ErrNoLeader is returned by Ensemble.Leader when no running member
// reports a leader.
var ErrNoLeader = errors.New("chaos: no leader")

// Ensemble is a running 3-member registry cluster, one member per host.
// Members are addressed by index in host order. The process-control methods
// are safe for concurrent use and in any order: Kill of a paused member
// kills it, Pause and Resume of a member that is down do nothing, Start of
// a running member only waits until it answers.
type Ensemble interface {
	// Kind returns "etcd" or "zookeeper".
	Kind() string
	// Hosts returns the members' hosts, in member order.
	Hosts() []*netns.Host
	// Endpoints returns the client addresses "ip:port", in member order.
	Endpoints() []string
	// Leader returns the index of the member that the running, unpaused
	// members report as leader; when they disagree, the report from the
	// newest term (etcd raft term, ZooKeeper epoch) wins. It returns
	// ErrNoLeader when none reports one, and ctx's error when ctx ends.
	Leader(ctx context.Context) (int, error)
	// Kill sends SIGKILL to member i's process group and waits until the
	// process is gone. It does nothing when the member is down.
	Kill(i int) error
	// Start starts member i again with its data directory (resuming it
	// first if it is paused) and waits up to 60 s until it answers and,
	// when a majority of members is running and not paused, until it
	// serves requests. On failure the error holds the tail of its log.
	Start(i int) error
	// Pause sends SIGSTOP to member i; nothing when it is down or paused.
	Pause(i int) error
	// Resume sends SIGCONT to member i; nothing when it is down or running.
	Resume(i int) error
	// Running reports whether member i has a process (paused or not).
	Running(i int) bool
	// PID returns the process id of member i, or 0 when it is down.
	PID(i int) int
	// Version returns the server version, e.g. "etcd 3.4.23".
	Version() string
	// Close kills every member and removes the data directories it
	// created. It is idempotent; after it the other methods return errors.
	Close() error
}

// Option refines StartEtcd and StartZooKeeper.
type Option func(*options)

type options struct {
	cpus string
}

// WithCPUs pins the servers with `taskset -c cpus`; "" disables pinning.
// The default is "0" when taskset is installed and no pinning otherwise.
func WithCPUs(cpus string) Option { return func(o *options) { o.cpus = cpus } }

func buildOptions(opts []Option) options {
	o := options{}
	if _, err := exec.LookPath("taskset"); err == nil {
		o.cpus = "0"
	}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// httpClient talks to members without any proxy from the environment.
var httpClient = &http.Client{
	Timeout:   time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}
