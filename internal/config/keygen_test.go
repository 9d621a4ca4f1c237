package config

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
)

func TestSnowflakeFromShardingRules(t *testing.T) {
	file := func(props string) string {
		return `databaseName: sharding_db
rules:
- !SINGLE
  tables: ["*.*"]
- !SHARDING
  keyGenerators:
    uuid:
      type: UUID
    snowflake:
      type: SNOWFLAKE
` + props
	}
	parse := func(t *testing.T, props string) (*Config, error) {
		t.Helper()
		db, err := ParseDatabase("database-sharding.yaml", []byte(file(props)))
		if db == nil {
			return nil, err
		}
		return &Config{Databases: []Database{*db}}, err
	}
	c, err := parse(t, "")
	if err != nil || c.Snowflake() != DefaultSnowflakeProps() {
		t.Fatalf("no props: %+v, %v", c.Snowflake(), err)
	}
	c, err = parse(t, "      props:\n        worker-id: 7\n        max-vibration-offset: \"3\"\n        max-tolerate-time-difference-milliseconds: 20\n")
	if sf := c.Snowflake(); err != nil || sf.WorkerID != 7 || sf.MaxVibrationOffset != 3 || sf.MaxTolerateTimeDifference != 20*time.Millisecond {
		t.Fatalf("props: %+v, %v", sf, err)
	}
	_, err = parse(t, "      props:\n        max-vibration-offset: 5000\n")
	if err == nil || !strings.Contains(err.Error(), "Illegal max vibration offset.") ||
		!strings.Contains(err.Error(), "database-sharding.yaml:12: rules.!SHARDING.keyGenerators.snowflake.props") {
		t.Fatalf("bad props: %v", err)
	}
	if sf := (*Config)(nil).Snowflake(); sf != DefaultSnowflakeProps() {
		t.Fatalf("no conf: %+v", sf)
	}
}

func TestParseSnowflakeProps(t *testing.T) {
	for _, tc := range []struct {
		name    string
		props   map[string]string
		want    SnowflakeProps
		wantErr []string
	}{
		{name: "empty gives defaults", props: nil, want: DefaultSnowflakeProps()},
		{name: "all set", props: map[string]string{"worker-id": "5", "max-vibration-offset": "3", "max-tolerate-time-difference-milliseconds": "1", "other": "x"},
			want: SnowflakeProps{WorkerID: 5, MaxVibrationOffset: 3, MaxTolerateTimeDifference: time.Millisecond}},
		{name: "bounds", props: map[string]string{"worker-id": "+1023", "max-vibration-offset": "4095", "max-tolerate-time-difference-milliseconds": "0"},
			want: SnowflakeProps{WorkerID: 1023, MaxVibrationOffset: 4095}},
		{name: "vibration -1", props: map[string]string{"max-vibration-offset": "-1"}, wantErr: []string{"Illegal max vibration offset."}},
		{name: "vibration 4096", props: map[string]string{"max-vibration-offset": "4096"}, wantErr: []string{"Illegal max vibration offset."}},
		{name: "vibration not a number", props: map[string]string{"max-vibration-offset": "1.0"}, wantErr: []string{"Illegal max vibration offset."}},
		{name: "tolerate -1", props: map[string]string{"max-tolerate-time-difference-milliseconds": "-1"}, wantErr: []string{"Illegal max tolerate time difference milliseconds."}},
		{name: "tolerate beyond int32", props: map[string]string{"max-tolerate-time-difference-milliseconds": "2147483648"}, wantErr: []string{"Illegal max tolerate time difference milliseconds."}},
		{name: "worker 1024", props: map[string]string{"worker-id": "1024"}, wantErr: []string{"Worker ID assigned failed, which should be in [0, 1024)."}},
		{name: "every error at once", props: map[string]string{"worker-id": "x", "max-vibration-offset": " 1", "max-tolerate-time-difference-milliseconds": ""},
			wantErr: []string{`worker-id "x"`, `max-vibration-offset " 1"`, `max-tolerate-time-difference-milliseconds ""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSnowflakeProps(tc.props)
			if len(tc.wantErr) > 0 {
				var pe *PropError
				if !errors.As(err, &pe) {
					t.Fatalf("got %v, want a *PropError", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// FuzzParseSnowflakeProps checks ParseSnowflakeProps against a direct reading of the rules: a
// value is accepted iff it is a 32-bit decimal integer within the prop's range.
func FuzzParseSnowflakeProps(f *testing.F) {
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
		c, err := ParseSnowflakeProps(props)
		ok := func(present bool, s string, lo, hi int64) (int64, bool) {
			if !present {
				return -1, true
			}
			v, err := strconv.ParseInt(s, 10, 32)
			return v, err == nil && v >= lo && v <= hi
		}
		w, okW := ok(hasW, worker, 0, paths.MaxWorkerID)
		v, okV := ok(hasV, vib, 0, maxVibrationOffset)
		tl, okT := ok(hasT, tol, 0, 1<<31-1)
		if (err == nil) != (okW && okV && okT) {
			t.Fatalf("ParseSnowflakeProps(%q) = %v; want ok=%v", props, err, okW && okV && okT)
		}
		if err != nil {
			var pe *PropError
			if !errors.As(err, &pe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		want := DefaultSnowflakeProps()
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
			t.Fatalf("ParseSnowflakeProps(%q) = %+v, want %+v", props, c, want)
		}
	})
}
