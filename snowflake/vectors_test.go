package snowflake

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type vectorFile struct {
	EpochMillis int64 `json:"epochMillis"`
	Cases       []struct {
		Name               string  `json:"name"`
		EpochMillis        int64   `json:"epochMillis"`
		WorkerID           int64   `json:"workerId"`
		MaxVibrationOffset int     `json:"maxVibrationOffset"`
		ClockMillis        []int64 `json:"clockMillisAfterEpoch"`
		Keys               []int64 `json:"keys"`
	} `json:"cases"`
}

// runVectors checks each case of a vector file: with the clock set to the given
// reading before each key, the generator returns exactly the given keys.
func runVectors(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read vectors (set SHARDKEEPER_SNOWFLAKE_VECTORS to the file): %v", err)
	}
	var vf vectorFile
	if err := json.Unmarshal(data, &vf); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	if len(vf.Cases) == 0 {
		t.Fatalf("%s has no cases", path)
	}
	for _, tc := range vf.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			epoch := vf.EpochMillis
			if tc.EpochMillis != 0 {
				epoch = tc.EpochMillis
			}
			if len(tc.ClockMillis) != len(tc.Keys) {
				t.Fatalf("case has %d clock readings for %d keys", len(tc.ClockMillis), len(tc.Keys))
			}
			clock := newFakeClock(epoch, 0)
			g, err := New(Config{
				WorkerID:                  tc.WorkerID,
				Epoch:                     time.UnixMilli(epoch),
				MaxVibrationOffset:        tc.MaxVibrationOffset,
				MaxTolerateTimeDifference: DefaultMaxTolerateTimeDifference,
				Clock:                     clock,
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.Keys {
				clock.setMs(epoch + tc.ClockMillis[i])
				got, err := g.NextID(context.Background())
				if err != nil {
					t.Fatalf("key %d: %v", i, err)
				}
				if got != want {
					t.Fatalf("key %d at clock +%d: got %d (%+v), want %d (%+v)",
						i, tc.ClockMillis[i], got, Decompose(got), want, Decompose(want))
				}
			}
			if clock.sleeps.Load() != 0 {
				t.Errorf("generator slept %d times on a forward clock", clock.sleeps.Load())
			}
		})
	}
}

// TestSharedVectors runs the project's ShardingSphere vectors
// (testdata/snowflake-vectors.json, or SHARDKEEPER_SNOWFLAKE_VECTORS). A
// missing file is a failure, not a skip.
func TestSharedVectors(t *testing.T) {
	path := os.Getenv("SHARDKEEPER_SNOWFLAKE_VECTORS")
	if path == "" {
		path = filepath.Join("..", "testdata", "snowflake-vectors.json")
	}
	runVectors(t, path)
}

// TestPackageVectors runs this package's vectors: other worker ids, vibration
// offsets and a 5.5.x local-zone epoch, computed by an independent model.
func TestPackageVectors(t *testing.T) {
	runVectors(t, filepath.Join("testdata", "vectors.json"))
}

// TestShardingSphereOverflowVector is assertGenerateKeyBeyondMaxSequencePerMilliSecond:
// lastMillis = EPOCH with sequence 4095; three keys per millisecond after that.
func TestShardingSphereOverflowVector(t *testing.T) {
	clock := newFakeClock(DefaultEpochMillis, 0)
	g, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	g.clock = clock
	g.started, g.last, g.seq = true, DefaultEpochMillis, MaxSequence
	want := []int64{4194304, 4194305, 4194306, 8388608, 8388609, 8388610, 12582913, 12582914, 12582915, 16777216}
	for i, w := range want {
		if i > 0 {
			clock.setMs(DefaultEpochMillis + 1 + int64(i)/3)
		}
		got, err := g.NextID(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Fatalf("key %d: got %d, want %d", i, got, w)
		}
	}
	if n := clock.sleeps.Load(); n != 1 {
		t.Errorf("slept %d times, want 1 (the overflow)", n)
	}
}

// TestShardingSphereClockCallBack covers assertGenerateKeyWithClockCallBack and
// ...BeyondTolerateTime: lastMillis = EPOCH+2 and the clock at EPOCH+1.
// ShardingSphere then issues a key stamped EPOCH+1 (below the last key); this
// package waits and stamps EPOCH+2, so keys never go backwards.
func TestShardingSphereClockCallBack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tolerate time.Duration
		wantKey  int64
		wantErr  string
	}{
		{name: "within tolerance waits", tolerate: 10 * time.Millisecond, wantKey: 2<<22 | 1},
		{name: "tolerance 0 fails", tolerate: 0,
			wantErr: "Clock is moving backwards, last time is 1477958400002 milliseconds, current time is 1477958400001 milliseconds."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock(DefaultEpochMillis+1, 0)
			g, err := New(Config{MaxVibrationOffset: 1, MaxTolerateTimeDifference: tc.tolerate, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			g.started, g.last, g.seq, g.offset = true, DefaultEpochMillis+2, 0, 0
			got, err := g.NextID(context.Background())
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("got %d, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.wantKey {
				t.Fatalf("got %d, %v; want %d", got, err, tc.wantKey)
			}
			if clock.ms() < DefaultEpochMillis+2 {
				t.Errorf("clock at %d: the generator did not wait for the last millisecond", clock.ms())
			}
		})
	}
}
