// Package zapslog sends the zap logs of the etcd libraries (the embedded
// server, the client) through the node's slog handler, so that a node
// writes one log in one format (text or JSON) with its own attributes.
package zapslog

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Logger returns a zap logger whose entries go to l (nil: a logger that
// drops everything). Levels map as etcd uses them: zap's Info, which etcd
// uses for its start-up and raft chatter, becomes slog Debug; Warn stays
// Warn; Error and above become Error; the entries listed in Benign become
// Debug whatever their level. Stack traces are dropped (the message, the
// caller and the fields say what happened); the entry's logger name, when
// set, becomes the attribute "logger". Safe for concurrent use.
func Logger(l *slog.Logger) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return zap.New(&core{h: l.Handler()})
}

// Benign are the warnings and errors etcd logs that are no problem of the
// node's, by message and a substring of their error field ("" matches
// any). Each is logged at debug. A message matches also with the
// member-id prefix ("2fe703e8b3ea3feb ...") etcd's raft puts before its own.
var Benign = []struct{ Message, Err string }{
	// A fresh single-member server's election timer can fire before the
	// configuration change that adds the member itself is applied; raft
	// campaigns again on its next tick (raft.go, hup).
	{"cannot campaign at term 1 since there are still pending configuration changes to apply", ""},
	// A fresh single-member server checks its storage schema version before
	// its first raft entry has committed a term; the monitor tries again on
	// its next tick and succeeds (etcd 3.6 server/etcdserver/version/monitor.go).
	{"failed to update storage version", "missing term information"},
	{"Failed to detect schema version", "missing term information"},
	// The embedded etcd serves gRPC and HTTP on its one loopback client URL
	// and uses simple auth tokens by design (docs/embedded-registry.md).
	{"Running http and grpc server on single port. This is not recommended for production.", ""},
	{"simple token is not cryptographically signed", ""},
	// Its listeners closing while it stops.
	{"stopping insecure grpc server due to error", "use of closed network connection"},
	{"stopped insecure grpc server due to error", "use of closed network connection"},
}

type core struct {
	h      slog.Handler
	fields []zapcore.Field
	slow   *Slow // nil: slow-request messages are neither counted nor lowered
}

// Level maps a zap level to the slog level the node logs it at.
func Level(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.InfoLevel:
		return slog.LevelDebug
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

func (c *core) Enabled(l zapcore.Level) bool {
	// A counting core sees every warning: a slow-request one is counted
	// whatever the handler logs.
	return c.slow != nil && l >= zapcore.WarnLevel || c.handles(l)
}

// handles says whether the handler logs entries of level l.
func (c *core) handles(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), Level(l))
}

func (c *core) With(fields []zapcore.Field) zapcore.Core {
	return &core{h: c.h, fields: append(c.fields[:len(c.fields):len(c.fields)], fields...), slow: c.slow}
}

func (c *core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	// Benign entries are decided in Write, which needs the fields.
	// Slow-request entries are counted in Write, whatever the handler
	// logs: a core wrapping this one may call Write without Check.
	if c.slow != nil && isSlow(e.Message) {
		return ce.AddCore(e, c)
	}
	if c.handles(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *core) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	level := Level(e.Level)
	if c.slow != nil && isSlow(e.Message) {
		// Authenticate is slow by design (bcrypt of the password), once per
		// client connection: not a sign of load.
		if enc.Fields["response type"] != "/etcdserverpb.Auth/Authenticate" {
			c.slow.n.Add(1)
		}
		level = slog.LevelDebug
	}
	if level >= slog.LevelWarn && benign(e.Message, enc.Fields) {
		level = slog.LevelDebug
	}
	if !c.h.Enabled(context.Background(), level) {
		return nil
	}
	r := slog.NewRecord(e.Time, level, e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	if e.Caller.Defined {
		r.AddAttrs(slog.String("caller", e.Caller.TrimmedPath()))
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		r.AddAttrs(attr(k, enc.Fields[k]))
	}
	return c.h.Handle(context.Background(), r)
}

func (c *core) Sync() error { return nil }

func benign(msg string, fields map[string]any) bool {
	errText, _ := fields["error"].(string)
	for _, b := range Benign {
		if (msg == b.Message || strings.HasSuffix(msg, " "+b.Message)) && strings.Contains(errText, b.Err) {
			return true
		}
	}
	return false
}

// attr converts a value of zap's map encoder to a slog attribute.
func attr(k string, v any) slog.Attr {
	switch v := v.(type) {
	case time.Duration:
		return slog.Duration(k, v)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return slog.String(k, slog.Float64Value(v).String())
		}
	case map[string]any:
		attrs := make([]any, 0, len(v))
		keys := make([]string, 0, len(v))
		for kk := range v {
			keys = append(keys, kk)
		}
		slices.Sort(keys)
		for _, kk := range keys {
			attrs = append(attrs, attr(kk, v[kk]))
		}
		return slog.Group(k, attrs...)
	}
	return slog.Any(k, v)
}

// SlowMessages are the etcd server's messages about a request or a disk
// write that took too long. Each dumps the request's protobuf text, which
// a user can do nothing with: they are logged at debug and counted in the
// Slow of the logger (see NewSlow), whose rate is what a user acts on.
var SlowMessages = []string{
	"apply request took too long",
	"request stats",
	"slow fdatasync",
	"leader failed to send out heartbeat on time; took too long, leader is overloaded likely from slow disk",
	"waiting for ReadIndex response took too long, retrying",
	"timed out waiting for read index response (local node might have slow network)",
}

// Slow counts the slow-request messages (SlowMessages) of the loggers
// made with CountingLogger. The zero value counts from 0. Safe for
// concurrent use.
type Slow struct{ n atomic.Int64 }

// Count is the number of slow-request messages so far.
func (s *Slow) Count() int64 { return s.n.Load() }

// CountingLogger is Logger(l) that also logs the SlowMessages at debug,
// whatever their level, and counts each in s.
func CountingLogger(l *slog.Logger, s *Slow) *zap.Logger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return zap.New(&core{h: l.Handler(), slow: s})
}

func isSlow(msg string) bool {
	return slices.Contains(SlowMessages, msg)
}
