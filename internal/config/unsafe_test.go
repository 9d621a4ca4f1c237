package config

import (
	"strings"
	"testing"
)

// TestUnsafeControl checks that the chaos harness's switch is off unless
// set to one of its two values, and that any other value is an error that
// names the variable (serve refuses to start with it).
func TestUnsafeControl(t *testing.T) {
	for _, tc := range []struct {
		value, want string
		err         bool
	}{
		{"", "", false},
		{UnsafeUnconditionalWrites, UnsafeUnconditionalWrites, false},
		{UnsafeAckBeforeCommit, UnsafeAckBeforeCommit, false},
		{"yes", "", true},
		{"Unconditional-Writes", "", true},
	} {
		t.Setenv(EnvUnsafeControl, tc.value)
		got, err := UnsafeControl()
		if got != tc.want || (err != nil) != tc.err || (err != nil && !strings.Contains(err.Error(), EnvUnsafeControl)) {
			t.Errorf("%q: UnsafeControl() = %q, %v; want %q, error %v", tc.value, got, err, tc.want, tc.err)
		}
		if Unsafe(UnsafeUnconditionalWrites) != (tc.want == UnsafeUnconditionalWrites) || Unsafe(UnsafeAckBeforeCommit) != (tc.want == UnsafeAckBeforeCommit) {
			t.Errorf("%q: Unsafe disagrees with UnsafeControl", tc.value)
		}
	}
}
