package distsql

import (
	"slices"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// TestPendingNamesEveryNodeNotWaitedFor: the nodes a change's warnings name
// as not confirming it in time and those named as publishing no
// acknowledgement (a node still starting, which the change did not wait
// for) are both pending in the history, read from the warnings the rule
// statements and SET DIST VARIABLE really write.
func TestPendingNamesEveryNodeNotWaitedFor(t *testing.T) {
	c := &client{views: map[string]string{"node-a": "n1", "node-b": "n2", "node-c": "n3"}}
	ruleWarnings := rules.Outcome{RuleType: "broadcast", Pending: []string{"node-a"}, Unacknowledging: []string{"node-c"}}.Warnings("chaos_db")
	if got := c.pendingIn(ruleWarnings); !slices.Equal(got, []string{"n1", "n3"}) {
		t.Errorf("rule warnings %q: pending %v, want [n1 n3]", ruleWarnings, got)
	}
	setWarnings := distvar.Outcome{Key: Variable, Value: "true", Unacknowledging: []string{"node-b"}}.Warnings()
	if got := c.pendingIn(setWarnings); !slices.Equal(got, []string{"n2"}) {
		t.Errorf("SET warnings %q: pending %v, want [n2]", setWarnings, got)
	}
	if got := c.pendingIn([]string{"something else: node-a"}); len(got) != 0 {
		t.Errorf("an unrelated warning: pending %v, want none", got)
	}
}
