package console

import (
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
)

// TestRefusalAgreesWithTheNodesView: a rule statement refused (or left a
// no-op) from what the registry holds is answered only once the node's own
// view holds that state, so that the session's next SHOW on the node does
// not contradict the answer, even when the node sees the registry's
// changes late and another node changed the rule just before.
func TestRefusalAgreesWithTheNodesView(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		repo := open(t)
		db := config.Database{Name: "sharding_db", DataSources: map[string]config.DataSource{}}
		if err := metadatatest.CreateDatabase(testenv.Context(t), repo, paths.DefaultLayout, db); err != nil {
			t.Fatal(err)
		}
		lag := &fault.LagEvent{Match: "/rules/", Delay: 1500 * time.Millisecond}
		late := startNode(t, fault.Observe(repo, lag), "late", nil)
		other := startNode(t, open(t), "other", nil)
		s, so := newSession(), newSession()
		s.Database, so.Database = "sharding_db", "sharding_db"
		for _, tc := range []struct{ table, stmt string }{
			{"t_refused", "DROP BROADCAST TABLE RULE t_refused"},
			{"t_noop", "DROP BROADCAST TABLE RULE IF EXISTS t_noop"},
		} {
			exec(t, late, s, "CREATE BROADCAST TABLE RULE "+tc.table)
			showRows(t, late, s, "SHOW BROADCAST TABLE RULES", "broadcast_table", tc.table)
			lag.Arm()
			exec(t, other, so, "DROP BROADCAST TABLE RULE "+tc.table) // the late node does not acknowledge: no wait for it
			if strings.Contains(tc.stmt, "IF EXISTS") {
				exec(t, late, s, tc.stmt)
			} else if e := execError(t, late, s, tc.stmt); e.Code != 10202 {
				t.Fatalf("%s: %+v, want the refusal 10202", tc.stmt, e)
			}
			showRows(t, late, s, "SHOW BROADCAST TABLE RULES", "broadcast_table")
		}
	})
}
