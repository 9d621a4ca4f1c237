package snowflake

import (
	"errors"
	"fmt"
)

var (
	// ErrClockBackwards is matched (errors.Is) by every [*ClockBackwardsError]:
	// the clock is behind the last issued key by at least the tolerance.
	ErrClockBackwards = errors.New("snowflake: clock is moving backwards")

	// ErrNoReservation is returned at once by NextID and AppendIDs while the window is
	// closed: after [Generator.Revoke], or from the start with [Config.Fenced],
	// until the next [Generator.SetWindow].
	ErrNoReservation = errors.New("snowflake: no time reservation (window closed)")

	// ErrReservationExpired is returned when the next key needs a timestamp above
	// the reserved limit and the caller's context ended before SetWindow raised
	// the limit, or before the clock passed the floor. The error also matches the
	// context's error.
	ErrReservationExpired = errors.New("snowflake: reserved time window exhausted")

	// ErrTimeOutOfRange is returned when the timestamp is before the epoch or does
	// not fit the 41 bits after it (after 2086-07-08T15:47:35.551Z with the
	// default epoch).
	ErrTimeOutOfRange = errors.New("snowflake: time outside the 41-bit range after the epoch")

	// ErrInvalidConfig is matched (errors.Is) by every [*ConfigError].
	ErrInvalidConfig = errors.New("snowflake: invalid config")
)

// ClockBackwardsError reports a clock step back that is not smaller than the
// tolerance. Last and Current are unix milliseconds: the timestamp of the last
// issued key and the clock reading. Its text is ShardingSphere's.
type ClockBackwardsError struct {
	Last, Current int64
}

func (e *ClockBackwardsError) Error() string {
	return fmt.Sprintf("Clock is moving backwards, last time is %d milliseconds, current time is %d milliseconds.", e.Last, e.Current)
}

// Is reports whether target is [ErrClockBackwards].
func (e *ClockBackwardsError) Is(target error) bool { return target == ErrClockBackwards }

// ConfigError is a validation failure of one field or prop. Reason is
// ShardingSphere's message where it has one ("Illegal max vibration offset.").
type ConfigError struct {
	Field  string // the prop name, for example "max-vibration-offset"
	Value  string // the rejected value as given
	Reason string // ShardingSphere's message
	Want   string // what would be accepted
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("snowflake: %s %q: %s (want %s)", e.Field, e.Value, e.Reason, e.Want)
}

// Is reports whether target is [ErrInvalidConfig].
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }
