package linear

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Result is what Check found.
type Result struct {
	// Ops is the number of operations checked; Unknown how many of them
	// had an Unknown outcome. Reads of unknown outcome say nothing and are
	// left out of both counts.
	Ops, Unknown int
	// Linearizable is true when every key's history is linearizable.
	Linearizable bool
	// Undecided is true when the check ran out of time before deciding;
	// Linearizable is then false and Key empty.
	Undecided bool
	// Key is the first key whose history is not linearizable; empty when
	// Linearizable or Undecided.
	Key string
	// Offending is a shortest sub-history of Key found not linearizable:
	// removing any one of its operations makes it linearizable (within the
	// time Check had left). Sorted by Call.
	Offending []Op
}

// String is the report line, like
// "N operations (M unknown), linearizable" or
// "N operations (M unknown), NOT linearizable: key k".
func (r Result) String() string {
	head := fmt.Sprintf("%d operations (%d unknown)", r.Ops, r.Unknown)
	switch {
	case r.Linearizable:
		return head + ", linearizable"
	case r.Undecided:
		return head + ", undecided (check timed out)"
	}
	return fmt.Sprintf("%s, NOT linearizable: key %s", head, r.Key)
}

// ErrBadOp is returned for an operation that cannot be checked (no key,
// an unknown kind or outcome, a response before its call).
var ErrBadOp = errors.New("linear: bad operation")

// Check checks every key's history in ops for linearizability against the
// register model (see Kind and Outcome), spending at most timeout on the
// check and as much again on shrinking a failure (0: no limit). When the
// history is not linearizable and html is not empty, it writes porcupine's
// visualisation of the offending key's history to the file html. It
// returns ErrBadOp, naming the operation, for an operation it cannot
// check, and the error of writing html.
func Check(ops []Op, timeout time.Duration, html string) (Result, error) {
	history, res, err := operations(ops)
	if err != nil {
		return res, err
	}
	m := model()
	switch porcupine.CheckOperationsTimeout(m, history, timeout) {
	case porcupine.Ok:
		res.Linearizable = true
		return res, nil
	case porcupine.Unknown:
		res.Undecided = true
		return res, nil
	}
	// Find the first key that fails on its own.
	var key []porcupine.Operation
	for _, part := range partition(history) {
		if porcupine.CheckOperationsTimeout(m, part, timeout) == porcupine.Illegal {
			key = part
			break
		}
	}
	if key == nil {
		res.Undecided = true
		return res, nil
	}
	res.Key = key[0].Input.(Op).Key
	if html != "" {
		_, info := porcupine.CheckOperationsVerbose(m, key, timeout)
		if err := porcupine.VisualizePath(m, info, html); err != nil {
			return res, fmt.Errorf("linear: writing the visualisation: %w", err)
		}
	}
	for _, o := range shrink(m, key, timeout) {
		res.Offending = append(res.Offending, o.Input.(Op))
	}
	return res, nil
}

// operations validates ops and turns them into porcupine's operations,
// sorted by call time. An Unknown write returns after every other
// operation; an Unknown read is dropped.
func operations(ops []Op) ([]porcupine.Operation, Result, error) {
	var res Result
	var end int64
	for i, o := range ops {
		switch {
		case o.Key == "":
			return nil, res, fmt.Errorf("%w: operation %d has no key", ErrBadOp, i)
		case o.Kind < Create || o.Kind > Read:
			return nil, res, fmt.Errorf("%w: operation %d (%s) has kind %d", ErrBadOp, i, o.Key, o.Kind)
		case o.Outcome < OK || o.Outcome > Unknown:
			return nil, res, fmt.Errorf("%w: operation %d (%s) has outcome %d", ErrBadOp, i, o.Key, o.Outcome)
		case o.Outcome != Unknown && o.Return < o.Call:
			return nil, res, fmt.Errorf("%w: operation %d (%s) returns at %d before its call at %d", ErrBadOp, i, o.Key, o.Return, o.Call)
		case o.Kind == Read && o.Outcome == Refused:
			return nil, res, fmt.Errorf("%w: operation %d (%s) is a refused read", ErrBadOp, i, o.Key)
		}
		end = max(end, o.Call, o.Return)
	}
	history := make([]porcupine.Operation, 0, len(ops))
	for _, o := range ops {
		if o.Outcome == Unknown {
			if o.Kind == Read {
				continue
			}
			res.Unknown++
			o.Return = end + 1
		}
		history = append(history, porcupine.Operation{ClientId: o.Client, Input: o, Call: o.Call, Return: o.Return})
	}
	sort.SliceStable(history, func(i, j int) bool { return history[i].Call < history[j].Call })
	res.Ops = len(history)
	return history, res, nil
}

// shrink returns a short non-linearizable sub-history of the
// non-linearizable part, within timeout. It first looks for the shortest
// non-linearizable prefix (by call time), then removes operations one at a
// time while what is left is still not linearizable from any starting
// state (anyStart), so that the result shows a conflict between its own
// operations rather than with operations it left out; when the prefix
// needs the absent start to fail (an acknowledged DROP of an item never
// created), it is shrunk from the absent start.
func shrink(m porcupine.Model, part []porcupine.Operation, timeout time.Duration) []porcupine.Operation {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	left := func() (time.Duration, bool) {
		if deadline.IsZero() {
			return 0, true
		}
		d := time.Until(deadline)
		return d, d > 0
	}
	illegalIn := func(m porcupine.Model, h []porcupine.Operation) bool {
		d, ok := left()
		return ok && porcupine.CheckOperationsTimeout(m, h, d) == porcupine.Illegal
	}
	illegal := func(h []porcupine.Operation) bool { return illegalIn(m, h) }
	// Shortest prefix: hi is always a non-linearizable prefix length.
	lo, hi := 0, len(part)
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if illegal(part[:mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	cur := append([]porcupine.Operation(nil), part[:hi]...)
	if free := anyStart(cur); illegalIn(free, cur) {
		m = free
	}
	for i := len(cur) - 1; i >= 0; i-- {
		if _, ok := left(); !ok {
			break
		}
		cand := append(append([]porcupine.Operation(nil), cur[:i]...), cur[i+1:]...)
		if illegal(cand) {
			cur = cand
		}
	}
	return cur
}
