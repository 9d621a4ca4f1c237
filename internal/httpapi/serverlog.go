package httpapi

import (
	"log/slog"
	"strings"
	"sync"
	"time"
)

// tlsLogInterval is how often, at most, failed TLS handshakes are logged.
const tlsLogInterval = time.Minute

// serverLog receives net/http's server error log. A failed TLS handshake
// (a port scanner, a client without the CA, plain HTTP on the HTTPS port)
// is counted in the metrics and logged rate-limited: the first one in full,
// then, while they keep coming, one summary per tlsLogInterval with their
// count and the latest one; the count pending at Close is logged then.
// Other lines are logged as warnings. Safe for concurrent use.
type serverLog struct {
	log     *slog.Logger
	metrics *httpMetrics
	now     func() time.Time

	mu          sync.Mutex
	windowStart time.Time // when the current window opened; zero: none open
	suppressed  int64     // failures in the window not logged yet
	latest      string    // the last of them: "remote: error"
}

func (l *serverLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if detail, ok := strings.CutPrefix(msg, "http: TLS handshake error from "); ok {
		l.handshakeFailed(detail)
	} else {
		l.log.Warn(msg)
	}
	return len(p), nil
}

func (l *serverLog) handshakeFailed(detail string) {
	l.metrics.tlsHandshakes.Inc()
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.windowStart.IsZero() && now.Sub(l.windowStart) < tlsLogInterval {
		l.suppressed++
		l.latest = detail
		return
	}
	if l.suppressed > 0 {
		l.suppressed++
		l.latest = detail
		l.summaryLocked(now)
	} else {
		remote, err := splitDetail(detail)
		l.log.Warn("TLS handshake failed", "remote", remote, "err", err,
			"note", "further failures are summarised at most once per "+tlsLogInterval.String()+" (see shardkeeper_http_tls_handshake_errors_total)")
	}
	l.windowStart = now
}

// summaryLocked logs the failures counted since the window opened.
func (l *serverLog) summaryLocked(now time.Time) {
	remote, err := splitDetail(l.latest)
	l.log.Warn("TLS handshakes failed", "count", l.suppressed, "since", l.windowStart.UTC().Format(time.RFC3339),
		"over", now.Sub(l.windowStart).Round(time.Second).String(), "latest_remote", remote, "latest_err", err)
	l.suppressed = 0
}

// flush logs the failures not yet summarised.
func (l *serverLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.suppressed > 0 {
		l.summaryLocked(l.now())
	}
	l.windowStart = time.Time{}
}

// splitDetail splits net/http's "remote: error" into its parts.
func splitDetail(detail string) (remote, err string) {
	if i := strings.Index(detail, ": "); i >= 0 {
		return detail[:i], detail[i+2:]
	}
	return "", detail
}
