package daemon

import (
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// The conf dir's SNOWFLAKE props become the generator's settings, and no
// props at all give the generator's own ShardingSphere defaults.
func TestSnowflakeConfigFromProps(t *testing.T) {
	if got, want := snowflakeConfig(config.DefaultSnowflakeProps()), snowflake.DefaultConfig(); got != want {
		t.Fatalf("default props give %+v, the generator's defaults are %+v", got, want)
	}
	p, err := config.ParseSnowflakeProps(map[string]string{"worker-id": "7", "max-vibration-offset": "3", "max-tolerate-time-difference-milliseconds": "20"})
	if err != nil {
		t.Fatal(err)
	}
	want := snowflake.Config{WorkerID: 7, MaxVibrationOffset: 3, MaxTolerateTimeDifference: 20 * time.Millisecond}
	if got := snowflakeConfig(p); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if err := want.Validate(); err != nil {
		t.Fatal(err)
	}
}
