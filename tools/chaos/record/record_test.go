package record

import (
	"encoding/json"
	"testing"
)

// TestRunInfoVariant reads the variant back from run.json as the harness
// writes it.
func TestRunInfoVariant(t *testing.T) {
	for _, v := range Variants {
		var back RunInfo
		b, err := json.Marshal(RunInfo{Variant: v})
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Variant != v {
			t.Errorf("%s: run.json %s reads as %s", v, b, back.Variant)
		}
	}
}
