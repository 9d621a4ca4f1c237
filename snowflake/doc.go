// Package snowflake generates 64-bit, time-ordered keys in Apache ShardingSphere's
// SNOWFLAKE layout:
//
//	| 1 sign bit (0) | 41 bits: ms - epoch | 10 bits: worker id | 12 bits: sequence |
//	key = ((ms - epoch) << 22) | (workerID << 12) | sequence
//
// The default epoch is 2016-11-01T00:00:00Z (1477958400000 ms, ShardingSphere master).
// ShardingSphere 5.5.2 and 5.5.3 computed the epoch in the JVM's local time zone; set
// [Config.Epoch] to time.Date(2016, 11, 1, 0, 0, 0, 0, thatZone) to keep extending
// keys written by those versions.
//
// # What is the same as ShardingSphere
//
// A new millisecond starts the sequence at the vibration offset, which cycles
// 0, 1, …, MaxVibrationOffset, 0, … once per new millisecond (the first one uses 0);
// within a millisecond the sequence increments by one; when it passes 4095 the key
// moves to the next millisecond at sequence 0 without advancing the offset. The
// settings of the props worker-id, max-vibration-offset and
// max-tolerate-time-difference-milliseconds are validated with ShardingSphere's
// messages (see [Config.Validate]). For a clock that
// only moves forward, the keys are bit-for-bit those of ShardingSphere.
//
// # What is safer than ShardingSphere
//
//   - Issued keys never go backwards. A clock step back smaller than the tolerance is
//     waited out (or, with [Config.MaxBorrow], the generator continues on the last
//     millisecond); upstream re-reads the clock once and may issue a smaller key.
//     A larger step fails with a [*ClockBackwardsError] ([ErrClockBackwards]) whose
//     text is ShardingSphere's.
//   - When the 4096 keys of a millisecond are used up, the generator sleeps until the
//     next millisecond boundary instead of spinning on the clock.
//   - An outside owner (the cluster's registry fence) can bound the timestamps with a
//     window: [Generator.SetWindow] sets a floor F (no key is stamped <= F) and a
//     reserved limit R (no key is stamped > R); [Generator.Revoke] closes the window so
//     that every call fails at once with [ErrNoReservation]. Without a window the
//     generator is plain Snowflake.
//   - An optional, bounded borrow of future milliseconds ([Config.MaxBorrow], default
//     0) lets bursts run ahead of the clock, never past R.
//
// # Guarantees
//
// One Generator never issues the same key twice and its keys strictly increase in
// the order they are issued (NextID and AppendIDs serialise on one mutex). Every key's
// timestamp t satisfies F < t <= R while a window is set. No key is issued after
// Revoke returns, until the next SetWindow.
//
// # Non-guarantees
//
// Keys are unique across generators only if no two generators run with the same
// worker id at the same time: the package does not allocate worker ids (the cluster
// code does, with the registry) and does not import the registry. The timestamp of a
// key is the generator's clock, not a fencing token. The default clock ([SystemClock])
// reads the wall clock once and then follows Go's monotonic clock, so a wall clock
// step does not move it, and it may drift from the wall clock while the process runs;
// compute windows with the same Clock that the Generator uses.
package snowflake
