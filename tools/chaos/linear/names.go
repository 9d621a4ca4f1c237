package linear

import "fmt"

var (
	kindNames    = map[Kind]string{Create: "create", Alter: "alter", Drop: "drop", Set: "set", Read: "read"}
	outcomeNames = map[Outcome]string{OK: "ok", Refused: "refused", Unknown: "unknown"}
)

// MarshalText names the kind ("create", "alter", "drop", "set", "read").
func (k Kind) MarshalText() ([]byte, error) { return marshalName(kindNames, k, "kind") }

// UnmarshalText reads a name MarshalText writes.
func (k *Kind) UnmarshalText(b []byte) error { return unmarshalName(kindNames, k, b, "kind") }

// MarshalText names the outcome ("ok", "refused", "unknown").
func (o Outcome) MarshalText() ([]byte, error) { return marshalName(outcomeNames, o, "outcome") }

// UnmarshalText reads a name MarshalText writes.
func (o *Outcome) UnmarshalText(b []byte) error {
	return unmarshalName(outcomeNames, o, b, "outcome")
}

func marshalName[T comparable](names map[T]string, v T, what string) ([]byte, error) {
	if n, ok := names[v]; ok {
		return []byte(n), nil
	}
	return nil, fmt.Errorf("%w: %s %v", ErrBadOp, what, v)
}

func unmarshalName[T comparable](names map[T]string, v *T, b []byte, what string) error {
	for k, n := range names {
		if n == string(b) {
			*v = k
			return nil
		}
	}
	return fmt.Errorf("%w: unknown %s %q", ErrBadOp, what, b)
}
