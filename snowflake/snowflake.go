package snowflake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Layout constants (ShardingSphere's SEQUENCE_BITS, WORKER_ID_BITS, ...).
const (
	TimestampBits = 41
	WorkerIDBits  = 10
	SequenceBits  = 12

	MaxWorkerID = 1<<WorkerIDBits - 1 // 1023
	MaxSequence = 1<<SequenceBits - 1 // 4095

	// DefaultEpochMillis is 2016-11-01T00:00:00Z in unix milliseconds, the epoch of
	// ShardingSphere master.
	DefaultEpochMillis = 1477958400000

	// DefaultMaxVibrationOffset and DefaultMaxTolerateTimeDifference are
	// ShardingSphere's defaults, used by [DefaultConfig].
	DefaultMaxVibrationOffset        = 1
	DefaultMaxTolerateTimeDifference = 10 * time.Millisecond

	maxElapsed     = 1<<TimestampBits - 1
	workerShift    = SequenceBits
	timestampShift = SequenceBits + WorkerIDBits
)

// waitChunk bounds one sleep of a long wait (clock behind the floor, a large
// tolerance), so that the caller's context and Revoke are noticed.
const waitChunk = 10 * time.Millisecond

// Config configures a Generator. The zero Config is valid: worker 0, the default
// epoch, vibration offset 0, tolerance 0 (any clock step back fails), no borrow and
// the system clock. [DefaultConfig] gives ShardingSphere's defaults.
type Config struct {
	// WorkerID is the 10-bit worker id, in [0, MaxWorkerID].
	WorkerID int64
	// Epoch is the time of timestamp 0. The zero Time means DefaultEpochMillis.
	// Keys from ShardingSphere 5.5.2/5.5.3 used 2016-11-01 00:00 in the JVM's
	// local zone.
	Epoch time.Time
	// MaxVibrationOffset is ShardingSphere's max-vibration-offset, in [0, MaxSequence]:
	// each new millisecond starts its sequence at the next offset in 0..N.
	MaxVibrationOffset int
	// MaxTolerateTimeDifference is ShardingSphere's
	// max-tolerate-time-difference-milliseconds, >= 0, in whole milliseconds (a
	// fraction is dropped). A clock step back of d waits when d is smaller, and
	// fails with ErrClockBackwards otherwise.
	MaxTolerateTimeDifference time.Duration
	// MaxBorrow is how far, >= 0, in whole milliseconds, a key's timestamp may run
	// ahead of the clock: when a millisecond's sequence is used up, or the clock
	// stepped back, the generator continues on the next (or last) millisecond
	// instead of waiting, as long as it stays within MaxBorrow of the clock and
	// within the window: no key is stamped past the window's limit whatever
	// MaxBorrow is. 0 (the default) never borrows.
	MaxBorrow time.Duration
	// Fenced makes the Generator start with its window closed: NextID fails with
	// ErrNoReservation until the first SetWindow.
	Fenced bool
	// Clock is the time source; nil means SystemClock().
	Clock Clock
}

// DefaultConfig returns the zero Config with ShardingSphere's defaults:
// MaxVibrationOffset 1 and MaxTolerateTimeDifference 10 ms.
func DefaultConfig() Config {
	return Config{
		MaxVibrationOffset:        DefaultMaxVibrationOffset,
		MaxTolerateTimeDifference: DefaultMaxTolerateTimeDifference,
	}
}

// Validate reports every invalid field at once (errors.Join of [*ConfigError]s,
// each matching [ErrInvalidConfig]), or nil.
func (c Config) Validate() error {
	var errs []error
	if c.WorkerID < 0 || c.WorkerID > MaxWorkerID {
		errs = append(errs, &ConfigError{Field: "worker-id", Value: strconv.FormatInt(c.WorkerID, 10),
			Reason: "Worker ID assigned failed, which should be in [0, 1024).", Want: "an integer in [0, 1023]"})
	}
	if c.MaxVibrationOffset < 0 || c.MaxVibrationOffset > MaxSequence {
		errs = append(errs, &ConfigError{Field: "max-vibration-offset", Value: strconv.Itoa(c.MaxVibrationOffset),
			Reason: "Illegal max vibration offset.", Want: "an integer in [0, 4095]"})
	}
	if c.MaxTolerateTimeDifference < 0 {
		errs = append(errs, &ConfigError{Field: "max-tolerate-time-difference-milliseconds",
			Value:  c.MaxTolerateTimeDifference.String(),
			Reason: "Illegal max tolerate time difference milliseconds.", Want: "an integer >= 0"})
	}
	if c.MaxBorrow < 0 {
		errs = append(errs, &ConfigError{Field: "MaxBorrow", Value: c.MaxBorrow.String(),
			Reason: "Illegal max borrow.", Want: "a duration >= 0"})
	}
	if !c.Epoch.IsZero() && c.Epoch.UnixMilli() < 0 {
		errs = append(errs, &ConfigError{Field: "Epoch", Value: c.Epoch.String(),
			Reason: "Illegal epoch.", Want: "a time at or after 1970-01-01T00:00:00Z"})
	}
	return errors.Join(errs...)
}

type windowState uint8

const (
	windowNone   windowState = iota // plain Snowflake
	windowOpen                      // floor < t <= limit
	windowClosed                    // ErrNoReservation
)

// Generator issues keys for one worker id. It is safe for concurrent use; all
// methods serialise on one mutex, which is never held while waiting.
type Generator struct {
	clock     Clock
	epoch     int64 // unix ms
	workerBit int64 // worker id << workerShift
	maxVib    int64
	tolerate  int64 // ms
	borrow    int64 // ms

	mu      sync.Mutex
	started bool  // a key has been issued
	last    int64 // unix ms of the last key
	seq     int64 // sequence of the last key
	offset  int64 // vibration offset of the last new millisecond; -1 before the first
	window  windowState
	floor   int64         // unix ms; keys are stamped > floor (windowOpen)
	limit   int64         // unix ms; keys are stamped <= limit (windowOpen)
	changed chan struct{} // closed and cleared on every SetWindow and Revoke
	// One call at a time sleeps for a short clock wait as the leader; calls
	// that need the same wait block on woken instead of sleeping too.
	sleeping   bool
	sleepUntil int64         // unix ms the leader sleeps until
	woken      chan struct{} // closed and cleared when the leader wakes; made by its first follower
}

// New returns a Generator for c, or the error of c.Validate. It does no I/O and
// reads no clock.
func New(c Config) (*Generator, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{
		clock:     c.Clock,
		epoch:     DefaultEpochMillis,
		workerBit: c.WorkerID << workerShift,
		maxVib:    int64(c.MaxVibrationOffset),
		tolerate:  c.MaxTolerateTimeDifference.Milliseconds(),
		borrow:    c.MaxBorrow.Milliseconds(),
		offset:    -1,
	}
	if g.clock == nil {
		g.clock = SystemClock()
	}
	if !c.Epoch.IsZero() {
		g.epoch = c.Epoch.UnixMilli()
	}
	if c.Fenced {
		g.window = windowClosed
	}
	return g, nil
}

// NextID returns a new key. It waits, without holding the lock, when the
// millisecond's sequence is used up (until the next millisecond), when the clock
// stepped back by less than the tolerance, when the clock is not past the floor,
// and when the reserved limit is reached (until SetWindow raises it). ctx bounds
// the last two waits (and long clock waits): when it ends, NextID returns an error
// matching [ErrReservationExpired] and ctx.Err(). Other errors: [ErrNoReservation]
// at once while the window is closed, [ErrClockBackwards] (a [*ClockBackwardsError])
// for a larger step back, [ErrTimeOutOfRange].
func (g *Generator) NextID(ctx context.Context) (int64, error) {
	var k [1]int64
	if _, err := g.fill(ctx, k[:]); err != nil {
		return 0, err
	}
	return k[0], nil
}

// NextIDs returns n new keys in increasing order in a new slice (one allocation).
// See [Generator.AppendIDs].
func (g *Generator) NextIDs(ctx context.Context, n int) ([]int64, error) {
	return g.AppendIDs(ctx, make([]int64, 0, max(n, 0)), n)
}

// AppendIDs appends n new keys, in increasing order, to dst and returns the extended
// slice; it allocates only when dst lacks capacity. It takes the lock once for
// the keys of each millisecond it spans (once per call when they fit the current
// millisecond) and waits, and fails, as NextID does. On error the result holds the
// keys issued before it, which are valid keys.
func (g *Generator) AppendIDs(ctx context.Context, dst []int64, n int) ([]int64, error) {
	if n <= 0 {
		return dst, nil
	}
	dst = slices.Grow(dst, n)
	m, err := g.fill(ctx, dst[len(dst):len(dst)+n])
	return dst[:len(dst)+m], err
}

// SetWindow opens the window (floor, limit], in unix milliseconds of the
// Generator's clock: from now on no key is stamped <= floor or > limit. Calls
// waiting for a higher limit wake up. A renewal calls it again with a later
// limit; an empty window (limit <= floor, or limit below the last key) makes
// calls wait for the next SetWindow. Keys already issued are not affected.
func (g *Generator) SetWindow(floor, limit int64) {
	g.mu.Lock()
	g.window, g.floor, g.limit = windowOpen, floor, limit
	g.notify()
	g.mu.Unlock()
}

// Last returns the unix millisecond stamped into the last key issued, and
// false before the first key. A graceful release of a fence lowers the
// reservation to it.
func (g *Generator) Last() (int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last, g.started
}

// Revoke closes the window: once it returns, no key is issued and every call
// (including those waiting) fails with [ErrNoReservation], until the next
// SetWindow. It never waits for a clock.
func (g *Generator) Revoke() {
	g.mu.Lock()
	g.window = windowClosed
	g.notify()
	g.mu.Unlock()
}

// Ready reports whether a key could be issued now without waiting for
// the clock (beyond the borrow) or for a reservation: the window is open,
// the clock is past the floor and the last key, and below the limit.
func (g *Generator) Ready() bool {
	now := floorDiv(g.clock.UnixNano(), 1e6)
	g.mu.Lock()
	defer g.mu.Unlock()
	_, do, err := g.plan(now)
	return err == nil && do == doIssue
}

func (g *Generator) notify() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// plan outcomes.
const (
	doIssue = iota
	doWaitClock
	doWaitWindow
	doFail
)

// plan decides, under the lock, what the next key needs given the clock reading
// now (unix ms): the timestamp t to issue at, a clock wait until unix ms t-borrow,
// a window wait, or an error.
func (g *Generator) plan(now int64) (t int64, do int, err error) {
	if g.window == windowClosed {
		return 0, doFail, ErrNoReservation
	}
	t = now
	if g.started {
		if lead := g.last - now; lead > g.borrow && lead-g.borrow >= g.tolerate {
			return 0, doFail, &ClockBackwardsError{Last: g.last, Current: now}
		}
		if t <= g.last {
			t = g.last
			if g.seq == MaxSequence {
				t++
			}
		}
	}
	if g.window == windowOpen && t <= g.floor {
		t = g.floor + 1
	}
	if e := t - g.epoch; e < 0 || e > maxElapsed {
		return t, doFail, fmt.Errorf("%w: %d ms with epoch %d ms", ErrTimeOutOfRange, t, g.epoch)
	}
	if g.window == windowOpen && t > g.limit {
		return t, doWaitWindow, nil
	}
	if t-now > g.borrow {
		return t, doWaitClock, nil
	}
	return t, doIssue, nil
}

// fill issues len(dst) keys into dst and returns how many it issued.
func (g *Generator) fill(ctx context.Context, dst []int64) (int, error) {
	n := 0
	now := g.clock.UnixNano()
	fresh := false // now was read under the lock
	g.mu.Lock()
	for n < len(dst) {
		t, do, err := g.plan(floorDiv(now, 1e6))
		if do != doIssue && !fresh {
			// Decide to wait or fail only on a reading taken under the lock: a
			// reading taken before may be older than the last key.
			now, fresh = g.clock.UnixNano(), true
			continue
		}
		switch do {
		case doIssue:
			n += g.issue(t, dst[n:])
			if n < len(dst) {
				now, fresh = g.clock.UnixNano(), true
			}
		case doFail:
			g.mu.Unlock()
			return n, err
		case doWaitClock:
			until := t - g.borrow
			short := until*1e6-now <= int64(waitChunk)
			if short && g.sleeping && g.sleepUntil == until {
				// Another call already sleeps until then: wait for it to wake
				// instead of sleeping (and spinning) too.
				if g.woken == nil {
					g.woken = make(chan struct{})
				}
				ch := g.woken
				g.mu.Unlock()
				<-ch
				now, fresh = g.clock.UnixNano(), false
				g.mu.Lock()
				continue
			}
			floorWait := g.window == windowOpen && t == g.floor+1
			lead := short && !g.sleeping
			if lead {
				g.sleeping, g.sleepUntil = true, until
			}
			g.mu.Unlock()
			now, err = g.waitClock(ctx, until)
			g.mu.Lock()
			if lead {
				g.sleeping = false
				if g.woken != nil {
					close(g.woken)
					g.woken = nil
				}
			}
			if err != nil {
				g.mu.Unlock()
				if floorWait {
					return n, fmt.Errorf("%w: clock %d ms not past floor %d ms: %w", ErrReservationExpired, floorDiv(now, 1e6), t-1, err)
				}
				return n, fmt.Errorf("snowflake: waiting for the clock: %w", err)
			}
			fresh = false
		case doWaitWindow:
			if g.changed == nil {
				g.changed = make(chan struct{})
			}
			ch, limit := g.changed, g.limit
			g.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return n, fmt.Errorf("%w: next key needs %d ms, limit is %d ms: %w", ErrReservationExpired, t, limit, ctx.Err())
			}
			now, fresh = g.clock.UnixNano(), false
			g.mu.Lock()
		}
	}
	g.mu.Unlock()
	return n, nil
}

