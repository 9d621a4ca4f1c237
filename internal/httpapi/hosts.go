package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// hostPolicy says which Host headers the server answers. A page a browser
// loaded from a hostile site can reach a loopback node only under the
// site's own name (DNS rebinding), never under an IP address or localhost,
// so those are always answered; other names only when configured.
type hostPolicy struct {
	any      bool
	names    map[string]bool // lower case, no trailing dot
	suffixes []string        // ".example.com" for "*.example.com"
}

// newHostPolicy returns the policy for the configured names: exact host
// names, "*.example.com" for every name under example.com, or "*" for any
// name. A malformed entry is an error naming it.
func newHostPolicy(allowed []string) (hostPolicy, error) {
	p := hostPolicy{names: map[string]bool{}}
	for _, a := range allowed {
		h := canonicalHost(strings.TrimSpace(a))
		switch {
		case h == "":
			continue
		case h == "*":
			p.any = true
		case strings.HasPrefix(h, "*."):
			if !validName(h[2:]) {
				return hostPolicy{}, fmt.Errorf("allowed host %q: want a host name, *.domain or *", a)
			}
			p.suffixes = append(p.suffixes, h[1:])
		default:
			if _, err := netip.ParseAddr(h); err != nil && !validName(h) {
				return hostPolicy{}, fmt.Errorf("allowed host %q: want a host name, *.domain or *", a)
			}
			p.names[h] = true
		}
	}
	return p, nil
}

// CheckAllowedHosts returns an error naming the first malformed entry of
// hosts (see Config.AllowedHosts), or nil.
func CheckAllowedHosts(hosts []string) error {
	_, err := newHostPolicy(hosts)
	return err
}

// allows reports whether a request with Host header hostHeader is for this
// server: no Host at all (HTTP/1.0, not a browser), an IP address,
// localhost or a name under .localhost, or a configured name.
func (p hostPolicy) allows(hostHeader string) bool {
	h := hostHeader
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = canonicalHost(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	if h == "" || p.any || h == "localhost" || strings.HasSuffix(h, ".localhost") || p.names[h] {
		return true
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	for _, s := range p.suffixes {
		if strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}

func canonicalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// validName reports whether h is a DNS name: dot-separated labels of
// letters, digits, '-' and '_'.
func validName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// checkHost answers 421 Misdirected Request to requests whose Host header
// the policy does not allow, and passes the others to h.
func (s *Server) checkHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.allows(r.Host) {
			s.writeStatus(w, http.StatusMisdirectedRequest, 0, fmt.Sprintf(
				"this node does not answer to host %q: it answers to localhost, IP addresses and the names its operator allows (serve --allowed-hosts)", r.Host))
			return
		}
		h.ServeHTTP(w, r)
	})
}
