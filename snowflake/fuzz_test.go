package snowflake

import (
	"errors"
	"strconv"
	"testing"
	"time"
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

// FuzzParseProps checks ParseProps against a direct reading of the rules: a
// value is accepted iff it is a 32-bit decimal integer within the prop's range.
func FuzzParseProps(f *testing.F) {
	f.Add("0", "1", "10", true, true, true)
	f.Add("1023", "4095", "0", true, true, true)
	f.Add("-1", "4096", "-1", true, true, true)
	f.Add("x", " 1", "", true, false, true)
	f.Add("+5", "0x1", "2147483648", true, true, true)
	f.Fuzz(func(t *testing.T, worker, vib, tol string, hasW, hasV, hasT bool) {
		props := map[string]string{}
		if hasW {
			props[PropWorkerID] = worker
		}
		if hasV {
			props[PropMaxVibrationOffset] = vib
		}
		if hasT {
			props[PropMaxTolerateTimeDifference] = tol
		}
		c, err := ParseProps(props)
		ok := func(present bool, s string, lo, hi int64) (int64, bool) {
			if !present {
				return -1, true
			}
			v, err := strconv.ParseInt(s, 10, 32)
			return v, err == nil && v >= lo && v <= hi
		}
		w, okW := ok(hasW, worker, 0, MaxWorkerID)
		v, okV := ok(hasV, vib, 0, MaxSequence)
		tl, okT := ok(hasT, tol, 0, 1<<31-1)
		if (err == nil) != (okW && okV && okT) {
			t.Fatalf("ParseProps(%q) = %v; want ok=%v", props, err, okW && okV && okT)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		want := DefaultConfig()
		if hasW {
			want.WorkerID = w
		}
		if hasV {
			want.MaxVibrationOffset = int(v)
		}
		if hasT {
			want.MaxTolerateTimeDifference = time.Duration(tl) * time.Millisecond
		}
		if c != want {
			t.Fatalf("ParseProps(%q) = %+v, want %+v", props, c, want)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed config does not validate: %v", err)
		}
	})
}
