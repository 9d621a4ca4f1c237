// Package linear checks a recorded history of configuration changes for
// linearizability: every rule item and every /props key is a register, and
// each one's operations must be explainable by some order that respects
// their real-time bounds. It wraps github.com/anishathalye/porcupine with a
// register model of what the cluster's DistSQL statements mean.
package linear

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"

	"github.com/anishathalye/porcupine"
)

// Kind is what an operation does to its register.
type Kind int

const (
	// Create succeeds when the item is absent and sets it to Value; on a
	// present item it is refused, or, with Lenient (IF NOT EXISTS),
	// succeeds without changing it.
	Create Kind = iota + 1
	// Alter succeeds when the item is present and sets it to Value; on an
	// absent item it is refused.
	Alter
	// Drop succeeds when the item is present and removes it; on an absent
	// item it is refused, or, with Lenient (IF EXISTS), succeeds without
	// changing anything.
	Drop
	// Set (SET DIST VARIABLE) always succeeds and sets the key to Value.
	Set
	// Read observed the register: Present and Value are what it saw.
	Read
)

// Outcome is what the client learnt of an operation.
type Outcome int

const (
	// OK: the change (or read) was acknowledged.
	OK Outcome = iota + 1
	// Refused: the statement was rejected because its condition did not
	// hold (the item existed for CREATE, was absent for ALTER or DROP);
	// nothing changed.
	Refused
	// Unknown: no answer (timeout, lost connection, an error that does not
	// say whether the change was committed). The change may have taken
	// effect at any moment after the call, or never.
	Unknown
)

// Op is one operation of a history.
type Op struct {
	// Key names the register: a rule item ("sharding/tables/t_order") or a
	// /props key.
	Key string `json:"key"`
	// Client identifies the client that ran it; a client runs one
	// operation at a time.
	Client int  `json:"client"`
	Kind   Kind `json:"kind"`
	// Lenient is IF NOT EXISTS for Create, IF EXISTS for Drop.
	Lenient bool `json:"lenient,omitempty"`
	// Value is what Create, Alter and Set write (the item's content, or a
	// digest of it) and what a Read saw when Present.
	Value string `json:"value,omitempty"`
	// Present is, for a Read, whether the item existed.
	Present bool `json:"present,omitempty"`
	// Node names the view a Read or a refusal observed: a node whose SHOW
	// answered, or "" for the registry itself. Each view is checked on its
	// own against the key's changes (see Check).
	Node    string  `json:"node,omitempty"`
	Outcome Outcome `json:"outcome"`
	// Pending names, for an acknowledged change, the views (nodes) that
	// the acknowledgement said had not confirmed it in time (a warning):
	// in their checks the change takes effect at some moment after its
	// call, as one of unknown outcome that did (see Check).
	Pending []string `json:"pending,omitempty"`
	// Call and Return are the real-time bounds (unix ns) of the operation:
	// Call before the request was sent, Return after its answer arrived.
	// Return is ignored for an Unknown outcome.
	Call   int64 `json:"call"`
	Return int64 `json:"return,omitempty"`
}

// String describes the operation for reports, like `c3 CREATE(v1) -> ok`.
func (o Op) String() string {
	return fmt.Sprintf("%s c%d %s [%d, %d]", o.Key, o.Client, describe(o), o.Call, o.Return)
}

// state is one register's value.
type state struct {
	present bool
	value   string
}

func (s state) String() string {
	if !s.present {
		return "absent"
	}
	return fmt.Sprintf("%q", s.value)
}

// apply is the register's sequential specification: the state after op on
// s if the op succeeded, and whether it would succeed (false: refused).
func apply(s state, op Op) (state, bool) {
	switch op.Kind {
	case Create:
		if s.present {
			return s, op.Lenient
		}
		return state{present: true, value: op.Value}, true
	case Alter:
		if !s.present {
			return s, false
		}
		return state{present: true, value: op.Value}, true
	case Drop:
		if !s.present {
			return s, op.Lenient
		}
		return state{}, true
	case Set:
		return state{present: true, value: op.Value}, true
	}
	return s, false
}

