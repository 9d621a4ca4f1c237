package distvar

import (
	"reflect"
	"testing"
)

// TestAckFormat: the acknowledgement is the props version, then a line
// per database and one for the global rules (GlobalRules), and reads
// back as written; a value without a version reads as -1.
func TestAckFormat(t *testing.T) {
	a := Ack{Props: 7, Rules: map[string]string{"sharding_db": "0123456789abcdef", GlobalRules: "fedcba9876543210"}}
	if got, want := a.String(), "7\n/ fedcba9876543210\nsharding_db 0123456789abcdef"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if got := ParseAck([]byte(a.String())); !reflect.DeepEqual(got, a) {
		t.Errorf("ParseAck(String()) = %+v, want %+v", got, a)
	}
	if got := ParseAck([]byte("x\n/ d")); got.Props != -1 || got.Rules[GlobalRules] != "d" {
		t.Errorf("ParseAck of a bad version = %+v", got)
	}
}
