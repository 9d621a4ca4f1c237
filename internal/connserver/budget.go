package connserver

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/semaphore"
)

// DefaultBudget is the bytes of statements all console sessions of a node
// buffer at once by default: 64 statements of the 1 MiB limit. With it a
// node's console input stays well below the 512 MiB the deploy files give
// a pod (see docs/operations.md).
const DefaultBudget = 64 << 20

// Small is the size up to which a packet or message is not taken from a
// Budget: every session may hold one that small anyway, so that short
// statements never wait for room.
const Small = 64 << 10

// BodyTimeout bounds the reading of a packet or message taken from a
// Budget, from its header on: a client that trickles a large statement
// holds its share at most this long.
const BodyTimeout = 30 * time.Second

// budgetWait is how long a statement waits for room in a full Budget
// before it is refused.
const budgetWait = 2 * time.Second

// Budget bounds the bytes that every session of a node's consoles (MySQL
// and PostgreSQL alike) holds for statements being read or run: a front
// end takes a packet's or message's declared length from it before it
// reads the body, and gives it back once the statement is answered.
// Packets up to Small bytes are not counted, and a counted one must
// arrive within BodyTimeout. A nil *Budget bounds nothing. Safe for
// concurrent use.
type Budget struct {
	limit int64
	sem   *semaphore.Weighted
}

// NewBudget returns a Budget of limit bytes (> 0).
func NewBudget(limit int64) *Budget {
	return &Budget{limit: limit, sem: semaphore.NewWeighted(limit)}
}

// ErrBudget is wrapped by Acquire's error when the budget stays full.
var ErrBudget = fmt.Errorf("the consoles' statement buffers are full")

// Acquire takes n bytes, waiting up to 2 s (bounded by ctx) while other
// sessions hold the rest; it fails with an error wrapping ErrBudget when
// they do not free enough meanwhile, or n is more than the whole budget.
func (b *Budget) Acquire(ctx context.Context, n int64) error {
	if b == nil || n <= Small {
		return nil
	}
	if n > b.limit {
		return fmt.Errorf("%w: %d bytes is more than the node's %d", ErrBudget, n, b.limit)
	}
	if b.sem.TryAcquire(n) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, budgetWait)
	defer cancel()
	if err := b.sem.Acquire(ctx, n); err != nil {
		return fmt.Errorf("%w (%d MiB for all sessions together): retry later", ErrBudget, b.limit>>20)
	}
	return nil
}

// Counts reports whether Acquire takes n bytes from b (a nil b, or n up
// to Small, takes nothing).
func (b *Budget) Counts(n int64) bool { return b != nil && n > Small }

// Release gives back n bytes taken with Acquire (nothing for n up to
// Small).
func (b *Budget) Release(n int64) {
	if b != nil && n > Small {
		b.sem.Release(n)
	}
}
