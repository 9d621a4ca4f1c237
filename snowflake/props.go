package snowflake

import (
	"errors"
	"strconv"
	"time"
)

// ShardingSphere's prop names for the SNOWFLAKE key generator.
const (
	PropWorkerID                  = "worker-id"
	PropMaxVibrationOffset        = "max-vibration-offset"
	PropMaxTolerateTimeDifference = "max-tolerate-time-difference-milliseconds"
)

// ParseProps returns [DefaultConfig] with the ShardingSphere props found in props
// applied; other keys are ignored, as ShardingSphere does. Values are parsed as
// Java's Integer.parseInt does (decimal, optional sign, 32 bits). It reports every
// bad prop at once (errors.Join of [*ConfigError]s matching [ErrInvalidConfig]),
// with ShardingSphere's messages: "Illegal max vibration offset.",
// "Illegal max tolerate time difference milliseconds." and, for worker-id,
// "Worker ID assigned failed, which should be in [0, 1024).".
func ParseProps(props map[string]string) (Config, error) {
	c := DefaultConfig()
	var errs []error
	parse := func(key, reason, want string, ok func(int64) bool, set func(int64)) {
		s, present := props[key]
		if !present {
			return
		}
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil || !ok(v) {
			errs = append(errs, &ConfigError{Field: key, Value: s, Reason: reason, Want: want})
			return
		}
		set(v)
	}
	parse(PropWorkerID, "Worker ID assigned failed, which should be in [0, 1024).", "an integer in [0, 1023]",
		func(v int64) bool { return v >= 0 && v <= MaxWorkerID },
		func(v int64) { c.WorkerID = v })
	parse(PropMaxVibrationOffset, "Illegal max vibration offset.", "an integer in [0, 4095]",
		func(v int64) bool { return v >= 0 && v <= MaxSequence },
		func(v int64) { c.MaxVibrationOffset = int(v) })
	parse(PropMaxTolerateTimeDifference, "Illegal max tolerate time difference milliseconds.", "an integer >= 0",
		func(v int64) bool { return v >= 0 },
		func(v int64) { c.MaxTolerateTimeDifference = time.Duration(v) * time.Millisecond })
	return c, errors.Join(errs...)
}
