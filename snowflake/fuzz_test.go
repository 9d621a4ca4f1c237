package snowflake

import (
	"errors"
	"testing"
)

func FuzzDecomposeCompose(f *testing.F) {
	for _, k := range []int64{0, 1, 4194305, 4190208, 1<<63 - 1, -1, -1 << 63} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key int64) {
		p := Decompose(key)
		if p.WorkerID < 0 || p.WorkerID > MaxWorkerID || p.Sequence < 0 || p.Sequence > MaxSequence {
			t.Fatalf("Decompose(%d) = %+v out of range", key, p)
		}
		got, err := Compose(p)
		if key < 0 {
			if err == nil {
				t.Fatalf("Compose(Decompose(%d)) accepted a negative time", key)
			}
			return
		}
		if err != nil || got != key {
			t.Fatalf("Compose(Decompose(%d)) = %d, %v", key, got, err)
		}
	})
}

func FuzzComposeDecompose(f *testing.F) {
	f.Add(int64(0), int64(0), int64(0))
	f.Add(int64(1<<41-1), int64(1023), int64(4095))
	f.Add(int64(1<<41), int64(1024), int64(4096))
	f.Fuzz(func(t *testing.T, ms, worker, seq int64) {
		p := Parts{Millis: ms, WorkerID: worker, Sequence: seq}
		key, err := Compose(p)
		valid := ms >= 0 && ms <= maxElapsed && worker >= 0 && worker <= MaxWorkerID && seq >= 0 && seq <= MaxSequence
		if valid != (err == nil) {
			t.Fatalf("Compose(%+v): err %v, valid %v", p, err, valid)
		}
		if err != nil {
			if !errors.Is(err, ErrTimeOutOfRange) && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Compose(%+v): untyped error %v", p, err)
			}
			return
		}
		if key < 0 || Decompose(key) != p {
			t.Fatalf("Decompose(Compose(%+v)) = %+v (key %d)", p, Decompose(key), key)
		}
	})
}
