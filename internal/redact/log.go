package redact

import (
	"context"
	"log/slog"
)

// Handler returns a slog.Handler that masks secrets in every record before
// next handles it: the message, string attributes and error attributes
// through Text, and the string value of any attribute whose key is secret
// (SecretName); maps and lists as Value masks them. Other kinds of values
// (numbers, booleans, times) pass unchanged. It is safe for concurrent use when next is.
func Handler(next slog.Handler) slog.Handler { return handler{next} }

type handler struct{ next slog.Handler }

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		masked[i] = attr(a)
	}
	return handler{h.next.WithAttrs(masked)}
}

func (h handler) WithGroup(name string) slog.Handler { return handler{h.next.WithGroup(name)} }

func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if SecretName(a.Key) && v.String() != "" {
			return slog.String(a.Key, Mask)
		}
		return slog.String(a.Key, Text(v.String()))
	case slog.KindGroup:
		g := v.Group()
		masked := make([]any, len(g))
		for i, e := range g {
			masked[i] = attr(e)
		}
		return slog.Group(a.Key, masked...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, Text(err.Error()))
		}
		if s, ok := v.Any().(interface{ String() string }); ok {
			return slog.String(a.Key, Text(s.String()))
		}
		switch x := v.Any().(type) {
		case map[string]any, map[any]any, map[string]string, []any, []string:
			return slog.Any(a.Key, Value(x))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
