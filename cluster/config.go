package cluster

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/workerid"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// Version is the version string a node publishes in its online node.
const Version = "shardkeeper-0.1.0"

// DefaultReservation is how far ahead a node reserves time (W).
const DefaultReservation = 3 * time.Second

// DefaultCatchUpTimeout is Config.CatchUpTimeout's default.
const DefaultCatchUpTimeout = 5 * time.Second

// MaxReservation is the longest Reservation allowed (1 minute).
const MaxReservation = workerid.MaxReservation

// MaxClockSkew is the bound on the difference between two nodes' clocks
// that the fence assumes when a worker id's fence is missing or corrupt
// (5 seconds): such an id is claimed with the floor now + MaxReservation +
// MaxClockSkew.
const MaxClockSkew = workerid.MaxClockSkew

// Instance types, as ShardingSphere writes them in the online path.
const (
	TypeProxy = "proxy"
	TypeJDBC  = "jdbc"
)

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
	// CatchUpTimeout bounds the wait for the function set with
	// Node.SetCatchUp before the node registers online again after a
	// lost session: past it the node registers anyway (and logs a
	// warning), so that a view that never catches up does not keep it
	// offline for good. Zero means DefaultCatchUpTimeout.
	CatchUpTimeout time.Duration
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
	// delivered before any key of its epoch is issued and (unless
	// UnsafeLeaseOnly) after the last key of the epoch before, so a trail of
	// events and keys shows which holder stamped which keys.
	OnEvent func(Event)

	// The Unsafe switches below each turn off part of what makes keys
	// unique. They are the negative controls of the tests and chaos runs
	// that show what the fence prevents: with one set, those runs find
	// duplicate keys. Never set them in production.

	// UnsafeLeaseOnly turns the fence off and behaves as ShardingSphere
	// does: the node stamps keys with no time reservation and, when its
	// session is lost, keeps issuing on its old worker id until it has
	// acquired a new one. A paused or partitioned node then issues keys its
	// successor also issues. It exists as the negative control of tests
	// that show the fence works; never set it otherwise.
	UnsafeLeaseOnly bool
	// UnsafeIgnoreFloor keeps the fence and the time reservations but
	// ignores the floor, the previous holder's reservation: after acquiring
	// a worker id the node stamps keys from its own clock even when that is
	// at or below the floor, so a node whose clock is behind its
	// predecessor's reservation issues keys the predecessor may have issued.
	// It has no effect with UnsafeLeaseOnly. It exists as the negative
	// control of tests that show the floor is needed; never set it
	// otherwise.
	UnsafeIgnoreFloor bool
	// UnsafeTrustAbsentFence reads a worker id's absent fence as "never
	// used, floor 0", even on a cluster whose fences were all created when
	// it was first used: a fence deleted by an operator then lets the next
	// holder stamp keys its predecessor may have stamped. Without it an
	// absent or corrupt fence on such a cluster is unknown, and its floor
	// is the longest reservation any holder may have made plus the clock
	// skew bound. It exists as the negative control of tests and chaos
	// runs that delete fences; never set it otherwise.
	UnsafeTrustAbsentFence bool
}

// EventKind says what changed in a node's hold on its worker id.
type EventKind string

// Event kinds.
const (
	// EventAcquired: the node claimed WorkerID at Epoch; it will stamp
	// keys above FloorMs once a reservation is committed (EventReserved;
	// at once with UnsafeLeaseOnly), or gives it up (EventLost).
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

func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.InstanceID == "" {
		c.InstanceID, c.RandomInstanceID = NewInstanceID(), true
	}
	if err := registry.ValidateName(c.InstanceID); err != nil {
		errs = append(errs, fmt.Errorf("cluster: InstanceID: %w", err))
	}
	switch c.Type {
	case "":
		c.Type = TypeProxy
	case TypeProxy, TypeJDBC:
	default:
		errs = append(errs, fmt.Errorf("cluster: Type %q: want %q or %q", c.Type, TypeProxy, TypeJDBC))
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("cluster: Port %d outside [0, 65535]", c.Port))
	}
	for _, l := range c.Labels {
		if err := registry.ValidateName(l); err != nil {
			errs = append(errs, fmt.Errorf("cluster: label: %w", err))
		}
	}
	if c.Reservation == 0 {
		c.Reservation = DefaultReservation
	}
	if c.Reservation < 30*time.Millisecond {
		errs = append(errs, fmt.Errorf("cluster: Reservation %v is too short (at least 30ms)", c.Reservation))
	}
	if c.Reservation > MaxReservation {
		errs = append(errs, fmt.Errorf("cluster: Reservation %v is too long (at most %v: a node that finds a worker id's fence missing waits this long, plus the clock skew bound, before issuing on it)", c.Reservation, MaxReservation))
	}
	if c.CatchUpTimeout == 0 {
		c.CatchUpTimeout = DefaultCatchUpTimeout
	}
	if c.CatchUpTimeout < 0 {
		errs = append(errs, fmt.Errorf("cluster: CatchUpTimeout %v is negative", c.CatchUpTimeout))
	}
	if c.SessionTTL < 0 {
		errs = append(errs, fmt.Errorf("cluster: SessionTTL %v is negative", c.SessionTTL))
	}
	if c.Snowflake == (snowflake.Config{}) {
		c.Snowflake = snowflake.DefaultConfig()
	}
	sf := c.Snowflake
	sf.WorkerID = 0
	if err := sf.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, errors.Join(errs...)
}

func (c Config) instanceType() paths.InstanceType {
	if c.Type == TypeJDBC {
		return paths.JDBC
	}
	return paths.Proxy
}

// NewInstanceID returns a random version 4 UUID, ShardingSphere's default
// instance id.
func NewInstanceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
