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
	// Offline is the number of observations left out because the node
	// that made them was not listed online in the registry (CheckRun).
	Offline int
	// Undecided is true when the check ran out of time before deciding;
	// Linearizable is then false and Key empty.
	Undecided bool
	// Key is the first key whose history is not linearizable; empty when
	// Linearizable or Undecided. Node is the view whose observations of
	// Key conflict with Key's changes ("": the registry's, or the changes
	// alone).
	Key, Node string
	// Offending are observations of Key (reads and refusals) that no order
	// of Key's changes explains together: with every change of Key kept,
	// removing any one of them makes Key's history linearizable (within
	// the time Check had left). Empty when Key's changes alone conflict
	// (two acknowledged CREATEs and no DROP between them). Sorted by Call.
	Offending []Op
	// Changes are Key's changes (CREATE, ALTER, DROP, SET, not refused)
	// whose bounds meet the span of Offending or the second before it (or,
	// when Offending is empty, of the earliest change that could not be
	// ordered): the ones to look at. Sorted by Call.
	Changes []Op
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
	if r.Node != "" {
		return fmt.Sprintf("%s, NOT linearizable: key %s as node %s sees it", head, r.Key, r.Node)
	}
	return fmt.Sprintf("%s, NOT linearizable: key %s", head, r.Key)
}

// ErrBadOp is returned for an operation that cannot be checked (no key,
// an unknown kind or outcome, a response before its call).
var ErrBadOp = errors.New("linear: bad operation")

// Check checks every key's history in ops for linearizability against the
// register model (see Kind and Outcome), one view at a time: the key's
// changes with the observations made on one node's view (Op.Node), then on
// the next. Each view must be explained by some order of the changes that
// respects their bounds; two views may be explained by different orders,
// so views that differ while changes are in flight, or that diverge, are
// not found here (the convergence check's part). Observations all made on
// one view ("") make it the plain linearizability check. It spends at most
// timeout on the check, as much again on finding the failing key, and at
// most MaxExplain (or timeout, if less) on the visualisation and the
// shrinking of the witness together (timeout 0: no limit but MaxExplain). When the
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
	// Find the first key that fails on its own, within what is left of
	// timeout.
	var key []porcupine.Operation
	left := remaining(time.Now(), timeout)
	for _, part := range partition(history) {
		d, ok := left()
		if !ok {
			break
		}
		if porcupine.CheckOperationsTimeout(m, part, d) == porcupine.Illegal {
			key = part
			break
		}
	}
	if key == nil {
		res.Undecided = true
		return res, nil
	}
	res.Key = key[0].Input.(Op).Key
	for _, o := range key {
		if observation(o) {
			res.Node = o.Input.(Op).Node
			break
		}
	}
	// The visualisation and the witness share one bound.
	explain := timeout
	if explain == 0 || explain > MaxExplain {
		explain = MaxExplain
	}
	left = remaining(time.Now(), explain)
	if html != "" {
		d, _ := left()
		_, info := porcupine.CheckOperationsVerbose(m, key, max(d, time.Millisecond))
		if err := porcupine.VisualizePath(m, info, html); err != nil {
			return res, fmt.Errorf("linear: writing the visualisation: %w", err)
		}
	}
	d, _ := left()
	observations, changes := witness(m, key, max(d, time.Millisecond))
	for _, o := range observations {
		res.Offending = append(res.Offending, o.Input.(Op))
	}
	for _, o := range changes {
		res.Changes = append(res.Changes, o.Input.(Op))
	}
	if len(res.Offending) == 0 {
		// The changes alone conflict: in every view, not the one that
		// happened to be checked first.
		res.Node = ""
	}
	return res, nil
}

// MaxExplain bounds the time Check spends explaining a failure: the
// visualisation and the shrinking of the witness together.
const MaxExplain = 30 * time.Second

// remaining returns a function that says how much of timeout, counted
// from start, is left (0, true: no limit) and false once it is spent.
func remaining(start time.Time, timeout time.Duration) func() (time.Duration, bool) {
	return func() (time.Duration, bool) {
		if timeout <= 0 {
			return 0, true
		}
		d := timeout - time.Since(start)
		return d, d > 0
	}
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

// observation says whether o only observes its register: a read, or a
// refusal (nothing changed). Removing observations from a history can
// only make it easier to explain; removing a change can make it harder.
func observation(o porcupine.Operation) bool {
	op := o.Input.(Op)
	return op.Kind == Read || op.Outcome == Refused
}

// witness explains why the non-linearizable part (one key's history) is
// not linearizable, within timeout. observations are observations of part
// that no order of part's changes explains together: every change of part
// is kept and observations are removed one at a time while what is left is
// still not linearizable, so removing any one of them (within the time
// left) makes it linearizable. changes are part's changes whose bounds
// meet the second before the observations and their span (an unknown
// change: called by its end). When the changes alone conflict
// (observations empty), the span is that of the earliest operation
// porcupine could not linearize.
func witness(m porcupine.Model, part []porcupine.Operation, timeout time.Duration) (observations, changes []porcupine.Operation) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	illegal := func(h []porcupine.Operation) bool {
		d := time.Duration(0)
		if !deadline.IsZero() {
			if d = time.Until(deadline); d <= 0 {
				return false
			}
		}
		return porcupine.CheckOperationsTimeout(m, h, d) == porcupine.Illegal
	}
	cur := append([]porcupine.Operation(nil), part...)
	for i := len(cur) - 1; i >= 0; i-- {
		if !observation(cur[i]) {
			continue
		}
		if cand := append(append([]porcupine.Operation(nil), cur[:i]...), cur[i+1:]...); illegal(cand) {
			cur = cand
		}
	}
	var from, to int64
	for _, o := range cur {
		if observation(o) {
			if len(observations) == 0 {
				from, to = o.Call, o.Return
			}
			from, to = min(from, o.Call), max(to, o.Return)
			observations = append(observations, o)
		}
	}
	if len(observations) == 0 {
		stuck := firstStuck(m, cur, timeout)
		from, to = stuck.Call, stuck.Return
	}
	from -= int64(time.Second)
	for _, o := range cur {
		if !observation(o) && o.Call <= to && o.Return >= from {
			changes = append(changes, o)
		}
	}
	return observations, changes
}

// firstStuck returns the operation of the non-linearizable h with the
// earliest call among those porcupine's longest partial linearization
// leaves out (the last operation of h if it cannot tell).
func firstStuck(m porcupine.Model, h []porcupine.Operation, timeout time.Duration) porcupine.Operation {
	_, info := porcupine.CheckOperationsVerbose(m, h, timeout)
	var longest []int
	for _, part := range info.PartialLinearizations() {
		for _, lin := range part {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
	}
	in := map[int]bool{}
	for _, id := range longest {
		in[id] = true
	}
	for i, o := range h {
		if !in[i] {
			return o
		}
	}
	return h[len(h)-1]
}
