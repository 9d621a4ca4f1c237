package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

func TestSnowflakeConfigFromShardingRules(t *testing.T) {
	rule := func(props map[string]any) *config.Config {
		gen := map[string]any{"type": "SNOWFLAKE"}
		if props != nil {
			gen["props"] = props
		}
		return &config.Config{Databases: []config.Database{{Name: "sharding_db", Rules: []config.Rule{
			{Type: "single", Content: map[string]any{}},
			{Type: "sharding", Content: map[string]any{"keyGenerators": map[string]any{"uuid": map[string]any{"type": "UUID"}, "snowflake": gen}}},
		}}}}
	}
	c, err := snowflakeConfig(rule(nil))
	if err != nil || c != snowflake.DefaultConfig() {
		t.Fatalf("no props: %+v, %v", c, err)
	}
	c, err = snowflakeConfig(rule(map[string]any{"worker-id": 7, "max-vibration-offset": "3", "max-tolerate-time-difference-milliseconds": 20}))
	if err != nil || c.WorkerID != 7 || c.MaxVibrationOffset != 3 || c.MaxTolerateTimeDifference != 20*time.Millisecond {
		t.Fatalf("props: %+v, %v", c, err)
	}
	_, err = snowflakeConfig(rule(map[string]any{"max-vibration-offset": 5000}))
	if err == nil || !strings.Contains(err.Error(), "Illegal max vibration offset.") || !strings.Contains(err.Error(), "key generator snowflake") {
		t.Fatalf("bad props: %v", err)
	}
	if c, err := snowflakeConfig(nil); err != nil || c != snowflake.DefaultConfig() {
		t.Fatalf("no conf: %+v, %v", c, err)
	}
}