// issue writes keys stamped t into dst, as many as fit in the rest of the
// millisecond, and returns how many. plan has approved t >= g.last.
func (g *Generator) issue(t int64, dst []int64) int {
	switch {
	case !g.started || t > g.last:
		if g.started && g.seq == MaxSequence {
			// Overflow: the next millisecond starts at 0 and keeps the offset.
			g.seq = 0
		} else {
			if g.offset == g.maxVib {
				g.offset = 0
			} else {
				g.offset++
			}
			g.seq = g.offset
		}
		g.started, g.last = true, t
	default:
		g.seq++
	}
	base := (t-g.epoch)<<timestampShift | g.workerBit
	dst[0] = base | g.seq
	i := 1
	for ; i < len(dst) && g.seq < MaxSequence; i++ {
		g.seq++
		dst[i] = base | g.seq
	}
	return i
}

// waitClock waits until the clock reaches unix ms until and returns the last
// reading. Waits longer than waitChunk are cut into chunks, checking ctx before
// each.
func (g *Generator) waitClock(ctx context.Context, until int64) (int64, error) {
	for {
		now := g.clock.UnixNano()
		d := time.Duration(until*1e6 - now)
		if d <= 0 {
			return now, nil
		}
		if d > waitChunk {
			if err := ctx.Err(); err != nil {
				return now, err
			}
			d = waitChunk
		}
		g.clock.Sleep(d)
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// Parts are the fields of a key.
type Parts struct {
	Millis   int64 // milliseconds after the epoch the key was made with
	WorkerID int64
	Sequence int64
}

// Decompose splits key into its fields; key >= 0 for keys this package issues.
// Compose(Decompose(k)) == k for every k >= 0.
func Decompose(key int64) Parts {
	return Parts{
		Millis:   key >> timestampShift,
		WorkerID: key >> workerShift & MaxWorkerID,
		Sequence: key & MaxSequence,
	}
}

// Compose builds a key from its fields, or fails with [ErrTimeOutOfRange] or
// [ErrInvalidConfig] when a field does not fit its bits.
func Compose(p Parts) (int64, error) {
	if p.Millis < 0 || p.Millis > maxElapsed {
		return 0, fmt.Errorf("%w: %d ms after the epoch", ErrTimeOutOfRange, p.Millis)
	}
	if p.WorkerID < 0 || p.WorkerID > MaxWorkerID {
		return 0, &ConfigError{Field: "worker-id", Value: strconv.FormatInt(p.WorkerID, 10),
			Reason: "Worker ID assigned failed, which should be in [0, 1024).", Want: "an integer in [0, 1023]"}
	}
	if p.Sequence < 0 || p.Sequence > MaxSequence {
		return 0, &ConfigError{Field: "sequence", Value: strconv.FormatInt(p.Sequence, 10),
			Reason: "Illegal sequence.", Want: "an integer in [0, 4095]"}
	}
	return p.Millis<<timestampShift | p.WorkerID<<workerShift | p.Sequence, nil
}

// Time returns the instant of a key's timestamp for epoch, in UTC.
func (p Parts) Time(epoch time.Time) time.Time {
	return epoch.Add(time.Duration(p.Millis) * time.Millisecond).UTC()
}
