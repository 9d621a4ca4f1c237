package cluster

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/node"
	"github.com/shardkeeper/shardkeeper/internal/workerid"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// Version is the version string a node publishes in its online node.
const Version = "shardkeeper-0.1.0"

// DefaultReservation is how far ahead a node reserves time (W).
const DefaultReservation = 3 * time.Second

// MaxReservation is the longest Reservation allowed (1 minute).
const MaxReservation = time.Minute

// MaxClockSkew is the bound on the difference between two nodes' clocks
// that the fence assumes when a worker id's fence is missing or corrupt
// (5 seconds): such an id is claimed with the floor now + MaxReservation +
// MaxClockSkew.
const MaxClockSkew = 5 * time.Second

// Instance types, as ShardingSphere writes them in the online path.
const (
	TypeProxy = "proxy"
	TypeJDBC  = "jdbc"
)

// ErrNotIssuing is returned by NextID while the node holds no worker id
// with a valid reservation: after a lost session or fence (until it has
// re-acquired one), or after Close.
var ErrNotIssuing = node.ErrNotIssuing

// ErrInstanceIDInUse is returned by Open when another live node holds the
// online node of Config.InstanceID; the error names the id and that
// node's address.
var ErrInstanceIDInUse = node.ErrInstanceIDInUse

// ErrExhausted matches, with errors.Is, the *ExhaustedError that Open
// returns when all 1024 worker ids are taken.
var ErrExhausted error = newExhausted()

// ExhaustedError is the error Open returns when every worker id is taken:
// ShardingSphere's WorkerIdAssignedException, with its vendor code, SQL
// state and message ("Worker ID assigned failed, which should be in
// [0, 1024)."). Every *ExhaustedError matches ErrExhausted with errors.Is.
type ExhaustedError struct {
	Code     int    // ShardingSphere's vendor code: 17001
	SQLState string // HY000
	Message  string
}

func newExhausted() *ExhaustedError {
	e := workerid.ErrExhausted
	return &ExhaustedError{Code: e.Code, SQLState: e.SQLState, Message: e.Message}
}

func (e *ExhaustedError) Error() string { return e.Message }

// Is reports whether target is an *ExhaustedError, ErrExhausted included.
func (e *ExhaustedError) Is(target error) bool {
	_, ok := target.(*ExhaustedError)
	return ok
}

// Config configures a node. The zero value plus a registry is a working
// proxy-type node with a random instance id.
type Config struct {
	// InstanceID names the node in the registry. Empty means a random UUID
	// (ShardingSphere's default). Set a stable one to get the same worker
	// id back after a restart.
	InstanceID string
	// RandomInstanceID marks an InstanceID the caller made per start with
	// NewInstanceID rather than configured: the node then records no
	// restart hint in the registry. An empty InstanceID implies it.
	RandomInstanceID bool
	// Type is TypeProxy (default) or TypeJDBC.
	Type string
	// Host and Port make the online node's attribute: "host@port" for a
	// proxy, "host" for JDBC. Empty Host means 127.0.0.1.
	Host string
	Port int
	// DatabaseName is published in the online node (JDBC nodes).
	DatabaseName string
	// Labels are published at /nodes/compute_nodes/labels/{id} (5.5.x).
	Labels []string
	// SessionTTL is the registry session's TTL; zero means the registry's
	// default.
	SessionTTL time.Duration
	// Reservation (W) is how far ahead keys' time is reserved; it is renewed
	// every W/3. Without the registry a node keeps issuing for at most W.
	// Zero means DefaultReservation; at most MaxReservation.
	Reservation time.Duration
	// Snowflake configures the key generator; the zero value means
	// snowflake.DefaultConfig() (ShardingSphere's defaults). Its WorkerID
	// is ignored: the registry assigns it, and Open logs ShardingSphere's
	// warning when it is set.
	//
	// Its MaxBorrow (default 0: never) lets a burst run ahead of the clock:
	// when a millisecond's 4096 keys are used up, keys are stamped with the
	// next millisecond at once instead of after a wait, up to MaxBorrow
	// ahead of the clock. A borrow of B turns a burst of up to 4096 keys
	// per millisecond of B into one that runs at the speed of the caller
	// (250ms covers a burst of a million keys); the sustained rate stays
	// 4096 keys per millisecond. Keys are never stamped past the
	// reservation committed in the registry (Reservation ahead of the
	// clock at most): a burst that reaches it waits for the next renewal,
	// so a MaxBorrow longer than Reservation borrows no further.
	Snowflake snowflake.Config
	// Logger receives the node's logs, each with the instance id. Nil means
	// slog.Default().
	Logger *slog.Logger
	// OnEvent, when set, is the node's audit hook: it is called with every
	// change of the node's hold on its worker id (acquired, reservation
	// committed, lost, released), in order, from the node's own goroutines.
	// It must return quickly and must not call the Node. EventAcquired is
	// delivered before any key of its epoch is issued and after the last
	// key of the epoch before, so a trail of events and keys shows which
	// holder stamped which keys.
	OnEvent func(Event)
}

