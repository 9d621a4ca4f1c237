package rule_test

import (
	"fmt"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// TestOnePropsBound: the props bound has one home, CheckProps, which
// refuses an algorithm of 1,001 props wherever it sits (10200, naming it);
// CheckAlgorithms, which runs after it, answers only for what it checks
// itself (here the unknown type, 10404), so a problem is never reported
// by two checks in two wordings.
func TestOnePropsBound(t *testing.T) {
	props := map[string]any{}
	for i := range rule.MaxAlgorithmProps + 1 {
		props[fmt.Sprintf("p%d", i)] = "v"
	}
	algorithms := map[string]any{"big": map[string]any{"type": "NO_SUCH_TYPE", "props": props}}
	err := rule.CheckProps("sharding", map[string]any{"shardingAlgorithms": algorithms})
	if err == nil || err.Code != 10200 {
		t.Fatalf("CheckProps: %v, want 10200", err)
	}
	errs := rule.CheckAlgorithms("db", "sharding", algorithms, []string{"MOD"}, nil)
	if len(errs) != 1 || errs[0].Code != 10404 {
		t.Errorf("CheckAlgorithms: %v, want the unknown type (10404) alone", errs)
	}
}
