package netns

import (
	"net/netip"
	"testing"
)

func TestNetworkNames(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"skc1a2b", true}, {"a", true}, {"0123456789", true},
		{"", false}, {"01234567890", false}, {"Skc", false}, {"sk-c", false},
	} {
		if err := checkPrefix(tc.prefix); (err == nil) != tc.ok {
			t.Errorf("checkPrefix(%q) = %v, want ok %v", tc.prefix, err, tc.ok)
		}
	}
	for _, tc := range []struct{ subnet, last string }{
		{"10.213.0.0/24", "10.213.0.254"},
		{"10.213.0.0/16", "10.213.255.254"},
		{"192.0.2.64/29", "192.0.2.70"},
	} {
		if got := lastHost(netip.MustParsePrefix(tc.subnet)); got.String() != tc.last {
			t.Errorf("lastHost(%s) = %v, want %s", tc.subnet, got, tc.last)
		}
	}
}