// EventKind says what changed in a node's hold on its worker id.
type EventKind string

// Event kinds.
const (
	// EventAcquired: the node claimed WorkerID at Epoch; it will stamp
	// keys above FloorMs once a reservation is committed (EventReserved),
	// or gives it up (EventLost).
	EventAcquired EventKind = "acquired"
	// EventReserved: a reservation up to ReservedUntilMs was committed.
	EventReserved EventKind = "reserved"
	// EventLost: the node stopped issuing on WorkerID (Err says why) and
	// will acquire a worker id again.
	EventLost EventKind = "lost"
	// EventReleased: the node left gracefully; the fence was lowered to
	// ReservedUntilMs (when Err is nil).
	EventReleased EventKind = "released"
)

// Event is one change of a node's hold on its worker id. Times are unix
// milliseconds of the node's key clock.
type Event struct {
	Kind            EventKind
	WorkerID        int
	Epoch           int64
	FloorMs         int64
	ReservedUntilMs int64
	Err             error
}

// Instance is one compute node as the registry shows it
// (SHOW COMPUTE NODES).
type Instance struct {
	ID           string
	Type         string // TypeProxy or TypeJDBC
	Host         string
	Port         int // 0 for JDBC
	Status       string
	WorkerID     int // -1 when none is published
	DatabaseName string
	Version      string
	Labels       []string
}

// Stats are a node's counters since Open, for logs and metrics.
type Stats struct {
	WorkerID        int   // -1 while not issuing
	Issuing         bool  // the node holds a worker id with a reservation
	ReservedUntilMs int64 // last committed reservation (unix ms)
	Keys            int64 // keys issued
	Acquisitions    int64 // worker ids acquired (1 + re-acquisitions)
	Losses          int64 // worker ids lost (session or fence): issuing stopped
	Renewals        int64 // reservations committed
	RenewalFailures int64 // renewals with an unknown outcome
	Refused         int64 // key requests refused while not issuing
	Stalls          int64 // key requests that ran out of reserved time
	CorruptValues   int64 // registry values reported and skipped
	ClockStepsBack  int64 // steps back of the wall clock of at least ClockStepBack
}

// ClockStepBack is the smallest step back of the wall clock a node counts
// in Stats.ClockStepsBack and logs (10 ms). Keys never go backwards, but
// reservations are computed from the wall clock: after a step back longer
// than the reservation, keys stall until the wall clock has caught up.
const ClockStepBack = node.ClockStepBack

// NewInstanceID returns a random version 4 UUID, ShardingSphere's default
// instance id.
func NewInstanceID() string { return node.NewInstanceID() }

// Node is one running compute node. Its methods are safe for concurrent
// use.
type Node struct {
	n *node.Node
}

