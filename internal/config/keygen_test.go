package config

import (
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/snowflake"
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
	if err != nil || c.Snowflake() != snowflake.DefaultConfig() {
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
	if sf := (*Config)(nil).Snowflake(); sf != snowflake.DefaultConfig() {
		t.Fatalf("no conf: %+v", sf)
	}
}
