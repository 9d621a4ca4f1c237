package snowflake

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const e0 = DefaultEpochMillis

func newTestGenerator(t testing.TB, c Config, clock Clock) *Generator {
	t.Helper()
	c.Clock = clock
	g, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestConcurrentUniqueIncreasing: 1M keys from 2 goroutines on a clock that
// advances 40 ns per read, so that many milliseconds overflow.
func TestConcurrentUniqueIncreasing(t *testing.T) {
	const perG = 500_000
	clock := newFakeClock(e0+1000, 40)
	g := newTestGenerator(t, DefaultConfig(), clock)
	keys := make([][]int64, 2)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ks := make([]int64, 0, perG)
			for range perG {
				k, err := g.NextID(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				ks = append(ks, k)
			}
			keys[i] = ks
		}()
	}
	wg.Wait()
	var all []int64
	for i, ks := range keys {
		if len(ks) != perG {
			t.Fatalf("goroutine %d issued %d keys", i, len(ks))
		}
		for j := 1; j < len(ks); j++ {
			if ks[j] <= ks[j-1] {
				t.Fatalf("goroutine %d: key %d = %d not above %d", i, j, ks[j], ks[j-1])
			}
		}
		all = append(all, ks...)
	}
	slices.Sort(all)
	for j := 1; j < len(all); j++ {
		if all[j] == all[j-1] {
			t.Fatalf("duplicate key %d", all[j])
		}
	}
	if clock.sleeps.Load() == 0 {
		t.Errorf("no overflow wait happened; the test does not cover overflow")
	}
}

// TestSystemClockConcurrentUnique runs the real clock briefly.
func TestSystemClockConcurrentUnique(t *testing.T) {
	g, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	const perG = 50_000
	out := make([][]int64, 2)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 0 {
				for range perG {
					k, err := g.NextID(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					out[i] = append(out[i], k)
				}
				return
			}
			ks, err := g.NextIDs(context.Background(), perG)
			if err != nil {
				t.Error(err)
			}
			out[i] = ks
		}()
	}
	wg.Wait()
	all := append(out[0], out[1]...)
	slices.Sort(all)
	if len(all) != 2*perG || len(slices.Compact(all)) != 2*perG {
		t.Fatalf("got %d keys, want %d unique", len(all), 2*perG)
	}
	now := time.Now().UnixMilli()
	if ms := Decompose(all[len(all)-1]).Millis + e0; ms < now-5000 || ms > now+5000 {
		t.Errorf("last key stamped %d, wall clock %d", ms, now)
	}
}