// Open starts a node on repo: it opens a session, claims a worker id,
// commits the first time reservation, registers the node online, loads the
// membership and starts watching it. It returns a node that can issue keys
// at once and whose Instances include every node online when it loaded
// them, itself included. ctx bounds only the start; the node runs until
// Close. Errors: ErrInstanceIDInUse when another live node holds the
// instance id (a key left by a node killed without Close is waited for,
// up to the session TTL); an *ExhaustedError (matching ErrExhausted) when
// every worker id is taken; registry errors; config errors, all of them at
// once.
func Open(ctx context.Context, repo registry.Repository, cfg Config) (*Node, error) {
	ncfg := node.Config{
		InstanceID: cfg.InstanceID, RandomInstanceID: cfg.RandomInstanceID, Type: cfg.Type,
		Host: cfg.Host, Port: cfg.Port, DatabaseName: cfg.DatabaseName, Labels: cfg.Labels,
		SessionTTL: cfg.SessionTTL, Reservation: cfg.Reservation, Snowflake: cfg.Snowflake, Logger: cfg.Logger,
	}
	if on := cfg.OnEvent; on != nil {
		ncfg.OnEvent = func(e node.Event) {
			on(Event{Kind: EventKind(e.Kind), WorkerID: e.WorkerID, Epoch: e.Epoch, FloorMs: e.FloorMs,
				ReservedUntilMs: e.ReservedUntilMs, Err: e.Err})
		}
	}
	n, err := node.Open(ctx, repo, ncfg)
	if errors.Is(err, workerid.ErrExhausted) {
		return nil, newExhausted()
	}
	if err != nil {
		return nil, err
	}
	return &Node{n: n}, nil
}

// Ready reports whether a key request would succeed now: the node holds a
// worker id with a committed reservation that covers the current time, its
// clock is past the floor, and it is not waiting for the clock.
func (n *Node) Ready() bool { return n.n.Ready() }

// NextID returns a new key. It waits while the reservation is being renewed
// or the clock is behind the floor, bounded by ctx. Errors: ErrNotIssuing
// while the node holds no valid reservation; snowflake errors
// (ErrClockBackwards, ErrReservationExpired with ctx's error).
func (n *Node) NextID(ctx context.Context) (int64, error) { return n.n.NextID(ctx) }

// NextIDs returns count new keys in increasing order, taking the
// generator's lock about once per millisecond they span. On error it
// returns the keys issued before it (valid keys) and the error.
func (n *Node) NextIDs(ctx context.Context, count int) ([]int64, error) {
	return n.n.NextIDs(ctx, count)
}

// AppendIDs appends count new keys to dst, allocating only when dst lacks
// capacity. See NextIDs.
func (n *Node) AppendIDs(ctx context.Context, dst []int64, count int) ([]int64, error) {
	return n.n.AppendIDs(ctx, dst, count)
}

// InstanceID is the node's instance id.
func (n *Node) InstanceID() string { return n.n.InstanceID() }

// WorkerID is the worker id the node holds, or -1 while it holds none.
func (n *Node) WorkerID() int { return n.n.WorkerID() }

// Instances returns the online compute nodes as the registry shows them,
// sorted by instance id. From Open on it includes this node, unless the
// node lost its session and has not registered again yet.
func (n *Node) Instances() []Instance { return instances(n.n.Instances()) }

// InstancesChanged returns the current instances and a channel closed at
// the next change, for callers that follow the membership.
func (n *Node) InstancesChanged() ([]Instance, <-chan struct{}) {
	list, changed := n.n.InstancesChanged()
	return instances(list), changed
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats { return Stats(n.n.Stats()) }

// Close leaves the cluster gracefully: it stops issuing, lowers the fence
// to the last issued millisecond (so a successor can start at once),
// deletes the online node and closes the session, which removes every
// ephemeral of the node at once. ctx bounds the registry writes. Close is
// idempotent.
func (n *Node) Close(ctx context.Context) error { return n.n.Close(ctx) }

func instances(list []node.Instance) []Instance {
	if list == nil {
		return nil
	}
	out := make([]Instance, len(list))
	for i, inst := range list {
		out[i] = Instance(inst)
	}
	return out
}
