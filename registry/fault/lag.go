package fault

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shardkeeper/shardkeeper/registry"
)

// LagEvent is a Hook (and EventObserver) for Observe that, once armed,
// delays the next watch event whose key contains Match by Delay, and so
// every event after it on that watch: the node watching through it sees
// the next matching change late. It changes no operation. Safe for
// concurrent use.
type LagEvent struct {
	Match string
	Delay time.Duration
	armed atomic.Bool
}

// Arm makes the next matching event late; it disarms itself once used.
func (l *LagEvent) Arm() { l.armed.Store(true) }

// Before lets every operation through.
func (*LagEvent) Before(context.Context, string, string) (func(error) error, error) { return nil, nil }

// Event delays the first matching event after Arm.
func (l *LagEvent) Event(_ string, ev registry.Event) {
	if strings.Contains(ev.KV.Key, l.Match) && l.armed.CompareAndSwap(true, false) {
		time.Sleep(l.Delay)
	}
}
