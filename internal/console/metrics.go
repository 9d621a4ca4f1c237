package console

import (
	"context"
	"errors"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Protocols are the consoles' wire protocols, the label of the session,
// login and refusal metrics.
var Protocols = []string{"mysql", "postgresql"}

// statementKinds are the first words a statement kind is counted under;
// any other is "OTHER", so that the label's values stay bounded.
var statementKinds = []string{"SHOW", "CREATE", "ALTER", "DROP", "REGISTER", "UNREGISTER", "SET", "USE", "SELECT",
	"LOCK", "UNLOCK", "ENABLE", "DISABLE", "LABEL", "UNLABEL", "RELABEL", "KILL", "IMPORT", "EXPORT", "REFRESH",
	"PREVIEW", "CLEAR", "COUNT", "CONVERT", "FORMAT", "PARSE"}

// Metrics counts what the consoles do: sessions open, statements by kind,
// errors by code, failed logins and refused connections. It is a
// prometheus.Collector whose series show from the start, at 0. The
// methods of a nil *Metrics do nothing. Safe for concurrent use.
type Metrics struct {
	sessions   *prometheus.GaugeVec
	statements *prometheus.CounterVec
	errs       *prometheus.CounterVec
	logins     *prometheus.CounterVec
	refused    *prometheus.CounterVec
}

// NewMetrics returns metrics with nothing counted.
func NewMetrics() *Metrics {
	m := &Metrics{
		sessions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardkeeper_console_sessions", Help: "Console sessions open (logged in), by protocol.",
		}, []string{"protocol"}),
		statements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardkeeper_console_statements_total", Help: "Console statements run, by kind (the statement's first word; OTHER for the rest).",
		}, []string{"kind"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardkeeper_console_errors_total", Help: "Console statements that failed, by vendor code (30000 for internal errors).",
		}, []string{"code"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardkeeper_console_failed_logins_total", Help: "Console logins refused (wrong user or password, a host not allowed), by protocol.",
		}, []string{"protocol"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardkeeper_console_refused_connections_total", Help: "Console connections refused because every session slot was taken, by protocol.",
		}, []string{"protocol"}),
	}
	for _, p := range Protocols {
		m.sessions.WithLabelValues(p)
		m.logins.WithLabelValues(p)
		m.refused.WithLabelValues(p)
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.sessions, m.statements, m.errs, m.logins, m.refused}
}

// SessionStarted counts a logged-in session of protocol until the
// returned function is called.
func (m *Metrics) SessionStarted(protocol string) (ended func()) {
	if m == nil {
		return func() {}
	}
	g := m.sessions.WithLabelValues(protocol)
	g.Inc()
	return g.Dec
}

// LoginFailed counts a refused login of protocol.
func (m *Metrics) LoginFailed(protocol string) {
	if m != nil {
		m.logins.WithLabelValues(protocol).Inc()
	}
}

// Refused counts a connection of protocol refused for want of a slot.
func (m *Metrics) Refused(protocol string) {
	if m != nil {
		m.refused.WithLabelValues(protocol).Inc()
	}
}

// Instrument returns e counting its statements and errors in m; a nil m
// returns e.
func (m *Metrics) Instrument(e Executor) Executor {
	if m == nil {
		return e
	}
	return meteredExecutor{e: e, m: m}
}

type meteredExecutor struct {
	e Executor
	m *Metrics
}

func (x meteredExecutor) Execute(ctx context.Context, s *Session, query string) (*Result, error) {
	x.m.statements.WithLabelValues(StatementKind(query)).Inc()
	res, err := x.e.Execute(ctx, s, query)
	if err != nil {
		code := "30000"
		var ce *sqlerr.Error
		if errors.As(err, &ce) {
			code = strconv.Itoa(int(ce.Code))
		}
		x.m.errs.WithLabelValues(code).Inc()
	}
	return res, err
}

// StatementKind is the kind a statement is counted under: its first word
// in upper case when it is one of the statements' first words, else
// "OTHER".
func StatementKind(query string) string {
	q := strings.TrimLeft(query, " \t\r\n(")
	end := strings.IndexFunc(q, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
	if end < 0 {
		end = len(q)
	}
	w := strings.ToUpper(q[:end])
	for _, k := range statementKinds {
		if w == k {
			return k
		}
	}
	return "OTHER"
}