// step lists the states op may leave from s given its recorded outcome;
// none when the outcome cannot be explained from s.
func step(s state, op Op) []state {
	if op.Kind == Read {
		if op.Outcome != OK || s.present != op.Present || (s.present && s.value != op.Value) {
			return nil
		}
		return []state{s}
	}
	next, ok := apply(s, op)
	switch op.Outcome {
	case OK:
		if ok {
			return []state{next}
		}
	case Refused:
		if !ok {
			return []state{s}
		}
	case Unknown:
		if ok && next != s {
			return []state{s, next}
		}
		return []state{s}
	}
	return nil
}

func describe(op Op) string {
	var in string
	switch op.Kind {
	case Create:
		in = fmt.Sprintf("CREATE(%s)", op.Value)
		if op.Lenient {
			in = fmt.Sprintf("CREATE IF NOT EXISTS(%s)", op.Value)
		}
	case Alter:
		in = fmt.Sprintf("ALTER(%s)", op.Value)
	case Drop:
		in = "DROP"
		if op.Lenient {
			in = "DROP IF EXISTS"
		}
	case Set:
		in = fmt.Sprintf("SET(%s)", op.Value)
	case Read:
		if op.Present {
			return fmt.Sprintf("READ -> %q", op.Value)
		}
		return "READ -> absent"
	default:
		in = fmt.Sprintf("kind %d", op.Kind)
	}
	switch op.Outcome {
	case OK:
		return in + " -> ok"
	case Refused:
		return in + " -> refused"
	}
	return in + " -> unknown"
}

// model is the porcupine model of one register per key, starting absent.
// Inputs are Ops (outputs are unused: an Op carries its outcome).
func model() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partition,
		Init:      func() []interface{} { return []interface{}{state{}} },
		Step: func(s, in, _ interface{}) []interface{} {
			next := step(s.(state), in.(Op))
			out := make([]interface{}, len(next))
			for i, n := range next {
				out[i] = n
			}
			return out
		},
		Hash: func(s interface{}) uint64 {
			st := s.(state)
			h := fnv.New64a()
			if st.present {
				h.Write([]byte{1})
				h.Write([]byte(st.value))
			}
			return h.Sum64()
		},
		DescribeOperation: func(in, _ interface{}) string { return describe(in.(Op)) },
		DescribeState:     func(s interface{}) string { return s.(state).String() },
	}
	return nm.ToModel()
}

// pendingFor returns changes as view v must be explained by them: an
// acknowledged change that names v pending may take effect at any moment
// after its call (until end), and must (it is in the registry).
func pendingFor(changes []porcupine.Operation, v string, end int64) []porcupine.Operation {
	out := changes
	for i, o := range changes {
		op := o.Input.(Op)
		if op.Outcome != OK || !slices.Contains(op.Pending, v) {
			continue
		}
		if &out[0] == &changes[0] {
			out = slices.Clone(changes)
		}
		out[i].Return = end + 1
	}
	return out
}

// partition splits a history by key and, within a key, by the view its
// observations were made on (Op.Node): each part holds every change of its
// key and the observations of one view, in call order. Keys come in the
// order they first appear, views in the order their first observation
// does; a key without observations is one part of its changes.
func partition(history []porcupine.Operation) [][]porcupine.Operation {
	type key struct {
		changes []porcupine.Operation
		views   map[string][]porcupine.Operation
		order   []string
	}
	index := map[string]*key{}
	var keys []*key
	for _, o := range history {
		op := o.Input.(Op)
		k := index[op.Key]
		if k == nil {
			k = &key{views: map[string][]porcupine.Operation{}}
			index[op.Key] = k
			keys = append(keys, k)
		}
		if !observation(o) {
			k.changes = append(k.changes, o)
			continue
		}
		if _, ok := k.views[op.Node]; !ok {
			k.order = append(k.order, op.Node)
		}
		k.views[op.Node] = append(k.views[op.Node], o)
	}
	var end int64
	for _, o := range history {
		end = max(end, o.Return)
	}
	var parts [][]porcupine.Operation
	for _, k := range keys {
		if len(k.order) == 0 {
			parts = append(parts, k.changes)
		}
		for _, v := range k.order {
			part := append(append([]porcupine.Operation(nil), pendingFor(k.changes, v, end)...), k.views[v]...)
			sort.SliceStable(part, func(i, j int) bool { return part[i].Call < part[j].Call })
			parts = append(parts, part)
		}
	}
	return parts
}