// TestClockJumpBack: after the clock jumps back, no key is smaller than one
// issued before. Steps below the tolerance wait (or borrow); larger ones fail
// with ClockBackwardsError until the clock has caught up.
func TestClockJumpBack(t *testing.T) {
	for _, tc := range []struct {
		name      string
		jump      time.Duration
		tolerate  time.Duration
		borrow    time.Duration
		wantErr   bool
		wantSleep bool
	}{
		{name: "5ms waits", jump: 5 * time.Millisecond, tolerate: 10 * time.Millisecond, wantSleep: true},
		{name: "5ms borrows", jump: 5 * time.Millisecond, tolerate: 10 * time.Millisecond, borrow: 5 * time.Millisecond},
		{name: "5ms beyond tolerance 5", jump: 5 * time.Millisecond, tolerate: 5 * time.Millisecond, wantErr: true},
		{name: "1s fails", jump: time.Second, tolerate: 10 * time.Millisecond, wantErr: true},
		{name: "1s fails with borrow", jump: time.Second, tolerate: 10 * time.Millisecond, borrow: 10 * time.Millisecond, wantErr: true},
		{name: "1h fails", jump: time.Hour, tolerate: 10 * time.Millisecond, wantErr: true},
		{name: "1h waits with tolerance 2h", jump: time.Hour, tolerate: 2 * time.Hour, wantSleep: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock(e0+10_000, 1000) // 1 µs per read
			g := newTestGenerator(t, Config{MaxVibrationOffset: 1, MaxTolerateTimeDifference: tc.tolerate, MaxBorrow: tc.borrow}, clock)
			ctx := context.Background()
			var prev int64
			next := func() error {
				k, err := g.NextID(ctx)
				if err != nil {
					return err
				}
				if k <= prev {
					t.Fatalf("key %d (%+v) not above %d (%+v)", k, Decompose(k), prev, Decompose(prev))
				}
				prev = k
				return nil
			}
			for range 5000 {
				if err := next(); err != nil {
					t.Fatal(err)
				}
			}
			last := g.last
			clock.setMs(last - tc.jump.Milliseconds())
			err := next()
			if tc.wantErr {
				var cbe *ClockBackwardsError
				if !errors.As(err, &cbe) || !errors.Is(err, ErrClockBackwards) || cbe.Last != last || cbe.Current != last-tc.jump.Milliseconds() {
					t.Fatalf("got %v; want ClockBackwardsError with last %d", err, last)
				}
				for range 100 {
					if err := next(); err == nil {
						break
					}
				}
				clock.setMs(last + 1)
				if err := next(); err != nil {
					t.Fatalf("after the clock caught up: %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			for range 5000 {
				if err := next(); err != nil {
					t.Fatal(err)
				}
			}
			if slept := clock.sleeps.Load() > 0; slept != tc.wantSleep {
				t.Errorf("slept = %v, want %v", slept, tc.wantSleep)
			}
		})
	}
}

// TestOverflow: the 4097th key of a millisecond is the next millisecond at
// sequence 0, after one sleep to exactly the boundary, and the vibration
// offset does not advance.
func TestOverflow(t *testing.T) {
	for _, batch := range []bool{false, true} {
		clock := newFakeClock(e0+7, 0)
		clock.ns.Add(300_000) // 0.3 ms into the millisecond
		g := newTestGenerator(t, Config{MaxVibrationOffset: 3}, clock)
		var keys []int64
		if batch {
			var err error
			if keys, err = g.NextIDs(context.Background(), 4097); err != nil {
				t.Fatal(err)
			}
		} else {
			for range 4097 {
				k, err := g.NextID(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}
		}
		for i, k := range keys[:4096] {
			if p := Decompose(k); p != (Parts{Millis: 7, Sequence: int64(i)}) {
				t.Fatalf("batch=%v key %d: %+v", batch, i, p)
			}
		}
		if p := Decompose(keys[4096]); p != (Parts{Millis: 8, Sequence: 0}) {
			t.Fatalf("batch=%v overflow key: %+v, want ms 8 seq 0", batch, p)
		}
		if n, d := clock.sleeps.Load(), clock.slept.Load(); n != 1 || d != 700_000 {
			t.Errorf("batch=%v slept %d times for %d ns, want once for 700000", batch, n, d)
		}
		clock.setMs(e0 + 9)
		k, _ := g.NextID(context.Background())
		if p := Decompose(k); p != (Parts{Millis: 9, Sequence: 1}) {
			t.Errorf("batch=%v next new millisecond: %+v, want offset 1", batch, p)
		}
	}
}

// TestAppendSpansMilliseconds: a batch longer than a millisecond's sequence
// yields contiguous keys, in order, and reuses the caller's buffer.
func TestAppendSpansMilliseconds(t *testing.T) {
	clock := newFakeClock(e0+1, 0)
	g := newTestGenerator(t, Config{WorkerID: 77}, clock)
	buf := make([]int64, 3, 3+10_000)
	out, err := g.AppendIDs(context.Background(), buf, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 10_003 || &out[0] != &buf[0] {
		t.Fatalf("len %d, same buffer %v", len(out), &out[0] == &buf[0])
	}
	for i, k := range out[3:] {
		want := Parts{Millis: 1 + int64(i/4096), WorkerID: 77, Sequence: int64(i % 4096)}
		if p := Decompose(k); p != want {
			t.Fatalf("key %d: %+v, want %+v", i, p, want)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		out, err = g.AppendIDs(context.Background(), out[:0], 1000)
	})
	if err != nil || allocs != 0 {
		t.Errorf("AppendIDs into a buffer: %v allocs, err %v", allocs, err)
	}
	allocs = testing.AllocsPerRun(100, func() { _, err = g.NextIDs(context.Background(), 1000) })
	if err != nil || allocs > 1 {
		t.Errorf("NextIDs: %v allocs, err %v", allocs, err)
	}
	allocs = testing.AllocsPerRun(100, func() { _, err = g.NextID(context.Background()) })
	if err != nil || allocs != 0 {
		t.Errorf("NextID: %v allocs, err %v", allocs, err)
	}
}

func TestWindow(t *testing.T) {
	ctx := context.Background()
	t.Run("floor waits for the clock", func(t *testing.T) {
		clock := newFakeClock(e0+100, 0)
		g := newTestGenerator(t, Config{}, clock)
		g.SetWindow(e0+150, e0+1000)
		k, err := g.NextID(ctx)
		if err != nil || Decompose(k).Millis != 151 {
			t.Fatalf("got %+v, %v; want ms 151", Decompose(k), err)
		}
		if clock.ms() != e0+151 {
			t.Errorf("clock at +%d, want +151", clock.ms()-e0)
		}
	})
	t.Run("floor borrows within MaxBorrow", func(t *testing.T) {
		clock := newFakeClock(e0+100, 0)
		g := newTestGenerator(t, Config{MaxBorrow: 3 * time.Millisecond}, clock)
		g.SetWindow(e0+102, e0+1000)
		k, err := g.NextID(ctx)
		if err != nil || Decompose(k).Millis != 103 || clock.sleeps.Load() != 0 {
			t.Fatalf("got %+v, %v, %d sleeps; want ms 103 without sleeping", Decompose(k), err, clock.sleeps.Load())
		}
	})
	t.Run("floor too far ahead ends with ctx", func(t *testing.T) {
		clock := newFakeClock(e0+100, 0)
		g := newTestGenerator(t, Config{}, clock)
		g.SetWindow(e0+100+3_600_000, e0+100+3_700_000)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := g.NextID(cctx)
		if !errors.Is(err, ErrReservationExpired) || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v; want ErrReservationExpired and context.Canceled", err)
		}
	})
	t.Run("limit expired waits for SetWindow then ctx", func(t *testing.T) {
		clock := newFakeClock(e0+500, 0)
		g := newTestGenerator(t, Config{}, clock)
		g.SetWindow(e0, e0+499)
		cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		_, err := g.NextID(cctx)
		if !errors.Is(err, ErrReservationExpired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v; want ErrReservationExpired and DeadlineExceeded", err)
		}
		go func() {
			time.Sleep(5 * time.Millisecond)
			g.SetWindow(e0+499, e0+600)
		}()
		k, err := g.NextID(ctx)
		if err != nil || Decompose(k).Millis != 500 {
			t.Fatalf("after renewal: %+v, %v", Decompose(k), err)
		}
	})
	t.Run("borrow never past the limit", func(t *testing.T) {
		clock := newFakeClock(e0+10, 0)
		g := newTestGenerator(t, Config{MaxBorrow: 100 * time.Millisecond}, clock)
		g.SetWindow(e0, e0+12)
		ks, err := g.NextIDs(ctx, 3*4096)
		if err != nil || Decompose(ks[len(ks)-1]).Millis != 12 || clock.sleeps.Load() != 0 {
			t.Fatalf("got last %+v, %v", Decompose(ks[len(ks)-1]), err)
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		defer cancel()
		ks, err = g.AppendIDs(cctx, nil, 1)
		if !errors.Is(err, ErrReservationExpired) || len(ks) != 0 {
			t.Fatalf("beyond the limit: %v, %v", ks, err)
		}
	})
	t.Run("revoke stops at once and wakes waiters", func(t *testing.T) {
		clock := newFakeClock(e0+500, 0)
		g := newTestGenerator(t, Config{}, clock)
		g.SetWindow(e0, e0+400) // expired: NextID waits
		errc := make(chan error)
		go func() {
			_, err := g.NextID(ctx) // no deadline: only Revoke ends it
			errc <- err
		}()
		time.Sleep(5 * time.Millisecond)
		g.Revoke()
		if err := <-errc; !errors.Is(err, ErrNoReservation) {
			t.Fatalf("waiter got %v, want ErrNoReservation", err)
		}
		if _, err := g.NextID(ctx); !errors.Is(err, ErrNoReservation) {
			t.Fatalf("after Revoke: %v", err)
		}
		g.SetWindow(e0+400, e0+1000)
		if _, err := g.NextID(ctx); err != nil {
			t.Fatalf("after SetWindow: %v", err)
		}
	})
	t.Run("fenced starts closed", func(t *testing.T) {
		g := newTestGenerator(t, Config{Fenced: true}, newFakeClock(e0, 0))
		if _, err := g.NextID(ctx); !errors.Is(err, ErrNoReservation) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("keys stay in the window under load", func(t *testing.T) {
		clock := newFakeClock(e0+1000, 20)
		g := newTestGenerator(t, Config{MaxBorrow: 2 * time.Millisecond}, clock)
		floor, limit := int64(e0+1005), int64(e0+1040)
		g.SetWindow(floor, limit)
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		ks, err := g.AppendIDs(cctx, nil, 200_000)
		if !errors.Is(err, ErrReservationExpired) {
			t.Fatalf("got %v after %d keys, want ErrReservationExpired", err, len(ks))
		}
		if len(ks) != 35*4096 {
			t.Errorf("issued %d keys, want the whole window, %d", len(ks), 35*4096)
		}
		for _, k := range ks {
			if ms := Decompose(k).Millis + e0; ms <= floor || ms > limit {
				t.Fatalf("key stamped %d outside (%d, %d]", ms, floor, limit)
			}
		}
	})
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want []string
	}{
		{name: "zero", c: Config{}},
		{name: "default", c: DefaultConfig()},
		{name: "max values", c: Config{WorkerID: 1023, MaxVibrationOffset: 4095, MaxTolerateTimeDifference: time.Hour, MaxBorrow: time.Second}},
		{name: "worker", c: Config{WorkerID: 1024}, want: []string{"Worker ID assigned failed, which should be in [0, 1024)."}},
		{name: "negative worker", c: Config{WorkerID: -1}, want: []string{"worker-id"}},
		{name: "all bad", c: Config{WorkerID: -1, MaxVibrationOffset: 4096, MaxTolerateTimeDifference: -time.Millisecond, MaxBorrow: -1, Epoch: time.UnixMilli(-1)},
			want: []string{"worker-id", "Illegal max vibration offset.", "Illegal max tolerate time difference milliseconds.", "Illegal max borrow.", "Illegal epoch."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			_, nerr := New(tc.c)
			if len(tc.want) == 0 {
				if err != nil || nerr != nil {
					t.Fatalf("Validate: %v, New: %v", err, nerr)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !errors.Is(nerr, ErrInvalidConfig) {
				t.Fatalf("got %v, want ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDecomposeCompose(t *testing.T) {
	for _, tc := range []struct {
		key int64
		p   Parts
	}{
		{0, Parts{}},
		{4194305, Parts{Millis: 1, Sequence: 1}},
		{4190208, Parts{WorkerID: 1023}},
		{1<<63 - 1, Parts{Millis: 1<<41 - 1, WorkerID: 1023, Sequence: 4095}},
	} {
		if got := Decompose(tc.key); got != tc.p {
			t.Errorf("Decompose(%d) = %+v, want %+v", tc.key, got, tc.p)
		}
		if got, err := Compose(tc.p); err != nil || got != tc.key {
			t.Errorf("Compose(%+v) = %d, %v", tc.p, got, err)
		}
	}
	for _, p := range []Parts{{Millis: -1}, {Millis: 1 << 41}, {WorkerID: 1024}, {Sequence: 4096}, {Sequence: -1}} {
		if _, err := Compose(p); err == nil {
			t.Errorf("Compose(%+v) did not fail", p)
		}
	}
	if got := (Parts{Millis: 1}).Time(time.UnixMilli(e0)); !got.Equal(time.Date(2016, 11, 1, 0, 0, 0, 1e6, time.UTC)) {
		t.Errorf("Time = %v", got)
	}
}

func TestTimeOutOfRange(t *testing.T) {
	g := newTestGenerator(t, Config{}, newFakeClock(e0-1, 0))
	if _, err := g.NextID(context.Background()); !errors.Is(err, ErrTimeOutOfRange) {
		t.Fatalf("before the epoch: %v", err)
	}
	g = newTestGenerator(t, Config{}, newFakeClock(e0+1<<41, 0))
	if _, err := g.NextID(context.Background()); !errors.Is(err, ErrTimeOutOfRange) {
		t.Fatalf("after 41 bits: %v", err)
	}
}

func TestLongClockWaitEndsWithContext(t *testing.T) {
	clock := newFakeClock(e0+10_000, 0)
	g := newTestGenerator(t, Config{MaxTolerateTimeDifference: 2 * time.Hour}, clock)
	if _, err := g.NextID(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock.setMs(e0 + 10_000 - 3_600_000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.NextID(ctx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrReservationExpired) || errors.Is(err, ErrClockBackwards) {
		t.Fatalf("got %v; want only context.Canceled", err)
	}
	if out, err := g.AppendIDs(ctx, nil, 0); out != nil || err != nil {
		t.Fatalf("AppendIDs of 0 keys: %v, %v", out, err)
	}
}

// TestManyGoroutinesStayInWindow: 64 goroutines on one fenced generator,
// its window renewed 5 times while they issue: every key is unique,
// strictly increasing per goroutine and stamped above the floor and at or
// below the limit committed before it was issued; after Revoke no call
// issues a key.
func TestManyGoroutinesStayInWindow(t *testing.T) {
	const goroutines, renewals, step = 64, 5, 20
	clock := newFakeClock(e0+1000, 50)
	c := DefaultConfig()
	c.Fenced = true
	g := newTestGenerator(t, c, clock)
	floor := int64(e0 + 1010)
	var limit atomic.Int64
	limit.Store(floor + step)
	g.SetWindow(floor, limit.Load())
	ctx, cancel := context.WithCancel(context.Background())
	keys := make([][]int64, goroutines)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k, err := g.NextID(ctx)
				if err != nil {
					if !errors.Is(err, ErrReservationExpired) && !errors.Is(err, ErrNoReservation) {
						t.Error(err)
					}
					return
				}
				// The limit only grows: a key above the current one was
				// stamped past every committed reservation.
				if ms := Decompose(k).Millis + e0; ms <= floor || ms > limit.Load() {
					t.Errorf("key stamped %d, window (%d, %d]", ms, floor, limit.Load())
				}
				keys[i] = append(keys[i], k)
			}
		}()
	}
	for range renewals {
		// Wait until the callers reach the limit, then raise it.
		for last, ok := g.Last(); !ok || last < limit.Load(); last, ok = g.Last() {
			time.Sleep(time.Millisecond)
		}
		limit.Add(step)
		g.SetWindow(floor, limit.Load())
	}
	for last, ok := g.Last(); !ok || last < limit.Load(); last, ok = g.Last() {
		time.Sleep(time.Millisecond)
	}
	g.Revoke()
	if _, err := g.NextID(context.Background()); !errors.Is(err, ErrNoReservation) {
		t.Fatalf("NextID after Revoke = %v, want ErrNoReservation", err)
	}
	cancel()
	wg.Wait()
	var all []int64
	for i, ks := range keys {
		for j := 1; j < len(ks); j++ {
			if ks[j] <= ks[j-1] {
				t.Fatalf("goroutine %d: key %d = %d not above %d", i, j, ks[j], ks[j-1])
			}
		}
		all = append(all, ks...)
	}
	slices.Sort(all)
	if len(slices.Compact(all)) != len(all) {
		t.Fatal("duplicate keys")
	}
	if most := int64((renewals + 1) * step * (MaxSequence + 1)); int64(len(all)) > most || len(all) < (MaxSequence+1)*step {
		t.Fatalf("%d keys; the window holds at most %d", len(all), most)
	}
}
